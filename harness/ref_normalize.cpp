// Reference adapters of the normalize rows: each line (normalize: along dim; weight_norm: every
// element but those along dim) through reference/softmax_norm_loss_ref.cpp's normalize_line /
// weight_norm_line and their backward; the backward's norm (weight_norm) is the forward's, stored
// in its dtype by the fill. Error scales (64 accumulator epsilons of them): each output's |terms|
// (|y|, or |dy| / n plus the projection's Σ |dy x| / n² · |d n / d x|) times the sum's growth
// 4 + log2(N), times 1 + |p - 1| for the pow of a general p.
#include <algorithm>
#include <cmath>

#include "baracuda/ops/normalize.hpp"
#include "harness/op_case.hpp"
#include "harness/ref_common.hpp"
#include "softmax_norm_loss_ref.hpp"

namespace baracuda::harness {

namespace {

int axis_of(const NormalizeDescriptor& d) { return d.dim < 0 ? d.dim + d.rank : d.dim; }

// Each line's flat indices (row-major, element order); weight_norm: line k holds every index
// whose coordinate on the kept axis is k.
std::vector<std::vector<int64_t>> lines_of(const NormalizeDescriptor& d) {
  const std::span<const int64_t> shape(d.shape, static_cast<size_t>(d.rank));
  const int axis = axis_of(d);
  if (d.op == NormalizeKind::kNormalize) return line_indices(shape, axis);
  int64_t inner = 1;
  for (int a = axis + 1; a < d.rank; ++a) inner *= d.shape[a];
  std::vector<std::vector<int64_t>> lines(static_cast<size_t>(d.shape[axis]));
  const int64_t n = numel_of(shape);
  for (int64_t f = 0; f < n; ++f) lines[static_cast<size_t>((f / inner) % d.shape[axis])].push_back(f);
  return lines;
}

double growth(const NormalizeDescriptor& d, size_t n) {
  const double p = d.op == NormalizeKind::kWeightNorm ? 2.0 : d.p;
  return (4 + std::log2(static_cast<double>(n) + 1)) * (std::isinf(p) ? 1.0 : 1 + std::fabs(p - 1));
}

void backward_fill(RefCall& c) {
  const NormalizeDescriptor& d = c.desc<NormalizeDescriptor>();
  RefOperand* norm = c.find("norm");
  if (!norm) return;
  // the forward's norm of the random input (given now: the input is drawn first)
  RefOperand& x = c["input"];
  std::uniform_real_distribution<double> u(x.lo, x.hi);
  x.in.resize(static_cast<size_t>(x.spec->numel()));
  for (double& v : x.in) v = bits_to_double(x.spec->dtype, double_to_bits(x.spec->dtype, u(c.rng())));
  x.given = true;
  const auto lines = lines_of(d);
  norm->in.assign(lines.size(), 0.0);
  for (size_t k = 0; k < lines.size(); ++k)
    norm->in[k] = bits_to_double(norm->spec->dtype, double_to_bits(norm->spec->dtype, ref::vector_norm(gather_at(x.in, lines[k]), 2.0)));
  norm->given = true;
}

Status forward(RefCall& c) {
  const NormalizeDescriptor& d = c.desc<NormalizeDescriptor>();
  const std::vector<double>& x = c["input"].in;
  RefOperand& y = c["output"];
  RefOperand* norm = c.find("norm");
  y.want.assign(x.size(), 0.0), y.mag.assign(x.size(), 0.0);
  const auto lines = lines_of(d);
  if (norm) norm->want.assign(lines.size(), 0.0), norm->mag.assign(lines.size(), 0.0);
  for (size_t k = 0; k < lines.size(); ++k) {
    const std::vector<double> xl = gather_at(x, lines[k]);
    const double gr = growth(d, xl.size());
    std::vector<double> yl;
    if (d.op == NormalizeKind::kWeightNorm) {
      double n = 0;
      yl = ref::weight_norm_line(xl, c["g"].in[k], &n);
      if (norm) norm->want[k] = n, norm->mag[k] = std::fabs(n) * gr;
    } else {
      yl = ref::normalize_line(xl, d.p, d.eps);
    }
    for (size_t i = 0; i < xl.size(); ++i) {
      const size_t f = static_cast<size_t>(lines[k][i]);
      y.want[f] = yl[i], y.mag[f] = std::fabs(yl[i]) * gr;
    }
  }
  return {};
}

Status backward(RefCall& c) {
  const NormalizeDescriptor& d = c.desc<NormalizeDescriptor>();
  const bool wn = d.op == NormalizeKind::kWeightNorm;
  const std::vector<double>& x = c["input"].in;
  const std::vector<double>& dy = c["doutput"].in;
  RefOperand& dx = c["dinput"];
  RefOperand* dg = c.find("dg");
  dx.want.assign(x.size(), 0.0), dx.mag.assign(x.size(), 0.0);
  const auto lines = lines_of(d);
  if (dg) dg->want.assign(lines.size(), 0.0), dg->mag.assign(lines.size(), 0.0);
  for (size_t k = 0; k < lines.size(); ++k) {
    const std::vector<double> xl = gather_at(x, lines[k]), dyl = gather_at(dy, lines[k]);
    const double gr = growth(d, xl.size());
    double dot_abs = 0;
    for (size_t i = 0; i < xl.size(); ++i) dot_abs += std::fabs(dyl[i] * xl[i]);
    std::vector<double> dxl;
    if (wn) {
      const double g = c["g"].in[k], n = c["norm"].in[k];
      double dgk = 0;
      dxl = ref::weight_norm_line_backward(xl, g, n, dyl, &dgk);
      if (dg) dg->want[k] = dgk, dg->mag[k] = dot_abs / std::fabs(n) * gr;
      for (size_t i = 0; i < xl.size(); ++i) {
        const size_t f = static_cast<size_t>(lines[k][i]);
        dx.want[f] = dxl[i], dx.mag[f] = std::fabs(g / n) * (std::fabs(dyl[i]) + dot_abs / (n * n) * std::fabs(xl[i])) * gr;
      }
      continue;
    }
    dxl = ref::normalize_line_backward(xl, dyl, d.p, d.eps);
    const double n = ref::vector_norm(xl, d.p), den = n < d.eps ? d.eps : n;
    for (size_t i = 0; i < xl.size(); ++i) {
      const size_t f = static_cast<size_t>(lines[k][i]);
      const double a = std::fabs(xl[i]), dn = std::isinf(d.p) ? (a == n ? 1.0 : 0.0) : (a == 0 ? 0.0 : std::pow(a / n, d.p - 1));
      dx.want[f] = dxl[i], dx.mag[f] = (std::fabs(dyl[i]) / den + dot_abs / (den * den) * dn) * gr;
    }
  }
  return {};
}

}  // namespace

OpRef ref_normalize() { return {nullptr, &forward, nullptr}; }
OpRef ref_normalize_backward() { return {&backward_fill, &backward, nullptr}; }

}  // namespace baracuda::harness
