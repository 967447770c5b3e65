// Device tier for causal conv1d: forward and backward of every dtype × weight dtype × layout ×
// width × activation × states form against the float64 reference over contiguous, misaligned,
// padded-row, transposed and permuted views (poisoned outputs, canary gaps); the decode update
// in shift and circular mode with state indices; bitwise reruns; graph capture; > 2^31 elements.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "baracuda/baracuda.hpp"
#include "causal_conv1d_ref.hpp"
#include "device/device_harness.hpp"

using namespace baracuda;
using namespace baracuda::test;

namespace {

constexpr uint8_t kPoison = 0xFF;  // NaN in every float dtype

ErrorStats g_stats[3];  // fwd, bwd, update

std::vector<int64_t> data_shape(Conv1dLayout l, int64_t B, int64_t C, int64_t L) {
  return l == Conv1dLayout::kBCL ? std::vector<int64_t>{B, C, L} : std::vector<int64_t>{B, L, C};
}
// view flat index of [B, C, L] element (b, c, t)
int64_t flat_of(Conv1dLayout l, int64_t C, int64_t L, int64_t b, int64_t c, int64_t t) {
  return l == Conv1dLayout::kBCL ? (b * C + c) * L + t : (b * L + t) * C + c;
}

// Logical values of a buffer in [B, C, L] order (data views) or its own row-major order.
std::vector<double> values(const StridedBuffer& s, Conv1dLayout l, int64_t B, int64_t C, int64_t L) {
  std::vector<double> v(static_cast<size_t>(B * C * L));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t t = 0; t < L; ++t)
        v[static_cast<size_t>((b * C + c) * L + t)] = bits_to_double(s.dtype, s.get_bits(flat_of(l, C, L, b, c, t)));
  return v;
}
std::vector<double> values(const StridedBuffer& s) { return logical_values(s); }
std::vector<double> absv(std::vector<double> v) { return abs_values(std::move(v)); }

StridedBuffer make_buf(DType dt, std::vector<int64_t> shape, Layout l, std::mt19937_64* rng) {
  return poisoned_buffer(dt, std::move(shape), l, kPoison, rng);
}

// Compares `got` (view, [B, C, L] order when `l` given) with want; tol = out_eps·|want| +
// 64·acc_eps·mag (mag: the same sums over absolute values). Checks the canary gaps too.
bool compare(const char* what, const std::string& repro, StridedBuffer& got, const std::vector<double>& want,
             const std::vector<double>& mag, DType acc_dt, const std::vector<int64_t>* bcl, Conv1dLayout l, ErrorStats& S) {
  if (!download_and_check_gaps(what, repro, got, kPoison)) return false;
  const std::vector<double> g = bcl ? values(got, l, (*bcl)[0], (*bcl)[1], (*bcl)[2]) : values(got);
  return within_tolerance(what, repro, g, want, mag, got.dtype, acc_dt, S);
}

struct Size {
  int64_t B, C, L;
};

