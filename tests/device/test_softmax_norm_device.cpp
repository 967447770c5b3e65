// Device tier of the softmax and norm families beyond the contract suite (which covers every CI
// problem over three views, bitwise reruns and graph replay): PyTorch's special rows checked
// element by element on the warp, cluster and column paths (a fully masked row of -inf is NaN,
// a NaN or +inf anywhere makes the row NaN, -inf entries of a finite row are 0 / -inf), and
// rows past 2^31 elements (64-bit offsets) for softmax and layer_norm.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "baracuda/ops/norm.hpp"
#include "baracuda/ops/softmax.hpp"
#include "device/device_harness.hpp"

using namespace baracuda;
using namespace baracuda::test;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity(), kNaN = std::numeric_limits<float>::quiet_NaN();

bool enough_memory(size_t bytes) {
  size_t free_b = 0, total_b = 0;
  cudaMemGetInfo(&free_b, &total_b);
  return free_b > bytes + (size_t{1} << 30);
}

// softmax / log_softmax of `rows` lines of L f32 (line-major, or column-major: dim 0 of [L, rows])
// with the special rows below, row r holding its pattern and zeros elsewhere.
void check_special_rows(int64_t L, bool columns) {
  const int64_t rows = 4;
  std::vector<float> x(static_cast<size_t>(rows * L), 0.0f);
  auto at = [&](int64_t r, int64_t i) -> float& { return x[static_cast<size_t>(columns ? i * rows + r : r * L + i)]; };
  for (int64_t i = 0; i < L; ++i) at(0, i) = -kInf;  // fully masked
  at(1, L / 2) = kNaN;                               // a NaN
  at(2, L - 1) = kInf;                               // +inf
  for (int64_t i = 0; i < L; i += 2) at(3, i) = -kInf;  // masked entries of a finite row
  float *dx = nullptr, *dy = nullptr;
  const size_t bytes = x.size() * sizeof(float);
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&dx), bytes));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&dy), bytes));
  BARACUDA_CUDA_OK(cudaMemcpy(dx, x.data(), bytes, cudaMemcpyHostToDevice));
  for (SoftmaxKind op : {SoftmaxKind::kSoftmax, SoftmaxKind::kLogSoftmax}) {
    SoftmaxDescriptor d;
    d.op = op;
    d.dtype = DType::f32;
    d.rank = 2;
    d.shape[0] = columns ? L : rows;
    d.shape[1] = columns ? rows : L;
    d.dim = columns ? 0 : 1;
    auto plan = SoftmaxPlan::select(d);
    ASSERT_TRUE(plan) << plan.status().to_string();
    const TensorRef xr = TensorRef::make(dx, DType::f32, {d.shape[0], d.shape[1]});
    ASSERT_TRUE(plan->run(nullptr, {}, {xr, TensorMut::make(dy, DType::f32, {d.shape[0], d.shape[1]})}).ok());
    BARACUDA_CUDA_OK(cudaDeviceSynchronize());
    std::vector<float> y(x.size());
    BARACUDA_CUDA_OK(cudaMemcpy(y.data(), dy, bytes, cudaMemcpyDeviceToHost));
    auto got = [&](int64_t r, int64_t i) { return y[static_cast<size_t>(columns ? i * rows + r : r * L + i)]; };
    const bool log = op == SoftmaxKind::kLogSoftmax;
    const std::string what = std::string(enum_name(op)) + " L=" + std::to_string(L) + (columns ? " (columns)" : "") + " " + plan->sku().variant;
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t i = 0; i < L; ++i) ASSERT_TRUE(std::isnan(got(r, i))) << what << " row " << r << " [" << i << "] = " << got(r, i);
    const int64_t live = L / 2;  // the odd positions of row 3
    const double p = 1.0 / static_cast<double>(live);
    for (int64_t i = 0; i < L; ++i) {
      if (i % 2 == 0) {
        EXPECT_EQ(got(3, i), log ? -kInf : 0.0f) << what << " [" << i << "]";
      } else {
        const double want = log ? std::log(p) : p;
        EXPECT_NEAR(got(3, i), want, 1e-5 * std::fabs(want) + 1e-7) << what << " [" << i << "]";
      }
    }
  }
  cudaFree(dy);
  cudaFree(dx);
}

}  // namespace

TEST(SoftmaxDevice, SpecialRowsOnEveryPath) {
  BARACUDA_REQUIRE_GPU();
  check_special_rows(1000, false);   // a warp per line
  check_special_rows(6000, false);   // a block per line
  check_special_rows(40000, false);  // a cluster of blocks per line
  check_special_rows(300000, false); // a cluster, unstaged (online max and sum)
  check_special_rows(300, true);     // a thread per line (dim 0)
}

