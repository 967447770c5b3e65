// Device helpers shared by the embedding kernels (included by embedding_*_kernels.cu only).
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/cuda_types.cuh"
#include "core/launch.cuh"
#include "ops/embedding/embedding_geometry.hpp"

namespace baracuda::detail::emb {

__device__ __forceinline__ int64_t pos_offset(const PosMap& m, int64_t p) {
  if (m.rank == 1) return p * m.stride[0];
  int64_t off = 0;
  for (int a = m.rank - 1; a > 0; --a) {
    const int64_t q = p / m.shape[a];
    off += (p - q * m.shape[a]) * m.stride[a];
    p = q;
  }
  return off + p * m.stride[0];
}

__device__ __forceinline__ int64_t load_index(const void* base, int idx64, int64_t off) {
  return idx64 ? static_cast<const int64_t*>(base)[off] : static_cast<int64_t>(static_cast<const int32_t*>(base)[off]);
}
__device__ __forceinline__ void store_index(void* base, int idx64, int64_t off, int64_t v) {
  if (idx64) static_cast<int64_t*>(base)[off] = v;
  else static_cast<int32_t*>(base)[off] = static_cast<int32_t>(v);
}

// Lanes of the G-lane group holding this thread.
__device__ __forceinline__ unsigned group_mask(int G) {
  const unsigned m = G == 32 ? 0xffffffffu : ((1u << G) - 1u);
  return m << ((threadIdx.x & 31) & ~(G - 1));
}
template <class V>
__device__ __forceinline__ V gshfl(unsigned mask, V v, int src, int G) {
  return __shfl_sync(mask, v, src, G);
}

// Adds 1 per calling lane to base[key], one atomic per distinct key among the converged lanes.
__device__ __forceinline__ void add_one_grouped(int* base, uint32_t key) {
  const unsigned peers = __match_any_sync(__activemask(), key);
  if ((threadIdx.x & 31) == __ffs(peers) - 1) atomicAdd(base + key, __popc(peers));
}
// Adds the number of converged lanes whose flag is set to *counter (no-op for a null counter).
__device__ __forceinline__ void count_flag(unsigned long long* counter, bool flag) {
  if (counter == nullptr) return;
  const unsigned m = __activemask();
  const unsigned b = __ballot_sync(m, flag);
  if (b != 0 && (threadIdx.x & 31) == __ffs(m) - 1) atomicAdd(counter, static_cast<unsigned long long>(__popc(b)));
}

// Positions [lo, hi) of bag b (offsets form): clamped into [0, N], empty when decreasing.
__device__ __forceinline__ void bag_range(const EmbParams& p, int64_t b, int64_t* lo, int64_t* hi) {
  if (p.bag_size > 0) {
    *lo = b * p.bag_size;
    *hi = *lo + p.bag_size;
    return;
  }
  auto clampN = [&](int64_t v) { return v < 0 ? int64_t{0} : v > p.N ? p.N : v; };
  const int64_t l = clampN(load_index(p.off, p.idx64, b * p.off_s));
  const int64_t h = (b + 1 < p.B || p.include_last) ? clampN(load_index(p.off, p.idx64, (b + 1) * p.off_s)) : p.N;
  *lo = l;
  *hi = h < l ? l : h;
}

// Bag of position i (−1: in no bag). Offsets form: the last bag starting at or before i (offsets
// non-decreasing), then its end. The search starts at the proportional guess i·B/N and gallops
// from it before bisecting: bags of similar sizes take one or two probes where a bisection over
// all bags took log2(B) dependent loads (the prep kernel of the [10M, 128] bag backward: 88 us).
__device__ __forceinline__ int64_t find_bag(const EmbParams& p, int64_t i) {
  if (p.kind == EmbKind::kEmbedding) return i;
  if (p.bag_size > 0) return i / p.bag_size;
  if (p.B == 0) return -1;
  auto start = [&](int64_t b) { return load_index(p.off, p.idx64, b * p.off_s); };
  // invariant: start(lo) <= i or lo == 0; start(hi) > i or hi == B
  const int64_t guess = p.N > 0 ? static_cast<int64_t>(static_cast<double>(i) * static_cast<double>(p.B) / static_cast<double>(p.N)) : 0;
  const int64_t g = guess < 0 ? 0 : guess < p.B ? guess : p.B - 1;  // any bag is a valid start
  int64_t lo, hi;
  if (start(g) <= i) {
    lo = g, hi = g + 1;
    for (int64_t step = 1; hi < p.B && start(hi) <= i; step *= 2) lo = hi, hi = lo + step;
    if (hi > p.B) hi = p.B;
  } else {
    hi = g, lo = g - 1;
    for (int64_t step = 1; lo > 0 && start(lo) > i; step *= 2) hi = lo, lo = hi - step;
    if (lo < 0) lo = 0;
  }
  while (hi - lo > 1) {
    const int64_t mid = (lo + hi) / 2;
    if (start(mid) <= i) lo = mid;
    else hi = mid;
  }
  int64_t l, h;
  bag_range(p, lo, &l, &h);
  return (i >= l && i < h) ? lo : -1;
}

// VEC elements of a row at column col (element offset `row` of the row start, column stride s1).
template <class T, int VEC>
__device__ __forceinline__ void load_cols(const T* base, int64_t row, int64_t col, int64_t s1, acc_t<T> (&v)[VEC]) {
  if constexpr (VEC == 1) {
    v[0] = to_acc(base[row + col * s1]);
  } else {
    const Vec<T, VEC> w = *reinterpret_cast<const Vec<T, VEC>*>(base + row + col);
#pragma unroll
    for (int e = 0; e < VEC; ++e) v[e] = to_acc(w.v[e]);
  }
}
template <class T, int VEC>
__device__ __forceinline__ void store_cols(T* base, int64_t row, int64_t col, int64_t s1, const acc_t<T> (&v)[VEC]) {
  if constexpr (VEC == 1) {
    base[row + col * s1] = from_acc<T>(v[0]);
  } else {  // VEC·sizeof(T) = 16 (launcher_for)
    store_global16<T, VEC>(base + row + col, v);
  }
}

// VEC elements kept as loaded (raw, half the registers of the accumulator type for 2-byte
// types). A 16-byte vector is held as four 32-bit words and its elements are taken out with bit
// operations: held as Vec<T, VEC> of 2-byte class types, nvcc keeps it in local memory (16-bit
// stores and loads per element, measured: the bag kernels spilled hundreds of bytes).
template <class T, int VEC>
struct RawCols {
  static constexpr bool kWords = VEC > 1 && sizeof(T) * VEC == 16;
  uint32_t u[kWords ? 4 : 1];
  Vec<T, kWords ? 1 : VEC> w;
  __device__ __forceinline__ void load(const T* base, int64_t row, int64_t col, int64_t s1) {
    if constexpr (kWords) {
      const uint4 x = *reinterpret_cast<const uint4*>(base + row + col);
      u[0] = x.x, u[1] = x.y, u[2] = x.z, u[3] = x.w;
    } else if constexpr (VEC == 1) {
      w.v[0] = base[row + col * s1];
    } else {
      w = *reinterpret_cast<const Vec<T, VEC>*>(base + row + col);
    }
  }
  __device__ __forceinline__ acc_t<T> get(int e) const {
    if constexpr (!kWords) return to_acc(w.v[e]);
    else return word_elem<T>(u, e);
  }
};

// Work-item loop of G-lane groups over [0, items): the whole group walks together.
template <class F>
__device__ __forceinline__ void for_each_item(int64_t items, int G, F&& f) {
  const int64_t per_grid = static_cast<int64_t>(gridDim.x) * (kEmbThreads / G);
  for (int64_t item = (static_cast<int64_t>(blockIdx.x) * kEmbThreads + threadIdx.x) / G; item < items; item += per_grid)
    f(item, static_cast<int>(threadIdx.x & (G - 1)));
}

// The instance of L::fn<T, VEC> for dtype t: VEC = 16 / sizeof(T) when `vector`, else 1.
template <class L>
EmbLaunchFn launcher_for(DType t, bool vector) {
  switch (t) {
    case DType::f32: return vector ? &L::template fn<float, 4> : &L::template fn<float, 1>;
    case DType::f16: return vector ? &L::template fn<__half, 8> : &L::template fn<__half, 1>;
    case DType::bf16: return vector ? &L::template fn<__nv_bfloat16, 8> : &L::template fn<__nv_bfloat16, 1>;
    case DType::f64: return vector ? &L::template fn<double, 2> : &L::template fn<double, 1>;
    default: return nullptr;
  }
}

inline unsigned grid_for(int64_t items, int G) {
  const int64_t blocks = (items * G + kEmbThreads - 1) / kEmbThreads;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks > (int64_t{1} << 30) ? (int64_t{1} << 30) : blocks);
}

}  // namespace baracuda::detail::emb
