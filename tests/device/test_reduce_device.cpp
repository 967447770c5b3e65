// Device tier of the reductions and scans beyond the contract suite (which covers every CI
// problem over three views): lines and reductions past 2^31 elements (64-bit offsets and
// indices), bitwise run-to-run equality of a long segmented scan, and a NaN / tie row checked
// element by element.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "baracuda/ops/reduce.hpp"
#include "baracuda/ops/scan.hpp"
#include "device/device_harness.hpp"

using namespace baracuda;
using namespace baracuda::test;

// sum and argmax of 2^31 + 64 u8 ones (a 2 at an index past 2^31): i64 results, exact.
TEST(ReduceDevice, BeyondTwoToThe31) {
  BARACUDA_REQUIRE_GPU();
  const int64_t n = (int64_t{1} << 31) + 64;
  if (!enough_memory(static_cast<size_t>(n))) GTEST_SKIP() << "needs ~3 GB of device memory";
  uint8_t* x = nullptr;
  int64_t* out = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&x), static_cast<size_t>(n)));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&out), 16));
  BARACUDA_CUDA_OK(cudaMemset(x, 1, static_cast<size_t>(n)));
  const int64_t at = n - 7;
  BARACUDA_CUDA_OK(cudaMemset(x + at, 2, 1));
  ReduceDescriptor d;
  d.op = ReduceKind::kSum;
  d.dtype = DType::u8;
  d.rank = 1;
  d.shape[0] = n;
  auto sum = ReducePlan::select(d);
  ASSERT_TRUE(sum) << sum.status().to_string();
  void* ws = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(&ws, std::max<size_t>(sum->workspace_size(), 1) * 2));
  const TensorRef xr = TensorRef::make(x, DType::u8, {n});
  ASSERT_TRUE(sum->run(nullptr, {ws, sum->workspace_size()}, {xr, TensorMut::make(out, DType::i64, std::span<const int64_t>{}), {}}).ok());
  d.op = ReduceKind::kArgmax;
  auto arg = ReducePlan::select(d);
  ASSERT_TRUE(arg) << arg.status().to_string();
  ASSERT_LE(arg->workspace_size(), std::max<size_t>(sum->workspace_size(), 1) * 2);
  ASSERT_TRUE(arg->run(nullptr, {ws, arg->workspace_size()}, {xr, {}, TensorMut::make(out + 1, DType::i64, std::span<const int64_t>{})}).ok());
  BARACUDA_CUDA_OK(cudaDeviceSynchronize());
  int64_t got[2];
  BARACUDA_CUDA_OK(cudaMemcpy(got, out, 16, cudaMemcpyDeviceToHost));
  EXPECT_EQ(got[0], n + 1);
  EXPECT_EQ(got[1], at);
  cudaFree(ws);
  cudaFree(out);
  cudaFree(x);
}

// cumsum of two lines of 2^30 + 8 bool ones (2^31 + 16 elements) into i64: every line's last
// output is its length; one segmented pass over offsets past 2^31.
TEST(ReduceDevice, ScanBeyondTwoToThe31) {
  BARACUDA_REQUIRE_GPU();
  const int64_t L = (int64_t{1} << 30) + 8, n = 2 * L;
  if (!enough_memory(static_cast<size_t>(n) * 9)) GTEST_SKIP() << "needs ~20 GB of device memory";
  uint8_t* x = nullptr;
  int64_t* y = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&x), static_cast<size_t>(n)));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&y), static_cast<size_t>(n) * 8));
  BARACUDA_CUDA_OK(cudaMemset(x, 1, static_cast<size_t>(n)));
  ScanDescriptor d;
  d.op = ScanKind::kCumsum;
  d.dtype = DType::boolean;
  d.rank = 2;
  d.shape[0] = 2;
  d.shape[1] = L;
  d.dim = 1;
  auto plan = ScanPlan::select(d);
  ASSERT_TRUE(plan) << plan.status().to_string();
  void* ws = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(&ws, std::max<size_t>(plan->workspace_size(), 1)));
  ASSERT_TRUE(plan->run(nullptr, {ws, plan->workspace_size()},
                        {TensorRef::make(x, DType::boolean, {2, L}), TensorMut::make(y, DType::i64, {2, L}), {}})
                  .ok());
  BARACUDA_CUDA_OK(cudaDeviceSynchronize());
  for (int64_t at : {int64_t{0}, L - 1, L, n - 2, n - 1, L + (int64_t{1} << 29)}) {
    int64_t got = 0;
    BARACUDA_CUDA_OK(cudaMemcpy(&got, y + at, 8, cudaMemcpyDeviceToHost));
    EXPECT_EQ(got, at % L + 1) << "at " << at;
  }
  cudaFree(ws);
  cudaFree(y);
  cudaFree(x);
}

