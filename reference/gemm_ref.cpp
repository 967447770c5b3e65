#include "gemm_ref.hpp"

#include <cmath>
#include <functional>

namespace baracuda::ref {

namespace {

constexpr double kSqrt2OverPi = 0.7978845608028654, kKappa = 0.044715;

// The loop nest shared by forward, backward and |product|: calls f(ia, ib, io, m, n, k-range...)
// once per (product batch index, m, n) with the flat row-major indices of a[.., m, 0], the
// element stride of a along k, and likewise for b; io is out's flat index (summed dims fold).
struct Geometry {
  int nb = 0;
  int64_t prod[kMaxRank] = {};
  int64_t M = 1, N = 1, K = 1;
  std::vector<int64_t> a_shape, b_shape, o_shape, c_shape;
  bool a1 = false, b1 = false;
};

int64_t numel_of(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t e : s) n *= e;
  return n;
}

std::vector<int64_t> shape_vec(const TensorLayout& t) { return std::vector<int64_t>(t.shape, t.shape + std::max(0, t.rank)); }

Geometry geometry(const GemmDescriptor& d) {
  Geometry g;
  g.a_shape = shape_vec(d.a);
  g.b_shape = shape_vec(d.b);
  g.o_shape = shape_vec(d.out);
  if (d.has_c) g.c_shape = shape_vec(d.c);
  // b as [.., K, N]
  if (d.transpose_b && g.b_shape.size() >= 2) std::swap(g.b_shape[g.b_shape.size() - 1], g.b_shape[g.b_shape.size() - 2]);
  g.a1 = g.a_shape.size() == 1;
  g.b1 = g.b_shape.size() == 1;
  g.M = g.a1 ? 1 : g.a_shape[g.a_shape.size() - 2];
  g.K = g.a_shape.back();
  g.N = g.b1 ? 1 : g.b_shape.back();
  const int nba = std::max<int>(0, static_cast<int>(g.a_shape.size()) - 2), nbb = std::max<int>(0, static_cast<int>(g.b_shape.size()) - 2);
  g.nb = std::max(nba, nbb);
  for (int i = 0; i < g.nb; ++i) {
    const int ia = i - (g.nb - nba), ib = i - (g.nb - nbb);
    const int64_t ea = ia >= 0 ? g.a_shape[ia] : 1, eb = ib >= 0 ? g.b_shape[ib] : 1;
    g.prod[i] = ea == 1 ? eb : ea;
  }
  return g;
}

// flat index of a broadcast operand of `shape` (right-aligned to the full index `idx` of rank r)
int64_t bcast_index(const std::vector<int64_t>& shape, const int64_t* idx, int r) {
  int64_t f = 0;
  const int off = r - static_cast<int>(shape.size());
  for (size_t j = 0; j < shape.size(); ++j) {
    const int64_t e = shape[j];
    const int64_t x = (off + static_cast<int>(j) >= 0 && e != 1) ? idx[off + j] : 0;
    f = f * e + x;
  }
  return f;
}

// visits every (batch, m, n) with the flat indices of a[batch, m, k=0], b[batch, k=0, n],
// out[.., m, n] (summed dims folded) and the k strides of a and b in their row-major arrays
void for_each_mn(const Geometry& g, const std::function<void(int64_t ia, int64_t sa, int64_t ib, int64_t sb, int64_t io,
                                                             int64_t m, int64_t n)>& f, bool transpose_b) {
  int64_t nbatch = 1;
  for (int i = 0; i < g.nb; ++i) nbatch *= g.prod[i];
  const int nba = std::max<int>(0, static_cast<int>(g.a_shape.size()) - 2);
  const int nbb = std::max<int>(0, static_cast<int>(g.b_shape.size()) - 2);
  const int nbo = static_cast<int>(g.o_shape.size()) - (!g.a1) - (!g.b1);
  std::vector<int64_t> ab(g.a_shape.begin(), g.a_shape.begin() + nba), bb(g.b_shape.begin(), g.b_shape.begin() + nbb);
  std::vector<int64_t> ob(g.o_shape.begin(), g.o_shape.begin() + nbo);
  int64_t idx[kMaxRank];
  for (int64_t bi = 0; bi < nbatch; ++bi) {
    int64_t rem = bi;
    for (int i = g.nb - 1; i >= 0; --i) idx[i] = rem % g.prod[i], rem /= g.prod[i];
    const int64_t fa = bcast_index(ab, idx, g.nb), fb = bcast_index(bb, idx, g.nb), fo = bcast_index(ob, idx, g.nb);
    for (int64_t m = 0; m < g.M; ++m)
      for (int64_t n = 0; n < g.N; ++n) {
        const int64_t ia = (fa * g.M + m) * g.K;
        // b stored [.., K, N] or, transposed, [.., N, K]
        int64_t ib, sb;
        if (g.b1) ib = 0, sb = 1;
        else if (transpose_b) ib = (fb * g.N + n) * g.K, sb = 1;
        else ib = fb * g.K * g.N + n, sb = g.N;
        const int64_t io = (fo * g.M + m) * g.N + n;
        f(ia, 1, ib, sb, io, m, n);
      }
  }
}

}  // namespace

