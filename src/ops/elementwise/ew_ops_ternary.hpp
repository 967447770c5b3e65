// The scalar functions of the elementwise ops of group "ternary" (the 5th column of
// BARACUDA_EW_OPS, elementwise_ops.hpp): their op_<name> structs and the helpers only they use.
// ew_ops.hpp describes the structs; ew_ops_common.hpp holds what several groups share.
// Included by ew_inst_ternary.cu (its kernels) and by ew_ops.hpp (every op).
#pragma once

#include "ops/elementwise/ew_ops_common.hpp"

#include "ops/elementwise/ew_ops_macros.inc"

namespace baracuda::ew {

// PyTorch's lerp: the endpoint-exact two-branch formula.
template <class C> BARACUDA_HD C lerp_f(C a, C b, C w) {
  return m::fabs(w) < C(0.5) ? a + w * (b - a) : b - (b - a) * (C(1) - w);
}

// ------------------------------------------------------------------ binary arithmetic (group ternary)
// p0 weight
EW_UN(lerp_scalar) {
  F2 { return lerp_f(a, b, p.v[0]); }
  D2 { (void)a; (void)b; da = g * (C(1) - p.v[0]); db = g * p.v[0]; }
};
// (x, mask) -> mask ? p0 : x
EW_UN(masked_fill) {
  F2 { return b != C(0) ? p.v[0] : a; }
  D2 { UNUSED_P; (void)a; da = b != C(0) ? C(0) : g; db = C(0); }
};

// ------------------------------------------------------------------ ternary
EW_UN(where) {
  F3 { UNUSED_P; return a != C(0) ? b : c; }
  D3 {
    UNUSED_P;
    da = C(0);
    db = a != C(0) ? g : C(0);
    dc = a != C(0) ? C(0) : g;
    (void)b; (void)c;
  }
};
EW_UN(clamp_tensor) {
  F3 { UNUSED_P; return nan_min(nan_max(a, b), c); }
  D3 {  // PyTorch: when max < min everything goes to max
    UNUSED_P;
    const bool inverted = c < b;
    da = (!inverted && a >= b && a <= c) ? g : C(0);
    db = (!inverted && a < b) ? g : C(0);
    dc = (inverted || a > c) ? g : C(0);
  }
};
// p0 value
// PyTorch: a + value * (b * c) and a + value * (b / c), the add contracted into an fma
EW_UN(addcmul) {
  F3 { if constexpr (kIsInt<C>) return wadd(a, wmul(p.v[0], wmul(b, c))); else return m::fma(p.v[0], b * c, a); }
  D3 { (void)a; da = g; db = g * p.v[0] * c; dc = g * p.v[0] * b; }
};
EW_UN(addcdiv) {
  F3 { if constexpr (kIsInt<C>) return wadd(a, wmul(p.v[0], idiv(b, c))); else return m::fma(p.v[0], b / c, a); }
  D3 { (void)a; da = g; db = g * p.v[0] / c; dc = -g * p.v[0] * b / (c * c); }
};
EW_UN(lerp) {
  F3 { UNUSED_P; return lerp_f(a, b, c); }
  D3 {
    UNUSED_P;
    da = g * (C(1) - c);
    db = g * c;
    dc = g * (b - a);
  }
};
EW_UN(fma) {
  F3 { UNUSED_P; return m::fma(a, b, c); }
  D3 { UNUSED_P; (void)c; da = g * b; db = g * a; dc = g; }
};

}  // namespace baracuda::ew

#include "ops/elementwise/ew_ops_macros_end.inc"
