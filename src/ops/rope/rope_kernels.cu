// RoPE kernels: one launch rotates q and k (or their gradients), see rope_geometry.hpp.
//
// Phase 1 computes (cos, sin) once per (token, pair) of the block's tokens into shared memory:
// θ = p·ω in float64, reduced mod 2π in float64 (Cody–Waite with a two-part 2π), then cos/sin
// in f32 (f64 for f64 data); or the cache row p. Phase 2 walks (token, head, chunk) items,
// U items per thread with all loads issued before any store (in place, items are disjoint).
#include "core/cuda_types.cuh"
#include "core/launch.cuh"
#include "ops/rope/rope_geometry.hpp"

namespace baracuda::detail {
namespace {

constexpr int kUnroll = 4;
constexpr int kF32 = static_cast<int>(DType::f32), kF16 = static_cast<int>(DType::f16);
constexpr int kBF16 = static_cast<int>(DType::bf16);

template <class T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

template <class A>
__device__ __forceinline__ A load_cache(const void* p, int dt, int64_t i) {
  if (dt == kF32) return static_cast<A>(static_cast<const float*>(p)[i]);
  if (dt == kF16) return static_cast<A>(__half2float(static_cast<const __half*>(p)[i]));
  if (dt == kBF16) return static_cast<A>(__bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]));
  return static_cast<A>(static_cast<const double*>(p)[i]);
}

// cos/sin of pos·w with the angle formed and reduced in float64.
__device__ __forceinline__ double reduce_angle(int64_t pos, double w) {
  const double a = static_cast<double>(pos) * w;
  const double k = rint(a * 0.15915494309189535);  // 1 / 2π
  const double r = fma(-k, 6.283185307179586, a);  // 2π = hi + lo
  return fma(-k, 2.4492935982947064e-16, r);
}
__device__ __forceinline__ void angle_sincos(int64_t pos, double w, float* s, float* c) {
  sincosf(static_cast<float>(reduce_angle(pos, w)), s, c);
}
__device__ __forceinline__ void angle_sincos(int64_t pos, double w, double* s, double* c) {
  sincos(reduce_angle(pos, w), s, c);
}

__device__ __forceinline__ int64_t position_of(const RopeParams& p, int64_t b, int64_t s) {
  if (p.pos_rank == 0) return p.pos_offset + s;
  const int64_t i = (p.pos_rank == 2 ? b * p.pos_sb : 0) + s * p.pos_ss;
  return p.pos_i64 ? static_cast<const int64_t*>(p.pos)[i] : static_cast<int64_t>(static_cast<const int32_t*>(p.pos)[i]);
}

