// baracuda/core/tensor.hpp — untyped, non-owning views of device (or host) memory.
//
// A view is {data, dtype, rank <= 8, shape[], stride[]}. Shapes and strides are int64_t;
// strides are in elements, may be 0 (broadcast) or negative where an op says so. Rank 0 is a
// scalar (numel 1). A view never owns memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>

#include "baracuda/core/dtype.hpp"

namespace baracuda {

inline constexpr int kMaxRank = 8;

// Dtype, rank, shape and strides: what TensorRef and TensorMut share.
struct TensorLayout {
  DType dtype = DType::f32;
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};

  int64_t numel() const;  // saturates at INT64_MAX (such a layout fails validation)
  // Row-major contiguous: stride[d] == product of shape[d+1..]; size-1 axes may have any stride.
  bool is_contiguous() const;
  // Byte offsets of the lowest and one-past-the-highest element reachable from data
  // (both 0 when numel() == 0). Returns false if the extent overflows int64.
  bool byte_extent(int64_t* lo, int64_t* hi) const;
  // Fills stride[] row-major contiguous for the current shape.
  void set_contiguous_strides();
  // This layout with row-major contiguous strides (the layout a gradient is written in).
  TensorLayout contiguous() const;
  // Same dtype, rank, shape and strides on every axis: what plan descriptors compare and hash.
  bool identical(const TensorLayout& o) const;
  size_t hash() const;

  // A layout with the given shape; strides contiguous when `strides` is empty.
  // Ranks above kMaxRank are clamped to rank = -1 (rejected by every op's validation).
  static TensorLayout make(DType dtype, std::span<const int64_t> shape,
                           std::span<const int64_t> strides = {});
};

struct TensorRef : TensorLayout {
  const void* data = nullptr;

  static TensorRef make(const void* data, DType dtype, std::span<const int64_t> shape,
                        std::span<const int64_t> strides = {}) {
    TensorRef t;
    static_cast<TensorLayout&>(t) = TensorLayout::make(dtype, shape, strides);
    t.data = data;
    return t;
  }
  static TensorRef make(const void* data, DType dtype, std::initializer_list<int64_t> shape,
                        std::initializer_list<int64_t> strides = {}) {
    return make(data, dtype, std::span<const int64_t>(shape.begin(), shape.size()),
                std::span<const int64_t>(strides.begin(), strides.size()));
  }
  // Typed helper: dtype from the pointer type (see DTypeOf; half types in cuda_types.hpp).
  template <class T>
  static TensorRef of(const T* data, std::initializer_list<int64_t> shape,
                      std::initializer_list<int64_t> strides = {}) {
    return make(data, dtype_of<T>, shape, strides);
  }
};

struct TensorMut : TensorLayout {
  void* data = nullptr;

  static TensorMut make(void* data, DType dtype, std::span<const int64_t> shape,
                        std::span<const int64_t> strides = {}) {
    TensorMut t;
    static_cast<TensorLayout&>(t) = TensorLayout::make(dtype, shape, strides);
    t.data = data;
    return t;
  }
  static TensorMut make(void* data, DType dtype, std::initializer_list<int64_t> shape,
                        std::initializer_list<int64_t> strides = {}) {
    return make(data, dtype, std::span<const int64_t>(shape.begin(), shape.size()),
                std::span<const int64_t>(strides.begin(), strides.size()));
  }
  template <class T>
  static TensorMut of(T* data, std::initializer_list<int64_t> shape,
                      std::initializer_list<int64_t> strides = {}) {
    return make(data, dtype_of<T>, shape, strides);
  }

  TensorRef as_ref() const {
    TensorRef r;
    static_cast<TensorLayout&>(r) = *this;
    r.data = data;
    return r;
  }
  operator TensorRef() const { return as_ref(); }  // NOLINT(implicit)
};

}  // namespace baracuda
