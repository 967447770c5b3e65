// Embedding / embedding_bag backward: keys and histogram, CUB scan and radix sort (or the
// atomic counting scatter), heavy-row partials, the row writer, per-sample-weight gradients.
// The pipeline is described in embedding_geometry.hpp.
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>

#include "core/radix_sort.hpp"
#include "ops/embedding/embedding_common.cuh"

namespace baracuda::detail {
namespace emb {

// 1. Per position: key, histogram, bag (offsets form), per-bag valid count (mean), invalid count.
__global__ void __launch_bounds__(kEmbThreads) prep_kernel(const EmbParams p) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kEmbThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kEmbThreads + threadIdx.x; i < p.N; i += stride) {
    const int64_t bag = find_bag(p, i);
    const int64_t raw = load_index(p.idx, p.idx64, pos_offset(p.idx_map, i));
    const bool in_range = raw >= 0 && raw < p.V;
    count_flag(p.invalid, bag >= 0 && !in_range);
    const bool valid = bag >= 0 && in_range && raw != p.padding;
    const uint32_t key = valid ? static_cast<uint32_t>(raw) : static_cast<uint32_t>(p.V);
    p.keys_in[i] = key;
    if (p.sorted) p.pos_in[i] = static_cast<int>(p.slot_bag ? bag : i);
    if (p.bag_of != nullptr) p.bag_of[i] = static_cast<int>(bag);
    add_one_grouped(p.counts, key);
    if (p.bag_count != nullptr && valid) add_one_grouped(p.bag_count, static_cast<uint32_t>(bag));
  }
}

// Bag (or position, for embedding) of position q.
__device__ __forceinline__ int64_t bag_of_pos(const EmbParams& p, int64_t q) {
  if (p.kind == EmbKind::kEmbedding) return q;
  if (p.bag_size > 0) return q / p.bag_size;
  return p.bag_of[q];
}
// Bag of a slot's stored value (pos / pos_in: the bag itself when p.slot_bag, else the position).
__device__ __forceinline__ int64_t bag_of_slot(const EmbParams& p, int64_t s) { return p.slot_bag ? s : bag_of_pos(p, s); }

// 3 (scatter form). Slot of each valid position inside its key's range, taken by atomics.
__global__ void __launch_bounds__(kEmbThreads) scatter_kernel(const EmbParams p) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kEmbThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kEmbThreads + threadIdx.x; i < p.N; i += stride) {
    const uint32_t key = p.keys_in[i];
    if (key == static_cast<uint32_t>(p.V)) continue;
    const unsigned peers = __match_any_sync(__activemask(), key);
    const int leader = __ffs(peers) - 1, lane = static_cast<int>(threadIdx.x & 31);
    int old = 0;
    if (lane == leader) old = atomicSub(p.counts + key, __popc(peers));
    old = __shfl_sync(peers, old, leader);
    const int rank = __popc(peers & ((1u << lane) - 1u));
    const int slot = p.row_start[key] + old - 1 - rank;
    p.keys[slot] = key;
    p.pos[slot] = static_cast<int>(p.slot_bag ? bag_of_pos(p, i) : i);
  }
}

// A lane's kSegCols vectors of a (row, column group) item: columns ((cg·kSegCols + u)·G + lane)·VEC.
template <class T, int VEC>
struct LaneCols {
  acc_t<T> acc[kSegCols][VEC] = {};
  int64_t col[kSegCols];
  __device__ LaneCols(int64_t cg, int G, int lane) {
#pragma unroll
    for (int u = 0; u < kSegCols; ++u) col[u] = ((cg * kSegCols + u) * G + lane) * static_cast<int64_t>(VEC);
  }
};

