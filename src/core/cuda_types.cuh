// Device element types for dispatch_dtype, and the accumulator conversions kernels share.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

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

template <class T>
__device__ __forceinline__ acc_t<T> to_acc(T v) { return static_cast<acc_t<T>>(v); }
template <> __device__ __forceinline__ float to_acc<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_acc<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T>
__device__ __forceinline__ T from_acc(acc_t<T> v) { return static_cast<T>(v); }
template <> __device__ __forceinline__ __half from_acc<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_acc<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

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

}  // namespace baracuda
