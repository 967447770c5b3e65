// Device tier of local_response_norm beyond the contract suite (every CI problem over three
// views, bitwise reruns, graph replay): PyTorch's special values through the window (a NaN
// spoils the windows that hold it; +inf gives inf / inf = NaN at itself and 0 at its neighbours;
// k = 0 over a zero window gives 0 / 0 = NaN), channels-last and NCHW alike, and more than 2^31
// elements forward and backward.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "baracuda/ops/local_response_norm.hpp"
#include "device/device_harness.hpp"

using namespace baracuda;
using namespace baracuda::test;

namespace {

float bf16_value(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// [1, 6, 2] f32, size 3, k 0, alpha 3, beta 1 (d = Σ window x²): spatial 0 holds a NaN at channel 1
// and a +inf at channel 4; spatial 1 is zero everywhere. channels_last: the channel stride 1.
void check_specials(bool channels_last) {
  const int64_t C = 6, S = 2;
  std::vector<float> x(static_cast<size_t>(C * S), 0.0f);
  auto at = [&](int64_t c, int64_t s) -> float& { return x[static_cast<size_t>(channels_last ? s * C + c : c * S + s)]; };
  for (int64_t c = 0; c < C; ++c) at(c, 0) = 1.0f;
  at(1, 0) = kNaN, at(4, 0) = kInf;
  float *dx = nullptr, *dy = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&dx), x.size() * 4));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&dy), x.size() * 4));
  BARACUDA_CUDA_OK(cudaMemcpy(dx, x.data(), x.size() * 4, cudaMemcpyHostToDevice));
  LocalResponseNormDescriptor d;
  d.rank = 3;
  d.shape[0] = 1, d.shape[1] = C, d.shape[2] = S;
  d.size = 3, d.alpha = 3, d.beta = 1, d.k = 0;
  auto p = LocalResponseNormPlan::select(d);
  ASSERT_TRUE(p) << p.status().to_string();
  const std::vector<int64_t> shape = {1, C, S}, strides = channels_last ? std::vector<int64_t>{C * S, 1, C} : std::vector<int64_t>{C * S, S, 1};
  LocalResponseNormArgs a;
  a.input = TensorRef::make(dx, DType::f32, shape, strides);
  a.output = TensorMut::make(dy, DType::f32, shape, strides);
  ASSERT_TRUE(p->run(nullptr, {}, a).ok());
  std::vector<float> y(x.size());
  BARACUDA_CUDA_OK(cudaMemcpy(y.data(), dy, y.size() * 4, cudaMemcpyDeviceToHost));
  auto yat = [&](int64_t c, int64_t s) { return y[static_cast<size_t>(channels_last ? s * C + c : c * S + s)]; };
  // windows: W(c) = [c - 1, c + 1]; the NaN (channel 1) spoils channels 0..2; the inf (4): 3 and 5 → 1 / inf = 0, itself inf / inf
  for (int64_t c : {0, 1, 2}) EXPECT_TRUE(std::isnan(yat(c, 0))) << "c " << c << " (channels_last " << channels_last << ")";
  EXPECT_EQ(yat(3, 0), 0.0f);
  EXPECT_TRUE(std::isnan(yat(4, 0)));
  EXPECT_EQ(yat(5, 0), 0.0f);
  for (int64_t c = 0; c < C; ++c) EXPECT_TRUE(std::isnan(yat(c, 1))) << "0 / 0 at c " << c;
  cudaFree(dx), cudaFree(dy);
}

}  // namespace

TEST(LocalResponseNormDevice, SpecialValuesThroughTheWindow) {
  BARACUDA_REQUIRE_GPU();
  check_specials(false);
  check_specials(true);
}

TEST(LocalResponseNormDevice, BeyondTwoToThe31) {
  BARACUDA_REQUIRE_GPU();
  // [1, 3, 2^30] bf16 of ones (3 · 2^30 elements), size 3, alpha 3, beta 1, k 1:
  // d = 1 + (ones in the window) = 3, 4, 3 → y = 1/3, 1/4, 1/3
  const int64_t C = 3, S = int64_t{1} << 30, numel = C * S;
  if (!enough_memory(static_cast<size_t>(numel) * 6 + (size_t{1} << 20))) GTEST_SKIP() << "needs ~20 GB of device memory";
  uint16_t *x = nullptr, *y = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&x), static_cast<size_t>(numel) * 2));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&y), static_cast<size_t>(numel) * 2));
  const std::vector<uint16_t> ones(1 << 22, 0x3f80);
  for (int64_t i = 0; i < numel; i += static_cast<int64_t>(ones.size()))
    BARACUDA_CUDA_OK(cudaMemcpy(x + i, ones.data(), static_cast<size_t>(std::min<int64_t>(ones.size(), numel - i)) * 2, cudaMemcpyHostToDevice));
  LocalResponseNormDescriptor d;
  d.dtype = DType::bf16;
  d.rank = 3;
  d.shape[0] = 1, d.shape[1] = C, d.shape[2] = S;
  d.size = 3, d.alpha = 3, d.beta = 1, d.k = 1;
  auto f = LocalResponseNormPlan::select(d);
  ASSERT_TRUE(f) << f.status().to_string();
  LocalResponseNormArgs fa;
  fa.input = TensorRef::make(x, DType::bf16, {1, C, S});
  fa.output = TensorMut::make(y, DType::bf16, {1, C, S});
  ASSERT_TRUE(f->run(nullptr, {}, fa).ok());
  BARACUDA_CUDA_OK(cudaDeviceSynchronize());
  auto value = [&](int64_t i) {
    uint16_t v = 0;
    EXPECT_EQ(cudaMemcpy(&v, y + i, 2, cudaMemcpyDeviceToHost), cudaSuccess);
    return bf16_value(v);
  };
  EXPECT_NEAR(value(S - 1), 1.0 / 3, 2e-3) << "channel 0, last position";
  EXPECT_NEAR(value(2 * S - 1), 0.25, 2e-3) << "channel 1, last position";
  EXPECT_NEAR(value(numel - 1), 1.0 / 3, 2e-3) << "channel 2, last position";
  // backward, dy = 1: dx_c = 1 / d_c - 2 · x_c · Σ_{j: c ∈ W(j)} 1 / d_j²: channel 2: 1/3 - 2 (1/16 + 1/9)
  auto b = LocalResponseNormBackwardPlan::select(d);
  ASSERT_TRUE(b) << b.status().to_string();
  LocalResponseNormBackwardArgs ba;
  ba.input = fa.input;
  ba.doutput = fa.input;
  ba.dinput = TensorMut::make(y, DType::bf16, {1, C, S});
  ASSERT_TRUE(b->run(nullptr, {}, ba).ok());
  BARACUDA_CUDA_OK(cudaDeviceSynchronize());
  EXPECT_NEAR(value(numel - 1), 1.0 / 3 - 2 * (1.0 / 16 + 1.0 / 9), 1e-3) << "dx channel 2, last position";
  EXPECT_NEAR(value(2 * S - 1), 0.25 - 2 * (1.0 / 9 + 1.0 / 16 + 1.0 / 9), 2e-3) << "dx channel 1, last position";
  cudaFree(x), cudaFree(y);
}