// c.acc += the terms of row r at sorted slots [lo, hi) (its range starts at slot seg). The group
// loads G slots' metadata at a time (one per lane), then kUnroll dout rows × kSegCols vectors
// per lane in flight.
template <class T, int VEC, bool kMax>
__device__ __forceinline__ void add_terms(const EmbParams& p, int64_t lo, int64_t hi, uint32_t r, int64_t seg, int lane,
                                          unsigned gm, LaneCols<T, VEC>& c) {
  constexpr int kUnroll = 2;
  using A = acc_t<T>;
  const int G = p.group;
  const T* dout = static_cast<const T*>(p.dout);
  const T* psw = static_cast<const T*>(p.psw);
  for (int64_t base = lo; base < hi; base += G) {
    int64_t my_row = -1, my_bag = 0;  // dout row offset (−1: no term)
    A my_w = 1;
    if (base + lane < hi) {
      const int64_t j = base + lane, q = p.pos[j], bag = bag_of_slot(p, q);
      my_row = pos_offset(p.row_map, bag);
      my_bag = bag;
      if constexpr (kMax) {  // a bag adds once per row however often r occurs in it
        if (j > seg && bag_of_slot(p, p.pos[j - 1]) == bag) my_row = -1;
      } else {
        if (psw != nullptr) my_w = to_acc(psw[pos_offset(p.psw_map, q)]);
        else if (p.kind == EmbKind::kMean) my_w = A(1) / static_cast<A>(p.bag_count[bag]);
      }
    }
    const int n = static_cast<int>(hi - base < G ? hi - base : G);
    for (int k = 0; k < n; k += kUnroll) {
      int64_t row[kUnroll], bag[kUnroll];
      A wt[kUnroll];
      RawCols<T, VEC> v[kUnroll][kSegCols];
#pragma unroll
      for (int t = 0; t < kUnroll; ++t) {
        const int src = (k + t) & (G - 1);
        row[t] = gshfl(gm, my_row, src, G);
        wt[t] = gshfl(gm, my_w, src, G);
        bag[t] = kMax ? gshfl(gm, my_bag, src, G) : 0;
        if (k + t >= n) row[t] = -1;
#pragma unroll
        for (int u = 0; u < kSegCols; ++u)
          if (row[t] >= 0 && c.col[u] < p.D) v[t][u].load(dout, row[t], c.col[u], p.row_s1);
      }
#pragma unroll
      for (int t = 0; t < kUnroll; ++t) {
        if (row[t] < 0) continue;
#pragma unroll
        for (int u = 0; u < kSegCols; ++u) {
          if (c.col[u] >= p.D) continue;
#pragma unroll
          for (int e = 0; e < VEC; ++e) {
            if constexpr (kMax) {
              if (load_index(p.max_idx, p.idx64, bag[t] * p.mi_s0 + (c.col[u] + e) * p.mi_s1) == static_cast<int64_t>(r))
                c.acc[u][e] += v[t][u].get(e);
            } else {
              c.acc[u][e] = fma(wt[t], v[t][u].get(e), c.acc[u][e]);
            }
          }
        }
      }
    }
  }
}

// f(s, r, rs, re) for each heavy row r (more than kEmbTile terms, slots [rs, re)) meeting tile t:
// s = 0 for the row of the tile's first slot, 1 for the row of its last slot (when different).
template <class F>
__device__ __forceinline__ void for_heavy_rows(const EmbParams& p, int64_t t, int64_t total, F&& f) {
  const int64_t a = t * kEmbTile;
  if (a >= total) return;
  const int64_t e = a + kEmbTile < total ? a + kEmbTile : total;
  const uint32_t k0 = p.keys[a], k1 = p.keys[e - 1];
  for (int s = 0; s < 2; ++s) {
    const uint32_t r = s == 0 ? k0 : k1;
    if (s == 1 && k1 == k0) break;
    const int64_t rs = p.row_start[r], re = p.row_start[r + 1];
    if (re - rs > kEmbTile) f(s, r, rs, re);
  }
}

