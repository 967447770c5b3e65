// baracuda/core/dtype.hpp — the element types, declared once.
//
// BARACUDA_DTYPES is the single list: the enum, names, sizes, classification, the dispatch
// helper (src/core/dispatch.hpp) and the test type lists are all generated from it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace baracuda {

// X(enumerator, printable name, size in bytes, kind)
// kind: F = floating point, I = signed integer, U = unsigned integer, B = bool, C = complex
#define BARACUDA_DTYPES(X)       \
  X(f32, "f32", 4, F)            \
  X(f16, "f16", 2, F)            \
  X(bf16, "bf16", 2, F)          \
  X(f64, "f64", 8, F)            \
  X(f8e4m3, "f8e4m3", 1, F)      \
  X(f8e5m2, "f8e5m2", 1, F)      \
  X(i8, "i8", 1, I)              \
  X(u8, "u8", 1, U)              \
  X(i16, "i16", 2, I)            \
  X(i32, "i32", 4, I)            \
  X(i64, "i64", 8, I)            \
  X(boolean, "bool", 1, B)       \
  X(c64, "c64", 8, C)            \
  X(c128, "c128", 16, C)

enum class DType : uint8_t {
#define BARACUDA_X(e, name, size, kind) e,
  BARACUDA_DTYPES(BARACUDA_X)
#undef BARACUDA_X
};

inline constexpr int kNumDTypes = 0
#define BARACUDA_X(e, name, size, kind) +1
    BARACUDA_DTYPES(BARACUDA_X)
#undef BARACUDA_X
    ;

enum class DTypeKind : uint8_t { F, I, U, B, C };

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
#define BARACUDA_X(e, name, size, kind) \
  case DType::e:                        \
    return name;
    BARACUDA_DTYPES(BARACUDA_X)
#undef BARACUDA_X
  }
  return "?";
}

constexpr size_t dtype_size(DType t) {
  switch (t) {
#define BARACUDA_X(e, name, size, kind) \
  case DType::e:                        \
    return size;
    BARACUDA_DTYPES(BARACUDA_X)
#undef BARACUDA_X
  }
  return 0;
}

constexpr DTypeKind dtype_kind(DType t) {
  switch (t) {
#define BARACUDA_X(e, name, size, kind) \
  case DType::e:                        \
    return DTypeKind::kind;
    BARACUDA_DTYPES(BARACUDA_X)
#undef BARACUDA_X
  }
  return DTypeKind::F;
}

constexpr bool is_floating(DType t) { return dtype_kind(t) == DTypeKind::F; }
constexpr bool is_integral(DType t) {
  return dtype_kind(t) == DTypeKind::I || dtype_kind(t) == DTypeKind::U;
}
constexpr bool is_complex(DType t) { return dtype_kind(t) == DTypeKind::C; }

// Parses a printable name ("bf16", "bool"); returns false when unknown.
bool parse_dtype(std::string_view name, DType* out);

// The C++ type of an element where one exists on the host; half types are mapped in
// baracuda/core/cuda_types.hpp (which includes the CUDA headers) so this header stays light.
template <class T>
struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::f32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::f64; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::i8; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::u8; };
template <> struct DTypeOf<int16_t> { static constexpr DType value = DType::i16; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::i32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::i64; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::boolean; };

template <class T>
inline constexpr DType dtype_of = DTypeOf<T>::value;

}  // namespace baracuda