double gemm_activation(GemmActivation act, double z) {
  switch (act) {
    case GemmActivation::kRelu: return std::isnan(z) ? z : (z > 0 ? z : 0.0);
    case GemmActivation::kGeluTanh: return 0.5 * z * (1.0 + std::tanh(kSqrt2OverPi * (z + kKappa * z * z * z)));
    case GemmActivation::kGeluErf: return 0.5 * z * (1.0 + std::erf(z / std::sqrt(2.0)));
    default: return z;
  }
}

double gemm_activation_grad(GemmActivation act, double z) {
  switch (act) {
    case GemmActivation::kRelu: return z > 0 ? 1.0 : 0.0;
    case GemmActivation::kGeluTanh: {
      const double u = kSqrt2OverPi * (z + kKappa * z * z * z), th = std::tanh(u);
      return 0.5 * (1.0 + th) + 0.5 * z * (1.0 - th * th) * kSqrt2OverPi * (1.0 + 3.0 * kKappa * z * z);
    }
    case GemmActivation::kGeluErf:
      return 0.5 * (1.0 + std::erf(z / std::sqrt(2.0))) + z * std::exp(-0.5 * z * z) / std::sqrt(2.0 * M_PI);
    default: return 1.0;
  }
}

GemmForwardRef gemm_forward(const GemmDescriptor& d, const std::vector<double>& a, const std::vector<double>& b,
                            const std::vector<double>& c, const std::vector<double>& bias, bool f32_math,
                            double (*round_product)(double), const std::vector<double>* aux) {
  const Geometry g = geometry(d);
  const int64_t on = numel_of(g.o_shape);
  std::vector<double> p(static_cast<size_t>(on), 0.0);
  auto rnd = [&](double v) { return f32_math ? static_cast<double>(static_cast<float>(v)) : v; };
  for_each_mn(g, [&](int64_t ia, int64_t sa, int64_t ib, int64_t sb, int64_t io, int64_t, int64_t) {
    double s = 0;
    for (int64_t k = 0; k < g.K; ++k) s = rnd(s + rnd(a[ia + k * sa] * b[ib + k * sb]));
    p[io] = rnd(p[io] + s);
  }, d.transpose_b);
  GemmForwardRef r;
  r.out.resize(on);
  r.preact.resize(on);
  const int orank = static_cast<int>(g.o_shape.size());
  std::vector<int64_t> idx(orank);
  for (int64_t i = 0; i < on; ++i) {
    int64_t rem = i;
    for (int j = orank - 1; j >= 0; --j) idx[j] = rem % g.o_shape[j], rem /= g.o_shape[j];
    double z = rnd(d.alpha * p[i]);
    if (round_product) z = round_product(z);
    if (d.has_c && d.beta != 0.0) z = rnd(z + rnd(d.beta * c[bcast_index(g.c_shape, idx.data(), orank)]));
    if (d.has_bias) z = rnd(z + bias[orank > 0 && !g.b1 ? idx[orank - 1] : 0]);
    r.preact[i] = z;
    r.out[i] = d.grad_activation != GemmActivation::kNone ? rnd(z * gemm_activation_grad(d.grad_activation, (*aux)[i]))
                                                          : rnd(gemm_activation(d.activation, z));
  }
  if (d.has_bias_grad) {
    r.bias_grad.assign(static_cast<size_t>(g.N), 0.0);
    for (int64_t i = 0; i < on; ++i) r.bias_grad[i % g.N] += r.out[i];
  }
  return r;
}

