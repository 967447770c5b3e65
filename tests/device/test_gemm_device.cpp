// GPU tests of the GEMM family against the float64 reference (reference/gemm_ref.hpp).
//
// Comparison (testing.md §3): per element |got - ref| <= 2·eps(out)·|ref| + 2·K·eps(acc)·Σ|a·b|
// (K = the reduction length), plus the 2x rule: the case's largest error is at most twice that of
// a plain product in the same precision (sequential f32 sums, ref::gemm_forward(f32_math)) plus
// one output ulp of the largest |ref| (both round to the output dtype). Integer-valued fills are
// compared exactly. Outputs are poisoned with NaN and the storage around every view is checked.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "baracuda/ops/bilinear.hpp"
#include "baracuda/ops/gemm.hpp"
#include "device/device_harness.hpp"
#include "gemm_ref.hpp"

namespace baracuda {
namespace {

using test::Layout;
using test::StridedBuffer;

constexpr uint8_t kPoison = 0xFF;  // NaN in every float dtype

struct Operand {
  std::vector<int64_t> shape;
  Layout layout = Layout::kContiguous;
};

struct Case {
  std::string name;
  DType dt = DType::f32;
  DType b_dt = DType::f32;  // fp8 only (else = dt)
  DType out_dt = DType::f32;  // fp8 only (else = dt)
  Operand a, b, out, c, bias;
  bool has_c = false, has_bias = false, transpose_b = false, sum_batch = false;
  double alpha = 1.0, beta = 0.0;
  GemmActivation act = GemmActivation::kNone;
  bool preact = false;
  GemmEpilogueImpl epi = GemmEpilogueImpl::kAuto;
  bool integer_fill = false;
  bool c_is_out = false;   // in-place addmm: c is out itself
  bool nan_c = false;      // c holds NaN (beta == 0 must ignore it)
  bool backward = false;
  bool tf32 = false;
  GemmActivation grad_act = GemmActivation::kNone;  // backward epilogue: out = Z ⊙ act'(aux)
  bool bias_grad = false;
  bool autotune = false;
};

struct Stats {
  int64_t cases = 0, elements = 0, exact_cases = 0;
  double worst_ratio = 0;       // max |err| / tol over all elements
  double worst_vs_plain = 0;    // max over cases of err_max / (2·plain_err_max + ulp)
  std::string worst_case;
};
Stats g_fwd, g_bwd, g_bil;

std::string repro(const Case& c, uint64_t seed) {
  return "repro: gemm " + c.name + " dtype " + std::string(dtype_name(c.dt)) + " a " + test::shape_str(c.a.shape) + "/" +
         test::layout_name(c.a.layout) + " b " + test::shape_str(c.b.shape) + "/" + test::layout_name(c.b.layout) +
         (c.transpose_b ? "(T)" : "") + " out " + test::shape_str(c.out.shape) + "/" + test::layout_name(c.out.layout) +
         " seed " + std::to_string(seed);
}

int pointer_alignment_of(std::initializer_list<const void*> ps) {
  int al = 16;
  for (const void* p : ps) {
    if (!p) continue;
    const uintptr_t v = reinterpret_cast<uintptr_t>(p);
    while (al > 1 && v % al) al /= 2;
  }
  return al;
}

std::vector<double> logical(const StridedBuffer& b) {
  std::vector<double> v(static_cast<size_t>(b.numel()));
  for (int64_t i = 0; i < b.numel(); ++i) v[i] = test::bits_to_double(b.dtype, b.get_bits(i));
  return v;
}

// random fill: values exactly representable in the dtype; small integers when `integer`
void fill(StridedBuffer& b, std::mt19937_64& rng, bool integer) {
  if (b.dtype == DType::f8e4m3 || b.dtype == DType::f8e5m2) {
    std::vector<uint8_t> codes;  // finite codes with |v| <= 4
    for (int c = 0; c < 256; ++c) {
      const double v = test::bits_to_double(b.dtype, c);
      if (std::isfinite(v) && std::fabs(v) <= 4.0) codes.push_back(static_cast<uint8_t>(c));
    }
    std::uniform_int_distribution<size_t> pick(0, codes.size() - 1);
    for (int64_t i = 0; i < b.numel(); ++i) b.set_bits(i, codes[pick(rng)]);
    return;
  }
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::uniform_int_distribution<int> k(-3, 3);
  for (int64_t i = 0; i < b.numel(); ++i) b.set_bits(i, test::double_to_bits(b.dtype, integer ? k(rng) : u(rng)));
}

struct DeviceWs {
  void* p = nullptr;
  explicit DeviceWs(size_t n) {
    if (n) EXPECT_EQ(cudaMalloc(&p, n), cudaSuccess);
  }
  ~DeviceWs() { cudaFree(p); }
};

GemmDescriptor describe(const Case& c, const StridedBuffer& a, const StridedBuffer& b, const StridedBuffer& out,
                        const StridedBuffer* cb, const StridedBuffer* bias, const void* extra_ptr = nullptr) {
  GemmDescriptor d;
  d.a = a.ref(), d.b = b.ref(), d.out = out.mut();
  d.transpose_b = c.transpose_b;
  d.sum_batch = c.sum_batch;
  d.alpha = c.alpha, d.beta = c.beta;
  if (c.has_c) d.c = cb->ref(), d.has_c = true;
  if (c.has_bias) d.bias = bias->ref(), d.has_bias = true;
  d.activation = c.act;
  d.save_preactivation = c.preact;
  d.epilogue_impl = c.epi;
  d.grad_activation = c.grad_act;
  d.has_bias_grad = c.bias_grad;
  d.pointer_alignment = pointer_alignment_of({a.view_ptr(), b.view_ptr(), out.view_ptr(), cb ? cb->view_ptr() : nullptr,
                                              bias ? bias->view_ptr() : nullptr, extra_ptr});
  return d;
}

int64_t reduction_length(const Case& c) {
  int64_t k = c.a.shape.back();
  if (c.sum_batch) {
    const int64_t prod_batch = c.a.shape.size() > 2 ? c.a.shape[0] : (c.b.shape.size() > 2 ? c.b.shape[0] : 1);
    k *= prod_batch;
  }
  return k;
}

void run_forward(const Case& cs, uint64_t seed) {
  SCOPED_TRACE(repro(cs, seed));
  std::mt19937_64 rng(seed);
  const bool fp8 = cs.dt == DType::f8e4m3 || cs.dt == DType::f8e5m2;
  const DType bdt = fp8 ? cs.b_dt : cs.dt, odt = fp8 ? cs.out_dt : cs.dt;
  StridedBuffer a(cs.dt, cs.a.shape, cs.a.layout), b(bdt, cs.b.shape, cs.b.layout), out(odt, cs.out.shape, cs.out.layout);
  StridedBuffer cbuf, bias, pre;
  if (cs.has_c && !cs.c_is_out) cbuf = StridedBuffer(odt, cs.c.shape, cs.c.layout);
  if (cs.has_bias) bias = StridedBuffer(odt, cs.bias.shape, cs.bias.layout);
  if (cs.preact) pre = StridedBuffer(odt, cs.out.shape, Layout::kContiguous);
  const bool grad = cs.grad_act != GemmActivation::kNone;
  StridedBuffer aux, bgrad;
  if (grad) aux = StridedBuffer(odt, cs.out.shape, Layout::kContiguous);
  if (cs.bias_grad) bgrad = StridedBuffer(odt, {cs.out.shape.back()}, Layout::kContiguous);
  fill(a, rng, cs.integer_fill);
  fill(b, rng, cs.integer_fill);
  a.upload(), b.upload();
  std::vector<double> auxval;
  if (grad) {
    std::uniform_real_distribution<double> u3(-3.0, 3.0);  // across gelu's curved range
    for (int64_t i = 0; i < aux.numel(); ++i) aux.set_bits(i, test::double_to_bits(odt, cs.integer_fill ? 1.0 : u3(rng)));
    aux.upload();
    auxval = logical(aux);
  }
  if (cs.bias_grad) bgrad.fill_storage(kPoison), bgrad.upload();
  std::vector<double> cval, biasval;
  out.fill_storage(kPoison);
  if (cs.c_is_out) {
    fill(out, rng, cs.integer_fill);
    cval = logical(out);
  }
  out.upload();
  if (cs.has_c && !cs.c_is_out) {
    fill(cbuf, rng, cs.integer_fill);
    if (cs.nan_c)
      for (int64_t i = 0; i < cbuf.numel(); ++i) cbuf.set_bits(i, test::double_to_bits(odt, NAN));
    cbuf.upload();
    cval = logical(cbuf);
  }
  if (cs.has_bias) {
    fill(bias, rng, cs.integer_fill);
    bias.upload();
    biasval = logical(bias);
  }
  if (cs.preact) {
    pre.fill_storage(kPoison);
    pre.upload();
  }
  const StridedBuffer* cptr = cs.has_c ? (cs.c_is_out ? &out : &cbuf) : nullptr;
  GemmDescriptor d = describe(cs, a, b, out, cptr, cs.has_bias ? &bias : nullptr, grad ? aux.view_ptr() : nullptr);
  PlanPreference pref;
  pref.allow_tf32 = cs.tf32;
  pref.autotune = cs.autotune;
  auto plan = GemmPlan::select(d, pref);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  // fp8: per-tensor dequantisation scales on the device
  float scales_h[2] = {0.5f, 2.0f};
  float* scales = nullptr;
  if (fp8) {
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&scales), 64), cudaSuccess);  // a at +0, b at +16 bytes
    ASSERT_EQ(cudaMemcpy(scales, &scales_h[0], 4, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(scales + 4, &scales_h[1], 4, cudaMemcpyHostToDevice), cudaSuccess);
  }
  DeviceWs ws(plan->workspace_size());
  GemmArgs args;
  args.a = a.ref(), args.b = b.ref(), args.out = out.mut();
  if (cptr) args.c = cptr->ref();
  if (cs.has_bias) args.bias = bias.ref();
  if (cs.preact) args.preact = pre.mut();
  if (fp8)
    args.a_scale = TensorRef::make(scales, DType::f32, {}), args.b_scale = TensorRef::make(scales + 4, DType::f32, {});
  if (grad) args.aux = aux.ref();
  if (cs.bias_grad) args.bias_grad = bgrad.mut();
  if (cs.autotune) EXPECT_NE(plan->sku().name().find(".tuned"), std::string::npos) << plan->sku().name();
  Status st = plan->run(nullptr, {ws.p, plan->workspace_size()}, args);
  ASSERT_TRUE(st.ok()) << st.to_string() << " sku " << plan->sku().name();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaFree(scales);
  out.download();
  if (cs.preact) pre.download();
  if (cs.bias_grad) bgrad.download();

