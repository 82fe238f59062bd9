// Baseline searchers (policy/baselines.h). All share the plan space, the budget
// and the de-duplicating evaluation of internal::SearchRun, and draw every
// random number from one std::mt19937_64 seeded with options.seed on the
// searching thread (deterministic whatever the pool size).
#include "policy/baselines.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_format.h"
#include "policy/internal/batch_line_search.h"
#include "policy/internal/search_run.h"
#include "proto/status_macros.h"

namespace shardplan::policy {
namespace {

using internal::SearchRun;

// Changes one decision (chosen among those with more than one valid choice) to
// another valid value, then repairs the later decisions.
Decisions Mutate(const PlanSpace& space, const Decisions& in,
                 std::mt19937_64& rng) {
  Decisions d = in;
  int candidates[kNumDecisions];
  int n = 0;
  for (int i = 0; i < space.num_decisions(); ++i) {
    if (i == kDegreesDecision) {
      if (space.NumChoices(i) > 1) candidates[n++] = i;
    } else if (__builtin_popcountll(space.MaskBits(i, d)) > 1) {
      candidates[n++] = i;
    }
  }
  if (n == 0) return d;
  const int i = candidates[rng() % n];
  if (i == kDegreesDecision) {
    const int count = space.NumChoices(i);
    int c = static_cast<int>(rng() % (count - 1));
    if (c >= d[i]) ++c;
    d[i] = c;
  } else {
    d[i] = SampleBit(space.MaskBits(i, d) & ~(uint64_t{1} << d[i]), rng);
  }
  space.Repair(d, i + 1, rng);
  return d;
}

// Batches in a row whose plans were all seen before, after which anneal and
// genetic restart from fresh plans rather than spend the rest of the budget
// re-proposing cached ones (SearchRun stops a search after 50 such batches,
// as exhausted, with most of its budget left).
constexpr int kStaleBatchesBeforeRestart = 3;

// `from` moved by `steps` mutations in a row: a restart near a good plan.
Decisions Perturb(const PlanSpace& space, const Decisions& from, int steps,
                  std::mt19937_64& rng) {
  Decisions d = from;
  for (int i = 0; i < steps; ++i) d = Mutate(space, d, rng);
  return d;
}

// What every baseline shares: a SearchRun (the Megatron plan evaluated first,
// the budget, de-duplication, reporting), the method's own loop in Run(), then
// the result.
class RunSearcher : public Searcher {
 public:
  absl::StatusOr<SearchResult> Search(const simulator::CostModel& model,
                                      const SearchOptions& options,
                                      const CancellationToken& cancel,
                                      SearchObserver& observer) final {
    SearchRun run(model, options, cancel, observer);
    RETURN_IF_ERROR(run.Start());
    RETURN_IF_ERROR(Run(run, options));
    return run.Finish();
  }

 protected:
  // The method's search loop over `run`; an error ends the search with it.
  virtual absl::Status Run(SearchRun& run, const SearchOptions& options) = 0;
};

class MegatronSearcher : public RunSearcher {
 public:
  absl::string_view method() const override { return "megatron"; }

 protected:
  absl::Status Run(SearchRun& run, const SearchOptions& /*options*/) override {
    run.MarkExhausted();
    run.ReportProgress(1);
    return absl::OkStatus();
  }
};

class RandomSearcher : public RunSearcher {
 public:
  absl::string_view method() const override { return "random"; }

 protected:
  absl::Status Run(SearchRun& run, const SearchOptions& options) override {
    // Warm-start plans are scored first, as every other method does, so a
    // stored best comes back whatever the method.
    run.set_warm_started(!run.EvaluateWarmStart().empty());
    std::mt19937_64 rng(options.seed);
    std::vector<Decisions> batch(256);
    while (!run.Done()) {
      for (Decisions& d : batch) d = run.space().SampleUniform(rng);
      run.Evaluate(batch);
      run.ReportProgress(1);
    }
    return absl::OkStatus();
  }
};

class AnnealSearcher : public RunSearcher {
 public:
  absl::string_view method() const override { return "anneal"; }

