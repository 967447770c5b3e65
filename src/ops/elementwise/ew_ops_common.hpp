// What the scalar functions of the elementwise ops share (ew_ops.hpp describes the op structs):
// the parameter block P, the integer and math helpers used by ops of more than one group,
// FlatDepth, and the adapters Fwd / Bwd / FrexpBoth through which the engine calls an op.
// The op structs themselves live in one header per group of elementwise_ops.hpp
// (ew_ops_<group>.hpp): a kernel unit ew_inst_<group>.cu includes this and its own group's
// header only; ew_ops.hpp includes every group, for the code that needs every op.
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>
#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

#include "baracuda/core/half_bits.hpp"
#include "ops/elementwise/ew_math.hpp"

namespace baracuda::ew {

template <class C>
struct P {
  C v[4];
};

template <class C> inline constexpr bool kIsInt = std::is_integral_v<C>;

// Integer helpers: wrap-around arithmetic in 64 bits (narrowing on store reproduces PyTorch's
// wrap-around in every integer width), and CUDA's i8/i16/i32 division-by-zero result (-1).
// (wadd, wsub, wmul, wneg, nan_max, nan_min: core/arith.hpp)
BARACUDA_HD bool fits32(int64_t a) { return a == static_cast<int32_t>(a); }
// 64-bit division is a long software sequence on the GPU: divide in 32 bits when both fit.
BARACUDA_HD int64_t idiv(int64_t a, int64_t b) {
  if (b == 0) return -1;
  if (b == -1) return wneg(a);
  if (fits32(a) && fits32(b)) return static_cast<int32_t>(a) / static_cast<int32_t>(b);
  return a / b;
}
BARACUDA_HD int64_t imod(int64_t a, int64_t b) {
  if (b == 0) return -1;
  if (b == -1) return 0;
  if (fits32(a) && fits32(b)) return static_cast<int32_t>(a) % static_cast<int32_t>(b);
  return a % b;
}
BARACUDA_HD int64_t iabs(int64_t a) { return a < 0 ? wneg(a) : a; }

template <class C> BARACUDA_HD C sgn(C x) { return static_cast<C>((C(0) < x) - (x < C(0))); }
template <class C> BARACUDA_HD C cinf() { return std::numeric_limits<C>::infinity(); }
template <class C> BARACUDA_HD C sigmoid(C x) { return C(1) / (C(1) + m::exp(-x)); }
// v rounded to the data's 16-bit format (fmt 1: bf16, 2: f16; else v): PyTorch's scalar_t
// arithmetic inside a kernel that keeps an intermediate in the storage type.
template <class C> BARACUDA_HD C round_to_data(C v, C fmt) {
#if defined(__CUDA_ARCH__)  // the hardware conversions (same rounding, NaN kept)
  if (fmt == C(1)) return static_cast<C>(__bfloat162float(__float2bfloat16_rn(static_cast<float>(v))));
  if (fmt == C(2)) return static_cast<C>(__half2float(__float2half_rn(static_cast<float>(v))));
#else
  if (fmt == C(1)) return static_cast<C>(bf16_bits_to_float(float_to_bf16_bits(static_cast<float>(v))));
  if (fmt == C(2)) return static_cast<C>(f16_bits_to_float(float_to_f16_bits(static_cast<float>(v))));
#endif
  return v;
}

// How the flat kernel (the contiguous case) shapes a thread's work for an op (op struct: static
// constexpr FlatDepth kDepth{...}; RowsShape): vectors per thread for a one-input adapter (a
// unary op's forward: one, one16) and for a several-input one (every backward, binary and
// ternary forwards: many, many16), for 4- and 8-byte storage and for 2-byte storage (or less);
// and vec_one / vec_many, the elements per vector of either (0: 16 bytes' worth; also the rows
// kernel's). Default: two vectors for one input, one for several, 16-byte vectors. Measured on
// the H200, 2^28 elements:
//   one = one16 = 1 (heavy: one always): the scalar function is long enough that inlining it 8
//     (f32) / 16 (bf16) times per thread costs more than a second vector in flight gains:
//     lgamma f32 848 -> 743 µs, bf16 881 -> 799 µs; digamma, polygamma 2-10 % faster. The same for
//     every op of the special group lost 6-18 % on memory-bound ones (sigmoid, erf, i0, ndtr).
//   many = 2 / many16 = 2: two also for several inputs, in 4- and 8-byte types / in 2-byte
//     types: the op's work outweighs the per-thread set-up. Against one vector, same run: f32
//     pow fwd 945 -> 875 µs, mish bwd 841 -> 761, sinc bwd 795 -> 752, ldexp fwd 784 -> 742; bf16
//     (ratio of times) gelu bwd 0.90, xlogy / xlog1py fwd 0.91, frexp bwd 0.92, logaddexp2 /
//     nextafter fwd 0.935, entr bwd 0.94, expm1 / gelu_tanh / erfinv bwd 0.95. Two for every
//     multi-input adapter lost up to 29 % (f32) and 140 % (bf16) on long special functions
//     (igamma, igammac, zeta, i0e / i1e bwd), 5-13 % on div_floor, remainder and, in bf16, pow /
//     ldexp / mish / sinc: the two sets differ.
//   Session 26, a bare benchmark of the flat kernel (same H200, data in [0.25, 2] as the sweep):
//     one = 4: f32 erfc 540 -> 523 µs, mish 532 -> 522, softplus 552 -> 528 (but exp, sigmoid,
//     sinc +1-3 %, log_ndtr +10 %: not the default). Session 32, after the flat kernel's set-up
//     cut (7edea60), median of 5 beside PyTorch: erfc is back at one = 2 (one = 2 / 4 / 8:
//     508.7 / 525.8 / 528.7 µs, PyTorch 509.9); softplus keeps 4 (524.0 against 532.7 at 2),
//     mish is even (527.5 / 527.8) and keeps 4; one16 = 1: bf16 sinc 443 -> 423, softplus
//     531 -> 512 (erfc, mish, exp: no gain or a loss); vec_one = 4: bf16 lgamma 797 -> 729
//     (f32 lgamma loses at 2: 753 -> 898); vec_many = 2: polygamma's backward bf16 16.5 -> 12.9
//     ms, f32 14.8 -> 13.0 ms (lanes of a warp take different series lengths; fewer elements per
//     thread, more threads), while its forward lost 2-3 % at 2 in the sweep; session 32, the same
//     for lanes of unequal work, median of 3 (µs, bf16 / f32, 16-byte vectors -> the choice):
//     igammac fwd 19803 / 14944 -> 13878 / 13704 and zeta 15549 / 14239 -> 12431 / 12565 at 2
//     (igammac bwd 1653 / 1502 -> 1540 / 1520); igamma fwd bf16 9876 -> 8344, bwd bf16 1634 ->
//     1600 and i1e bwd bf16 1048 -> 974 at 4, f32 unchanged (at 2 their f32 backward lost 2-13 %);
//     logit's branch on eps (ew_ops_unary.hpp) with one16 = 1: bf16 463 -> 439 µs at eps < 0, 425 -> 434 at
//     eps >= 0.
struct FlatDepth {
  int one = 2, one16 = 2, many = 1, many16 = 1;
  int vec_one = 0, vec_many = 0;
};

// flat_depth<Op>: the op's FlatDepth (Op::kDepth), or the default.
template <class Op, class = void> inline constexpr FlatDepth flat_depth{};
template <class Op> inline constexpr FlatDepth flat_depth<Op, std::void_t<decltype(Op::kDepth)>> = Op::kDepth;

// Uniform adapters: the engine calls apply(in[], out[], p) with NI inputs and NO outputs.
// Forward: in = operands, out = {result}. Backward: in = {g, operands...}, out = {d operand...}.
template <class Op, int Arity>
struct Fwd {
  static constexpr int NI = Arity, NO = 1;
  static constexpr FlatDepth kDepth = flat_depth<Op>;
  template <int O, class TO> using out_t = TO;  // storage type of output O (rows kernel)
  template <class C>
  BARACUDA_HD static void apply(const C* in, C* out, const P<C>& p) {
    if constexpr (Arity == 1) out[0] = Op::f(in[0], p);
    else if constexpr (Arity == 2) out[0] = Op::f(in[0], in[1], p);
    else out[0] = Op::f(in[0], in[1], in[2], p);
  }
  // every operand a tensor (the flat kernel): the op's f_dense where it has one
  template <class C>
  BARACUDA_HD static void apply_dense(const C* in, C* out, const P<C>& p) {
    if constexpr (Arity == 2 && requires(C a, const P<C>& q) { Op::f_dense(a, a, q); }) out[0] = Op::f_dense(in[0], in[1], p);
    else apply(in, out, p);
  }
};
// frexp's two results (FrexpPlan): out = {mantissa, exponent}; the exponent is stored as i32
// whatever the mantissa's storage type.
struct FrexpBoth {
  static constexpr int NI = 1, NO = 2;
  static constexpr FlatDepth kDepth{};
  template <int O, class TO> using out_t = std::conditional_t<O == 1, int32_t, TO>;
  template <class C>
  BARACUDA_HD static void apply(const C* in, C* out, const P<C>&) {
    int e;
    out[0] = m::frexp(in[0], &e);
    out[1] = static_cast<C>(e);
  }
};
template <class Op, int Arity>
struct Bwd {
  static constexpr int NI = Arity + 1, NO = Arity;
  static constexpr FlatDepth kDepth = flat_depth<Op>;
  template <int O, class TO> using out_t = TO;
  template <class C>
  BARACUDA_HD static void apply(const C* in, C* out, const P<C>& p) {
    if constexpr (Arity == 1) out[0] = Op::df(in[1], in[0], p);
    else if constexpr (Arity == 2) Op::df(in[1], in[2], in[0], p, out[0], out[1]);
    else Op::df(in[1], in[2], in[3], in[0], p, out[0], out[1], out[2]);
  }
};

}  // namespace baracuda::ew