// The lane's columns of partial row `at` (element offset): added into c, or written from c.
template <class T, int VEC>
__device__ __forceinline__ void add_partial(const acc_t<T>* part, int64_t at, int64_t D, LaneCols<T, VEC>& c) {
#pragma unroll
  for (int u = 0; u < kSegCols; ++u)
    if (c.col[u] < D) {
      const Vec<acc_t<T>, VEC> v = *reinterpret_cast<const Vec<acc_t<T>, VEC>*>(part + at + c.col[u]);
#pragma unroll
      for (int x = 0; x < VEC; ++x) c.acc[u][x] += v.v[x];
    }
}
template <class T, int VEC>
__device__ __forceinline__ void store_partial(acc_t<T>* part, int64_t at, int64_t D, const LaneCols<T, VEC>& c) {
#pragma unroll
  for (int u = 0; u < kSegCols; ++u)
    if (c.col[u] < D) {
      if constexpr (sizeof(acc_t<T>) * VEC % 16 == 0) {
        store_global16<acc_t<T>, VEC>(part + at + c.col[u], c.acc[u]);
      } else {
        Vec<acc_t<T>, VEC> v;
#pragma unroll
        for (int x = 0; x < VEC; ++x) v.v[x] = c.acc[u][x];
        *reinterpret_cast<Vec<acc_t<T>, VEC>*>(part + at + c.col[u]) = v;
      }
    }
}

// Slot of row r (whose range starts at sorted slot j) in tile t: 0 when r is the tile's first
// row, 1 in the tile it starts inside.
__device__ __forceinline__ int heavy_slot(int64_t t, int64_t j) { return t * kEmbTile >= j ? 0 : 1; }

// 4. One partial per (tile, heavy row meeting it), at partial row t·2 + slot.
template <class T, int VEC, bool kMax>
__global__ void __launch_bounds__(kEmbThreads, 2) heavy_kernel(const EmbParams p) {
  const int G = p.group;
  const unsigned gm = group_mask(G);
  const int64_t tiles = (p.N + kEmbTile - 1) / kEmbTile, total = p.row_start[p.V];
  for_each_item(tiles * p.chunks, G, [&](int64_t item, int lane) {
    const int64_t t = item / p.chunks, cg = item - t * p.chunks;
    for_heavy_rows(p, t, total, [&](int s, uint32_t r, int64_t rs, int64_t re) {
      const int64_t a = t * kEmbTile, e = a + kEmbTile < re ? a + kEmbTile : re;
      LaneCols<T, VEC> c(cg, G, lane);
      add_terms<T, VEC, kMax>(p, a > rs ? a : rs, e, r, rs, lane, gm, c);
      store_partial(static_cast<acc_t<T>*>(p.partials), (t * 2 + s) * p.D, p.D, c);
    });
  });
}

// 4b. Heavy rows' tile partials folded in groups of kEmbFold consecutive tiles of the row (tile
// order), each group's sum written over its first tile's partial. The row then adds one partial
// per group (rows_kernel), so no row adds more than N / (kEmbTile·kEmbFold) + 1 partials.
template <class T, int VEC>
__global__ void __launch_bounds__(kEmbThreads) fold_kernel(const EmbParams p) {
  const int G = p.group;
  const int64_t tiles = (p.N + kEmbTile - 1) / kEmbTile, total = p.row_start[p.V];
  acc_t<T>* part = static_cast<acc_t<T>*>(p.partials);
  for_each_item(tiles * p.chunks, G, [&](int64_t item, int lane) {
    const int64_t t = item / p.chunks, cg = item - t * p.chunks;
    for_heavy_rows(p, t, total, [&](int s, uint32_t, int64_t j, int64_t re) {
      const int64_t t0 = j / kEmbTile, t1 = (re - 1) / kEmbTile;
      if ((t - t0) % kEmbFold != 0) return;
      const int64_t tend = t + kEmbFold - 1 < t1 ? t + kEmbFold - 1 : t1;
      LaneCols<T, VEC> c(cg, G, lane);
#pragma unroll 4
      for (int64_t u = t; u <= tend; ++u) add_partial(part, (u * 2 + heavy_slot(u, j)) * p.D, p.D, c);
      store_partial(part, (t * 2 + s) * p.D, p.D, c);
    });
  });
}

