// Shared search bookkeeping (policy/internal/search_run.h).
#include "policy/internal/search_run.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "policy/eval_pool.h"
#include "proto/status_macros.h"
#include "simulator/engine_capability.h"
#include "simulator/megatron.h"

namespace shardplan::policy::internal {

double RewardFor(const simulator::Evaluation& e,
                 double reference_tokens_per_s) {
  if (e.feasible && e.output_tokens_per_s > 0) {
    return std::max(kFeasibleFloor,
                    std::log(e.output_tokens_per_s /
                             std::max(1e-9, reference_tokens_per_s)));
  }
  double over = 1;
  if (e.reason_limit > 0 && e.reason_value > 0)
    over = e.reason_value / e.reason_limit;
  if (!std::isfinite(over)) over = 100;
  return kInfeasiblePenalty - std::min(2.0, std::log(std::max(1.0, over)));
}

SearchRun::SearchRun(const simulator::CostModel& model,
                     const SearchOptions& options,
                     const CancellationToken& cancel, SearchObserver& observer)
    : model_(model),
      options_(options),
      cancel_(cancel),
      observer_(observer),
      start_(std::chrono::steady_clock::now()),
      scorer_(options.objective, model.problem()),
      elite_(options.elite_size),
      frontier_(options.frontier_size) {}

double SearchRun::ElapsedSeconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       start_)
      .count();
}

absl::Status SearchRun::Start() {
  if (options_.max_evaluations < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("options.max_evaluations must be >= 1, got %d",
                        options_.max_evaluations));
  }
  if (!(options_.max_seconds > 0)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "options.max_seconds must be > 0, got %g", options_.max_seconds));
  }
  if (options_.space != nullptr) {
    if (options_.space->disaggregated() != options_.disaggregated) {
      return absl::InvalidArgumentError(
          "options.space is not of the kind options.disaggregated asks for");
    }
    space_ = options_.space;
  } else if (options_.disaggregated) {
    ASSIGN_OR_RETURN(owned_space_, PlanSpace::CreateDisaggregated(model_));
    space_ = owned_space_.get();
  } else {
    ASSIGN_OR_RETURN(owned_space_, PlanSpace::Create(model_));
    space_ = owned_space_.get();
  }
  const simulator::PlanDims plan = options_.baseline != nullptr
                                       ? options_.baseline->plan
                                       : simulator::MegatronPlan(model_);
  const simulator::Evaluation e = options_.baseline != nullptr
                                      ? options_.baseline->evaluation
                                      : model_.Evaluate(plan);
  ++evaluations_;
  reference_ =
      e.feasible && e.output_tokens_per_s > 0 ? e.output_tokens_per_s : 1.0;
  baseline_ = Score(plan, e);
  if (space_->disaggregated()) {
    // The aggregated Megatron plan is the reference, not a candidate.
    observer_.OnBaseline(baseline_);
    return absl::OkStatus();
  }
  absl::StatusOr<Decisions> d = space_->Encode(plan, e.batch_size);
  if (d.ok()) {
    baseline_decisions_ = *d;
    cache_.emplace(PlanSpace::Hash(*d), baseline_);
    ++distinct_;
  }
  observer_.OnBaseline(baseline_);
  Consider(baseline_, d.ok() ? &*d : nullptr);
  return absl::OkStatus();
}