 protected:
  absl::Status Run(SearchRun& run, const SearchOptions& options) override {
    const PlanSpace& space = run.space();
    std::mt19937_64 rng(options.seed);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    constexpr int kChains = 8;
    constexpr double kT0 = 0.3, kT1 = 0.003;
    std::vector<Decisions> warm = run.EvaluateWarmStart();
    run.set_warm_started(!warm.empty());
    std::vector<Decisions> state(kChains);
    for (int c = 0; c < kChains; ++c) {
      if (c < static_cast<int>(warm.size()) && c < kChains / 2) {
        state[c] = warm[c];
      } else if (c < kChains / 2 && run.baseline_decisions().has_value()) {
        state[c] = *run.baseline_decisions();
      } else {
        state[c] = space.SampleUniform(rng);
      }
    }
    std::vector<ScoredPlan> scored = run.Evaluate(state);
    std::vector<double> energy(kChains, internal::kInfeasiblePenalty - 2);
    for (size_t c = 0; c < scored.size(); ++c) energy[c] = scored[c].reward;
    std::vector<Decisions> proposals(kChains);
    std::vector<uint8_t> fresh;
    int stale = 0;
    while (!run.Done()) {
      const double progress =
          std::min(1.0, static_cast<double>(run.evaluations()) /
                            options.max_evaluations);
      const double temperature = kT0 * std::pow(kT1 / kT0, progress);
      if (stale >= kStaleBatchesBeforeRestart) {
        // The chains circle plans already scored: restart them, half a few
        // moves from the best plan, half anywhere.
        const Decisions from = run.elite().entries().empty()
                                   ? state[0]
                                   : run.elite().entries().front().decisions;
        for (int c = 0; c < kChains; ++c) {
          proposals[c] = c % 2 == 0 ? Perturb(space, from, 2 + c / 2, rng)
                                    : space.SampleUniform(rng);
        }
      } else {
        for (int c = 0; c < kChains; ++c)
          proposals[c] = Mutate(space, state[c], rng);
      }
      const bool restart = stale >= kStaleBatchesBeforeRestart;
      std::vector<ScoredPlan> s = run.Evaluate(proposals, &fresh);
      stale = std::count(fresh.begin(), fresh.end(), 1) == 0 ? stale + 1 : 0;
      if (restart) {
        for (size_t c = 0; c < s.size(); ++c) {
          state[c] = proposals[c];
          energy[c] = s[c].reward;
        }
        run.ReportProgress(1);
        continue;
      }
      for (size_t c = 0; c < s.size(); ++c) {
        const double delta = s[c].reward - energy[c];
        const double u = uniform(rng);
        if (delta >= 0 || u < std::exp(delta / temperature)) {
          state[c] = proposals[c];
          energy[c] = s[c].reward;
        }
      }
      run.ReportProgress(1);
    }
    return absl::OkStatus();
  }
};

class GeneticSearcher : public RunSearcher {
 public:
  absl::string_view method() const override { return "genetic"; }

