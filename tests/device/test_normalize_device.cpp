// Device tier of the normalize family beyond the contract suite (every CI problem over three
// views, bitwise reruns, graph replay): PyTorch's special lines of F.normalize on the warp, block
// and column paths (a zero line gives 0 and dx = dy / eps; a NaN gives a NaN line; +inf gives
// x / inf), and more than 2^31 elements (64-bit offsets) forward and backward.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "baracuda/ops/normalize.hpp"
#include "device/device_harness.hpp"

using namespace baracuda;
using namespace baracuda::test;

namespace {

// f32 lines of N: line 0 zeros, line 1 a NaN, line 2 a +inf, line 3 ramps; `columns`: the lines
// along axis 0 (strided). Forward and backward (dy = 1), p = 2, eps = 2^-10.
void check_special_lines(int64_t N, bool columns) {
  const int64_t L = 4;
  std::vector<float> x(static_cast<size_t>(L * N), 0.0f);
  auto at = [&](int64_t l, int64_t i) -> float& { return x[static_cast<size_t>(columns ? i * L + l : l * N + i)]; };
  for (int64_t i = 0; i < N; ++i) at(1, i) = 1.0f, at(2, i) = 2.0f, at(3, i) = 0.001f * static_cast<float>(i % 7);
  at(1, N / 2) = kNaN;
  at(2, N - 1) = kInf;
  float* dx_in = to_device(x);
  float* ones = to_device(std::vector<float>(x.size(), 1.0f));
  float *y = nullptr, *dx = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&y), x.size() * 4));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&dx), x.size() * 4));
  NormalizeDescriptor d;
  d.rank = 2;
  d.shape[0] = columns ? N : L, d.shape[1] = columns ? L : N;
  d.dim = columns ? 0 : 1;
  d.eps = 1.0 / 1024;
  auto f = NormalizePlan::select(d);
  auto b = NormalizeBackwardPlan::select(d);
  ASSERT_TRUE(f && b);
  const std::vector<int64_t> shape = {d.shape[0], d.shape[1]};
  NormalizeArgs fa;
  fa.input = TensorRef::make(dx_in, DType::f32, shape);
  fa.output = TensorMut::make(y, DType::f32, shape);
  ASSERT_TRUE(f->run(nullptr, {}, fa).ok());
  NormalizeBackwardArgs ba;
  ba.input = fa.input;
  ba.doutput = TensorRef::make(ones, DType::f32, shape);
  ba.dinput = TensorMut::make(dx, DType::f32, shape);
  ASSERT_TRUE(b->run(nullptr, {}, ba).ok());
  BARACUDA_CUDA_OK(cudaDeviceSynchronize());
  std::vector<float> hy(x.size()), hdx(x.size());
  BARACUDA_CUDA_OK(cudaMemcpy(hy.data(), y, x.size() * 4, cudaMemcpyDeviceToHost));
  BARACUDA_CUDA_OK(cudaMemcpy(hdx.data(), dx, x.size() * 4, cudaMemcpyDeviceToHost));
  const std::string what = "N=" + std::to_string(N) + (columns ? " (columns) " : " ") + f->sku().variant;
  auto Y = [&](int64_t l, int64_t i) { return hy[static_cast<size_t>(columns ? i * L + l : l * N + i)]; };
  auto DX = [&](int64_t l, int64_t i) { return hdx[static_cast<size_t>(columns ? i * L + l : l * N + i)]; };
  for (int64_t i = 0; i < N; ++i) {
    ASSERT_EQ(Y(0, i), 0.0f) << what << " zero line";
    ASSERT_EQ(DX(0, i), 1024.0f) << what << " zero line: dy / eps";
    ASSERT_TRUE(std::isnan(Y(1, i))) << what << " NaN line, element " << i;
    if (i < N - 1) ASSERT_EQ(Y(2, i), 0.0f) << what << " +inf line: x / inf";
  }
  EXPECT_TRUE(std::isnan(Y(2, N - 1))) << what << " inf / inf";
  double n = 0;
  for (int64_t i = 0; i < N; ++i) n += static_cast<double>(at(3, i)) * at(3, i);
  n = std::sqrt(n);
  EXPECT_NEAR(Y(3, 5), at(3, 5) / n, 1e-6) << what;
  cudaFree(dx_in), cudaFree(ones), cudaFree(y), cudaFree(dx);
}

}  // namespace

TEST(NormalizeDevice, SpecialLinesOnEveryPath) {
  BARACUDA_REQUIRE_GPU();
  check_special_lines(100, false);   // a warp per line
  check_special_lines(3000, false);  // a block per line
  check_special_lines(300, true);    // a thread per line (strided)
}

// F.normalize over [2^19 + 1, 4096] bf16 ones (2^31 + 4096 elements): every y = 1 / 64, probed in
// the last line; the backward with dy = 1 gives dx = 1/64 - 4096 / 64² · 1/64 = 0.
TEST(NormalizeDevice, BeyondTwoToThe31) {
  BARACUDA_REQUIRE_GPU();
  const int64_t L = (int64_t{1} << 19) + 1, N = 4096, numel = L * N;
  if (!enough_memory(static_cast<size_t>(numel) * 4 + (size_t{1} << 20))) GTEST_SKIP() << "needs ~9 GB of device memory";
  uint16_t *x = nullptr, *y = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&x), static_cast<size_t>(numel) * 2));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&y), static_cast<size_t>(numel) * 2));
  const std::vector<uint16_t> ones(1 << 20, 0x3f80);
  for (int64_t i = 0; i < numel; i += static_cast<int64_t>(ones.size()))
    BARACUDA_CUDA_OK(cudaMemcpy(x + i, ones.data(), static_cast<size_t>(std::min<int64_t>(ones.size(), numel - i)) * 2, cudaMemcpyHostToDevice));
  NormalizeDescriptor d;
  d.dtype = DType::bf16;
  d.rank = 2;
  d.shape[0] = L, d.shape[1] = N;
  d.dim = -1;
  auto f = NormalizePlan::select(d);
  ASSERT_TRUE(f) << f.status().to_string();
  NormalizeArgs fa;
  fa.input = TensorRef::make(x, DType::bf16, {L, N});
  fa.output = TensorMut::make(y, DType::bf16, {L, N});
  ASSERT_TRUE(f->run(nullptr, {}, fa).ok());
  BARACUDA_CUDA_OK(cudaDeviceSynchronize());
  for (int64_t i : {int64_t{0}, N / 2, N - 1}) {
    uint16_t v = 0;
    BARACUDA_CUDA_OK(cudaMemcpy(&v, y + (L - 1) * N + i, 2, cudaMemcpyDeviceToHost));
    EXPECT_EQ(v, 0x3c80) << "y[L - 1, " << i << "] (1/64 in bf16)";
  }
  auto b = NormalizeBackwardPlan::select(d);
  ASSERT_TRUE(b) << b.status().to_string();
  NormalizeBackwardArgs ba;
  ba.input = fa.input;
  ba.doutput = fa.input;  // dy = 1
  ba.dinput = TensorMut::make(y, DType::bf16, {L, N});
  ASSERT_TRUE(b->run(nullptr, {}, ba).ok());
  BARACUDA_CUDA_OK(cudaDeviceSynchronize());
  uint16_t v = 1;
  BARACUDA_CUDA_OK(cudaMemcpy(&v, y + numel - 1, 2, cudaMemcpyDeviceToHost));
  EXPECT_EQ(v & 0x7fff, 0) << "dx[L - 1, N - 1]";
  cudaFree(x), cudaFree(y);
}