  std::vector<double> av = logical(a), bv = logical(b);
  if (fp8)
    for (auto& v : av) v *= scales_h[0];
  if (fp8)
    for (auto& v : bv) v *= scales_h[1];
  GemmDescriptor dr = d;  // the reference reads logical arrays
  const ref::GemmForwardRef r = ref::gemm_forward(dr, av, bv, cval, biasval, false, nullptr, grad ? &auxval : nullptr);
  // the plain same-precision composition: f32 sums; with c or bias, the product is first written in
  // the output dtype, then added (cuBLASLt's f16 kernels and our separate epilogue round there too)
  const bool two_step = (cs.has_c && cs.beta != 0.0) || cs.has_bias || grad;
  static DType s_odt;
  s_odt = odt;
  auto round_out = +[](double v) { return test::bits_to_double(s_odt, test::double_to_bits(s_odt, v)); };
  const ref::GemmForwardRef plain =
      ref::gemm_forward(dr, av, bv, cval, biasval, /*f32_math=*/odt != DType::f64, two_step ? round_out : nullptr,
                        grad ? &auxval : nullptr);
  const std::vector<double> absp = ref::gemm_abs_product(dr, av, bv);
  const double eps_out = test::dtype_eps(odt);
  // fp8 on Hopper: the tensor cores keep about 14 mantissa bits of the running sum between
  // cuBLASLt's promotions to f32 (DeepSeek-V3 report, section 3.3.2), so its accumulation error
  // is modelled with eps = 2^-13, and the 2x-of-plain-f32 rule cannot apply (same kernel as
  // torch._scaled_mm). TF32 rounds inputs to 10 mantissa bits.
  const double eps_acc = odt == DType::f64 ? test::dtype_eps(DType::f64)
                         : fp8             ? 1.220703125e-4
                         : cs.tf32         ? 9.765625e-4
                                           : test::dtype_eps(DType::f32);
  const int64_t K = reduction_length(cs);
  double err_max = 0, plain_max = 0, ref_max = 0, ratio_max = 0;
  int64_t nonzero = 0;
  // the grad epilogue multiplies by act'(aux): |gelu'| <= 1.13, |relu'| <= 1
  const double gmax = grad ? 1.13 : 1.0;
  const int64_t ncols = cs.out.shape.empty() ? 1 : cs.out.shape.back();
  std::vector<double> col_tol(static_cast<size_t>(ncols), 0.0), col_abs(static_cast<size_t>(ncols), 0.0);
  for (int64_t i = 0; i < out.numel(); ++i) {
    const double got = test::bits_to_double(odt, out.get_bits(i));
    const double want = r.out[i];
    ASSERT_FALSE(std::isnan(got)) << "NaN at " << i << " (want " << want << ")";
    const double want_r = test::bits_to_double(odt, test::double_to_bits(odt, want));
    if (cs.integer_fill) {
      ASSERT_EQ(got, want_r) << "integer-valued case not exact at " << i;
      continue;
    }
    const double err = std::fabs(got - want);
    const double inter = two_step ? gmax * std::fabs(cs.alpha) * absp[i] : 0.0;  // bound on |alpha·P| rounded mid-way
    const double tol =
        2 * eps_out * (std::fabs(want) + inter) + 2.0 * K * eps_acc * gmax * std::fabs(cs.alpha) * absp[i] + 1e-300;
    col_tol[i % ncols] += tol;
    col_abs[i % ncols] += std::fabs(want);
    ASSERT_LE(err, tol) << "element " << i << " got " << got << " want " << want << " |a||b| " << absp[i];
    ratio_max = std::max(ratio_max, err / tol);
    err_max = std::max(err_max, err);
    const double pr = test::bits_to_double(odt, test::double_to_bits(odt, plain.out[i]));
    plain_max = std::max(plain_max, std::fabs(pr - want));
    ref_max = std::max(ref_max, std::fabs(want));
    nonzero += want != 0.0;
  }
  if (cs.preact) {
    for (int64_t i = 0; i < pre.numel(); ++i) {
      const double got = test::bits_to_double(odt, pre.get_bits(i)), want = r.preact[i];
      const double inter = two_step ? std::fabs(cs.alpha) * absp[i] : 0.0;
      const double tol = 2 * eps_out * (std::fabs(want) + inter) + 2.0 * K * eps_acc * absp[i] + 1e-300;
      ASSERT_LE(std::fabs(got - want), tol) << "preact element " << i << " got " << got << " want " << want;
    }
  }
  if (cs.bias_grad) {
    // Σ over rows of out: each term's own error, plus the f32 sum's rounding
    const int64_t rows = out.numel() / std::max<int64_t>(1, ncols);
    for (int64_t n = 0; n < ncols; ++n) {
      const double got = test::bits_to_double(odt, bgrad.get_bits(n)), want = r.bias_grad[n];
      const double tol = col_tol[n] + 2 * eps_out * std::fabs(want) + 2.0 * rows * eps_acc * col_abs[n] + 1e-300;
      ASSERT_LE(std::fabs(got - want), tol) << "bias_grad element " << n << " got " << got << " want " << want;
    }
  }
  int64_t bad = -1;
  ASSERT_TRUE(out.gaps_hold(kPoison, &bad) || cs.c_is_out) << "wrote outside out at storage element " << bad;
  if (!cs.integer_fill && odt != DType::f64 && !cs.tf32 && !fp8 && out.numel() > 0) {
    // the 2x rule, with one output ulp of slack for the final rounding
    const double allowed = 2 * plain_max + eps_out * ref_max;
    ASSERT_LE(err_max, allowed) << "error " << err_max << " exceeds 2x the plain f32 product's " << plain_max;
    const double v = allowed > 0 ? err_max / allowed : 0;
    if (v > g_fwd.worst_vs_plain) g_fwd.worst_vs_plain = v, g_fwd.worst_case = repro(cs, seed);
  }
  const bool vacuous_ok = (K == 0 && !cs.has_c && !cs.has_bias) || out.numel() == 0;
  if (!vacuous_ok && !cs.integer_fill) ASSERT_GT(nonzero, 0) << "reference is all zeros";
  g_fwd.cases++;
  g_fwd.elements += out.numel();
  g_fwd.exact_cases += cs.integer_fill;
  g_fwd.worst_ratio = std::max(g_fwd.worst_ratio, ratio_max);
}