 protected:
  absl::Status Run(SearchRun& run, const SearchOptions& options) override {
    const PlanSpace& space = run.space();
    std::mt19937_64 rng(options.seed);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    constexpr int kPopulation = 64, kTournament = 3, kElites = 2;
    constexpr double kMutation = 0.5;
    std::vector<Decisions> population = run.EvaluateWarmStart();
    run.set_warm_started(!population.empty());
    if (population.size() > kPopulation / 2) population.resize(kPopulation / 2);
    if (run.baseline_decisions().has_value()) {
      population.push_back(*run.baseline_decisions());
    }
    while (static_cast<int>(population.size()) < kPopulation) {
      population.push_back(space.SampleUniform(rng));
    }
    std::vector<ScoredPlan> scored = run.Evaluate(population);
    std::vector<double> fitness(population.size(),
                                internal::kInfeasiblePenalty - 2);
    for (size_t i = 0; i < scored.size(); ++i) fitness[i] = scored[i].reward;
    run.ReportProgress(1);
    auto tournament = [&]() {
      int best = static_cast<int>(rng() % population.size());
      for (int k = 1; k < kTournament; ++k) {
        const int j = static_cast<int>(rng() % population.size());
        if (fitness[j] > fitness[best]) best = j;
      }
      return best;
    };
    std::vector<uint8_t> fresh;
    int stale = 0;
    while (!run.Done()) {
      std::vector<int> order(population.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
      std::stable_sort(order.begin(), order.end(),
                       [&](int a, int b) { return fitness[a] > fitness[b]; });
      std::vector<Decisions> next;
      std::vector<double> next_fitness;
      for (int e = 0; e < kElites && e < static_cast<int>(order.size()); ++e) {
        next.push_back(population[order[e]]);
        next_fitness.push_back(fitness[order[e]]);
      }
      std::vector<Decisions> children;
      while (static_cast<int>(next.size() + children.size()) < kPopulation) {
        const Decisions& a = population[tournament()];
        const Decisions& b = population[tournament()];
        Decisions child = a;
        // Uniform crossover; the degree tuple decides which later choices are
        // valid, so later genes that become invalid are repaired.
        for (int i = 0; i < space.num_decisions(); ++i) {
          if (rng() & 1) child[i] = b[i];
        }
        space.Repair(child, 1, rng);
        if (uniform(rng) < kMutation) child = Mutate(space, child, rng);
        children.push_back(child);
      }
      if (stale >= kStaleBatchesBeforeRestart) {
        // The population breeds only plans already scored: replace the
        // children by immigrants, half a few moves from the elites, half
        // anywhere.
        for (size_t i = 0; i < children.size(); ++i) {
          children[i] = i % 2 == 0 ? Perturb(space, next[i / 2 % next.size()],
                                             2 + static_cast<int>(i % 4), rng)
                                   : space.SampleUniform(rng);
        }
      }
      std::vector<ScoredPlan> s = run.Evaluate(children, &fresh);
      stale = std::count(fresh.begin(), fresh.end(), 1) == 0 ? stale + 1 : 0;
      for (size_t i = 0; i < s.size(); ++i) {
        next.push_back(children[i]);
        next_fitness.push_back(s[i].reward);
      }
      population = std::move(next);
      fitness = std::move(next_fitness);
      run.ReportProgress(1);
    }
    return absl::OkStatus();
  }
};

class ExhaustiveSearcher : public RunSearcher {
 public:
  absl::string_view method() const override { return "exhaustive"; }