// 5a. Zeros into the dweight rows with no terms. Chunks of kFillChunk consecutive vectors of
// the table (row-major over [V, vectors per row]) are taken in order from a ticket counter by a
// grid of kFillBlocksPerSm blocks per SM, so one front of stores moves through memory: zeroing
// the whole table runs at 4.5-4.55 TB/s on the H200, the cudaMemsetAsync rate, where a grid
// striding over the table vector by vector reached 4.2-4.3, and a warp per 32 rows storing
// only into rows with no terms 3.7-4.1 (docs/perf/embedding.md). Which vectors, chosen on the
// device from the number of rows with terms:
//   - under V / kWholeFillShare: all of them (the row writer then writes the rows with terms
//     over them; contiguous rows need no row arithmetic);
//   - else those of rows with no terms (row_start[r] == row_start[r + 1]), every row test of a
//     thread's vectors loaded before its stores.
template <class T, int VEC>
__global__ void __launch_bounds__(kEmbThreads) zero_rows_kernel(const EmbParams p) {
  constexpr int kPer = kFillChunk / kEmbThreads;
  using A = acc_t<T>;
  T* dw = static_cast<T*>(p.dweight);
  const A z[VEC] = {};
  const int64_t nvec = (p.D + VEC - 1) / VEC, total = p.V * nvec;
  const bool whole = *p.n_rows < p.V / kWholeFillShare;
  const bool flat = whole && p.dw_s1 == 1 && p.dw_s0 == nvec * VEC;
  const bool narrow = total < (int64_t{1} << 31);  // p.fill_div applies
  __shared__ unsigned chunk;
  for (;;) {
    if (threadIdx.x == 0) chunk = atomicAdd(p.fill_ticket, 1u);
    __syncthreads();
    const int64_t c = chunk;
    __syncthreads();
    if (c * kFillChunk >= total) return;
    int64_t r[kPer];
    bool keep[kPer];
#pragma unroll
    for (int u = 0; u < kPer; ++u) {
      const int64_t i = c * kFillChunk + u * kEmbThreads + threadIdx.x;
      r[u] = flat ? 0 : narrow ? static_cast<int64_t>(p.fill_div.div(static_cast<uint32_t>(i))) : i / nvec;
      keep[u] = i < total && (whole || p.row_start[r[u] + 1] == p.row_start[r[u]]);
    }
#pragma unroll
    for (int u = 0; u < kPer; ++u) {
      const int64_t i = c * kFillChunk + u * kEmbThreads + threadIdx.x;
      if (keep[u]) store_cols<T, VEC>(dw, r[u] * p.dw_s0, (i - r[u] * nvec) * VEC, p.dw_s1, z);
    }
  }
}

// 5b. Every dweight row with terms written once: a G-lane group per (row with terms, column
// group) sums the row — its terms in slot order, or its tiles' partials in tile order — times
// 1/count with scale_grad_by_freq. Items run over the n_rows rows only (slot items, most of
// them not a row's first slot, cost 113 us of empty work with all-equal ids, f32).
template <class T, int VEC, bool kMax>
__global__ void __launch_bounds__(kEmbThreads, kRowsBlocksPerSm) rows_kernel(const EmbParams p) {
  using A = acc_t<T>;
  T* dw = static_cast<T*>(p.dweight);
  const int G = p.group;
  const unsigned gm = group_mask(G);
  const A* part = static_cast<const A*>(p.partials);
  for_each_item(int64_t{*p.n_rows} * p.chunks, G, [&](int64_t item, int lane) {
    const int64_t i = item / p.chunks, cg = item - i * p.chunks;
    const int r = p.rows[i];
    const int64_t j = p.row_start[r], n = p.row_start[r + 1] - j;
    LaneCols<T, VEC> c(cg, G, lane);
    if (n <= kEmbTile) {
      add_terms<T, VEC, kMax>(p, j, j + n, r, j, lane, gm, c);
    } else {  // one folded partial per kEmbFold tiles, in tile order
      const int64_t t0 = j / kEmbTile, t1 = (j + n - 1) / kEmbTile;
#pragma unroll 2
      for (int64_t t = t0; t <= t1; t += kEmbFold) add_partial(part, (t * 2 + heavy_slot(t, j)) * p.D, p.D, c);
    }
    const A f = p.scale_freq ? A(1) / static_cast<A>(n) : A(1);
#pragma unroll
    for (int u = 0; u < kSegCols; ++u) {
      if (c.col[u] >= p.D) continue;
      if (p.scale_freq)
#pragma unroll
        for (int x = 0; x < VEC; ++x) c.acc[u][x] *= f;
      store_cols<T, VEC>(dw, static_cast<int64_t>(r) * p.dw_s0, c.col[u], p.dw_s1, c.acc[u]);
    }
  });
}

