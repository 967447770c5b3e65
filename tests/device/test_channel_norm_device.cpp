// Device tier of the channel_norm family beyond the contract suite (which covers every CI problem
// over three views, bitwise reruns and graph replay): group_norm over 2^31 + 64 bf16 elements
// (64-bit element indices, cells of 2^25 + 1 elements split into chunks), x alternating 0 / 1 in
// storage order, every statistic and a sample of y checked against the float64 counts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "baracuda/ops/channel_norm.hpp"
#include "device/device_harness.hpp"

using namespace baracuda;
using namespace baracuda::test;

TEST(ChannelNormDevice, BeyondTwoToThe31) {
  BARACUDA_REQUIRE_GPU();
  const int64_t N = 2, C = 32, S = (int64_t{1} << 25) + 1, n = N * C * S;  // 2^31 + 64
  if (!enough_memory(static_cast<size_t>(n) * 4 + (size_t{1} << 24))) GTEST_SKIP() << "needs ~9 GB of device memory";
  ChannelNormDescriptor d;
  d.op = ChannelNormKind::kGroupNorm;
  d.dtype = DType::bf16;
  d.rank = 3;
  d.shape[0] = N, d.shape[1] = C, d.shape[2] = S;
  d.groups = 8;  // 4 channels per group
  d.weight = d.bias = false;
  auto plan = ChannelNormPlan::select(d);
  ASSERT_TRUE(plan) << plan.status().to_string();
  uint16_t *x = nullptr, *y = nullptr;
  float *mean = nullptr, *rstd = nullptr;
  void* ws = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&x), static_cast<size_t>(n) * 2));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&y), static_cast<size_t>(n) * 2));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&mean), static_cast<size_t>(N * 8) * 4));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&rstd), static_cast<size_t>(N * 8) * 4));
  BARACUDA_CUDA_OK(cudaMalloc(&ws, std::max<size_t>(plan->workspace_size(), 256)));
  // x[i] = i & 1 (bf16 0 / 1): a 1 MiB pattern, then doubling device copies
  {
    std::vector<uint16_t> pat(size_t{1} << 19);
    for (size_t i = 0; i < pat.size(); ++i) pat[i] = (i & 1) ? 0x3F80 : 0x0000;
    BARACUDA_CUDA_OK(cudaMemcpy(x, pat.data(), pat.size() * 2, cudaMemcpyHostToDevice));
    for (int64_t at = static_cast<int64_t>(pat.size()); at < n;) {
      const int64_t len = std::min(at, n - at);
      BARACUDA_CUDA_OK(cudaMemcpy(x + at, x, static_cast<size_t>(len) * 2, cudaMemcpyDeviceToDevice));
      at += len;
    }
  }
  const std::vector<int64_t> shape = {N, C, S}, sshape = {N, 8};
  ChannelNormArgs a;
  a.x = TensorRef::make(x, DType::bf16, shape);
  a.y = TensorMut::make(y, DType::bf16, shape);
  a.mean = TensorMut::make(mean, DType::f32, sshape);
  a.rstd = TensorMut::make(rstd, DType::f32, sshape);
  ASSERT_TRUE(plan->run(nullptr, Workspace{ws, plan->workspace_size()}, a).ok());
  BARACUDA_CUDA_OK(cudaDeviceSynchronize());
  std::vector<float> m(static_cast<size_t>(N * 8)), r(m.size());
  BARACUDA_CUDA_OK(cudaMemcpy(m.data(), mean, m.size() * 4, cudaMemcpyDeviceToHost));
  BARACUDA_CUDA_OK(cudaMemcpy(r.data(), rstd, r.size() * 4, cudaMemcpyDeviceToHost));
  const int64_t M = 4 * S;
  for (int64_t st = 0; st < N * 8; ++st) {
    const int64_t lo = st * M;  // the group's elements are flat [lo, lo + M): ones at odd indices
    const double ones = static_cast<double>((lo + M) / 2 - lo / 2), mu = ones / static_cast<double>(M);
    const double var = mu * (1 - mu), want_r = 1 / std::sqrt(var + 1e-5);
    EXPECT_NEAR(m[static_cast<size_t>(st)], mu, 1e-6) << "mean " << st;
    EXPECT_NEAR(r[static_cast<size_t>(st)], want_r, 1e-5 * want_r) << "rstd " << st;
    // y at the group's first, middle and last element (the last past 2^31 for the last group)
    for (int64_t f : {lo, lo + M / 2, lo + M - 1}) {
      uint16_t got = 0;
      BARACUDA_CUDA_OK(cudaMemcpy(&got, y + f, 2, cudaMemcpyDeviceToHost));
      uint32_t bits = static_cast<uint32_t>(got) << 16;
      float gv = 0;
      std::memcpy(&gv, &bits, 4);
      const double want = ((f & 1) - mu) * want_r;
      EXPECT_NEAR(gv, want, 1e-2 * std::fabs(want) + 1e-3) << "y[" << f << "]";
    }
  }
  cudaFree(ws);
  cudaFree(rstd);
  cudaFree(mean);
  cudaFree(y);
  cudaFree(x);
}
