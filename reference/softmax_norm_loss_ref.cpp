// Float64 host reference of the softmax / normalization / loss rows (softmax_norm_loss_ref.hpp).
#include "softmax_norm_loss_ref.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace baracuda::ref {

namespace {

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double e : v) s += e;
  return v.empty() ? std::numeric_limits<double>::quiet_NaN() : s / static_cast<double>(v.size());
}

double weight_at(const std::vector<double>& w, size_t i) { return w.empty() ? 1.0 : w[i]; }

// log Σ exp(x): max + log Σ exp(x - max); -inf for a row of -inf; NaN with a NaN or a +inf (as
// log_softmax's whole row: x - max is NaN there).
double lse_of(const std::vector<double>& x) {
  double mx = -std::numeric_limits<double>::infinity(), sum = 0;
  for (double e : x) {
    if (std::isnan(e)) return e;
    mx = std::max(mx, e);
  }
  if (mx == std::numeric_limits<double>::infinity()) return std::numeric_limits<double>::quiet_NaN();
  if (mx == -std::numeric_limits<double>::infinity()) return mx;
  for (double e : x) sum += std::exp(e - mx);
  return mx + std::log(sum);
}

}  // namespace

std::vector<double> softmax_row(const std::vector<double>& x, bool log) {
  double mx = -std::numeric_limits<double>::infinity();
  bool nan = false;
  for (double e : x) {
    if (std::isnan(e)) nan = true;
    else if (e > mx) mx = e;
  }
  std::vector<double> y(x.size(), std::numeric_limits<double>::quiet_NaN());
  if (nan) return y;  // a NaN anywhere in the row: every output NaN (as PyTorch's max-shifted sum)
  // a maximum of -inf (every element -inf): x - max is NaN, so is every output (PyTorch)
  double sum = 0;
  for (double e : x) sum += std::exp(e - mx);
  const double lse = std::log(sum);
  for (size_t i = 0; i < x.size(); ++i) y[i] = log ? x[i] - mx - lse : std::exp(x[i] - mx) / sum;
  return y;
}

std::vector<double> softmax_backward_row(const std::vector<double>& y, const std::vector<double>& dy, bool log) {
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += log ? dy[i] : dy[i] * y[i];
  std::vector<double> dx(y.size());
  for (size_t i = 0; i < y.size(); ++i) dx[i] = log ? dy[i] - std::exp(y[i]) * s : y[i] * (dy[i] - s);
  return dx;
}

bool LineMask::removed(size_t k) const {
  if (causal && static_cast<__int128>(k) > static_cast<__int128>(q) + diagonal) return true;
  return kind == MaskKind::kKeep && values[k] == 0.0;
}

std::vector<double> apply_line_mask(const std::vector<double>& x, const LineMask& m) {
  std::vector<double> r(x);
  for (size_t k = 0; k < r.size(); ++k) {
    if (m.removed(k)) r[k] = -std::numeric_limits<double>::infinity();
    else if (m.kind == MaskKind::kAdd) r[k] += m.values[k];
  }
  return r;
}

std::vector<double> masked_softmax_row(const std::vector<double>& x, const LineMask& m, bool log) {
  const std::vector<double> v = apply_line_mask(x, m);
  bool empty = true;
  for (double e : v) empty = empty && e == -std::numeric_limits<double>::infinity();
  if (empty && m.zero_rows && !v.empty()) return std::vector<double>(v.size(), log ? -std::numeric_limits<double>::infinity() : 0.0);
  return softmax_row(v, log);
}

std::vector<double> masked_softmax_backward_row(const std::vector<double>& y, const std::vector<double>& dy, const LineMask& m, bool log) {
  std::vector<double> dx = softmax_backward_row(y, dy, log);
  for (size_t k = 0; k < dx.size(); ++k)
    if (m.removed(k) || (log && m.zero_rows && y[k] == -std::numeric_limits<double>::infinity())) dx[k] = 0.0;
  return dx;
}

int64_t channel_stat(ChannelStats kind, int64_t n, int64_t c, int64_t C, int64_t G) {
  return kind == ChannelStats::kBatch ? c : kind == ChannelStats::kGroup ? n * G + c / (C / G) : n * C + c;
}

