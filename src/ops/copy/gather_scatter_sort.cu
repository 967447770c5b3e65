// The deterministic scatter: per position its target key, CUB's stable radix sort of (key,
// position) (core/radix_sort), then one thread per (sorted slot, column unit) at the start of a
// key's run combines the run in position order and writes the target once.
#include <algorithm>

#include "core/radix_sort.hpp"
#include "ops/copy/gather_scatter_common.cuh"

namespace baracuda::gs {

namespace {

__device__ __forceinline__ uint64_t key_at(const void* keys, int wide, int64_t i) {
  return wide ? static_cast<const uint64_t*>(keys)[i] : static_cast<const uint32_t*>(keys)[i];
}
__device__ __forceinline__ int64_t pos_at(const void* pos, int wide, int64_t i) {
  return wide ? static_cast<const int64_t*>(pos)[i] : static_cast<const int32_t*>(pos)[i];
}

__global__ void __launch_bounds__(kThreads) keys_kernel(const __grid_constant__ SortParams p) {
  const uint64_t sentinel = (p.key_bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << p.key_bits) - 1);
  const int64_t step = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < p.positions; i += step) {
    int64_t r = i, idx_off = 0, dim_c = 0;
    uint64_t key = 0;
    for (int k = p.npos - 1; k >= 0; --k) {
      const PosAxis& a = p.pa[k];
      const int64_t q = k > 0 ? r / a.n : 0, c = r - q * a.n;
      r = q;
      idx_off += c * a.idx_s;
      if (a.is_dim) dim_c = a.key_c;
      else key += static_cast<uint64_t>(c * a.key_c);
    }
    int64_t j = 0;
    key = resolve(p.rule, idx_off, true, &j) ? key + static_cast<uint64_t>(j * dim_c) : sentinel;
    if (p.wide) {
      static_cast<uint64_t*>(p.keys)[i] = key;
      static_cast<int64_t*>(p.pos)[i] = i;
    } else {
      static_cast<uint32_t*>(p.keys)[i] = static_cast<uint32_t>(key);
      static_cast<int32_t*>(p.pos)[i] = static_cast<int32_t>(i);
    }
  }
}

// Element offset of position i in src.
__device__ __forceinline__ int64_t src_of(const SortParams& p, int64_t i) {
  int64_t off = 0;
  for (int k = p.npos - 1; k >= 0; --k) {
    const PosAxis& a = p.pa[k];
    const int64_t q = k > 0 ? i / a.n : 0;
    off += (i - q * a.n) * a.src_s;
    i = q;
  }
  return off;
}
// Element offset of target key in out.
__device__ __forceinline__ int64_t target_of(const SortParams& p, uint64_t key) {
  int64_t off = 0, r = static_cast<int64_t>(key);
  for (int k = p.npos - 1; k >= 0; --k) {
    const PosAxis& a = p.pa[k];
    const int64_t q = k > 0 ? r / a.key_n : 0;
    off += (r - q * a.key_n) * a.out_s;
    r = q;
  }
  return off;
}

