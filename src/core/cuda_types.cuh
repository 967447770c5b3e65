// The one device-side vocabulary of element types and conversions every kernel uses:
//   CudaTypes            DType -> CUDA element type, for dispatch_dtype
//   compute_t / to_c / from_c
//                        storage <-> compute type with PyTorch's conversions (16- and 8-bit
//                        floats through f32, floats to integers through a saturating i32 or i64
//                        conversion, fp8 saturating or not); load_dyn / store_dyn do it for a
//                        dtype known only at run time, dispatch_storage picks the type on the host
//   acc_t / to_acc / from_acc
//                        the float accumulator (f32, f64 for f64): to_c / from_c into it
//   Vec, RawVec, load_raw / to_c_vec / store_vec, load_acc_vec / store_acc_vec, store_global16
//                        vector moves
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <type_traits>

#include "core/dispatch.hpp"

namespace baracuda {

struct CudaTypes {
  template <DType D> struct Of;
  template <DType D> using type = typename Of<D>::type;
};
template <> struct CudaTypes::Of<DType::f32> { using type = float; };
template <> struct CudaTypes::Of<DType::f16> { using type = __half; };
template <> struct CudaTypes::Of<DType::bf16> { using type = __nv_bfloat16; };
template <> struct CudaTypes::Of<DType::f64> { using type = double; };
template <> struct CudaTypes::Of<DType::i8> { using type = int8_t; };
template <> struct CudaTypes::Of<DType::u8> { using type = uint8_t; };
template <> struct CudaTypes::Of<DType::i16> { using type = int16_t; };
template <> struct CudaTypes::Of<DType::i32> { using type = int32_t; };
template <> struct CudaTypes::Of<DType::i64> { using type = int64_t; };
template <> struct CudaTypes::Of<DType::boolean> { using type = bool; };

// Accumulator of a float element type: double for double, float otherwise.
template <class T> struct AccOf { using type = float; };
template <> struct AccOf<double> { using type = double; };
template <class T> using acc_t = typename AccOf<T>::type;

// Compute type of a storage type: f32 for 16-bit and 8-bit floats, f64 for f64, i64 for integers/bool.
template <class T> struct ComputeOf { using type = int64_t; };
template <> struct ComputeOf<float> { using type = float; };
template <> struct ComputeOf<__half> { using type = float; };
template <> struct ComputeOf<__nv_bfloat16> { using type = float; };
template <> struct ComputeOf<__nv_fp8_e4m3> { using type = float; };
template <> struct ComputeOf<__nv_fp8_e5m2> { using type = float; };
template <> struct ComputeOf<double> { using type = double; };
template <class T> using compute_t = typename ComputeOf<T>::type;

// ---- storage -> compute
template <class C, class T>
__device__ __forceinline__ C to_c(T v) {
  if constexpr (std::is_same_v<T, __half>) return static_cast<C>(__half2float(v));
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return static_cast<C>(__bfloat162float(v));
  else if constexpr (std::is_same_v<T, __nv_fp8_e4m3> || std::is_same_v<T, __nv_fp8_e5m2>) return static_cast<C>(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, bool>) return static_cast<C>(v ? 1 : 0);
  else return static_cast<C>(v);
}

// ---- compute -> storage, with PyTorch's conversions: floats to i8/i16/i32 through a
// saturating i32 conversion, to u8/i64 through i64; floats to 16/8-bit floats through f32.
template <class T, class C>
__device__ __forceinline__ T from_c(C v, bool sat_fp8) {
  (void)sat_fp8;
  if constexpr (std::is_same_v<T, bool>) return v != C(0);
  else if constexpr (std::is_same_v<T, __half>) return __float2half_rn(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, __nv_fp8_e4m3> || std::is_same_v<T, __nv_fp8_e5m2>) {
    // The saturating conversion is one hardware instruction on sm_89+; PyTorch's non-saturating
    // overflow (e4m3: beyond 464 -> NaN, e5m2: from 61440 -> inf, rounding to nearest even) is
    // a fix-up on top of it.
    constexpr bool e4 = std::is_same_v<T, __nv_fp8_e4m3>;
    const float f = static_cast<float>(v);
    T r;
    r.__x = __nv_cvt_float_to_fp8(f, __NV_SATFINITE, e4 ? __NV_E4M3 : __NV_E5M2);
    if (!sat_fp8) {
      const float a = fabsf(f);
      const unsigned char sign = (__float_as_uint(f) >> 24) & 0x80;
      if (e4 && a > 464.f) r.__x = static_cast<__nv_fp8_storage_t>(sign | 0x7F);          // NaN (also for inf)
      if (!e4 && a >= 61440.f) r.__x = static_cast<__nv_fp8_storage_t>(sign | 0x7C);      // inf
    }
    return r;
  } else if constexpr (std::is_integral_v<T> && !std::is_integral_v<C>) {
    // NaN: what PyTorch's f32 conversions give (i64: INT64_MIN, narrower: 0), whatever C is
    if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, uint8_t>)
      return v != v ? static_cast<T>(INT64_MIN) : static_cast<T>(static_cast<int64_t>(v));
    else return v != v ? T(0) : static_cast<T>(static_cast<int32_t>(v));
  } else {
    return static_cast<T>(v);
  }
}