ChannelNormOut channel_norm(ChannelStats kind, const std::vector<double>& x, int64_t N, int64_t C, int64_t S, int64_t G,
                            const std::vector<double>& w, const std::vector<double>& b, const std::vector<double>& rm,
                            const std::vector<double>& rv, bool training, double momentum, double eps) {
  const int64_t nst = kind == ChannelStats::kBatch ? C : kind == ChannelStats::kGroup ? N * G : N * C;
  const auto idx = [&](int64_t n, int64_t c, int64_t s) { return static_cast<size_t>((n * C + c) * S + s); };
  ChannelNormOut o;
  std::vector<double> sum(static_cast<size_t>(nst), 0), cnt(static_cast<size_t>(nst), 0), var(static_cast<size_t>(nst), 0);
  o.mean.assign(static_cast<size_t>(nst), 0);
  o.rstd.assign(static_cast<size_t>(nst), 0);
  if (training) {
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t s = 0; s < S; ++s) {
          const size_t st = static_cast<size_t>(channel_stat(kind, n, c, C, G));
          sum[st] += x[idx(n, c, s)], cnt[st] += 1;
        }
    for (size_t st = 0; st < sum.size(); ++st) o.mean[st] = sum[st] / cnt[st];
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t s = 0; s < S; ++s) {
          const size_t st = static_cast<size_t>(channel_stat(kind, n, c, C, G));
          const double d = x[idx(n, c, s)] - o.mean[st];
          var[st] += d * d;
        }
    for (size_t st = 0; st < var.size(); ++st) var[st] /= cnt[st];
  } else {
    for (int64_t st = 0; st < nst; ++st) {
      const size_t c = static_cast<size_t>(kind == ChannelStats::kBatch ? st : st % C);
      o.mean[static_cast<size_t>(st)] = rm[c], var[static_cast<size_t>(st)] = rv[c];
    }
  }
  for (size_t st = 0; st < var.size(); ++st) o.rstd[st] = 1.0 / std::sqrt(var[st] + eps);
  o.y.assign(x.size(), 0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s) {
        const size_t st = static_cast<size_t>(channel_stat(kind, n, c, C, G)), k = static_cast<size_t>(c);
        o.y[idx(n, c, s)] = (x[idx(n, c, s)] - o.mean[st]) * o.rstd[st] * (w.empty() ? 1.0 : w[k]) + (b.empty() ? 0.0 : b[k]);
      }
  if (training && !rm.empty()) {
    o.running_mean = rm, o.running_var = rv;
    for (int64_t c = 0; c < C; ++c) {
      double m = 0, v = 0;
      const int64_t reps = kind == ChannelStats::kInstance ? N : 1;
      for (int64_t n = 0; n < reps; ++n) {
        const size_t st = static_cast<size_t>(kind == ChannelStats::kInstance ? n * C + c : c);
        m += o.mean[st], v += var[st] * cnt[st] / (cnt[st] - 1);
      }
      const size_t k = static_cast<size_t>(c);
      o.running_mean[k] = (1 - momentum) * rm[k] + momentum * m / static_cast<double>(reps);
      o.running_var[k] = (1 - momentum) * rv[k] + momentum * v / static_cast<double>(reps);
    }
  }
  return o;
}

ChannelNormGrad channel_norm_backward(ChannelStats kind, const std::vector<double>& x, int64_t N, int64_t C, int64_t S, int64_t G,
                                      const std::vector<double>& w, const std::vector<double>& mean, const std::vector<double>& rstd,
                                      const std::vector<double>& dy, bool training) {
  const auto idx = [&](int64_t n, int64_t c, int64_t s) { return static_cast<size_t>((n * C + c) * S + s); };
  std::vector<double> sg(mean.size(), 0), sgx(mean.size(), 0), cnt(mean.size(), 0);
  ChannelNormGrad r;
  r.dw.assign(static_cast<size_t>(C), 0), r.db.assign(static_cast<size_t>(C), 0), r.dx.assign(x.size(), 0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s) {
        const size_t st = static_cast<size_t>(channel_stat(kind, n, c, C, G)), f = idx(n, c, s), k = static_cast<size_t>(c);
        const double xhat = (x[f] - mean[st]) * rstd[st], g = dy[f] * (w.empty() ? 1.0 : w[k]);
        sg[st] += g, sgx[st] += g * xhat, cnt[st] += 1;
        r.dw[k] += dy[f] * xhat, r.db[k] += dy[f];
      }
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s) {
        const size_t st = static_cast<size_t>(channel_stat(kind, n, c, C, G)), f = idx(n, c, s), k = static_cast<size_t>(c);
        const double xhat = (x[f] - mean[st]) * rstd[st], g = dy[f] * (w.empty() ? 1.0 : w[k]);
        r.dx[f] = training ? rstd[st] * (g - sg[st] / cnt[st] - xhat * sgx[st] / cnt[st]) : rstd[st] * g;
      }
  return r;
}

