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

#include "baracuda/ops/fused_linear_cross_entropy.hpp"
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

// ---------------------------------------------------------------- fused linear cross entropy

namespace {

float bf16_to_float(uint16_t v) {
  const uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f = 0;
  std::memcpy(&f, &bits, 4);
  return f;
}

// An f32 plan over S tokens, H = 8, V = 40 in chunks of 4, with the given targets; returns loss,
// total_weight, dinput, dweight and dbias.
struct FlceOut {
  float loss = 0, tw = 0;
  std::vector<float> dx, dw, db;
};
FlceOut run_flce_f32(const std::vector<int64_t>& target) {
  const int64_t S = static_cast<int64_t>(target.size()), H = 8, V = 40;
  FusedLinearCrossEntropyDescriptor d;
  const int64_t xs[2] = {S, H}, ws_[2] = {V, H};
  d.input = TensorLayout::make(DType::f32, xs);
  d.weight = TensorLayout::make(DType::f32, ws_);
  d.bias = true;
  d.chunk_tokens = 4;
  auto p = FusedLinearCrossEntropyPlan::select(d);
  EXPECT_TRUE(p) << p.status().to_string();
  std::vector<float> x(static_cast<size_t>(S * H)), w(static_cast<size_t>(V * H)), b(static_cast<size_t>(V));
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.01f * static_cast<float>(static_cast<int>(i % 17) - 8);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.02f * static_cast<float>(static_cast<int>(i % 13) - 6);
  for (size_t i = 0; i < b.size(); ++i) b[i] = 0.1f * static_cast<float>(i % 3);
  float *dxp = device_copy(x), *dwp = device_copy(w), *dbp = device_copy(b);
  int64_t* dt = device_copy(target);
  float *loss = nullptr, *tw = nullptr, *gx = nullptr, *gw = nullptr, *gb = nullptr;
  void* ws = nullptr;
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&loss), 4), cudaSuccess);
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&tw), 4), cudaSuccess);
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&gx), x.size() * 4), cudaSuccess);
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&gw), w.size() * 4), cudaSuccess);
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&gb), b.size() * 4), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&ws, p->workspace_size()), cudaSuccess);
  FusedLinearCrossEntropyArgs a;
  a.input = TensorRef::make(dxp, DType::f32, {S, H});
  a.weight = TensorRef::make(dwp, DType::f32, {V, H});
  a.bias = TensorRef::make(dbp, DType::f32, {V});
  a.target = TensorRef::make(dt, DType::i64, {S});
  a.loss = TensorMut::make(loss, DType::f32, std::vector<int64_t>{});
  a.total_weight = TensorMut::make(tw, DType::f32, std::vector<int64_t>{});
  a.dinput = TensorMut::make(gx, DType::f32, {S, H});
  a.dweight = TensorMut::make(gw, DType::f32, {V, H});
  a.dbias = TensorMut::make(gb, DType::f32, {V});
  const Status s = p->run(nullptr, {ws, p->workspace_size()}, a);
  EXPECT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  FlceOut o;
  EXPECT_EQ(cudaMemcpy(&o.loss, loss, 4, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(&o.tw, tw, 4, cudaMemcpyDeviceToHost), cudaSuccess);
  o.dx = host_copy(gx, x.size()), o.dw = host_copy(gw, w.size()), o.db = host_copy(gb, b.size());
  for (void* q : {static_cast<void*>(dxp), static_cast<void*>(dwp), static_cast<void*>(dbp), static_cast<void*>(dt), static_cast<void*>(loss),
                  static_cast<void*>(tw), static_cast<void*>(gx), static_cast<void*>(gw), static_cast<void*>(gb), ws})
    cudaFree(q);
  return o;
}

}  // namespace

// Every token ignored (mean): loss 0 / 0 = NaN, total_weight 0, every gradient exactly 0 (no
// 0 · inf). A target out of range (not ignore_index): NaN loss, NaN in its own dinput row only,
// and NaN through dweight / dbias (its dz row is NaN), as cross_entropy's backward.
TEST(FusedLinearCrossEntropyDevice, IgnoredAndOutOfRangeTargets) {
  BARACUDA_REQUIRE_GPU();
  const FlceOut all = run_flce_f32(std::vector<int64_t>(10, -100));
  EXPECT_TRUE(std::isnan(all.loss)) << all.loss;
  EXPECT_EQ(all.tw, 0.0f);
  for (float v : all.dx) ASSERT_EQ(v, 0.0f);
  for (float v : all.dw) ASSERT_EQ(v, 0.0f);
  for (float v : all.db) ASSERT_EQ(v, 0.0f);
  const FlceOut bad = run_flce_f32({1, 2, 3, 4, 5, 99, 7, 8, -100, 9});  // token 5: class 99 of 40
  EXPECT_TRUE(std::isnan(bad.loss)) << bad.loss;
  EXPECT_EQ(bad.tw, 8.0f);  // the kept, in-range tokens
  for (int64_t s = 0; s < 10; ++s)
    for (int64_t h = 0; h < 8; ++h) {
      const float v = bad.dx[static_cast<size_t>(s * 8 + h)];
      if (s == 5) ASSERT_TRUE(std::isnan(v)) << "dinput[5, " << h << "]";
      else ASSERT_TRUE(std::isfinite(v)) << "dinput[" << s << ", " << h << "] = " << v;
    }
  EXPECT_TRUE(std::isnan(bad.db[0]));
}

