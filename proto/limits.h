// Every limit of the API's messages, in one place: the simulator's spec
// validation enforces the size limits, the server's flags default to the
// budget limits, and the client checks some before sending. Header-only; no
// dependencies.
#ifndef SHARDPLAN_PROTO_LIMITS_H_
#define SHARDPLAN_PROTO_LIMITS_H_

namespace shardplan::limits {

// MeasuredRun.concurrency above which a run is predicted and reported but
// neither fitted nor used for the error bands (the Calibrate RPC refuses such
// runs; `shardplan calibrate` skips them): the gpt-oss-120b vLLM rows at 512
// concurrent requests report TPOT 3.6-27 ms, below the same layouts' TPOT at
// 64 requests (7-15 ms), which no running batch of 64-512 requests explains
// (the cost model, KV-cache queueing included, predicts ~5x their TPOT). No
// other measured row exceeds 256.
inline constexpr int kMaxFitConcurrency = 256;

// Workload.request_rate (requests/s, whole deployment): far above any
// deployment the planner sizes, low enough that the queueing sums stay finite.
inline constexpr double kMaxRequestRate = 1e6;

// TokenDistribution.buckets entries (a histogram of request lengths).
inline constexpr int kMaxDistributionBuckets = 1024;

// --- Model, cluster, workload and plan sizes --------------------------------
// Limits against absurd input. They bound every product the cost model forms,
// so no size computation overflows and no loop runs long.
inline constexpr int kMaxLayers = 1024;
inline constexpr int kMaxHidden = 131072;
inline constexpr int kMaxHeads = 4096;
inline constexpr int kMaxHeadDim = 4096;
inline constexpr int kMaxIntermediate = 1 << 20;
inline constexpr int kMaxVocab = 1 << 23;
inline constexpr int kMaxExperts = 4096;
inline constexpr int kMaxSharedExperts = 64;
inline constexpr int kMaxLoraRank = 65536;
inline constexpr double kMaxTotalParams = 1e15;
inline constexpr int kMaxGpus = 65536;
inline constexpr int kMaxGpusPerNode = 1024;
// Token counts (workload lengths, measured runs' lengths and concurrency).
inline constexpr int kMaxTokens = 1 << 20;  // 1,048,576
inline constexpr int kMaxDegree = kMaxGpus;
inline constexpr int kMaxMicroBatches = 4096;
inline constexpr int kMaxStageLayers = kMaxLayers;
inline constexpr double kMaxSloMs = 1e9;  // ~11.5 days
// Smallest hardware figures accepted.
inline constexpr double kMinFlopsPerS = 1e9;
inline constexpr double kMinBytes = 1e6;
inline constexpr double kMinBytesPerS = 1e6;
// Placement entries listed per plan; larger plans repeat the same layout per
// replica.
inline constexpr int kMaxPlacementEntries = 1024;

// CalibrateRequest.runs: enough rows to fit, few enough to fit quickly.
inline constexpr int kMinCalibrateRuns = 4;
inline constexpr int kMaxCalibrateRuns = 10000;

// --- Search options ---------------------------------------------------------
// SearchOptions.top_n: plans in the final update's top_plans.
inline constexpr int kDefaultTopN = 5;
inline constexpr int kMaxTopN = 64;

// --- Server budgets and caps (defaults of the server's flags) ---------------
// options.max_evaluations / options.max_seconds when the request leaves them
// at 0, and the largest a request may ask for.
inline constexpr int kDefaultMaxEvaluations = 2000;
inline constexpr int kDefaultMaxEvaluationsLimit = 100000;
inline constexpr double kDefaultMaxSeconds = 30;
inline constexpr double kDefaultMaxSecondsLimit = 600;
// Problem size caps (--max_num_gpus, --max_layers, --max_experts).
inline constexpr int kDefaultMaxNumGpus = 16384;
inline constexpr int kDefaultMaxLayers = kMaxLayers;
inline constexpr int kDefaultMaxExperts = kMaxExperts;

}  // namespace shardplan::limits

#endif  // SHARDPLAN_PROTO_LIMITS_H_
