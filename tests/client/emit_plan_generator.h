// Plans drawn from a seeded generator for the launch tests: dense and MoE
// catalog models (Hopper, B200 and GB200 NVL72 clusters with 1-72 GPUs,
// partial nodes and node groups of different sizes), aggregated and
// disaggregated, each with the emitter's context and the ClusterSpec the
// server would plan on.
#ifndef SHARDPLAN_TESTS_CLIENT_EMIT_PLAN_GENERATOR_H_
#define SHARDPLAN_TESTS_CLIENT_EMIT_PLAN_GENERATOR_H_

#include <cstdint>
#include <random>

#include "client/emit.h"
#include "shardplan/v1/shardplan.pb.h"

namespace shardplan::client {

struct Drawn {
  shardplan::v1::Plan plan;
  EmitContext context;
  // The cluster the plan is for (catalog hardware, nodes, NVLink domain).
  shardplan::v1::ClusterSpec cluster;
  int64_t gpus = 0;  // the plan's
  int64_t load = 0;  // requests in flight the benchmark must hold
};

// GPUs of one instance of `plan` (dp x tp x pp).
int64_t LayoutGpus(const shardplan::v1::Plan& plan);

// The next plan of the sequence `rng` draws.
Drawn Draw(std::mt19937& rng);

}  // namespace shardplan::client

#endif  // SHARDPLAN_TESTS_CLIENT_EMIT_PLAN_GENERATOR_H_