ScoredPlan SearchRun::Score(const simulator::PlanDims& plan,
                            const simulator::Evaluation& e) const {
  ScoredPlan s;
  s.plan = plan;
  s.evaluation = e;
  double penalty = 0;
  if (options_.objective.transition != nullptr) {
    penalty = simulator::ApplyTransitionObjective(
        *options_.objective.transition, plan, &s.evaluation);
  }
  if (s.evaluation.feasible && !EngineCanRun(plan)) {
    s.evaluation.feasible = false;
    s.evaluation.reason = simulator::InfeasibleReason::kEngineCannotRun;
    s.evaluation.reason_value = 0;
    s.evaluation.reason_limit = 0;
  }
  if (options_.objective.estimate == Estimate::kExpected) {
    s.reward = RewardFor(s.evaluation, reference_);
  } else {
    // The same reward of the throughput the objective counts.
    simulator::Evaluation counted = s.evaluation;
    counted.output_tokens_per_s = scorer_.TokensPerS(s.evaluation);
    s.reward = RewardFor(counted, reference_);
  }
  if (penalty > 0) s.reward = std::max(kFeasibleFloor, s.reward - penalty);
  return s;
}

bool SearchRun::EngineCanRun(const simulator::PlanDims& plan) const {
  // What the rules read of a plan: degrees, instance counts and whether
  // attention is batch-split (simulator/engine_capability.h).
  auto split = [](const simulator::ShardDims& dims) {
    return dims[static_cast<int>(simulator::OpKind::kQkv)] ==
               simulator::ShardDim::kBatch &&
           dims[static_cast<int>(simulator::OpKind::kAttention)] ==
               simulator::ShardDim::kBatch &&
           dims[static_cast<int>(simulator::OpKind::kAttnOut)] ==
               simulator::ShardDim::kBatch;
  };
  std::string key = absl::StrCat(plan.replicas, ",", plan.dp, ",", plan.tp, ",",
                                 plan.pp, ",", plan.ep, ",", split(plan.dims));
  if (plan.disaggregated) {
    absl::StrAppend(&key, "|", plan.prefill_instances, ",",
                    plan.decode_instances, ",", plan.prefill.dp, ",",
                    plan.prefill.tp, ",", plan.prefill.pp, ",", plan.prefill.ep,
                    ",", split(plan.prefill.dims));
  }
  auto it = runnable_.find(key);
  if (it != runnable_.end()) return it->second;
  const bool ok = simulator::WorkloadEngineCanRun(model_.problem(), plan);
  runnable_.emplace(std::move(key), ok);
  return ok;
}

void SearchRun::Consider(const ScoredPlan& scored, const Decisions* decisions) {
  if (decisions != nullptr) elite_.Insert(scored, *decisions);
  frontier_.Offer(scored);
  const bool better = !has_best_ || scored.reward > best_.reward;
  if (!better) return;
  best_ = scored;
  has_best_ = true;
  if (!scored.evaluation.feasible) return;
  has_feasible_ = true;
  Improvement imp;
  imp.best = scored;
  imp.evaluations = evaluations_;
  imp.elapsed_seconds = ElapsedSeconds();
  imp.speedup_vs_baseline =
      baseline_.evaluation.feasible
          ? scored.evaluation.output_tokens_per_s / reference_
          : 0.0;
  observer_.OnImprovement(imp);
}

