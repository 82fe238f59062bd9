// shardplan-bench-torch-ops: what one LibTorch CPU operation costs on tiny
// tensors, forward only and forward + backward (Google Benchmark). This is
// the floor under the RL policy's per-iteration time (docs/search.md, "The
// RL searcher"; docs/benchmarks.md): its network is a few dozen such
// operations each way, while the cost model scores a plan in about a
// microsecond.
#include <torch/torch.h>

#include "benchmark/benchmark.h"

namespace {

constexpr int kChain = 40;  // operations per iteration

void SetUp() {
  torch::set_num_threads(1);
  torch::set_num_interop_threads(1);
}

// kChain multiplications of an 8-element tensor that requires grad (the
// autograd graph is recorded, as in the policy's forward pass).
void BM_ForwardOp(benchmark::State& state) {
  const torch::Tensor w = torch::ones({8}).requires_grad_(true);
  for (auto _ : state) {
    torch::Tensor y = w;
    for (int k = 0; k < kChain; ++k) y = y * 1.0001;
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * kChain);
}

// The same chain, then its backward pass.
void BM_ForwardBackwardOp(benchmark::State& state) {
  const torch::Tensor w = torch::ones({8}).requires_grad_(true);
  for (auto _ : state) {
    torch::Tensor y = w;
    for (int k = 0; k < kChain; ++k) y = y * 1.0001;
    y.sum().backward();
  }
  state.SetItemsProcessed(state.iterations() * kChain);
}

// A chain of the encoder's typical operation: addmm of 9 tokens (context + 8
// elite plans) x d_model 32 (the policy's sizes), forward + backward.
void BM_ForwardBackwardAddmm(benchmark::State& state) {
  const torch::Tensor w = torch::randn({32, 32}).mul_(0.1).requires_grad_(true);
  const torch::Tensor b = torch::zeros({32}).requires_grad_(true);
  const torch::Tensor x = torch::randn({9, 32});
  for (auto _ : state) {
    torch::Tensor y = x;
    for (int k = 0; k < kChain; ++k) y = torch::addmm(b, y, w);
    y.sum().backward();
  }
  state.SetItemsProcessed(state.iterations() * kChain);
}

BENCHMARK(BM_ForwardOp);
BENCHMARK(BM_ForwardBackwardOp);
BENCHMARK(BM_ForwardBackwardAddmm);

}  // namespace

int main(int argc, char** argv) {
  SetUp();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
