// Bounded Pareto archive (policy/internal/pareto_archive.h).
#include "policy/internal/pareto_archive.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace shardplan::policy::internal {
namespace {

double PerGpu(const ScoredPlan& s) {
  return s.evaluation.output_tokens_per_s_per_gpu;
}
double PerUser(const ScoredPlan& s) {
  return TokensPerSecondPerUser(s.evaluation);
}

}  // namespace

ParetoArchive::ParetoArchive(int capacity) : capacity_(std::max(2, capacity)) {}

bool ParetoArchive::Offer(const ScoredPlan& scored) {
  const double x = PerGpu(scored);
  const double y = PerUser(scored);
  if (!scored.evaluation.feasible || !(x > 0) || !(y > 0)) return false;
  // First point with throughput per GPU < x; the one before it (if any) has
  // the smallest throughput >= x and, the set being non-dominated, the largest
  // per-user speed among those: it alone decides whether the plan is dominated.
  auto by_x_desc = [](const ScoredPlan& p, double value) {
    return PerGpu(p) >= value;
  };
  auto first_below =
      std::lower_bound(points_.begin(), points_.end(), x, by_x_desc);
  if (first_below != points_.begin() && PerUser(*(first_below - 1)) >= y) {
    return false;
  }
  // The points it dominates (throughput <= x and per-user speed <= y) follow
  // contiguously from the first point with throughput <= x.
  auto first_at_or_below = first_below;
  while (first_at_or_below != points_.begin() &&
         PerGpu(*(first_at_or_below - 1)) == x) {
    --first_at_or_below;
  }
  auto end_dominated = first_at_or_below;
  while (end_dominated != points_.end() && PerUser(*end_dominated) <= y) {
    ++end_dominated;
  }
  auto at = points_.erase(first_at_or_below, end_dominated);
  points_.insert(at, scored);
  if (size() > capacity_) DropMostCrowded();
  return true;
}

// Removes the interior point whose neighbours are closest together in log
// space: the one whose loss leaves the smallest gap in the curve.
void ParetoArchive::DropMostCrowded() {
  size_t victim = 1;
  double smallest = std::numeric_limits<double>::infinity();
  for (size_t i = 1; i + 1 < points_.size(); ++i) {
    const double dx =
        std::log(PerGpu(points_[i - 1])) - std::log(PerGpu(points_[i + 1]));
    const double dy =
        std::log(PerUser(points_[i + 1])) - std::log(PerUser(points_[i - 1]));
    const double gap = dx * dx + dy * dy;
    if (gap < smallest) {
      smallest = gap;
      victim = i;
    }
  }
  points_.erase(points_.begin() + victim);
}

}  // namespace shardplan::policy::internal