NormRow layer_norm_row(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b, double eps) {
  NormRow r;
  r.mean = mean_of(x);
  double var = 0;
  for (double e : x) var += (e - r.mean) * (e - r.mean);
  var /= static_cast<double>(x.size());
  r.rstd = 1.0 / std::sqrt(var + eps);
  r.y.resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) r.y[i] = (x[i] - r.mean) * r.rstd * weight_at(w, i) + (b.empty() ? 0.0 : b[i]);
  return r;
}

std::vector<double> layer_norm_backward_row(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& dy,
                                            double mean, double rstd, std::vector<double>* dw, std::vector<double>* db) {
  const size_t n = x.size();
  std::vector<double> xhat(n), g(n), dx(n);
  double mg = 0, mgx = 0;
  for (size_t i = 0; i < n; ++i) {
    xhat[i] = (x[i] - mean) * rstd;
    g[i] = dy[i] * weight_at(w, i);
    mg += g[i];
    mgx += g[i] * xhat[i];
  }
  mg /= static_cast<double>(n);
  mgx /= static_cast<double>(n);
  for (size_t i = 0; i < n; ++i) {
    dx[i] = rstd * (g[i] - mg - xhat[i] * mgx);
    if (dw && !dw->empty()) (*dw)[i] += dy[i] * xhat[i];
    if (db && !db->empty()) (*db)[i] += dy[i];
  }
  return dx;
}

NormRow rms_norm_row(const std::vector<double>& x, const std::vector<double>& w, double eps) {
  NormRow r;
  double ms = 0;
  for (double e : x) ms += e * e;
  ms /= static_cast<double>(x.size());
  r.rstd = 1.0 / std::sqrt(ms + eps);
  r.y.resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) r.y[i] = x[i] * r.rstd * weight_at(w, i);
  return r;
}

std::vector<double> rms_norm_backward_row(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& dy,
                                          double rstd, std::vector<double>* dw) {
  const size_t n = x.size();
  std::vector<double> g(n), dx(n);
  double mgx = 0;
  for (size_t i = 0; i < n; ++i) {
    g[i] = dy[i] * weight_at(w, i);
    mgx += g[i] * x[i];
  }
  mgx /= static_cast<double>(n);
  for (size_t i = 0; i < n; ++i) {
    dx[i] = rstd * (g[i] - x[i] * rstd * rstd * mgx);
    if (dw && !dw->empty()) (*dw)[i] += dy[i] * x[i] * rstd;
  }
  return dx;
}

ClassLossRow class_loss_row(const std::vector<double>& x, int64_t t, const std::vector<double>& prob, const std::vector<double>& w,
                            std::optional<int64_t> ignore_index, double s, double z, bool nll) {
  ClassLossRow r;
  const size_t C = x.size();
  const std::vector<double> lp = nll ? x : softmax_row(x, true);
  if (!nll) r.lse = lse_of(x);
  if (!prob.empty()) {
    for (size_t c = 0; c < C; ++c) r.loss -= weight_at(w, c) * (prob[c] * (1 - s) + s / static_cast<double>(C)) * lp[c];
    r.weight = 1;
  } else {
    if (ignore_index && t == *ignore_index) return r;
    if (t < 0 || static_cast<size_t>(t) >= C) {
      r.loss = std::numeric_limits<double>::quiet_NaN();
      return r;
    }
    r.weight = weight_at(w, static_cast<size_t>(t));
    r.loss = (1 - s) * (-r.weight * lp[static_cast<size_t>(t)]);
    if (s > 0) {
      double smooth = 0;
      for (size_t c = 0; c < C; ++c) smooth -= weight_at(w, c) * lp[c];
      r.loss += s / static_cast<double>(C) * smooth;
    }
  }
  if (z > 0) r.loss += z * r.lse * r.lse;
  return r;
}

