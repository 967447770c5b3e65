// FillPlan's kernels: a value per output position (the kind's formula), written to a contiguous
// output in 16-byte pieces (an unaligned head and the tail element by element) or to any
// strided view element by element. full and eye move raw bits (one kernel per element size);
// arange / linspace / logspace compute in the dtype's compute type (f32, f64 for f64, i64 for
// integer arange), products and sums fused (fma) as nvcc builds PyTorch's kernels.
#include <algorithm>
#include <cmath>

#include "core/cuda_types.cuh"
#include "core/launch.cuh"
#include "ops/copy/fill_geometry.hpp"

namespace baracuda::fillk {

namespace {

// Writes value(f) (raw bits of type U) at every position f of the output.
template <class U, class F>
__device__ void write_all(const FillParams& p, F value) {
  U* out = static_cast<U*>(p.out);
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x, nthreads = static_cast<int64_t>(gridDim.x) * kThreads;
  if (!p.contiguous) {
    for (int64_t f = tid; f < p.numel; f += nthreads) {
      int64_t r = f, o = 0;
      for (int a = p.rank - 1; a >= 0; --a) {
        o += (r % p.shape[a]) * p.stride[a];
        r /= p.shape[a];
      }
      out[o] = value(f);
    }
    return;
  }
  constexpr int V = 16 / static_cast<int>(sizeof(U));
  const int64_t mis = static_cast<int64_t>(reinterpret_cast<uintptr_t>(out) % 16) / static_cast<int64_t>(sizeof(U));
  const int64_t head = mis == 0 ? 0 : std::min<int64_t>(p.numel, V - mis);
  const int64_t body = (p.numel - head) / V, tail = head + body * V;
  uint4* vout = reinterpret_cast<uint4*>(out + head);
  for (int64_t c = tid; c < body; c += nthreads) {
    union {
      uint4 v;
      U e[V];
    } pack;
    const int64_t f0 = head + c * V;
#pragma unroll
    for (int k = 0; k < V; ++k) pack.e[k] = value(f0 + k);
    vout[c] = pack.v;
  }
  if (tid < head) out[tid] = value(tid);
  if (tid < p.numel - tail) out[tail + tid] = value(tail + tid);
}

template <class U>
__global__ void __launch_bounds__(kThreads) bits_kernel(const FillParams p) {
  const U one = static_cast<U>(p.bits);
  if (p.kind == FillKind::kEye) {
    const int64_t cols = p.cols;
    write_all<U>(p, [&](int64_t f) { return f / cols == f % cols ? one : U(0); });
  } else {
    write_all<U>(p, [&](int64_t) { return one; });
  }
}

template <class U, class T>
__device__ __forceinline__ U as_bits(T v) {
  U u;
  memcpy(&u, &v, sizeof(U));
  return u;
}

// arange / linspace / logspace of T.
template <class T>
__global__ void __launch_bounds__(kThreads) range_kernel(const FillParams p) {
  using U = typename StorageTypes::template bits<sizeof(T)>;
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  constexpr bool kInt = std::is_integral_v<T>;
  const C start = static_cast<C>(p.start), end = static_cast<C>(p.end), step = static_cast<C>(p.step);
  // linspace's exponent / value: the symmetric form (both ends exact)
  auto lin = [&](int64_t f) -> C {
    return f < p.halfway ? fma(step, static_cast<C>(f), start) : fma(-step, static_cast<C>(p.steps - 1 - f), end);
  };
  if (p.kind == FillKind::kArange) {
    if constexpr (kInt) {
      const uint64_t s0 = static_cast<uint64_t>(p.istart), ds = static_cast<uint64_t>(p.istep);
      write_all<U>(p, [&](int64_t f) { return as_bits<U>(static_cast<T>(static_cast<int64_t>(s0 + ds * static_cast<uint64_t>(f)))); });
    } else {
      write_all<U>(p, [&](int64_t f) { return as_bits<U>(from_c<T>(fma(step, static_cast<C>(f), start), false)); });
    }
  } else if (p.kind == FillKind::kLinspace) {
    write_all<U>(p, [&](int64_t f) { return as_bits<U>(from_c<T>(lin(f), false)); });
  } else {
    const double base = p.base;
    write_all<U>(p, [&](int64_t f) { return as_bits<U>(from_c<T>(pow(base, static_cast<double>(lin(f))), false)); });
  }
}

// A grid-stride loop over pieces (contiguous) or elements: at most one wave of resident blocks.
int64_t blocks_for(const FillParams& p) { return std::clamp<int64_t>((p.numel + kThreads - 1) / kThreads, 1, kMaxGrid); }

template <class U>
cudaError_t launch_bits(const FillParams& p, cudaStream_t stream) {
  if (p.numel == 0) return cudaSuccess;
  return launch_kernel(bits_kernel<U>, dim3(static_cast<unsigned>(blocks_for(p))), dim3(kThreads), 0, stream, p);
}

template <class T>
cudaError_t launch_range(const FillParams& p, cudaStream_t stream) {
  if (p.numel == 0) return cudaSuccess;
  return launch_kernel(range_kernel<T>, dim3(static_cast<unsigned>(blocks_for(p))), dim3(kThreads), 0, stream, p);
}

}  // namespace

FillLaunchFn find_fill(DType dt, FillKind kind) {
  if (kind == FillKind::kFull || kind == FillKind::kEye) {
    switch (dtype_size(dt)) {
      case 1: return &launch_bits<uint8_t>;
      case 2: return &launch_bits<uint16_t>;
      case 4: return &launch_bits<uint32_t>;
      case 8: return &launch_bits<uint64_t>;
      default: return nullptr;
    }
  }
  FillLaunchFn fn = nullptr;
  const bool ints = kind != FillKind::kLogspace;
  auto pick = [&]<class T>() { fn = &launch_range<T>; };
  if (ints) dispatch_dtype<CudaTypes>(dt, DTypeList<DType::f32, DType::f16, DType::bf16, DType::f64, DType::i8, DType::u8, DType::i16, DType::i32, DType::i64>{}, pick);
  else dispatch_dtype<CudaTypes>(dt, DTypeList<DType::f32, DType::f16, DType::bf16, DType::f64>{}, pick);
  return fn;
}

}  // namespace baracuda::fillk
