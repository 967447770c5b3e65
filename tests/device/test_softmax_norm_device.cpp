// Device tier of the softmax and norm families beyond the contract suite (which covers every CI
// problem over three views, bitwise reruns and graph replay): PyTorch's special rows checked
// element by element on the warp, cluster and column paths (a fully masked row of -inf is NaN,
// a NaN or +inf anywhere makes the row NaN, -inf entries of a finite row are 0 / -inf), and
// rows past 2^31 elements (64-bit offsets) for softmax and layer_norm; an attention-shaped
// masked softmax (a [B, 1, 1, L] key-padding mask expanded with stride 0, a bottom-right causal
// mask, a batch whose keys are all padding) forward and backward on every row path.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "baracuda/ops/norm.hpp"
#include "baracuda/ops/softmax.hpp"
#include "device/device_harness.hpp"
#include "softmax_norm_loss_ref.hpp"

using namespace baracuda;
using namespace baracuda::test;

namespace {



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

namespace {

// softmax / log_softmax over [B = 2, H = 3, Lq = 5, L] f32 with a key-padding bool mask [B, 1, 1, L]
// expanded to x's shape by strides (0, 0 on H and Lq), causal with the bottom-right diagonal
// L - Lq, masked_rows nan and zero: y against ref::masked_softmax_row, then dx from that y and a
// random dy against ref::masked_softmax_backward_row. Batch 0 keeps all but its last 7 keys,
// batch 1 none (its lines fully masked).
void check_broadcast_mask(int64_t L) {
  const int64_t B = 2, H = 3, Lq = 5, n = B * H * Lq * L;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  std::vector<float> x(static_cast<size_t>(n)), dy(static_cast<size_t>(n));
  for (float& v : x) v = u(rng);
  for (float& v : dy) v = u(rng);
  std::vector<uint8_t> keep(static_cast<size_t>(B * L), 0);
  for (int64_t k = 0; k + 7 < L; ++k) keep[static_cast<size_t>(k)] = 1;
  float *dx_ = nullptr, *dy_ = nullptr, *dg = nullptr, *dd = nullptr;
  uint8_t* dm = nullptr;
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&dx_), bytes));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&dy_), bytes));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&dg), bytes));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&dd), bytes));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&dm), keep.size()));
  BARACUDA_CUDA_OK(cudaMemcpy(dx_, x.data(), bytes, cudaMemcpyHostToDevice));
  BARACUDA_CUDA_OK(cudaMemcpy(dg, dy.data(), bytes, cudaMemcpyHostToDevice));
  BARACUDA_CUDA_OK(cudaMemcpy(dm, keep.data(), keep.size(), cudaMemcpyHostToDevice));
  const std::vector<int64_t> shape = {B, H, Lq, L};
  const std::vector<int64_t> mstride = {L, 0, 0, 1};
  const TensorRef mask = TensorRef::make(dm, DType::boolean, shape, mstride);
  for (SoftmaxKind op : {SoftmaxKind::kSoftmax, SoftmaxKind::kLogSoftmax})
    for (MaskedRows rows : {MaskedRows::kNaN, MaskedRows::kZero}) {
      SoftmaxDescriptor d;
      d.op = op;
      d.rank = 4;
      for (int a = 0; a < 4; ++a) d.shape[a] = shape[static_cast<size_t>(a)];
      d.dim = 3;
      d.mask_dtype = DType::boolean;
      d.causal = true;
      d.diagonal = L - Lq;
      d.masked_rows = rows;
      auto fwd = SoftmaxPlan::select(d);
      auto bwd = SoftmaxBackwardPlan::select(d);
      ASSERT_TRUE(fwd && bwd) << (fwd ? bwd.status() : fwd.status()).to_string();
      ASSERT_TRUE(fwd->run(nullptr, {}, {TensorRef::make(dx_, DType::f32, shape), TensorMut::make(dy_, DType::f32, shape), mask}).ok());
      ASSERT_TRUE(bwd->run(nullptr, {}, {TensorRef::make(dy_, DType::f32, shape), TensorRef::make(dg, DType::f32, shape),
                                         TensorMut::make(dd, DType::f32, shape), mask})
                      .ok());
      BARACUDA_CUDA_OK(cudaDeviceSynchronize());
      std::vector<float> y(static_cast<size_t>(n)), dxg(static_cast<size_t>(n));
      BARACUDA_CUDA_OK(cudaMemcpy(y.data(), dy_, bytes, cudaMemcpyDeviceToHost));
      BARACUDA_CUDA_OK(cudaMemcpy(dxg.data(), dd, bytes, cudaMemcpyDeviceToHost));
      const bool log = op == SoftmaxKind::kLogSoftmax;
      const std::string what = std::string(enum_name(op)) + " masked_rows=" + std::string(enum_name(rows)) + " L=" + std::to_string(L) + " " + fwd->sku().variant;
      for (int64_t line = 0; line < B * H * Lq; ++line) {
        const int64_t b = line / (H * Lq), q = line % Lq;
        ref::LineMask m;
        m.kind = ref::MaskKind::kKeep;
        m.values.assign(keep.begin() + b * L, keep.begin() + (b + 1) * L);
        m.causal = true;
        m.q = q;
        m.diagonal = L - Lq;
        m.zero_rows = rows == MaskedRows::kZero;
        const auto at = [&](const std::vector<float>& v) {
          return std::vector<double>(v.begin() + line * L, v.begin() + (line + 1) * L);
        };
        const std::vector<double> yl = at(y);
        const std::vector<double> want = ref::masked_softmax_row(at(x), m, log);
        const std::vector<double> gwant = ref::masked_softmax_backward_row(yl, at(dy), m, log);
        for (int64_t k = 0; k < L; ++k) {
          const double w = want[static_cast<size_t>(k)], g = yl[static_cast<size_t>(k)];
          if (std::isnan(w) || std::isinf(w)) {
            ASSERT_TRUE(std::isnan(w) ? std::isnan(g) : g == w) << what << " line " << line << " [" << k << "] = " << g << ", want " << w;
          } else {
            ASSERT_NEAR(g, w, 2e-5 * (log ? 1 + std::fabs(w) : std::fabs(w)) + 1e-9) << what << " line " << line << " [" << k << "]";
          }
          const double gw = gwant[static_cast<size_t>(k)], gg = dxg[static_cast<size_t>(line * L + k)];
          if (std::isnan(gw)) ASSERT_TRUE(std::isnan(gg)) << what << " dx line " << line << " [" << k << "] = " << gg;
          else ASSERT_NEAR(gg, gw, 1e-4 * (1 + std::fabs(gw))) << what << " dx line " << line << " [" << k << "]";
        }
      }
    }
  cudaFree(dm);
  cudaFree(dd);
  cudaFree(dg);
  cudaFree(dy_);
  cudaFree(dx_);
}

}  // namespace

TEST(SoftmaxDevice, BroadcastCausalMaskOnEveryPath) {
  BARACUDA_REQUIRE_GPU();
  check_broadcast_mask(1000);    // a warp per line
  check_broadcast_mask(6000);    // a block per line
  check_broadcast_mask(40000);   // a cluster of blocks per line
  check_broadcast_mask(300000);  // a cluster, unstaged
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