std::vector<double> class_loss_backward_row(const std::vector<double>& x, int64_t t, const std::vector<double>& prob,
                                            const std::vector<double>& w, std::optional<int64_t> ignore_index, double s, double z,
                                            bool nll, double g) {
  const size_t C = x.size();
  std::vector<double> dx(C, 0.0);
  if (prob.empty() && ignore_index && t == *ignore_index) return dx;
  if (prob.empty() && (t < 0 || static_cast<size_t>(t) >= C)) return std::vector<double>(C, std::numeric_limits<double>::quiet_NaN());
  if (nll) {
    dx[static_cast<size_t>(t)] = -g * weight_at(w, static_cast<size_t>(t));
    return dx;
  }
  const std::vector<double> p = softmax_row(x, false);
  const double lse = lse_of(x);
  const double spread = s / static_cast<double>(C);
  if (!prob.empty()) {
    double b = 0;
    std::vector<double> q(C);
    for (size_t c = 0; c < C; ++c) b += q[c] = weight_at(w, c) * (prob[c] * (1 - s) + spread);
    for (size_t c = 0; c < C; ++c) dx[c] = g * (p[c] * b - q[c] + 2 * z * lse * p[c]);
    return dx;
  }
  double W = 0;
  for (size_t c = 0; c < C; ++c) W += weight_at(w, c);
  const double wt = weight_at(w, static_cast<size_t>(t));
  for (size_t c = 0; c < C; ++c)
    dx[c] = g * ((1 - s) * wt * (p[c] - (static_cast<int64_t>(c) == t ? 1.0 : 0.0)) + spread * (W * p[c] - weight_at(w, c)) +
                 2 * z * lse * p[c]);
  return dx;
}

CrossEntropy cross_entropy(const std::vector<std::vector<double>>& logits, const std::vector<int64_t>& target,
                           const std::vector<double>& weight, std::optional<int64_t> ignore_index, double label_smoothing,
                           int reduction) {
  CrossEntropy r;
  double total = 0, wsum = 0;
  for (size_t row = 0; row < logits.size(); ++row) {
    const ClassLossRow l = class_loss_row(logits[row], target[row], {}, weight, ignore_index, label_smoothing, 0, false);
    r.row_weight.push_back(l.weight);
    if (reduction == 0) r.loss.push_back(l.loss);
    total += l.loss;
    wsum += l.weight;
  }
  if (reduction == 1) r.loss.push_back(total / wsum);  // 0 / 0 = NaN when every row is ignored
  if (reduction == 2) r.loss.push_back(total);
  return r;
}

std::vector<std::vector<double>> cross_entropy_backward(const std::vector<std::vector<double>>& logits, const std::vector<int64_t>& target,
                                                        const std::vector<double>& weight, std::optional<int64_t> ignore_index,
                                                        double label_smoothing, int reduction, const std::vector<double>& dloss) {
  double wsum = 0;
  for (size_t row = 0; row < logits.size(); ++row)
    wsum += class_loss_row(logits[row], target[row], {}, weight, ignore_index, label_smoothing, 0, false).weight;
  std::vector<std::vector<double>> dx(logits.size());
  for (size_t row = 0; row < logits.size(); ++row) {
    const double g = reduction == 0 ? dloss[row] : (reduction == 1 ? dloss[0] / wsum : dloss[0]);
    dx[row] = class_loss_backward_row(logits[row], target[row], {}, weight, ignore_index, label_smoothing, 0, false, g);
  }
  return dx;
}

namespace {
double sign_of(double v) { return v > 0 ? 1.0 : v < 0 ? -1.0 : v; }
double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }
double softplus(double v) { return v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v)); }  // log(1 + e^v)
constexpr double kPi = 3.14159265358979323846;
}  // namespace

double pointwise_loss(const PwOptions& o, const PwElem& e) {
  const double d = e.x - e.y, z = std::fabs(d);
  switch (o.op) {
    case PwLoss::mse: return d * d;
    case PwLoss::l1: return z;
    case PwLoss::smooth_l1: return o.beta == 0 ? z : (z < o.beta ? 0.5 * d * d / o.beta : z - 0.5 * o.beta);
    case PwLoss::huber: return z < o.delta ? 0.5 * d * d : o.delta * (z - 0.5 * o.delta);
    case PwLoss::bce: return -e.w * (e.y * std::max(std::log(e.x), -100.0) + (1 - e.y) * std::max(std::log1p(-e.x), -100.0));
    case PwLoss::bce_with_logits: return e.w * ((1 - e.y) * e.x + (1 + (e.pw - 1) * e.y) * softplus(-e.x));
    case PwLoss::kl_div:
      if (o.log_target) return std::exp(e.y) * (e.y - e.x);
      return (e.y == 0 ? 0.0 : e.y * std::log(e.y)) - e.y * e.x;
    case PwLoss::poisson_nll: {
      double l = o.log_input ? std::exp(e.x) - e.y * e.x : e.x - e.y * std::log(e.x + o.eps);
      if (o.full && e.y > 1) l += e.y * std::log(e.y) - e.y + 0.5 * std::log(2 * kPi * e.y);
      return l;
    }
    case PwLoss::gaussian_nll: {
      const double v = std::max(e.v, o.eps);
      return 0.5 * (std::log(v) + d * d / v) + (o.full ? 0.5 * std::log(2 * kPi) : 0.0);
    }
    case PwLoss::soft_margin: return softplus(-e.y * e.x);
    case PwLoss::hinge_embedding: return (e.y != 1 ? std::max(o.margin - e.x, 0.0) : 0.0) + (e.y != -1 ? e.x : 0.0);
    case PwLoss::margin_ranking: return std::max(-e.y * (e.x - e.x2) + o.margin, 0.0);
  }
  return 0;
}