// 6. d(per_sample_weights)[q] = dout[bag(q)] · weight[idx[q]] for valid q (a group per
// position, lanes reduced in a fixed order), else 0.
template <class T, int VEC>
__global__ void __launch_bounds__(kEmbThreads) dpsw_kernel(const EmbParams p) {
  using A = acc_t<T>;
  const int G = p.group;
  const unsigned gm = group_mask(G);
  const T* w = static_cast<const T*>(p.weight);
  const T* dout = static_cast<const T*>(p.dout);
  for_each_item(p.N, G, [&](int64_t q, int lane) {
    const uint32_t key = p.keys_in[q];
    A dot = 0;
    if (key != static_cast<uint32_t>(p.V)) {
      const int64_t orow = pos_offset(p.row_map, bag_of_pos(p, q)), wrow = static_cast<int64_t>(key) * p.w_s0;
      for (int64_t col = static_cast<int64_t>(lane) * VEC; col < p.D; col += static_cast<int64_t>(G) * VEC) {
        A a[VEC], b[VEC];
        load_cols<T, VEC>(dout, orow, col, p.row_s1, a);
        load_cols<T, VEC>(w, wrow, col, p.w_s1, b);
#pragma unroll
        for (int x = 0; x < VEC; ++x) dot = fma(a[x], b[x], dot);
      }
    }
    for (int m = G / 2; m > 0; m /= 2) dot += __shfl_xor_sync(gm, dot, m, G);
    if (lane == 0) static_cast<T*>(p.dpsw)[pos_offset(p.dpsw_map, q)] = from_acc<T>(dot);
  });
}

struct Positive {
  __device__ bool operator()(int c) const { return c > 0; }
};

struct Backward {
  template <class T, int VEC>
  static cudaError_t fn(const EmbParams& p, cudaStream_t stream);
};

