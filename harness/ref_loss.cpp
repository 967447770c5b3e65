// Reference adapters of the loss rows: each sample (the class axis of the input) through
// reference/softmax_norm_loss_ref.cpp's class_loss_row / class_loss_backward_row. Inputs: class
// indices in [0, C) with some ignore_index and (data unset) a few out of range, class weights in
// [0.25, 2]; the backward's lse and total_weight computed from its input and targets. Error
// scales (64 accumulator epsilons of them): a sample's loss over its |terms| (|lse| + |x_c|
// weighted) times the sums' growth log2(C); the mean / sum over the samples' scales times
// log2(S); the backward per element over |g| times its |terms| and the exponent's |x - lse|.
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
  return d.target == LossTarget::kIndex ? std::optional<int64_t>(d.ignore_index) : std::nullopt;
}

// The targets (and, with `weight`, the weights): indices in [0, C), every 8th-ish sample
// ignore_index, with data unset 1 in 32 out of range; or probabilities in [0, 1).
void fill_targets(RefCall& c, const CrossEntropyDescriptor& d, const Samples& s) {
  RefOperand& t = c["target"];
  auto& rng = c.rng();
  if (d.target == LossTarget::kProbability) {
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
  if (d.target == LossTarget::kProbability) r.prob = gather_at(t, s.lines[i]);
  else r.t = static_cast<int64_t>(t[i]);
  return r;
}

// The |terms| of a sample's loss: Σ |q_c| (|x_c| + |lse|) over what it weighs.
double loss_scale(const CrossEntropyDescriptor& d, const SampleIn& in, const std::vector<double>& w, double lse) {
  const size_t C = in.x.size();
  const double al = std::isfinite(lse) ? std::fabs(lse) : 0.0;
  auto wa = [&](size_t k) { return w.empty() ? 1.0 : std::fabs(w[k]); };
  double m = 0;
  if (d.target == LossTarget::kProbability) {
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
  if (d.target == LossTarget::kProbability) give_random(t, 0.0, 1.0);
  const std::vector<double>& w = in_or_empty(c, "weight");
  RefOperand* lse = c.find("lse");
  if (lse) lse->in.assign(s.lines.size(), 0.0), lse->given = true;
  double wsum = 0;
  for (size_t i = 0; i < s.lines.size(); ++i) {
    SampleIn in;
    in.x = x ? gather_at(x->in, s.lines[i]) : std::vector<double>(static_cast<size_t>(s.C), 0.0);
    if (d.target == LossTarget::kProbability) in.prob = gather_at(t.in, s.lines[i]);
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
    if (d.target == LossTarget::kProbability) prob = gather_at(t.in, s.lines[i]);
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

}  // namespace

OpRef ref_cross_entropy() { return {&forward_fill, &forward, nullptr}; }
OpRef ref_cross_entropy_backward() { return {&backward_fill, &backward, nullptr}; }

}  // namespace baracuda::harness
