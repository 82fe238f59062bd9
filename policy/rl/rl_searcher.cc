// The RL searcher's loop (policy/rl/rl_searcher.h): search moves, then a batch
// drawn from the learned policy, its evaluation, and the policy's update. The
// network, sampler and update live in policy_net.cc, the moves in
// policy/search_moves.cc; this file includes no LibTorch header.
#include "policy/rl/rl_searcher.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <mutex>
#include <random>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "policy/elite_history.h"
#include "policy/internal/search_run.h"
#include "policy/plan_space.h"
#include "policy/rl/internal/scoped_seconds.h"
#include "policy/rl/policy_net.h"
#include "policy/search_moves.h"
#include "proto/status_macros.h"

namespace shardplan::policy {
namespace {

using internal::SearchRun;
using rl::SampledPlan;

using rl::internal::Clock;
using rl::internal::ScopedSeconds;
using rl::internal::Since;

// One iteration's batch: the plans to evaluate, the novel ones first, and the
// exploration rate for the next draw.
struct DrawnBatch {
  std::vector<SampledPlan> plans;
  size_t novel = 0;  // plans[0, novel) were not scored by this search before
  double next_epsilon = 0;
};

// Oversamples, then keeps the plans this search has not scored yet first:
// repeats cost no evaluation and carry no new information, so only the novel
// plans enter the policy gradient. When few samples are new, the policy's
// uniform exploration rises (and decays back once new plans flow again).
DrawnBatch DrawBatch(rl::Policy& policy, const SearchRun& run, int batch,
                     double base_epsilon) {
  std::unordered_set<uint64_t> taken;
  std::vector<SampledPlan> candidates =
      policy.Draw(2 * batch, batch, [&](const Decisions& a) {
        const uint64_t hash = PlanSpace::Hash(a);
        return !run.IsCachedHash(hash) && taken.insert(hash).second;
      });
  DrawnBatch out;
  out.next_epsilon = policy.epsilon();
  out.plans.reserve(batch);
  std::vector<const SampledPlan*> repeats;
  for (const SampledPlan& s : candidates) {
    if (s.novel) {
      out.plans.push_back(s);
    } else {
      repeats.push_back(&s);
    }
  }
  out.novel = out.plans.size();
  const double novel = static_cast<double>(taken.size()) / candidates.size();
  if (base_epsilon > 0) {
    out.next_epsilon = novel < 0.25
                           ? std::min(0.5, policy.epsilon() * 1.3)
                           : std::max(base_epsilon, policy.epsilon() / 1.3);
  }
  for (size_t i = 0;
       i < repeats.size() && static_cast<int>(out.plans.size()) < batch; ++i) {
    out.plans.push_back(*repeats[i]);
  }
  return out;
}

}  // namespace

const std::vector<std::string>& RlMethods() {
  static const auto* methods = new std::vector<std::string>{
      "rl", "rl-no-elite", "rl-no-learning", "rl-policy-only"};
  return *methods;
}

RlOptions RlMethodOptions(absl::string_view method, RlOptions base) {
  if (method == "rl-no-elite") base.policy.use_elite_tokens = false;
  if (method == "rl-no-learning") {
    base.policy.learning_rate = 0;
    base.policy.self_imitation_coef = 0;
    base.policy.imitation_steps = 0;
  }
  if (method == "rl-policy-only") {
    base.moves.tuple_sweep = 0;
    base.moves.neighbour_sweep = 0;
    base.moves.batch_line_search = false;
  }
  return base;
}

void RegisterRlSearchers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const std::string& method : RlMethods()) {
      RegisterSearcher(method, [method]() -> std::unique_ptr<Searcher> {
        return std::make_unique<RlSearcher>(RlMethodOptions(method), method);
      });
    }
  });
}

RlSearcher::RlSearcher(const RlOptions& options, std::string method)
    : options_(options), method_(std::move(method)) {}
RlSearcher::~RlSearcher() = default;

