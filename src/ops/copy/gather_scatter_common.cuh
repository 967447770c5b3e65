// Device helpers of the gather / scatter kernels (gather_scatter_{move,sort}.cu only): the index
// rule, the reductions' combine and identity, compare-and-swap updates of any element size.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/cuda_types.cuh"
#include "core/launch.cuh"
#include "ops/copy/gather_scatter_geometry.hpp"

namespace baracuda::gs {

// The index entry at element offset off, normalized: true and *j in [0, n), or false (out of
// range, counted when `count` and a counter is given).
__device__ __forceinline__ bool resolve(const IndexRule& r, int64_t off, bool count, int64_t* j) {
  int64_t v = r.idx64 ? __ldg(static_cast<const long long*>(r.idx) + off) : __ldg(static_cast<const int*>(r.idx) + off);
  if (r.wrap && v < 0) v += r.n;  // v + n <= n: no overflow
  if (r.clamp && r.n > 0) v = v < 0 ? 0 : (v >= r.n ? r.n - 1 : v);
  if (v < 0 || v >= r.n) {
    if (count && r.invalid != nullptr) atomicAdd(r.invalid, 1ull);
    return false;
  }
  *j = v;
  return true;
}

template <class T>
__device__ __forceinline__ T from_bits(uint64_t b) {
  T v;
  __builtin_memcpy(&v, &b, sizeof(T));
  return v;
}
template <class T>
__device__ __forceinline__ uint64_t to_bits(T v) {
  uint64_t b = 0;
  __builtin_memcpy(&b, &v, sizeof(T));
  return b;
}

// The compute type of an arithmetic element: f32 for 16-bit floats, f64, int64 for integers.
template <class T>
using calc_t = compute_t<T>;
template <class T>
__device__ __forceinline__ calc_t<T> up(T v) {
  return to_c<calc_t<T>>(v);
}
template <class T>
__device__ __forceinline__ T down(calc_t<T> v) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(v);  // integers wrap (C++20: modular)
  else return from_c<T>(v, false);
}

template <class C>
__device__ __forceinline__ C combine(Reduce r, C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    switch (r) {
      case Reduce::kSum:
      case Reduce::kMean: return static_cast<C>(static_cast<U>(a) + static_cast<U>(b));
      case Reduce::kProd: return static_cast<C>(static_cast<U>(a) * static_cast<U>(b));
      case Reduce::kAmax: return a > b ? a : b;
      case Reduce::kAmin: return a < b ? a : b;
      default: return b;
    }
  } else {
    switch (r) {
      case Reduce::kSum:
      case Reduce::kMean: return a + b;
      case Reduce::kProd: return a * b;
      case Reduce::kAmax: return a != a ? a : (b != b ? b : (a > b ? a : b));  // NaN propagates
      case Reduce::kAmin: return a != a ? a : (b != b ? b : (a < b ? a : b));
      default: return b;
    }
  }
}

// The value a target starts from when include_self is false.
template <class T>
__device__ __forceinline__ calc_t<T> identity(Reduce r) {
  using C = calc_t<T>;
  switch (r) {
    case Reduce::kProd: return C(1);
    case Reduce::kAmax:
      if constexpr (std::is_integral_v<T>) return static_cast<C>(std::numeric_limits<T>::lowest());
      else return -static_cast<C>(INFINITY);
    case Reduce::kAmin:
      if constexpr (std::is_integral_v<T>) return static_cast<C>(std::numeric_limits<T>::max());
      else return static_cast<C>(INFINITY);
    default: return C(0);
  }
}

// VEC elements at p (aligned to VEC·sizeof(T)) in the compute type, and back: one vector access
// (16-bit floats through packed words: element-wise accesses became 2-byte loads).
template <class T, int VEC>
__device__ __forceinline__ void load_calc(const T* p, calc_t<T> (&v)[VEC]) {
  if constexpr (VEC == 1) {
    v[0] = up(p[0]);
  } else if constexpr (std::is_integral_v<T>) {
    const Vec<T, VEC> w = *reinterpret_cast<const Vec<T, VEC>*>(p);
#pragma unroll
    for (int e = 0; e < VEC; ++e) v[e] = up(w.v[e]);
  } else {
    load_acc_vec<T, VEC>(p, v);
  }
}
template <class T, int VEC>
__device__ __forceinline__ void store_calc(T* p, const calc_t<T> (&v)[VEC]) {
  if constexpr (VEC == 1) {
    p[0] = down<T>(v[0]);
  } else if constexpr (std::is_integral_v<T>) {
    Vec<T, VEC> w;
#pragma unroll
    for (int e = 0; e < VEC; ++e) w.v[e] = down<T>(v[e]);
    *reinterpret_cast<Vec<T, VEC>*>(p) = w;
  } else {
    store_global16<T, VEC>(p, v);
  }
}

// out[0..8) += v[0..8) for 16-bit floats as one 16-byte vector reduction (sm_90's red.v4.*x2).
template <class T>
__device__ __forceinline__ void red_add16(T* p, const float (&v)[8]) {
  uint32_t w[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) w[q] = elem_word<T, 8>(v, q);
  const size_t g = __cvta_generic_to_global(p);
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    asm volatile("red.global.add.noftz.v4.bf16x2 [%0], {%1, %2, %3, %4};" ::"l"(g), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3]) : "memory");
  else
    asm volatile("red.global.add.noftz.v4.f16x2 [%0], {%1, %2, %3, %4};" ::"l"(g), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3]) : "memory");
}

// *addr = f(*addr) atomically, for an element of 1, 2, 4 or 8 bytes.
template <class T, class F>
__device__ __forceinline__ void atomic_update(T* addr, F f) {
  if constexpr (sizeof(T) == 8 || sizeof(T) == 4 || sizeof(T) == 2) {
    using W = std::conditional_t<sizeof(T) == 8, unsigned long long, std::conditional_t<sizeof(T) == 4, unsigned int, unsigned short>>;
    W* w = reinterpret_cast<W*>(addr);
    W old = *w, assumed;
    do {
      assumed = old;
      const W next = static_cast<W>(to_bits(f(from_bits<T>(assumed))));
      if (next == assumed) return;
      old = atomicCAS(w, assumed, next);
    } while (assumed != old);
  } else {
    unsigned int* w = reinterpret_cast<unsigned int*>(reinterpret_cast<uintptr_t>(addr) & ~uintptr_t{3});
    const unsigned shift = static_cast<unsigned>(reinterpret_cast<uintptr_t>(addr) & 3) * 8;
    unsigned int old = *w, assumed;
    do {
      assumed = old;
      const T cur = from_bits<T>((assumed >> shift) & 0xffu);
      const unsigned int next = (assumed & ~(0xffu << shift)) | (static_cast<unsigned int>(to_bits(f(cur))) << shift);
      if (next == assumed) return;
      old = atomicCAS(w, assumed, next);
    } while (assumed != old);
  }
}

}  // namespace baracuda::gs
