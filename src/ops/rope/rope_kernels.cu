// RoPE kernels: one launch rotates q and k (or their gradients), see rope_geometry.hpp.
//
// A lane group owns a token; each lane walks (head, chunk) items, U per pass with all loads
// issued before any store (in place, items are disjoint). Angles: θ = p·ω in float64, reduced
// mod 2π in float64 (Cody–Waite with a two-part 2π), then cos/sin in f32 (f64 for f64 data),
// or the cache row p; computed once per (lane, token) when the lane's chunk does not change.
#include "core/cp_async.cuh"
#include "core/cuda_types.cuh"
#include "core/launch.cuh"
#include "ops/rope/rope_geometry.hpp"

namespace baracuda::detail {
namespace {


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

// Angle index of slot j of chunk c. kHalf: pair c·NP + j of (a[j], b[j]). Interleaved with
// NP >= 2: a holds pairs c·NP/2 + j and b (R/2 further) pairs R/4 + c·NP/2 + j (slots: a's
// NP/2 pairs, then b's). Interleaved with NP == 1: pair c of the adjacent (a[0], b[0]).
template <int NP, bool kInter>
__device__ __forceinline__ int angle_index(int c, int j, int half_rot) {
  if constexpr (!kInter || NP == 1) return c * NP + j;
  else return j < NP / 2 ? c * (NP / 2) + j : half_rot / 2 + c * (NP / 2) + (j - NP / 2);
}

// (cos, sign·sin) of the NP angle slots of chunk c of a token at position pos.
template <class A, int NP, bool kInter>
__device__ __forceinline__ void chunk_angles(const RopeParams& p, int64_t pos, int c, A (&co)[NP], A (&si)[NP]) {
  const A sign = static_cast<A>(p.sign);
  if (p.cache_dtype >= 0) {
    const bool in = pos >= 0 && pos < p.cache_rows;  // an out-of-range row is never read
#pragma unroll
    for (int j = 0; j < NP; ++j) {
      const int64_t f = angle_index<NP, kInter>(c, j, p.half_rot);
      co[j] = in ? load_as<A>(p.cos, p.cache_dtype, pos * p.cos_sr + f * p.cos_sf) : static_cast<A>(NAN);
      si[j] = in ? sign * load_as<A>(p.sin, p.cache_dtype, pos * p.sin_sr + f * p.sin_sf) : static_cast<A>(NAN);
    }
    return;
  }
  const A m = static_cast<A>(p.mscale);
#pragma unroll
  for (int j = 0; j < NP; ++j) {
    A s, k;
    angle_sincos(pos, p.inv_freq[angle_index<NP, kInter>(c, j, p.half_rot)], &s, &k);
    co[j] = m * k;
    si[j] = sign * m * s;
  }
}

template <class A>
__device__ __forceinline__ void rotate(A& x1, A& x2, A co, A si) {
  const A y1 = fma(x1, co, -(x2 * si)), y2 = fma(x2, co, x1 * si);
  x1 = y1;
  x2 = y2;
}

// The kernel's variants: kAsync stages U items per pass through shared memory with cp.async,
// two passes in flight (loads in flight hold no registers); otherwise U items per pass are
// loaded into registers (vectors below 4 bytes, which cp.async cannot move).
template <bool kAsync>
constexpr int rope_threads() { return kAsync ? kRopeAsyncThreads : kRopeThreads; }

// Item i of a token: side x (0 q, 1 k), head within the side, chunk c, and the element offsets
// e1, e2 of its two vectors (e2 >= head_dim: no second vector).
struct ItemAddr {
  int x, c, e1, e2;
  int64_t head;
};
template <int NP, bool kInter>
__device__ __forceinline__ ItemAddr item_addr(const RopeParams& p, int C, int i) {
  ItemAddr a;
  const int h = i / C;
  a.c = i - h * C;
  a.x = h >= p.heads_q;
  a.head = h - a.x * p.heads_q;
  if (a.c < p.chunks_rot) {
    constexpr bool kAdjacent = kInter && NP == 1;
    a.e1 = kAdjacent ? 2 * a.c : a.c * NP;
    a.e2 = kAdjacent ? a.e1 + 1 : a.e1 + p.half_rot;
  } else {
    a.e1 = p.rot + (a.c - p.chunks_rot) * 2 * NP;
    a.e2 = a.e1 + NP;
  }
  return a;
}

// A group of `group_lanes` lanes (a power of two <= 32) owns one token: its items
// (head, chunk) are i = lane + group_lanes·k. When the chunk count divides group_lanes, a lane
// keeps one chunk for the whole token and its angles are computed once.
template <class T, int NP, bool kInter, int U, bool kAsync>
__global__ void __launch_bounds__(rope_threads<kAsync>()) rope_kernel(const __grid_constant__ RopeParams p) {
  using A = acc_t<T>;
  using V = Vec<T, NP>;
  constexpr int kThr = rope_threads<kAsync>();
  __shared__ V stage[kAsync ? 2 : 1][kAsync ? U : 1][2][kThr];
  const int L = p.group_lanes;
  const int64_t g = (static_cast<int64_t>(blockIdx.x) * kThr + threadIdx.x) / L;
  const int lane = static_cast<int>(threadIdx.x) & (L - 1);
  if (g >= p.tokens) return;
  const int64_t b = g / p.seq, s = g - b * p.seq;
  const int64_t pos = position_of(p, b, s);
  const int C = p.chunks_rot + p.chunks_pass, items = p.heads * C;
  // the token's rows on the q and k sides, as named pointers chosen by a select: indexed
  // arrays of them lived in local memory (H200, bf16 q + k: 83 % of copy with them, 91 % without)
  const T* const in_q = static_cast<const T*>(p.in[0]) + b * p.in_sb[0] + s * p.in_ss[0];
  const T* const in_k = static_cast<const T*>(p.in[1]) + b * p.in_sb[1] + s * p.in_ss[1];
  T* const out_q = static_cast<T*>(p.out[0]) + b * p.out_sb[0] + s * p.out_ss[0];
  T* const out_k = static_cast<T*>(p.out[1]) + b * p.out_sb[1] + s * p.out_ss[1];
  V a[U], v2[U];
  // the loads of the pass starting at `base` (async: into stage[buf], one commit group)
  auto issue = [&](int base, int buf) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int i = base + u * L;
      if (i >= items) continue;
      const ItemAddr ad = item_addr<NP, kInter>(p, C, i);
      const T* row = ad.x ? in_k + ad.head * p.in_sh[1] : in_q + ad.head * p.in_sh[0];
      if constexpr (kAsync) {
        cp_async<sizeof(V)>(&stage[buf][u][0][threadIdx.x], row + ad.e1);
        if (ad.e2 < p.head_dim) cp_async<sizeof(V)>(&stage[buf][u][1][threadIdx.x], row + ad.e2);
      } else {
        a[u] = *reinterpret_cast<const V*>(row + ad.e1);
        if (ad.e2 < p.head_dim) v2[u] = *reinterpret_cast<const V*>(row + ad.e2);
      }
    }
    if constexpr (kAsync) cp_async_commit();
  };
  A co[NP], si[NP];
  int have_c = -1, buf = 0;
  if constexpr (kAsync) issue(lane, 0);
  for (int base = lane; base < items; base += U * L, buf ^= 1) {
    if constexpr (kAsync) {
      issue(base + U * L, buf ^ 1);  // the next pass (an empty group past the end)
      cp_async_wait<1>();
    } else {
      issue(base, 0);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int i = base + u * L;
      if (i >= items) continue;
      const ItemAddr ad = item_addr<NP, kInter>(p, C, i);
      T* row = ad.x ? out_k + ad.head * p.out_sh[1] : out_q + ad.head * p.out_sh[0];
      V va, vb;
      if constexpr (kAsync) {
        va = stage[buf][u][0][threadIdx.x];
        vb = stage[buf][u][1][threadIdx.x];
      } else {
        va = a[u];
        vb = v2[u];
      }
      if (ad.c < p.chunks_rot) {
        if (ad.c != have_c) {
          chunk_angles<A, NP, kInter>(p, pos, ad.c, co, si);
          have_c = ad.c;
        }
        if constexpr (kInter && NP > 1) {  // pairs inside each vector
#pragma unroll
          for (int j = 0; j < NP / 2; ++j) {
            A x1 = to_acc(va.v[2 * j]), x2 = to_acc(va.v[2 * j + 1]);
            rotate(x1, x2, co[j], si[j]);
            va.v[2 * j] = from_acc<T>(x1);
            va.v[2 * j + 1] = from_acc<T>(x2);
            A y1 = to_acc(vb.v[2 * j]), y2 = to_acc(vb.v[2 * j + 1]);
            rotate(y1, y2, co[NP / 2 + j], si[NP / 2 + j]);
            vb.v[2 * j] = from_acc<T>(y1);
            vb.v[2 * j + 1] = from_acc<T>(y2);
          }
        } else {  // pair j = (va[j], vb[j])
#pragma unroll
          for (int j = 0; j < NP; ++j) {
            A x1 = to_acc(va.v[j]), x2 = to_acc(vb.v[j]);
            rotate(x1, x2, co[j], si[j]);
            va.v[j] = from_acc<T>(x1);
            vb.v[j] = from_acc<T>(x2);
          }
        }
      }
      *reinterpret_cast<V*>(row + ad.e1) = va;
      if (ad.e2 < p.head_dim) *reinterpret_cast<V*>(row + ad.e2) = vb;
    }
  }
  if constexpr (kAsync) cp_async_wait<0>();
}