#define BARACUDA_STORAGE_CASES(X)                 \
  X(f32, float)                             \
  X(f16, __half)                            \
  X(bf16, __nv_bfloat16)                    \
  X(f64, double)                            \
  X(f8e4m3, __nv_fp8_e4m3)                  \
  X(f8e5m2, __nv_fp8_e5m2)                  \
  X(i8, int8_t)                             \
  X(u8, uint8_t)                            \
  X(i16, int16_t)                           \
  X(i32, int32_t)                           \
  X(i64, int64_t)                           \
  X(boolean, bool)

template <class C>
__device__ __forceinline__ C load_dyn(const void* base, int64_t off, uint8_t dt) {
  switch (static_cast<DType>(dt)) {
#define BARACUDA_X(e, T) \
  case DType::e: return to_c<C>(static_cast<const T*>(base)[off]);
    BARACUDA_STORAGE_CASES(BARACUDA_X)
#undef BARACUDA_X
    default: return C(0);
  }
}
template <class C>
__device__ __forceinline__ void store_dyn(void* base, int64_t off, uint8_t dt, C v, bool sat) {
  switch (static_cast<DType>(dt)) {
#define BARACUDA_X(e, T) \
  case DType::e: static_cast<T*>(base)[off] = from_c<T>(v, sat); return;
    BARACUDA_STORAGE_CASES(BARACUDA_X)
#undef BARACUDA_X
    default: return;
  }
}

// Float element <-> its accumulator type (the same conversions as to_c / from_c).
template <class T>
__device__ __forceinline__ acc_t<T> to_acc(T v) {
  return to_c<acc_t<T>>(v);
}
template <class T>
__device__ __forceinline__ T from_acc(acc_t<T> v) {
  return from_c<T>(v, false);
}

// N elements of T moved as one aligned vector (N·sizeof(T) in {1, 2, 4, 8, 16} bytes).
template <class T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

// Element e of elements of T packed in 32-bit words (T of 2, 4 or 8 bytes), as the accumulator
// type, by bit operations: bf16 `w << 16` / `w & 0xffff0000`, half via its bits, f64 from
// two words.
template <class T>
__device__ __forceinline__ acc_t<T> word_elem(const uint32_t* u, int e) {
  if constexpr (sizeof(T) == 2) {
    if constexpr (std::is_same_v<T, __nv_bfloat16>) return __uint_as_float((e & 1) ? u[e / 2] & 0xffff0000u : u[e / 2] << 16);
    else return __half2float(__ushort_as_half(static_cast<unsigned short>((e & 1) ? u[e / 2] >> 16 : u[e / 2] & 0xffffu)));
  } else if constexpr (sizeof(T) == 4) {
    return __uint_as_float(u[e]);
  } else {
    return __hiloint2double(static_cast<int>(u[2 * e + 1]), static_cast<int>(u[2 * e]));
  }
}

// N elements of T at p (global or shared, aligned to N·sizeof(T)) into the accumulator type.
// Vectors of 4, 8 or 16 bytes are read as whole 32-bit words and unpacked by word_elem:
// reading a Vec<16-bit type, N>'s elements one by one made nvcc issue one 2-byte load per
// element from shared memory (and arrays of such Vecs were kept in local memory).
template <class T, int N>
__device__ __forceinline__ void load_acc_vec(const T* p, acc_t<T> (&v)[N]) {
  constexpr int kBytes = static_cast<int>(sizeof(T)) * N;
  if constexpr (N == 1 || (kBytes != 4 && kBytes != 8 && kBytes != 16)) {
#pragma unroll
    for (int e = 0; e < N; ++e) v[e] = to_acc(p[e]);
  } else {
    uint32_t u[kBytes / 4];
    if constexpr (kBytes == 4) {
      u[0] = *reinterpret_cast<const uint32_t*>(p);
    } else if constexpr (kBytes == 8) {
      const uint2 w = *reinterpret_cast<const uint2*>(p);
      u[0] = w.x, u[1] = w.y;
    } else {
      const uint4 w = *reinterpret_cast<const uint4*>(p);
      u[0] = w.x, u[1] = w.y, u[2] = w.z, u[3] = w.w;
    }
#pragma unroll
    for (int e = 0; e < N; ++e) v[e] = word_elem<T>(u, e);
  }
}