// One forward + backward case; returns false on a failure.
bool run_case(DType dt, DType wdt, Conv1dLayout lay, int W, bool silu, bool states, bool bias, Layout view,
              const Size& z, uint64_t seed) {
  CausalConv1dDescriptor d;
  d.dtype = dt;
  d.weight_dtype = wdt;
  d.layout = lay;
  d.batch = z.B;
  d.channels = z.C;
  d.seq = z.L;
  d.width = W;
  d.has_bias = bias;
  d.activation = silu ? Conv1dActivation::kSiLU : Conv1dActivation::kNone;
  d.initial_states = d.final_states = states;
  char buf[400];
  std::snprintf(buf, sizeof buf, "conv1d %s w:%s %s W%d %s%s%s view %s B%lld C%lld L%lld seed %llu",
                std::string(dtype_name(dt)).c_str(), std::string(dtype_name(wdt)).c_str(),
                std::string(enum_name(lay)).c_str(), W, silu ? "silu" : "none", states ? " states" : "",
                bias ? " bias" : "", layout_name(view), (long long)z.B, (long long)z.C, (long long)z.L,
                (unsigned long long)seed);
  const std::string repro = buf;
  std::mt19937_64 rng(seed);
  const auto shp = data_shape(lay, z.B, z.C, z.L);
  const std::vector<int64_t> bcl{z.B, z.C, z.L};
  StridedBuffer x = make_buf(dt, shp, view, &rng), dy = make_buf(dt, shp, view, &rng);
  StridedBuffer y = make_buf(dt, shp, view, nullptr), dx = make_buf(dt, shp, view, nullptr);
  const Layout wl = view == Layout::kPermuted ? Layout::kTransposed : Layout::kContiguous;
  StridedBuffer w = make_buf(wdt, {z.C, W}, wl, &rng), dw = make_buf(wdt, {z.C, W}, wl, nullptr);
  StridedBuffer bb = make_buf(wdt, {z.C}, Layout::kContiguous, &rng), db = make_buf(wdt, {z.C}, Layout::kContiguous, nullptr);
  const std::vector<int64_t> ss{z.B, z.C, W - 1};
  StridedBuffer s0 = make_buf(dt, ss, Layout::kPaddedRows, &rng), sf = make_buf(dt, ss, Layout::kContiguous, nullptr);
  StridedBuffer dsf = make_buf(dt, ss, Layout::kOffset1, &rng), ds0 = make_buf(dt, ss, Layout::kPermuted, nullptr);
  auto fplan = CausalConv1dPlan::select(d);
  auto bplan = CausalConv1dBackwardPlan::select(d);
  EXPECT_TRUE(fplan.ok() && bplan.ok()) << repro;
  if (!fplan.ok() || !bplan.ok()) return false;
  CausalConv1dArgs fa{x.ref(), w.ref(), bias ? bb.ref() : TensorRef{}, states ? s0.ref() : TensorRef{}, y.mut(),
                      states ? sf.mut() : TensorMut{}};
  void* ws = nullptr;
  const size_t wsb = bplan->workspace_size();
  if (wsb > 0) EXPECT_EQ(cudaMalloc(&ws, wsb), cudaSuccess);
  CausalConv1dBackwardArgs ba{x.ref(),  w.ref(),  bias ? bb.ref() : TensorRef{}, states ? s0.ref() : TensorRef{},
                              dy.ref(), states ? dsf.ref() : TensorRef{},        dx.mut(),
                              dw.mut(), bias ? db.mut() : TensorMut{},           states ? ds0.mut() : TensorMut{}};
  Status st = fplan->run(nullptr, {}, fa);
  EXPECT_TRUE(st.ok()) << repro << ": " << st.to_string();
  Status st2 = bplan->run(nullptr, {ws, wsb}, ba);
  EXPECT_TRUE(st2.ok()) << repro << ": " << st2.to_string();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << repro;
  cudaFree(ws);
  if (!st.ok() || !st2.ok()) return false;
  // reference on the rounded inputs, and on their absolute values for the error scale
  ref::Conv1dShape s{z.B, z.C, z.L, W, silu};
  const auto xv = values(x, lay, z.B, z.C, z.L), dyv = values(dy, lay, z.B, z.C, z.L), wv = values(w);
  const auto bv = bias ? values(bb) : std::vector<double>{}, s0v = states ? values(s0) : std::vector<double>{};
  const auto dsfv = states ? values(dsf) : std::vector<double>{};
  std::vector<double> ry, rf, rdx, rdw, rdb, rds0, my, mf, mdx, mdw, mdb, mds0;
  ref::causal_conv1d_forward(s, xv, wv, bv, s0v, &ry, &rf);
  ref::causal_conv1d_backward(s, xv, wv, bv, s0v, dyv, dsfv, &rdx, &rdw, &rdb, &rds0);
  ref::Conv1dShape sa = s;
  sa.silu = false;  // |silu'| <= 1.1: bound the sums with 2·(sums of absolute values)
  ref::causal_conv1d_forward(sa, absv(xv), absv(wv), absv(bv), absv(s0v), &my, &mf);
  ref::causal_conv1d_backward(sa, absv(xv), absv(wv), absv(bv), absv(s0v), absv(dyv), absv(dsfv), &mdx, &mdw, &mdb, &mds0);
  for (auto* m : {&my, &mdx, &mdw, &mdb, &mds0})
    for (double& e : *m) e *= 2;
  bool ok = compare("y", repro, y, ry, my, dt, &bcl, lay, g_stats[0]);
  if (states) ok = ok && compare("final_states", repro, sf, rf, std::vector<double>(rf.size(), 0.0), dt, nullptr, lay, g_stats[0]);
  ok = ok && compare("dx", repro, dx, rdx, mdx, dt, &bcl, lay, g_stats[1]);
  ok = ok && compare("dweight", repro, dw, rdw, mdw, dt, nullptr, lay, g_stats[1]);
  if (bias) ok = ok && compare("dbias", repro, db, rdb, mdb, dt, nullptr, lay, g_stats[1]);
  if (states) ok = ok && compare("dinitial_states", repro, ds0, rds0, mds0, dt, nullptr, lay, g_stats[1]);
  ++g_stats[0].cases;
  ++g_stats[1].cases;
  return ok;
}

