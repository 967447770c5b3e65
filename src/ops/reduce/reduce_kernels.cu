// Reduce-to-shape kernels: fixed-order (deterministic) sum / prod / max / min.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "core/arith.hpp"
#include "core/cuda_types.cuh"
#include "core/launch.cuh"
#include "ops/reduce/reduce_geometry.hpp"

namespace baracuda::red {

namespace {

template <class Acc, int OP>
struct Combine {
  __device__ static Acc identity() {
    if constexpr (OP == 0) return Acc(0);
    else if constexpr (OP == 1) return Acc(1);
    else if constexpr (std::is_integral_v<Acc>) return OP == 2 ? INT64_MIN : INT64_MAX;
    else return OP == 2 ? -std::numeric_limits<Acc>::infinity() : std::numeric_limits<Acc>::infinity();
  }
  __device__ static Acc apply(Acc a, Acc b) {
    if constexpr (OP == 0) {
      if constexpr (std::is_integral_v<Acc>) return wadd(a, b);
      else return a + b;
    } else if constexpr (OP == 1) {
      if constexpr (std::is_integral_v<Acc>) return wmul(a, b);
      else return a * b;
    } else if constexpr (OP == 2) {
      return nan_max(a, b);
    } else {
      return nan_min(a, b);
    }
  }
};

__device__ __forceinline__ int64_t kept_offset(const ReduceGeom& g, int64_t k, bool y) {
  int64_t off = 0;
  for (int a = g.kk - 1; a >= 0; --a) {
    const int64_t c = k % g.ksize[a];
    k /= g.ksize[a];
    off += c * (y ? g.kys[a] : g.kxs[a]);
  }
  return off;
}
__device__ __forceinline__ int64_t red_offset(const ReduceGeom& g, int64_t r) {
  if (g.kr == 1) return r * g.rxs[0];
  int64_t off = 0;
  for (int a = g.kr - 1; a >= 0; --a) {
    const int64_t c = r % g.rsize[a];
    r /= g.rsize[a];
    off += c * g.rxs[a];
  }
  return off;
}

template <class Acc>
__device__ __forceinline__ void store_y(const ReduceGeom& g, int64_t k, Acc v) {
  char* base = static_cast<char*>(g.y) + kept_offset(g, k, true) * static_cast<int64_t>(dtype_size(static_cast<DType>(g.y_dtype)));
  store_dyn<Acc>(base, 0, g.y_dtype, v, false);
}

// One warp per (k, split): lanes stride the split's reduced range; shuffle tree in fixed order.
template <class T, class Acc, int OP>
__global__ void __launch_bounds__(256) row_kernel(const ReduceGeom g) {
  using Cb = Combine<Acc, OP>;
  const int64_t w = (static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x) / 32;
  const int lane = threadIdx.x & 31;
  if (w >= g.K * g.splits) return;
  const int64_t k = w / g.splits, s = w % g.splits;
  const T* x = static_cast<const T*>(g.x) + kept_offset(g, k, false);
  const int64_t r0 = s * g.r_per_split, r1 = min(g.R, r0 + g.r_per_split);
  Acc acc = Cb::identity();
  if (g.kr == 1 && g.rxs[0] == 1) {
    // contiguous run: scalar head up to 16-byte alignment, 16-byte vectors, scalar tail
    constexpr int V = 16 / sizeof(T) > 0 ? 16 / sizeof(T) : 1;
    const uintptr_t addr = reinterpret_cast<uintptr_t>(x + r0);
    int64_t head = static_cast<int64_t>(((16 - addr % 16) % 16) / sizeof(T));
    if (addr % sizeof(T) != 0) head = r1 - r0;  // cannot align: all scalar
    head = min(head, r1 - r0);
    for (int64_t r = r0 + lane; r < r0 + head; r += 32) acc = Cb::apply(acc, to_c<Acc>(x[r]));
    const int64_t nvec = (r1 - r0 - head) / V;
    const Vec<T, V>* xv = reinterpret_cast<const Vec<T, V>*>(x + r0 + head);
    for (int64_t v = lane; v < nvec; v += 32) {
      const Vec<T, V> w = xv[v];
#pragma unroll
      for (int e = 0; e < V; ++e) acc = Cb::apply(acc, to_c<Acc>(w.v[e]));
    }
    for (int64_t r = r0 + head + nvec * V + lane; r < r1; r += 32) acc = Cb::apply(acc, to_c<Acc>(x[r]));
  } else {
    for (int64_t r = r0 + lane; r < r1; r += 32) acc = Cb::apply(acc, to_c<Acc>(x[red_offset(g, r)]));
  }
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) acc = Cb::apply(acc, __shfl_xor_sync(0xffffffffu, acc, d));
  if (lane != 0) return;
  if (g.splits == 1) store_y(g, k, acc);
  else static_cast<Acc*>(g.partials)[s * g.K + k] = acc;
}

// One thread per (k, split), walking the split's reduced range in order.
template <class T, class Acc, int OP>
__global__ void __launch_bounds__(256) col_kernel(const ReduceGeom g) {
  using Cb = Combine<Acc, OP>;
  const int64_t k = static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x;
  const int64_t s = blockIdx.y;
  if (k >= g.K) return;
  const T* x = static_cast<const T*>(g.x) + kept_offset(g, k, false);
  const int64_t r0 = s * g.r_per_split, r1 = min(g.R, r0 + g.r_per_split);
  Acc acc = Cb::identity();
  if (g.kr == 1) {
    const int64_t st = g.rxs[0];
    int64_t r = r0;
    for (; r + 4 <= r1; r += 4) {  // four loads in flight, combined in order
      const Acc a0 = to_c<Acc>(x[r * st]), a1 = to_c<Acc>(x[(r + 1) * st]);
      const Acc a2 = to_c<Acc>(x[(r + 2) * st]), a3 = to_c<Acc>(x[(r + 3) * st]);
      acc = Cb::apply(Cb::apply(Cb::apply(Cb::apply(acc, a0), a1), a2), a3);
    }
    for (; r < r1; ++r) acc = Cb::apply(acc, to_c<Acc>(x[r * st]));
  } else {
    for (int64_t r = r0; r < r1; ++r) acc = Cb::apply(acc, to_c<Acc>(x[red_offset(g, r)]));
  }
  if (g.splits == 1) store_y(g, k, acc);
  else static_cast<Acc*>(g.partials)[s * g.K + k] = acc;
}

// col_kernel with V adjacent outputs per thread (one kept axis, unit stride, 16-byte aligned
// rows): one 16-byte load per row instead of V narrow ones (bf16: a warp read 64 bytes per row,
// 68 % of copy on [16384, 16384] -> [16384]); each output adds its rows in the same order.
template <class T, class Acc, int OP, int V>
__global__ void __launch_bounds__(256) col_vec_kernel(const ReduceGeom g) {
  using Cb = Combine<Acc, OP>;
  const int64_t k0 = (static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x) * V;
  const int64_t s = blockIdx.y;
  if (k0 >= g.K) return;
  const T* x = static_cast<const T*>(g.x) + k0;
  const int64_t r0 = s * g.r_per_split, r1 = min(g.R, r0 + g.r_per_split), st = g.rxs[0];
  Acc acc[V];
#pragma unroll
  for (int e = 0; e < V; ++e) acc[e] = Cb::identity();
  auto add = [&](const RawVec<T, V>& w) {
    Acc a[V];
    to_c_vec<Acc, V, T>(w, a);
#pragma unroll
    for (int e = 0; e < V; ++e) acc[e] = Cb::apply(acc[e], a[e]);
  };
  int64_t r = r0;
  for (; r + 4 <= r1; r += 4) {  // four loads in flight, added in order
    RawVec<T, V> w[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) w[u] = load_raw<V>(x + (r + u) * st, 0u, true, 0u);
#pragma unroll
    for (int u = 0; u < 4; ++u) add(w[u]);
  }
  for (; r < r1; ++r) add(load_raw<V>(x + r * st, 0u, true, 0u));
#pragma unroll
  for (int e = 0; e < V; ++e) {
    if (g.splits == 1) store_y(g, k0 + e, acc[e]);
    else static_cast<Acc*>(g.partials)[s * g.K + k0 + e] = acc[e];
  }
}

template <class Acc, int OP>
__global__ void __launch_bounds__(256) combine_kernel(const ReduceGeom g) {
  using Cb = Combine<Acc, OP>;
  const int64_t k = static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x;
  if (k >= g.K) return;
  const Acc* p = static_cast<const Acc*>(g.partials);
  Acc acc = Cb::identity();
  for (int64_t s = 0; s < g.splits; ++s) acc = Cb::apply(acc, p[s * g.K + k]);
  store_y(g, k, acc);
}

template <class T, class Acc, int OP>
cudaError_t launch(const ReduceGeom& g, cudaStream_t stream) {
  if (g.K == 0) return cudaSuccess;
  cudaError_t e;
  if (g.row_mode) {
    const int64_t warps = g.K * g.splits;
    e = launch_kernel(row_kernel<T, Acc, OP>, dim3(static_cast<unsigned>((warps + 7) / 8)), dim3(256), 0, stream, g);
  } else {
    // the float types only (col_vec is 1 for the others; no kernels instantiated for them)
    constexpr int V = 16 / sizeof(T);
    constexpr bool kVecType = std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;
    const bool vec = kVecType && g.col_vec == V && g.kxs[0] == 1 && g.rxs[0] % V == 0 && reinterpret_cast<uintptr_t>(g.x) % 16 == 0;
    if constexpr (kVecType) {
      if (vec)
        e = launch_kernel(col_vec_kernel<T, Acc, OP, V>, dim3(static_cast<unsigned>((g.K / V + 255) / 256), static_cast<unsigned>(g.splits)),
                          dim3(256), 0, stream, g);
    }
    if (!vec)
      e = launch_kernel(col_kernel<T, Acc, OP>, dim3(static_cast<unsigned>((g.K + 255) / 256), static_cast<unsigned>(g.splits)), dim3(256), 0,
                        stream, g);
  }
  if (e != cudaSuccess || g.splits == 1) return e;
  return launch_kernel(combine_kernel<Acc, OP>, dim3(static_cast<unsigned>((g.K + 255) / 256)), dim3(256), 0, stream, g);
}

template <class T, bool F64>
ReduceLaunchFn pick(int op) {
  using Acc = std::conditional_t<std::is_integral_v<T>, int64_t, std::conditional_t<F64, double, float>>;
  switch (op) {
    case 0: return &launch<T, Acc, 0>;
    case 1: return &launch<T, Acc, 1>;
    case 2: return &launch<T, Acc, 2>;
    default: return &launch<T, Acc, 3>;
  }
}

}  // namespace

ReduceLaunchFn reduce_find_kernel(DType in, int op, bool f64_acc) {
  ReduceLaunchFn fn = nullptr;
  dispatch_storage<true, true, true>(in, [&]<class T>() {
    if constexpr (std::is_same_v<T, double>) fn = pick<T, true>(op);
    else if constexpr (std::is_integral_v<T>) fn = pick<T, false>(op);
    else fn = f64_acc ? pick<T, true>(op) : pick<T, false>(op);
  });
  return fn;
}

}  // namespace baracuda::red