void run_backward(const Case& cs, uint64_t seed) {
  SCOPED_TRACE(repro(cs, seed) + " (backward)");
  std::mt19937_64 rng(seed);
  const DType dt = cs.dt;
  StridedBuffer a(dt, cs.a.shape, cs.a.layout), b(dt, cs.b.shape, cs.b.layout), out(dt, cs.out.shape, cs.out.layout);
  StridedBuffer cbuf, bias, pre, dout(dt, cs.out.shape, cs.out.layout);
  StridedBuffer da(dt, cs.a.shape, Layout::kContiguous), db(dt, cs.b.shape, Layout::kContiguous), dbias, dc;
  if (cs.has_c) cbuf = StridedBuffer(dt, cs.c.shape, cs.c.layout), dc = StridedBuffer(dt, cs.c.shape, Layout::kContiguous);
  if (cs.has_bias) bias = StridedBuffer(dt, cs.bias.shape, Layout::kContiguous), dbias = StridedBuffer(dt, cs.bias.shape, Layout::kContiguous);
  if (cs.preact) pre = StridedBuffer(dt, cs.out.shape, Layout::kContiguous);
  fill(a, rng, false), fill(b, rng, false), fill(dout, rng, false);
  a.upload(), b.upload(), dout.upload();
  std::vector<double> cval, biasval;
  if (cs.has_c) fill(cbuf, rng, false), cbuf.upload(), cval = logical(cbuf);
  if (cs.has_bias) fill(bias, rng, false), bias.upload(), biasval = logical(bias);
  for (StridedBuffer* g : {&da, &db, &dbias, &dc})
    if (g->numel() > 0) g->fill_storage(kPoison), g->upload();
  GemmDescriptor d = describe(cs, a, b, out, cs.has_c ? &cbuf : nullptr, cs.has_bias ? &bias : nullptr);
  auto fwd = GemmPlan::select(d);
  ASSERT_TRUE(fwd.ok()) << fwd.status().to_string();
  auto bwd = GemmBackwardPlan::select(d);
  ASSERT_TRUE(bwd.ok()) << bwd.status().to_string();
  DeviceWs wf(fwd->workspace_size()), wb(bwd->workspace_size());
  GemmArgs fa;
  fa.a = a.ref(), fa.b = b.ref(), fa.out = out.mut();
  if (cs.has_c) fa.c = cbuf.ref();
  if (cs.has_bias) fa.bias = bias.ref();
  if (cs.preact) fa.preact = pre.mut();
  ASSERT_TRUE(fwd->run(nullptr, {wf.p, fwd->workspace_size()}, fa).ok());
  GemmBackwardArgs ba;
  ba.a = a.ref(), ba.b = b.ref(), ba.out = out.mut(), ba.d_out = dout.ref();
  if (cs.preact) ba.preact = pre.mut();
  ba.da = da.mut(), ba.db = db.mut();
  if (cs.has_bias) ba.dbias = dbias.mut();
  if (cs.has_c) ba.dc = dc.mut();
  Status st = bwd->run(nullptr, {wb.p, bwd->workspace_size()}, ba);
  ASSERT_TRUE(st.ok()) << st.to_string() << " sku " << bwd->sku().name();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (StridedBuffer* g : {&da, &db, &dbias, &dc})
    if (g->numel() > 0) g->download();
  // the backward's saved tensors are the device's (rounded) forward results
  out.download();
  if (cs.preact) pre.download();
  const std::vector<double> av = logical(a), bv = logical(b), gv = logical(dout);
  const ref::GemmBackwardRef r = ref::gemm_backward(d, av, bv, cval, biasval, gv);
  // error scale: the same sums over absolute values (|act'| <= 1.13 for gelu)
  std::vector<double> aa(av), ab(bv), ag(gv), ac(cval), abias(biasval);
  for (auto* v : {&aa, &ab, &ag, &ac, &abias})
    for (auto& x : *v) x = std::fabs(x) * (v == &ag ? 1.13 : 1.0);
  GemmDescriptor dabs = d;
  dabs.activation = GemmActivation::kNone, dabs.alpha = std::fabs(d.alpha), dabs.beta = std::fabs(d.beta);
  dabs.save_preactivation = false;
  const ref::GemmBackwardRef s = ref::gemm_backward(dabs, aa, ab, ac, abias, ag);
  const double eps_out = test::dtype_eps(dt);
  const double eps_acc = dt == DType::f64 ? eps_out : test::dtype_eps(DType::f32);
  // reduction lengths: da sums N (·summed batch), db sums M·batch
  int64_t len = 1;
  for (int64_t e : cs.out.shape) len *= e;
  double worst = 0;
  auto check = [&](const char* name, const StridedBuffer& g, const std::vector<double>& want, const std::vector<double>& scale) {
    ASSERT_EQ(static_cast<int64_t>(want.size()), g.numel()) << name;
    for (int64_t i = 0; i < g.numel(); ++i) {
      const double got = test::bits_to_double(dt, g.get_bits(i));
      // dZ is rounded to the dtype once (eps_out) before the GEMM; sums add eps_acc per term
      const double tol = 2 * eps_out * std::fabs(want[i]) + (2 * eps_out + 2.0 * len * eps_acc) * scale[i] + 1e-300;
      ASSERT_FALSE(std::isnan(got)) << name << " NaN at " << i;
      ASSERT_LE(std::fabs(got - want[i]), tol) << name << " element " << i << " got " << got << " want " << want[i];
      worst = std::max(worst, std::fabs(got - want[i]) / tol);
    }
  };
  check("da", da, r.da, s.da);
  check("db", db, r.db, s.db);
  if (cs.has_bias) check("dbias", dbias, r.dbias, s.dbias);
  if (cs.has_c) check("dc", dc, r.dc, s.dc);
  g_bwd.cases++;
  g_bwd.elements += da.numel() + db.numel();
  g_bwd.worst_ratio = std::max(g_bwd.worst_ratio, worst);
}