 protected:
  absl::Status Run(SearchRun& run, const SearchOptions& options) override {
    const double size = run.space().Size();
    const double limit =
        std::min(options.exhaustive_limit,
                 static_cast<double>(options.max_evaluations) - 1);
    if (size > limit) {
      return absl::InvalidArgumentError(
          absl::StrFormat("exhaustive: space has %.0f plans, limit %.0f "
                          "(options.max_evaluations - 1 and "
                          "exhaustive_limit %.0f)",
                          size, limit, options.exhaustive_limit));
    }
    run.DisableCache();
    // Cancellation is checked between batches: 1024 plans take ~1 ms, and
    // stay under 100 ms even when instrumented (TSan runs ~30x slower).
    constexpr size_t kBatch = 1024;
    std::vector<Decisions> batch;
    batch.reserve(kBatch);
    run.space().ForEach([&](const Decisions& d) {
      batch.push_back(d);
      if (batch.size() < kBatch) return true;
      run.Evaluate(batch);
      batch.clear();
      run.ReportProgress(1);
      return !run.Done();
    });
    if (!batch.empty() && !run.Done()) {
      run.Evaluate(batch);
      run.ReportProgress(1);
    }
    run.MarkExhausted();
    return absl::OkStatus();
  }
};

// The sweep AIConfigurator-style tools do: every degree tuple of the space
// (replicas and placement included), Megatron's operator dimensions (where a
// tuple does not allow one, its first valid dimension), every micro-batch
// count and every batch size; the best plan under the SLOs wins. Tuples are
// swept in order until the budget ends.
// Calls fn(decisions) for every grid point: each degree tuple with Megatron's
// dims (the prefill instance's too) where the tuple allows them (its first
// valid dim otherwise), with each
// micro-batch count it allows; the batch decision is left at its first valid
// choice. Stops when fn returns false; returns whether it went through all.
template <typename Fn>
bool ForEachGridPoint(const PlanSpace& space, Fn fn) {
  const simulator::ShardDims megatron = simulator::MegatronShardDims();
  for (int t = 0; t < space.NumChoices(kDegreesDecision); ++t) {
    Decisions d{};
    d[kDegreesDecision] = t;
    for (int o = 0; o < simulator::kNumOpKinds; ++o) {
      const int preferred = static_cast<int>(megatron[o]);
      for (int first : {kFirstOpDecision, kFirstPrefillOpDecision}) {
        const uint64_t mask = space.MaskBits(first + o, d);
        d[first + o] =
            (mask >> preferred) & 1 ? preferred : __builtin_ctzll(mask);
      }
    }
    const uint64_t micro = space.MaskBits(kMicroBatchesDecision, d);
    for (int k = 0; k < 64; ++k) {
      if (!((micro >> k) & 1)) continue;
      d[kMicroBatchesDecision] = k;
      d[kBatchDecision] = __builtin_ctzll(space.MaskBits(kBatchDecision, d));
      if (!fn(d)) return false;
    }
  }
  return true;
}

class GridSearcher : public RunSearcher {
 public:
  absl::string_view method() const override { return "grid"; }

