// Reference adapters of the norm rows: each row (the trailing norm_dims axes) through
// reference/softmax_norm_loss_ref.cpp's layer_norm / rms_norm rows. Error scales (64 accumulator
// epsilons of them): the row statistics' sums grow as log2(N) (the forward's y, mean, rstd; the
// backward's dx), dweight / dbias as log2(rows) over their |terms|.
#include <cmath>
#include <random>

#include "baracuda/ops/norm.hpp"
#include "elementwise_ref.hpp"
#include "harness/op_case.hpp"
#include "harness/ref_common.hpp"
#include "softmax_norm_loss_ref.hpp"

namespace baracuda::harness {

namespace {

struct Rows {
  int64_t rows = 1, n = 1;
};
Rows rows_of(const NormDescriptor& d) {
  Rows r;
  for (int a = 0; a < d.rank; ++a) (a < d.rank - d.norm_dims ? r.rows : r.n) *= d.shape[a];
  return r;
}

std::vector<double> slice(const std::vector<double>& v, int64_t row, int64_t n) {
  return std::vector<double>(v.begin() + row * n, v.begin() + (row + 1) * n);
}
const std::vector<double>& in_or_empty(RefCall& c, const char* name) {
  static const std::vector<double> none;
  RefOperand* o = c.find(name);
  return o ? o->in : none;
}

Status forward(RefCall& c) {
  const NormDescriptor& d = c.desc<NormDescriptor>();
  const Rows rs = rows_of(d);
  const bool layer = d.op == NormKind::kLayerNorm;
  const double eps = norm_eps(d), grow = 2 + std::log2(static_cast<double>(rs.n) + 1);
  const std::vector<double>& x = c["x"].in;
  const std::vector<double>& w = in_or_empty(c, "weight");
  const std::vector<double>& b = in_or_empty(c, "bias");
  RefOperand* res = c.find("residual");
  RefOperand& y = c["y"];
  RefOperand* h = c.find("h");
  RefOperand* mean = c.find("mean");
  RefOperand& rstd = c["rstd"];
  y.want.assign(x.size(), 0), y.mag.assign(x.size(), 0);
  if (h) h->want.assign(x.size(), 0);
  if (mean) mean->want.assign(static_cast<size_t>(rs.rows), 0), mean->mag.assign(static_cast<size_t>(rs.rows), 0);
  rstd.want.assign(static_cast<size_t>(rs.rows), 0), rstd.mag.assign(static_cast<size_t>(rs.rows), 0);
  for (int64_t r = 0; r < rs.rows; ++r) {
    std::vector<double> hr = slice(x, r, rs.n);
    if (res)
      for (int64_t i = 0; i < rs.n; ++i) hr[static_cast<size_t>(i)] = ref::store_as(d.dtype, hr[static_cast<size_t>(i)] + res->in[static_cast<size_t>(r * rs.n + i)]);
    const ref::NormRow o = layer ? ref::layer_norm_row(hr, w, b, eps) : ref::rms_norm_row(hr, w, eps);
    double habs = 0;
    for (double e : hr) habs += std::fabs(e);
    habs /= static_cast<double>(std::max<int64_t>(rs.n, 1));
    for (int64_t i = 0; i < rs.n; ++i) {
      const size_t f = static_cast<size_t>(r * rs.n + i), k = static_cast<size_t>(i);
      y.want[f] = o.y[k];
      y.mag[f] = (o.rstd * (w.empty() ? 1.0 : std::fabs(w[k])) * (std::fabs(hr[k]) + habs) + (b.empty() ? 0.0 : std::fabs(b[k]))) * grow;
      if (h) h->want[f] = hr[k];
    }
    if (mean) mean->want[static_cast<size_t>(r)] = o.mean, mean->mag[static_cast<size_t>(r)] = habs * grow;
    rstd.want[static_cast<size_t>(r)] = o.rstd, rstd.mag[static_cast<size_t>(r)] = o.rstd * grow;
  }
  return {};
}

// The backward's mean / rstd: the forward statistics of its x, stored in their dtype.
void backward_fill(RefCall& c) {
  const NormDescriptor& d = c.desc<NormDescriptor>();
  const Rows rs = rows_of(d);
  RefOperand& x = c["x"];
  x.in.resize(static_cast<size_t>(x.spec->numel()));
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  for (double& v : x.in) v = ref::store_as(d.dtype, u(c.rng()));
  x.given = true;
  RefOperand* mean = c.find("mean");
  RefOperand& rstd = c["rstd"];
  if (mean) mean->in.assign(static_cast<size_t>(rs.rows), 0), mean->given = true;
  rstd.in.assign(static_cast<size_t>(rs.rows), 0);
  rstd.given = true;
  const double eps = norm_eps(d);
  for (int64_t r = 0; r < rs.rows; ++r) {
    const std::vector<double> xr = slice(x.in, r, rs.n);
    const ref::NormRow o = d.op == NormKind::kLayerNorm ? ref::layer_norm_row(xr, {}, {}, eps) : ref::rms_norm_row(xr, {}, eps);
    if (mean) mean->in[static_cast<size_t>(r)] = ref::store_as(mean->spec->dtype, o.mean);
    rstd.in[static_cast<size_t>(r)] = ref::store_as(rstd.spec->dtype, o.rstd);
  }
}

Status backward(RefCall& c) {
  const NormDescriptor& d = c.desc<NormDescriptor>();
  const Rows rs = rows_of(d);
  const bool layer = d.op == NormKind::kLayerNorm;
  const std::vector<double>& x = c["x"].in;
  const std::vector<double>& dy = c["dy"].in;
  const std::vector<double>& w = in_or_empty(c, "weight");
  RefOperand* mean = c.find("mean");
  const std::vector<double>& rstd = c["rstd"].in;
  RefOperand* dh = c.find("dh");
  RefOperand& dx = c["dx"];
  RefOperand* dw = c.find("dweight");
  RefOperand* db = c.find("dbias");
  const size_t n = static_cast<size_t>(rs.n);
  dx.want.assign(x.size(), 0), dx.mag.assign(x.size(), 0);
  std::vector<double> dws(n, 0.0), dbs(n, 0.0), dwa(n, 0.0), dba(n, 0.0);
  const double grow = 2 + std::log2(static_cast<double>(rs.n) + 1);
  for (int64_t r = 0; r < rs.rows; ++r) {
    const std::vector<double> xr = slice(x, r, rs.n), dr = slice(dy, r, rs.n);
    const double m = mean ? mean->in[static_cast<size_t>(r)] : 0.0, rs_ = rstd[static_cast<size_t>(r)];
    const std::vector<double> g = layer ? ref::layer_norm_backward_row(xr, w, dr, m, rs_, &dws, &dbs)
                                        : ref::rms_norm_backward_row(xr, w, dr, rs_, &dws);
    double ga = 0, gxa = 0;
    for (size_t i = 0; i < n; ++i) {
      const double gg = std::fabs(dr[i] * (w.empty() ? 1.0 : w[i])), xh = std::fabs((xr[i] - m) * rs_);
      ga += gg, gxa += gg * xh;
      dwa[i] += std::fabs(dr[i] * (xr[i] - m) * rs_);
      dba[i] += std::fabs(dr[i]);
    }
    ga /= static_cast<double>(n), gxa /= static_cast<double>(n);
    for (size_t i = 0; i < n; ++i) {
      const size_t f = static_cast<size_t>(r) * n + i;
      const double extra = dh && !dh->in.empty() ? dh->in[f] : 0.0;
      dx.want[f] = g[i] + extra;
      dx.mag[f] = rs_ * (std::fabs(dr[i] * (w.empty() ? 1.0 : w[i])) + ga + std::fabs((xr[i] - m) * rs_) * gxa) * grow + std::fabs(extra);
    }
  }
  const double rgrow = 2 + std::log2(static_cast<double>(rs.rows) + 1);
  if (dw) {
    dw->want = dws, dw->mag = dwa;
    for (double& v : dw->mag) v *= rgrow;
    if (!layer) dw->want = dws;
  }
  if (db) {
    db->want = dbs, db->mag = dba;
    for (double& v : db->mag) v *= rgrow;
  }
  return {};
}

}  // namespace

OpRef ref_norm() { return {nullptr, &forward, nullptr}; }
OpRef ref_norm_backward() { return {&backward_fill, &backward, nullptr}; }

}  // namespace baracuda::harness