GemmBackwardRef gemm_backward(const GemmDescriptor& d, const std::vector<double>& a, const std::vector<double>& b,
                              const std::vector<double>& c, const std::vector<double>& bias,
                              const std::vector<double>& d_out) {
  const Geometry g = geometry(d);
  const GemmForwardRef f = gemm_forward(d, a, b, c, bias);
  const int64_t on = numel_of(g.o_shape);
  std::vector<double> dz(on);
  for (int64_t i = 0; i < on; ++i) dz[i] = d_out[i] * gemm_activation_grad(d.activation, f.preact[i]);
  GemmBackwardRef r;
  r.da.assign(a.size(), 0.0);
  r.db.assign(b.size(), 0.0);
  for_each_mn(g, [&](int64_t ia, int64_t sa, int64_t ib, int64_t sb, int64_t io, int64_t, int64_t) {
    for (int64_t k = 0; k < g.K; ++k) {
      r.da[ia + k * sa] += d.alpha * dz[io] * b[ib + k * sb];
      r.db[ib + k * sb] += d.alpha * dz[io] * a[ia + k * sa];
    }
  }, d.transpose_b);
  const int orank = static_cast<int>(g.o_shape.size());
  if (d.has_bias) {
    r.dbias.assign(bias.size(), 0.0);
    for (int64_t i = 0; i < on; ++i) r.dbias[g.b1 ? 0 : i % g.N] += dz[i];
  }
  if (d.has_c) {
    r.dc.assign(c.size(), 0.0);
    std::vector<int64_t> idx(orank);
    for (int64_t i = 0; i < on; ++i) {
      int64_t rem = i;
      for (int j = orank - 1; j >= 0; --j) idx[j] = rem % g.o_shape[j], rem /= g.o_shape[j];
      r.dc[bcast_index(g.c_shape, idx.data(), orank)] += d.beta * dz[i];
    }
  }
  return r;
}

std::vector<double> gemm_abs_product(const GemmDescriptor& d, const std::vector<double>& a, const std::vector<double>& b) {
  const Geometry g = geometry(d);
  std::vector<double> p(static_cast<size_t>(numel_of(g.o_shape)), 0.0);
  for_each_mn(g, [&](int64_t ia, int64_t sa, int64_t ib, int64_t sb, int64_t io, int64_t, int64_t) {
    double s = 0;
    for (int64_t k = 0; k < g.K; ++k) s += std::fabs(a[ia + k * sa] * b[ib + k * sb]);
    p[io] += s;
  }, d.transpose_b);
  return p;
}

std::vector<double> bilinear_forward(int64_t B, int64_t I, int64_t J, int64_t O, const std::vector<double>& x1,
                                     const std::vector<double>& x2, const std::vector<double>& w,
                                     const std::vector<double>& bias) {
  std::vector<double> y(static_cast<size_t>(B * O), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t o = 0; o < O; ++o) {
      double s = bias.empty() ? 0.0 : bias[o];
      for (int64_t i = 0; i < I; ++i)
        for (int64_t j = 0; j < J; ++j) s += x1[b * I + i] * w[(o * I + i) * J + j] * x2[b * J + j];
      y[b * O + o] = s;
    }
  return y;
}

BilinearBackwardRef bilinear_backward(int64_t B, int64_t I, int64_t J, int64_t O, const std::vector<double>& x1,
                                      const std::vector<double>& x2, const std::vector<double>& w,
                                      const std::vector<double>& d_out) {
  BilinearBackwardRef r;
  r.dx1.assign(static_cast<size_t>(B * I), 0.0);
  r.dx2.assign(static_cast<size_t>(B * J), 0.0);
  r.dw.assign(static_cast<size_t>(O * I * J), 0.0);
  r.dbias.assign(static_cast<size_t>(O), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t o = 0; o < O; ++o) {
      const double g = d_out[b * O + o];
      r.dbias[o] += g;
      for (int64_t i = 0; i < I; ++i)
        for (int64_t j = 0; j < J; ++j) {
          const double wv = w[(o * I + i) * J + j];
          r.dx1[b * I + i] += g * wv * x2[b * J + j];
          r.dx2[b * J + j] += g * wv * x1[b * I + i];
          r.dw[(o * I + i) * J + j] += g * x1[b * I + i] * x2[b * J + j];
        }
    }
  return r;
}

}  // namespace baracuda::ref