void print_stats() {
  const char* n[3] = {"fwd", "bwd", "update"};
  for (int i = 0; i < 3; ++i)
    std::printf("[causal_conv1d %s] %lld cases, %lld elements, worst %.3f of tolerance (%s)\n", n[i],
                (long long)g_stats[i].cases, (long long)g_stats[i].elements, g_stats[i].worst, g_stats[i].worst_at.c_str());
}

}  // namespace

// Sizes: single element, odd channels, more than one time segment (8192) and chan block
// (4·128 steps), partial channel blocks, L < W − 1, empty sequence.
TEST(CausalConv1dDevice, EveryDtypeLayoutWidthView) {
  BARACUDA_REQUIRE_GPU();
  const Size sizes[] = {{1, 1, 1}, {2, 3, 5}, {2, 64, 300}, {1, 17, 2100}, {3, 136, 700}, {2, 8, 0}, {1, 40, 2}, {1, 5, 8300}};
  const DType dts[] = {DType::f32, DType::f16, DType::bf16, DType::f64};
  const Layout views[] = {Layout::kContiguous, Layout::kOffset1, Layout::kPaddedRows, Layout::kTransposed, Layout::kPermuted};
  uint64_t seed = 1;
  int fails = 0;
  for (DType dt : dts)
    for (Conv1dLayout lay : {Conv1dLayout::kBCL, Conv1dLayout::kBLC})
      for (int W : {2, 3, 4, 5, 8})
        for (Layout v : views) {
          const Size& z = sizes[seed % std::size(sizes)];
          const DType wdt = seed % 3 == 0 ? DType::f32 : dt;
          const bool silu = seed % 4 != 1, states = seed % 3 != 2, bias = seed % 5 != 3;
          if (!run_case(dt, wdt, lay, W, silu, states, bias, v, z, seed)) ++fails;
          ++seed;
          if (fails > 5) {
            print_stats();
            FAIL() << "stopping after 6 failing cases";
          }
        }
  // every size with the fast (contiguous) views of both layouts, both widths' windows
  for (const Size& z : sizes)
    for (Conv1dLayout lay : {Conv1dLayout::kBCL, Conv1dLayout::kBLC})
      for (int W : {4, 7})
        if (!run_case(DType::bf16, DType::bf16, lay, W, true, true, true, Layout::kContiguous, z, seed++)) ++fails;
  print_stats();
  EXPECT_EQ(fails, 0);
}

