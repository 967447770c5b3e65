// Host tests of the GEMM family (no GPU): the float64 reference (hand cases, finite-difference
// backward, adjoint identity), descriptor validation messages, GPU-less select, and the
// canonicalisation decisions (packing, K folding, batch loops) of GemmCore.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "baracuda/ops/bilinear.hpp"
#include "baracuda/ops/gemm.hpp"
#include "gemm_ref.hpp"
#include "host/host_test_util.hpp"
#include "ops/gemm/gemm_core.hpp"

namespace baracuda {
namespace {

TensorLayout L(DType dt, std::initializer_list<int64_t> shape, std::initializer_list<int64_t> strides = {}) {
  return TensorLayout::make(dt, std::span<const int64_t>(shape.begin(), shape.size()),
                            std::span<const int64_t>(strides.begin(), strides.size()));
}

// Central finite differences of loss() with respect to each element of x, against gx.
template <class Loss>
void expect_finite_differences(std::vector<double>& x, const std::vector<double>& gx, Loss&& loss, const char* name,
                               double abs_tol, double rel_tol) {
  ASSERT_EQ(x.size(), gx.size()) << name;
  for (size_t i = 0; i < x.size(); ++i) {
    const double h = 1e-6, keep = x[i];
    x[i] = keep + h;
    const double up = loss();
    x[i] = keep - h;
    const double dn = loss();
    x[i] = keep;
    const double fd = (up - dn) / (2 * h);
    EXPECT_NEAR(gx[i], fd, abs_tol + rel_tol * std::fabs(fd)) << name << "[" << i << "]";
  }
}

// ------------------------------------------------------------------ reference
TEST(GemmReference, HandComputedCases) {
  // [[1,2],[3,4]] @ [[5,6],[7,8]] = [[19,22],[43,50]]
  auto d = GemmDescriptor::mm(L(DType::f64, {2, 2}), L(DType::f64, {2, 2}), L(DType::f64, {2, 2}));
  auto r = ref::gemm_forward(d, {1, 2, 3, 4}, {5, 6, 7, 8}, {}, {});
  EXPECT_EQ(r.out, (std::vector<double>{19, 22, 43, 50}));
  // dot
  d = GemmDescriptor::dot(L(DType::f64, {3}), L(DType::f64, {3}), L(DType::f64, {}));
  EXPECT_EQ(ref::gemm_forward(d, {1, 2, 3}, {4, 5, 6}, {}, {}).out, (std::vector<double>{32}));
  // linear: x [1,2] @ w[3,2]^T + bias
  d = GemmDescriptor::linear(L(DType::f64, {1, 2}), L(DType::f64, {3, 2}), nullptr, L(DType::f64, {1, 3}));
  TensorLayout bl = L(DType::f64, {3});
  d.bias = bl, d.has_bias = true;
  EXPECT_EQ(ref::gemm_forward(d, {1, 2}, {1, 0, 0, 1, 1, 1}, {}, {10, 20, 30}).out, (std::vector<double>{11, 22, 33}));
  // addmm with beta = 0 ignores NaN in c; beta = 2 scales it
  d = GemmDescriptor::addmm(L(DType::f64, {2}), L(DType::f64, {1, 1}), L(DType::f64, {1, 2}), L(DType::f64, {1, 2}), 0.0, 1.0);
  EXPECT_EQ(ref::gemm_forward(d, {2}, {3, 4}, {NAN, NAN}, {}).out, (std::vector<double>{6, 8}));
  d.beta = 2.0;
  EXPECT_EQ(ref::gemm_forward(d, {2}, {3, 4}, {1, -1}, {}).out, (std::vector<double>{8, 6}));
  // addbmm sums the batch: Σ_b [b+1] @ [1] = 1 + 2 + 3
  d = GemmDescriptor::addbmm(L(DType::f64, {1, 1}), L(DType::f64, {3, 1, 1}), L(DType::f64, {3, 1, 1}), L(DType::f64, {1, 1}), 0.0);
  EXPECT_TRUE(d.sum_batch);
  EXPECT_EQ(ref::gemm_forward(d, {1, 2, 3}, {1, 1, 1}, {0}, {}).out, (std::vector<double>{6}));
  // relu / gelu values
  EXPECT_EQ(ref::gemm_activation(GemmActivation::kRelu, -2.0), 0.0);
  EXPECT_NEAR(ref::gemm_activation(GemmActivation::kGeluErf, 1.0), 0.8413447460685429, 1e-15);
  EXPECT_NEAR(ref::gemm_activation(GemmActivation::kGeluTanh, 1.0), 0.8411919906082768, 1e-15);
}

// Central finite differences of sum(out · d_out) against the backward reference.
TEST(GemmReference, BackwardMatchesFiniteDifferences) {
  std::mt19937_64 rng(5);
  auto rnd = [&](size_t n) { return test::uniform_values(n, rng); };
  struct C {
    GemmDescriptor d;
    size_t na, nb, nc, nbias, nout;
  };
  std::vector<C> cases;
  {
    auto d = GemmDescriptor::addmm(L(DType::f64, {3, 4}), L(DType::f64, {2, 3, 5}), L(DType::f64, {5, 4}), L(DType::f64, {2, 3, 4}), 0.7, 1.3);
    TensorLayout bl = L(DType::f64, {4});
    d.bias = bl, d.has_bias = true, d.activation = GemmActivation::kGeluErf;
    cases.push_back({d, 30, 20, 12, 4, 24});
  }
  {
    auto d = GemmDescriptor::linear(L(DType::f64, {2, 1, 3, 5}), L(DType::f64, {4, 5}), nullptr, L(DType::f64, {2, 1, 3, 4}));
    d.activation = GemmActivation::kGeluTanh;
    cases.push_back({d, 30, 20, 0, 0, 24});
  }
  {
    auto d = GemmDescriptor::addbmm(L(DType::f64, {4}), L(DType::f64, {3, 2, 5}), L(DType::f64, {3, 5, 4}), L(DType::f64, {2, 4}), 0.5);
    cases.push_back({d, 30, 60, 4, 0, 8});
  }
  {
    auto d = GemmDescriptor::mv(L(DType::f64, {3, 5}), L(DType::f64, {5}), L(DType::f64, {3}));
    cases.push_back({d, 15, 5, 0, 0, 3});
  }
  for (const C& c : cases) {
    std::vector<double> a = rnd(c.na), b = rnd(c.nb), cc = rnd(c.nc), bias = rnd(c.nbias), dout = rnd(c.nout);
    const auto g = ref::gemm_backward(c.d, a, b, cc, bias, dout);
    auto loss = [&]() {
      const auto f = ref::gemm_forward(c.d, a, b, cc, bias);
      double s = 0;
      for (size_t i = 0; i < f.out.size(); ++i) s += f.out[i] * dout[i];
      return s;
    };
    auto check = [&](std::vector<double>& x, const std::vector<double>& gx, const char* name) {
      expect_finite_differences(x, gx, loss, name, 1e-5, 1e-3);
    };
    check(a, g.da, "da");
    check(b, g.db, "db");
    if (c.nc) check(cc, g.dc, "dc");
    if (c.nbias) check(bias, g.dbias, "dbias");
  }
}

// The backward epilogue chains layers: for h = act(x·W1ᵀ + b1), y = h·W2ᵀ, the GEMM dH = dY·W2
// with grad_activation = act and aux = Z1 gives dZ1, and its bias_grad is db1 — the same values
// the (finite-difference-checked) backward reference gives for layer 1 with d_out = dH.
TEST(GemmReference, BackwardEpilogueChainsLayers) {
  std::mt19937_64 rng(9);
  auto rnd = [&](size_t n) { return test::uniform_values(n, rng); };
  const int64_t T = 5, In = 4, H = 6, Out = 3;
  for (GemmActivation act : {GemmActivation::kRelu, GemmActivation::kGeluTanh, GemmActivation::kGeluErf}) {
    const std::vector<double> x = rnd(T * In), w1 = rnd(H * In), b1 = rnd(H), w2 = rnd(Out * H), dy = rnd(T * Out);
    TensorLayout bl = L(DType::f64, {H});
    auto l1 = GemmDescriptor::linear(L(DType::f64, {T, In}), L(DType::f64, {H, In}), &bl, L(DType::f64, {T, H}));
    l1.activation = act;
    const auto f1 = ref::gemm_forward(l1, x, w1, {}, b1);
    auto dh_desc = GemmDescriptor::mm(L(DType::f64, {T, Out}), L(DType::f64, {Out, H}), L(DType::f64, {T, H}));
    const auto dh = ref::gemm_forward(dh_desc, dy, w2, {}, {});
    auto chained = dh_desc;
    chained.grad_activation = act, chained.has_bias_grad = true;
    const auto r = ref::gemm_forward(chained, dy, w2, {}, {}, false, nullptr, &f1.preact);
    const auto g1 = ref::gemm_backward(l1, x, w1, {}, b1, dh.out);
    ASSERT_EQ(r.bias_grad.size(), g1.dbias.size());
    for (size_t i = 0; i < g1.dbias.size(); ++i) EXPECT_NEAR(r.bias_grad[i], g1.dbias[i], 1e-12) << i;
    // and dZ1 reproduces layer 1's weight gradient: dW1 = dZ1ᵀ · x
    for (int64_t h = 0; h < H; ++h)
      for (int64_t k = 0; k < In; ++k) {
        double s = 0;
        for (int64_t t = 0; t < T; ++t) s += r.out[t * H + h] * x[t * In + k];
        EXPECT_NEAR(s, g1.db[h * In + k], 1e-12);
      }
  }
}

TEST(GemmReference, BilinearBackwardMatchesFiniteDifferences) {
  std::mt19937_64 rng(11);
  auto rnd = [&](size_t n) { return test::uniform_values(n, rng); };
  const int64_t B = 3, I = 4, J = 2, O = 5;
  std::vector<double> x1 = rnd(B * I), x2 = rnd(B * J), w = rnd(O * I * J), bias = rnd(O), dy = rnd(B * O);
  // hand case: B = 1, I = J = O = 1: y = x1 w x2 + b
  EXPECT_EQ(ref::bilinear_forward(1, 1, 1, 1, {2}, {3}, {5}, {7}), (std::vector<double>{37}));
  const auto g = ref::bilinear_backward(B, I, J, O, x1, x2, w, dy);
  auto loss = [&]() {
    const auto y = ref::bilinear_forward(B, I, J, O, x1, x2, w, bias);
    double s = 0;
    for (size_t i = 0; i < y.size(); ++i) s += y[i] * dy[i];
    return s;
  };
  auto check = [&](std::vector<double>& x, const std::vector<double>& gx, const char* name) {
    expect_finite_differences(x, gx, loss, name, 1e-7, 0.0);
  };
  check(x1, g.dx1, "dx1");
  check(x2, g.dx2, "dx2");
  check(w, g.dw, "dw");
  check(bias, g.dbias, "dbias");
}

// ------------------------------------------------------------------ validation
TEST(GemmPlanHost, ValidationErrorsNameTheField) {
  const PlanPreference p = test::hopper();
  auto msg = [&](const GemmDescriptor& d) {
    auto r = GemmPlan::select(d, p);
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(msg(GemmDescriptor::mm(L(DType::f32, {4, 5}), L(DType::f32, {6, 7}), L(DType::f32, {4, 7}))).find("K = 5"), std::string::npos);
  EXPECT_NE(msg(GemmDescriptor::bmm(L(DType::f32, {2, 4, 5}), L(DType::f32, {3, 5, 7}), L(DType::f32, {2, 4, 7}))).find("do not broadcast"),
            std::string::npos);
  EXPECT_NE(msg(GemmDescriptor::mm(L(DType::f32, {4, 5}), L(DType::f32, {5, 7}), L(DType::f32, {4, 8}))).find("out shape"), std::string::npos);
  auto d = GemmDescriptor::mm(L(DType::f32, {4, 5}), L(DType::f32, {5, 7}), L(DType::f32, {4, 7}));
  d.beta = 1.0;
  EXPECT_NE(msg(d).find("has_c"), std::string::npos);
  EXPECT_NE(msg(GemmDescriptor::mm(L(DType::f32, {4, 5}), L(DType::f16, {5, 7}), L(DType::f32, {4, 7}))).find("b dtype"), std::string::npos);
  EXPECT_NE(msg(GemmDescriptor::mm(L(DType::i32, {4, 5}), L(DType::i32, {5, 7}), L(DType::i32, {4, 7}))).find("not supported"),
            std::string::npos);
  EXPECT_NE(msg(GemmDescriptor::linear(L(DType::f8e5m2, {16, 32}), L(DType::f8e5m2, {16, 32}), nullptr, L(DType::bf16, {16, 16})))
                .find("f8e5m2 x f8e5m2"),
            std::string::npos);
  EXPECT_NE(msg(GemmDescriptor::linear(L(DType::f8e4m3, {16, 24}), L(DType::f8e4m3, {16, 24}), nullptr, L(DType::bf16, {16, 16})))
                .find("multiples of 16"),
            std::string::npos);
  d = GemmDescriptor::mm(L(DType::f32, {4, 5}), L(DType::f32, {5, 7}), L(DType::f32, {4, 7}));
  d.pointer_alignment = 3;
  EXPECT_NE(msg(d).find("pointer_alignment"), std::string::npos);
  d.pointer_alignment = 16;
  d.save_preactivation = true;
  EXPECT_NE(msg(d).find("save_preactivation"), std::string::npos);
  d.save_preactivation = false;
  TensorLayout bl = L(DType::f32, {5});
  d.bias = bl, d.has_bias = true;
  EXPECT_NE(msg(d).find("bias shape"), std::string::npos);
  // out rows overlapping
  EXPECT_NE(msg(GemmDescriptor::mm(L(DType::f32, {4, 5}), L(DType::f32, {5, 7}), L(DType::f32, {4, 7}, {3, 1}))).find("overlapping"),
            std::string::npos);
  // a forced backend that has no GEMM
  PlanPreference pb = p;
  pb.forced_backend = Backend::kBespoke;
  auto r = GemmPlan::select(GemmDescriptor::mm(L(DType::f32, {4, 5}), L(DType::f32, {5, 7}), L(DType::f32, {4, 7})), pb);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
}

TEST(GemmPlanHost, SelectWithoutGpuValidatesAndDefersTheAlgorithm) {
  auto d = GemmDescriptor::mm(L(DType::bf16, {64, 32}), L(DType::bf16, {32, 48}), L(DType::bf16, {64, 48}));
  auto plan = GemmPlan::select(d, test::hopper());
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->sku().backend, Backend::kCuBLASLt);
  EXPECT_EQ(plan->sku().arch, 90);
  EXPECT_EQ(plan->precision_guarantee().accumulator, DType::f32);
  EXPECT_FALSE(plan->precision_guarantee().tf32_inputs);
  GemmArgs args;
  args.a.data = args.b.data = nullptr;
  static_cast<TensorLayout&>(args.a) = d.a;
  static_cast<TensorLayout&>(args.b) = d.b;
  static_cast<TensorLayout&>(args.out) = d.out;
  alignas(16) static char fake[1 << 16];
  args.a.data = fake, args.b.data = fake + 8192, args.out.data = fake + 16384;
  EXPECT_TRUE(plan->can_implement(args).ok()) << plan->can_implement(args).to_string();
  std::string why;
  if (current_device_arch(&why) == 0) {  // with an sm_90 GPU present the plan is complete (device tests run it)
    Status s = plan->run(nullptr, {}, args);
    EXPECT_EQ(s.code(), StatusCode::kUnsupported);
    EXPECT_NE(s.message().find("without a device"), std::string::npos) << s.message();
  }
  // descriptors are hashable and comparable (plan caches key on them)
  auto d2 = d;
  EXPECT_TRUE(d == d2);
  EXPECT_EQ(hash_fields(d), hash_fields(d2));
  d2.alpha = 2;
  EXPECT_FALSE(d == d2);
  // backward selects without a GPU as well
  auto bwd = GemmBackwardPlan::select(d, test::hopper());
  EXPECT_TRUE(bwd.ok()) << bwd.status().to_string();
}

TEST(GemmPlanHost, BackwardEpilogueAndBilinearValidation) {
  const PlanPreference p = test::hopper();
  auto d = GemmDescriptor::mm(L(DType::bf16, {64, 32}), L(DType::bf16, {32, 48}), L(DType::bf16, {64, 48}));
  d.grad_activation = GemmActivation::kGeluTanh;
  d.has_bias_grad = true;
  auto ok = GemmPlan::select(d, p);
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  // aux is required and must be out-shaped
  GemmArgs args;
  alignas(256) static char fake[1 << 16];
  static_cast<TensorLayout&>(args.a) = d.a, args.a.data = fake;
  static_cast<TensorLayout&>(args.b) = d.b, args.b.data = fake + 8192;
  static_cast<TensorLayout&>(args.out) = d.out, args.out.data = fake + 16384;
  Status s = ok->can_implement(args);
  EXPECT_NE(s.message().find("aux"), std::string::npos) << s.message();
  static_cast<TensorLayout&>(args.aux) = d.out, args.aux.data = fake + 32768;
  s = ok->can_implement(args);
  EXPECT_NE(s.message().find("bias_grad"), std::string::npos) << s.message();
  const int64_t n = 48;
  static_cast<TensorLayout&>(args.bias_grad) = L(DType::bf16, {n}), args.bias_grad.data = fake + 49152;
  EXPECT_TRUE(ok->can_implement(args).ok()) << ok->can_implement(args).to_string();
  // exclusive with the forward epilogue
  auto bad = d;
  bad.activation = GemmActivation::kRelu;
  auto r = GemmPlan::select(bad, p);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("excludes activation"), std::string::npos) << r.status().message();
  // no backward plan of a backward epilogue
  EXPECT_FALSE(GemmBackwardPlan::select(d, p).ok());
  // autotune without a device selects as usual (nothing to time)
  PlanPreference pt = p;
  pt.autotune = true;
  auto t = GemmPlan::select(GemmDescriptor::mm(L(DType::bf16, {64, 32}), L(DType::bf16, {32, 48}), L(DType::bf16, {64, 48})), pt);
  EXPECT_TRUE(t.ok()) << t.status().to_string();

