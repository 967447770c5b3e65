// Device tier of gather / scatter / nonzero beyond the contract suite (every CI problem over three views,
// reruns, graph replay): negative-stride data, transposed indices and padded outputs on the
// gather, the atomic and the sorted scatter (integer-valued floats, so every order sums
// exactly); the sorted pass bitwise identical run to run on a heavy duplicate (every term on
// one target) and within tolerance of the float64 sum; more than 2^31 elements (nonzero too).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "baracuda/ops/gather_scatter.hpp"
#include "baracuda/ops/nonzero.hpp"
#include "device/device_harness.hpp"

using namespace baracuda;
using namespace baracuda::test;

TEST(GatherScatterDevice, NegativeStridesTransposedIndexPaddedOut) {
  BARACUDA_REQUIRE_GPU();
  const int64_t R = 12, C = 40, K = 30, ld = 33;
  std::mt19937_64 rng(5);
  // x [R, C] stored with rows reversed (row stride −C): logical (r, c) at (R−1−r)·C + c
  std::vector<float> xs(static_cast<size_t>(R * C));
  auto X = [&](int64_t r, int64_t c) { return static_cast<float>(r * 100 + c); };
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) xs[static_cast<size_t>((R - 1 - r) * C + c)] = X(r, c);
  // index [R, K] stored transposed (strides 1, R); one in 10 out of range
  std::vector<int64_t> is(static_cast<size_t>(R * K));
  auto I = [&](int64_t r, int64_t k) { return is[static_cast<size_t>(k * R + r)]; };
  for (int64_t& v : is) v = rng() % 10 == 0 ? C : static_cast<int64_t>(rng() % C);
  float* x = to_device(xs);
  int64_t* idx = to_device(is);
  const std::vector<int64_t> xshape = {R, C}, ishape = {R, K};
  const TensorRef xv = TensorRef::make(x + (R - 1) * C, DType::f32, xshape, std::vector<int64_t>{-C, 1});
  const TensorRef iv = TensorRef::make(idx, DType::i64, ishape, std::vector<int64_t>{1, R});

  // gather along dim 1 into a padded [R, K] slice; out-of-range entries get 0
  std::vector<float> pad(static_cast<size_t>(R * ld), -7.0f);
  float* y = to_device(pad);
  auto g = GatherPlan::select(GatherDescriptor::gather(DType::f32, DType::i64, xshape, ishape, 1));
  ASSERT_TRUE(g) << g.status().to_string();
  ASSERT_TRUE(g->run(nullptr, {}, GatherArgs{xv, iv, TensorMut::make(y, DType::f32, ishape, std::vector<int64_t>{ld, 1}), {}}).ok());
  std::vector<float> got = download(y, pad.size());
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < ld; ++c) {
      const float want = c >= K ? -7.0f : (I(r, c) < C ? X(r, I(r, c)) : 0.0f);
      ASSERT_EQ(got[static_cast<size_t>(r * ld + c)], want) << "gather (" << r << ", " << c << ")";
    }

  // scatter sum along dim 1 of src = x[:, :K] (negative rows) into self [R, C] (a padded slice),
  // in place, atomic and sorted: integer values, so both orders give the exact sum
  for (ScatterAlgo algo : {ScatterAlgo::kAtomic, ScatterAlgo::kSort}) {
    const int64_t lds = C + 5;
    std::vector<float> self(static_cast<size_t>(R * lds), -9.0f);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c) self[static_cast<size_t>(r * lds + c)] = static_cast<float>(c);
    float* s = to_device(self);
    ScatterDescriptor d = ScatterDescriptor::scatter(DType::f32, DType::i64, xshape, ishape, 1, ScatterReduce::kSum);
    d.algo = algo;
    d.count_invalid = true;
    auto p = ScatterPlan::select(d);
    ASSERT_TRUE(p) << p.status().to_string();
    std::vector<int64_t> zero = {0};
    int64_t* counter = to_device(zero);
    void* ws = nullptr;
    if (p->workspace_size() > 0) BARACUDA_CUDA_OK(cudaMalloc(&ws, p->workspace_size()));
    const TensorMut sv = TensorMut::make(s, DType::f32, xshape, std::vector<int64_t>{lds, 1});
    const TensorRef src = TensorRef::make(x + (R - 1) * C, DType::f32, ishape, std::vector<int64_t>{-C, 1});
    const Status st = p->run(nullptr, {ws, p->workspace_size()}, ScatterArgs{sv, iv, src, sv, TensorMut::make(counter, DType::i64, {1})});
    ASSERT_TRUE(st.ok()) << st.to_string();
    std::vector<double> want(static_cast<size_t>(R * C));
    int64_t invalid = 0;
    for (int64_t r = 0; r < R; ++r) {
      for (int64_t c = 0; c < C; ++c) want[static_cast<size_t>(r * C + c)] = static_cast<double>(c);
      for (int64_t k = 0; k < K; ++k) {
        if (I(r, k) >= C) {
          ++invalid;
          continue;
        }
        want[static_cast<size_t>(r * C + I(r, k))] += X(r, k);
      }
    }
    got = download(s, self.size());
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < lds; ++c) {
        const double w = c >= C ? -9.0 : want[static_cast<size_t>(r * C + c)];
        ASSERT_EQ(got[static_cast<size_t>(r * lds + c)], w) << enum_name(algo) << " (" << r << ", " << c << ")";
      }
    EXPECT_EQ(download(counter, 1)[0], invalid) << enum_name(algo);
    cudaFree(s), cudaFree(counter), cudaFree(ws);
  }
  cudaFree(x), cudaFree(idx), cudaFree(y);
}