// dweight past 2^31 elements: V = 2^17 + 8 classes, H = 16384, 4 tokens of x = 1, weight 0 (z = 0,
// p = 1 / V): dweight[c, h] = (4 / V - #{t = c}) / 4 for every h, probed in the last class row;
// then the backward scales it by dloss = 2 (64-bit indexing in both).
TEST(FusedLinearCrossEntropyDevice, BeyondTwoToThe31) {
  BARACUDA_REQUIRE_GPU();
  const int64_t S = 4, H = 16384, V = (int64_t{1} << 17) + 8, numel = V * H;
  if (!enough_memory(static_cast<size_t>(numel) * 4 + (size_t{1} << 30))) GTEST_SKIP() << "needs ~9 GB of device memory";
  FusedLinearCrossEntropyDescriptor d;
  const int64_t xs[2] = {S, H}, wsh[2] = {V, H};
  d.input = TensorLayout::make(DType::bf16, xs);
  d.weight = TensorLayout::make(DType::bf16, wsh);
  auto p = FusedLinearCrossEntropyPlan::select(d);
  ASSERT_TRUE(p) << p.status().to_string();
  uint16_t *w = nullptr, *gw = nullptr, *gx = nullptr, *loss = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&w), static_cast<size_t>(numel) * 2));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&gw), static_cast<size_t>(numel) * 2));
  BARACUDA_CUDA_OK(cudaMemset(w, 0, static_cast<size_t>(numel) * 2));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&gx), static_cast<size_t>(S * H) * 2));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&loss), 2));
  uint16_t* x = device_copy(std::vector<uint16_t>(static_cast<size_t>(S * H), 0x3f80));
  int64_t* t = device_copy(std::vector<int64_t>{V - 1, 0, V - 1, 5});
  void* ws = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(&ws, p->workspace_size()));
  FusedLinearCrossEntropyArgs a;
  a.input = TensorRef::make(x, DType::bf16, {S, H});
  a.weight = TensorRef::make(w, DType::bf16, {V, H});
  a.target = TensorRef::make(t, DType::i64, {S});
  a.loss = TensorMut::make(loss, DType::bf16, std::vector<int64_t>{});
  a.dinput = TensorMut::make(gx, DType::bf16, {S, H});
  a.dweight = TensorMut::make(gw, DType::bf16, {V, H});
  const Status s = p->run(nullptr, {ws, p->workspace_size()}, a);
  ASSERT_TRUE(s.ok()) << s.to_string();
  BARACUDA_CUDA_OK(cudaDeviceSynchronize());
  auto probe = [&](int64_t c, int64_t h) {
    uint16_t v = 0;
    EXPECT_EQ(cudaMemcpy(&v, gw + c * H + h, 2, cudaMemcpyDeviceToHost), cudaSuccess);
    return bf16_to_float(v);
  };
  const double last = (4.0 / static_cast<double>(V) - 2.0) / 4.0, other = 1.0 / static_cast<double>(V);
  for (int64_t h : {int64_t{0}, H / 2, H - 1}) {
    EXPECT_NEAR(probe(V - 1, h), last, 1e-2 * std::fabs(last)) << "dweight[V - 1, " << h << "]";
    EXPECT_NEAR(probe(V - 2, h), other, 1e-2 * other) << "dweight[V - 2, " << h << "]";
  }
  uint16_t h_loss = 0;
  BARACUDA_CUDA_OK(cudaMemcpy(&h_loss, loss, 2, cudaMemcpyDeviceToHost));
  EXPECT_NEAR(bf16_to_float(h_loss), std::log(static_cast<double>(V)), 0.05);
  // the backward: dweight (and dinput) times dloss = 2
  auto b = FusedLinearCrossEntropyBackwardPlan::select(d);
  ASSERT_TRUE(b) << b.status().to_string();
  uint16_t* two = device_copy(std::vector<uint16_t>{0x4000});
  FusedLinearCrossEntropyBackwardArgs ba;
  ba.dloss = TensorRef::make(two, DType::bf16, std::vector<int64_t>{});
  ba.dweight = TensorMut::make(gw, DType::bf16, {V, H});
  ASSERT_TRUE(b->run(nullptr, {}, ba).ok());
  BARACUDA_CUDA_OK(cudaDeviceSynchronize());
  EXPECT_NEAR(probe(V - 1, H - 1), 2 * last, 2e-2 * std::fabs(last)) << "2 · dweight[V - 1, H - 1]";
  for (void* q : {static_cast<void*>(w), static_cast<void*>(gw), static_cast<void*>(gx), static_cast<void*>(loss), static_cast<void*>(x),
                  static_cast<void*>(t), static_cast<void*>(two), ws})
    cudaFree(q);
}