  BilinearDescriptor bd;
  bd.x1 = L(DType::f32, {8, 4}), bd.x2 = L(DType::f32, {8, 3}), bd.weight = L(DType::f32, {5, 4, 3}), bd.out = L(DType::f32, {8, 5});
  auto bp = BilinearPlan::select(bd, p);
  ASSERT_TRUE(bp.ok()) << bp.status().to_string();
  EXPECT_EQ(bp->sku().op, "gemm.bilinear");
  EXPECT_GE(bp->workspace_size(), 8u * 5 * 4 * 4);
  EXPECT_TRUE(BilinearBackwardPlan::select(bd, p).ok());
  auto bmsg = [&](BilinearDescriptor x) {
    auto q = BilinearPlan::select(x, p);
    EXPECT_FALSE(q.ok());
    return q.ok() ? std::string() : q.status().message();
  };
  auto b2 = bd;
  b2.weight = L(DType::f32, {5, 4, 2});
  EXPECT_NE(bmsg(b2).find("do not match weight"), std::string::npos);
  b2 = bd;
  b2.x2 = L(DType::f32, {7, 3});
  EXPECT_NE(bmsg(b2).find("leading dims"), std::string::npos);
  b2 = bd;
  b2.bias = L(DType::f32, {4}), b2.has_bias = true;
  EXPECT_NE(bmsg(b2).find("bias"), std::string::npos);
  b2 = bd;
  b2.x1 = L(DType::f32, {2, 4, 4}, {4, 8, 1}), b2.x2 = L(DType::f32, {2, 4, 3}), b2.out = L(DType::f32, {2, 4, 5});
  EXPECT_NE(bmsg(b2).find("fold"), std::string::npos);
  b2 = bd;
  b2.x2 = L(DType::f16, {8, 3});
  EXPECT_NE(bmsg(b2).find("dtype"), std::string::npos);
}

// ------------------------------------------------------------------ canonical form
TEST(GemmPlanHost, CanonicalisationDecisions) {
  using detail::GemmAxis;
  using detail::GemmCanon;
  using detail::GemmCore;
  using detail::GemmCoreOptions;
  auto build = [](GemmCanon c) {
    auto r = GemmCore::build("test", c, GemmCoreOptions{}, test::hopper(), 90);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return std::move(*r);
  };
  // bmm contiguous [4, 8, 16] @ [4, 16, 32]: no packing, one strided batch, row-major out -> swap
  GemmCanon c{};
  c.a_dtype = c.b_dtype = c.d_dtype = DType::bf16;
  c.nb = 1;
  c.batch[0].ext = 4;
  c.batch[0].s = {8 * 16, 16 * 32, 8 * 32, 0, 0};
  c.m.ext = 8, c.m.s = {16, 0, 32, 0, 0};
  c.n.ext = 32, c.n.s = {0, 1, 1, 0, 0};
  c.k.ext = 16, c.k.s = {1, 32, 0, 0, 0};
  GemmCore g = build(c);
  EXPECT_TRUE(g.swap);
  EXPECT_FALSE(g.pack_a || g.pack_b || g.pack_d);
  EXPECT_EQ(g.nloop, 0);
  // a with K stride 2: packed
  GemmCanon c2 = c;
  c2.k.s[detail::kOpA] = 2, c2.m.s[detail::kOpA] = 32, c2.batch[0].s[detail::kOpA] = 8 * 32;
  g = build(c2);
  EXPECT_TRUE(g.pack_a);
  EXPECT_FALSE(g.pack_b);
  // column-major out: no swap
  GemmCanon c3 = c;
  c3.m.s[detail::kOpD] = 1, c3.n.s[detail::kOpD] = 8;
  g = build(c3);
  EXPECT_FALSE(g.swap);
  // summed batch (addbmm) with b nesting along K: b folds, a (batch-major) is packed
  GemmCanon c4 = c;
  c4.batch[0].s[detail::kOpD] = 0;
  g = build(c4);
  EXPECT_TRUE(g.pack_a);
  EXPECT_FALSE(g.pack_b);
  // two batch axes that do not coalesce: the outer one loops
  GemmCanon c5 = c;
  c5.nb = 2;
  c5.batch[0].ext = 3, c5.batch[0].s = {0, 4 * 16 * 32, 4 * 8 * 32, 0, 0};
  c5.batch[1] = c.batch[0];
  c5.batch[1].s[detail::kOpB] = 16 * 32;
  c5.batch[1].s[detail::kOpA] = 8 * 16;
  c5.batch[1].s[detail::kOpD] = 8 * 32;
  g = build(c5);
  EXPECT_EQ(g.nloop, 1);
  // simplify merges nested batch axes and drops extent-1 ones
  GemmCanon c6{};
  c6.nb = 3;
  c6.batch[0].ext = 2, c6.batch[0].s = {12, 6, 18, 0, 0};
  c6.batch[1].ext = 1, c6.batch[1].s = {99, 99, 99, 0, 0};
  c6.batch[2].ext = 2, c6.batch[2].s = {6, 3, 9, 0, 0};
  detail::simplify(c6);
  ASSERT_EQ(c6.nb, 1);
  EXPECT_EQ(c6.batch[0].ext, 4);
  EXPECT_EQ(c6.batch[0].s[0], 6);
  // K == 0 needs no cuBLASLt at all
  GemmCanon c7 = c;
  c7.k.ext = 0;
  g = build(c7);
  EXPECT_TRUE(g.k_zero);
  EXPECT_TRUE(g.device_ready);
}

}  // namespace
}  // namespace baracuda
