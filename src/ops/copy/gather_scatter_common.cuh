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
  int64_t v = r.idx64 ? static_cast<const int64_t*>(r.idx)[off] : static_cast<const int32_t*>(r.idx)[off];
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