// 32-bit word w of N accumulator values rounded to T (T of 2, 4 or 8 bytes; f64 gives the low
// or high half of element w / 2): a 16-bit pair is one packed conversion (cvt.rn.bf16x2.f32).
template <class T, int N>
__device__ __forceinline__ uint32_t elem_word(const acc_t<T> (&v)[N], int w) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(v[2 * w], v[2 * w + 1]);
    return *reinterpret_cast<const uint32_t*>(&h);
  } else if constexpr (std::is_same_v<T, __half>) {
    const __half2 h = __floats2half2_rn(v[2 * w], v[2 * w + 1]);
    return *reinterpret_cast<const uint32_t*>(&h);
  } else if constexpr (sizeof(T) == 4) {
    return __float_as_uint(v[w]);
  } else {
    return static_cast<uint32_t>((w & 1) ? __double2hiint(v[w / 2]) : __double2loint(v[w / 2]));
  }
}

// The inverse of load_acc_vec: N values rounded to T stored at p (aligned to N·sizeof(T)) as
// one 4-, 8- or 16-byte store of packed words. A Vec<16-bit type, N> assigned element by
// element could be split by nvcc into 2-byte stores.
template <class T, int N>
__device__ __forceinline__ void store_acc_vec(T* p, const acc_t<T> (&v)[N]) {
  constexpr int kBytes = static_cast<int>(sizeof(T)) * N;
  if constexpr (N == 1 || (kBytes != 4 && kBytes != 8 && kBytes != 16)) {
#pragma unroll
    for (int e = 0; e < N; ++e) p[e] = from_acc<T>(v[e]);
  } else if constexpr (kBytes == 4) {
    *reinterpret_cast<uint32_t*>(p) = elem_word<T, N>(v, 0);
  } else if constexpr (kBytes == 8) {
    *reinterpret_cast<uint2*>(p) = make_uint2(elem_word<T, N>(v, 0), elem_word<T, N>(v, 1));
  } else {
    *reinterpret_cast<uint4*>(p) =
        make_uint4(elem_word<T, N>(v, 0), elem_word<T, N>(v, 1), elem_word<T, N>(v, 2), elem_word<T, N>(v, 3));
  }
}

// N values rounded to T stored at p (global memory, 16-byte aligned; sizeof(T)·N a multiple of
// 16) as weak 16-byte vector stores, written in PTX. In the embedding kernels nvcc split both
// a Vec assignment and store_acc_vec's uint4 store into 4- or 2-byte stores (st.global.f32 x4,
// st.global.u16 x8), while conv1d's same stores stayed whole. __stwb keeps the vector but
// makes it STRONG.SM, which cost conv1d 3-6 points of bandwidth (docs/perf/embedding.md).
template <class T, int N>
__device__ __forceinline__ void store_global16(T* p, const acc_t<T> (&v)[N]) {
  constexpr int kBytes = static_cast<int>(sizeof(T)) * N;
  static_assert(kBytes % 16 == 0, "store_global16 stores whole 16-byte vectors");
  const size_t g = __cvta_generic_to_global(p);
#pragma unroll
  for (int q = 0; q < kBytes / 16; ++q)
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(g + 16 * q), "r"(elem_word<T, N>(v, 4 * q)),
                 "r"(elem_word<T, N>(v, 4 * q + 1)), "r"(elem_word<T, N>(v, 4 * q + 2)), "r"(elem_word<T, N>(v, 4 * q + 3))
                 : "memory");
}

// Calls f.template operator()<T>() with T the element type of a float DType known only at run
// time (`dt`, the DType as int; f32, f16, bf16, else f64): the one device-side dtype switch. A
// kernel that reads several such elements should take it once around all of its loads, so
// that they are issued together (conv1d's set-up: load_chan_taps).
template <class F>
__device__ __forceinline__ void with_float_type(int dt, F&& f) {
  if (dt == static_cast<int>(DType::f32)) f.template operator()<float>();
  else if (dt == static_cast<int>(DType::f16)) f.template operator()<__half>();
  else if (dt == static_cast<int>(DType::bf16)) f.template operator()<__nv_bfloat16>();
  else f.template operator()<double>();
}

// Host side: f.operator()<T>() for the CUDA type T of a float dtype (f32, f16, bf16, f64) — the
// launchers' dtype switch; R{} (no launcher) for any other dtype.
template <class R, class F>
R pick_float_type(DType dt, F&& f) {
  switch (dt) {
    case DType::f32: return f.template operator()<float>();
    case DType::f16: return f.template operator()<__half>();
    case DType::bf16: return f.template operator()<__nv_bfloat16>();
    case DType::f64: return f.template operator()<double>();
    default: return R{};
  }
}