class GemmDevice : public ::testing::Test {
 protected:
  void SetUp() override { BARACUDA_REQUIRE_GPU(); }
  static void TearDownTestSuite() {
    if (g_fwd.cases)
      printf("[gemm] forward: %lld cases (%lld exact integer-valued), %lld elements, worst err/tol %.3f, worst err/(2x plain + ulp) %.3f\n"
             "[gemm]   at %s\n",
             (long long)g_fwd.cases, (long long)g_fwd.exact_cases, (long long)g_fwd.elements, g_fwd.worst_ratio,
             g_fwd.worst_vs_plain, g_fwd.worst_case.c_str());
    if (g_bil.cases) printf("[gemm] bilinear: %lld cases (fwd + 4 gradients each), worst err/tol %.3f\n", (long long)g_bil.cases, g_bil.worst_ratio);
    if (g_bwd.cases)
      printf("[gemm] backward: %lld cases, %lld gradient elements, worst err/tol %.3f\n", (long long)g_bwd.cases,
             (long long)g_bwd.elements, g_bwd.worst_ratio);
  }
};

const DType kFloat[] = {DType::f32, DType::f16, DType::bf16, DType::f64};

TEST_F(GemmDevice, MatmulShapesLayoutsDtypes) {
  const int64_t sizes[][3] = {{1, 1, 1},   {1, 7, 5},    {7, 1, 9},    {16, 16, 16}, {33, 17, 64},
                              {128, 129, 31}, {129, 128, 256}, {64, 8, 1000}, {5, 300, 8}};
  const Layout lays[] = {Layout::kContiguous, Layout::kTransposed, Layout::kPaddedRows, Layout::kOffset1, Layout::kStep2};
  uint64_t seed = 1000;
  for (DType dt : kFloat)
    for (const auto& s : sizes)
      for (Layout la : lays)
        for (Layout lb : {Layout::kContiguous, Layout::kTransposed, Layout::kStep2}) {
          Case c;
          c.name = "mm";
          c.dt = dt;
          c.a = {{s[0], s[2]}, la};
          c.b = {{s[2], s[1]}, lb};
          c.out = {{s[0], s[1]}, la == Layout::kTransposed ? Layout::kTransposed
                                  : lb == Layout::kStep2    ? Layout::kStep2
                                                            : Layout::kContiguous};
          run_forward(c, seed++);
          if (HasFatalFailure()) return;
        }
}

TEST_F(GemmDevice, IntegerValuedFillsAreExact) {
  uint64_t seed = 2000;
  for (DType dt : kFloat)
    for (int64_t k : {1, 8, 40}) {
      Case c;
      c.name = "mm_int";
      c.dt = dt;
      c.integer_fill = true;  // |sum| <= 9·40 = 360 ... bf16 holds integers up to 256 exactly
      if (dt == DType::bf16 || dt == DType::f16) k = std::min<int64_t>(k, 8);
      c.a = {{37, k}};
      c.b = {{k, 45}};
      c.out = {{37, 45}};
      run_forward(c, seed++);
      if (HasFatalFailure()) return;
    }
}