PwGrad pointwise_loss_grad(const PwOptions& o, const PwElem& e) {
  const double d = e.x - e.y;
  PwGrad r;
  switch (o.op) {
    case PwLoss::mse: r.dx = 2 * d, r.dy = -2 * d; break;
    case PwLoss::l1: r.dx = sign_of(d), r.dy = -r.dx; break;
    case PwLoss::smooth_l1:
      r.dx = o.beta == 0 ? sign_of(d) : (d < -o.beta ? -1.0 : d > o.beta ? 1.0 : d / o.beta);
      r.dy = -r.dx;
      break;
    case PwLoss::huber: r.dx = std::clamp(d, -o.delta, o.delta), r.dy = -r.dx; break;
    case PwLoss::bce: r.dx = e.w * (e.x - e.y) / std::max((1 - e.x) * e.x, 1e-12); break;
    case PwLoss::bce_with_logits:
      r.dx = e.w * ((1 + (e.pw - 1) * e.y) * sigmoid(e.x) - e.pw * e.y);
      r.dy = e.w * ((e.pw - 1) * softplus(-e.x) - e.x);
      break;
    case PwLoss::kl_div:
      if (o.log_target) r.dx = -std::exp(e.y), r.dy = std::exp(e.y) * (e.y - e.x + 1);
      else r.dx = -e.y, r.dy = e.y > 0 ? std::log(e.y) + 1 - e.x : e.y == 0 ? 0.0 : std::numeric_limits<double>::quiet_NaN();
      break;
    case PwLoss::poisson_nll:
      if (o.log_input) r.dx = std::exp(e.x) - e.y, r.dy = -e.x;
      else r.dx = 1 - e.y / (e.x + o.eps), r.dy = -std::log(e.x + o.eps);
      if (o.full && e.y > 1) r.dy += std::log(e.y) + 0.5 / e.y;
      break;
    case PwLoss::gaussian_nll: {
      const double v = std::max(e.v, o.eps);
      r.dx = d / v, r.dy = -d / v, r.dv = 0.5 * (1 / v - d * d / (v * v));
      break;
    }
    case PwLoss::soft_margin: r.dx = -e.y * sigmoid(-e.y * e.x), r.dy = -e.x * sigmoid(-e.y * e.x); break;
    case PwLoss::hinge_embedding: r.dx = (e.y != 1 && o.margin - e.x >= 0 ? -1.0 : 0.0) + (e.y != -1 ? 1.0 : 0.0); break;
    case PwLoss::margin_ranking: {
      const bool on = -e.y * (e.x - e.x2) + o.margin >= 0;
      r.dx = on ? -e.y : 0.0, r.dx2 = on ? e.y : 0.0, r.dy = on ? -(e.x - e.x2) : 0.0;
      break;
    }
  }
  return r;
}