TEST(GatherScatterDevice, SortedIndexAddIsBitwiseDeterministic) {
  BARACUDA_REQUIRE_GPU();
  // index_add of 8192 bf16 rows of 512 into 64 rows: half of them on row 3 (a 4096-term run)
  const int64_t V = 64, N = 8192, D = 512;
  std::mt19937_64 rng(11);
  std::vector<int64_t> ids(static_cast<size_t>(N));
  for (int64_t& v : ids) v = rng() % 2 ? 3 : static_cast<int64_t>(rng() % V);
  std::vector<uint16_t> src(static_cast<size_t>(N * D));
  std::vector<double> srcd(src.size());
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (size_t i = 0; i < src.size(); ++i) {
    uint32_t b = 0;
    const float f = u(rng);
    std::memcpy(&b, &f, 4);
    src[i] = static_cast<uint16_t>(b >> 16);  // truncated to bf16
    const uint32_t back = static_cast<uint32_t>(src[i]) << 16;
    float g = 0;
    std::memcpy(&g, &back, 4);
    srcd[i] = g;
  }
  uint16_t* s = to_device(src);
  int64_t* idx = to_device(ids);
  const std::vector<int64_t> tshape = {V, D};
  PlanPreference det;
  det.determinism = Determinism::kRunToRun;
  auto p = ScatterPlan::select(ScatterDescriptor::index(DType::bf16, DType::i64, tshape, 0, N), det);
  ASSERT_TRUE(p) << p.status().to_string();
  ASSERT_EQ(p->sku().variant, "sort");
  void* ws = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(&ws, p->workspace_size()));
  std::vector<uint16_t> runs[2];
  for (auto& r : runs) {
    std::vector<uint16_t> zeros(static_cast<size_t>(V * D), 0);
    uint16_t* out = to_device(zeros);
    const TensorMut ov = TensorMut::make(out, DType::bf16, tshape);
    const ScatterArgs a{ov, TensorRef::make(idx, DType::i64, {N}), TensorRef::make(s, DType::bf16, {N, D}), ov, {}};
    ASSERT_TRUE(p->run(nullptr, {ws, p->workspace_size()}, a).ok());
    r = download(out, zeros.size());
    cudaFree(out);
  }
  ASSERT_EQ(runs[0], runs[1]) << "two runs of the sorted pass differ";
  std::vector<double> want(static_cast<size_t>(V * D), 0.0), mag(want.size(), 0.0), got(want.size());
  for (int64_t i = 0; i < N; ++i)
    for (int64_t c = 0; c < D; ++c) {
      const double v = srcd[static_cast<size_t>(i * D + c)];
      want[static_cast<size_t>(ids[static_cast<size_t>(i)] * D + c)] += v;
      mag[static_cast<size_t>(ids[static_cast<size_t>(i)] * D + c)] += std::fabs(v);
    }
  for (size_t i = 0; i < got.size(); ++i) {
    const uint32_t b = static_cast<uint32_t>(runs[0][i]) << 16;
    float f = 0;
    std::memcpy(&f, &b, 4);
    got[i] = f;
  }
  ErrorStats S;
  EXPECT_TRUE(within_tolerance("index_add sort", "heavy row 3", got, want, mag, DType::bf16, DType::f32, S));
  cudaFree(s), cudaFree(idx), cudaFree(ws);
}