TEST_F(GemmDevice, BatchedAndBroadcast) {
  struct S {
    std::vector<int64_t> a, b, out;
    Layout la, lb, lo;
  };
  const S shapes[] = {
      {{4, 33, 17}, {4, 17, 9}, {4, 33, 9}, Layout::kContiguous, Layout::kContiguous, Layout::kContiguous},
      {{4, 33, 17}, {4, 17, 9}, {4, 33, 9}, Layout::kTransposed, Layout::kTransposed, Layout::kContiguous},
      {{3, 5, 33, 17}, {17, 9}, {3, 5, 33, 9}, Layout::kContiguous, Layout::kContiguous, Layout::kContiguous},
      {{33, 17}, {3, 17, 9}, {3, 33, 9}, Layout::kContiguous, Layout::kContiguous, Layout::kContiguous},
      {{2, 1, 8, 16}, {1, 3, 16, 24}, {2, 3, 8, 24}, Layout::kContiguous, Layout::kContiguous, Layout::kContiguous},
      {{2, 1, 8, 16}, {1, 3, 16, 24}, {2, 3, 8, 24}, Layout::kPermuted, Layout::kStep2, Layout::kPermuted},
      {{6, 8, 16}, {6, 16, 24}, {6, 8, 24}, Layout::kBroadcast, Layout::kContiguous, Layout::kContiguous},
      {{6, 8, 16}, {6, 16, 24}, {6, 8, 24}, Layout::kContiguous, Layout::kBroadcast, Layout::kPaddedRows},
      // 1-D operands: dot, mv, vector @ matrix, batched matrix @ vector
      {{64}, {64}, {}, Layout::kContiguous, Layout::kContiguous, Layout::kContiguous},
      {{33, 64}, {64}, {33}, Layout::kContiguous, Layout::kStep2, Layout::kContiguous},
      {{64}, {64, 33}, {33}, Layout::kStep2, Layout::kTransposed, Layout::kStep2},
      {{5, 7, 64}, {64}, {5, 7}, Layout::kContiguous, Layout::kContiguous, Layout::kContiguous},
      {{64}, {5, 64, 7}, {5, 7}, Layout::kContiguous, Layout::kContiguous, Layout::kContiguous},
  };
  uint64_t seed = 3000;
  for (DType dt : kFloat)
    for (const S& s : shapes) {
      Case c;
      c.name = "matmul";
      c.dt = dt;
      c.a = {s.a, s.la}, c.b = {s.b, s.lb}, c.out = {s.out, s.lo};
      run_forward(c, seed++);
      if (HasFatalFailure()) return;
    }
}

TEST_F(GemmDevice, AddmmFamilyAndKZero) {
  uint64_t seed = 4000;
  for (DType dt : kFloat) {
    auto base = [&](const char* n) {
      Case c;
      c.name = n;
      c.dt = dt;
      c.a = {{48, 40}}, c.b = {{40, 24}}, c.out = {{48, 24}};
      return c;
    };
    Case c = base("addmm_full");
    c.has_c = true, c.c = {{48, 24}, Layout::kTransposed}, c.alpha = 2.0, c.beta = 0.5;
    run_forward(c, seed++);
    c = base("addmm_rowvec");
    c.has_c = true, c.c = {{24}}, c.beta = 1.0;
    run_forward(c, seed++);
    c = base("addmm_beta0_nan_c");
    c.has_c = true, c.c = {{48, 24}}, c.beta = 0.0, c.nan_c = true;
    run_forward(c, seed++);
    c = base("addmm_inplace");
    c.has_c = true, c.c = {{48, 24}}, c.c_is_out = true, c.beta = -1.5, c.alpha = 0.25;
    run_forward(c, seed++);
    c = base("addmm_packed_out");
    c.out.layout = Layout::kStep2, c.has_c = true, c.c = {{1, 24}}, c.beta = 0.75;
    run_forward(c, seed++);
    c = base("addmv");
    c.b = {{40}}, c.out = {{48}}, c.has_c = true, c.c = {{48}}, c.beta = 1.0;
    run_forward(c, seed++);
    c = base("addr");  // outer: [48,1] @ [1,24]
    c.a = {{48, 1}}, c.b = {{1, 24}}, c.has_c = true, c.c = {{48, 24}}, c.beta = 1.0, c.alpha = 3.0;
    run_forward(c, seed++);
    c = base("baddbmm");
    c.a = {{3, 16, 40}}, c.b = {{3, 40, 24}}, c.out = {{3, 16, 24}}, c.has_c = true, c.c = {{1, 16, 24}}, c.beta = 0.5;
    run_forward(c, seed++);
    c = base("addbmm");  // summed batch
    c.a = {{5, 16, 40}}, c.b = {{5, 40, 24}}, c.out = {{16, 24}}, c.sum_batch = true, c.has_c = true, c.c = {{16, 24}}, c.beta = 1.0;
    run_forward(c, seed++);
    c = base("addbmm_transposed");
    c.a = {{5, 16, 40}, Layout::kTransposed}, c.b = {{5, 40, 24}, Layout::kPermuted}, c.out = {{16, 24}}, c.sum_batch = true;
    run_forward(c, seed++);
    c = base("k0_zeros");
    c.a = {{48, 0}}, c.b = {{0, 24}};
    run_forward(c, seed++);
    c = base("k0_beta_c_bias_relu");
    c.a = {{48, 0}}, c.b = {{0, 24}}, c.has_c = true, c.c = {{48, 24}}, c.beta = 2.0, c.has_bias = true, c.bias = {{24}};
    c.act = GemmActivation::kRelu;
    run_forward(c, seed++);
    c = base("m0");
    c.a = {{0, 40}}, c.out = {{0, 24}};
    run_forward(c, seed++);
    if (HasFatalFailure()) return;
  }
}

TEST_F(GemmDevice, LinearEpiloguesFusedAndSeparate) {
  uint64_t seed = 5000;
  const GemmActivation acts[] = {GemmActivation::kNone, GemmActivation::kRelu, GemmActivation::kGeluTanh, GemmActivation::kGeluErf};
  for (DType dt : kFloat)
    for (GemmActivation act : acts)
      for (GemmEpilogueImpl epi : {GemmEpilogueImpl::kAuto, GemmEpilogueImpl::kSeparate})
        for (bool pre : {false, true}) {
          if (pre && act == GemmActivation::kNone) continue;
          Case c;
          c.name = std::string("linear_") + std::string(enum_name(act)) + (pre ? "_preact" : "") +
                   (epi == GemmEpilogueImpl::kSeparate ? "_sep" : "");
          c.dt = dt;
          c.a = {{3, 40, 64}}, c.b = {{72, 64}}, c.transpose_b = true, c.out = {{3, 40, 72}};
          c.has_bias = true, c.bias = {{72}};
          c.act = act, c.preact = pre, c.epi = epi;
          run_forward(c, seed++);
          if (HasFatalFailure()) return;
        }
}