FlceResult fused_linear_cross_entropy(const std::vector<double>& x, const std::vector<double>& W, const std::vector<double>& b,
                                      const std::vector<double>& t, const std::vector<double>& w, int64_t S, int64_t H, int64_t V,
                                      int64_t ignore_index, double s, double z, bool mean) {
  const size_t nS = static_cast<size_t>(S), nH = static_cast<size_t>(H), nV = static_cast<size_t>(V);
  FlceResult r;
  r.z.assign(nS * nV, 0.0), r.lse.assign(nS, 0.0), r.dz.assign(nS * nV, 0.0);
  r.dx.assign(nS * nH, 0.0), r.dW.assign(nV * nH, 0.0), r.db.assign(nV, 0.0);
  for (size_t i = 0; i < nS; ++i)
    for (size_t k = 0; k < nV; ++k) {
      double v = b.empty() ? 0.0 : b[k];
      for (size_t h = 0; h < nH; ++h) v += x[i * nH + h] * W[k * nH + h];
      r.z[i * nV + k] = v;
    }
  auto row = [&](size_t i) {
    return std::vector<double>(r.z.begin() + static_cast<ptrdiff_t>(i * nV), r.z.begin() + static_cast<ptrdiff_t>((i + 1) * nV));
  };
  double total = 0;
  for (size_t i = 0; i < nS; ++i) {
    const ClassLossRow c = class_loss_row(row(i), static_cast<int64_t>(t[i]), {}, w, ignore_index, s, z, false);
    total += c.loss, r.total_weight += c.weight, r.lse[i] = c.lse;
  }
  r.loss = mean ? total / r.total_weight : total;
  const double g = mean ? (r.total_weight != 0 ? 1.0 / r.total_weight : 0.0) : 1.0;
  for (size_t i = 0; i < nS; ++i) {
    const std::vector<double> d = class_loss_backward_row(row(i), static_cast<int64_t>(t[i]), {}, w, ignore_index, s, z, false, g);
    for (size_t k = 0; k < nV; ++k) {
      const double dzk = d[k];
      r.dz[i * nV + k] = dzk;
      r.db[k] += dzk;
      for (size_t h = 0; h < nH; ++h) r.dx[i * nH + h] += dzk * W[k * nH + h], r.dW[k * nH + h] += dzk * x[i * nH + h];
    }
  }
  return r;
}

double vector_norm(const std::vector<double>& x, double p) {
  double a = 0;
  for (double v : x) {
    if (std::isinf(p)) a = (std::fabs(v) > a || std::isnan(v)) ? std::fabs(v) : a;
    else a += std::pow(std::fabs(v), p);
  }
  return std::isinf(p) ? a : std::pow(a, 1.0 / p);
}

std::vector<double> normalize_line(const std::vector<double>& x, double p, double eps) {
  const double n = vector_norm(x, p), den = n < eps ? eps : n;
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] / den;
  return y;
}

std::vector<double> normalize_line_backward(const std::vector<double>& x, const std::vector<double>& dy, double p, double eps) {
  const double n = vector_norm(x, p), den = n < eps ? eps : n;
  double dot = 0, ties = 0;
  for (size_t i = 0; i < x.size(); ++i) dot += dy[i] * x[i], ties += std::fabs(x[i]) == n ? 1.0 : 0.0;
  const double coef = n >= eps && n > 0 ? dot / (den * den) : 0.0;
  std::vector<double> dx(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double a = std::fabs(x[i]), sg = x[i] > 0 ? 1.0 : x[i] < 0 ? -1.0 : 0.0;
    const double dn = std::isinf(p) ? (a == n ? sg / ties : 0.0) : a == 0 ? 0.0 : sg * std::pow(a / n, p - 1);
    dx[i] = dy[i] / den - coef * dn;
  }
  return dx;
}

std::vector<double> weight_norm_line(const std::vector<double>& v, double g, double* norm) {
  const double n = vector_norm(v, 2.0);
  *norm = n;
  std::vector<double> w(v.size());
  for (size_t i = 0; i < v.size(); ++i) w[i] = v[i] * (g / n);
  return w;
}

std::vector<double> weight_norm_line_backward(const std::vector<double>& v, double g, double norm, const std::vector<double>& dw,
                                              double* dg) {
  double dot = 0;
  for (size_t i = 0; i < v.size(); ++i) dot += dw[i] * v[i];
  *dg = dot / norm;
  std::vector<double> dv(v.size());
  for (size_t i = 0; i < v.size(); ++i) dv[i] = g / norm * (dw[i] - dot / (norm * norm) * v[i]);
  return dv;
}

namespace {

std::vector<double> offset_diff(const std::vector<double>& a, const std::vector<double>& b, double eps) {
  std::vector<double> u(a.size());
  for (size_t i = 0; i < a.size(); ++i) u[i] = a[i] - b[i] + eps;
  return u;
}

// d ||u||_p / d u_i (0 at u_i = 0 and for a zero u), finite p > 0.
std::vector<double> pnorm_grad(const std::vector<double>& u, double p) {
  const double n = vector_norm(u, p);
  std::vector<double> g(u.size(), 0.0);
  if (n == 0) return g;
  for (size_t i = 0; i < u.size(); ++i) {
    const double a = std::fabs(u[i]), sg = u[i] > 0 ? 1.0 : u[i] < 0 ? -1.0 : 0.0;
    g[i] = a == 0 ? 0.0 : sg * std::pow(a / n, p - 1);
  }
  return g;
}

struct Cos {
  double cos, denom, m1, m2;
};
Cos cosine_of(const std::vector<double>& x, const std::vector<double>& x2) {
  double a = 0, b = 0, c = 0;
  for (size_t i = 0; i < x.size(); ++i) a += x[i] * x2[i], b += x[i] * x[i], c += x2[i] * x2[i];
  const double m1 = b + 1e-12, m2 = c + 1e-12, denom = std::sqrt(m1 * m2);
  return {a / denom, denom, m1, m2};
}

}  // namespace