template <class T, int NP, bool kInter>
__global__ void __launch_bounds__(kRopeThreads) rope_kernel(const __grid_constant__ RopeParams p) {
  using A = acc_t<T>;
  using V = Vec<T, NP>;
  extern __shared__ __align__(16) unsigned char smem[];
  int64_t* tok_bs = reinterpret_cast<int64_t*>(smem);                      // [Tb][2]: b, s
  A* cs = reinterpret_cast<A*>(smem + sizeof(int64_t) * 2 * p.tokens_per_block);  // [Tb][R/2][2]
  const int64_t tok0 = static_cast<int64_t>(blockIdx.x) * p.tokens_per_block;
  const int nt = static_cast<int>(min(static_cast<int64_t>(p.tokens_per_block), p.tokens - tok0));
  const int R2 = p.half_rot;

  // ---- phase 1: (cos, sign·sin) per (token, pair)
  for (int i = threadIdx.x; i < nt * R2; i += blockDim.x) {
    const int t = i / R2, f = i - t * R2;
    const int64_t tok = tok0 + t, b = tok / p.seq, s = tok - b * p.seq;
    if (f == 0) {
      tok_bs[2 * t] = b;
      tok_bs[2 * t + 1] = s;
    }
    const int64_t pos = position_of(p, b, s);
    A c, sn;
    if (p.cache_dtype >= 0) {
      if (pos >= 0 && pos < p.cache_rows) {
        c = load_cache<A>(p.cos, p.cache_dtype, pos * p.cos_sr + f * p.cos_sf);
        sn = load_cache<A>(p.sin, p.cache_dtype, pos * p.sin_sr + f * p.sin_sf);
      } else {
        c = sn = static_cast<A>(NAN);  // documented: an out-of-range cache row is never read
      }
    } else {
      angle_sincos(pos, p.inv_freq[f], &sn, &c);
      c *= static_cast<A>(p.mscale);
      sn *= static_cast<A>(p.mscale);
    }
    cs[2 * i] = c;
    cs[2 * i + 1] = static_cast<A>(p.sign) * sn;
  }
  __syncthreads();

  // ---- phase 2: items (token, head, chunk)
  const int C = p.chunks_rot + p.chunks_pass;
  const int per_tok = p.heads * C;
  const int items = nt * per_tok;
  for (int base = threadIdx.x; base < items; base += kUnroll * blockDim.x) {
    int tt[kUnroll], ti[kUnroll], hh[kUnroll], cc[kUnroll];
    V a[kUnroll], b[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int item = base + u * blockDim.x;
      tt[u] = -1;
      if (item >= items) continue;
      const int t = item / per_tok, r = item - t * per_tok, h = r / C;
      tt[u] = t;
      cc[u] = r - h * C;
      ti[u] = h >= p.heads_q;
      hh[u] = h - ti[u] * p.heads_q;
      const int x = ti[u];
      const T* row = static_cast<const T*>(p.in[x]) + tok_bs[2 * t] * p.in_sb[x] + tok_bs[2 * t + 1] * p.in_ss[x] +
                     hh[u] * p.in_sh[x];
      const int c = cc[u];
      int e1, e2;
      if (c < p.chunks_rot) {
        e1 = kInter ? c * 2 * NP : c * NP;
        e2 = kInter ? e1 + NP : e1 + R2;
      } else {
        e1 = p.rot + (c - p.chunks_rot) * 2 * NP;
        e2 = e1 + NP;
      }
      a[u] = *reinterpret_cast<const V*>(row + e1);
      if (e2 < p.head_dim) b[u] = *reinterpret_cast<const V*>(row + e2);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (tt[u] < 0) continue;
      const int t = tt[u], x = ti[u], c = cc[u];
      T* row = static_cast<T*>(p.out[x]) + tok_bs[2 * t] * p.out_sb[x] + tok_bs[2 * t + 1] * p.out_ss[x] +
               hh[u] * p.out_sh[x];
      if (c < p.chunks_rot) {
        const A* w = cs + 2 * (t * R2 + c * NP);
        if constexpr (kInter) {
          T e[2 * NP];
#pragma unroll
          for (int j = 0; j < NP; ++j) {
            e[j] = a[u].v[j];
            e[NP + j] = b[u].v[j];
          }
#pragma unroll
          for (int j = 0; j < NP; ++j) {
            const A x1 = to_acc(e[2 * j]), x2 = to_acc(e[2 * j + 1]), co = w[2 * j], si = w[2 * j + 1];
            e[2 * j] = from_acc<T>(fma(x1, co, -(x2 * si)));
            e[2 * j + 1] = from_acc<T>(fma(x2, co, x1 * si));
          }
#pragma unroll
          for (int j = 0; j < NP; ++j) {
            a[u].v[j] = e[j];
            b[u].v[j] = e[NP + j];
          }
        } else {
#pragma unroll
          for (int j = 0; j < NP; ++j) {
            const A x1 = to_acc(a[u].v[j]), x2 = to_acc(b[u].v[j]), co = w[2 * j], si = w[2 * j + 1];
            a[u].v[j] = from_acc<T>(fma(x1, co, -(x2 * si)));
            b[u].v[j] = from_acc<T>(fma(x2, co, x1 * si));
          }
        }
        const int e1 = kInter ? c * 2 * NP : c * NP;
        *reinterpret_cast<V*>(row + e1) = a[u];
        *reinterpret_cast<V*>(row + (kInter ? e1 + NP : e1 + R2)) = b[u];
      } else {
        const int e1 = p.rot + (c - p.chunks_rot) * 2 * NP;
        *reinterpret_cast<V*>(row + e1) = a[u];
        if (e1 + NP < p.head_dim) *reinterpret_cast<V*>(row + e1 + NP) = b[u];
      }
    }
  }
}

template <class T, int NP, bool kInter>
int launch_rope(const RopeParams& p, cudaStream_t s) {
  const int64_t blocks = (p.tokens + p.tokens_per_block - 1) / p.tokens_per_block;
  return static_cast<int>(launch_kernel(rope_kernel<T, NP, kInter>, dim3(static_cast<unsigned>(blocks)),
                                        dim3(kRopeThreads), static_cast<size_t>(p.smem_bytes), s, p));
}

template <class T, bool kInter>
RopeLaunchFn pick_np(int np) {
  constexpr int kMax = 16 / static_cast<int>(sizeof(T));
  switch (np) {
    case 1: return &launch_rope<T, 1, kInter>;
    case 2: return &launch_rope<T, 2, kInter>;
    case 4: if constexpr (kMax >= 4) return &launch_rope<T, 4, kInter>; else return nullptr;
    case 8: if constexpr (kMax >= 8) return &launch_rope<T, 8, kInter>; else return nullptr;
    default: return nullptr;
  }
}

}  // namespace

RopeLaunchFn rope_launcher(DType dtype, RopePairing pairing, int np) {
  RopeLaunchFn fn = nullptr;
  dispatch_dtype<CudaTypes>(dtype, FloatDTypes{}, [&]<class T>() {
    fn = pairing == RopePairing::kInterleaved ? pick_np<T, true>(np) : pick_np<T, false>(np);
  });
  return fn;
}

}  // namespace baracuda::detail
