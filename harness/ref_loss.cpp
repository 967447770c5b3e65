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
#include <cmath>
#include <optional>
#include <random>

#include "baracuda/ops/loss.hpp"
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

}  // namespace

OpRef ref_cross_entropy() { return {&forward_fill, &forward, nullptr}; }
OpRef ref_cross_entropy_backward() { return {&backward_fill, &backward, nullptr}; }
OpRef ref_pointwise_loss() { return {&pw_fill, &pw_forward, nullptr}; }
OpRef ref_pointwise_loss_backward() { return {&pw_fill, &pw_backward, nullptr}; }

}  // namespace baracuda::harness