template <class T, int VEC>
cudaError_t Backward::fn(const EmbParams& p0, cudaStream_t stream) {
  EmbParams p = p0;
  const dim3 block(kEmbThreads);
  const bool max_mode = p.kind == EmbKind::kMax;
  BARACUDA_CUDA_TRY(cudaMemsetAsync(p.counts, 0, sizeof(int) * static_cast<size_t>(p.V + 2), stream));  // and fill_ticket
  if (p.bag_count != nullptr && p.B > 0)
    BARACUDA_CUDA_TRY(cudaMemsetAsync(p.bag_count, 0, sizeof(int) * static_cast<size_t>(p.B), stream));
  if (p.N > 0) BARACUDA_CUDA_TRY(launch_kernel(prep_kernel, dim3(grid_for(p.N, 1)), block, 0, stream, p));
  size_t bytes = p.cub_bytes;
  BARACUDA_CUDA_TRY(cub::DeviceScan::ExclusiveSum(p.cub_temp, bytes, p.counts, p.row_start, p.V + 1, stream));
  bytes = p.cub_bytes;
  BARACUDA_CUDA_TRY(cub::DeviceSelect::FlaggedIf(p.cub_temp, bytes, thrust::counting_iterator<int>(0), p.counts, p.rows, p.n_rows, p.V,
                                      Positive{}, stream));
  if (p.N > 0) {
    if (p.sorted) {
      SortPairsBuffers b{p.keys_in, p.keys, p.pos_in, p.pos};
      BARACUDA_CUDA_TRY(sort_pairs(p.cub_temp, p.cub_bytes, &b, p.N, p.key_bits, false, stream));
      p.keys = static_cast<uint32_t*>(b.keys);
      p.pos = static_cast<int*>(b.pos);
    } else {
      BARACUDA_CUDA_TRY(launch_kernel(scatter_kernel, dim3(grid_for(p.N, 1)), block, 0, stream, p));
    }
    if (p.D > 0) {
      const int64_t tiles = (p.N + kEmbTile - 1) / kEmbTile;
      auto heavy = max_mode ? heavy_kernel<T, VEC, true> : heavy_kernel<T, VEC, false>;
      BARACUDA_CUDA_TRY(launch_kernel(heavy, dim3(grid_for(tiles * p.chunks, p.group)), block, 0, stream, p));
      BARACUDA_CUDA_TRY(launch_kernel(fold_kernel<T, VEC>, dim3(grid_for(tiles * p.chunks, p.group)), block, 0, stream, p));
    }
  }
  if (p.V * p.D > 0) {
    const int64_t nvec = (p.D + VEC - 1) / VEC;
    if (p.V * nvec < (int64_t{1} << 31)) p.fill_div = FastDiv(static_cast<uint32_t>(nvec));
    BARACUDA_CUDA_TRY(launch_kernel(zero_rows_kernel<T, VEC>, dim3(static_cast<unsigned>(p.sms * kFillBlocksPerSm)), block, 0, stream, p));
    if (p.N > 0) {  // kRowsWaves of resident blocks at most: the item count is known on the device only
      auto rows = max_mode ? rows_kernel<T, VEC, true> : rows_kernel<T, VEC, false>;
      const int64_t most = std::min(p.N, p.V) * p.chunks;
      const unsigned blocks = std::min<unsigned>(grid_for(most, p.group), static_cast<unsigned>(p.sms * kRowsBlocksPerSm * kRowsWaves));
      BARACUDA_CUDA_TRY(launch_kernel(rows, dim3(blocks), block, 0, stream, p));
    }
  }
  if (p.dpsw != nullptr && p.N > 0)
    BARACUDA_CUDA_TRY(launch_kernel(dpsw_kernel<T, VEC>, dim3(grid_for(p.N, p.group)), block, 0, stream, p));
  return cudaSuccess;
}

}  // namespace emb

EmbLaunchFn emb_backward_launcher(DType t, bool vector) { return emb::launcher_for<emb::Backward>(t, vector); }

size_t emb_cub_bound(int64_t n, int64_t v) {
  // the radix sort's (core/radix_sort); scan: a descriptor word pair per tile of >= 128.
  const size_t sort = sort_pairs_bound(n, false);
  // select over the histogram: the same tile state as the scan
  const size_t scan = 16 * (static_cast<size_t>(v + 1) / 128 + 64) + 4 * 1024;
  return (sort > scan ? sort : scan) + 64 * 1024;
}

cudaError_t emb_cub_query(int64_t n, int64_t v, int key_bits, size_t* bytes) {
  size_t scan = 0, sort = 0;
  cudaError_t e = cub::DeviceScan::ExclusiveSum(nullptr, scan, static_cast<int*>(nullptr), static_cast<int*>(nullptr), v + 1);
  if (e != cudaSuccess) return e;
  size_t select = 0;
  e = cub::DeviceSelect::FlaggedIf(nullptr, select, thrust::counting_iterator<int>(0), static_cast<int*>(nullptr),
                                   static_cast<int*>(nullptr), static_cast<int*>(nullptr), v, emb::Positive{});
  if (e != cudaSuccess) return e;
  if (select > scan) scan = select;
  e = sort_pairs_query(n, key_bits, false, &sort);
  if (e != cudaSuccess) return e;
  *bytes = scan > sort ? scan : sort;
  return cudaSuccess;
}

}  // namespace baracuda::detail