TEST_F(GemmDevice, Fp8ScaledMm) {
  uint64_t seed = 6000;
  const DType pairs[][2] = {{DType::f8e4m3, DType::f8e4m3}, {DType::f8e4m3, DType::f8e5m2}, {DType::f8e5m2, DType::f8e4m3}};
  for (const auto& p : pairs)
    for (DType out : {DType::bf16, DType::f16, DType::f32})
      for (bool bias : {false, true}) {
        if (bias && out == DType::f32) continue;
        Case c;
        c.name = "scaled_mm";
        c.dt = p[0], c.b_dt = p[1], c.out_dt = out;
        c.a = {{64, 128}}, c.b = {{48, 128}}, c.transpose_b = true, c.out = {{64, 48}};
        c.has_bias = bias, c.bias = {{48}};
        run_forward(c, seed++);
        if (HasFatalFailure()) return;
      }
}

TEST_F(GemmDevice, Tf32OnlyWhenAllowed) {
  Case c;
  c.name = "mm_tf32";
  c.dt = DType::f32;
  c.a = {{64, 256}}, c.b = {{256, 64}}, c.out = {{64, 64}};
  c.tf32 = true;
  run_forward(c, 7000);
  GemmDescriptor d;
  StridedBuffer a(DType::f32, {64, 256}, Layout::kContiguous), b(DType::f32, {256, 64}, Layout::kContiguous),
      o(DType::f32, {64, 64}, Layout::kContiguous);
  d = GemmDescriptor::mm(a.ref(), b.ref(), o.mut());
  auto strict = GemmPlan::select(d);
  PlanPreference p;
  p.allow_tf32 = true;
  auto fast = GemmPlan::select(d, p);
  ASSERT_TRUE(strict.ok() && fast.ok());
  EXPECT_FALSE(strict->precision_guarantee().tf32_inputs);
  EXPECT_TRUE(fast->precision_guarantee().tf32_inputs);
}

TEST_F(GemmDevice, Batch65537) {
  Case c;
  c.name = "bmm_65537";
  c.dt = DType::bf16;
  c.a = {{65537, 3, 8}}, c.b = {{65537, 8, 5}}, c.out = {{65537, 3, 5}};
  run_forward(c, 8000);
}

TEST_F(GemmDevice, Backward) {
  uint64_t seed = 9000;
  for (DType dt : kFloat) {
    Case c;
    c.dt = dt;
    c.backward = true;
    c.name = "bwd_mm";
    c.a = {{33, 40}}, c.b = {{40, 24}}, c.out = {{33, 24}};
    run_backward(c, seed++);
    c.name = "bwd_bmm_broadcast_b";
    c.a = {{4, 33, 40}}, c.b = {{40, 24}}, c.out = {{4, 33, 24}};
    run_backward(c, seed++);
    c.name = "bwd_bcast_both";
    c.a = {{2, 1, 8, 16}}, c.b = {{1, 3, 16, 24}}, c.out = {{2, 3, 8, 24}};
    run_backward(c, seed++);
    c.name = "bwd_linear_bias_gelu";
    c.a = {{3, 40, 64}}, c.b = {{72, 64}}, c.transpose_b = true, c.out = {{3, 40, 72}};
    c.has_bias = true, c.bias = {{72}}, c.act = GemmActivation::kGeluTanh, c.preact = true;
    run_backward(c, seed++);
    c.name = "bwd_linear_relu_transposed_x";
    c.a = {{40, 64}, Layout::kTransposed}, c.out = {{40, 72}}, c.act = GemmActivation::kRelu, c.preact = false;
    run_backward(c, seed++);
    c = Case{};
    c.dt = dt;
    c.name = "bwd_addmm";
    c.a = {{33, 40}}, c.b = {{40, 24}}, c.out = {{33, 24}}, c.has_c = true, c.c = {{33, 24}}, c.beta = 0.5, c.alpha = 2.0;
    run_backward(c, seed++);
    c.name = "bwd_addmm_rowvec";
    c.c = {{24}}, c.beta = 1.0;
    run_backward(c, seed++);
    // dc of c broadcast as a column, a scalar, over batch dims (reduce-to-shape): repro of the
    // former "dc for c [33, 1] ... is not implemented"
    c.name = "bwd_addmm_colvec";
    c.c = {{33, 1}}, c.beta = 0.5;
    run_backward(c, seed++);
    c.name = "bwd_addmm_scalar_c";
    c.c = {{}}, c.beta = -2.0;
    run_backward(c, seed++);
    c.name = "bwd_baddbmm_batch_broadcast_c";
    c.a = {{3, 33, 40}}, c.b = {{3, 40, 24}}, c.out = {{3, 33, 24}}, c.c = {{33, 24}}, c.beta = 1.0;
    run_backward(c, seed++);
    c.name = "bwd_addmm_c_beta0";
    c.a = {{33, 40}}, c.b = {{40, 24}}, c.out = {{33, 24}}, c.c = {{33, 1}}, c.beta = 0.0;
    run_backward(c, seed++);
    c = Case{};
    c.dt = dt;
    c.name = "bwd_mv_dot";
    c.a = {{33, 40}}, c.b = {{40}}, c.out = {{33}};
    run_backward(c, seed++);
    c.a = {{40}}, c.out = {{}};
    run_backward(c, seed++);
    c.name = "bwd_addbmm";
    c.a = {{5, 16, 40}}, c.b = {{5, 40, 24}}, c.out = {{16, 24}}, c.sum_batch = true;
    run_backward(c, seed++);
    if (HasFatalFailure()) return;
  }
}