double row_loss(const RowLossOptions& o, const std::vector<double>& x, const std::vector<double>& x2, const std::vector<double>& x3,
                const std::vector<double>& y, const std::vector<double>& w) {
  if (o.op == 0) {
    double l = 0;
    for (size_t i = 0; i < x.size(); ++i) l += (w.empty() ? 1.0 : w[i]) * (y[i] * softplus(-x[i]) + (1 - y[i]) * softplus(x[i]));
    return l / static_cast<double>(x.size());
  }
  if (o.op == 1) {
    const double c = cosine_of(x, x2).cos;
    return y[0] == 1 ? 1 - c : y[0] == -1 ? std::max(0.0, c - o.margin) : 0.0;
  }
  const double dap = vector_norm(offset_diff(x, x2, o.eps), o.p);
  double dan = vector_norm(offset_diff(x, x3, o.eps), o.p);
  if (o.swap) dan = std::min(dan, vector_norm(offset_diff(x2, x3, o.eps), o.p));
  return std::max(0.0, o.margin + dap - dan);
}

RowLossGrad row_loss_grad(const RowLossOptions& o, const std::vector<double>& x, const std::vector<double>& x2,
                          const std::vector<double>& x3, const std::vector<double>& y, const std::vector<double>& w, double g) {
  const size_t D = x.size();
  RowLossGrad r;
  r.dx.assign(D, 0.0);
  if (o.op == 0) {
    r.dy.assign(D, 0.0);
    for (size_t i = 0; i < D; ++i) {
      const double k = g * (w.empty() ? 1.0 : w[i]) / static_cast<double>(D);
      r.dx[i] = k * (1 / (1 + std::exp(-x[i])) - y[i]);
      r.dy[i] = -k * x[i];
    }
    return r;
  }
  r.dx2.assign(D, 0.0);
  if (o.op == 1) {
    const Cos c = cosine_of(x, x2);
    const double dl = y[0] == 1 ? -1.0 : (y[0] == -1 && c.cos - o.margin >= 0) ? 1.0 : 0.0, k = g * dl;
    for (size_t i = 0; i < D; ++i) {
      r.dx[i] = k * (x2[i] / c.denom - c.cos * x[i] / c.m1);
      r.dx2[i] = k * (x[i] / c.denom - c.cos * x2[i] / c.m2);
    }
    return r;
  }
  r.dx3.assign(D, 0.0);
  const std::vector<double> uap = offset_diff(x, x2, o.eps), uan = offset_diff(x, x3, o.eps), upn = offset_diff(x2, x3, o.eps);
  const double dap = vector_norm(uap, o.p), dan = vector_norm(uan, o.p), dpn = o.swap ? vector_norm(upn, o.p) : 0.0;
  const double dn = o.swap ? std::min(dan, dpn) : dan;
  const double k = o.margin + dap - dn >= 0 ? g : 0.0;
  const double an = !o.swap ? 1.0 : dan < dpn ? 1.0 : dan == dpn ? 0.5 : 0.0, pn = o.swap ? 1 - an : 0.0;
  const std::vector<double> gap = pnorm_grad(uap, o.p), gan = pnorm_grad(uan, o.p), gpn = pnorm_grad(upn, o.p);
  for (size_t i = 0; i < D; ++i) {
    r.dx[i] = k * (gap[i] - an * gan[i]);
    r.dx2[i] = k * (-gap[i] - pn * gpn[i]);
    r.dx3[i] = k * (an * gan[i] + pn * gpn[i]);
  }
  return r;
}

std::vector<double> local_response_norm_line(const std::vector<double>& x, int64_t size, double alpha, double beta, double k) {
  const int64_t C = static_cast<int64_t>(x.size());
  std::vector<double> y(x.size());
  for (int64_t c = 0; c < C; ++c) {
    double sum = 0;
    for (int64_t j = std::max<int64_t>(0, c - size / 2); j <= std::min(C - 1, c + (size - 1) / 2); ++j) sum += x[j] * x[j];
    y[c] = x[c] / std::pow(k + alpha / static_cast<double>(size) * sum, beta);
  }
  return y;
}

