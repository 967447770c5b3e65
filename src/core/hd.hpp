// BARACUDA_HD: a function both host code (g++, the float64 reference) and device code (nvcc)
// call. Under nvcc it is __host__ __device__ __forceinline__, elsewhere plain inline.
#pragma once

#if defined(__CUDACC__)
#define BARACUDA_HD __host__ __device__ __forceinline__
#else
#define BARACUDA_HD inline
#endif