TEST(GatherScatterDevice, BeyondTwoToThe31) {
  BARACUDA_REQUIRE_GPU();
  // index_select along the last axis of u8 [M, 4] with 8 entries: [M, 8], past 2^31 elements in
  // element units (64-bit decomposition); then index_copy back into it in place.
  const int64_t M = (int64_t{1} << 28) + 1;
  if (!enough_memory(static_cast<size_t>(12 * M))) GTEST_SKIP() << "needs ~3.3 GB of device memory";
  uint8_t *x = nullptr, *y = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&x), static_cast<size_t>(4 * M)));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&y), static_cast<size_t>(8 * M)));
  BARACUDA_CUDA_OK(cudaMemset(x, 1, static_cast<size_t>(4 * M)));
  const uint8_t head[4] = {10, 11, 12, 13}, tail[4] = {20, 21, 22, 23};
  BARACUDA_CUDA_OK(cudaMemcpy(x, head, 4, cudaMemcpyHostToDevice));
  BARACUDA_CUDA_OK(cudaMemcpy(x + 4 * (M - 1), tail, 4, cudaMemcpyHostToDevice));
  const std::vector<int64_t> sel = {3, 0, 1, 2, 3, 3, -1, 2}, back = {7, 6, 5, 4};
  int64_t* si = to_device(sel);
  int64_t* bi = to_device(back);
  const std::vector<int64_t> xs = {M, 4}, ys = {M, 8};
  auto g = GatherPlan::select(GatherDescriptor::index_select(DType::u8, DType::i64, xs, 1, 8));
  ASSERT_TRUE(g) << g.status().to_string();
  const TensorMut yv = TensorMut::make(y, DType::u8, ys);
  ASSERT_TRUE(g->run(nullptr, {}, GatherArgs{TensorRef::make(x, DType::u8, xs), TensorRef::make(si, DType::i64, {8}), yv, {}}).ok());
  std::vector<uint8_t> first = download(y, 8), last = download(y + 8 * (M - 1), 8);
  EXPECT_EQ(first, (std::vector<uint8_t>{13, 10, 11, 12, 13, 13, 0, 12}));
  EXPECT_EQ(last, (std::vector<uint8_t>{23, 20, 21, 22, 23, 23, 0, 22}));
  ScatterDescriptor d = ScatterDescriptor::index(DType::u8, DType::i64, ys, 1, 4, ScatterReduce::kNone);
  auto s = ScatterPlan::select(d);
  ASSERT_TRUE(s) << s.status().to_string();
  ASSERT_TRUE(s->run(nullptr, {}, ScatterArgs{yv, TensorRef::make(bi, DType::i64, {4}), TensorRef::make(x, DType::u8, xs), yv, {}}).ok());
  first = download(y, 8), last = download(y + 8 * (M - 1), 8);
  EXPECT_EQ(first, (std::vector<uint8_t>{13, 10, 11, 12, 13, 12, 11, 10}));
  EXPECT_EQ(last, (std::vector<uint8_t>{23, 20, 21, 22, 23, 22, 21, 20}));
  cudaFree(x), cudaFree(y), cudaFree(si), cudaFree(bi);
}

TEST(NonzeroDevice, BeyondTwoToThe31) {
  BARACUDA_REQUIRE_GPU();
  // a bool mask of 2^31 + 16 with three ones (first, middle, last): nonzero's coordinates past
  // 2^31, padding rows, and the count
  const int64_t n = (int64_t{1} << 31) + 16;
  if (!enough_memory(static_cast<size_t>(n) + (size_t{64} << 20))) GTEST_SKIP() << "needs ~2.2 GB of device memory";
  uint8_t* m = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&m), static_cast<size_t>(n)));
  BARACUDA_CUDA_OK(cudaMemset(m, 0, static_cast<size_t>(n)));
  const uint8_t one = 1;
  const int64_t at[3] = {0, int64_t{1} << 30, n - 1};
  for (int64_t i : at) BARACUDA_CUDA_OK(cudaMemcpy(m + i, &one, 1, cudaMemcpyHostToDevice));
  const std::vector<int64_t> shape = {n};
  auto p = NonzeroPlan::select(NonzeroDescriptor::nonzero(DType::boolean, shape, 5));
  ASSERT_TRUE(p) << p.status().to_string();
  std::vector<int64_t> init(6, 99);
  int64_t* out = to_device(init);
  void* ws = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(&ws, p->workspace_size()));
  NonzeroArgs a;
  a.input = TensorRef::make(m, DType::boolean, shape);
  a.out = TensorMut::make(out, DType::i64, std::vector<int64_t>{5, 1});
  a.count = TensorMut::make(out + 5, DType::i64, std::vector<int64_t>{1});
  const Status s = p->run(nullptr, {ws, p->workspace_size()}, a);
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(download(out, 6), (std::vector<int64_t>{0, int64_t{1} << 30, n - 1, -1, -1, 3}));
  cudaFree(m), cudaFree(out), cudaFree(ws);
}
