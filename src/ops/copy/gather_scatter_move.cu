// The one-pass gather / scatter kernels: the move (gather; scatter none, by element size, in
// elements or 16-byte units) and the atomic scatter (sum / prod / amax / amin per dtype).
#include <algorithm>

#include "ops/copy/gather_scatter_common.cuh"

namespace baracuda::gs {

namespace {

struct Offsets {
  int64_t data = 0, out = 0, idx = 0;
  bool first = true;  // every coordinate the index is constant over is 0 (counts an entry once)
};

// Unit u's offsets; kNarrow: every offset fits int32 (fewer wide multiplies). Unrolled over
// kMaxRank, predicated on naxes (a loop bounded by the parameter is not unrolled).
template <bool kNarrow = false>
__device__ __forceinline__ Offsets offsets_of(const MoveParams& p, int64_t u) {
  using I = std::conditional_t<kNarrow, int32_t, int64_t>;
  I data = 0, out = 0, idx = 0;
  bool first = true;
  if (p.small) {
    uint32_t r = static_cast<uint32_t>(u);
#pragma unroll
    for (int k = kMaxRank - 1; k >= 0; --k) {
      if (k >= p.naxes) continue;
      const Axis& a = p.ax[k];
      const uint32_t q = k > 0 ? a.div.div(r) : 0;
      const I c = static_cast<I>(r - q * static_cast<uint32_t>(a.n));
      r = q;
      data += c * static_cast<I>(a.data_s), out += c * static_cast<I>(a.out_s), idx += c * static_cast<I>(a.idx_s);
      first = first && (c == 0 || a.idx_s != 0);
    }
  } else {
    int64_t r = u;
#pragma unroll
    for (int k = kMaxRank - 1; k >= 0; --k) {
      if (k >= p.naxes) continue;
      const Axis& a = p.ax[k];
      const int64_t q = k > 0 ? r / a.n : 0;
      const I c = static_cast<I>(r - q * a.n);
      r = q;
      data += c * static_cast<I>(a.data_s), out += c * static_cast<I>(a.out_s), idx += c * static_cast<I>(a.idx_s);
      first = first && (c == 0 || a.idx_s != 0);
    }
  }
  return Offsets{data, out, idx, first};
}

template <int U>
struct UnitOf {
  using type = std::conditional_t<U == 1, unsigned char, std::conditional_t<U == 2, unsigned short, std::conditional_t<U == 4, unsigned int,
               std::conditional_t<U == 8, unsigned long long, uint4>>>>;  // (types __ldg takes)
};

// Gather (scatter = 0) or scatter none (1) of U-byte units; offsets in elements of esize bytes.
template <int U, bool kNarrow>
__global__ void __launch_bounds__(kThreads) move_kernel(const __grid_constant__ MoveParams p) {
  using V = typename UnitOf<U>::type;
  // a block walks `passes` consecutive passes of kThreads · kUnitsPerThread units: a gather
  // along a row then finds the row's sectors in its SM's L1
  const int64_t pass = int64_t{kThreads} * kUnitsPerThread, span = pass * p.passes;
  V fill;
  __builtin_memcpy(&fill, p.fill, U);
  for (int64_t start = static_cast<int64_t>(blockIdx.x) * span; start < p.units; start += static_cast<int64_t>(gridDim.x) * span) {
    for (int64_t base = start + threadIdx.x, end = start + span < p.units ? start + span : p.units; base < end; base += pass) {
      Offsets o[kUnitsPerThread];
      int64_t j[kUnitsPerThread];
      bool ok[kUnitsPerThread];
#pragma unroll
      for (int k = 0; k < kUnitsPerThread; ++k) {
        const int64_t u = base + int64_t{k} * kThreads;
        ok[k] = false;
        if (u < end) {
          o[k] = offsets_of<kNarrow>(p, u);
          ok[k] = resolve(p.rule, o[k].idx, o[k].first, &j[k]);
        }
      }
      if (!p.scatter) {
        V v[kUnitsPerThread];
#pragma unroll
        for (int k = 0; k < kUnitsPerThread; ++k)
          v[k] = ok[k] ? __ldg(reinterpret_cast<const V*>(p.data + (o[k].data + j[k] * p.dim_s) * p.esize)) : fill;
#pragma unroll
        for (int k = 0; k < kUnitsPerThread; ++k)
          if (base + int64_t{k} * kThreads < end) *reinterpret_cast<V*>(p.out + o[k].out * p.esize) = v[k];
      } else {
#pragma unroll
        for (int k = 0; k < kUnitsPerThread; ++k)
          if (ok[k])
            *reinterpret_cast<V*>(p.out + (o[k].out + j[k] * p.dim_s) * p.esize) =
                p.data ? *reinterpret_cast<const V*>(p.data + o[k].data * p.esize) : fill;
      }
    }
  }
}

// out[t] = combine(out[t], v) for VEC elements at t: native atomic adds where they exist.
template <class T, int VEC>
__device__ __forceinline__ void atomic_combine(Reduce r, T* t, const calc_t<T> (&v)[VEC]) {
  if (r == Reduce::kSum) {
    if constexpr (std::is_same_v<T, float> && VEC == 4) {
      atomicAdd(reinterpret_cast<float4*>(t), make_float4(v[0], v[1], v[2], v[3]));
      return;
    } else if constexpr ((std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) && VEC == 8) {
      red_add16<T>(t, v);
      return;
    } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, __half> ||
                         std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, int32_t>) {
#pragma unroll
      for (int e = 0; e < VEC; ++e) atomicAdd(t + e, down<T>(v[e]));
      return;
    } else if constexpr (std::is_same_v<T, int64_t>) {
#pragma unroll
      for (int e = 0; e < VEC; ++e)
        atomicAdd(reinterpret_cast<unsigned long long*>(t + e), static_cast<unsigned long long>(v[e]));
      return;
    }
  }
#pragma unroll
  for (int e = 0; e < VEC; ++e) {
    const calc_t<T> x = v[e];
    atomic_update(t + e, [&](T cur) { return down<T>(combine(r, up(cur), x)); });
  }
}

// The atomic scatter: phase 0 sets every target to the identity, phase 1 combines.
template <class T, int VEC>
__global__ void __launch_bounds__(kThreads) atomic_kernel(const __grid_constant__ MoveParams p) {
  using C = calc_t<T>;
  const int64_t step = static_cast<int64_t>(gridDim.x) * kThreads;
  const C alpha = p.has_alpha ? from_bits<C>(p.alpha_bits) : C(1);
  for (int64_t u = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; u < p.units; u += step) {
    const Offsets o = offsets_of(p, u);
    int64_t j = 0;
    if (!resolve(p.rule, o.idx, o.first && p.phase == 1, &j)) continue;
    T* t = reinterpret_cast<T*>(p.out) + o.out + j * p.dim_s;
    C v[VEC];
    if (p.phase == 0) {
#pragma unroll
      for (int e = 0; e < VEC; ++e) v[e] = identity<T>(p.reduce);
      store_calc<T, VEC>(t, v);
      continue;
    }
    if (p.data) {
      load_calc<T, VEC>(reinterpret_cast<const T*>(p.data) + o.data, v);
    } else {
#pragma unroll
      for (int e = 0; e < VEC; ++e) v[e] = up(from_bits<T>(p.fill[0]));
    }
    if (p.has_alpha)
#pragma unroll
      for (int e = 0; e < VEC; ++e) v[e] = combine(Reduce::kProd, v[e], alpha);
    atomic_combine<T, VEC>(p.reduce, t, v);
  }
}

unsigned grid_for(int64_t units, int per_thread) {
  const int64_t per_block = int64_t{kThreads} * per_thread;
  return static_cast<unsigned>(std::min<int64_t>((units + per_block - 1) / per_block, int64_t{1} << 30));
}

template <int U>
cudaError_t launch_move(const MoveParams& p, cudaStream_t stream) {
  if (p.units == 0) return cudaSuccess;
  auto kernel = p.narrow ? move_kernel<U, true> : move_kernel<U, false>;
  return launch_kernel(kernel, dim3(grid_for(p.units, kUnitsPerThread * p.passes)), dim3(kThreads), 0, stream, p);
}

template <class T, int VEC>
cudaError_t launch_atomic(const MoveParams& p, cudaStream_t stream) {
  if (p.units == 0) return cudaSuccess;
  return launch_kernel(atomic_kernel<T, VEC>, dim3(grid_for(p.units, 1)), dim3(kThreads), 0, stream, p);
}

}  // namespace

