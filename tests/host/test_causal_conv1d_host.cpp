// Host tier for causal conv1d: the float64 reference against hand-computed values, chunked
// processing through the states, finite differences of every gradient, the update against the
// forward; plan selection, skus, workspace and every descriptor / argument error (no GPU).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "baracuda/ops/causal_conv1d.hpp"
#include "causal_conv1d_ref.hpp"
#include "host/host_test_util.hpp"

using namespace baracuda;
using baracuda::test::expect_error;
using baracuda::test::hopper;
using baracuda::test::uniform_values;

namespace {

double silu(double z) { return z / (1 + std::exp(-z)); }

}  // namespace

// y[t] = w0·x[t−1] + w1·x[t] + bias with s0 supplying x[−1]; final = x[L−1].
TEST(CausalConv1dReference, HandComputedWidth2) {
  ref::Conv1dShape s{1, 1, 3, 2, false};
  std::vector<double> y, fin;
  ref::causal_conv1d_forward(s, {1, 2, 3}, {10, 1}, {0.5}, {4}, &y, &fin);
  EXPECT_EQ(y, (std::vector<double>{10 * 4 + 1 + 0.5, 10 * 1 + 2 + 0.5, 10 * 2 + 3 + 0.5}));
  EXPECT_EQ(fin, (std::vector<double>{3}));
  s.silu = true;
  ref::causal_conv1d_forward(s, {1, 2, 3}, {10, 1}, {}, {}, &y, &fin);  // no s0: x[−1] = 0
  EXPECT_DOUBLE_EQ(y[0], silu(1));
  EXPECT_DOUBLE_EQ(y[2], silu(23));
}

// Final states reach into the initial states when L < W − 1.
TEST(CausalConv1dReference, FinalStatesShorterThanWindow) {
  ref::Conv1dShape s{1, 1, 1, 4, false};
  std::vector<double> y, fin;
  ref::causal_conv1d_forward(s, {7}, {1, 1, 1, 1}, {}, {1, 2, 3}, &y, &fin);
  EXPECT_EQ(fin, (std::vector<double>{2, 3, 7}));
  EXPECT_EQ(y[0], 13);
}

// Processing [0, L1) then [L1, L) with final -> initial states equals the whole sequence.
TEST(CausalConv1dReference, ChunkedEqualsWhole) {
  std::mt19937_64 rng(5);
  for (int W : {2, 4, 7}) {
    const int64_t B = 2, C = 3, L = 11, L1 = 4;
    ref::Conv1dShape s{B, C, L, W, true};
    auto x = uniform_values(B * C * L, rng), w = uniform_values(C * W, rng), bias = uniform_values(C, rng);
    auto s0 = uniform_values(B * C * (W - 1), rng);
    std::vector<double> y, fin;
    ref::causal_conv1d_forward(s, x, w, bias, s0, &y, &fin);
    std::vector<double> xa, xb;
    for (int64_t r = 0; r < B * C; ++r) {
      xa.insert(xa.end(), x.begin() + r * L, x.begin() + r * L + L1);
      xb.insert(xb.end(), x.begin() + r * L + L1, x.begin() + (r + 1) * L);
    }
    std::vector<double> ya, fa, yb, fb;
    ref::causal_conv1d_forward({B, C, L1, W, true}, xa, w, bias, s0, &ya, &fa);
    ref::causal_conv1d_forward({B, C, L - L1, W, true}, xb, w, bias, fa, &yb, &fb);
    for (int64_t r = 0; r < B * C; ++r) {
      for (int64_t t = 0; t < L; ++t) {
        const double got = t < L1 ? ya[r * L1 + t] : yb[r * (L - L1) + t - L1];
        EXPECT_NEAR(got, y[r * L + t], 1e-13) << "W " << W << " row " << r << " t " << t;
      }
    }
    EXPECT_EQ(fb, fin);
  }
}

