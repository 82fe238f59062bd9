#include "policy/search_moves.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "policy/internal/batch_line_search.h"

namespace shardplan::policy {

TupleElite::TupleElite(int /*tuples*/, int per_tuple) : empty_(per_tuple) {}

const EliteHistory& TupleElite::OfTuple(int tuple) const {
  const auto it = by_tuple_.find(tuple);
  return it == by_tuple_.end() ? empty_ : it->second;
}

void TupleElite::Insert(const Decisions& decisions, const ScoredPlan& scored) {
  by_tuple_.try_emplace(decisions[kDegreesDecision], empty_)
      .first->second.Insert(scored, decisions);
}

std::vector<EliteEntry> TupleElite::Top(const EliteHistory& elite, size_t k) {
  for (const EliteEntry& e : elite.entries()) Insert(e.decisions, e.scored);
  // Ranked through pointers: an entry is ~700 bytes and there can be
  // hundreds of tuples.
  std::vector<const EliteEntry*> all;
  for (const auto& held : by_tuple_)
    for (const EliteEntry& e : held.second.entries()) all.push_back(&e);
  k = std::min(all.size(), k);
  std::partial_sort(all.begin(), all.begin() + k, all.end(),
                    [](const EliteEntry* a, const EliteEntry* b) {
                      if (a->scored.reward != b->scored.reward)
                        return a->scored.reward > b->scored.reward;
                      return a->hash < b->hash;
                    });
  std::vector<EliteEntry> top;
  for (size_t i = 0; i < k; ++i) top.push_back(*all[i]);
  return top;
}

SearchMoves::SearchMoves(const SearchMoveOptions& options,
                         internal::SearchRun& run, TupleElite& elite,
                         std::mt19937_64& rng)
    : options_(options), run_(run), elite_(elite), rng_(rng) {}

void SearchMoves::SweepTo(const Decisions& from,
                          const std::vector<int>& tuples) {
  std::vector<Decisions> sweep;
  for (int tuple : tuples)
    sweep.push_back(run_.space().MoveToTuple(from, tuple, rng_));
  std::vector<ScoredPlan> scored = run_.Evaluate(sweep);
  for (size_t i = 0; i < scored.size(); ++i) elite_.Insert(sweep[i], scored[i]);
  if (options_.batch_line_search) {
    sweep.resize(scored.size());
    internal::BatchLineSearch(run_, std::move(sweep), std::move(scored),
                              [this](const Decisions& a, const ScoredPlan& p) {
                                elite_.Insert(a, p);
                              });
  }
}

std::vector<int> SearchMoves::SweepTuples(int from) {
  // Nearest tuples first, the order the policy's own tuple moves favour
  // (RlPolicyOptions::tuple_locality); a uniform sample when there are too
  // many.
  const int tuples = run_.space().NumChoices(kDegreesDecision);
  std::vector<int> order;
  if (tuples > PlanSpace::kLargeJointSpace) {
    // Too many to list: a uniform sample of distinct other tuples.
    std::set<int> sample;
    while (static_cast<int>(sample.size()) <
           std::min(options_.tuple_sweep, tuples - 1)) {
      const int t = static_cast<int>(rng_() % tuples);
      if (t != from) sample.insert(t);
    }
    order.assign(sample.begin(), sample.end());
  } else {
    order = run_.space().NearestTuples(from);
    if (order.size() > static_cast<size_t>(options_.tuple_sweep)) {
      std::shuffle(order.begin(), order.end(), rng_);
      order.resize(options_.tuple_sweep);
    }
  }
  return order;
}

void SearchMoves::TupleSweep() {
  if (run_.elite().entries().empty() || options_.tuple_sweep <= 0) return;
  // A copy: the sweep's evaluations change the elite `from` lives in.
  const Decisions from = run_.elite().entries().front().decisions;
  SweepTo(from, SweepTuples(from[kDegreesDecision]));
}

void SearchMoves::TupleSweepAtBestBatches() {
  if (run_.elite().entries().empty() || options_.tuple_sweep <= 0) return;
  const PlanSpace& space = run_.space();
  const Decisions from =
      space.WithMegatronDims(run_.elite().entries().front().decisions);
  std::vector<int> order = SweepTuples(from[kDegreesDecision]);
  order.insert(order.begin(), from[kDegreesDecision]);
  std::vector<simulator::PlanDims> plans;
  plans.reserve(order.size());
  for (int tuple : order) {
    // Megatron's dims are valid in every tuple, so the move keeps them.
    simulator::PlanDims plan =
        space.Decode(space.MoveToTuple(from, tuple, rng_));
    plan.batch_size = 0;
    plans.push_back(std::move(plan));
  }
  for (const auto& scored : run_.EvaluatePlans(plans)) {
    if (scored.has_value()) elite_.Insert(scored->first, scored->second);
  }
}

bool SearchMoves::NeighbourSweep() {
  if (options_.neighbour_sweep <= 0 || run_.elite().entries().empty() ||
      run_.elite().entries().front().hash == neighbours_of_) {
    return false;
  }
  const EliteEntry& best = run_.elite().entries().front();
  neighbours_of_ = best.hash;
  const std::vector<int> order = run_.space().NearestTuples(
      best.decisions[kDegreesDecision], options_.neighbour_sweep);
  // A copy: the sweep's evaluations change the elite `best` lives in.
  SweepTo(Decisions(best.decisions), order);
  return true;
}

void SearchMoves::RecordSamples(const std::vector<Decisions>& plans,
                                const std::vector<ScoredPlan>& scored) {
  std::vector<Decisions> climb;
  std::vector<ScoredPlan> climb_scored;
  for (size_t i = 0; i < scored.size(); ++i) {
    const EliteHistory& own = elite_.OfTuple(plans[i][kDegreesDecision]);
    if (options_.batch_line_search && scored[i].evaluation.feasible &&
        (own.entries().empty() ||
         scored[i].reward > own.entries().front().scored.reward)) {
      climb.push_back(plans[i]);
      climb_scored.push_back(scored[i]);
    }
    elite_.Insert(plans[i], scored[i]);
  }
  if (!climb.empty()) {
    internal::BatchLineSearch(run_, std::move(climb), std::move(climb_scored),
                              [this](const Decisions& a, const ScoredPlan& p) {
                                elite_.Insert(a, p);
                              });
  }
}

}  // namespace shardplan::policy
