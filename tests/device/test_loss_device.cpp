// Device tier of the loss family beyond the contract suite (every CI problem over three views,
// bitwise reruns, graph replay): PyTorch's special rows of cross_entropy element by element on the
// warp, block and column paths (a NaN or +inf score, or a fully -inf row, gives NaN; a -inf score
// elsewhere is a masked class; the target on a -inf score gives +inf; an ignored row gives 0 and
// a zero gradient), and more than 2^31 elements (64-bit offsets) for cross_entropy and mse.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "baracuda/ops/loss.hpp"
#include "device/device_harness.hpp"

using namespace baracuda;
using namespace baracuda::test;

namespace {



template <class T>
T* device_copy(const std::vector<T>& h) {
  T* d = nullptr;
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&d), h.size() * sizeof(T)), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  return d;
}
template <class T>
std::vector<T> host_copy(const T* d, size_t n) {
  std::vector<T> h(n);
  EXPECT_EQ(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}

// f32 scores of 6 samples x C classes (sample-major, or class-major when `columns`: the class
// axis strided), reduction none, forward and backward (dloss = 1).
void check_special_rows(int64_t C, bool columns) {
  const int64_t N = 6;
  std::vector<float> x(static_cast<size_t>(N * C), 0.0f);
  auto at = [&](int64_t n, int64_t c) -> float& { return x[static_cast<size_t>(columns ? c * N + n : n * C + c)]; };
  for (int64_t c = 0; c < C; ++c) at(2, c) = -kInf;      // sample 2: fully masked
  at(0, C / 2) = kNaN;                                     // sample 0: a NaN
  at(1, C - 1) = kInf;                                     // sample 1: +inf
  for (int64_t c = 0; c < C; c += 2) at(3, c) = -kInf;   // sample 3: even classes masked, target 1
  for (int64_t c = 0; c < C; c += 2) at(4, c) = -kInf;   // sample 4: target on a masked class
  const std::vector<int64_t> target = {1, 1, 1, 1, 0, -100};  // sample 5: ignored
  float* dx = device_copy(x);
  int64_t* dt = device_copy(target);
  float *dl = nullptr, *dlse = nullptr, *dg = nullptr, *dd = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&dl), N * 4));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&dlse), N * 4));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&dd), static_cast<size_t>(N * C) * 4));
  std::vector<float> ones(N, 1.0f);
  dg = device_copy(ones);
  CrossEntropyDescriptor d;
  d.dtype = DType::f32;
  d.rank = 2;
  d.shape[0] = N, d.shape[1] = C;
  d.reduction = LossReduction::kNone;
  const std::vector<int64_t> st = columns ? std::vector<int64_t>{1, N} : std::vector<int64_t>{C, 1};
  auto fwd = CrossEntropyPlan::select(d);
  ASSERT_TRUE(fwd) << fwd.status().to_string();
  CrossEntropyArgs a;
  a.input = TensorRef::make(dx, DType::f32, std::vector<int64_t>{N, C}, st);
  a.target = TensorRef::make(dt, DType::i64, {N});
  a.loss = TensorMut::make(dl, DType::f32, {N});
  a.lse = TensorMut::make(dlse, DType::f32, {N});
  ASSERT_TRUE(fwd->run(nullptr, {}, a).ok());
  auto bwd = CrossEntropyBackwardPlan::select(d);
  ASSERT_TRUE(bwd) << bwd.status().to_string();
  CrossEntropyBackwardArgs b;
  b.input = a.input;
  b.target = a.target;
  b.lse = TensorRef::make(dlse, DType::f32, {N});
  b.dloss = TensorRef::make(dg, DType::f32, {N});
  b.dinput = TensorMut::make(dd, DType::f32, std::vector<int64_t>{N, C}, st);
  ASSERT_TRUE(bwd->run(nullptr, {}, b).ok());
  BARACUDA_CUDA_OK(cudaDeviceSynchronize());
  const std::vector<float> loss = host_copy(dl, N), grad = host_copy(dd, static_cast<size_t>(N * C));
  const std::string what = "C=" + std::to_string(C) + (columns ? " (columns) " : " ") + fwd->sku().variant;
  for (int n = 0; n < 3; ++n) EXPECT_TRUE(std::isnan(loss[n])) << what << " sample " << n << " = " << loss[n];
  const double live = static_cast<double>(C / 2);  // the odd classes
  EXPECT_NEAR(loss[3], std::log(live), 1e-5 * std::log(live)) << what;
  EXPECT_EQ(loss[4], kInf) << what;
  EXPECT_EQ(loss[5], 0.0f) << what;
  auto g = [&](int64_t n, int64_t c) { return grad[static_cast<size_t>(columns ? c * N + n : n * C + c)]; };
  for (int64_t c = 0; c < C; ++c) {
    const double want = c % 2 == 0 ? 0.0 : 1.0 / live - (c == 1 ? 1.0 : 0.0);
    ASSERT_NEAR(g(3, c), want, 1e-6) << what << " dinput[3, " << c << "]";
    ASSERT_EQ(g(5, c), 0.0f) << what << " dinput[5, " << c << "] (ignored)";
    ASSERT_TRUE(std::isnan(g(2, c))) << what << " dinput[2, " << c << "] (fully masked)";
  }
  cudaFree(dx), cudaFree(dt), cudaFree(dl), cudaFree(dlse), cudaFree(dg), cudaFree(dd);
}

}  // namespace