 protected:
  absl::Status Run(SearchRun& run, const SearchOptions& /*options*/) override {
    const PlanSpace& space = run.space();
    std::vector<Decisions> points;
    ForEachGridPoint(space, [&](const Decisions& d) {
      points.push_back(d);
      return true;
    });
    // Fewest GPUs per model copy first: the smallest instances that hold the
    // weights communicate least, and k copies of a plan on N GPUs are a plan
    // on kN, so a sweep on more GPUs meets the same layouts in the same order
    // (whatever its budget, it is as good per GPU as on fewer).
    auto copy_gpus = [&](const Decisions& d) {
      const Degrees g = space.TupleDegrees(d[kDegreesDecision]);
      return space.model().problem().model.is_moe() || g.disaggregated()
                 ? g.dp * g.tp * g.pp
                 : g.tp * g.pp;
    };
    std::stable_sort(points.begin(), points.end(),
                     [&](const Decisions& a, const Decisions& b) {
                       return copy_gpus(a) < copy_gpus(b);
                     });
    // First pass: each point at the batch per GPU of the best plan so far
    // (TranslateBatch; the largest its mask allows before any is feasible),
    // then a line search to the best feasible batch (throughput rises with
    // the batch up to what memory and the SLOs allow): a few evaluations per
    // point, so the budget reaches every point.
    auto point_key = [](Decisions d) {
      d[kBatchDecision] = 0;
      return PlanSpace::Hash(d);
    };
    std::unordered_map<uint64_t, double> point_reward;
    std::optional<Decisions> best;
    double best_reward = 0;
    auto record = [&](const Decisions& d, const ScoredPlan& p) {
      auto [it, inserted] = point_reward.emplace(point_key(d), p.reward);
      if (!inserted) it->second = std::max(it->second, p.reward);
      if (p.evaluation.feasible && (!best || p.reward > best_reward)) {
        best = d;
        best_reward = p.reward;
      }
    };
    constexpr size_t kChunk = 32;
    for (size_t i = 0; i < points.size() && !run.Done(); i += kChunk) {
      std::vector<Decisions> plans;
      for (size_t j = i; j < std::min(points.size(), i + kChunk); ++j) {
        Decisions d = points[j];
        const uint64_t batches = space.MaskBits(kBatchDecision, d);
        const int top = 63 - __builtin_clzll(batches);
        int start = top;
        if (best.has_value()) {
          start = TranslateBatch((*best)[kBatchDecision],
                                 space.TupleDegrees((*best)[kDegreesDecision]),
                                 space.TupleDegrees(d[kDegreesDecision]));
          // The nearest allowed batch at or below it.
          while (start > 0 && !((batches >> start) & 1)) --start;
          if (!((batches >> start) & 1)) start = __builtin_ctzll(batches);
          start = std::min(start, top);
        }
        d[kBatchDecision] = start;
        plans.push_back(d);
      }
      std::vector<ScoredPlan> scored = run.Evaluate(plans);
      plans.resize(scored.size());
      for (size_t j = 0; j < plans.size(); ++j) record(plans[j], scored[j]);
      internal::BatchLineSearch(run, std::move(plans), std::move(scored),
                                record);
      run.ReportProgress(1);
    }
    // Then every batch of every point, best points first.
    std::stable_sort(points.begin(), points.end(),
                     [&](const Decisions& a, const Decisions& b) {
                       auto score = [&](const Decisions& d) {
                         auto it = point_reward.find(point_key(d));
                         return it == point_reward.end()
                                    ? internal::kInfeasiblePenalty - 3
                                    : it->second;
                       };
                       return score(a) > score(b);
                     });
    bool complete = true;
    for (Decisions d : points) {
      if (run.Done()) {
        complete = false;
        break;
      }
      const uint64_t batches = space.MaskBits(kBatchDecision, d);
      std::vector<Decisions> plans;
      for (int b = 0; b < 64; ++b) {
        if (!((batches >> b) & 1)) continue;
        d[kBatchDecision] = b;
        plans.push_back(d);
      }
      run.Evaluate(plans);
      run.ReportProgress(1);
    }
    if (complete) run.MarkExhausted();
    return absl::OkStatus();
  }
};

}  // namespace

ScoredPlan GridBest(const PlanSpace& space) {
  const simulator::CostModel& model = space.model();
  ScoredPlan best;
  bool have = false;
  ForEachGridPoint(space, [&](const Decisions& d) {
    simulator::PlanDims plan = space.Decode(d);
    plan.batch_size = 0;  // the cost model's best batch (or concurrency)
    const simulator::Evaluation e = model.Evaluate(plan);
    const bool better =
        !have || (e.feasible && (!best.evaluation.feasible ||
                                 e.output_tokens_per_s >
                                     best.evaluation.output_tokens_per_s));
    if (better) {
      best.plan = plan;
      best.evaluation = e;
      have = true;
    }
    return true;
  });
  return best;
}

std::vector<simulator::PlanDims> GridPlans(const PlanSpace& space) {
  std::vector<simulator::PlanDims> plans;
  ForEachGridPoint(space, [&](const Decisions& d) {
    plans.push_back(space.Decode(d));
    plans.back().batch_size = 0;
    return true;
  });
  return plans;
}

std::unique_ptr<Searcher> NewGridSearcher() {
  return std::make_unique<GridSearcher>();
}
std::unique_ptr<Searcher> NewMegatronSearcher() {
  return std::make_unique<MegatronSearcher>();
}
std::unique_ptr<Searcher> NewRandomSearcher() {
  return std::make_unique<RandomSearcher>();
}
std::unique_ptr<Searcher> NewAnnealSearcher() {
  return std::make_unique<AnnealSearcher>();
}
std::unique_ptr<Searcher> NewGeneticSearcher() {
  return std::make_unique<GeneticSearcher>();
}
std::unique_ptr<Searcher> NewExhaustiveSearcher() {
  return std::make_unique<ExhaustiveSearcher>();
}

}  // namespace shardplan::policy
