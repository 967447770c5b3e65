// Reference adapters of the channel_norm rows (batch / group / instance norm) through
// reference/softmax_norm_loss_ref.cpp's channel_norm / channel_norm_backward. Error scales (64
// accumulator epsilons of them): the statistics' sums grow as log2(M) over their |terms| (y,
// mean, rstd, the running stats; the backward's dx), dweight / dbias as log2(N·S). The running
// variance is filled positive; the backward's mean / rstd are the forward's statistics of its x.
#include <cmath>
#include <random>

#include "baracuda/ops/channel_norm.hpp"
#include "elementwise_ref.hpp"
#include "harness/op_case.hpp"
#include "harness/ref_common.hpp"
#include "softmax_norm_loss_ref.hpp"

namespace baracuda::harness {

namespace {

struct Dims {
  int64_t N = 0, C = 0, S = 1, G = 1;
  ref::ChannelStats kind = ref::ChannelStats::kBatch;
  int64_t stats = 0, per = 1;  // statistics, elements per statistic (M)
};
Dims dims_of(const ChannelNormDescriptor& d) {
  Dims m;
  m.N = d.shape[0], m.C = d.shape[1];
  for (int a = 2; a < d.rank; ++a) m.S *= d.shape[a];
  m.kind = d.op == ChannelNormKind::kBatchNorm ? ref::ChannelStats::kBatch
           : d.op == ChannelNormKind::kGroupNorm ? ref::ChannelStats::kGroup
                                                 : ref::ChannelStats::kInstance;
  m.G = d.op == ChannelNormKind::kGroupNorm ? d.groups : 1;
  m.stats = m.kind == ref::ChannelStats::kBatch ? m.C : m.kind == ref::ChannelStats::kGroup ? m.N * m.G : m.N * m.C;
  m.per = m.kind == ref::ChannelStats::kBatch ? m.N * m.S : m.kind == ref::ChannelStats::kGroup ? m.C / m.G * m.S : m.S;
  return m;
}

const std::vector<double>& in_or_empty(RefCall& c, const char* name) {
  static const std::vector<double> none;
  RefOperand* o = c.find(name);
  return o ? o->in : none;
}

void forward_fill(RefCall& c) {
  if (RefOperand* rv = c.find("running_var")) rv->lo = 0.25, rv->hi = 2.0;
}

Status forward(RefCall& c) {
  const ChannelNormDescriptor& d = c.desc<ChannelNormDescriptor>();
  const Dims m = dims_of(d);
  const std::vector<double>& x = c["x"].in;
  const std::vector<double>& w = in_or_empty(c, "weight");
  const std::vector<double>& b = in_or_empty(c, "bias");
  const std::vector<double>& rm = in_or_empty(c, "running_mean");
  const std::vector<double>& rv = in_or_empty(c, "running_var");
  const ref::ChannelNormOut o = ref::channel_norm(m.kind, x, m.N, m.C, m.S, m.G, w, b, rm, rv, d.training, d.momentum, d.eps);
  const double grow = 2 + std::log2(static_cast<double>(m.per) + 1);
  std::vector<double> absmean(static_cast<size_t>(m.stats), 0);  // Σ|x| / M per statistic
  for (int64_t n = 0; n < m.N; ++n)
    for (int64_t ch = 0; ch < m.C; ++ch)
      for (int64_t s = 0; s < m.S; ++s)
        absmean[static_cast<size_t>(ref::channel_stat(m.kind, n, ch, m.C, m.G))] +=
            std::fabs(x[static_cast<size_t>((n * m.C + ch) * m.S + s)]) / static_cast<double>(std::max<int64_t>(m.per, 1));
  RefOperand& y = c["y"];
  y.want = o.y;
  y.mag.assign(x.size(), 0);
  for (int64_t n = 0; n < m.N; ++n)
    for (int64_t ch = 0; ch < m.C; ++ch) {
      const size_t st = static_cast<size_t>(ref::channel_stat(m.kind, n, ch, m.C, m.G)), k = static_cast<size_t>(ch);
      for (int64_t s = 0; s < m.S; ++s) {
        const size_t f = static_cast<size_t>((n * m.C + ch) * m.S + s);
        const double sc = d.training ? absmean[st] : std::fabs(o.mean[st]);
        y.mag[f] = (o.rstd[st] * (w.empty() ? 1.0 : std::fabs(w[k])) * (std::fabs(x[f]) + sc) + (b.empty() ? 0.0 : std::fabs(b[k]))) * grow;
      }
    }
  RefOperand& mean = c["mean"];
  RefOperand& rstd = c["rstd"];
  mean.want = o.mean, rstd.want = o.rstd;
  mean.mag.assign(o.mean.size(), 0), rstd.mag.assign(o.rstd.size(), 0);
  for (size_t st = 0; st < o.mean.size(); ++st) {
    mean.mag[st] = (d.training ? absmean[st] : std::fabs(o.mean[st])) * grow;
    rstd.mag[st] = o.rstd[st] * grow;
  }
  if (d.training && d.running_stats) {
    RefOperand& orm = c["running_mean"];
    RefOperand& orv = c["running_var"];
    orm.want = o.running_mean, orv.want = o.running_var;
    orm.mag.assign(rm.size(), 0), orv.mag.assign(rv.size(), 0);
    double am = 0, av = 0;  // the averaged statistics' scales
    for (size_t st = 0; st < o.mean.size(); ++st) {
      am = std::max(am, absmean[st]);
      av = std::max(av, 1.0 / (o.rstd[st] * o.rstd[st]));
    }
    for (size_t k = 0; k < rm.size(); ++k) {
      orm.mag[k] = std::fabs(rm[k]) + am * grow;
      orv.mag[k] = std::fabs(rv[k]) + (av + am * am) * grow;
    }
  }
  return {};
}

// The backward's mean / rstd: the forward's statistics of its x (random running stats for eval).
void backward_fill(RefCall& c) {
  const ChannelNormDescriptor& d = c.desc<ChannelNormDescriptor>();
  const Dims m = dims_of(d);
  RefOperand& x = c["x"];
  x.in.resize(static_cast<size_t>(x.spec->numel()));
  std::uniform_real_distribution<double> u(-2.0, 2.0), pos(0.25, 2.0);
  for (double& v : x.in) v = ref::store_as(d.dtype, u(c.rng()));
  x.given = true;
  std::vector<double> rm(static_cast<size_t>(m.C)), rv(static_cast<size_t>(m.C));
  for (double& v : rm) v = u(c.rng());
  for (double& v : rv) v = pos(c.rng());
  const ref::ChannelNormOut o = ref::channel_norm(m.kind, x.in, m.N, m.C, m.S, m.G, {}, {}, d.training ? std::vector<double>{} : rm,
                                                  d.training ? std::vector<double>{} : rv, d.training, d.momentum, d.eps);
  RefOperand& mean = c["mean"];
  RefOperand& rstd = c["rstd"];
  mean.in.resize(o.mean.size()), rstd.in.resize(o.rstd.size());
  for (size_t st = 0; st < o.mean.size(); ++st) {
    mean.in[st] = ref::store_as(mean.spec->dtype, o.mean[st]);
    rstd.in[st] = ref::store_as(rstd.spec->dtype, o.rstd[st]);
  }
  mean.given = rstd.given = true;
}

Status backward(RefCall& c) {
  const ChannelNormDescriptor& d = c.desc<ChannelNormDescriptor>();
  const Dims m = dims_of(d);
  const std::vector<double>& x = c["x"].in;
  const std::vector<double>& w = in_or_empty(c, "weight");
  const std::vector<double>& mean = c["mean"].in;
  const std::vector<double>& rstd = c["rstd"].in;
  const std::vector<double>& dy = c["dy"].in;
  const ref::ChannelNormGrad r = ref::channel_norm_backward(m.kind, x, m.N, m.C, m.S, m.G, w, mean, rstd, dy, d.training);
  // scales: Σ|g| / M and Σ|g·xhat| / M per statistic; Σ|dy·xhat|, Σ|dy| per channel
  std::vector<double> ag(mean.size(), 0), agx(mean.size(), 0), adw(static_cast<size_t>(m.C), 0), adb(static_cast<size_t>(m.C), 0);
  auto xhat_at = [&](size_t f, size_t st) { return (x[f] - mean[st]) * rstd[st]; };
  for (int64_t n = 0; n < m.N; ++n)
    for (int64_t ch = 0; ch < m.C; ++ch)
      for (int64_t s = 0; s < m.S; ++s) {
        const size_t st = static_cast<size_t>(ref::channel_stat(m.kind, n, ch, m.C, m.G)), k = static_cast<size_t>(ch);
        const size_t f = static_cast<size_t>((n * m.C + ch) * m.S + s);
        const double g = std::fabs(dy[f] * (w.empty() ? 1.0 : w[k])), xh = std::fabs(xhat_at(f, st));
        ag[st] += g / static_cast<double>(m.per), agx[st] += g * xh / static_cast<double>(m.per);
        adw[k] += std::fabs(dy[f]) * xh, adb[k] += std::fabs(dy[f]);
      }
  const double grow = 2 + std::log2(static_cast<double>(m.per) + 1), pgrow = 2 + std::log2(static_cast<double>(m.N * m.S) + 1);
  RefOperand& dx = c["dx"];
  dx.want = r.dx;
  dx.mag.assign(x.size(), 0);
  for (int64_t n = 0; n < m.N; ++n)
    for (int64_t ch = 0; ch < m.C; ++ch)
      for (int64_t s = 0; s < m.S; ++s) {
        const size_t st = static_cast<size_t>(ref::channel_stat(m.kind, n, ch, m.C, m.G)), k = static_cast<size_t>(ch);
        const size_t f = static_cast<size_t>((n * m.C + ch) * m.S + s);
        const double g = std::fabs(dy[f] * (w.empty() ? 1.0 : w[k]));
        dx.mag[f] = rstd[st] * (g + (d.training ? ag[st] + std::fabs(xhat_at(f, st)) * agx[st] : 0.0)) * grow;
      }
  if (RefOperand* dw = c.find("dweight")) {
    dw->want = r.dw;
    dw->mag = adw;
    for (double& v : dw->mag) v *= pgrow;
  }
  if (RefOperand* db = c.find("dbias")) {
    db->want = r.db;
    db->mag = adb;
    for (double& v : db->mag) v *= pgrow;
  }
  return {};
}

}  // namespace

OpRef ref_channel_norm() { return {&forward_fill, &forward, nullptr}; }
OpRef ref_channel_norm_backward() { return {&backward_fill, &backward, nullptr}; }

}  // namespace baracuda::harness
