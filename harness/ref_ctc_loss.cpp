// Reference adapters of the ctc_loss rows: each sample through reference/softmax_norm_loss_ref.cpp's
// ctc_loss_sample. Inputs: log_probs in [-5, -0.05]; input lengths in [1, T] (sample 0 and data
// "full": T); target lengths at most half the sample's input length (an alignment exists; data
// "full": min(S, T / 2), every sample), labels in [0, C)
// but blank; with zero_infinity, the last sample's two labels have one step (inf, zeroed).
// Error scales (64 accumulator epsilons of them): a sample's loss over Σ_t (max |lp_t| + 2) (the
// recursion adds one step's terms per t) times 4 + sqrt(T) (the sequential steps' rounding walk);
// mean / sum over the samples' scales; the gradient over |g| (exp lp + E · (1 + the loss's scale)),
// E = exp(lcab + nll - lp) the term the loss's error multiplies.
#include <algorithm>
#include <cmath>

#include "baracuda/ops/ctc_loss.hpp"
#include "harness/op_case.hpp"
#include "harness/ref_common.hpp"
#include "softmax_norm_loss_ref.hpp"

namespace baracuda::harness {

namespace {

void ctc_fill(RefCall& c) {
  const CtcLossDescriptor& d = c.desc<CtcLossDescriptor>();
  auto& rng = c.rng();
  c["log_probs"].lo = -5, c["log_probs"].hi = -0.05;
  RefOperand& il = c["input_lengths"];
  RefOperand& tl = c["target_lengths"];
  RefOperand& tg = c["targets"];
  il.in.assign(static_cast<size_t>(d.N), 0.0), tl.in.assign(static_cast<size_t>(d.N), 0.0);
  int64_t budget = d.concatenated ? d.total_target_length : INT64_MAX;
  for (int64_t n = 0; n < d.N; ++n) {
    const bool impossible = d.zero_infinity && n == d.N - 1 && n > 0 && d.T >= 1 && d.max_target_length >= 2;
    const int64_t Tn = impossible ? 1 : n == 0 || d.T <= 1 || c.data() == "full" ? d.T : 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(d.T));
    int64_t L = impossible ? 2 : std::min(d.max_target_length, Tn / 2);
    if (n > 0 && L > 0 && !impossible && c.data() != "full") L = static_cast<int64_t>(rng() % static_cast<uint64_t>(L + 1));
    L = std::min(L, budget);
    budget -= L;
    il.in[static_cast<size_t>(n)] = static_cast<double>(Tn), tl.in[static_cast<size_t>(n)] = static_cast<double>(L);
  }
  tg.in.resize(static_cast<size_t>(tg.spec->numel()));
  for (double& v : tg.in) {
    int64_t l = static_cast<int64_t>(rng() % static_cast<uint64_t>(std::max<int64_t>(d.C - 1, 1)));
    if (d.C > 1 && l >= d.blank) ++l;  // every class but blank
    v = static_cast<double>(l);
  }
  il.given = tl.given = tg.given = true;
}

struct Sample {
  ref::CtcSample r;
  std::vector<std::vector<double>> lp;
  int64_t Tn = 0, L = 0;
  double mag = 0;
};

std::vector<Sample> samples(RefCall& c) {
  const CtcLossDescriptor& d = c.desc<CtcLossDescriptor>();
  const std::vector<double>& lp = c["log_probs"].in;
  const std::vector<double>& tg = c["targets"].in;
  std::vector<Sample> out(static_cast<size_t>(d.N));
  int64_t off = 0;
  for (int64_t n = 0; n < d.N; ++n) {
    Sample& s = out[static_cast<size_t>(n)];
    s.Tn = static_cast<int64_t>(c["input_lengths"].in[static_cast<size_t>(n)]);
    s.L = static_cast<int64_t>(c["target_lengths"].in[static_cast<size_t>(n)]);
    std::vector<int64_t> target;
    for (int64_t k = 0; k < s.L; ++k)
      target.push_back(static_cast<int64_t>(tg[static_cast<size_t>(d.concatenated ? off + k : n * d.max_target_length + k)]));
    off += s.L;
    s.lp.assign(static_cast<size_t>(d.T), std::vector<double>(static_cast<size_t>(d.C)));
    for (int64_t t = 0; t < d.T; ++t)
      for (int64_t k = 0; k < d.C; ++k) s.lp[static_cast<size_t>(t)][static_cast<size_t>(k)] = lp[static_cast<size_t>((t * d.N + n) * d.C + k)];
    s.r = ref::ctc_loss_sample(s.lp, s.Tn, target, d.blank);
    double sum = 0;
    for (int64_t t = 0; t < s.Tn; ++t) {
      double m = 0;
      for (double v : s.lp[static_cast<size_t>(t)]) m = std::max(m, std::fabs(v));
      sum += m + 2;
    }
    s.mag = sum * (4 + std::sqrt(static_cast<double>(s.Tn)));
  }
  return out;
}

double loss_of(const CtcLossDescriptor& d, const Sample& s) { return d.zero_infinity && s.r.nll == INFINITY ? 0.0 : s.r.nll; }

Status ctc_forward(RefCall& c) {
  const CtcLossDescriptor& d = c.desc<CtcLossDescriptor>();
  const std::vector<Sample> ss = samples(c);
  RefOperand& loss = c["loss"];
  const bool none = d.reduction == LossReduction::kNone;
  loss.want.assign(none ? ss.size() : 1, 0.0), loss.mag.assign(loss.want.size(), 0.0);
  double total = 0, mags = 0;
  for (size_t n = 0; n < ss.size(); ++n) {
    const double l = loss_of(d, ss[n]);
    const double div = d.reduction == LossReduction::kMean ? static_cast<double>(std::max<int64_t>(ss[n].L, 1)) : 1.0;
    if (none) loss.want[n] = l, loss.mag[n] = ss[n].mag;
    total += l / div, mags += ss[n].mag / div;
  }
  if (!none) {
    const double div = d.reduction == LossReduction::kMean ? static_cast<double>(d.N) : 1.0;
    loss.want[0] = total / div, loss.mag[0] = mags * (2 + std::log2(static_cast<double>(d.N) + 1)) / div;
  }
  return {};
}

Status ctc_backward(RefCall& c) {
  const CtcLossDescriptor& d = c.desc<CtcLossDescriptor>();
  const std::vector<Sample> ss = samples(c);
  const std::vector<double>& dl = c["dloss"].in;
  RefOperand& g = c["dlog_probs"];
  g.want.assign(static_cast<size_t>(d.T * d.N * d.C), 0.0), g.mag.assign(g.want.size(), 0.0);
  for (int64_t n = 0; n < d.N; ++n) {
    const Sample& s = ss[static_cast<size_t>(n)];
    if (d.zero_infinity && s.r.nll == INFINITY) continue;
    double gr = d.reduction == LossReduction::kNone ? dl[static_cast<size_t>(n)] : dl[0];
    if (d.reduction == LossReduction::kMean) gr /= static_cast<double>(std::max<int64_t>(s.L, 1)) * static_cast<double>(d.N);
    for (int64_t t = 0; t < s.Tn; ++t)
      for (int64_t k = 0; k < d.C; ++k) {
        const size_t f = static_cast<size_t>((t * d.N + n) * d.C + k);
        const double v = s.r.grad[static_cast<size_t>(t)][static_cast<size_t>(k)], e = std::exp(s.lp[static_cast<size_t>(t)][static_cast<size_t>(k)]);
        g.want[f] = v * gr;
        g.mag[f] = std::fabs(gr) * (e + std::fabs(e - v) * (1 + s.mag));
      }
  }
  return {};
}

}  // namespace

OpRef ref_ctc_loss() { return {&ctc_fill, &ctc_forward, nullptr}; }
OpRef ref_ctc_loss_backward() { return {&ctc_fill, &ctc_backward, nullptr}; }

}  // namespace baracuda::harness