TEST(CrossEntropyDevice, SpecialRowsOnEveryPath) {
  BARACUDA_REQUIRE_GPU();
  check_special_rows(1000, false);  // a warp per sample
  check_special_rows(5000, false);  // a block per sample
  check_special_rows(300, true);    // a thread per sample (strided class axis)
}

// cross_entropy over [2^15 + 1, 2^16] bf16 zeros (2^31 + 2^16 elements), targets 0: every loss
// log(2^16), lse the same, the mean too; the backward's dinput 2^-16 - [c = 0] scaled by 1 / N,
// probed past 2^31. Then mse over 2^31 + 8 bf16 elements of x = 1, y = 0: mean 1, dinput 2 / n.
TEST(LossDevice, BeyondTwoToThe31) {
  BARACUDA_REQUIRE_GPU();
  const int64_t N = (int64_t{1} << 15) + 1, C = int64_t{1} << 16, numel = N * C;
  if (!enough_memory(static_cast<size_t>(numel) * 4 + (size_t{1} << 20))) GTEST_SKIP() << "needs ~9 GB of device memory";
  uint16_t *x = nullptr, *dx = nullptr, *loss = nullptr, *dl = nullptr;
  int64_t* t = nullptr;
  float *lse = nullptr, *tw = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&x), static_cast<size_t>(numel) * 2));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&dx), static_cast<size_t>(numel) * 2));
  BARACUDA_CUDA_OK(cudaMemset(x, 0, static_cast<size_t>(numel) * 2));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&t), static_cast<size_t>(N) * 8));
  BARACUDA_CUDA_OK(cudaMemset(t, 0, static_cast<size_t>(N) * 8));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&lse), static_cast<size_t>(N) * 4));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&tw), 4));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&loss), 2));
  const uint16_t one_bf16 = 0x3f80;
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&dl), 2));
  BARACUDA_CUDA_OK(cudaMemcpy(dl, &one_bf16, 2, cudaMemcpyHostToDevice));
  CrossEntropyDescriptor d;
  d.dtype = DType::bf16;
  d.rank = 2;
  d.shape[0] = N, d.shape[1] = C;
  auto fwd = CrossEntropyPlan::select(d);
  ASSERT_TRUE(fwd) << fwd.status().to_string();
  void* ws = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(&ws, fwd->workspace_size()));
  CrossEntropyArgs a;
  a.input = TensorRef::make(x, DType::bf16, {N, C});
  a.target = TensorRef::make(t, DType::i64, {N});
  a.loss = TensorMut::make(loss, DType::bf16, std::vector<int64_t>{});
  a.lse = TensorMut::make(lse, DType::f32, {N});
  a.total_weight = TensorMut::make(tw, DType::f32, std::vector<int64_t>{});
  ASSERT_TRUE(fwd->run(nullptr, {ws, fwd->workspace_size()}, a).ok());
  auto bwd = CrossEntropyBackwardPlan::select(d);
  ASSERT_TRUE(bwd) << bwd.status().to_string();
  CrossEntropyBackwardArgs b;
  b.input = a.input;
  b.target = a.target;
  b.lse = TensorRef::make(lse, DType::f32, {N});
  b.total_weight = TensorRef::make(tw, DType::f32, std::vector<int64_t>{});
  b.dloss = TensorRef::make(dl, DType::bf16, std::vector<int64_t>{});
  b.dinput = TensorMut::make(dx, DType::bf16, {N, C});
  ASSERT_TRUE(bwd->run(nullptr, {}, b).ok());
  BARACUDA_CUDA_OK(cudaDeviceSynchronize());
  const float log_c = 16.0f * std::log(2.0f);
  float h_tw = 0, h_lse = 0;
  uint16_t h_loss = 0;
  BARACUDA_CUDA_OK(cudaMemcpy(&h_tw, tw, 4, cudaMemcpyDeviceToHost));
  BARACUDA_CUDA_OK(cudaMemcpy(&h_lse, lse + N - 1, 4, cudaMemcpyDeviceToHost));
  BARACUDA_CUDA_OK(cudaMemcpy(&h_loss, loss, 2, cudaMemcpyDeviceToHost));
  EXPECT_EQ(h_tw, static_cast<float>(N));
  EXPECT_NEAR(h_lse, log_c, 1e-5);
  const uint32_t loss_bits = static_cast<uint32_t>(h_loss) << 16;
  float h_loss_f = 0;
  std::memcpy(&h_loss_f, &loss_bits, 4);
  EXPECT_NEAR(h_loss_f, log_c, 0.05);  // (bf16)
  // dinput[n, c] = (2^-16 - [c = 0]) / N: probed in the last row (offsets past 2^31)
  for (int64_t c : {int64_t{0}, int64_t{1}, C - 1}) {
    uint16_t v = 0;
    BARACUDA_CUDA_OK(cudaMemcpy(&v, dx + (N - 1) * C + c, 2, cudaMemcpyDeviceToHost));
    const uint32_t bits = static_cast<uint32_t>(v) << 16;
    float f = 0;
    std::memcpy(&f, &bits, 4);
    const double want = (1.0 / static_cast<double>(C) - (c == 0 ? 1.0 : 0.0)) / static_cast<double>(N);
    EXPECT_NEAR(f, want, std::fabs(want) * 1e-2) << "dinput[N - 1, " << c << "]";
  }
  cudaFree(ws);
  // mse: x = 1 (bf16 0x3f80), y = 0 over 2^31 + 8 elements
  const int64_t n = (int64_t{1} << 31) + 8;
  std::vector<uint16_t> ones(1 << 20, one_bf16);
  for (int64_t i = 0; i < n; i += static_cast<int64_t>(ones.size()))
    BARACUDA_CUDA_OK(cudaMemcpy(x + i, ones.data(), static_cast<size_t>(std::min<int64_t>(ones.size(), n - i)) * 2, cudaMemcpyHostToDevice));
  PointwiseLossDescriptor p;
  p.op = PointwiseLossKind::kMse;
  p.dtype = DType::bf16;
  p.rank = 1;
  p.shape[0] = n;
  auto mse = PointwiseLossPlan::select(p);
  ASSERT_TRUE(mse) << mse.status().to_string();
  BARACUDA_CUDA_OK(cudaMalloc(&ws, mse->workspace_size()));
  PointwiseLossArgs pa;
  pa.input = TensorRef::make(x, DType::bf16, {n});
  pa.target = TensorRef::make(dx, DType::bf16, {n});  // (zeros below)
  pa.loss = TensorMut::make(loss, DType::bf16, std::vector<int64_t>{});
  BARACUDA_CUDA_OK(cudaMemset(dx, 0, static_cast<size_t>(n) * 2));
  ASSERT_TRUE(mse->run(nullptr, {ws, mse->workspace_size()}, pa).ok());
  BARACUDA_CUDA_OK(cudaDeviceSynchronize());
  BARACUDA_CUDA_OK(cudaMemcpy(&h_loss, loss, 2, cudaMemcpyDeviceToHost));
  EXPECT_EQ(h_loss, one_bf16) << "mse mean";
  cudaFree(ws), cudaFree(x), cudaFree(dx), cudaFree(t), cudaFree(lse), cudaFree(tw), cudaFree(loss), cudaFree(dl);
}