// A long segmented f32 cumsum and logcumsumexp: bitwise equal over reruns; cummax over a row of
// ties and NaNs element by element (PyTorch's rule: the last tie, the last NaN).
TEST(ReduceDevice, ScanDeterminismAndCummaxRule) {
  BARACUDA_REQUIRE_GPU();
  const int64_t L = 1 << 20;
  std::vector<float> h(static_cast<size_t>(L));
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  for (float& v : h) v = u(rng);
  float *x = nullptr, *y = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&x), L * 4));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&y), L * 4));
  BARACUDA_CUDA_OK(cudaMemcpy(x, h.data(), L * 4, cudaMemcpyHostToDevice));
  for (ScanKind op : {ScanKind::kCumsum, ScanKind::kLogCumSumExp}) {
    ScanDescriptor d;
    d.op = op;
    d.rank = 1;
    d.shape[0] = L;
    auto plan = ScanPlan::select(d);
    ASSERT_TRUE(plan);
    void* ws = nullptr;
    BARACUDA_CUDA_OK(cudaMalloc(&ws, std::max<size_t>(plan->workspace_size(), 1)));
    std::vector<float> first, again(static_cast<size_t>(L));
    for (int r = 0; r < 3; ++r) {
      ASSERT_TRUE(plan->run(nullptr, {ws, plan->workspace_size()}, {TensorRef::make(x, DType::f32, {L}), TensorMut::make(y, DType::f32, {L}), {}}).ok());
      BARACUDA_CUDA_OK(cudaMemcpy(again.data(), y, L * 4, cudaMemcpyDeviceToHost));
      if (r == 0) first = again;
      else EXPECT_EQ(0, std::memcmp(first.data(), again.data(), L * 4)) << enum_name(op) << " rerun " << r;
    }
    if (op == ScanKind::kCumsum) {  // against a float64 running sum
      double s = 0, worst = 0;
      for (int64_t i = 0; i < L; ++i) s += h[static_cast<size_t>(i)], worst = std::max(worst, std::fabs(first[static_cast<size_t>(i)] - s));
      EXPECT_LT(worst, 1e-3);
    }
    cudaFree(ws);
  }
  const float nan = std::nanf("");
  const std::vector<float> row = {1, 3, 3, 2, nan, 5, nan, 0};
  const std::vector<int64_t> want_ix = {0, 1, 2, 2, 4, 4, 6, 6};
  BARACUDA_CUDA_OK(cudaMemcpy(x, row.data(), row.size() * 4, cudaMemcpyHostToDevice));
  int64_t* ix = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&ix), row.size() * 8));
  ScanDescriptor d;
  d.op = ScanKind::kCummax;
  d.rank = 1;
  d.shape[0] = static_cast<int64_t>(row.size());
  auto plan = ScanPlan::select(d);
  ASSERT_TRUE(plan);
  const int64_t n = d.shape[0];
  ASSERT_TRUE(plan->run(nullptr, {}, {TensorRef::make(x, DType::f32, {n}), TensorMut::make(y, DType::f32, {n}), TensorMut::make(ix, DType::i64, {n})}).ok());
  std::vector<int64_t> got(row.size());
  BARACUDA_CUDA_OK(cudaMemcpy(got.data(), ix, row.size() * 8, cudaMemcpyDeviceToHost));
  EXPECT_EQ(got, want_ix);
  cudaFree(ix);
  cudaFree(y);
  cudaFree(x);
}