std::vector<Decisions> SearchRun::EvaluateWarmStart() {
  std::vector<Decisions> out;
  if (options_.warm_start == nullptr) return out;
  std::vector<std::pair<double, Decisions>> scored;
  for (const simulator::PlanDims& plan : options_.warm_start->elite_plans) {
    if (remaining() <= 0) break;
    // Plans of the other kind belong to the other space's search.
    if (plan.disaggregated != space_->disaggregated()) continue;
    std::optional<std::pair<Decisions, ScoredPlan>> s = EvaluatePlan(plan);
    if (s.has_value()) scored.emplace_back(s->second.reward, s->first);
  }
  std::stable_sort(
      scored.begin(), scored.end(),
      [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [r, d] : scored) out.push_back(d);
  return out;
}

std::optional<std::pair<Decisions, ScoredPlan>> SearchRun::EvaluatePlan(
    const simulator::PlanDims& plan) {
  return std::move(EvaluatePlans(absl::MakeConstSpan(&plan, 1))[0]);
}

std::vector<std::optional<std::pair<Decisions, ScoredPlan>>>
SearchRun::EvaluatePlans(absl::Span<const simulator::PlanDims> plans) {
  std::vector<std::optional<std::pair<Decisions, ScoredPlan>>> out(
      plans.size());
  // Each plan's decisions, once known; the plans whose batch is the cost
  // model's choice, to evaluate once first (as many as the budget allows).
  std::vector<std::optional<Decisions>> decisions(plans.size());
  std::vector<size_t> unresolved;
  std::vector<simulator::PlanDims> resolve;
  int budget = remaining();
  for (size_t i = 0; i < plans.size(); ++i) {
    // A plan from outside the space (a warm start, a move) as the named
    // engine launches it, like every plan the space decodes.
    const simulator::PlanDims plan =
        simulator::WorkloadEngineLaunchedPlan(model_.problem(), plans[i]);
    if (!model_.ValidatePlan(plan).ok()) continue;
    absl::StatusOr<Decisions> d = space_->Encode(plan);
    if (d.ok()) {
      decisions[i] = *std::move(d);
    } else if (budget > 0) {
      --budget;
      unresolved.push_back(i);
      resolve.push_back(plan);
    }
  }
  std::vector<simulator::Evaluation> resolved(resolve.size());
  if (options_.pool != nullptr) {
    options_.pool->Evaluate(model_, resolve, absl::MakeSpan(resolved));
  } else {
    for (size_t k = 0; k < resolve.size(); ++k)
      resolved[k] = model_.Evaluate(resolve[k]);
  }
  for (size_t k = 0; k < resolve.size(); ++k) {
    ++evaluations_;
    frontier_.Offer(Score(resolve[k], resolved[k]));
    absl::StatusOr<Decisions> d =
        space_->Encode(resolve[k], resolved[k].batch_size);
    if (d.ok()) decisions[unresolved[k]] = *std::move(d);
  }
  std::vector<Decisions> batch;
  std::vector<size_t> owner;
  for (size_t i = 0; i < plans.size(); ++i) {
    if (!decisions[i].has_value()) continue;
    batch.push_back(*decisions[i]);
    owner.push_back(i);
  }
  std::vector<ScoredPlan> scored = Evaluate(batch);
  for (size_t j = 0; j < scored.size(); ++j)
    out[owner[j]] = std::make_pair(batch[j], std::move(scored[j]));
  return out;
}

std::vector<ScoredPlan> SearchRun::Evaluate(absl::Span<const Decisions> batch,
                                            std::vector<uint8_t>* fresh) {
  std::vector<ScoredPlan> out;
  out.reserve(batch.size());
  if (fresh != nullptr) fresh->clear();
  // Pass 1: find the new plans (first occurrence only) within the budget.
  plan_buffer_.clear();
  std::vector<int> slot(batch.size(),
                        -1);  // index into plan_buffer_, or -1: cached
  std::unordered_map<uint64_t, int> in_batch;
  size_t n = 0;
  int budget = remaining();
  for (; n < batch.size(); ++n) {
    const uint64_t h = PlanSpace::Hash(batch[n]);
    if (use_cache_ && cache_.count(h)) continue;
    auto it = in_batch.find(h);
    if (it != in_batch.end()) {
      slot[n] = it->second;
      continue;
    }
    if (budget <= 0) break;
    --budget;
    slot[n] = static_cast<int>(plan_buffer_.size());
    in_batch.emplace(h, slot[n]);
    plan_buffer_.push_back(space_->Decode(batch[n]));
  }
  eval_buffer_.assign(plan_buffer_.size(), simulator::Evaluation());
  if (options_.pool != nullptr) {
    options_.pool->Evaluate(model_, plan_buffer_, absl::MakeSpan(eval_buffer_));
  } else {
    for (size_t i = 0; i < plan_buffer_.size(); ++i) {
      eval_buffer_[i] = model_.Evaluate(plan_buffer_[i]);
    }
  }
  // Pass 2: in input order, score, count and report.
  std::vector<uint8_t> counted(plan_buffer_.size(), 0);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t h = PlanSpace::Hash(batch[i]);
    if (slot[i] < 0) {
      out.push_back(cache_.at(h));
      if (fresh != nullptr) fresh->push_back(0);
      continue;
    }
    if (counted[slot[i]]) {
      out.push_back(Score(plan_buffer_[slot[i]], eval_buffer_[slot[i]]));
      if (fresh != nullptr) fresh->push_back(0);
      continue;
    }
    counted[slot[i]] = 1;
    ++evaluations_;
    ++distinct_;
    ScoredPlan s = Score(plan_buffer_[slot[i]], eval_buffer_[slot[i]]);
    if (use_cache_) cache_.emplace(h, s);
    Consider(s, &batch[i]);
    out.push_back(std::move(s));
    if (fresh != nullptr) fresh->push_back(1);
  }
  stalled_batches_ =
      plan_buffer_.empty() && !batch.empty() ? stalled_batches_ + 1 : 0;
  return out;
}