// Every gradient of L = Σ dy·y + Σ dfinal·final against central differences.
TEST(CausalConv1dReference, BackwardMatchesFiniteDifferences) {
  std::mt19937_64 rng(11);
  for (bool silu : {false, true})
    for (int W : {2, 3, 4, 8})
      for (int64_t L : {1, 5, 9}) {
        const int64_t B = 2, C = 2, W1 = W - 1;
        ref::Conv1dShape s{B, C, L, W, silu};
        auto x = uniform_values(B * C * L, rng), w = uniform_values(C * W, rng), bias = uniform_values(C, rng);
        auto s0 = uniform_values(B * C * W1, rng), dy = uniform_values(B * C * L, rng), dfin = uniform_values(B * C * W1, rng);
        auto loss = [&](const std::vector<double>& xx, const std::vector<double>& ww, const std::vector<double>& bb,
                         const std::vector<double>& ss) {
          std::vector<double> y, fin;
          ref::causal_conv1d_forward(s, xx, ww, bb, ss, &y, &fin);
          double l = 0;
          for (size_t i = 0; i < y.size(); ++i) l += dy[i] * y[i];
          for (size_t i = 0; i < fin.size(); ++i) l += dfin[i] * fin[i];
          return l;
        };
        std::vector<double> dx, dw, db, ds0;
        ref::causal_conv1d_backward(s, x, w, bias, s0, dy, dfin, &dx, &dw, &db, &ds0);
        const double h = 1e-6;
        auto check = [&](std::vector<double>& v, const std::vector<double>& grad, const char* what) {
          for (size_t i = 0; i < v.size(); ++i) {
            const double keep = v[i];
            v[i] = keep + h;
            const double up = loss(x, w, bias, s0);
            v[i] = keep - h;
            const double dn = loss(x, w, bias, s0);
            v[i] = keep;
            EXPECT_NEAR(grad[i], (up - dn) / (2 * h), 1e-6 * (1 + std::abs(grad[i])))
                << what << "[" << i << "] W " << W << " L " << L << " silu " << silu;
          }
        };
        check(x, dx, "dx");
        check(w, dw, "dw");
        check(bias, db, "db");
        check(s0, ds0, "ds0");
      }
}

// The update in shift mode token by token equals the forward over the whole sequence with the
// initial state; circular mode gives the same outputs; padding rows stay zero and untouched.
TEST(CausalConv1dReference, UpdateMatchesForward) {
  std::mt19937_64 rng(3);
  for (int W : {2, 4, 6})
    for (int64_t S : {int64_t(W - 1), int64_t(W + 2)}) {
      const int64_t B = 2, C = 3, L = 7, W1 = W - 1;
      ref::Conv1dShape s{B, C, L, W, true};
      auto x = uniform_values(B * C * L, rng), w = uniform_values(C * W, rng), bias = uniform_values(C, rng);
      auto st = uniform_values(B * C * S, rng);
      std::vector<double> s0(B * C * W1);
      for (int64_t r = 0; r < B * C; ++r)
        for (int64_t j = 0; j < W1; ++j) s0[r * W1 + j] = st[r * S + S - W1 + j];
      std::vector<double> y, fin;
      ref::causal_conv1d_forward(s, x, w, bias, s0, &y, &fin);
      std::vector<double> shift = st, circ = st;
      std::vector<int32_t> seqlens(B, static_cast<int32_t>(S));  // circular buffer full, head at slot 0
      for (int64_t t0 = 0; t0 < L; t0 += 2) {
        const int64_t n = std::min<int64_t>(2, L - t0);
        std::vector<double> xs(B * C * n);
        for (int64_t r = 0; r < B * C; ++r)
          for (int64_t i = 0; i < n; ++i) xs[r * n + i] = x[r * L + t0 + i];
        auto ys = ref::causal_conv1d_update({B, C, n, W, true}, n, S, xs, w, bias, &shift, B, {}, {});
        auto yc = ref::causal_conv1d_update({B, C, n, W, true}, n, S, xs, w, bias, &circ, B, seqlens, {});
        for (int64_t r = 0; r < B * C; ++r)
          for (int64_t i = 0; i < n; ++i) {
            EXPECT_NEAR(ys[r * n + i], y[r * L + t0 + i], 1e-12);
            EXPECT_NEAR(yc[r * n + i], y[r * L + t0 + i], 1e-12);
          }
        for (auto& v : seqlens) v += static_cast<int32_t>(n);
      }
      for (int64_t r = 0; r < B * C; ++r)  // the shifted state ends with the final states
        for (int64_t j = 0; j < W1; ++j) EXPECT_EQ(shift[r * S + S - W1 + j], fin[r * W1 + j]);
      // a padding row: y zero, its state untouched
      std::vector<double> st2 = st;
      auto yp = ref::causal_conv1d_update({B, C, 1, W, true}, 1, S, std::vector<double>(B * C, 1.0), w, bias, &st2, B,
                                          {}, {-1, 1});
      for (int64_t c = 0; c < C; ++c) EXPECT_EQ(yp[c], 0.0);
      for (int64_t i = 0; i < C * S; ++i) EXPECT_EQ(st2[i], st[i]);
    }
}