absl::StatusOr<SearchResult> RlSearcher::Search(
    const simulator::CostModel& model, const SearchOptions& options,
    const CancellationToken& cancel, SearchObserver& observer) {
  stats_ = RlStats();
  const Clock::time_point start = Clock::now();
  const RlPolicyOptions& learned = options_.policy;
  try {
    rl::SetTorchThreadsOnce();
    SearchRun run(model, options, cancel, observer);
    RETURN_IF_ERROR(run.Start());
    // The one generator of the search: the network's initialisation, the
    // moves and the sampler draw from it in a fixed order.
    std::mt19937_64 rng(options.seed);
    rl::Policy policy(learned, run.space(), rng);
    bool warm = false;
    if (options.warm_start != nullptr &&
        !options.warm_start->policy_weights.empty()) {
      ASSIGN_OR_RETURN(warm,
                       policy.LoadWeights(options.warm_start->policy_weights));
    }
    const bool warm_elite = !run.EvaluateWarmStart().empty();
    if (warm_elite) warm = true;
    run.set_warm_started(warm);
    const int batch = std::max(1, learned.batch_size);
    // The elite the policy attends over and copies from.
    TupleElite elite(run.space().NumChoices(kDegreesDecision),
                     learned.anchors_per_tuple > 0 ? learned.anchors_per_tuple
                                                   : options.elite_size);
    const size_t anchors =
        std::max(1, learned.anchors > 0 ? learned.anchors : options.elite_size);
    SearchMoves moves(options_.moves, run, elite, rng);

    policy.SetElite(elite.Top(run.elite(), anchors));
    policy.Imitate(learned.imitation_steps);
    // Weights alone carry no plan: only warm-start plans replace the sweep.
    if (!warm_elite) moves.TupleSweep();
    // A disaggregated search starts with an empty elite (the aggregated
    // baseline is only the reward reference), so the sweep above had no plan
    // to sweep from: it runs once the first batch found one, or the start
    // would rest on the weights alone. That plan is the policy's, so the
    // sweep takes only its tuple: Megatron's dims and each tuple's best
    // decode batch, as the aggregated sweep starts from the Megatron plan.
    // Swept with the sample's dims and batch instead, weights cloned on a
    // poor plan handed the sweep a small batch the line search climbed one
    // candidate per round, and the budget ran out at poor plans. Not in joint
    // spaces too large to list the nearest tuples, where the sweep is a
    // uniform sample and the evaluations go further to the policy and the
    // neighbour sweep.
    bool swept =
        warm_elite || !run.space().disaggregated() ||
        run.space().NumChoices(kDegreesDecision) > PlanSpace::kLargeJointSpace;
    while (!run.Done()) {
      if (!swept && !run.elite().entries().empty()) {
        swept = true;
        ScopedSeconds timer(&stats_.cost_model_seconds);
        moves.TupleSweepAtBestBatches();
        if (run.Done()) break;
      }
      // Moves: fixed rules around the best plans; evaluations, counted as
      // cost-model time.
      {
        ScopedSeconds timer(&stats_.cost_model_seconds);
        if (moves.NeighbourSweep() && run.Done()) break;
      }
      // Draw.
      Clock::time_point t = Clock::now();
      policy.SetElite(elite.Top(run.elite(), anchors));
      DrawnBatch drawn = DrawBatch(policy, run, batch, learned.explore_epsilon);
      std::vector<Decisions> actions;
      for (const SampledPlan& s : drawn.plans) actions.push_back(s.a);
      stats_.policy_seconds += Since(t);
      if (cancel.cancelled()) break;
      // Evaluate (the moves line-search the samples that beat their tuple's
      // best).
      t = Clock::now();
      std::vector<ScoredPlan> scored = run.Evaluate(actions);
      moves.RecordSamples(actions, scored);
      stats_.cost_model_seconds += Since(t);
      // Update, on the forward pass (and elite) the batch was sampled with.
      t = Clock::now();
      std::vector<double> rewards(scored.size());
      double sum = 0;
      for (size_t i = 0; i < scored.size(); ++i) {
        rewards[i] = scored[i].reward;
        sum += rewards[i];
      }
      if (!scored.empty()) stats_.mean_rewards.push_back(sum / scored.size());
      if (cancel.cancelled()) break;
      const size_t novel = std::min(drawn.novel, scored.size());
      drawn.plans.resize(novel);
      rewards.resize(novel);
      policy.Update(drawn.plans, rewards);
      // After the update, which used the sampling distribution's epsilon.
      policy.set_epsilon(drawn.next_epsilon);
      stats_.policy_seconds += Since(t);
      ++stats_.iterations;
      run.ReportProgress(1);
    }
    stats_.network_seconds = policy.network_seconds();
    std::string weights = policy.SaveWeights();
    stats_.total_seconds = Since(start);
    return run.Finish(std::move(weights));
  } catch (const std::exception& e) {
    stats_.total_seconds = Since(start);
    return absl::InternalError(
        absl::StrCat("rl search failed in LibTorch: ", e.what()));
  }
}

}  // namespace shardplan::policy
