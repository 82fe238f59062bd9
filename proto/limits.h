// Limits that belong to the API's messages rather than to one module: the
// client checks them before sending, the server and simulator enforce them.
// Header-only; no dependencies.
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

}  // namespace shardplan::limits

#endif  // SHARDPLAN_PROTO_LIMITS_H_