// Backward epilogues: out = (dY·W) ⊙ act'(aux) with the bias gradient, fused (dgelu_tanh) and
// separate (every act), plain and batched, every dtype.
TEST_F(GemmDevice, BackwardEpilogues) {
  uint64_t seed = 9500;
  const GemmActivation acts[] = {GemmActivation::kNone, GemmActivation::kRelu, GemmActivation::kGeluTanh, GemmActivation::kGeluErf};
  for (DType dt : kFloat)
    for (GemmActivation act : acts)
      for (GemmEpilogueImpl epi : {GemmEpilogueImpl::kAuto, GemmEpilogueImpl::kFused, GemmEpilogueImpl::kSeparate})
        for (bool bg : {false, true}) {
          if (act == GemmActivation::kNone && !bg) continue;
          // cuBLASLt fuses dgelu_tanh on 16-bit outs only
          const bool fusable = act == GemmActivation::kGeluTanh && (dt == DType::bf16 || dt == DType::f16);
          if (epi == GemmEpilogueImpl::kFused && !fusable) continue;
          Case c;
          c.name = std::string("dact_") + std::string(enum_name(act)) + (bg ? "_bgrad" : "") +
                   (epi == GemmEpilogueImpl::kSeparate ? "_sep" : epi == GemmEpilogueImpl::kFused ? "_fused" : "");
          c.dt = dt;
          // dH [M, N] = dY [M, O] · W [O, N]   (the da GEMM of the next layer)
          c.a = {{96, 40}}, c.b = {{40, 72}}, c.out = {{96, 72}};
          c.grad_act = act, c.bias_grad = bg, c.epi = epi;
          run_forward(c, seed++);
          if (HasFatalFailure()) return;
          c.name += "_odd";
          c.a = {{33, 17}}, c.b = {{17, 24}, Layout::kTransposed}, c.out = {{33, 24}};
          run_forward(c, seed++);
          if (HasFatalFailure()) return;
          if (epi != GemmEpilogueImpl::kFused) {  // N = 21: the general (not vectorised) epilogue and column sum
            Case c2 = c;
            c2.name += "_n21";
            c2.b = {{17, 21}}, c2.out = {{33, 21}};
            run_forward(c2, seed++);
            if (HasFatalFailure()) return;
          }
          if (!bg || epi != GemmEpilogueImpl::kFused) {  // the fused bias gradient covers one matrix
            c.name += "_bmm";
            c.a = {{3, 40, 64}}, c.b = {{3, 64, 16}}, c.out = {{3, 40, 16}};
            run_forward(c, seed++);
            if (HasFatalFailure()) return;
          }
        }
  // kAuto without autotune takes the separate form (measured faster); kFused takes cuBLASLt's
  StridedBuffer a(DType::bf16, {64, 32}, Layout::kContiguous), b(DType::bf16, {32, 48}, Layout::kContiguous),
      o(DType::bf16, {64, 48}, Layout::kContiguous);
  GemmDescriptor d = GemmDescriptor::mm(a.ref(), b.ref(), o.mut());
  d.grad_activation = GemmActivation::kGeluTanh, d.has_bias_grad = true;
  auto p = GemmPlan::select(d);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_NE(p->sku().name().find("sepepi"), std::string::npos) << p->sku().name();
  d.epilogue_impl = GemmEpilogueImpl::kFused;
  p = GemmPlan::select(d);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_NE(p->sku().name().find("fusedepi"), std::string::npos) << p->sku().name();
  d.grad_activation = GemmActivation::kRelu;
  auto f = GemmPlan::select(d);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("backward epilogue"), std::string::npos) << f.status().message();
}

// Timed selection: the candidates and both epilogue forms are timed, the result is correct, and
// the second select() of the same problem is a cache hit.
TEST_F(GemmDevice, AutotuneAndPlanCache) {
  uint64_t seed = 9700;
  for (DType dt : {DType::bf16, DType::f32}) {
    Case c;
    c.dt = dt;
    c.autotune = true;
    c.name = "tuned_linear_bias_gelu";
    c.a = {{256, 512}}, c.b = {{384, 512}}, c.transpose_b = true, c.out = {{256, 384}};
    c.has_bias = true, c.bias = {{384}}, c.act = GemmActivation::kGeluTanh, c.preact = true;
    run_forward(c, seed++);
    if (HasFatalFailure()) return;
    c = Case{};
    c.dt = dt, c.autotune = true;
    c.name = "tuned_dgelu_bgrad";
    c.a = {{256, 128}}, c.b = {{128, 192}}, c.out = {{256, 192}}, c.grad_act = GemmActivation::kGeluTanh, c.bias_grad = true;
    run_forward(c, seed++);
    if (HasFatalFailure()) return;
    c = Case{};
    c.dt = dt, c.autotune = true;
    c.name = "tuned_bmm_packed";
    c.a = {{4, 64, 96}, Layout::kTransposed}, c.b = {{96, 80}, Layout::kStep2}, c.out = {{4, 64, 80}};
    run_forward(c, seed++);
    if (HasFatalFailure()) return;
  }
  StridedBuffer a(DType::bf16, {128, 256}, Layout::kContiguous), b(DType::bf16, {256, 64}, Layout::kContiguous),
      o(DType::bf16, {128, 64}, Layout::kContiguous);
  const GemmDescriptor d = GemmDescriptor::mm(a.ref(), b.ref(), o.mut());
  PlanPreference tuned;
  tuned.autotune = true;
  auto p1 = GemmPlan::select(d, tuned);
  ASSERT_TRUE(p1.ok()) << p1.status().to_string();
  const GemmPlanCacheStats before = gemm_plan_cache_stats();
  auto p2 = GemmPlan::select(d, tuned);
  ASSERT_TRUE(p2.ok());
  const GemmPlanCacheStats after = gemm_plan_cache_stats();
  EXPECT_EQ(after.hits, before.hits + 1);
  EXPECT_EQ(p1->sku().name(), p2->sku().name());
  EXPECT_EQ(p1->workspace_size(), p2->workspace_size());
  EXPECT_GT(after.entries, 0u);
  gemm_plan_cache_clear();
  EXPECT_EQ(gemm_plan_cache_stats().entries, 0u);
  printf("[gemm] autotune sku %s; cache hits %zu misses %zu\n", p1->sku().name().c_str(), after.hits, after.misses);
}