// Channel-first backward with whole-row tasks: rows no longer than a time task and enough
// channels for two waves of warps (H200: 132 SMs · 16 warps · 2 = 4224 tasks) make a task walk
// several batch rows of one channel through one staging pipeline (conv1d_geometry.hpp,
// task_rows); a task with every batch row of its channel writes dweight / dbias itself (direct,
// no reduction kernel). Expected on the H200: 5 rows per task (groups of 5 and 2), 4 (4 and 1),
// then direct for the rest (B = 4, 4, 3, 2, 2, 2). Row ends at a sub-chunk boundary (L = 512,
// 1024, 2048) and inside one (1500, 600); with and without states (d(final states) forces the
// tested last sub-chunk); scalar loads (padded and offset views) and vectors.
TEST(CausalConv1dDevice, BackwardWholeRowTasks) {
  BARACUDA_REQUIRE_GPU();
  struct C {
    DType dt;
    Size z;
    int W;
    bool states;
    Layout view;
  };
  const C cases[] = {
      {DType::bf16, {7, 2112, 1500}, 4, true, Layout::kContiguous},
      {DType::bf16, {5, 2200, 2048}, 4, false, Layout::kContiguous},
      {DType::bf16, {4, 4300, 512}, 4, false, Layout::kContiguous},
      {DType::bf16, {4, 4300, 1024}, 3, false, Layout::kPaddedRows},
      {DType::f32, {3, 4300, 600}, 5, true, Layout::kContiguous},
      {DType::f16, {2, 4300, 2048}, 8, false, Layout::kContiguous},
      {DType::f64, {2, 4300, 512}, 4, true, Layout::kContiguous},
      {DType::bf16, {2, 4300, 1024}, 4, true, Layout::kOffset1},
  };
  uint64_t seed = 900;
  int fails = 0;
  for (const C& k : cases)
    if (!run_case(k.dt, k.dt, Conv1dLayout::kBCL, k.W, true, k.states, true, k.view, k.z, seed++)) ++fails;
  print_stats();
  EXPECT_EQ(fails, 0);
}

// A long sequence in chunks through final -> initial states equals one pass (bitwise on y).
TEST(CausalConv1dDevice, ChunkedThroughStatesMatchesOnePass) {
  BARACUDA_REQUIRE_GPU();
  for (Conv1dLayout lay : {Conv1dLayout::kBCL, Conv1dLayout::kBLC}) {
    const int64_t B = 2, C = 64, L = 4096, L1 = 1536, W = 4;
    std::mt19937_64 rng(7);
    StridedBuffer x = make_buf(DType::bf16, data_shape(lay, B, C, L), Layout::kContiguous, &rng);
    StridedBuffer w = make_buf(DType::bf16, {C, W}, Layout::kContiguous, &rng);
    StridedBuffer bb = make_buf(DType::bf16, {C}, Layout::kContiguous, &rng);
    StridedBuffer y = make_buf(DType::bf16, data_shape(lay, B, C, L), Layout::kContiguous, nullptr);
    StridedBuffer y2 = make_buf(DType::bf16, data_shape(lay, B, C, L), Layout::kContiguous, nullptr);
    StridedBuffer st = make_buf(DType::bf16, {B, C, W - 1}, Layout::kContiguous, nullptr);
    CausalConv1dDescriptor d;
    d.dtype = d.weight_dtype = DType::bf16;  // the former defaults: bf16, bias, SiLU
    d.has_bias = true;
    d.activation = Conv1dActivation::kSiLU;
    d.layout = lay;
    d.batch = B;
    d.channels = C;
    d.seq = L;
    auto whole = CausalConv1dPlan::select(d);
    ASSERT_TRUE(whole.ok());
    ASSERT_TRUE(whole->run(nullptr, {}, {x.ref(), w.ref(), bb.ref(), {}, y.mut(), {}}).ok());
    // chunk views: time-axis slices of the same buffers
    const int ax = lay == Conv1dLayout::kBCL ? 2 : 1;
    auto slice = [&](const StridedBuffer& s, int64_t t0, int64_t n) {
      TensorMut m = s.mut();
      m.data = static_cast<char*>(m.data) + t0 * s.stride[ax] * static_cast<int64_t>(s.elem());
      m.shape[ax] = n;
      return m;
    };
    d.seq = L1;
    d.final_states = true;
    auto first = CausalConv1dPlan::select(d);
    TensorMut xa = slice(x, 0, L1);
    TensorRef xar;
    static_cast<TensorLayout&>(xar) = xa;
    xar.data = xa.data;
    ASSERT_TRUE(first->run(nullptr, {}, {xar, w.ref(), bb.ref(), {}, slice(y2, 0, L1), st.mut()}).ok());
    d.seq = L - L1;
    d.final_states = false;
    d.initial_states = true;
    auto second = CausalConv1dPlan::select(d);
    TensorMut xb = slice(x, L1, L - L1);
    TensorRef xbr;
    static_cast<TensorLayout&>(xbr) = xb;
    xbr.data = xb.data;
    TensorRef str = st.ref();
    ASSERT_TRUE(second->run(nullptr, {}, {xbr, w.ref(), bb.ref(), str, slice(y2, L1, L - L1), {}}).ok());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    y.download();
    y2.download();
    EXPECT_EQ(y.host, y2.host) << enum_name(lay);
  }
}