// ---------------------------------------------------------------- plans without a GPU

namespace {
CausalConv1dDescriptor small_desc() {
  CausalConv1dDescriptor d;
  d.dtype = DType::bf16;
  d.weight_dtype = DType::f32;
  d.layout = Conv1dLayout::kBLC;
  d.has_bias = true;
  d.activation = Conv1dActivation::kSiLU;
  d.batch = 2;
  d.channels = 64;
  d.seq = 1000;
  d.width = 4;
  return d;
}
}  // namespace

TEST(CausalConv1dPlanHost, SelectSkuWorkspace) {
  CausalConv1dDescriptor d = small_desc();
  auto f = CausalConv1dPlan::select(d, hopper());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->sku().name(), "causal_conv1d.silu.fwd.bf16.bespoke.sm90.chan");
  EXPECT_EQ(f->workspace_size(), 0u);
  EXPECT_EQ(f->precision_guarantee().accumulator, DType::f32);
  EXPECT_EQ(f->precision_guarantee().determinism, Determinism::kRunToRun);
  auto b = CausalConv1dBackwardPlan::select(d, hopper());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->sku().name(), "causal_conv1d.silu.bwd.bf16.bespoke.sm90.chan.partials");
  // ceil(1000 / (4 · 256)) = 1 partial row per batch row (the chan kernel at its shorter warps),
  // C·(W+1) f32 each
  EXPECT_EQ(b->workspace_size(), size_t{2 * 1} * 64 * 5 * 4);
  d.dtype = DType::f64;
  d.layout = Conv1dLayout::kBCL;
  d.activation = Conv1dActivation::kNone;
  auto b64 = CausalConv1dBackwardPlan::select(d, hopper());
  EXPECT_EQ(b64->sku().name(), "causal_conv1d.bwd.f64.bespoke.sm90.time.partials");
  EXPECT_EQ(b64->workspace_size(), size_t{2 * 1} * 64 * 5 * 8);
  EXPECT_EQ(b64->precision_guarantee().accumulator, DType::f64);
  PlanPreference tight = hopper();
  tight.max_workspace_bytes = 100;
  expect_error(CausalConv1dBackwardPlan::select(d, tight).status(), StatusCode::kUnsupported, "workspace bytes");
  EXPECT_EQ(std::hash<CausalConv1dDescriptor>{}(d), hash_fields(d));
  CausalConv1dUpdateDescriptor u;  // the defaults are causal_conv1d_update's: f32, no bias, no activation
  u.channels = 8;
  u.batch = 4;
  auto up = CausalConv1dUpdatePlan::select(u, hopper());
  ASSERT_TRUE(up.ok()) << up.status().to_string();
  EXPECT_EQ(up->sku().name(), "causal_conv1d_update.fwd.f32.bespoke.sm90.thread.shift");
  EXPECT_EQ(CausalConv1dDescriptor{}.layout, Conv1dLayout::kBCL);  // channel-first, as causal_conv1d_fn
  EXPECT_FALSE(CausalConv1dDescriptor{}.has_bias);
  EXPECT_EQ(CausalConv1dDescriptor{}.activation, Conv1dActivation::kNone);
  EXPECT_EQ(up->descriptor().state_length(), 3);
}