// nn.functional.bilinear forward and backward against the float64 reference: tolerance from the
// same sums over absolute values (the intermediates round once to the dtype, sums accumulate in f32).
void run_bilinear(DType dt, std::vector<int64_t> lead, int64_t I, int64_t J, int64_t O, bool bias, Layout x1_layout,
                  uint64_t seed) {
  SCOPED_TRACE("repro: bilinear " + std::string(dtype_name(dt)) + " lead " + test::shape_str(lead) + " I " +
               std::to_string(I) + " J " + std::to_string(J) + " O " + std::to_string(O) + " x1 " +
               test::layout_name(x1_layout) + " seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  auto with = [&](int64_t last) {
    std::vector<int64_t> s = lead;
    s.push_back(last);
    return s;
  };
  int64_t B = 1;
  for (int64_t e : lead) B *= e;
  StridedBuffer x1(dt, with(I), x1_layout), x2(dt, with(J), Layout::kContiguous), w(dt, {O, I, J}, Layout::kContiguous),
      bb(dt, {O}, Layout::kContiguous), y(dt, with(O), Layout::kContiguous), dy(dt, with(O), Layout::kContiguous);
  StridedBuffer dx1(dt, with(I), Layout::kContiguous), dx2(dt, with(J), Layout::kContiguous),
      dw(dt, {O, I, J}, Layout::kContiguous), db(dt, {O}, Layout::kContiguous);
  for (StridedBuffer* t : {&x1, &x2, &w, &bb, &dy}) fill(*t, rng, false), t->upload();
  for (StridedBuffer* t : {&y, &dx1, &dx2, &dw, &db}) t->fill_storage(kPoison), t->upload();
  BilinearDescriptor d;
  d.x1 = x1.ref(), d.x2 = x2.ref(), d.weight = w.ref(), d.out = y.mut();
  if (bias) d.bias = bb.ref(), d.has_bias = true;
  d.pointer_alignment = pointer_alignment_of({x1.view_ptr()});
  auto fp = BilinearPlan::select(d);
  ASSERT_TRUE(fp.ok()) << fp.status().to_string();
  auto bp = BilinearBackwardPlan::select(d);
  ASSERT_TRUE(bp.ok()) << bp.status().to_string();
  DeviceWs wf(fp->workspace_size()), wb(bp->workspace_size());
  BilinearArgs fa;
  fa.x1 = x1.ref(), fa.x2 = x2.ref(), fa.weight = w.ref(), fa.out = y.mut();
  if (bias) fa.bias = bb.ref();
  Status st = fp->run(nullptr, {wf.p, fp->workspace_size()}, fa);
  ASSERT_TRUE(st.ok()) << st.to_string();
  BilinearBackwardArgs ba;
  ba.x1 = x1.ref(), ba.x2 = x2.ref(), ba.weight = w.ref(), ba.d_out = dy.ref();
  ba.dx1 = dx1.mut(), ba.dx2 = dx2.mut(), ba.dweight = dw.mut();
  if (bias) ba.dbias = db.mut();
  st = bp->run(nullptr, {wb.p, bp->workspace_size()}, ba);
  ASSERT_TRUE(st.ok()) << st.to_string() << " sku " << bp->sku().name();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (StridedBuffer* t : {&y, &dx1, &dx2, &dw, &db}) t->download();
  const std::vector<double> v1 = logical(x1), v2 = logical(x2), vw = logical(w), vb = logical(bb), vg = logical(dy);
  auto absv = [](std::vector<double> v) {
    for (auto& x : v) x = std::fabs(x);
    return v;
  };
  const std::vector<double> want = ref::bilinear_forward(B, I, J, O, v1, v2, vw, bias ? vb : std::vector<double>{});
  const std::vector<double> scale = ref::bilinear_forward(B, I, J, O, absv(v1), absv(v2), absv(vw), bias ? absv(vb) : std::vector<double>{});
  const ref::BilinearBackwardRef g = ref::bilinear_backward(B, I, J, O, v1, v2, vw, vg);
  const ref::BilinearBackwardRef gs = ref::bilinear_backward(B, I, J, O, absv(v1), absv(v2), absv(vw), absv(vg));
  const double eps_out = test::dtype_eps(dt), eps_acc = dt == DType::f64 ? eps_out : test::dtype_eps(DType::f32);
  const double len = static_cast<double>(I + J + O + B);  // the longest chain of sums any element sees
  double worst = 0;
  auto check = [&](const char* name, const StridedBuffer& got_b, const std::vector<double>& ref_v, const std::vector<double>& sc) {
    ASSERT_EQ(static_cast<int64_t>(ref_v.size()), got_b.numel()) << name;
    for (int64_t i = 0; i < got_b.numel(); ++i) {
      const double got = test::bits_to_double(dt, got_b.get_bits(i));
      // two roundings to the dtype (intermediate and out) plus the f32 sums
      const double tol = 2 * eps_out * std::fabs(ref_v[i]) + (4 * eps_out + 2 * len * eps_acc) * sc[i] + 1e-300;
      ASSERT_FALSE(std::isnan(got)) << name << " NaN at " << i;
      ASSERT_LE(std::fabs(got - ref_v[i]), tol) << name << " element " << i << " got " << got << " want " << ref_v[i];
      worst = std::max(worst, std::fabs(got - ref_v[i]) / tol);
    }
  };
  check("out", y, want, scale);
  check("dx1", dx1, g.dx1, gs.dx1);
  check("dx2", dx2, g.dx2, gs.dx2);
  check("dweight", dw, g.dw, gs.dw);
  if (bias) check("dbias", db, g.dbias, gs.dbias);
  g_bil.cases++;
  g_bil.worst_ratio = std::max(g_bil.worst_ratio, worst);
}

TEST_F(GemmDevice, Bilinear) {
  uint64_t seed = 9900;
  for (DType dt : kFloat) {
    run_bilinear(dt, {37}, 24, 16, 8, true, Layout::kContiguous, seed++);
    run_bilinear(dt, {2, 3}, 9, 5, 7, false, Layout::kContiguous, seed++);
    run_bilinear(dt, {}, 16, 24, 12, true, Layout::kContiguous, seed++);
    run_bilinear(dt, {64}, 32, 32, 40, true, Layout::kStep2, seed++);
    if (HasFatalFailure()) return;
  }
}

TEST_F(GemmDevice, ErrorsAreClear) {
  StridedBuffer a(DType::bf16, {32, 64}, Layout::kContiguous), b(DType::bf16, {48, 16}, Layout::kContiguous),
      o(DType::bf16, {32, 16}, Layout::kContiguous), b_ok(DType::bf16, {64, 16}, Layout::kContiguous);
  auto bad_k = GemmPlan::select(GemmDescriptor::mm(a.ref(), b.ref(), o.mut()));
  ASSERT_FALSE(bad_k.ok());
  EXPECT_EQ(bad_k.status().code(), StatusCode::kInvalidProblem);
  EXPECT_NE(bad_k.status().message().find("K = 64"), std::string::npos) << bad_k.status().message();
  // an out whose rows overlap (ld < N)
  TensorMut ov = o.mut();
  ov.stride[0] = 8;
  auto overl = GemmPlan::select(GemmDescriptor::mm(a.ref(), b_ok.ref(), ov));
  ASSERT_FALSE(overl.ok());
  EXPECT_NE(overl.status().message().find("overlapping"), std::string::npos) << overl.status().message();
  // a pointer below the descriptor's alignment
  auto plan = GemmPlan::select(GemmDescriptor::mm(a.ref(), b_ok.ref(), o.mut()));
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  GemmArgs args;
  args.a = a.ref(), args.b = b_ok.ref(), args.out = o.mut();
  args.a.data = static_cast<const char*>(args.a.data) + 2;
  DeviceWs ws(plan->workspace_size());
  Status s = plan->run(nullptr, {ws.p, plan->workspace_size()}, args);
  EXPECT_EQ(s.code(), StatusCode::kMisalignedOperand) << s.to_string();
  args.a = a.ref();
  s = plan->run(nullptr, {ws.p, plan->workspace_size() ? plan->workspace_size() - 1 : 0}, args);
  if (plan->workspace_size() > 0) EXPECT_EQ(s.code(), StatusCode::kWorkspaceTooSmall) << s.to_string();
}

}  // namespace
}  // namespace baracuda