template <class T, int NP, bool kInter, int U, bool kSm>
cudaError_t launch_rope(const RopeParams& p, cudaStream_t s) {
  constexpr int kThr = rope_threads<kSm>();
  const int64_t per_block = kThr / p.group_lanes;  // tokens
  const int64_t blocks = (p.tokens + per_block - 1) / per_block;
  return launch_kernel(rope_kernel<T, NP, kInter, U, kSm>, dim3(static_cast<unsigned>(blocks)), dim3(kThr), 0, s, p);
}

// cp.async staging (U = 4 items per pass, two passes in flight) wherever a vector is at least
// 4 bytes; register staging (U = 2) below that. Measured on the H200 (docs/perf/rope.md): the
// register form held 75 % of copy on bf16 (78 registers, 3 blocks per SM), the staged 82-88 %.
template <class T, int NP, bool kInter>
RopeLaunchFn make_launcher() {
  if constexpr (sizeof(T) * NP >= 4) return &launch_rope<T, NP, kInter, 4, true>;
  else return &launch_rope<T, NP, kInter, 2, false>;
}

template <class T, bool kInter>
RopeLaunchFn pick(int np) {
  constexpr int kMax = 16 / static_cast<int>(sizeof(T));
  switch (np) {
    case 1: return make_launcher<T, 1, kInter>();
    case 2: return make_launcher<T, 2, kInter>();
    case 4: if constexpr (kMax >= 4) return make_launcher<T, 4, kInter>(); else return nullptr;
    case 8: if constexpr (kMax >= 8) return make_launcher<T, 8, kInter>(); else return nullptr;
    default: return nullptr;
  }
}

}  // namespace

RopeLaunchFn rope_launcher(DType dtype, RopePairing pairing, int np) {
  RopeLaunchFn fn = nullptr;
  dispatch_dtype<CudaTypes>(dtype, FloatDTypes{}, [&]<class T>() {
    fn = pairing == RopePairing::kInterleaved ? pick<T, true>(np) : pick<T, false>(np);
  });
  return fn;
}

}  // namespace baracuda::detail
