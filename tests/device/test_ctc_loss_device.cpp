// Device tier of ctc_loss beyond the contract suite (every CI problem over three views, bitwise
// reruns, graph replay): lengths and labels outside their ranges (device data, not read on the
// host) give that sample a NaN loss and gradient and leave the others exact; log_probs and
// dlog_probs views whose offsets pass 2^31 elements (64-bit offsets).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "baracuda/ops/ctc_loss.hpp"
#include "device/device_harness.hpp"
#include "softmax_norm_loss_ref.hpp"

using namespace baracuda;
using namespace baracuda::test;

namespace {

std::vector<std::vector<double>> sample_lp(const std::vector<float>& lp, int64_t T, int64_t N, int64_t C, int64_t n) {
  std::vector<std::vector<double>> r(static_cast<size_t>(T), std::vector<double>(static_cast<size_t>(C)));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < C; ++c) r[static_cast<size_t>(t)][static_cast<size_t>(c)] = lp[static_cast<size_t>((t * N + n) * C + c)];
  return r;
}

}  // namespace

TEST(CtcLossDevice, BadLengthsAndLabelsGiveThatSampleNaN) {
  BARACUDA_REQUIRE_GPU();
  const int64_t T = 12, N = 4, C = 5, S = 3;
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> u(-3.0f, -0.1f);
  std::vector<float> lp(static_cast<size_t>(T * N * C));
  for (float& v : lp) v = u(rng);
  // sample 0 valid; 1: input_length T + 1; 2: a label C; 3: target_length S + 1
  const std::vector<int64_t> tg = {1, 2, 1, 1, 2, 3, 1, 5, 2, 3, 3, 4}, il = {T, T + 1, T, T}, tl = {3, 2, 2, S + 1};
  float* d_lp = to_device(lp);
  int64_t *d_tg = to_device(tg), *d_il = to_device(il), *d_tl = to_device(tl);
  float *d_loss = nullptr, *d_grad = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_loss), N * 4));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_grad), lp.size() * 4));
  CtcLossDescriptor d;
  d.T = T, d.N = N, d.C = C, d.max_target_length = S, d.reduction = LossReduction::kNone;
  auto f = CtcLossPlan::select(d);
  auto b = CtcLossBackwardPlan::select(d);
  ASSERT_TRUE(f && b);
  void* ws = nullptr;
  const size_t wsb = std::max(f->workspace_size(), b->workspace_size());
  BARACUDA_CUDA_OK(cudaMalloc(&ws, wsb));
  CtcLossArgs a;
  a.log_probs = TensorRef::make(d_lp, DType::f32, {T, N, C});
  a.targets = TensorRef::make(d_tg, DType::i64, {N, S});
  a.input_lengths = TensorRef::make(d_il, DType::i64, {N});
  a.target_lengths = TensorRef::make(d_tl, DType::i64, {N});
  a.loss = TensorMut::make(d_loss, DType::f32, {N});
  ASSERT_TRUE(f->run(nullptr, {ws, wsb}, a).ok());
  std::vector<float> ones(static_cast<size_t>(N), 1.0f);
  float* d_ones = to_device(ones);
  CtcLossBackwardArgs ba;
  ba.log_probs = a.log_probs, ba.targets = a.targets, ba.input_lengths = a.input_lengths, ba.target_lengths = a.target_lengths;
  ba.dloss = TensorRef::make(d_ones, DType::f32, {N});
  ba.dlog_probs = TensorMut::make(d_grad, DType::f32, {T, N, C});
  ASSERT_TRUE(b->run(nullptr, {ws, wsb}, ba).ok());
  std::vector<float> loss(static_cast<size_t>(N)), grad(lp.size());
  BARACUDA_CUDA_OK(cudaMemcpy(loss.data(), d_loss, N * 4, cudaMemcpyDeviceToHost));
  BARACUDA_CUDA_OK(cudaMemcpy(grad.data(), d_grad, grad.size() * 4, cudaMemcpyDeviceToHost));
  const ref::CtcSample r = ref::ctc_loss_sample(sample_lp(lp, T, N, C, 0), T, {1, 2, 1}, 0);
  EXPECT_NEAR(loss[0], r.nll, 1e-4 * std::fabs(r.nll));
  for (int64_t n = 1; n < N; ++n) EXPECT_TRUE(std::isnan(loss[static_cast<size_t>(n)])) << "sample " << n;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < C; ++c) {
      EXPECT_NEAR(grad[static_cast<size_t>(t * N * C + c)], r.grad[static_cast<size_t>(t)][static_cast<size_t>(c)], 1e-4) << "t " << t << " c " << c;
      for (int64_t n = 1; n < N; ++n) EXPECT_TRUE(std::isnan(grad[static_cast<size_t>((t * N + n) * C + c)])) << "sample " << n;
    }
  cudaFree(d_lp), cudaFree(d_tg), cudaFree(d_il), cudaFree(d_tl), cudaFree(d_loss), cudaFree(d_grad), cudaFree(d_ones), cudaFree(ws);
}