TEST(CausalConv1dPlanHost, DescriptorErrors) {
  auto sel = [](const CausalConv1dDescriptor& d) { return CausalConv1dPlan::select(d, hopper()).status(); };
  const CausalConv1dDescriptor d = small_desc();
  auto with = [&](auto f) { CausalConv1dDescriptor e = d; f(e); return sel(e); };
  expect_error(with([](auto& e) { e.dtype = DType::i32; }), StatusCode::kUnsupported, "dtype i32 is not supported");
  expect_error(with([](auto& e) { e.weight_dtype = DType::u8; }), StatusCode::kUnsupported, "weight_dtype u8");
  expect_error(with([](auto& e) { e.width = 1; }), StatusCode::kUnsupported, "width = 1 is not in [2, 8]");
  expect_error(with([](auto& e) { e.width = 9; }), StatusCode::kUnsupported, "width = 9");
  expect_error(with([](auto& e) { e.seq = -1; }), StatusCode::kInvalidProblem, "must be >= 0");
  expect_error(with([](auto& e) { e.layout = static_cast<Conv1dLayout>(7); }), StatusCode::kInvalidProblem,
               "not a Conv1dLayout");
  expect_error(with([](auto& e) { e.activation = static_cast<Conv1dActivation>(7); }), StatusCode::kInvalidProblem,
               "not a Conv1dActivation");
  PlanPreference cudnn = hopper();
  cudnn.forced_backend = Backend::kCuDNN;
  expect_error(CausalConv1dPlan::select(d, cudnn).status(), StatusCode::kUnsupported, "forced backend");
  auto usel = [](auto f) {
    CausalConv1dUpdateDescriptor u;
    u.channels = 8;
    u.batch = 4;
    f(u);
    return CausalConv1dUpdatePlan::select(u, hopper()).status();
  };
  expect_error(usel([](auto& u) { u.seq = 0; }), StatusCode::kInvalidProblem, "new tokens must be >= 1");
  expect_error(usel([](auto& u) { u.state_len = 2; }), StatusCode::kInvalidProblem, "state_len = 2 must be >= width - 1");
  expect_error(usel([](auto& u) { u.state_batch = 9; }), StatusCode::kInvalidProblem, "without state_indices");
  EXPECT_TRUE(usel([](auto& u) { u.state_batch = 9; u.state_indices = true; }).ok());
}

