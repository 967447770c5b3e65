// Reference adapters of the rope rows: positions drawn inside the cache (or anywhere), the
// float64 rotation per side, and an error scale of (|x1| + |x2|)·m per rotated element plus the
// angle's own rounding (|θ|·2^-50·scale: θ is formed in float64 from a frequency that may differ
// by an ulp from the reference's).
#include <cmath>

#include "baracuda/ops/rope.hpp"
#include "harness/op_case.hpp"
#include "harness/ref_common.hpp"
#include "rope_ref.hpp"

namespace baracuda::harness {

namespace {

void fill(RefCall& c) {
  const RopeDescriptor& d = c.desc<RopeDescriptor>();
  if (RefOperand* p = c.find("positions")) {
    const int64_t top = d.cos_sin_cache ? d.cache_rows : 100000;
    p->in.resize(static_cast<size_t>(p->spec->numel()));
    for (double& v : p->in) v = top > 0 ? static_cast<double>(c.rng()() % static_cast<uint64_t>(top)) : 0.0;
    p->given = true;
  }
}

Status compute(RefCall& c, bool backward) {
  const RopeDescriptor& d = c.desc<RopeDescriptor>();
  const std::vector<int64_t> pos = ref::rope_positions(d, c.find("positions") ? as_ints(c["positions"].in) : std::vector<int64_t>{});
  std::vector<double> w, cos, sin;
  double m = 2;  // a cache's values are in [-2, 2]
  if (d.cos_sin_cache) cos = c["cos"].in, sin = c["sin"].in;
  else ref::rope_frequencies(d, &w, &m);
  const int64_t R = d.rot_dim(), half = R / 2, D = d.head_dim;
  const char* in_name[2] = {backward ? "dq_out" : "q", backward ? "dk_out" : "k"};
  const char* out_name[2] = {backward ? "dq" : "q_out", backward ? "dk" : "k_out"};
  for (int x = 0; x < (d.heads_k > 0 ? 2 : 1); ++x) {
    const int64_t H = x == 0 ? d.heads_q : d.heads_k;
    const std::vector<double>& xin = c[in_name[x]].in;
    RefOperand& o = c[out_name[x]];
    o.want = ref::rope_apply(d, H, xin, pos, cos, sin, backward);
    o.mag.assign(o.want.size(), 0.0);
    o.extra.assign(o.want.size(), 0.0);
    for (size_t f = 0; f < o.want.size(); ++f) {
      const int64_t i = static_cast<int64_t>(f) % D;
      if (i >= R) continue;  // pass-through: moved, compared at the output's rounding
      const int64_t partner = d.pairing == RopePairing::kHalf ? (i < half ? i + half : i - half) : (i ^ 1);
      const double scale = (std::fabs(xin[f]) + std::fabs(xin[f - static_cast<size_t>(i) + static_cast<size_t>(partner)])) * m;
      o.mag[f] = scale;
      if (!d.cos_sin_cache) {
        const int64_t row = static_cast<int64_t>(f) / D;
        const bool bshd = d.layout == RopeLayout::kBSHD;
        const int64_t b = bshd ? row / H / d.seq : row / d.seq / H, s = bshd ? (row / H) % d.seq : row % d.seq;
        const int64_t pair = d.pairing == RopePairing::kHalf ? (i < half ? i : i - half) : i / 2;
        o.extra[f] = 8 * std::fabs(static_cast<double>(pos[static_cast<size_t>(b * d.seq + s)]) * w[static_cast<size_t>(pair)]) *
                     1.1102230246251565e-16 * scale;
      }
    }
  }
  return {};
}

Status forward(RefCall& c) { return compute(c, false); }
Status backward(RefCall& c) { return compute(c, true); }

}  // namespace

OpRef ref_rope() { return {&fill, &forward, nullptr}; }
OpRef ref_rope_backward() { return {&fill, &backward, nullptr}; }

}  // namespace baracuda::harness
