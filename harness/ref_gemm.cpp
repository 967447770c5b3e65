// Reference adapters of the gemm and bilinear rows. Error scale: the products' sums over
// absolute values times the reduction length / 32 (so 64·eps·mag is 2·K·eps·Σ|a||b|, the bound
// the GEMM device tests use), plus two roundings of intermediates stored in the output dtype
// (c / bias added after the product; bilinear's U, T, G). fp8 products keep about 14 mantissa
// bits between cuBLASLt's promotions (eps 2^-13 per term). The backward's saved tensors (out for
// relu, preact for gelu) are the forward's own results, computed in the fill.
#include <algorithm>
#include <cmath>

#include "baracuda/ops/bilinear.hpp"
#include "baracuda/ops/gemm.hpp"
#include "gemm_ref.hpp"
#include "harness/op_case.hpp"
#include "harness/ref_common.hpp"

namespace baracuda::harness {

namespace {

const std::vector<double>& in_or(RefCall& c, const char* name, const std::vector<double>& none) {
  RefOperand* r = c.find(name);
  return r ? r->in : none;
}

int64_t reduction_length(const GemmDescriptor& d) {
  int64_t k = d.a.rank >= 1 ? d.a.shape[d.a.rank - 1] : 1;
  if (d.sum_batch) k *= std::max<int64_t>(1, d.a.numel() / std::max<int64_t>(1, k) / std::max<int64_t>(1, d.out.numel()));
  return std::max<int64_t>(k, 1);
}

// Random values given now (the backward's saved tensors depend on them), rounded to the
// operand's dtype: the saved tensors computed from them must see what the kernels read (a relu
// mask from unrounded inputs flips where Z is near 0).
void give_random(RefCall& c, RefOperand& r) {
  r.in.resize(static_cast<size_t>(r.spec->numel()));
  std::uniform_real_distribution<double> u(-2, 2);
  for (double& v : r.in) v = bits_to_double(r.spec->dtype, double_to_bits(r.spec->dtype, u(c.rng())));
  r.given = true;
}

DType acc_of_gemm(DType out) { return out == DType::f64 ? DType::f64 : DType::f32; }

void fp8_scales(RefCall& c) {
  if (RefOperand* s = c.find("a_scale")) s->in = {0.5}, s->given = true;
  if (RefOperand* s = c.find("b_scale")) s->in = {2.0}, s->given = true;
}

Status forward(RefCall& c) {
  const GemmDescriptor& d = c.desc<GemmDescriptor>();
  static const std::vector<double> none;
  std::vector<double> a = c["a"].in, b = c["b"].in;
  const bool fp8 = c.find("a_scale") != nullptr;
  if (fp8) {
    for (double& v : a) v *= c["a_scale"].in[0];
    for (double& v : b) v *= c["b_scale"].in[0];
  }
  const std::vector<double>& cv = in_or(c, "c", none);
  const std::vector<double>& bias = in_or(c, "bias", none);
  RefOperand* aux = c.find("aux");
  const ref::GemmForwardRef r = ref::gemm_forward(d, a, b, cv, bias, false, nullptr, aux ? &aux->in : nullptr);
  const std::vector<double> absp = ref::gemm_abs_product(d, a, b);
  const double K = static_cast<double>(reduction_length(d)), gmax = aux ? 1.13 : 1.0;
  const DType od = d.out.dtype;
  const double eps_out = rounding_eps(od), per_term = fp8 ? 1.220703125e-4 : accumulator_eps(acc_of_gemm(od));
  const bool two_step = (d.has_c && d.beta != 0.0) || d.has_bias || aux;
  auto scale = [&](RefOperand& o, const std::vector<double>& want) {
    o.want = want;
    o.mag.assign(want.size(), 0.0);
    o.extra.assign(want.size(), 0.0);
    for (size_t i = 0; i < want.size(); ++i) {
      const double ab = gmax * std::fabs(d.alpha) * absp[i % absp.size()];
      o.mag[i] = std::max(1.0, K / 32) * ab;
      o.extra[i] = eps_out * std::fabs(want[i]) + (two_step ? 2 * eps_out * ab : 0.0) + (fp8 ? 2 * K * per_term * ab : 0.0);
    }
  };
  scale(c["out"], r.out);
  if (RefOperand* p = c.find("preact")) scale(*p, r.preact);
  if (RefOperand* g = c.find("bias_grad")) {  // Σ over rows: each term's own error, plus the f32 sum
    g->want = r.bias_grad;
    g->mag.assign(r.bias_grad.size(), 0.0);
    const size_t N = r.bias_grad.size();
    const double rows = static_cast<double>(r.out.size() / std::max<size_t>(N, 1));
    for (size_t i = 0; i < r.out.size(); ++i)
      g->mag[i % N] += (std::max(1.0, K / 32) * gmax * std::fabs(d.alpha) * absp[i] + std::fabs(r.out[i])) * std::max(1.0, rows / 32);
  }
  return {};
}

void backward_fill(RefCall& c) {
  const GemmDescriptor& d = c.desc<GemmDescriptor>();
  if (d.activation == GemmActivation::kNone) return;
  give_random(c, c["a"]);
  give_random(c, c["b"]);
  // c and bias are no operands of the backward: Z as the backward's reference sees it (zeros)
  const std::vector<double> cv(d.has_c ? static_cast<size_t>(d.c.numel()) : 0, 0.0), bias(d.has_bias ? static_cast<size_t>(d.bias.numel()) : 0, 0.0);
  const ref::GemmForwardRef f = ref::gemm_forward(d, c["a"].in, c["b"].in, cv, bias);
  if (RefOperand* o = c.find("out")) o->in = f.out, o->given = true;
  if (RefOperand* p = c.find("preact")) p->in = f.preact, p->given = true;
}

Status backward(RefCall& c) {
  const GemmDescriptor& d = c.desc<GemmDescriptor>();
  static const std::vector<double> none;
  const std::vector<double>& a = c["a"].in;
  const std::vector<double>& b = c["b"].in;
  const std::vector<double>& g = c["d_out"].in;
  // c and bias enter the backward only through Z (an activation); the CI problems keep them apart
  const std::vector<double> cv(d.has_c ? static_cast<size_t>(d.c.numel()) : 0, 0.0), bias(d.has_bias ? static_cast<size_t>(d.bias.numel()) : 0, 0.0);
  const ref::GemmBackwardRef r = ref::gemm_backward(d, a, b, cv, bias, g);
  GemmDescriptor dabs = d;
  dabs.activation = GemmActivation::kNone, dabs.alpha = std::fabs(d.alpha), dabs.beta = std::fabs(d.beta), dabs.save_preactivation = false;
  std::vector<double> ag = abs_of(g);
  for (double& v : ag) v *= 1.13;  // |gelu'| <= 1.13
  const ref::GemmBackwardRef s = ref::gemm_backward(dabs, abs_of(a), abs_of(b), cv, bias, ag);
  const double len = static_cast<double>(std::max<int64_t>(1, d.out.numel()));
  const double eps_out = rounding_eps(d.out.dtype);
  auto put = [&](const char* name, const std::vector<double>& want, const std::vector<double>& mag) {
    RefOperand* o = c.find(name);
    if (!o) return;
    o->want = want;
    o->mag.resize(mag.size());
    o->extra.resize(mag.size());
    for (size_t i = 0; i < mag.size(); ++i) o->mag[i] = std::max(1.0, len / 32) * mag[i], o->extra[i] = 2 * eps_out * (std::fabs(want[i]) + mag[i]);
  };
  put("da", r.da, s.da);
  put("db", r.db, s.db);
  put("dbias", r.dbias, s.dbias);
  put("dc", r.dc, s.dc);
  return {};
}

Cost gemm_cost(const AnyPlan& p, const CaseOptions&) {
  const GemmDescriptor& d = *p.descriptor<GemmDescriptor>();
  Cost c;
  for (const OperandSpec& s : p.operands()) c.bytes += static_cast<double>(s.numel()) * static_cast<double>(dtype_size(s.dtype));
  const double mn = static_cast<double>(d.out.numel()), k = static_cast<double>(reduction_length(d));
  c.flops = (p.op().direction == Direction::kForward ? 2.0 : 4.0) * mn * k;
  return c;
}

// ---------------------------------------------------------------- bilinear

struct BilinearDims {
  int64_t B, I, J, O;
};
BilinearDims dims(const BilinearDescriptor& d) {
  const int r = d.x1.rank;
  return {r >= 1 ? d.x1.numel() / std::max<int64_t>(1, d.x1.shape[r - 1]) : 1, d.weight.shape[1], d.weight.shape[2], d.weight.shape[0]};
}

void put_scaled(RefOperand& o, const std::vector<double>& want, const std::vector<double>& sc, DType dt, double len) {
  // two roundings to the dtype (intermediate and out) plus the f32 sums
  o.want = want;
  o.mag.resize(sc.size());
  o.extra.resize(sc.size());
  const double eps = rounding_eps(dt);
  for (size_t i = 0; i < sc.size(); ++i) o.mag[i] = std::max(1.0, len / 32) * sc[i], o.extra[i] = eps * std::fabs(want[i]) + 4 * eps * sc[i];
}

Status bilinear_forward(RefCall& c) {
  const BilinearDescriptor& d = c.desc<BilinearDescriptor>();
  const auto [B, I, J, O] = dims(d);
  static const std::vector<double> none;
  const std::vector<double>& bias = in_or(c, "bias", none);
  const auto want = ref::bilinear_forward(B, I, J, O, c["x1"].in, c["x2"].in, c["weight"].in, bias);
  const auto sc = ref::bilinear_forward(B, I, J, O, abs_of(c["x1"].in), abs_of(c["x2"].in), abs_of(c["weight"].in), abs_of(bias));
  put_scaled(c["out"], want, sc, d.x1.dtype, static_cast<double>(I + J + O + B));
  return {};
}

Status bilinear_backward(RefCall& c) {
  const BilinearDescriptor& d = c.desc<BilinearDescriptor>();
  const auto [B, I, J, O] = dims(d);
  const auto g = ref::bilinear_backward(B, I, J, O, c["x1"].in, c["x2"].in, c["weight"].in, c["d_out"].in);
  const auto s = ref::bilinear_backward(B, I, J, O, abs_of(c["x1"].in), abs_of(c["x2"].in), abs_of(c["weight"].in), abs_of(c["d_out"].in));
  const double len = static_cast<double>(I + J + O + B);
  put_scaled(c["dx1"], g.dx1, s.dx1, d.x1.dtype, len);
  put_scaled(c["dx2"], g.dx2, s.dx2, d.x1.dtype, len);
  put_scaled(c["dweight"], g.dw, s.dw, d.x1.dtype, len);
  if (RefOperand* o = c.find("dbias")) put_scaled(*o, g.dbias, s.dbias, d.x1.dtype, len);
  return {};
}

Cost bilinear_cost(const AnyPlan& p, const CaseOptions&) {
  const auto [B, I, J, O] = dims(*p.descriptor<BilinearDescriptor>());
  Cost c;
  for (const OperandSpec& s : p.operands()) c.bytes += static_cast<double>(s.numel()) * static_cast<double>(dtype_size(s.dtype));
  const double fwd = 2.0 * static_cast<double>(B) * static_cast<double>(O) * (static_cast<double>(I) * J + J);
  c.flops = p.op().direction == Direction::kForward ? fwd : 4.0 * fwd;
  return c;
}

}  // namespace

OpRef ref_gemm() { return {&fp8_scales, &forward, &gemm_cost}; }
OpRef ref_gemm_backward() { return {&backward_fill, &backward, &gemm_cost}; }
OpRef ref_bilinear() { return {nullptr, &bilinear_forward, &bilinear_cost}; }
OpRef ref_bilinear_backward() { return {nullptr, &bilinear_backward, &bilinear_cost}; }

}  // namespace baracuda::harness