MoveLaunchFn find_move(int esize, bool vec) {
  if (vec) return &launch_move<16>;
  switch (esize) {
    case 1: return &launch_move<1>;
    case 2: return &launch_move<2>;
    case 4: return &launch_move<4>;
    case 8: return &launch_move<8>;
    default: return nullptr;
  }
}

MoveLaunchFn find_atomic(DType t, bool vec) {
  switch (t) {
    case DType::f32: return vec ? &launch_atomic<float, 4> : &launch_atomic<float, 1>;
    case DType::f16: return vec ? &launch_atomic<__half, 8> : &launch_atomic<__half, 1>;
    case DType::bf16: return vec ? &launch_atomic<__nv_bfloat16, 8> : &launch_atomic<__nv_bfloat16, 1>;
    case DType::f64: return vec ? &launch_atomic<double, 2> : &launch_atomic<double, 1>;
    case DType::i8: return vec ? nullptr : &launch_atomic<int8_t, 1>;
    case DType::u8: return vec ? nullptr : &launch_atomic<uint8_t, 1>;
    case DType::i16: return vec ? nullptr : &launch_atomic<int16_t, 1>;
    case DType::i32: return vec ? nullptr : &launch_atomic<int32_t, 1>;
    case DType::i64: return vec ? nullptr : &launch_atomic<int64_t, 1>;
    default: return nullptr;
  }
}

}  // namespace baracuda::gs