bool SearchRun::Done() {
  if (stop_reason_.has_value()) return true;
  if (cancel_.cancelled()) {
    stop_reason_ = StopReason::kCancelled;
  } else if (evaluations_ >= options_.max_evaluations) {
    stop_reason_ = StopReason::kBudget;
  } else if (ElapsedSeconds() >= options_.max_seconds) {
    stop_reason_ = StopReason::kTime;
  } else if (exhausted_ || stalled_batches_ >= 50 ||
             static_cast<double>(distinct_) >= space_->Size()) {
    stop_reason_ = StopReason::kExhausted;
  }
  return stop_reason_.has_value();
}

void SearchRun::ReportProgress(int iterations_delta) {
  iterations_ += iterations_delta;
  SearchProgress p;
  p.evaluations_delta = evaluations_ - reported_evaluations_;
  p.iterations_delta = iterations_delta;
  p.evaluations = evaluations_;
  p.best_speedup = has_feasible_ && baseline_.evaluation.feasible
                       ? best_.evaluation.output_tokens_per_s / reference_
                       : 0.0;
  p.elapsed_seconds = ElapsedSeconds();
  reported_evaluations_ = evaluations_;
  observer_.OnProgress(p);
}

void SearchRun::FillFrontier() {
  if (model_.problem().workload.concurrency > 0) return;
  const std::vector<ScoredPlan> layouts = frontier_.points();
  for (const ScoredPlan& layout : layouts) {
    for (int batch : simulator::BatchSizeCandidates()) {
      if (batch >= layout.evaluation.batch_size) break;
      simulator::PlanDims plan = layout.plan;
      plan.batch_size = batch;
      frontier_.Offer(Score(plan, model_.Evaluate(plan)));
    }
  }
}

SearchResult SearchRun::Finish(std::string policy_weights) {
  if (reported_evaluations_ != evaluations_) ReportProgress(0);
  if (!stop_reason_.has_value()) Done();
  if (!stop_reason_.has_value()) stop_reason_ = StopReason::kExhausted;
  if (cancel_.cancelled()) stop_reason_ = StopReason::kCancelled;
  // A cancelled search returns at once: no frontier fill.
  if (*stop_reason_ != StopReason::kCancelled) FillFrontier();
  SearchResult r;
  r.best = best_;
  r.baseline = baseline_;
  r.evaluations = evaluations_;
  r.iterations = iterations_;
  r.elapsed_seconds = ElapsedSeconds();
  r.elite = elite_.Plans();
  r.policy_weights = std::move(policy_weights);
  r.stop_reason = *stop_reason_;
  r.space_size = space_ != nullptr ? space_->Size() : 0;
  r.warm_started = warm_started_;
  r.frontier = frontier_.points();
  return r;
}

}  // namespace shardplan::policy::internal
