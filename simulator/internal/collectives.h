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

// Seconds of one NCCL all-gather or reduce-scatter of a `bytes` tensor over
// `g` (kNcclGatherScatterSeconds; linear in log4(bytes) between the
// measured sizes, in bytes above 16 MiB; group sizes between the measured
// ones take the next larger). A group that spans nodes pays at least the
// ring formula's inter-node time too.
inline double NcclGatherScatterSeconds(const CostConstants& k, Collective c,
                                       double bytes, const Group& g,
                                       Traffic* t) {
  if (g.n <= 1 || bytes <= 0) return 0;
  const double formula = CollectiveSeconds(k, c, bytes, g, t);
  const int row = g.n <= 2 ? 0 : g.n <= 4 ? 1 : 2;
  const std::array<double, 9>& table =
      kNcclGatherScatterSeconds[std::clamp(k.nccl_table, 0, 1)][row];
  const double x = std::log2(std::max(bytes, 256.0) / 256.0) / 2.0;
  double measured = 0;
  if (x >= 8) {
    measured = table[8] * bytes / (256.0 * 65536.0);
  } else {
    const int i = static_cast<int>(x);
    const double f = x - i;
    measured = table[i] * (1 - f) + table[i + 1] * f;
  }
  return std::max(measured, formula);
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
