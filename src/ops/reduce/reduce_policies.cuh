// ReducePlan's policies over the engine (reduce_engine.cuh): one per reduction, each the math of
// include/baracuda/ops/reduce.hpp's table. Kinds are ReduceKind's values.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/arith.hpp"
#include "ops/reduce/reduce_engine.cuh"

namespace baracuda::red {

enum Kind : int {
  kSum = 0, kNanSum, kMean, kNanMean, kProd, kAmax, kAmin, kAll, kAny, kCountNonzero, kLogSumExp, kNorm, kVar, kStd,
  kArgmax, kArgmin, kMax, kMin, kVarMean, kStdMean, kAminmax,
  // norm by p (the plan picks one): 0, 1, 2, inf, -inf, other
  kNorm0 = kNormKind0, kNorm1, kNorm2, kNormInf, kNormNegInf, kNormP,
};

template <class V>
__device__ __forceinline__ V shfl_xor(V v, int d) {
  return __shfl_xor_sync(0xffffffffu, v, d);
}
template <class V>
__device__ __forceinline__ bool is_nan(V v) {
  if constexpr (std::is_integral_v<V>) return false;
  else return v != v;
}
template <class C>
__device__ __forceinline__ C inf_of() {
  if constexpr (std::is_integral_v<C>) return INT64_MAX;
  else return std::numeric_limits<C>::infinity();
}
template <class C>
__device__ __forceinline__ C abs_of(C v) {
  if constexpr (std::is_integral_v<C>) return v < 0 ? -v : v;
  else return fabs(v);
}

// The fast forms the in-order steps use: the approximate f32 division and exponential (2 ulp:
// the per-element weights of a running mean, the terms of a running sum of exponentials); exact
// for f64.
template <class C>
__device__ __forceinline__ C step_div(C a, C b) {
  if constexpr (std::is_same_v<C, float>) return __fdividef(a, b);
  else return a / b;
}
template <class C>
__device__ __forceinline__ C step_exp(C a) {
  if constexpr (std::is_same_v<C, float>) return __expf(a);
  else return exp(a);
}

// One-field accumulators: sums, products, extremes, counts, all / any, the norms but p = 0 / 1 / 2
// / inf / -inf / p. Acc is C, except counts and all / any (i64).
template <class T_, class C_, int K>
struct Plain {
  using T = T_;
  using C = C_;
  static constexpr bool kCount = K == kCountNonzero || K == kAll || K == kAny;
  using Acc = std::conditional_t<kCount, int64_t, C>;
  // f32 sums are combined across lanes, warps and splits in f64 (the engine's tree type): the
  // partial sums' additions are where a long f32 sum loses most (docs/perf/reduce.md)
  static constexpr bool kSumLike = K == kSum || K == kNanSum || K == kMean || K == kNorm0 || K == kNorm1 || K == kNorm2 || K == kNormP;
  using Tree = std::conditional_t<kSumLike && std::is_same_v<C, float>, double, Acc>;
  __device__ static Acc identity(const ReduceGeom&) {
    if constexpr (K == kProd || K == kAll) return Acc(1);
    else if constexpr (K == kAmax) return -inf_of<C>() - (std::is_integral_v<C> ? 1 : 0);  // INT64_MIN for integers
    else if constexpr (K == kAmin || K == kNormNegInf) return inf_of<C>();
    else return Acc(0);
  }
  __device__ static Acc map(const ReduceGeom& g, C v, int64_t) {
    if constexpr (kCount) return v != C(0) ? 1 : 0;
    else if constexpr (K == kNanSum) return is_nan(v) ? C(0) : v;
    else if constexpr (K == kNorm0) return v != C(0) ? C(1) : C(0);
    else if constexpr (K == kNorm1 || K == kNormInf || K == kNormNegInf) return abs_of(v);
    else if constexpr (K == kNorm2) return v * v;
    else if constexpr (K == kNormP) return pow(abs_of(v), static_cast<C>(g.p));
    else return v;
  }
  template <class A>
  __device__ static A combine(A a, A b) {
    if constexpr (K == kAll) return a & b;
    else if constexpr (K == kAny) return a | b;
    else if constexpr (K == kProd) {
      if constexpr (std::is_integral_v<A>) return wmul(a, b);
      else return a * b;
    } else if constexpr (K == kAmax || K == kNormInf) return nan_max(a, b);
    else if constexpr (K == kAmin || K == kNormNegInf) return nan_min(a, b);
    else if constexpr (std::is_integral_v<A>) return wadd(a, b);
    else return a + b;
  }
  // a vector: mapped, then a pairwise tree, then one combine into a
  template <int V>
  __device__ static Acc step_vec(const ReduceGeom& g, Acc a, const C (&v)[V], int64_t r0) {
    Acc t[V];
#pragma unroll
    for (int j = 0; j < V; ++j) t[j] = map(g, v[j], r0 + j);
#pragma unroll
    for (int w = 1; w < V; w *= 2)
#pragma unroll
      for (int j = 0; j + w < V; j += 2 * w) t[j] = combine(t[j], t[j + w]);
    return combine(a, t[0]);
  }
  // all / any / count_nonzero of 1-byte storage: 16 bytes as four words (a byte is true when
  // nonzero)
  template <int V>
    requires(kCount && sizeof(T) == 1 && V == 16)
  __device__ static Acc step_raw(Acc a, const uint4& e) {
    const uint32_t w[4] = {e.x, e.y, e.z, e.w};
    int nz = 0;  // nonzero bytes
#pragma unroll
    for (int i = 0; i < 4; ++i) nz += __popc((((w[i] & 0x7F7F7F7Fu) + 0x7F7F7F7Fu) | w[i]) & 0x80808080u);
    if constexpr (K == kAll) return a & (nz == 16 ? 1 : 0);
    else if constexpr (K == kAny) return a | (nz != 0 ? 1 : 0);
    else return a + nz;
  }
  template <class A>
  __device__ static A shfl(A a, int d) { return shfl_xor(a, d); }
  template <class A>
  __device__ static void store(const ReduceGeom& g, int64_t k, A a) {
    if constexpr (K == kMean) store_kept<A>(g, k, a * static_cast<A>(1.0 / static_cast<double>(g.R)));
    else if constexpr (K == kNorm2) store_kept<A>(g, k, sqrt(a));
    else if constexpr (K == kNormP) store_kept<A>(g, k, pow(a, static_cast<A>(1.0 / g.p)));
    else store_kept<A>(g, k, a);
  }
};

// nanmean: the sum and the count of the non-NaN elements.
template <class T_, class C_>
struct NanMean {
  using T = T_;
  using C = C_;
  struct Acc {
    C s, n;
  };
  __device__ static Acc identity(const ReduceGeom&) { return {C(0), C(0)}; }
  __device__ static Acc map(const ReduceGeom&, C v, int64_t) { return is_nan(v) ? Acc{C(0), C(0)} : Acc{v, C(1)}; }
  __device__ static Acc combine(Acc a, Acc b) { return {a.s + b.s, a.n + b.n}; }
  __device__ static Acc shfl(Acc a, int d) { return {shfl_xor(a.s, d), shfl_xor(a.n, d)}; }
  __device__ static void store(const ReduceGeom& g, int64_t k, Acc a) { store_kept<C>(g, k, a.s / a.n); }
};

// logsumexp in one pass: (m, s) = (the running max of the non-NaN elements, Σ exp(x - m)); a
// NaN element makes s NaN for good. The result: NaN if s is, else m when m is infinite (all -inf:
// -inf; any +inf: +inf), else m + log(s) — PyTorch's.
template <class T_, class C_>
struct LogSumExp {
  using T = T_;
  using C = C_;
  struct Acc {
    C m, s;
  };
  __device__ static C qnan() { return std::numeric_limits<C>::quiet_NaN(); }
  __device__ static Acc identity(const ReduceGeom&) { return {-inf_of<C>(), C(0)}; }
  __device__ static Acc map(const ReduceGeom&, C v, int64_t) { return is_nan(v) ? Acc{-inf_of<C>(), qnan()} : Acc{v, C(1)}; }
  __device__ static Acc combine(Acc a, Acc b) {
    const C m = a.m > b.m ? a.m : b.m;
    if (m == -inf_of<C>()) return {m, a.s + b.s};
    if (m == inf_of<C>()) return {m, is_nan(a.s) || is_nan(b.s) ? qnan() : C(1)};
    return {m, a.s * exp(a.m - m) + b.s * exp(b.m - m)};  // a.m = -inf: a.s · 0 (a NaN stays)
  }
  // the running form: one exponential per element (the sum rescaled when the max grows)
  __device__ static Acc step(const ReduceGeom&, Acc a, C v, int64_t) {
    if (is_nan(v)) return {a.m, qnan()};
    if (v > a.m) return {v, v == inf_of<C>() ? (is_nan(a.s) ? a.s : C(1)) : a.s * step_exp(a.m - v) + C(1)};
    if (v == -inf_of<C>() || a.m == inf_of<C>()) return a;
    return {a.m, a.s + step_exp(v - a.m)};
  }
  // a vector: its max first (NaN ignored), one rescale, then one exponential per element
  template <int V>
  __device__ static Acc step_vec(const ReduceGeom& g, Acc a, const C (&v)[V], int64_t r0) {
    C vm = a.m;
#pragma unroll
    for (int j = 0; j < V; ++j) vm = fmax(vm, v[j]);
    if (!isfinite(vm)) {  // all -inf so far, or a +inf: element by element
#pragma unroll
      for (int j = 0; j < V; ++j) a = step(g, a, v[j], r0 + j);
      return a;
    }
    C s = a.s * step_exp(a.m - vm);
#pragma unroll
    for (int j = 0; j < V; ++j) s += step_exp(v[j] - vm);  // NaN: NaN; -inf: 0
    return {vm, s};
  }
  __device__ static Acc shfl(Acc a, int d) { return {shfl_xor(a.m, d), shfl_xor(a.s, d)}; }
  __device__ static void store(const ReduceGeom& g, int64_t k, Acc a) {
    const C r = is_nan(a.s) ? a.s : (a.m == inf_of<C>() || a.m == -inf_of<C>()) ? a.m : a.m + log(a.s);
    store_kept<C>(g, k, r);
  }
};

// var / std: Welford per element, partial results merged with Chan's formula; var divides by
// max(0, N - correction) (PyTorch's: inf, or NaN for no spread, when that is 0).
template <class T_, class C_, bool Std, bool WithMean = false>
struct Variance {
  using T = T_;
  using C = C_;
  static constexpr bool kTwoPassRows = true;  // short contiguous rows: staged_variance_rows_kernel
  struct Acc {
    C n, mean, m2;
  };
  __device__ static Acc identity(const ReduceGeom&) { return {C(0), C(0), C(0)}; }
  __device__ static Acc map(const ReduceGeom&, C v, int64_t) { return {C(1), v, C(0)}; }
  __device__ static Acc combine(Acc a, Acc b) {
    if (b.n == C(0)) return a;
    if (a.n == C(0)) return b;
    const C n = a.n + b.n, d = b.mean - a.mean, w = b.n / n;
    return {n, a.mean + d * w, a.m2 + b.m2 + d * d * a.n * w};
  }
  // Welford's update for one more element
  __device__ static Acc step(const ReduceGeom&, Acc a, C v, int64_t) {
    const C n = a.n + C(1), d = v - a.mean, mean = a.mean + step_div(d, n);
    return {n, mean, a.m2 + d * (v - mean)};
  }
  // a batch of B elements: its own mean and M2 (two passes in registers), merged by Chan's
  // formula with one division
  template <int B>
  __device__ static Acc batch(Acc a, const C (&v)[B]) {
    C bm = 0;
#pragma unroll
    for (int j = 0; j < B; ++j) bm += v[j];
    bm *= C(1.0 / B);
    C bm2 = 0;
#pragma unroll
    for (int j = 0; j < B; ++j) bm2 += (v[j] - bm) * (v[j] - bm);
    const C n = a.n + C(B), d = bm - a.mean, w = step_div(C(B), n);
    return {n, a.mean + d * w, a.m2 + bm2 + d * d * a.n * w};
  }
  template <int V>
  __device__ static Acc step_vec(const ReduceGeom&, Acc a, const C (&v)[V], int64_t) { return batch<V>(a, v); }
  __device__ static Acc step4(const ReduceGeom&, Acc a, C v0, C v1, C v2, C v3, int64_t) {
    const C v[4] = {v0, v1, v2, v3};
    return batch<4>(a, v);
  }
  __device__ static Acc shfl(Acc a, int d) { return {shfl_xor(a.n, d), shfl_xor(a.mean, d), shfl_xor(a.m2, d)}; }
  __device__ static void store(const ReduceGeom& g, int64_t k, Acc a) {
    const double dof = static_cast<double>(g.R) - g.correction;
    const C v = a.m2 / static_cast<C>(dof > 0 ? dof : 0.0);
    store_kept<C>(g, k, Std ? sqrt(v) : v);
    if constexpr (WithMean) store_kept<C>(g, k, a.n == C(0) ? std::numeric_limits<C>::quiet_NaN() : a.mean, true);
  }
};

// aminmax: both extremes in one pass (NaN propagates into both); y the min, y2 the max.
template <class T_, class C_>
struct MinMax {
  using T = T_;
  using C = C_;
  struct Acc {
    C lo, hi;
  };
  __device__ static Acc identity(const ReduceGeom&) {
    if constexpr (std::is_integral_v<C>) return {INT64_MAX, INT64_MIN};
    else return {inf_of<C>(), -inf_of<C>()};
  }
  __device__ static Acc map(const ReduceGeom&, C v, int64_t) { return {v, v}; }
  __device__ static Acc combine(Acc a, Acc b) { return {nan_min(a.lo, b.lo), nan_max(a.hi, b.hi)}; }
  // a vector: plain min / max (NaN ignored) and one NaN flag, then one combine
  template <int V>
  __device__ static Acc step_vec(const ReduceGeom&, Acc a, const C (&v)[V], int64_t) {
    C lo = v[0], hi = v[0];
    if constexpr (std::is_integral_v<C>) {
#pragma unroll
      for (int j = 1; j < V; ++j) lo = min(lo, v[j]), hi = max(hi, v[j]);
    } else {
      bool nan = is_nan(v[0]);
#pragma unroll
      for (int j = 1; j < V; ++j) lo = fmin(lo, v[j]), hi = fmax(hi, v[j]), nan = nan || is_nan(v[j]);
      if (nan) lo = hi = std::numeric_limits<C>::quiet_NaN();
    }
    return combine(a, Acc{lo, hi});
  }
  __device__ static Acc shfl(Acc a, int d) { return {shfl_xor(a.lo, d), shfl_xor(a.hi, d)}; }
  __device__ static void store(const ReduceGeom& g, int64_t k, Acc a) {
    store_kept<C>(g, k, a.lo);
    store_kept<C>(g, k, a.hi, true);
  }
};

// argmax / argmin and max / min with indices: the extreme's first index; NaN is the extreme.
template <class T_, class C_, bool Max>
struct ArgExtreme {
  using T = T_;
  using C = C_;
  struct Acc {
    C v;
    int64_t i;
  };
  __device__ static Acc identity(const ReduceGeom&) {
    if constexpr (std::is_integral_v<C>) return {Max ? INT64_MIN : INT64_MAX, INT64_MAX};
    else return {Max ? -inf_of<C>() : inf_of<C>(), INT64_MAX};
  }
  __device__ static Acc map(const ReduceGeom&, C v, int64_t r) { return {v, r}; }
  __device__ static Acc combine(Acc a, Acc b) {
    const bool an = is_nan(a.v), bn = is_nan(b.v);
    bool take_b;
    if (an || bn) take_b = bn && (!an || b.i < a.i);
    else if (b.v == a.v) take_b = b.i < a.i;
    else take_b = Max ? b.v > a.v : b.v < a.v;
    return take_b ? b : a;
  }
  // in order (r after every index in a): a tie keeps a; the first NaN stays
  __device__ static Acc step(const ReduceGeom&, Acc a, C v, int64_t r) {
    if (is_nan(a.v)) return a;
    const bool take = a.i == INT64_MAX || is_nan(v) || (Max ? v > a.v : v < a.v);
    return take ? Acc{v, r} : a;
  }
  // a vector: its extreme (first occurrence, first NaN) with a 32-bit position, then one step
  template <int V>
  __device__ static Acc step_vec(const ReduceGeom& g, Acc a, const C (&v)[V], int64_t r0) {
    C bv = v[0];
    int bj = 0;
#pragma unroll
    for (int j = 1; j < V; ++j) {
      const bool take = is_nan(v[j]) ? !is_nan(bv) : (Max ? v[j] > bv : v[j] < bv);
      bv = take ? v[j] : bv;
      bj = take ? j : bj;
    }
    return step(g, a, bv, r0 + bj);
  }
  __device__ static Acc shfl(Acc a, int d) { return {shfl_xor(a.v, d), shfl_xor(a.i, d)}; }
  __device__ static void store(const ReduceGeom& g, int64_t k, Acc a) {
    store_kept<C>(g, k, a.v);                // the values (max / min; absent for argmax)
    store_kept<int64_t>(g, k, a.i, true);  // the indices
  }
};

// ReduceBackwardPlan's pre-passes -------------------------------------------------------------

// amax / amin (Abs: norm ±inf): the extreme and how many elements equal it; a NaN extreme wins
// (NanEq: NaN elements count as equal to it, as PyTorch's norm backward; else its count is 0, as
// amax's mask x == NaN). Stores the count.
template <class T_, class C_, bool Max, bool Abs>
struct ExtremeCount {
  using T = T_;
  using C = C_;
  struct Acc {
    C m;
    int64_t c;
  };
  __device__ static Acc identity(const ReduceGeom&) { return {Max ? -inf_of<C>() : inf_of<C>(), 0}; }
  __device__ static Acc map(const ReduceGeom&, C v, int64_t) { return {Abs ? abs_of(v) : v, 1}; }
  __device__ static Acc combine(Acc a, Acc b) {
    const bool an = is_nan(a.m), bn = is_nan(b.m);
    if (an || bn) return an && bn ? Acc{a.m, a.c + b.c} : (an ? a : b);
    if (a.m == b.m) return {a.m, a.c + b.c};
    return (Max ? b.m > a.m : b.m < a.m) ? b : a;
  }
  __device__ static Acc shfl(Acc a, int d) { return {shfl_xor(a.m, d), shfl_xor(a.c, d)}; }
  __device__ static void store(const ReduceGeom& g, int64_t k, Acc a) {
    store_kept<C>(g, k, static_cast<C>(is_nan(a.m) && !Abs ? 0 : a.c));
  }
};

// nanmean: the count of non-NaN elements.
template <class T_, class C_>
struct NotNanCount {
  using T = T_;
  using C = C_;
  using Acc = int64_t;
  __device__ static Acc identity(const ReduceGeom&) { return 0; }
  __device__ static Acc map(const ReduceGeom&, C v, int64_t) { return is_nan(v) ? 0 : 1; }
  __device__ static Acc combine(Acc a, Acc b) { return a + b; }
  __device__ static Acc shfl(Acc a, int d) { return shfl_xor(a, d); }
  __device__ static void store(const ReduceGeom& g, int64_t k, Acc a) { store_kept<C>(g, k, static_cast<C>(a)); }
};

// prod: the product of the nonzero elements (y) and the count of zeros (y2).
template <class T_, class C_>
struct ProdZeros {
  using T = T_;
  using C = C_;
  struct Acc {
    C p;
    int64_t z;
  };
  __device__ static Acc identity(const ReduceGeom&) { return {C(1), 0}; }
  __device__ static Acc map(const ReduceGeom&, C v, int64_t) { return v == C(0) ? Acc{C(1), 1} : Acc{v, 0}; }
  __device__ static Acc combine(Acc a, Acc b) { return {a.p * b.p, a.z + b.z}; }
  __device__ static Acc shfl(Acc a, int d) { return {shfl_xor(a.p, d), shfl_xor(a.z, d)}; }
  __device__ static void store(const ReduceGeom& g, int64_t k, Acc a) {
    store_kept<C>(g, k, a.p);
    store_kept<C>(g, k, static_cast<C>(a.z), true);
  }
};

// The launcher of kind K for storage T (C: f64 when asked, i64 for integer storage, else f32).
template <class T, bool F64, int K>
ReduceLaunchFn engine_pick() {
  using C = std::conditional_t<std::is_integral_v<T> && K != kLogSumExp, int64_t, std::conditional_t<F64, double, float>>;
  if constexpr (K == kNanMean) return &engine_launch<NanMean<T, C>>;
  else if constexpr (K == kLogSumExp) return &engine_launch<LogSumExp<T, C>>;
  else if constexpr (K == kVar || K == kStd) return &engine_launch<Variance<T, C, K == kStd>>;
  else if constexpr (K == kVarMean || K == kStdMean) return &engine_launch<Variance<T, C, K == kStdMean, true>>;
  else if constexpr (K == kAminmax) return &engine_launch<MinMax<T, C>>;
  else if constexpr (K == kArgmax || K == kMax) return &engine_launch<ArgExtreme<T, C, true>>;
  else if constexpr (K == kArgmin || K == kMin) return &engine_launch<ArgExtreme<T, C, false>>;
  else return &engine_launch<Plain<T, C, K>>;
}

template <int... Ks>
struct Kinds {};

// The launcher of `kind` for storage dtype `in`: float storage takes the FloatKinds, integer
// storage (i8, u8, i16, i32, i64, bool) the IntKinds; nullptr for a kind not listed.
template <int... FloatKs, int... IntKs>
ReduceLaunchFn find_kind(DType in, int kind, Kinds<FloatKs...>, Kinds<IntKs...>) {
  ReduceLaunchFn fn = nullptr;
  dispatch_reduce_storage<true>(in, [&]<class T>() {
    constexpr bool kF64 = std::is_same_v<T, double>;
    if constexpr (std::is_integral_v<T>) ((kind == IntKs ? (void)(fn = engine_pick<T, false, IntKs>()) : (void)0), ...);
    else ((kind == FloatKs ? (void)(fn = engine_pick<T, kF64, FloatKs>()) : (void)0), ...);
  });
  return fn;
}

}  // namespace baracuda::red
