// Search moves that learn nothing, for searchers that sample plans around an
// elite (the RL searcher): the per-degree-tuple elite, the tuple sweep, the
// neighbour sweep and the batch line search. Each is a fixed rule over the
// plan space and the search's evaluations; none has parameters that a search
// updates. Kept apart from the learned policy (policy/rl/) so that a reader
// can tell which behaviour is learned, and so that they run and are tested
// without LibTorch.
#ifndef SHARDPLAN_POLICY_SEARCH_MOVES_H_
#define SHARDPLAN_POLICY_SEARCH_MOVES_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "policy/elite_history.h"
#include "policy/internal/search_run.h"
#include "policy/plan_space.h"
#include "policy/searcher.h"

namespace shardplan::policy {

struct SearchMoveOptions {
  // Tuple sweep: searches without warm-start plans (cold, or with saved
  // weights only) first evaluate the initial (Megatron) plan moved to other
  // degree tuples (PlanSpace::MoveToTuple), so that tuples have an anchor
  // from the start, as a genetic algorithm's random population does. With at
  // most this many other tuples, all of them, nearest first; with more, this
  // many drawn uniformly at random: the nearest ones alone crowd the elite
  // with near-Megatron variants. Costs at most
  // this many evaluations plus their batch line searches. 0: never.
  int tuple_sweep = 64;
  // Neighbour sweep: whenever the search's best plan changes, it is moved to
  // this many of its nearest degree tuples (PlanSpace::MoveToTuple, batch line
  // search on each) before the next sample. The best plan of a large MoE
  // space often sits one coordinated change of several degrees away from the
  // incumbent (dp/2, tp x2, ep/2 with the batch per GPU kept), a move the
  // policy's samples make rarely once its elite has settled on one tuple.
  // Costs at most this many evaluations (plus line searches) per new best.
  // 0: never. 16 chosen on the search benchmark.
  int neighbour_sweep = 16;
  // Batch line search (internal/batch_line_search.h) on the tuple sweep's
  // plans and on each sampled plan that beats the best of its degree tuple:
  // a moved plan's batch is rarely the one its tuple affords. Those
  // evaluations feed the elite, not the policy gradient (they are not the
  // policy's samples).
  bool batch_line_search = true;
};

// The best plans of each degree tuple a search has seen, at most `per_tuple`
// of each: an elite that keeps good plans of other tuples available when one
// tuple's variants would otherwise fill a global top-K. Not thread-safe
// (owned by one search); deterministic like EliteHistory.
class TupleElite {
 public:
  // `tuples`: PlanSpace::NumChoices(kDegreesDecision); `per_tuple` >= 1.
  TupleElite(int tuples, int per_tuple);

  // Inserts a plan into its tuple's history (EliteHistory::Insert).
  void Insert(const Decisions& decisions, const ScoredPlan& scored);
  // The history of degree tuple `tuple`, best first.
  const EliteHistory& OfTuple(int tuple) const;
  // Inserts every entry of `elite` (the search's own top-K), then returns the
  // best `k` plans over all tuples (reward descending, then hash ascending).
  // Copies at most k entries; ranks all held entries (cost O(held log k)).
  std::vector<EliteEntry> Top(const EliteHistory& elite, size_t k);

 private:
  // Only the tuples that hold a plan (a joint space has hundreds of
  // thousands), in tuple order.
  std::map<int, EliteHistory> by_tuple_;
  EliteHistory empty_;
};

// The moves of one search, on its SearchRun and per-tuple elite. Every
// evaluation goes through `run` (counted against the budget, cached, fed to
// the run's elite) and into `elite`. `rng` is the search's one generator:
// the moves draw from it in a fixed order, so a search stays deterministic
// for its seed. All referenced objects must outlive this one; not
// thread-safe.
class SearchMoves {
 public:
  SearchMoves(const SearchMoveOptions& options, internal::SearchRun& run,
              TupleElite& elite, std::mt19937_64& rng);

  const SearchMoveOptions& options() const { return options_; }

  // The tuple sweep (SearchMoveOptions::tuple_sweep) from the run's best
  // plan; a no-op when the run has no plan yet or the sweep is off. Call once,
  // before the first sample, and only for searches without warm-start plans.
  void TupleSweep();
  // The tuple sweep where the space holds no Megatron plan to start from (a
  // disaggregated space, whose run's best is the policy's first sample):
  // from the run's best plan with Megatron's operator dims, its own tuple and
  // the swept ones each at the cost model's best decode batch (two
  // evaluations per tuple, no batch line search), so that what the sweep
  // finds owes the policy's weights nothing but the first tuple and the
  // prefill batch. A no-op when the run has no plan yet or the sweep is off.
  void TupleSweepAtBestBatches();
  // The neighbour sweep (SearchMoveOptions::neighbour_sweep) around the run's
  // best plan, when that plan changed since the last call. Returns whether it
  // swept (and so spent evaluations).
  bool NeighbourSweep();
  // Records a batch of sampled plans and their scores (`scored` may be
  // shorter than `plans` when the budget ran out) in the per-tuple elite;
  // with batch_line_search, each feasible plan that beats the best of its
  // tuple so far gets a batch line search.
  void RecordSamples(const std::vector<Decisions>& plans,
                     const std::vector<ScoredPlan>& scored);

 private:
  // The tuples the tuple sweep moves a plan of tuple `from` to.
  std::vector<int> SweepTuples(int from);
  // Evaluates `from` moved to each of `tuples` (batch line search on each).
  void SweepTo(const Decisions& from, const std::vector<int>& tuples);

  SearchMoveOptions options_;
  internal::SearchRun& run_;
  TupleElite& elite_;
  std::mt19937_64& rng_;
  uint64_t neighbours_of_ = 0;  // hash of the last best plan swept around
};

}  // namespace shardplan::policy

#endif  // SHARDPLAN_POLICY_SEARCH_MOVES_H_
