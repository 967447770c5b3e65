// Float64 causal conv1d reference: direct sums over the extended row xe = [s0, x].
#include "causal_conv1d_ref.hpp"

#include <algorithm>
#include <cmath>

namespace baracuda::ref {

namespace {

double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

// xe[i], i in [0, L + W − 1), of row (b, c).
double xe_at(const Conv1dShape& s, const std::vector<double>& x, const std::vector<double>& s0, int64_t b, int64_t c,
             int64_t i) {
  const int64_t W1 = s.W - 1;
  if (i < W1) return s0.empty() ? 0.0 : s0[(b * s.C + c) * W1 + i];
  return x[(b * s.C + c) * s.L + (i - W1)];
}

double pre_activation(const Conv1dShape& s, const std::vector<double>& x, const std::vector<double>& w,
                      const std::vector<double>& bias, const std::vector<double>& s0, int64_t b, int64_t c, int64_t t) {
  double z = bias.empty() ? 0.0 : bias[c];
  for (int k = 0; k < s.W; ++k) z += w[c * s.W + k] * xe_at(s, x, s0, b, c, t + k);
  return z;
}

}  // namespace

void causal_conv1d_forward(const Conv1dShape& s, const std::vector<double>& x, const std::vector<double>& w,
                           const std::vector<double>& bias, const std::vector<double>& s0, std::vector<double>* y,
                           std::vector<double>* final_states) {
  const int64_t W1 = s.W - 1;
  y->assign(s.B * s.C * s.L, 0.0);
  final_states->assign(s.B * s.C * W1, 0.0);
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t c = 0; c < s.C; ++c) {
      for (int64_t t = 0; t < s.L; ++t) {
        const double z = pre_activation(s, x, w, bias, s0, b, c, t);
        (*y)[(b * s.C + c) * s.L + t] = s.silu ? z * sigmoid(z) : z;
      }
      for (int64_t j = 0; j < W1; ++j) (*final_states)[(b * s.C + c) * W1 + j] = xe_at(s, x, s0, b, c, s.L + j);
    }
}

void causal_conv1d_backward(const Conv1dShape& s, const std::vector<double>& x, const std::vector<double>& w,
                            const std::vector<double>& bias, const std::vector<double>& s0,
                            const std::vector<double>& dy, const std::vector<double>& dfinal,
                            std::vector<double>* dx, std::vector<double>* dw, std::vector<double>* db,
                            std::vector<double>* ds0) {
  const int64_t W1 = s.W - 1, E = s.L + W1;
  dx->assign(s.B * s.C * s.L, 0.0);
  dw->assign(s.C * s.W, 0.0);
  db->assign(s.C, 0.0);
  ds0->assign(s.B * s.C * W1, 0.0);
  std::vector<double> dz(s.L), dxe(E);
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t c = 0; c < s.C; ++c) {
      for (int64_t t = 0; t < s.L; ++t) {
        const double g = dy[(b * s.C + c) * s.L + t];
        if (s.silu) {
          const double z = pre_activation(s, x, w, bias, s0, b, c, t), sg = sigmoid(z);
          dz[t] = g * sg * (1.0 + z * (1.0 - sg));
        } else {
          dz[t] = g;
        }
      }
      std::fill(dxe.begin(), dxe.end(), 0.0);
      for (int64_t t = 0; t < s.L; ++t)
        for (int k = 0; k < s.W; ++k) {
          dxe[t + k] += w[c * s.W + k] * dz[t];
          (*dw)[c * s.W + k] += dz[t] * xe_at(s, x, s0, b, c, t + k);
        }
      for (int64_t t = 0; t < s.L; ++t) (*db)[c] += dz[t];
      if (!dfinal.empty())
        for (int64_t j = 0; j < W1; ++j) dxe[s.L + j] += dfinal[(b * s.C + c) * W1 + j];
      for (int64_t i = 0; i < E; ++i) {
        if (i < W1) (*ds0)[(b * s.C + c) * W1 + i] = dxe[i];
        else (*dx)[(b * s.C + c) * s.L + (i - W1)] = dxe[i];
      }
    }
}

std::vector<double> causal_conv1d_update(const Conv1dShape& s, int64_t n, int64_t S, const std::vector<double>& x,
                                         const std::vector<double>& w, const std::vector<double>& bias,
                                         std::vector<double>* state, int64_t state_rows,
                                         const std::vector<int32_t>& seqlens, const std::vector<int32_t>& indices) {
  const int64_t W1 = s.W - 1;
  std::vector<double> y(s.B * s.C * n, 0.0);
  for (int64_t b = 0; b < s.B; ++b) {
    const int64_t row = indices.empty() ? b : indices[b];
    if (row < 0 || row >= state_rows) continue;  // padding row: y stays zero
    for (int64_t c = 0; c < s.C; ++c) {
      double* st = state->data() + (row * s.C + c) * S;
      // u = [W−1 entries before the new tokens, new tokens]
      std::vector<double> u(W1 + n);
      const int64_t head = seqlens.empty() ? 0 : ((seqlens[b] % S) + S) % S;
      for (int64_t j = 1; j <= W1; ++j)
        u[W1 - j] = seqlens.empty() ? st[S - j] : st[((head - j) % S + S) % S];
      for (int64_t i = 0; i < n; ++i) u[W1 + i] = x[(b * s.C + c) * n + i];
      for (int64_t i = 0; i < n; ++i) {
        double z = bias.empty() ? 0.0 : bias[c];
        for (int k = 0; k < s.W; ++k) z += w[c * s.W + k] * u[i + k];
        y[(b * s.C + c) * n + i] = s.silu ? z * sigmoid(z) : z;
      }
      if (seqlens.empty()) {
        std::vector<double> all(st, st + S);
        for (int64_t i = 0; i < n; ++i) all.push_back(x[(b * s.C + c) * n + i]);
        for (int64_t j = 0; j < S; ++j) st[j] = all[all.size() - S + j];
      } else {
        for (int64_t i = 0; i < n; ++i) st[(head + i) % S] = x[(b * s.C + c) * n + i];
      }
    }
  }
  return y;
}

}  // namespace baracuda::ref