// Decode update: shift and circular, state indices with padding rows, n = 1 and 3.
TEST(CausalConv1dDevice, UpdateMatchesReference) {
  BARACUDA_REQUIRE_GPU();
  uint64_t seed = 100;
  int fails = 0;
  for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::f64})
    for (int W : {2, 4, 8})
      for (int form = 0; form < 4; ++form) {  // bit 0 circular, bit 1 indices
        const int64_t B = 3, C = 37, n = seed % 2 ? 1 : 3, S = seed % 3 ? W - 1 : W + 3, rows = form & 2 ? 5 : B;
        const Conv1dLayout lay = seed % 2 ? Conv1dLayout::kBCL : Conv1dLayout::kBLC;
        CausalConv1dUpdateDescriptor d;
        d.dtype = dt;
        d.weight_dtype = seed % 3 == 0 ? DType::f32 : dt;
        d.layout = lay;
        d.batch = B;
        d.channels = C;
        d.seq = n;
        d.width = W;
        d.state_len = S;
        d.state_batch = rows;
        d.circular = form & 1;
        d.state_indices = form & 2;
        d.has_bias = true;
        d.activation = seed % 4 == 1 ? Conv1dActivation::kNone : Conv1dActivation::kSiLU;
        std::mt19937_64 rng(seed);
        StridedBuffer x = make_buf(dt, data_shape(lay, B, C, n), Layout::kContiguous, &rng);
        StridedBuffer y = make_buf(dt, data_shape(lay, B, C, n), Layout::kOffset1, nullptr);
        StridedBuffer w = make_buf(d.weight_dtype, {C, W}, Layout::kContiguous, &rng);
        StridedBuffer bb = make_buf(d.weight_dtype, {C}, Layout::kContiguous, &rng);
        StridedBuffer st = make_buf(dt, {rows, C, S}, seed % 2 ? Layout::kContiguous : Layout::kPaddedRows, &rng);
        StridedBuffer lens = make_buf(DType::i32, {B}, Layout::kContiguous, nullptr);
        StridedBuffer idx = make_buf(DType::i32, {B}, Layout::kContiguous, nullptr);
        std::vector<int32_t> lens_h, idx_h;
        for (int64_t b = 0; b < B; ++b) {
          lens_h.push_back(static_cast<int32_t>(rng() % 50) - 5);  // negative values wrap
          idx_h.push_back(b == 1 ? -1 : static_cast<int32_t>((b * 2 + 1) % rows));  // row 1 is padding
          lens.set_bits(b, static_cast<uint64_t>(static_cast<uint32_t>(lens_h.back())));
          idx.set_bits(b, static_cast<uint64_t>(static_cast<uint32_t>(idx_h.back())));
        }
        lens.upload();
        idx.upload();
        auto plan = CausalConv1dUpdatePlan::select(d);
        ASSERT_TRUE(plan.ok()) << plan.status().to_string();
        const std::vector<double> state0 = values(st);
        std::vector<double> state = state0;
        const auto xv = values(x, lay, B, C, n);
        const Status s = plan->run(nullptr, {}, {x.ref(), w.ref(), bb.ref(), d.circular ? lens.ref() : TensorRef{},
                                                 d.state_indices ? idx.ref() : TensorRef{}, st.mut(), y.mut()});
        ASSERT_TRUE(s.ok()) << s.to_string();
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        ref::Conv1dShape rs{B, C, n, W, d.activation == Conv1dActivation::kSiLU};
        const auto wv = values(w), bv = values(bb);
        const auto want = ref::causal_conv1d_update(rs, n, S, xv, wv, bv, &state, rows, d.circular ? lens_h : std::vector<int32_t>{},
                                                    d.state_indices ? idx_h : std::vector<int32_t>{});
        ref::Conv1dShape ra = rs;  // error scale: the same sums over absolute values
        ra.silu = false;
        std::vector<double> sa = absv(state0);
        const auto mag0 = ref::causal_conv1d_update(ra, n, S, absv(xv), absv(wv), absv(bv), &sa, rows, d.circular ? lens_h : std::vector<int32_t>{},
                                                    d.state_indices ? idx_h : std::vector<int32_t>{});
        std::vector<double> mag(mag0.size());
        for (size_t i = 0; i < mag.size(); ++i) mag[i] = 2 * mag0[i];
        char repro[200];
        std::snprintf(repro, sizeof repro, "update %s W%d S%lld n%lld form %d %s seed %llu", std::string(dtype_name(dt)).c_str(),
                      W, (long long)S, (long long)n, form, std::string(enum_name(lay)).c_str(), (unsigned long long)seed);
        const std::vector<int64_t> bcl{B, C, n};
        bool ok = compare("y", repro, y, want, mag, dt, &bcl, lay, g_stats[2]);
        ok = ok && compare("conv_state", repro, st, state, std::vector<double>(state.size(), 0.0), dt, nullptr, lay, g_stats[2]);
        ++g_stats[2].cases;
        if (!ok) ++fails;
        ++seed;
      }
  print_stats();
  EXPECT_EQ(fails, 0);
}