// One thread per (slot, column unit); threads at a run's first slot do the work. T: the
// arithmetic element (none: T is the storage type and the run's last term is moved).
template <class T, int VEC, bool kNone>
__global__ void __launch_bounds__(kThreads) segments_kernel(const __grid_constant__ SortParams p) {
  const uint64_t sentinel = (p.key_bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << p.key_bits) - 1);
  const int64_t total = p.positions * p.cols, step = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t u = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; u < total; u += step) {
    const int64_t slot = p.small ? static_cast<int64_t>(p.cols_div.div(static_cast<uint32_t>(u))) : u / p.cols, cu = u - slot * p.cols;
    const uint64_t key = key_at(p.keys, p.wide, slot);
    if (key == sentinel || (slot > 0 && key_at(p.keys, p.wide, slot - 1) == key)) continue;
    int64_t src_c = 0, out_c = 0;
    {
      int64_t r = cu;
      for (int k = p.ncol - 1; k >= 0; --k) {
        const ColAxis& a = p.ca[k];
        const int64_t q = k > 0 ? r / a.n : 0, c = r - q * a.n;
        r = q;
        src_c += c * a.src_s, out_c += c * a.out_s;
      }
    }
    T* t = reinterpret_cast<T*>(p.out) + target_of(p, key) + out_c;
    if constexpr (kNone) {
      int64_t last = slot;
      while (last + 1 < p.positions && key_at(p.keys, p.wide, last + 1) == key) ++last;
      Vec<T, VEC> w;
      if (p.src) {
        w = *reinterpret_cast<const Vec<T, VEC>*>(reinterpret_cast<const T*>(p.src) + src_of(p, pos_at(p.pos, p.wide, last)) + src_c);
      } else {
#pragma unroll
        for (int e = 0; e < VEC; ++e) w.v[e] = from_bits<T>(p.value_bits);
      }
      *reinterpret_cast<Vec<T, VEC>*>(t) = w;
    } else {
      using C = calc_t<T>;
      const Reduce r = p.reduce;
      C acc[VEC];
      if (p.include_self) load_calc<T, VEC>(t, acc);
      else
#pragma unroll
        for (int e = 0; e < VEC; ++e) acc[e] = identity<T>(r);
      const C alpha = p.has_alpha ? from_bits<C>(p.alpha_bits) : C(1);
      const C value = up(from_bits<T>(p.value_bits));
      int64_t count = 0;
      for (int64_t j = slot; j < p.positions && key_at(p.keys, p.wide, j) == key; ++j, ++count) {
        C v[VEC];
        if (p.src) load_calc<T, VEC>(reinterpret_cast<const T*>(p.src) + src_of(p, pos_at(p.pos, p.wide, j)) + src_c, v);
        else
#pragma unroll
          for (int e = 0; e < VEC; ++e) v[e] = value;
#pragma unroll
        for (int e = 0; e < VEC; ++e) acc[e] = combine(r, acc[e], p.has_alpha ? combine(Reduce::kProd, v[e], alpha) : v[e]);
      }
      if (r == Reduce::kMean) {
        const int64_t n = count + (p.include_self ? 1 : 0);
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          if constexpr (std::is_integral_v<T>) {  // wrapped to the dtype, then floor division
            const int64_t a = static_cast<int64_t>(static_cast<T>(acc[e]));
            int64_t q = a / n;
            if (a % n != 0 && a < 0) --q;
            acc[e] = q;
          } else {
            acc[e] = acc[e] / static_cast<C>(n);
          }
        }
      }
      store_calc<T, VEC>(t, acc);
    }
  }
}

unsigned grid_for(int64_t n) {
  return static_cast<unsigned>(std::min<int64_t>((n + kThreads - 1) / kThreads, int64_t{1} << 30));
}

template <class T, int VEC, bool kNone>
cudaError_t launch_sorted(const SortParams& p0, cudaStream_t stream) {
  if (p0.positions == 0 || p0.cols == 0) return cudaSuccess;
  SortParams p = p0;
  BARACUDA_CUDA_TRY(sort_targets(&p, stream));
  return launch_kernel(segments_kernel<T, VEC, kNone>, dim3(grid_for(p.positions * p.cols)), dim3(kThreads), 0, stream, p);
}

template <int E>
using bits_t = std::conditional_t<E == 1, uint8_t, std::conditional_t<E == 2, uint16_t, std::conditional_t<E == 4, uint32_t, uint64_t>>>;

template <class T>
SortLaunchFn pick(bool vec) {
  constexpr int V = static_cast<int>(16 / sizeof(T));
  return vec ? &launch_sorted<T, V, false> : &launch_sorted<T, 1, false>;
}
template <int E>
SortLaunchFn pick_none(bool vec) {
  return vec ? &launch_sorted<bits_t<E>, 16 / E, true> : &launch_sorted<bits_t<E>, 1, true>;
}

}  // namespace

cudaError_t sort_targets(SortParams* p, cudaStream_t stream) {
  BARACUDA_CUDA_TRY(launch_kernel(keys_kernel, dim3(grid_for(p->positions)), dim3(kThreads), 0, stream, *p));
  detail::SortPairsBuffers b{p->keys, p->keys_alt, p->pos, p->pos_alt};
  BARACUDA_CUDA_TRY(detail::sort_pairs(p->cub_temp, p->cub_bytes, &b, p->positions, p->key_bits, p->wide != 0, stream));
  p->keys = b.keys, p->pos = b.pos;
  return cudaSuccess;
}

SortLaunchFn find_sorted(DType t, bool vec, bool none) {
  if (none) {
    switch (dtype_size(t)) {
      case 1: return pick_none<1>(vec);
      case 2: return pick_none<2>(vec);
      case 4: return pick_none<4>(vec);
      case 8: return pick_none<8>(vec);
      default: return nullptr;
    }
  }
  switch (t) {
    case DType::f32: return pick<float>(vec);
    case DType::f16: return pick<__half>(vec);
    case DType::bf16: return pick<__nv_bfloat16>(vec);
    case DType::f64: return pick<double>(vec);
    case DType::i8: return pick<int8_t>(vec);
    case DType::u8: return pick<uint8_t>(vec);
    case DType::i16: return pick<int16_t>(vec);
    case DType::i32: return pick<int32_t>(vec);
    case DType::i64: return pick<int64_t>(vec);
    default: return nullptr;
  }
}

}  // namespace baracuda::gs