// softmax over [2^19 + 1, 4096] bf16 zeros (2^31 + 4096 elements): every output 2^-12 exactly,
// read past 2^31; then layer_norm over the same rows of ones: y = 0, mean 1, rstd = 1 / sqrt(eps).
TEST(SoftmaxNormDevice, BeyondTwoToThe31) {
  BARACUDA_REQUIRE_GPU();
  const int64_t rows = (int64_t{1} << 19) + 1, n = 4096, numel = rows * n;
  if (!enough_memory(static_cast<size_t>(numel) * 4 + static_cast<size_t>(rows) * 8)) GTEST_SKIP() << "needs ~10 GB of device memory";
  uint16_t *x = nullptr, *y = nullptr;
  float* stats = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&x), static_cast<size_t>(numel) * 2));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&y), static_cast<size_t>(numel) * 2));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&stats), static_cast<size_t>(rows) * 8));
  BARACUDA_CUDA_OK(cudaMemset(x, 0, static_cast<size_t>(numel) * 2));
  SoftmaxDescriptor sd;
  sd.dtype = DType::bf16;
  sd.rank = 2;
  sd.shape[0] = rows;
  sd.shape[1] = n;
  sd.dim = 1;
  auto sm = SoftmaxPlan::select(sd);
  ASSERT_TRUE(sm) << sm.status().to_string();
  ASSERT_TRUE(sm->run(nullptr, {}, {TensorRef::make(x, DType::bf16, {rows, n}), TensorMut::make(y, DType::bf16, {rows, n})}).ok());
  BARACUDA_CUDA_OK(cudaDeviceSynchronize());
  const int64_t probes[] = {0, (int64_t{1} << 31) - 1, int64_t{1} << 31, numel - 1};
  for (int64_t at : probes) {
    uint16_t v = 0;
    BARACUDA_CUDA_OK(cudaMemcpy(&v, y + at, 2, cudaMemcpyDeviceToHost));
    EXPECT_EQ(v, 0x3980) << "softmax at " << at;  // bf16 2^-12
  }
  // ones: bf16 0x3f80
  std::vector<uint16_t> ones(static_cast<size_t>(n), 0x3f80);
  for (int64_t r = 0; r < rows; r += 1) {
    if (r != 0 && r != rows - 1 && r != (int64_t{1} << 19) - 1) continue;  // the probed rows; the rest zeros
    BARACUDA_CUDA_OK(cudaMemcpy(x + r * n, ones.data(), static_cast<size_t>(n) * 2, cudaMemcpyHostToDevice));
  }
  NormDescriptor nd;
  nd.op = NormKind::kLayerNorm;
  nd.dtype = DType::bf16;
  nd.rank = 2;
  nd.shape[0] = rows;
  nd.shape[1] = n;
  nd.weight = nd.bias = false;
  auto ln = NormPlan::select(nd);
  ASSERT_TRUE(ln) << ln.status().to_string();
  NormArgs a;
  a.x = TensorRef::make(x, DType::bf16, {rows, n});
  a.y = TensorMut::make(y, DType::bf16, {rows, n});
  a.mean = TensorMut::make(stats, DType::f32, {rows, 1});
  a.rstd = TensorMut::make(stats + rows, DType::f32, {rows, 1});
  ASSERT_TRUE(ln->run(nullptr, {}, a).ok());
  BARACUDA_CUDA_OK(cudaDeviceSynchronize());
  for (int64_t r : {int64_t{0}, (int64_t{1} << 19) - 1, rows - 1}) {
    float mean = 0, rstd = 0;
    uint16_t v = 1;
    BARACUDA_CUDA_OK(cudaMemcpy(&mean, stats + r, 4, cudaMemcpyDeviceToHost));
    BARACUDA_CUDA_OK(cudaMemcpy(&rstd, stats + rows + r, 4, cudaMemcpyDeviceToHost));
    BARACUDA_CUDA_OK(cudaMemcpy(&v, y + r * n + n - 1, 2, cudaMemcpyDeviceToHost));
    EXPECT_EQ(mean, 1.0f) << "row " << r;
    EXPECT_NEAR(rstd, 1.0 / std::sqrt(1e-5), 1e-2) << "row " << r;
    EXPECT_EQ(v & 0x7fff, 0) << "row " << r;  // y = +-0
  }
  cudaFree(stats);
  cudaFree(y);
  cudaFree(x);
}