std::vector<double> local_response_norm_line_backward(const std::vector<double>& x, const std::vector<double>& dy, int64_t size,
                                                      double alpha, double beta, double k) {
  const int64_t C = static_cast<int64_t>(x.size());
  std::vector<double> d(x.size()), dx(x.size());
  for (int64_t c = 0; c < C; ++c) {
    double sum = 0;
    for (int64_t j = std::max<int64_t>(0, c - size / 2); j <= std::min(C - 1, c + (size - 1) / 2); ++j) sum += x[j] * x[j];
    d[c] = k + alpha / static_cast<double>(size) * sum;
  }
  // y_j = x_j d_j^-beta: dy_j reaches x_c directly (j = c) and through d_j for every j whose window holds c
  for (int64_t c = 0; c < C; ++c) {
    double through = 0;
    for (int64_t j = std::max<int64_t>(0, c - (size - 1) / 2); j <= std::min(C - 1, c + size / 2); ++j)
      through += dy[j] * x[j] * -beta * std::pow(d[j], -beta - 1);
    dx[c] = dy[c] * std::pow(d[c], -beta) + through * alpha / static_cast<double>(size) * 2 * x[c];
  }
  return dx;
}

namespace {
double log_add(double a, double b) {
  if (a == -INFINITY) return b;
  if (b == -INFINITY) return a;
  const double m = std::max(a, b);
  return m + std::log(std::exp(a - m) + std::exp(b - m));
}
}  // namespace

CtcSample ctc_loss_sample(const std::vector<std::vector<double>>& lp, int64_t input_length, const std::vector<int64_t>& target,
                          int64_t blank) {
  const int64_t T = static_cast<int64_t>(lp.size()), C = T > 0 ? static_cast<int64_t>(lp[0].size()) : 0;
  const int64_t L = static_cast<int64_t>(target.size()), S = 2 * L + 1;
  CtcSample r;
  r.grad.assign(static_cast<size_t>(T), std::vector<double>(static_cast<size_t>(C), 0.0));
  const int64_t Tn = input_length;
  if (Tn == 0) {
    r.nll = L == 0 ? 0.0 : INFINITY;
    return r;
  }
  auto lab = [&](int64_t s) { return s % 2 == 0 ? blank : target[static_cast<size_t>(s / 2)]; };
  const double ninf = -INFINITY;
  std::vector<std::vector<double>> la(static_cast<size_t>(Tn), std::vector<double>(static_cast<size_t>(S), ninf)), lb = la;
  la[0][0] = lp[0][blank];
  if (L > 0) la[0][1] = lp[0][lab(1)];
  for (int64_t t = 1; t < Tn; ++t)
    for (int64_t s = 0; s < S; ++s) {
      double a = la[t - 1][s];
      if (s >= 1) a = log_add(a, la[t - 1][s - 1]);
      if (s >= 2 && lab(s) != blank && lab(s) != lab(s - 2)) a = log_add(a, la[t - 1][s - 2]);
      la[t][s] = a == ninf ? ninf : a + lp[t][lab(s)];
    }
  const double ll = log_add(la[Tn - 1][S - 1], L > 0 ? la[Tn - 1][S - 2] : ninf);
  r.nll = -ll;
  lb[Tn - 1][S - 1] = lp[Tn - 1][blank];
  if (L > 0) lb[Tn - 1][S - 2] = lp[Tn - 1][lab(S - 2)];
  for (int64_t t = Tn - 2; t >= 0; --t)
    for (int64_t s = 0; s < S; ++s) {
      double b = lb[t + 1][s];
      if (s + 1 < S) b = log_add(b, lb[t + 1][s + 1]);
      if (s + 2 < S && lab(s + 2) != lab(s)) b = log_add(b, lb[t + 1][s + 2]);
      lb[t][s] = b == ninf ? ninf : b + lp[t][lab(s)];
    }
  for (int64_t t = 0; t < Tn; ++t) {
    std::vector<double> lcab(static_cast<size_t>(C), ninf);
    for (int64_t s = 0; s < S; ++s) lcab[lab(s)] = log_add(lcab[lab(s)], la[t][s] + lb[t][s]);
    for (int64_t c = 0; c < C; ++c) r.grad[t][c] = std::exp(lp[t][c]) - std::exp(lcab[c] + r.nll - lp[t][c]);
  }
  return r;
}

}  // namespace baracuda::ref