// Argument checks run on the host: shapes, dtypes, overlaps, workspace.
TEST(CausalConv1dPlanHost, ArgumentErrors) {
  CausalConv1dDescriptor d = small_desc();
  d.initial_states = d.final_states = true;
  auto f = CausalConv1dPlan::select(d, hopper());
  ASSERT_TRUE(f.ok());
  alignas(16) static uint16_t xbuf[2 * 1000 * 64], ybuf[2 * 1000 * 64], s0[2 * 64 * 3], sf[2 * 64 * 3];
  alignas(16) static float w[64 * 4], bias[64];
  CausalConv1dArgs a;
  a.x = TensorRef::make(xbuf, DType::bf16, {2, 1000, 64});
  a.y = TensorMut::make(ybuf, DType::bf16, {2, 1000, 64});
  a.weight = TensorRef::make(w, DType::f32, {64, 4});
  a.bias = TensorRef::make(bias, DType::f32, {64});
  a.initial_states = TensorRef::make(s0, DType::bf16, {2, 64, 3});
  a.final_states = TensorMut::make(sf, DType::bf16, {2, 64, 3});
  EXPECT_TRUE(f->can_implement(a).ok()) << f->can_implement(a).to_string();
  auto with = [&](auto fn) { CausalConv1dArgs b = a; fn(b); return f->can_implement(b); };
  expect_error(with([](auto& b) { b.x.shape[1] = 999; }), StatusCode::kInvalidProblem, "x");
  expect_error(with([](auto& b) { b.weight.dtype = DType::bf16; }), StatusCode::kInvalidProblem, "weight");
  expect_error(with([&](auto& b) { b.y.data = xbuf + 64; }), StatusCode::kInvalidProblem, "y overlaps x");
  expect_error(with([&](auto& b) { b.final_states.data = s0; }), StatusCode::kInvalidProblem,
               "final_states overlaps initial_states");
  expect_error(with([](auto& b) { b.y.stride[0] = 0; }), StatusCode::kInvalidProblem, "y");
  auto bw = CausalConv1dBackwardPlan::select(d, hopper());
  ASSERT_TRUE(bw.ok());
  CausalConv1dBackwardArgs g;
  g.x = a.x;
  g.weight = a.weight;
  g.bias = a.bias;
  g.initial_states = a.initial_states;
  g.dy = TensorRef::make(ybuf, DType::bf16, {2, 1000, 64});
  g.dfinal_states = TensorRef::make(sf, DType::bf16, {2, 64, 3});
  static uint16_t dx[2 * 1000 * 64], ds0[2 * 64 * 3];
  static float dw[64 * 4], db[64];
  g.dx = TensorMut::make(dx, DType::bf16, {2, 1000, 64});
  g.dweight = TensorMut::make(dw, DType::f32, {64, 4});
  g.dbias = TensorMut::make(db, DType::f32, {64});
  g.dinitial_states = TensorMut::make(ds0, DType::bf16, {2, 64, 3});
  EXPECT_TRUE(bw->can_implement(g).ok()) << bw->can_implement(g).to_string();
  auto gw = [&](auto fn) { CausalConv1dBackwardArgs b = g; fn(b); return bw->can_implement(b); };
  expect_error(gw([&](auto& b) { b.dx.data = ybuf; }), StatusCode::kInvalidProblem, "dx overlaps dy");
  expect_error(gw([&](auto& b) { b.dweight.data = w; }), StatusCode::kInvalidProblem, "dweight overlaps weight");
  expect_error(gw([](auto& b) { b.dbias.shape[0] = 3; }), StatusCode::kInvalidProblem, "dbias");
  expect_error(bw->run(nullptr, Workspace{}, g), StatusCode::kWorkspaceTooSmall, "workspace bytes, got 0");
  CausalConv1dUpdateDescriptor u;
  u.dtype = u.weight_dtype = DType::bf16;
  u.has_bias = true;
  u.activation = Conv1dActivation::kSiLU;
  u.channels = 64;
  u.batch = 2;
  u.circular = u.state_indices = true;
  u.state_batch = 5;
  auto up = CausalConv1dUpdatePlan::select(u, hopper());
  ASSERT_TRUE(up.ok());
  static int32_t lens[2], idx[2];
  CausalConv1dUpdateArgs ua;
  ua.x = TensorRef::make(xbuf, DType::bf16, {2, 64, 1});
  ua.y = TensorMut::make(ybuf, DType::bf16, {2, 64, 1});
  ua.weight = TensorRef::make(s0, DType::bf16, {64, 4});  // bf16 weights here
  ua.bias = TensorRef::make(sf, DType::bf16, {64});
  ua.cache_seqlens = TensorRef::make(lens, DType::i32, {2});
  ua.state_indices = TensorRef::make(idx, DType::i32, {2});
  ua.conv_state = TensorMut::make(dx, DType::bf16, {5, 64, 3});
  EXPECT_TRUE(up->can_implement(ua).ok()) << up->can_implement(ua).to_string();
  auto uw = [&](auto fn) { CausalConv1dUpdateArgs b = ua; fn(b); return up->can_implement(b); };
  expect_error(uw([](auto& b) { b.cache_seqlens.dtype = DType::i64; }), StatusCode::kInvalidProblem, "cache_seqlens");
  expect_error(uw([&](auto& b) { b.conv_state.data = xbuf; }), StatusCode::kInvalidProblem, "conv_state overlaps x");
  expect_error(uw([](auto& b) { b.conv_state.shape[0] = 2; }), StatusCode::kInvalidProblem, "conv_state");
}