TEST(CtcLossDevice, OffsetsBeyondTwoToThe31) {
  BARACUDA_REQUIRE_GPU();
  // log_probs / dlog_probs [T 4, N 1, C 3] f32 with a time stride of 2^30 + 1 elements: the last step at 3 · 2^30 + 3
  const int64_t T = 4, C = 3, st = (int64_t{1} << 30) + 1, span = (T - 1) * st + C;
  if (!enough_memory(static_cast<size_t>(span) * 8 + (size_t{1} << 20))) GTEST_SKIP() << "needs ~26 GB of device memory";
  float *lp = nullptr, *g = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&lp), static_cast<size_t>(span) * 4));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&g), static_cast<size_t>(span) * 4));
  std::vector<std::vector<double>> h(static_cast<size_t>(T), std::vector<double>(static_cast<size_t>(C)));
  for (int64_t t = 0; t < T; ++t) {
    float row[3] = {-1.2f - 0.1f * static_cast<float>(t), -0.8f, -1.5f + 0.2f * static_cast<float>(t)};
    for (int64_t c = 0; c < C; ++c) h[static_cast<size_t>(t)][static_cast<size_t>(c)] = row[c];
    BARACUDA_CUDA_OK(cudaMemcpy(lp + t * st, row, 12, cudaMemcpyHostToDevice));
  }
  const std::vector<int64_t> tg = {1, 2}, il = {T}, tl = {2};
  int64_t *d_tg = to_device(tg), *d_il = to_device(il), *d_tl = to_device(tl);
  float* d_loss = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_loss), 4));
  float* d_one = to_device(std::vector<float>{1.0f});
  CtcLossDescriptor d;
  d.T = T, d.N = 1, d.C = C, d.max_target_length = 2, d.reduction = LossReduction::kSum;
  auto f = CtcLossPlan::select(d);
  auto b = CtcLossBackwardPlan::select(d);
  ASSERT_TRUE(f && b);
  void* ws = nullptr;
  const size_t wsb = std::max(f->workspace_size(), b->workspace_size());
  BARACUDA_CUDA_OK(cudaMalloc(&ws, wsb));
  CtcLossArgs a;
  a.log_probs = TensorRef::make(lp, DType::f32, {T, 1, C}, {st, C, 1});
  a.targets = TensorRef::make(d_tg, DType::i64, {1, 2});
  a.input_lengths = TensorRef::make(d_il, DType::i64, {1});
  a.target_lengths = TensorRef::make(d_tl, DType::i64, {1});
  a.loss = TensorMut::make(d_loss, DType::f32, {});
  ASSERT_TRUE(f->run(nullptr, {ws, wsb}, a).ok());
  CtcLossBackwardArgs ba;
  ba.log_probs = a.log_probs, ba.targets = a.targets, ba.input_lengths = a.input_lengths, ba.target_lengths = a.target_lengths;
  ba.dloss = TensorRef::make(d_one, DType::f32, {});
  ba.dlog_probs = TensorMut::make(g, DType::f32, {T, 1, C}, {st, C, 1});
  ASSERT_TRUE(b->run(nullptr, {ws, wsb}, ba).ok());
  float loss = 0, last[3] = {};
  BARACUDA_CUDA_OK(cudaMemcpy(&loss, d_loss, 4, cudaMemcpyDeviceToHost));
  BARACUDA_CUDA_OK(cudaMemcpy(last, g + (T - 1) * st, 12, cudaMemcpyDeviceToHost));
  const ref::CtcSample r = ref::ctc_loss_sample(h, T, {1, 2}, 0);
  EXPECT_NEAR(loss, r.nll, 1e-5 * std::fabs(r.nll));
  for (int64_t c = 0; c < C; ++c) EXPECT_NEAR(last[c], r.grad[static_cast<size_t>(T - 1)][static_cast<size_t>(c)], 1e-5) << "c " << c;
  cudaFree(lp), cudaFree(g), cudaFree(d_tg), cudaFree(d_il), cudaFree(d_tl), cudaFree(d_loss), cudaFree(d_one), cudaFree(ws);
}
