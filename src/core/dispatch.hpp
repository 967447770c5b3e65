// One dtype-dispatch helper for the whole library.
//
// select() resolves a runtime DType to a compile-time element type exactly once, usually to
// take the address of an explicitly instantiated launcher:
//
//   dispatch_dtype<StorageTypes>(dt, kPadForwardDTypes, [&]<class T>() { fn = &launch<T>; });
//
// The Map decides what a DType becomes: StorageTypes (host-safe, same-size unsigned integers,
// for pure data movement) here, CudaTypes (__half, __nv_bfloat16, ...) in core/cuda_types.cuh.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "baracuda/core/dtype.hpp"

namespace baracuda {

template <DType... Ds>
struct DTypeList {
  static constexpr bool contains(DType t) { return ((t == Ds) || ...); }
  // "f32, f16, bf16" — for "supported: ..." messages.
  static std::string names() {
    std::string s;
    ((s += (s.empty() ? "" : ", "), s += dtype_name(Ds)), ...);
    return s;
  }
};

using FloatDTypes = DTypeList<DType::f32, DType::f16, DType::bf16, DType::f64>;
using IntegerDTypes = DTypeList<DType::i8, DType::u8, DType::i16, DType::i32, DType::i64>;
// Every real dtype: what bit-exact data movement takes.
using RealDTypes = DTypeList<DType::f32, DType::f16, DType::bf16, DType::f64, DType::f8e4m3, DType::f8e5m2, DType::i8,
                             DType::u8, DType::i16, DType::i32, DType::i64, DType::boolean>;

// Same-size unsigned integer for moving raw bits.
struct StorageTypes {
  template <size_t N>
  using bits = std::conditional_t<N == 1, uint8_t,
               std::conditional_t<N == 2, uint16_t, std::conditional_t<N == 4, uint32_t, uint64_t>>>;
  template <DType D>
  using type = bits<dtype_size(D)>;
};

// Calls f.template operator()<Map::type<D>>() for the D of the list equal to t.
// Returns false (and calls nothing) when t is not in the list.
template <class Map, DType... Ds, class F>
bool dispatch_dtype(DType t, DTypeList<Ds...>, F&& f) {
  return ((t == Ds && (f.template operator()<typename Map::template type<Ds>>(), true)) || ...);
}

}  // namespace baracuda
