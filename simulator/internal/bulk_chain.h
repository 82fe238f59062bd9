// The prompt queue of one engine loop as the bulk-service queue it is: an
// iteration prefills up to a chunk of the FCFS prompt tokens queued at its
// start, and the prompts arriving during it wait for the next. Its chain at
// iteration starts, Q' = max(Q - C, 0) + A(V(Q) + c_p min(C, Q)) (A the
// compound-Poisson prompt tokens arriving during the iteration), is solved
// numerically on a token grid, and a tagged prompt's TTFT follows from the
// state it arrives in. Costs milliseconds per call (the grid's size is
// bounded): computed for streamed plans only (simulator/queueing.h,
// PredictStreamedQueueing). Used by simulator/queueing.cc only.
#ifndef SHARDPLAN_SIMULATOR_INTERNAL_BULK_CHAIN_H_
#define SHARDPLAN_SIMULATOR_INTERNAL_BULK_CHAIN_H_

#include <array>

#include "simulator/queueing.h"

namespace shardplan::simulator::internal {

struct BulkChainLoop {
  double rate = 0;                   // prompts/s
  double prefill_token_seconds = 0;  // c_p
  int chunk_tokens = 8192;           // C
  // The iteration's fixed part (overhead plus the decode batch's tokens)
  // at Q prompt tokens queued at its start: v_empty + (v_full - v_empty)
  // (1 - exp(-Q / content_scale)), the decode batch rising with the
  // backlog (content_scale 0 or v_full <= v_empty: v_empty throughout).
  // The loop's slow levels (the decode batch's slow fluctuation) each
  // their own v_empty, weighted.
  struct Level {
    double weight = 1;
    double v_empty = 0;
  };
  std::array<Level, 3> levels{};
  int level_count = 1;
  double v_full = 0;
  double content_scale = 0;
  // With a rise: the iteration's fixed part is iteration_seconds +
  // decode_request_seconds x the batch, whose time average must be the
  // running batch (Little's law); the levels' batches at an empty queue
  // are shifted together until it is.
  double iteration_seconds = 0;
  double decode_request_seconds = 0;
  double running_batch = 0;
  // A prompts-only loop stops when an iteration starts with no prompt
  // queued, and the next arrival starts an iteration at once. A loop that
  // decodes stops only when no request decodes either: the share of time
  // it stands still (idle_share) sets how often that happens.
  bool prompts_only = false;
  double idle_share = 0;
};

struct BulkChainTtft {
  bool solved = false;  // false when a level's queue is not stable
  double mean_seconds = 0;
  std::array<double, 3> seconds{};  // p50, p90, p99
  int states = 0;                   // the largest level's grid
};

BulkChainTtft SolveBulkChainTtft(const BulkChainLoop& loop,
                                 const LengthPoints& prompts);

}  // namespace shardplan::simulator::internal

#endif  // SHARDPLAN_SIMULATOR_INTERNAL_BULK_CHAIN_H_
