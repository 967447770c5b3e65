// Device element types for dispatch_dtype, and the accumulator conversions kernels share.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

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

// Element i of a float array whose dtype is known only at run time (small side tensors:
// caches, weights, states); `dt` is the DType as int.
template <class A>
__device__ __forceinline__ A load_as(const void* p, int dt, int64_t i) {
  if (dt == static_cast<int>(DType::f32)) return static_cast<A>(static_cast<const float*>(p)[i]);
  if (dt == static_cast<int>(DType::f16)) return static_cast<A>(__half2float(static_cast<const __half*>(p)[i]));
  if (dt == static_cast<int>(DType::bf16)) return static_cast<A>(__bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]));
  return static_cast<A>(static_cast<const double*>(p)[i]);
}
template <class A>
__device__ __forceinline__ void store_as(void* p, int dt, int64_t i, A v) {
  if (dt == static_cast<int>(DType::f32)) static_cast<float*>(p)[i] = static_cast<float>(v);
  else if (dt == static_cast<int>(DType::f16)) static_cast<__half*>(p)[i] = __float2half_rn(static_cast<float>(v));
  else if (dt == static_cast<int>(DType::bf16)) static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(static_cast<float>(v));
  else static_cast<double*>(p)[i] = static_cast<double>(v);
}

}  // namespace baracuda
