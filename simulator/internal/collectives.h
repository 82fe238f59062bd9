// Collective costs: ring and hierarchical formulas over NVLink and InfiniBand,
// and the measured DeepEP expert dispatch/combine bandwidths. Inline: the
// operator pass calls them for every operator of every evaluation. Not part of
// the public API.
#ifndef SHARDPLAN_SIMULATOR_INTERNAL_COLLECTIVES_H_
#define SHARDPLAN_SIMULATOR_INTERNAL_COLLECTIVES_H_

#include <algorithm>
#include <array>
#include <cmath>

#include "simulator/internal/cost_context.h"
#include "simulator/internal/cost_layers.h"

namespace shardplan::simulator::internal {

// A communication group: its size and how many of its members share a node.
struct Group {
  int n = 1;
  // members of the group inside one node (n: all inside one node)
  int per_node = 1;
};

struct Traffic {
  double nv = 0;
  double ib = 0;
};

// Seconds of collective `c` over `g`. `bytes` is the whole logical tensor for
// all-reduce, all-gather and reduce-scatter and the bytes each rank holds for
// all-to-all. Adds the bytes each GPU sends per link class to `t`.
inline double CollectiveSeconds(const CostConstants& k, Collective c,
                                double bytes, const Group& g, Traffic* t) {
  if (c == Collective::kNone || g.n <= 1 || bytes <= 0) return 0;
  const double n = g.n;
  const double gi = std::max(1, std::min(g.per_node, g.n));
  if (c == Collective::kPointToPoint) {
    if (g.per_node >= g.n) {
      t->nv += bytes;
      return bytes / k.nv_bytes_per_s + k.nv_latency_seconds;
    }
    t->ib += bytes;
    return bytes / k.ib_bytes_per_s + k.ib_latency_seconds;
  }
  if (c == Collective::kAllToAll) {
    const double intra =
        (n - 1) / n * bytes / k.nv_bytes_per_s + (n - 1) * k.nv_latency_seconds;
    const double nv_share = (gi - 1) / n * bytes;
    const double ib_share = (n - gi) / n * bytes;
    t->nv += nv_share;
    t->ib += ib_share;
    if (g.per_node >= g.n) return intra;
    const double spanning =
        nv_share / k.nv_bytes_per_s + ib_share / k.ib_bytes_per_s +
        (gi - 1) * k.nv_latency_seconds + (n - gi) * k.ib_latency_seconds;
    return std::max(spanning, intra);
  }
  const double f = c == Collective::kAllReduce ? 2.0 : 1.0;
  const double intra = f * (n - 1) / n * bytes / k.nv_bytes_per_s +
                       f * (n - 1) * k.nv_latency_seconds;
  if (g.per_node >= g.n) {
    t->nv += f * (n - 1) / n * bytes;
    return intra;
  }
  const double m = n / gi;  // nodes
  const double nv_bytes = f * (gi - 1) / gi * bytes;
  const double ib_bytes = f * (m - 1) / m * bytes / gi;
  t->nv += nv_bytes;
  t->ib += ib_bytes;
  const double hier =
      nv_bytes / k.nv_bytes_per_s + f * (gi - 1) * k.nv_latency_seconds +
      ib_bytes / k.ib_bytes_per_s + f * (m - 1) * k.ib_latency_seconds;
  return std::max(hier, intra);
}

// NCCL all-gather and reduce-scatter inside a node, measured: seconds by
// hardware (Hopper, Blackwell), group size (2, 4, 8) and the whole tensor's
// bytes (256 B x 4^i, i = 0..8, up to 16 MiB), the mean of the two
// collectives (bf16; they agree within 10%). AIConfigurator's NCCL 2.29.2
// tables, aic-core/src/aiconfigurator_core/systems/data/{h100_sxm,b200_sxm}/
// comm/nccl/2.29.2/nccl_perf.parquet of
// https://github.com/ai-dynamo/aiconfigurator at 095f58a5. Below 1 MiB a
// call costs its launch and synchronisation (5-10 us on H100, 9-16 us on
// B200), far above what the ring formulas' fitted per-hop latency gives.
inline constexpr std::array<std::array<std::array<double, 9>, 3>, 2>
    kNcclGatherScatterSeconds = {{
        {{{5.7e-6, 5.2e-6, 5.8e-6, 6.3e-6, 6.5e-6, 8.3e-6, 16.0e-6, 34.3e-6,
           94.3e-6},
          {7.1e-6, 7.1e-6, 7.5e-6, 8.4e-6, 8.8e-6, 10.4e-6, 18.3e-6, 42.0e-6,
           107.9e-6},
          {10.2e-6, 10.5e-6, 10.6e-6, 12.3e-6, 12.8e-6, 13.9e-6, 20.0e-6,
           44.3e-6, 118.4e-6}}},
        {{{8.7e-6, 8.6e-6, 9.3e-6, 9.7e-6, 10.0e-6, 11.0e-6, 15.3e-6, 29.2e-6,
           54.4e-6},
          {11.1e-6, 12.2e-6, 11.4e-6, 12.5e-6, 16.2e-6, 13.0e-6, 18.8e-6,
           49.5e-6, 70.5e-6},
          {16.1e-6, 17.2e-6, 16.7e-6, 18.6e-6, 18.5e-6, 19.0e-6, 22.7e-6,
           43.9e-6, 110.4e-6}}},
    }};

// Seconds of a measured collective of a `bytes` tensor from one row of a
// table sampled at `first_bytes` x `step`^i: linear in log(bytes) between the
// measured sizes, in bytes above the last one (its bandwidth), the first
// entry below the first.
// Where `bytes` falls in such a table: its fractional index.
inline double MeasuredPosition(double first_bytes, double step, double bytes) {
  return std::log2(std::max(bytes, first_bytes) / first_bytes) /
         std::log2(step);
}
// The same from `x` = MeasuredPosition(first_bytes, step, bytes).
template <size_t N>
inline double MeasuredSecondsAt(const std::array<double, N>& table,
                                double first_bytes, double step, double bytes,
                                double x) {
  if (x >= N - 1) {
    return table[N - 1] * bytes /
           (first_bytes * std::pow(step, static_cast<double>(N - 1)));
  }
  const int i = static_cast<int>(x);
  const double f = x - i;
  return table[i] * (1 - f) + table[i + 1] * f;
}
template <size_t N>
inline double MeasuredSeconds(const std::array<double, N>& table,
                              double first_bytes, double step, double bytes) {
  return MeasuredSecondsAt(table, first_bytes, step, bytes,
                           MeasuredPosition(first_bytes, step, bytes));
}

// The row of a table by group size (2, 4, 8): group sizes between the
// measured ones take the next larger.
inline int MeasuredGroupRow(const Group& g) {
  return g.n <= 2 ? 0 : g.n <= 4 ? 1 : 2;
}

// Seconds of one NCCL all-gather or reduce-scatter of a `bytes` tensor over
// `g` (kNcclGatherScatterSeconds). A group that spans nodes pays at least the
// ring formula's inter-node time too.
inline double NcclGatherScatterSeconds(const CostConstants& k, Collective c,
                                       double bytes, const Group& g,
                                       Traffic* t) {
  if (g.n <= 1 || bytes <= 0) return 0;
  const double formula = CollectiveSeconds(k, c, bytes, g, t);
  const double measured =
      MeasuredSeconds(kNcclGatherScatterSeconds[std::clamp(k.nccl_table, 0, 1)]
                                               [MeasuredGroupRow(g)],
                      256.0, 4.0, bytes);
  return std::max(measured, formula);
}

// The tensor-parallel all-reduce inside a node, measured: seconds by the
// engine's kernel (Calibration::all_reduce_kernel: TensorRT-LLM 1.2.0rc5
// AllReduce, vLLM 0.19.0 custom all-reduce, SGLang 0.5.9 custom all-reduce,
// both under CUDA graphs), hardware (Hopper, Blackwell), group size (2, 4, 8)
// and the message in bf16 elements (128 x 2^i, i = 0..22: 256 B to 1 GiB).
// AIConfigurator's collector runs each engine's own kernel
// (collector/network/collect_all_reduce.py), tables
// aic-core/src/aiconfigurator_core/systems/data/{h100_sxm,b200_sxm}/comm/
// {trtllm/1.2.0rc5,vllm/0.19.0,sglang/0.5.9}/custom_allreduce_perf.parquet of
// https://github.com/ai-dynamo/aiconfigurator at
// 095f58a51c4ca8e61b66ec108d86f223f8d559ce. Small messages cost the kernel's
// launch and barrier (3.5-7.5 us), not the ring's 2(n-1) hops; vLLM's and
// SGLang's kernels switch from one-shot to two-shot at 256-512 kB.
inline constexpr std::array<
    std::array<std::array<std::array<double, 23>, 3>, 2>, 3>
    kCustomAllReduceSeconds = {{
        {{
            // TensorRT-LLM 1.2.0rc5, H100
            {{
                {3.1e-6,   3.1e-6,   3.1e-6,   3.3e-6,    3.3e-6,   3.5e-6,
                 9.9e-6,   3.4e-6,   8.4e-6,   3.8e-6,    4.2e-6,   5.1e-6,
                 6.7e-6,   9.6e-6,   17.1e-6,  37.8e-6,   83.1e-6,  145.6e-6,
                 255.8e-6, 467.8e-6, 885.5e-6, 1682.9e-6, 3236.5e-6},
                {3.2e-6,   3.2e-6,   3.2e-6,    3.4e-6,    3.5e-6,   3.6e-6,
                 3.6e-6,   3.7e-6,   11.5e-6,   10.9e-6,   11.1e-6,  11.9e-6,
                 13.2e-6,  22.1e-6,  35.7e-6,   62.9e-6,   101.1e-6, 174.9e-6,
                 326.3e-6, 615.4e-6, 1183.4e-6, 2309.2e-6, 4544.7e-6},
                {3.5e-6,   3.5e-6,   3.6e-6,    3.8e-6,    3.9e-6,   3.9e-6,
                 4.0e-6,   4.2e-6,   4.9e-6,    6.6e-6,    10.3e-6,  16.3e-6,
                 19.6e-6,  28.3e-6,  46.4e-6,   79.4e-6,   122.8e-6, 198.5e-6,
                 322.7e-6, 576.8e-6, 1090.5e-6, 2111.8e-6, 4011.7e-6},
            }},
            // TensorRT-LLM 1.2.0rc5, B200
            {{
                {4.5e-6,   4.5e-6,   4.6e-6,   5.0e-6,   4.8e-6,   4.9e-6,
                 5.2e-6,   5.1e-6,   5.1e-6,   5.3e-6,   5.3e-6,   5.7e-6,
                 6.4e-6,   8.2e-6,   11.5e-6,  20.5e-6,  56.3e-6,  86.3e-6,
                 155.0e-6, 281.6e-6, 531.8e-6, 986.0e-6, 1896.5e-6},
                {4.6e-6,   4.7e-6,   4.7e-6,   5.2e-6,    5.1e-6,   5.3e-6,
                 5.4e-6,   5.4e-6,   5.4e-6,   5.8e-6,    6.3e-6,   7.6e-6,
                 9.8e-6,   14.5e-6,  23.8e-6,  49.5e-6,   78.3e-6,  122.6e-6,
                 186.6e-6, 355.6e-6, 681.6e-6, 1306.1e-6, 2580.0e-6},
                {4.8e-6,   5.0e-6,   5.4e-6,   5.6e-6,    5.6e-6,   5.7e-6,
                 6.0e-6,   5.8e-6,   5.9e-6,   6.6e-6,    8.1e-6,   11.2e-6,
                 17.2e-6,  24.7e-6,  31.5e-6,  73.8e-6,   103.1e-6, 170.4e-6,
                 279.6e-6, 399.5e-6, 722.7e-6, 1342.2e-6, 2600.1e-6},
            }},
        }},
        {{
            // vLLM 0.19.0, H100
            {{
                {4.3e-6,   4.2e-6,   4.2e-6,   4.2e-6,    4.3e-6,   4.4e-6,
                 4.4e-6,   4.4e-6,   4.5e-6,   4.7e-6,    5.2e-6,   6.3e-6,
                 8.3e-6,   12.4e-6,  20.2e-6,  45.5e-6,   82.3e-6,  158.4e-6,
                 246.9e-6, 465.3e-6, 886.8e-6, 1672.0e-6, 3227.5e-6},
                {4.6e-6,   4.5e-6,   4.5e-6,    4.5e-6,    4.6e-6,   4.8e-6,
                 4.9e-6,   4.8e-6,   5.2e-6,    5.8e-6,    7.1e-6,   11.2e-6,
                 12.6e-6,  18.5e-6,  30.4e-6,   53.2e-6,   98.7e-6,  173.7e-6,
                 325.0e-6, 616.1e-6, 1184.2e-6, 2310.5e-6, 4511.0e-6},
                {4.6e-6,   4.6e-6,   4.5e-6,    4.5e-6,    4.7e-6,   5.0e-6,
                 5.2e-6,   5.5e-6,   6.4e-6,    7.8e-6,    10.7e-6,  11.9e-6,
                 14.8e-6,  19.4e-6,  30.6e-6,   50.7e-6,   92.4e-6,  177.7e-6,
                 320.9e-6, 574.6e-6, 1089.1e-6, 2109.0e-6, 4014.3e-6},
            }},
            // vLLM 0.19.0, B200
            {{
                {6.6e-6,   6.6e-6,   6.9e-6,   7.0e-6,    6.9e-6,   7.0e-6,
                 7.3e-6,   7.0e-6,   7.1e-6,   7.4e-6,    7.8e-6,   9.5e-6,
                 13.1e-6,  25.4e-6,  34.6e-6,  45.4e-6,   57.6e-6,  88.4e-6,
                 155.1e-6, 281.1e-6, 531.0e-6, 1005.7e-6, 1934.9e-6},
                {7.1e-6,   7.0e-6,   7.0e-6,   7.2e-6,    7.2e-6,   7.4e-6,
                 7.6e-6,   7.8e-6,   7.8e-6,   8.2e-6,    8.7e-6,   18.1e-6,
                 19.0e-6,  23.8e-6,  29.8e-6,  43.5e-6,   67.8e-6,  123.7e-6,
                 193.1e-6, 365.3e-6, 706.7e-6, 1344.3e-6, 2621.8e-6},
                {7.5e-6,   7.4e-6,   7.5e-6,   7.7e-6,    7.9e-6,   7.9e-6,
                 8.2e-6,   8.2e-6,   8.6e-6,   9.4e-6,    26.0e-6,  26.0e-6,
                 16.7e-6,  20.7e-6,  26.6e-6,  38.9e-6,   62.4e-6,  110.7e-6,
                 222.5e-6, 396.1e-6, 715.3e-6, 1336.2e-6, 2598.1e-6},
            }},
        }},
        {{
            // SGLang 0.5.9, H100
            {{
                {4.5e-6,   4.5e-6,   4.4e-6,   4.5e-6,    4.6e-6,   4.7e-6,
                 4.6e-6,   4.6e-6,   4.7e-6,   4.9e-6,    5.2e-6,   6.4e-6,
                 8.4e-6,   12.5e-6,  20.4e-6,  35.1e-6,   77.4e-6,  138.1e-6,
                 247.8e-6, 466.0e-6, 884.4e-6, 1678.9e-6, 3207.9e-6},
                {4.6e-6,   4.6e-6,   4.5e-6,    4.6e-6,    4.7e-6,   4.8e-6,
                 4.9e-6,   4.9e-6,   5.2e-6,    5.9e-6,    7.2e-6,   11.4e-6,
                 12.8e-6,  18.6e-6,  30.5e-6,   53.6e-6,   100.8e-6, 175.2e-6,
                 328.2e-6, 616.3e-6, 1186.6e-6, 2308.7e-6, 4529.9e-6},
                {4.8e-6,   4.8e-6,   4.8e-6,    4.8e-6,    4.9e-6,   5.2e-6,
                 5.4e-6,   5.6e-6,   6.5e-6,    8.0e-6,    15.0e-6,  15.8e-6,
                 17.3e-6,  20.9e-6,  34.3e-6,   61.0e-6,   122.5e-6, 197.4e-6,
                 320.2e-6, 574.5e-6, 1090.0e-6, 2113.8e-6, 4007.3e-6},
            }},
            // SGLang 0.5.9, B200
            {{
                {6.8e-6,   6.6e-6,   6.6e-6,   6.6e-6,    7.0e-6,   7.0e-6,
                 7.0e-6,   7.5e-6,   7.8e-6,   7.7e-6,    7.7e-6,   9.6e-6,
                 13.6e-6,  20.9e-6,  34.1e-6,  60.6e-6,   57.0e-6,  85.1e-6,
                 152.6e-6, 281.4e-6, 523.7e-6, 1006.0e-6, 1905.0e-6},
                {7.2e-6,   7.0e-6,   7.0e-6,   6.9e-6,    7.1e-6,   7.1e-6,
                 7.5e-6,   7.8e-6,   8.0e-6,   8.3e-6,    8.8e-6,   17.7e-6,
                 18.7e-6,  27.8e-6,  43.8e-6,  75.5e-6,   81.1e-6,  121.1e-6,
                 184.9e-6, 356.5e-6, 674.4e-6, 1289.8e-6, 2498.2e-6},
                {7.5e-6,   7.2e-6,   7.1e-6,   7.1e-6,    7.4e-6,   7.5e-6,
                 7.8e-6,   8.3e-6,   8.6e-6,   9.4e-6,    25.6e-6,  25.9e-6,
                 27.2e-6,  28.9e-6,  46.5e-6,  80.4e-6,   108.5e-6, 170.0e-6,
                 278.3e-6, 397.4e-6, 715.8e-6, 1337.4e-6, 2603.1e-6},
            }},
        }},
    }};

// The measured tables hold for GPUs with the NVLink they were measured on:
// H100 SXM and H200 (NVLink 4, 450 GB/s per direction) for the Hopper row,
// B200, B300 and GB200/GB300 (NVLink 5, 900 GB/s) for the Blackwell row, as
// the catalog's hardware files give them
// (https://www.nvidia.com/en-us/data-center/nvlink/). A user's hardware spec
// with another link (an A100's 300 GB/s, PCIe) keeps the ring formula over its
// own link rather than borrowing another GPU's kernel times.
inline bool MeasuredAllReduceLinkMatches(int nccl_table,
                                         double intra_node_bytes_per_s) {
  const double measured_link = nccl_table == 1 ? 900e9 : 450e9;
  return std::abs(intra_node_bytes_per_s - measured_link) <=
         0.01 * measured_link;
}

// kCustomAllReduceSeconds' sizes: 256 B x 2^i.
inline constexpr double kCustomAllReduceFirstBytes = 256.0;
inline constexpr double kCustomAllReduceStep = 2.0;

// MeasuredPosition in kCustomAllReduceSeconds of a `bytes` tensor: read from
// the problem's table (CostConstants::hidden_all_reduce_positions) when it
// holds exactly these bytes, which a layer's all-reduce of t tokens' hidden
// states does (a log2 per all-reduce otherwise).
inline double AllReducePosition(const CostConstants& k, double bytes) {
  const std::vector<MeasuredBytesPosition>& table =
      k.hidden_all_reduce_positions;
  const double t = bytes * k.inverse_hidden_activation_bytes + 0.5;
  if (t >= 1 && t < static_cast<double>(table.size())) {
    const MeasuredBytesPosition& e = table[static_cast<size_t>(t)];
    if (e.bytes == bytes) return e.x;
  }
  if (bytes == k.prompt_all_reduce_position.bytes) {
    return k.prompt_all_reduce_position.x;
  }
  return MeasuredPosition(kCustomAllReduceFirstBytes, kCustomAllReduceStep,
                          bytes);
}

// The engine's measured all-reduce of a `bytes` tensor over `g` (2, 4 or 8
// ranks inside a node; larger groups read the 8-rank row).
inline double TensorParallelAllReduceMeasured(const CostConstants& k,
                                              double bytes, const Group& g) {
  const int kernel =
      bytes <= k.fused_all_reduce_max_bytes ? 0 : k.all_reduce_kernel;
  return MeasuredSecondsAt(
      kCustomAllReduceSeconds[std::clamp(kernel, 0, 2)][std::clamp(
          k.nccl_table, 0, 1)][MeasuredGroupRow(g)],
      kCustomAllReduceFirstBytes, kCustomAllReduceStep, bytes,
      AllReducePosition(k, bytes));
}

// Seconds of the tensor-parallel all-reduce of a `bytes` tensor over `g`:
// inside a node the engine's measured kernel (kCustomAllReduceSeconds), across
// nodes the hierarchical ring formula. Groups larger than the measured 8
// ranks (NVLink domains of 72 GPUs) pay at least the 8-rank time and the
// formula's.
inline double TensorParallelAllReduceSeconds(const CostConstants& k,
                                             double bytes, const Group& g,
                                             Traffic* t) {
  if (g.n <= 1 || bytes <= 0) return 0;
  if (!k.measured_all_reduce_link) {
    return CollectiveSeconds(k, Collective::kAllReduce, bytes, g, t);
  }
  if (g.per_node < g.n || g.n > 8) {
    const double formula =
        CollectiveSeconds(k, Collective::kAllReduce, bytes, g, t);
    if (g.per_node < g.n) return formula;
    return std::max(formula, TensorParallelAllReduceMeasured(k, bytes, g));
  }
  // The ring's NVLink bytes (what CollectiveSeconds would count).
  t->nv += 2.0 * (g.n - 1) / g.n * bytes;
  return TensorParallelAllReduceMeasured(k, bytes, g);
}

// Expert dispatch/combine across nodes, measured: DeepEP's kernels on H800
// with one CX7 400 Gb/s NIC per GPU (the NIC of an H100 DGX/HGX node),
// https://github.com/deepseek-ai/DeepEP (README, "Performance"). Bandwidth per
// GPU in bytes/s by EP size (log2 8..256). Low-latency kernels (decode, 128
// tokens per rank, top-8, hidden 7168): every routed copy counted, local ones
// included. Normal kernels (prefill, 4096 tokens): RDMA bytes only.
inline constexpr std::array<double, 6> kLowLatencyDispatchBytesPerS = {
    98e9, 63e9, 48e9, 43e9, 39e9, 39e9};
inline constexpr std::array<double, 6> kLowLatencyCombineBytesPerS = {
    127e9, 74e9, 53e9, 46e9, 39e9, 40e9};
inline constexpr std::array<double, 6> kNormalRdmaBytesPerS = {
    43e9, 43e9, 58e9, 51e9, 51e9, 51e9};
// The NIC those tables were measured with (CX7, 400 Gb/s = 50 GB/s); other
// hardware scales them by its inter-node bandwidth.
inline constexpr double kDeepEpNicBytesPerS = 50e9;

// Table lookup, linear in log2(ep) between EP 8 and 256 (clamped).
inline double DeepEpBytesPerS(const std::array<double, 6>& table, int ep) {
  const double x = std::clamp(std::log2(std::max(ep, 1)) - 3.0, 0.0, 5.0);
  const int i = std::min(4, static_cast<int>(x));
  const double f = x - i;
  return table[i] * (1 - f) + table[i + 1] * f;
}

// CostConstants::ep_rates' entry for `ep` (> 1); `k`'s link figures must be
// set.
inline ExpertParallelRates ExpertParallelRatesOf(const CostConstants& k,
                                                 int ep) {
  const double nic_scale = k.ib_raw_bytes_per_s / kDeepEpNicBytesPerS;
  ExpertParallelRates r;
  r.log_ep = std::log(static_cast<double>(ep));
  r.low_latency_dispatch_bytes_per_s =
      DeepEpBytesPerS(kLowLatencyDispatchBytesPerS, ep) * nic_scale;
  r.low_latency_combine_bytes_per_s =
      DeepEpBytesPerS(kLowLatencyCombineBytesPerS, ep) * nic_scale;
  r.normal_rdma_bytes_per_s =
      DeepEpBytesPerS(kNormalRdmaBytesPerS, ep) * nic_scale;
  return r;
}

}  // namespace shardplan::simulator::internal

#endif  // SHARDPLAN_SIMULATOR_INTERNAL_COLLECTIVES_H_