// Element i of a float array whose dtype is known only at run time (small side tensors:
// caches, weights, states). Each call is its own dtype test: the load's conversion sits in its
// branch, so consecutive calls wait for one another (see with_float_type).
template <class A>
__device__ __forceinline__ A load_as(const void* p, int dt, int64_t i) {
  A r;
  with_float_type(dt, [&]<class T>() { r = static_cast<A>(to_acc(static_cast<const T*>(p)[i])); });
  return r;
}
template <class A>
__device__ __forceinline__ void store_as(void* p, int dt, int64_t i, A v) {
  with_float_type(dt, [&]<class T>() { static_cast<T*>(p)[i] = from_acc<T>(static_cast<acc_t<T>>(v)); });
}

// VEC elements of storage type S at `at` (column c0 of a row of `cols`), as stored, in unsigned
// words (RawVec: what one vector access moves): one access when the vector is whole, else element
// by element (those at column cols or beyond read as zero bits) packed into the words. The
// kernels load every operand of a batch this way before converting any (to_c_vec). Converting
// right after each load made a 2-byte type's second operand wait for its first: the whole and
// the partial path met in per-element registers, so the vector load was unpacked at once (PRMT
// on the loaded register), two memory latencies per thread (H200 SASS / ncu, bf16 binary ops:
// docs/perf/elementwise.md).
template <int kBytes> struct RawWordOf { using type = uint4; };
template <> struct RawWordOf<8> { using type = uint2; };
template <> struct RawWordOf<4> { using type = uint32_t; };
template <> struct RawWordOf<2> { using type = uint16_t; };
template <> struct RawWordOf<1> { using type = uint8_t; };
template <class S, int VEC>
using RawVec = typename RawWordOf<static_cast<int>(sizeof(S)) * VEC>::type;

template <int VEC, class S>
__device__ __forceinline__ RawVec<S, VEC> load_raw(const S* at, uint32_t c0, bool whole, uint32_t cols) {
  static_assert(sizeof(RawVec<S, VEC>) == sizeof(S) * VEC);
  if (whole) return *reinterpret_cast<const RawVec<S, VEC>*>(at);
  Vec<S, VEC> w;
#pragma unroll
  for (int e = 0; e < VEC; ++e) w.v[e] = c0 + e < cols ? at[e] : S{};
  RawVec<S, VEC> r;
  memcpy(&r, &w, sizeof r);
  return r;
}
template <class C, int VEC, class S>
__device__ __forceinline__ void to_c_vec(const RawVec<S, VEC>& r, C* x) {
  Vec<S, VEC> w;
  memcpy(&w, &r, sizeof w);
#pragma unroll
  for (int e = 0; e < VEC; ++e) x[e] = to_c<C>(w.v[e]);
}
template <int VEC, class S, class C>
__device__ __forceinline__ void store_vec(S* at, uint32_t c0, bool whole, uint32_t cols, const C* y, bool sat_fp8) {
  if (whole) {
    Vec<S, VEC> w;
#pragma unroll
    for (int e = 0; e < VEC; ++e) w.v[e] = from_c<S>(y[e], sat_fp8);
    *reinterpret_cast<Vec<S, VEC>*>(at) = w;
  } else {
#pragma unroll
    for (int e = 0; e < VEC; ++e)
      if (c0 + e < cols) at[e] = from_c<S>(y[e], sat_fp8);
  }
}

// Calls f.template operator()<T>() for the storage type of t among the enabled families
// (compile-time, so disabled families are never instantiated). All: also fp8, i8 and i16
// (casts); other ops run those through the strided path.
template <bool Floats, bool Ints, bool All = false, class F>
bool dispatch_storage(DType t, F&& f) {
  switch (t) {
    case DType::f32: if constexpr (Floats) { f.template operator()<float>(); return true; } return false;
    case DType::f16: if constexpr (Floats) { f.template operator()<__half>(); return true; } return false;
    case DType::bf16: if constexpr (Floats) { f.template operator()<__nv_bfloat16>(); return true; } return false;
    case DType::f64: if constexpr (Floats) { f.template operator()<double>(); return true; } return false;
    case DType::f8e4m3: if constexpr (All) { f.template operator()<__nv_fp8_e4m3>(); return true; } return false;
    case DType::f8e5m2: if constexpr (All) { f.template operator()<__nv_fp8_e5m2>(); return true; } return false;
    case DType::i8: if constexpr (All) { f.template operator()<int8_t>(); return true; } return false;
    case DType::i16: if constexpr (All) { f.template operator()<int16_t>(); return true; } return false;
    case DType::u8: if constexpr (Ints) { f.template operator()<uint8_t>(); return true; } return false;
    case DType::i32: if constexpr (Ints) { f.template operator()<int32_t>(); return true; } return false;
    case DType::i64: if constexpr (Ints) { f.template operator()<int64_t>(); return true; } return false;
    case DType::boolean: if constexpr (Ints) { f.template operator()<bool>(); return true; } return false;
    default: return false;
  }
}

}  // namespace baracuda