// More than 2^31 elements on each kernel (64-bit offsets): x constant, so every y past the
// first W−1 steps of a row is the same value; checked around 2^31 and at the end.
TEST(CausalConv1dDevice, BeyondTwoToThe31Elements) {
  BARACUDA_REQUIRE_GPU();
  size_t free_b = 0, total_b = 0;
  cudaMemGetInfo(&free_b, &total_b);
  const int64_t n = (int64_t{1} << 31) + 4096;
  if (free_b < static_cast<size_t>(n) * 2 * 2 + (size_t{1} << 30)) GTEST_SKIP() << "needs ~9 GB of device memory";
  for (Conv1dLayout lay : {Conv1dLayout::kBCL, Conv1dLayout::kBLC}) {
    const int64_t C = lay == Conv1dLayout::kBCL ? 1 : 128, L = n / C;
    void *x = nullptr, *y = nullptr;
    ASSERT_EQ(cudaMalloc(&x, n * 2), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&y, n * 2), cudaSuccess);
    ASSERT_EQ(cudaMemset(x, 0x3F, n * 2), cudaSuccess);  // bf16 0x3F3F = 0.74609375
    ASSERT_EQ(cudaMemset(y, 0xFF, n * 2), cudaSuccess);
    std::vector<uint16_t> wv(static_cast<size_t>(C * 4), 0x3F80), bv(static_cast<size_t>(C), 0);  // w = 1, bias 0
    void *w = nullptr, *b = nullptr;
    ASSERT_EQ(cudaMalloc(&w, wv.size() * 2), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&b, bv.size() * 2), cudaSuccess);
    cudaMemcpy(w, wv.data(), wv.size() * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(b, bv.data(), bv.size() * 2, cudaMemcpyHostToDevice);
    CausalConv1dDescriptor d;
    d.dtype = d.weight_dtype = DType::bf16;
    d.has_bias = true;
    d.layout = lay;
    d.channels = C;
    d.seq = L;
    d.activation = Conv1dActivation::kNone;
    auto plan = CausalConv1dPlan::select(d);
    ASSERT_TRUE(plan.ok());
    const auto shp = data_shape(lay, 1, C, L);
    const Status s = plan->run(nullptr, {},
                               {TensorRef::make(x, DType::bf16, shp), TensorRef::make(w, DType::bf16, {C, 4}),
                                TensorRef::make(b, DType::bf16, {C}), {}, TensorMut::make(y, DType::bf16, shp), {}});
    ASSERT_TRUE(s.ok()) << s.to_string();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const uint16_t want = 0x403F;  // 4 · 0.74609375 = 2.984375 in bf16
    for (int64_t at : {(int64_t{1} << 31) - 2048, n - 4096}) {
      std::vector<uint16_t> h(4096);
      cudaMemcpy(h.data(), static_cast<uint16_t*>(y) + at, 4096 * 2, cudaMemcpyDeviceToHost);
      for (int64_t i = 0; i < 4096; ++i) ASSERT_EQ(h[static_cast<size_t>(i)], want) << enum_name(lay) << " element " << at + i;
    }
    cudaFree(x);
    cudaFree(y);
    cudaFree(w);
    cudaFree(b);
  }
}
