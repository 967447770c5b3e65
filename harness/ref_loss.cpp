// Reference adapters of the loss rows. cross_entropy: each sample (the class axis of the input)
// through reference/softmax_norm_loss_ref.cpp's class_loss_row / class_loss_backward_row; inputs:
// class indices in [0, C) with some ignore_index and (data unset) a few out of range, class
// weights in [0.25, 2]; the backward's lse and total_weight computed from its input and targets.
// Error scales (64 accumulator epsilons of them): a sample's loss over its |terms| (|lse| + |x_c|
// weighted) times the sums' growth log2(C); the mean / sum over the samples' scales times
// log2(S); the backward per element over |g| times its |terms| and the exponent's |x - lse|.
// pointwise_loss: each element through pointwise_loss / pointwise_loss_grad, inputs in each op's
// domain; the scale is |value| plus its sensitivity to a relative change of each operand.
#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>
#include <random>

#include "baracuda/ops/fused_linear_cross_entropy.hpp"
#include "baracuda/ops/loss.hpp"
#include "baracuda/ops/row_loss.hpp"
#include "elementwise_ref.hpp"
#include "harness/op_case.hpp"
#include "harness/ref_common.hpp"
#include "softmax_norm_loss_ref.hpp"

namespace baracuda::harness {

namespace {

struct Samples {
  std::vector<std::vector<int64_t>> lines;  // each sample's flat input indices, class order
  int64_t C = 0;
};
Samples samples_of(const CrossEntropyDescriptor& d) {
  const int axis = d.rank == 1 ? 0 : 1;
  return {line_indices(std::span<const int64_t>(d.shape, static_cast<size_t>(d.rank)), axis), d.shape[axis]};
}

const std::vector<double>& in_or_empty(RefCall& c, const char* name) {
  static const std::vector<double> none;
  RefOperand* o = c.find(name);
  return o ? o->in : none;
}

std::optional<int64_t> ignore_of(const CrossEntropyDescriptor& d) {
  return d.target_kind == LossTarget::kIndex ? std::optional<int64_t>(d.ignore_index) : std::nullopt;
}

// The targets (and, with `weight`, the weights): indices in [0, C), every 8th-ish sample
// ignore_index, with data unset 1 in 32 out of range; or probabilities in [0, 1).
void fill_targets(RefCall& c, const CrossEntropyDescriptor& d, const Samples& s) {
  RefOperand& t = c["target"];
  auto& rng = c.rng();
  if (d.target_kind == LossTarget::kProbability) {
    t.lo = 0, t.hi = 1;
  } else {
    t.in.assign(s.lines.size(), 0.0);
    for (double& e : t.in) {
      e = s.C > 0 ? static_cast<double>(rng() % static_cast<uint64_t>(s.C)) : 0.0;
      if (rng() % 8 == 0) e = static_cast<double>(d.ignore_index);
      if (c.data().empty() && rng() % 32 == 0) e = rng() % 2 ? -1.0 - static_cast<double>(rng() % 3) : static_cast<double>(s.C);
      if (c.data().empty() && e == -1.0 && d.ignore_index == -1) e = -2.0;
    }
    t.given = true;
  }
  if (RefOperand* w = c.find("weight")) w->lo = 0.25, w->hi = 2.0;
}

void forward_fill(RefCall& c) {
  const CrossEntropyDescriptor& d = c.desc<CrossEntropyDescriptor>();
  fill_targets(c, d, samples_of(d));
}

// One sample's rows: scores, target index, probabilities.
struct SampleIn {
  std::vector<double> x, prob;
  int64_t t = 0;
};
SampleIn sample_in(RefCall& c, const CrossEntropyDescriptor& d, const Samples& s, size_t i) {
  SampleIn r;
  r.x = gather_at(c["input"].in, s.lines[i]);
  const std::vector<double>& t = c["target"].in;
  if (d.target_kind == LossTarget::kProbability) r.prob = gather_at(t, s.lines[i]);
  else r.t = static_cast<int64_t>(t[i]);
  return r;
}

// The |terms| of a sample's loss: Σ |q_c| (|x_c| + |lse|) over what it weighs.
double loss_scale(const CrossEntropyDescriptor& d, const SampleIn& in, const std::vector<double>& w, double lse) {
  const size_t C = in.x.size();
  const double al = std::isfinite(lse) ? std::fabs(lse) : 0.0;
  auto wa = [&](size_t k) { return w.empty() ? 1.0 : std::fabs(w[k]); };
  double m = 0;
  if (d.target_kind == LossTarget::kProbability) {
    for (size_t k = 0; k < C; ++k)
      m += wa(k) * std::fabs(in.prob[k] * (1 - d.label_smoothing) + d.label_smoothing / static_cast<double>(C)) * (std::fabs(in.x[k]) + al);
  } else if (in.t >= 0 && static_cast<size_t>(in.t) < C) {
    const size_t t = static_cast<size_t>(in.t);
    m = wa(t) * (std::fabs(in.x[t]) + al);
    if (d.label_smoothing > 0)
      for (size_t k = 0; k < C; ++k) m += d.label_smoothing / static_cast<double>(C) * wa(k) * (std::fabs(in.x[k]) + al);
  }
  return (m + 2 * d.z_loss * al * al) * (2 + std::log2(static_cast<double>(C) + 1));
}

Status forward(RefCall& c) {
  const CrossEntropyDescriptor& d = c.desc<CrossEntropyDescriptor>();
  const Samples s = samples_of(d);
  const std::vector<double>& w = in_or_empty(c, "weight");
  const bool nll = d.op == ClassLossKind::kNllLoss;
  RefOperand& loss = c["loss"];
  RefOperand* lse = c.find("lse");
  RefOperand* tw = c.find("total_weight");
  const size_t S = s.lines.size();
  const bool none = d.reduction == LossReduction::kNone;
  loss.want.assign(none ? S : 1, 0.0), loss.mag.assign(none ? S : 1, 0.0);
  if (lse) lse->want.assign(S, 0.0), lse->mag.assign(S, 0.0);
  double total = 0, wsum = 0, mags = 0, wabs = 0;
  for (size_t i = 0; i < S; ++i) {
    const SampleIn in = sample_in(c, d, s, i);
    const ref::ClassLossRow r = ref::class_loss_row(in.x, in.t, in.prob, w, ignore_of(d), d.label_smoothing, d.z_loss, nll);
    const double m = loss_scale(d, in, w, r.lse);
    if (none) loss.want[i] = r.loss, loss.mag[i] = m;
    total += r.loss, wsum += r.weight, mags += m, wabs += std::fabs(r.weight);
    if (lse) {
      double mx = 0;
      for (double v : in.x)
        if (std::isfinite(v)) mx = std::max(mx, std::fabs(v));
      lse->want[i] = r.lse, lse->mag[i] = (mx + 1) * (2 + std::log2(static_cast<double>(s.C) + 1));
    }
  }
  const double grow = 1 + std::log2(static_cast<double>(S) + 1);
  if (d.reduction == LossReduction::kSum) loss.want[0] = total, loss.mag[0] = mags * grow;
  if (d.reduction == LossReduction::kMean) {
    loss.want[0] = total / wsum;
    loss.mag[0] = (mags + std::fabs(total / wsum) * wabs) * grow / std::fabs(wsum);
  }
  if (tw) tw->want.assign(1, wsum), tw->mag.assign(1, wabs * grow);
  return {};
}

// The backward's inputs besides dloss: scores, targets, weights, and the forward's lse and
// total_weight of them, stored in their dtypes.
void backward_fill(RefCall& c) {
  const CrossEntropyDescriptor& d = c.desc<CrossEntropyDescriptor>();
  const Samples s = samples_of(d);
  fill_targets(c, d, s);
  const bool nll = d.op == ClassLossKind::kNllLoss;
  auto& rng = c.rng();
  auto give_random = [&](RefOperand& o, double lo, double hi) {
    std::uniform_real_distribution<double> u(lo, hi);
    o.in.resize(static_cast<size_t>(o.spec->numel()));
    for (double& v : o.in) v = ref::store_as(o.spec->dtype, u(rng));
    o.given = true;
  };
  RefOperand* x = c.find("input");
  if (x) give_random(*x, -4.0, 4.0);
  if (RefOperand* w = c.find("weight")) give_random(*w, 0.25, 2.0);
  RefOperand& t = c["target"];
  if (d.target_kind == LossTarget::kProbability) give_random(t, 0.0, 1.0);
  const std::vector<double>& w = in_or_empty(c, "weight");
  RefOperand* lse = c.find("lse");
  if (lse) lse->in.assign(s.lines.size(), 0.0), lse->given = true;
  double wsum = 0;
  for (size_t i = 0; i < s.lines.size(); ++i) {
    SampleIn in;
    in.x = x ? gather_at(x->in, s.lines[i]) : std::vector<double>(static_cast<size_t>(s.C), 0.0);
    if (d.target_kind == LossTarget::kProbability) in.prob = gather_at(t.in, s.lines[i]);
    else in.t = static_cast<int64_t>(t.in[i]);
    const ref::ClassLossRow r = ref::class_loss_row(in.x, in.t, in.prob, w, ignore_of(d), d.label_smoothing, d.z_loss, nll);
    wsum += r.weight;
    if (lse) lse->in[i] = ref::store_as(lse->spec->dtype, r.lse);
  }
  if (RefOperand* tw = c.find("total_weight")) tw->in.assign(1, ref::store_as(tw->spec->dtype, wsum)), tw->given = true;
}

Status backward(RefCall& c) {
  const CrossEntropyDescriptor& d = c.desc<CrossEntropyDescriptor>();
  const Samples s = samples_of(d);
  const bool nll = d.op == ClassLossKind::kNllLoss;
  const std::vector<double>& w = in_or_empty(c, "weight");
  const std::vector<double>& dloss = c["dloss"].in;
  RefOperand* x = c.find("input");
  RefOperand* lse = c.find("lse");
  RefOperand* tw = c.find("total_weight");
  RefOperand& t = c["target"];
  RefOperand& dx = c["dinput"];
  const size_t n = static_cast<size_t>(dx.spec->numel());
  dx.want.assign(n, 0.0), dx.mag.assign(n, 0.0);
  const double C = static_cast<double>(s.C), eps = d.label_smoothing, grow = 2 + std::log2(C + 1);
  double W = 0;
  for (int64_t k = 0; k < s.C; ++k) W += w.empty() ? 1.0 : std::fabs(w[static_cast<size_t>(k)]);
  for (size_t i = 0; i < s.lines.size(); ++i) {
    std::vector<double> xl = x ? gather_at(x->in, s.lines[i]) : std::vector<double>(static_cast<size_t>(s.C), 0.0);
    std::vector<double> prob;
    int64_t ti = 0;
    if (d.target_kind == LossTarget::kProbability) prob = gather_at(t.in, s.lines[i]);
    else ti = static_cast<int64_t>(t.in[i]);
    double g = d.reduction == LossReduction::kNone ? dloss[i] : dloss[0];
    if (d.reduction == LossReduction::kMean) g /= tw->in[0];
    std::vector<double> r = ref::class_loss_backward_row(xl, ti, prob, w, ignore_of(d), eps, d.z_loss, nll, g);
    const bool ignored = prob.empty() && ti == d.ignore_index;
    const double l = lse ? lse->in[i] : 0.0;
    const std::vector<double> p = nll ? std::vector<double>(xl.size(), 0.0) : ref::softmax_row(xl, false);
    double b = 0;  // Σ |q| of a probability target
    for (size_t k = 0; k < prob.size(); ++k) b += (w.empty() ? 1.0 : w[k]) * std::fabs(prob[k] * (1 - eps) + eps / C);
    const double wt = !prob.empty() || ignored || ti < 0 || ti >= s.C ? 1.0 : (w.empty() ? 1.0 : w[static_cast<size_t>(ti)]);
    for (size_t k = 0; k < xl.size(); ++k) {
      const size_t f = static_cast<size_t>(s.lines[i][k]);
      const double wk = w.empty() ? 1.0 : w[k];
      if (ignored && !nll) r[k] = 0.0 * p[k];  // (PyTorch: log_softmax's backward of a zero row: NaN where the row's softmax is)
      dx.want[f] = r[k];
      const double al = std::isfinite(l) ? std::fabs(l) : 0.0, ax = std::isfinite(xl[k]) ? std::fabs(xl[k]) : 0.0;
      const double pk = std::isfinite(p[k]) ? p[k] : 0.0;
      double a, hard;
      if (!prob.empty()) a = pk * (b + 2 * d.z_loss * al), hard = wk * std::fabs(prob[k] * (1 - eps) + eps / C);
      else a = pk * (wt * (1 - eps) + eps / C * W + 2 * d.z_loss * al), hard = (1 - eps) * wt + eps / C * wk;
      dx.mag[f] = std::fabs(g) * (a * (1 + ax + al) * grow + hard);
    }
  }
  return {};
}


// ---------------------------------------------------------------- pointwise losses

ref::PwOptions pw_options(const PointwiseLossDescriptor& d) {
  ref::PwOptions o;
  o.op = static_cast<ref::PwLoss>(static_cast<int>(d.op));
  o.beta = d.beta.value_or(1.0);
  o.delta = d.delta.value_or(1.0);
  o.margin = d.margin.value_or(d.op == PointwiseLossKind::kHingeEmbedding ? 1.0 : 0.0);
  o.eps = d.eps.value_or(d.op == PointwiseLossKind::kPoissonNll ? 1e-8 : 1e-6);
  o.log_input = d.log_input;
  o.full = d.full;
  o.log_target = d.log_target;
  return o;
}

// Each op's domain: probabilities for binary_cross_entropy, ±1 targets for the margin losses,
// positive var / rates, non-negative kl_div targets (with exact zeros).
void pw_fill(RefCall& c) {
  const PointwiseLossDescriptor& d = c.desc<PointwiseLossDescriptor>();
  using K = PointwiseLossKind;
  RefOperand& x = c["input"];
  RefOperand& y = c["target"];
  auto& rng = c.rng();
  auto signs = [&](RefOperand& o) {
    o.in.resize(static_cast<size_t>(o.spec->numel()));
    for (double& v : o.in) v = rng() % 2 ? 1.0 : -1.0;
    o.given = true;
  };
  switch (d.op) {
    case K::kBce: x.lo = 0.02, x.hi = 0.98, y.lo = 0, y.hi = 1; break;
    case K::kBceWithLogits: x.lo = -4, x.hi = 4, y.lo = 0, y.hi = 1; break;
    case K::kKlDiv:
      x.lo = -3, x.hi = 0;
      if (d.log_target) {
        y.lo = -3, y.hi = 0.5;
      } else {
        y.in.resize(static_cast<size_t>(y.spec->numel()));
        std::uniform_real_distribution<double> u(0.0, 1.0);
        for (double& v : y.in) v = rng() % 8 == 0 ? 0.0 : ref::store_as(d.dtype, u(rng));
        y.given = true;
      }
      break;
    case K::kPoissonNll:
      if (d.log_input) x.lo = -2, x.hi = 2;
      else x.lo = 0.1, x.hi = 3;
      y.lo = 0, y.hi = 4;
      break;
    case K::kGaussianNll: c["var"].lo = 0.1, c["var"].hi = 2; break;
    case K::kSoftMargin:
    case K::kHingeEmbedding:
    case K::kMarginRanking: signs(y); break;
    default: break;
  }
  if (RefOperand* w = c.find("weight")) w->lo = 0.25, w->hi = 2;
  if (RefOperand* pw = c.find("pos_weight")) pw->lo = 0.5, pw->hi = 3;
}

ref::PwElem pw_elem(RefCall& c, size_t i) {
  ref::PwElem e;
  auto at = [&](const char* name, double absent) {
    RefOperand* o = c.find(name);
    return o ? o->in[i] : absent;
  };
  e.x = at("input", 0), e.x2 = at("input2", 0), e.y = at("target", 0), e.v = at("var", 1), e.w = at("weight", 1), e.pw = at("pos_weight", 1);
  return e;
}

// |f(u (1 + h)) - f(u)| / h summed over the element's operands: the error a relative rounding of
// each operand (or of the intermediate built from it) moves f by.
template <class F>
double sensitivity(const ref::PwElem& e, F&& f) {
  constexpr double h = 1e-4;
  const double f0 = f(e);
  double s = 0;
  for (double ref::PwElem::*m : {&ref::PwElem::x, &ref::PwElem::x2, &ref::PwElem::y, &ref::PwElem::v, &ref::PwElem::w, &ref::PwElem::pw}) {
    ref::PwElem p = e;
    p.*m *= 1 + h;
    const double d = std::fabs(f(p) - f0) / h;
    if (std::isfinite(d)) s += d;
  }
  return s;
}

Status pw_forward(RefCall& c) {
  const PointwiseLossDescriptor& d = c.desc<PointwiseLossDescriptor>();
  const ref::PwOptions o = pw_options(d);
  RefOperand& loss = c["loss"];
  const size_t n = c["input"].in.size();
  const bool none = d.reduction == LossReduction::kNone;
  loss.want.assign(none ? n : 1, 0.0), loss.mag.assign(none ? n : 1, 0.0);
  double total = 0, mags = 0;
  for (size_t i = 0; i < n; ++i) {
    const ref::PwElem e = pw_elem(c, i);
    const double l = ref::pointwise_loss(o, e);
    const double m = 4 * (std::fabs(l) + sensitivity(e, [&](const ref::PwElem& p) { return ref::pointwise_loss(o, p); }));
    if (none) loss.want[i] = l, loss.mag[i] = m;
    total += l, mags += m;
  }
  if (!none) {
    double div = 1;
    if (d.reduction == LossReduction::kMean) div = static_cast<double>(n);
    if (d.reduction == LossReduction::kBatchMean) div = d.rank > 0 ? static_cast<double>(d.shape[0]) : 1.0;
    loss.want[0] = total / div;
    loss.mag[0] = mags * (2 + std::log2(static_cast<double>(n) + 1)) / std::fabs(div);
  }
  return {};
}

Status pw_backward(RefCall& c) {
  const PointwiseLossDescriptor& d = c.desc<PointwiseLossDescriptor>();
  const ref::PwOptions o = pw_options(d);
  const size_t n = c["input"].in.size();
  const std::vector<double>& dl = c["dloss"].in;
  double div = 1;
  if (d.reduction == LossReduction::kMean) div = static_cast<double>(n);
  if (d.reduction == LossReduction::kBatchMean) div = d.rank > 0 ? static_cast<double>(d.shape[0]) : 1.0;
  struct Out {
    RefOperand* op;
    double ref::PwGrad::*m;
  };
  const Out outs[] = {{c.find("dinput"), &ref::PwGrad::dx}, {c.find("dinput2"), &ref::PwGrad::dx2}, {c.find("dtarget"), &ref::PwGrad::dy},
                      {c.find("dvar"), &ref::PwGrad::dv}};
  for (const Out& out : outs)
    if (out.op) out.op->want.assign(n, 0.0), out.op->mag.assign(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    const ref::PwElem e = pw_elem(c, i);
    const double g = (d.reduction == LossReduction::kNone ? dl[i] : dl[0]) / div;
    const ref::PwGrad r = ref::pointwise_loss_grad(o, e);
    for (const Out& out : outs) {
      if (!out.op) continue;
      out.op->want[i] = g * (r.*(out.m));
      const double sens = sensitivity(e, [&](const ref::PwElem& p) { return ref::pointwise_loss_grad(o, p).*(out.m); });
      out.op->mag[i] = 4 * std::fabs(g) * (std::fabs(r.*(out.m)) + sens);
    }
  }
  return {};
}

// ---------------------------------------------------------------- fused linear cross entropy
// z = input @ weightᵀ + bias in float64, then class_loss_row / class_loss_backward_row per token,
// dz through the two products. Error scales: each logit is stored in dtype (e_c = 2·eps_d·Σ|x||w|
// plus the GEMM's accumulation), which moves a token's loss by Σ_c |∂l/∂z_c|·e_c and each dz_c by
// |g|·coef·p_c·(e_c + Σ_k p_k e_k), plus dz's own rounding to dtype; the products carry those
// through |weight| / |input| (twice: the bounds are first order), and dweight / dbias one
// rounding to dtype per chunk.
void flce_fill(RefCall& c) {
  const FusedLinearCrossEntropyDescriptor& d = c.desc<FusedLinearCrossEntropyDescriptor>();
  const int64_t S = d.input.shape[0], V = d.weight.shape[0];
  c["input"].lo = -1, c["input"].hi = 1;
  c["weight"].lo = -0.5, c["weight"].hi = 0.5;
  if (RefOperand* b = c.find("bias")) b->lo = -1, b->hi = 1;
  if (RefOperand* w = c.find("ce_weight")) w->lo = 0.25, w->hi = 2.0;
  RefOperand& t = c["target"];
  t.in.assign(static_cast<size_t>(S), 0.0);
  for (double& e : t.in) {  // (no out-of-range target: its NaN row would fill dweight with NaN)
    e = V > 0 ? static_cast<double>(c.rng()() % static_cast<uint64_t>(V)) : 0.0;
    if (c.rng()() % 8 == 0) e = static_cast<double>(d.ignore_index);
  }
  t.given = true;
}

// The chunks the plan runs (fused_linear_cross_entropy.cpp's choice: the caller's chunk, or the
// largest power of two whose logits fit 256 MiB).
int64_t flce_chunks(const FusedLinearCrossEntropyDescriptor& d) {
  const int64_t S = d.input.shape[0], V = std::max<int64_t>(1, d.weight.shape[0]);
  int64_t chunk = d.chunk_tokens;
  if (chunk == 0) {
    chunk = std::max<int64_t>(1, (int64_t{256} << 20) / (V * static_cast<int64_t>(dtype_size(d.input.dtype))));
    chunk = int64_t{1} << (63 - std::countl_zero(static_cast<uint64_t>(chunk)));
  }
  return S == 0 ? 0 : (S + chunk - 1) / chunk;
}

Status flce_forward(RefCall& c) {
  const FusedLinearCrossEntropyDescriptor& d = c.desc<FusedLinearCrossEntropyDescriptor>();
  const int64_t S = d.input.shape[0], H = d.input.shape[1], V = d.weight.shape[0];
  const size_t nS = static_cast<size_t>(S), nH = static_cast<size_t>(H), nV = static_cast<size_t>(V);
  const DType dt = d.input.dtype;
  const double ed = rounding_eps(dt), ea = accumulator_eps(dt == DType::f64 ? DType::f64 : DType::f32);
  const std::vector<double>& x = c["input"].in;
  const std::vector<double>& W = c["weight"].in;
  const std::vector<double>& b = in_or_empty(c, "bias");
  const std::vector<double>& cw = in_or_empty(c, "ce_weight");
  const std::vector<double>& t = c["target"].in;
  const bool mean = d.reduction == LossReduction::kMean;
  const ref::FlceResult r = ref::fused_linear_cross_entropy(x, W, b, t, cw, S, H, V, d.ignore_index, d.label_smoothing, d.z_loss, mean);
  auto row = [&](const std::vector<double>& v, size_t i) {
    return std::vector<double>(v.begin() + static_cast<ptrdiff_t>(i * nV), v.begin() + static_cast<ptrdiff_t>((i + 1) * nV));
  };
  // each logit's storage error e (its |terms| Σ|x||w| + |b|)
  std::vector<double> e(nS * nV);
  for (size_t i = 0; i < nS; ++i)
    for (size_t k = 0; k < nV; ++k) {
      double a = b.empty() ? 0.0 : std::fabs(b[k]);
      for (size_t h = 0; h < nH; ++h) a += std::fabs(x[i * nH + h] * W[k * nH + h]);
      e[i * nV + k] = (2 * ed + 2 * static_cast<double>(H + 1) * ea) * a;
    }
  const double g = mean ? (r.total_weight != 0 ? 1.0 / r.total_weight : 0.0) : 1.0;
  double W_all = 0;
  for (size_t k = 0; k < nV; ++k) W_all += cw.empty() ? 1.0 : std::fabs(cw[k]);
  CrossEntropyDescriptor ced;
  ced.label_smoothing = d.label_smoothing, ced.z_loss = d.z_loss;
  std::vector<double> q(nS * nV, 0.0);  // dz's error bound
  double mags = 0, lerr = 0, wabs = 0;
  RefOperand* lse = c.find("lse");
  if (lse) lse->want = r.lse, lse->mag.assign(nS, 0.0), lse->extra.assign(nS, 0.0);
  for (size_t i = 0; i < nS; ++i) {
    const std::vector<double> zs = row(r.z, i);
    const int64_t ti = static_cast<int64_t>(t[i]);
    const bool kept = ti != d.ignore_index;
    const double wt = kept ? (cw.empty() ? 1.0 : std::fabs(cw[static_cast<size_t>(ti)])) : 0.0;
    const std::vector<double> p = ref::softmax_row(zs, false);
    const double al = std::fabs(r.lse[i]);
    double ebar = 0, zmax = 0, sens = 0;
    for (size_t k = 0; k < nV; ++k)  // (g != 0: dz / g is the token's d l / d z)
      ebar += p[k] * e[i * nV + k], zmax = std::max(zmax, std::fabs(zs[k])),
          sens += (g != 0 ? std::fabs(r.dz[i * nV + k] / g) : 0.0) * e[i * nV + k];
    const double coef = kept ? (1 - d.label_smoothing) * wt + d.label_smoothing / static_cast<double>(V) * W_all + 2 * d.z_loss * al : 0.0;
    for (size_t k = 0; k < nV; ++k)
      q[i * nV + k] = std::fabs(g) * coef * p[k] * (e[i * nV + k] + ebar + 4 * ea * (std::fabs(zs[k]) + al + 1)) + ed * std::fabs(r.dz[i * nV + k]);
    SampleIn in;
    in.x = zs, in.t = kept ? ti : -1;
    mags += loss_scale(ced, in, cw, r.lse[i]), lerr += sens, wabs += wt;
    if (lse) lse->mag[i] = (zmax + 1) * (2 + std::log2(static_cast<double>(V) + 1)), lse->extra[i] = 2 * ebar;
  }
  const double grow = 1 + std::log2(static_cast<double>(S) + 1), tw = r.total_weight;
  RefOperand& loss = c["loss"];
  loss.want.assign(1, r.loss);
  loss.mag.assign(1, mean ? (mags + std::fabs(r.loss) * wabs) * grow / std::fabs(tw) : mags * grow);
  loss.extra.assign(1, 2 * lerr * (mean ? 1 / std::fabs(tw) : 1.0));
  if (RefOperand* o = c.find("total_weight")) o->want.assign(1, tw), o->mag.assign(1, wabs * grow);
  if (!d.compute_grad) return {};
  const double chunks = static_cast<double>(flce_chunks(d));
  RefOperand& dx = c["dinput"];
  dx.want = r.dx, dx.mag.assign(nS * nH, 0.0), dx.extra.assign(nS * nH, 0.0);
  for (size_t i = 0; i < nS; ++i)
    for (size_t h = 0; h < nH; ++h) {
      double a = 0, er = 0;
      for (size_t k = 0; k < nV; ++k) a += std::fabs(r.dz[i * nV + k] * W[k * nH + h]), er += q[i * nV + k] * std::fabs(W[k * nH + h]);
      dx.mag[i * nH + h] = std::max(1.0, static_cast<double>(V) / 32) * a, dx.extra[i * nH + h] = 2 * er;
    }
  RefOperand& dw = c["dweight"];
  RefOperand* db = c.find("dbias");
  dw.want = r.dW, dw.mag.assign(nV * nH, 0.0), dw.extra.assign(nV * nH, 0.0);
  if (db) db->want = r.db, db->mag.assign(nV, 0.0), db->extra.assign(nV, 0.0);
  const double kmag = std::max(1.0, static_cast<double>(S) / 32);
  for (size_t k = 0; k < nV; ++k) {
    for (size_t h = 0; h < nH; ++h) {
      double a = 0, er = 0;
      for (size_t i = 0; i < nS; ++i) a += std::fabs(r.dz[i * nV + k] * x[i * nH + h]), er += q[i * nV + k] * std::fabs(x[i * nH + h]);
      dw.mag[k * nH + h] = kmag * a, dw.extra[k * nH + h] = 2 * er + chunks * ed * a;
    }
    if (db) {
      double a = 0, er = 0;
      for (size_t i = 0; i < nS; ++i) a += std::fabs(r.dz[i * nV + k]), er += q[i * nV + k];
      db->mag[k] = kmag * a, db->extra[k] = 2 * er + chunks * ed * a;
    }
  }
  return {};
}

// The backward scales the forward's gradients (in-out) by dloss.
Status flce_backward(RefCall& c) {
  const double g = c["dloss"].in[0];
  for (const char* name : {"dinput", "dweight", "dbias"}) {
    RefOperand* o = c.find(name);
    if (!o) continue;
    o->want.resize(o->in.size());
    for (size_t i = 0; i < o->in.size(); ++i) o->want[i] = g * o->in[i];
  }
  return {};
}

Cost flce_cost(const AnyPlan& p, const CaseOptions&) {
  Cost c;
  for (const OperandSpec& s : p.operands()) c.bytes += static_cast<double>(s.numel()) * static_cast<double>(dtype_size(s.dtype));
  if (p.op().direction == Direction::kForward) {
    const FusedLinearCrossEntropyDescriptor& d = *p.descriptor<FusedLinearCrossEntropyDescriptor>();
    c.flops = (d.compute_grad ? 6.0 : 2.0) * static_cast<double>(d.input.shape[0]) * static_cast<double>(d.weight.shape[0]) *
              static_cast<double>(d.input.shape[1]);
  }
  return c;
}

// ---------------------------------------------------------------- row losses
// Each sample through row_loss / row_loss_grad. Error scales: the row sums' |terms| (multilabel:
// w (|y| softplus(-x) + |1 - y| softplus(x) + |x|) / D; cosine: Σ |x x2| / denom + 2 |cos|;
// triplet: each distance plus Σ |d n / d u| (|a| + |b|), u = a - b + eps rounded) times the
// growth 4 + log2(D); the gradients' |terms| likewise, plus the error of the shared cos / n.
const char* const kRowNames[3][3] = {{"input", nullptr, nullptr}, {"input1", "input2", nullptr}, {"anchor", "positive", "negative"}};
const char* const kRowGrads[3][3] = {{"dinput", nullptr, nullptr}, {"dinput1", "dinput2", nullptr}, {"danchor", "dpositive", "dnegative"}};

ref::RowLossOptions row_options(const RowLossDescriptor& d) {
  ref::RowLossOptions o;
  o.op = static_cast<int>(d.op);
  o.margin = d.margin ? *d.margin : d.op == RowLossKind::kTripletMargin ? 1.0 : 0.0;
  o.p = d.p, o.eps = d.eps, o.swap = d.swap;
  return o;
}

void row_fill(RefCall& c) {
  const RowLossDescriptor& d = c.desc<RowLossDescriptor>();
  RefOperand* t = c.find("target");
  if (RefOperand* w = c.find("weight")) w->lo = 0.25, w->hi = 2.0;
  if (!t) return;
  t->in.resize(static_cast<size_t>(t->spec->numel()));
  for (double& v : t->in) {
    const uint64_t r = c.rng()() % 16;
    v = d.op == RowLossKind::kMultilabelSoftMargin ? static_cast<double>(r % 2) : r == 0 ? 0.0 : r % 2 ? 1.0 : -1.0;
  }
  t->given = true;
}

struct RowSample {
  std::vector<double> x[3], y;
};
RowSample row_sample(RefCall& c, const RowLossDescriptor& d, int64_t n) {
  const int64_t D = d.shape[d.rank - 1];
  auto slice = [&](const std::vector<double>& v) {
    return std::vector<double>(v.begin() + static_cast<ptrdiff_t>(n * D), v.begin() + static_cast<ptrdiff_t>((n + 1) * D));
  };
  RowSample r;
  const int op = static_cast<int>(d.op);
  for (int i = 0; i < 3; ++i)
    if (kRowNames[op][i]) r.x[i] = slice(c[kRowNames[op][i]].in);
  if (d.op == RowLossKind::kMultilabelSoftMargin) r.y = slice(c["target"].in);
  if (d.op == RowLossKind::kCosineEmbedding) r.y = {c["target"].in[static_cast<size_t>(n)]};
  return r;
}

// A sample's loss scale and, for the gradients, each row element's.
struct RowScale {
  double loss = 0;
  std::vector<double> elem[3];
};
RowScale row_scale(const RowLossDescriptor& d, const ref::RowLossOptions& o, const RowSample& s, const std::vector<double>& w) {
  const size_t D = s.x[0].size();
  const double grow = 4 + std::log2(static_cast<double>(D) + 1);
  RowScale r;
  for (auto& e : r.elem) e.assign(D, 0.0);
  if (d.op == RowLossKind::kMultilabelSoftMargin) {
    for (size_t i = 0; i < D; ++i) {
      const double wi = w.empty() ? 1.0 : std::fabs(w[i]), x = s.x[0][i], y = s.y[i];
      r.loss += wi * (std::fabs(y) * std::log1p(std::exp(-x)) + std::fabs(1 - y) * std::log1p(std::exp(x)) + std::fabs(x));
      r.elem[0][i] = 4 * wi * (1 + std::fabs(y) + std::fabs(x)) / static_cast<double>(D);
    }
    r.loss *= grow / static_cast<double>(D);
    return r;
  }
  if (d.op == RowLossKind::kCosineEmbedding) {
    double a = 0, b = 0, c = 0;
    for (size_t i = 0; i < D; ++i) a += std::fabs(s.x[0][i] * s.x[1][i]), b += s.x[0][i] * s.x[0][i], c += s.x[1][i] * s.x[1][i];
    const double m1 = b + 1e-12, m2 = c + 1e-12, denom = std::sqrt(m1 * m2);
    double dot = 0;
    for (size_t i = 0; i < D; ++i) dot += s.x[0][i] * s.x[1][i];
    const double cs = std::fabs(dot / denom), mc = (a / denom + 2 * cs + 1) * grow;
    r.loss = mc;
    for (size_t i = 0; i < D; ++i) {
      const double x = std::fabs(s.x[0][i]), x2 = std::fabs(s.x[1][i]);
      r.elem[0][i] = (x2 / denom + cs * x / m1) * grow + mc * x / m1;
      r.elem[1][i] = (x / denom + cs * x2 / m2) * grow + mc * x2 / m2;
    }
    return r;
  }
  const double pf = 1 + std::fabs(o.p - 1);
  auto dist = [&](int ia, int ib, double sign_a, double sign_b) {  // one distance's scale and its elements'
    std::vector<double> u(D);
    for (size_t i = 0; i < D; ++i) u[i] = s.x[ia][i] - s.x[ib][i] + o.eps;
    const double n = ref::vector_norm(u, o.p);
    double md = n;
    for (size_t i = 0; i < D; ++i) {
      const double gi = n == 0 ? 0.0 : std::pow(std::fabs(u[i]) / n, o.p - 1);
      md += gi * (std::fabs(s.x[ia][i]) + std::fabs(s.x[ib][i]));
    }
    md *= grow * pf;
    for (size_t i = 0; i < D; ++i) {
      const double e = n == 0 ? 0.0 : ((std::fabs(s.x[ia][i]) + std::fabs(s.x[ib][i]) + std::fabs(u[i])) / n + std::fabs(u[i]) * md / (n * n)) * 4 * pf;
      r.elem[ia][i] += sign_a * e, r.elem[ib][i] += sign_b * e;
    }
    r.loss += md;
  };
  dist(0, 1, 1, 1);
  dist(0, 2, 1, 1);
  if (o.swap) dist(1, 2, 1, 1);
  r.loss += std::fabs(o.margin);
  return r;
}

Status row_forward(RefCall& c) {
  const RowLossDescriptor& d = c.desc<RowLossDescriptor>();
  const ref::RowLossOptions o = row_options(d);
  const int64_t N = d.rank == 2 ? d.shape[0] : 1;
  const std::vector<double>& w = in_or_empty(c, "weight");
  RefOperand& loss = c["loss"];
  const bool none = d.reduction == LossReduction::kNone;
  loss.want.assign(none ? static_cast<size_t>(N) : 1, 0.0), loss.mag.assign(loss.want.size(), 0.0);
  double total = 0, mags = 0;
  for (int64_t n = 0; n < N; ++n) {
    const RowSample s = row_sample(c, d, n);
    const double l = ref::row_loss(o, s.x[0], s.x[1], s.x[2], s.y, w), m = row_scale(d, o, s, w).loss;
    if (none) loss.want[static_cast<size_t>(n)] = l, loss.mag[static_cast<size_t>(n)] = m;
    total += l, mags += m;
  }
  if (!none) {
    const double div = d.reduction == LossReduction::kMean ? static_cast<double>(N) : 1.0;
    loss.want[0] = total / div, loss.mag[0] = mags * (2 + std::log2(static_cast<double>(N) + 1)) / div;
  }
  return {};
}

Status row_backward(RefCall& c) {
  const RowLossDescriptor& d = c.desc<RowLossDescriptor>();
  const ref::RowLossOptions o = row_options(d);
  const int op = static_cast<int>(d.op);
  const int64_t N = d.rank == 2 ? d.shape[0] : 1, D = d.shape[d.rank - 1];
  const std::vector<double>& w = in_or_empty(c, "weight");
  const std::vector<double>& dl = c["dloss"].in;
  RefOperand* outs[4] = {c.find(kRowGrads[op][0] ? kRowGrads[op][0] : "-"), kRowGrads[op][1] ? c.find(kRowGrads[op][1]) : nullptr,
                         kRowGrads[op][2] ? c.find(kRowGrads[op][2]) : nullptr, c.find("dtarget")};
  for (RefOperand* r : outs)
    if (r) r->want.assign(static_cast<size_t>(N * D), 0.0), r->mag.assign(static_cast<size_t>(N * D), 0.0);
  for (int64_t n = 0; n < N; ++n) {
    const RowSample s = row_sample(c, d, n);
    double g = d.reduction == LossReduction::kNone ? dl[static_cast<size_t>(n)] : dl[0];
    if (d.reduction == LossReduction::kMean) g /= static_cast<double>(N);
    const ref::RowLossGrad r = ref::row_loss_grad(o, s.x[0], s.x[1], s.x[2], s.y, w, g);
    const RowScale sc = row_scale(d, o, s, w);
    const std::vector<double>* got[4] = {&r.dx, &r.dx2, &r.dx3, &r.dy};
    for (int k = 0; k < 4; ++k) {
      if (!outs[k]) continue;
      for (int64_t i = 0; i < D; ++i) {
        const size_t f = static_cast<size_t>(n * D + i);
        outs[k]->want[f] = (*got[k])[static_cast<size_t>(i)];
        outs[k]->mag[f] = std::fabs(g) * (k < 3 ? sc.elem[k][static_cast<size_t>(i)] : 4 * (w.empty() ? 1.0 : std::fabs(w[static_cast<size_t>(i)])) *
                                                                                                std::fabs(s.x[0][static_cast<size_t>(i)]) /
                                                                                                static_cast<double>(D));
      }
    }
  }
  return {};
}

}  // namespace

OpRef ref_row_loss() { return {&row_fill, &row_forward, nullptr}; }
OpRef ref_row_loss_backward() { return {&row_fill, &row_backward, nullptr}; }
OpRef ref_fused_linear_cross_entropy() { return {&flce_fill, &flce_forward, &flce_cost}; }
OpRef ref_fused_linear_cross_entropy_backward() { return {nullptr, &flce_backward, nullptr}; }
OpRef ref_cross_entropy() { return {&forward_fill, &forward, nullptr}; }
OpRef ref_cross_entropy_backward() { return {&backward_fill, &backward, nullptr}; }
OpRef ref_pointwise_loss() { return {&pw_fill, &pw_forward, nullptr}; }
OpRef ref_pointwise_loss_backward() { return {&pw_fill, &pw_backward, nullptr}; }

}  // namespace baracuda::harness
