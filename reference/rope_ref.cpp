#include "rope_ref.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

namespace baracuda::ref {

void rope_frequencies(const RopeDescriptor& d, std::vector<double>* inv_freq, double* mscale) {
  const int64_t dim = d.rotary_dim == 0 ? d.head_dim : d.rotary_dim;
  const RopeScalingParams& c = d.scale;
  const double pi = std::numbers::pi;
  inv_freq->assign(static_cast<size_t>(dim / 2), 0.0);
  *mscale = 1.0;
  // HF: yarn find_correction_range (truncated) and linear_ramp_factor
  double low = 0, high = 1;
  if (d.scaling == RopeScaling::kYaRN) {
    const double L = static_cast<double>(c.original_max_position);
    low = std::floor(dim * std::log(L / (c.beta_fast * 2 * pi)) / (2 * std::log(d.base)));
    high = std::ceil(dim * std::log(L / (c.beta_slow * 2 * pi)) / (2 * std::log(d.base)));
    low = std::max(low, 0.0);
    high = std::min(high, static_cast<double>(dim - 1));
    if (low == high) high += 0.001;
    *mscale = c.attention_factor != 0 ? c.attention_factor : (c.factor <= 1 ? 1.0 : 0.1 * std::log(c.factor) + 1.0);
  }
  for (int64_t i = 0; i < dim / 2; ++i) {
    const double pos_freq = std::pow(d.base, static_cast<double>(2 * i) / static_cast<double>(dim));
    const double base_freq = 1.0 / pos_freq;
    double f = base_freq;
    if (d.scaling == RopeScaling::kLinear) {
      f = base_freq / c.factor;
    } else if (d.scaling == RopeScaling::kYaRN) {
      const double extrapolation = 1.0 - std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
      f = (1.0 / (c.factor * pos_freq)) * (1 - extrapolation) + base_freq * extrapolation;
    } else if (d.scaling == RopeScaling::kLlama3) {
      const double L = static_cast<double>(c.original_max_position);
      const double wavelen = 2 * pi / base_freq;
      const double low_wl = L / c.low_freq_factor, high_wl = L / c.high_freq_factor;
      const double llama = wavelen > low_wl ? base_freq / c.factor : base_freq;
      const double smooth = (L / wavelen - c.low_freq_factor) / (c.high_freq_factor - c.low_freq_factor);
      const bool medium = !(wavelen < high_wl) && !(wavelen > low_wl);
      f = medium ? (1 - smooth) * llama / c.factor + smooth * llama : llama;
    }
    (*inv_freq)[static_cast<size_t>(i)] = f;
  }
}

std::vector<int64_t> rope_positions(const RopeDescriptor& d, const std::vector<int64_t>& positions) {
  std::vector<int64_t> p(static_cast<size_t>(d.batch * d.seq));
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t s = 0; s < d.seq; ++s)
      p[static_cast<size_t>(b * d.seq + s)] = d.positions_rank == 0   ? d.position_offset + s
                                              : d.positions_rank == 1 ? positions[static_cast<size_t>(s)]
                                                                      : positions[static_cast<size_t>(b * d.seq + s)];
  return p;
}

std::vector<double> rope_apply(const RopeDescriptor& d, int64_t heads, const std::vector<double>& x,
                               const std::vector<int64_t>& pos, const std::vector<double>& cos,
                               const std::vector<double>& sin, bool backward) {
  const int64_t D = d.head_dim, R = d.rotary_dim == 0 ? D : d.rotary_dim, half = R / 2;
  std::vector<double> inv_freq;
  double m = 1;
  if (!d.cos_sin_cache) rope_frequencies(d, &inv_freq, &m);
  std::vector<double> y = x;
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t s = 0; s < d.seq; ++s) {
        const int64_t row = d.layout == RopeLayout::kBHSD ? ((b * heads + h) * d.seq + s) : ((b * d.seq + s) * heads + h);
        const double* xr = x.data() + row * D;
        double* yr = y.data() + row * D;
        const int64_t p = pos[static_cast<size_t>(b * d.seq + s)];
        for (int64_t i = 0; i < half; ++i) {
          double c, sn;
          if (d.cos_sin_cache) {
            const bool in = p >= 0 && p < d.cache_rows;
            c = in ? cos[static_cast<size_t>(p * half + i)] : std::numeric_limits<double>::quiet_NaN();
            sn = in ? sin[static_cast<size_t>(p * half + i)] : std::numeric_limits<double>::quiet_NaN();
          } else {
            const double theta = static_cast<double>(p) * inv_freq[static_cast<size_t>(i)];
            c = m * std::cos(theta);
            sn = m * std::sin(theta);
          }
          const int64_t i1 = d.pairing == RopePairing::kHalf ? i : 2 * i;
          const int64_t i2 = d.pairing == RopePairing::kHalf ? i + half : 2 * i + 1;
          const double x1 = xr[i1], x2 = xr[i2];
          if (!backward) {  // x·cos + rotate_half(x)·sin, rotate_half = (−x2, x1)
            yr[i1] = x1 * c - x2 * sn;
            yr[i2] = x2 * c + x1 * sn;
          } else {  // transpose of [[c, −s], [s, c]]
            yr[i1] = x1 * c + x2 * sn;
            yr[i2] = -x1 * sn + x2 * c;
          }
        }
      }
  return y;
}

}  // namespace baracuda::ref
