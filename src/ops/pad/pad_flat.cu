// The flat pad kernels (pad_plan_flat): a dense destination (y forward, dx backward) walked
// as consecutive words of flat_epw elements, 32-bit indices.
#include <cstdint>

#include "core/cuda_types.cuh"
#include "core/launch.cuh"
#include "ops/pad/pad_device.cuh"
#include "ops/pad/pad_flat.cuh"
#include "ops/pad/pad_geometry.hpp"
#include "ops/pad/pad_preimages.cuh"

namespace baracuda::detail {
namespace {

// ---------------------------------------------------------------- flat forward kernel
// A dense y (32-bit indices) walked as consecutive words of EPW elements: warp w owns words
// [w·32K, (w+1)·32K), lane l takes word w·32K + 32k + l at step k, so every store instruction
// covers 32 consecutive words. A word never straddles two rows (the row length is a multiple
// of EPW). The warp's words span at most 32 rows (pad_plan_flat): lane i sets up row
// r_first + i once (source offset and whether the source row exists), and each word takes its
// row's values by shuffle. Every word's element offsets are computed before any load, and all
// loads are issued before the first store (K·EPW loads in flight per lane, 32 registers).

template <class T, int EPW>
union FlatWord {
  typename WordOf<sizeof(T) * EPW>::type w;
  T e[EPW];
};

// This warp's words [w0, w_end) (flat_batches batches of 32·K) and the first and last
// destination rows they touch; false when the warp has none.
struct FlatTask {
  uint32_t w0, w_end, r_first, r_last;
  int lane, ca;  // this thread's lane; the column (innermost) axis
};
__device__ __forceinline__ bool flat_task(const PadGeometry& g, FlatTask* t) {
  const int64_t warp_words = int64_t{32} * kFlatWordsPerLane * g.flat_batches;
  const int64_t w0 = (int64_t{blockIdx.x} * (kPadThreads / 32) + (threadIdx.x >> 5)) * warp_words;
  if (w0 >= g.flat_words) return false;
  t->w0 = static_cast<uint32_t>(w0);
  t->w_end = static_cast<uint32_t>(min(g.flat_words, w0 + warp_words));
  const uint32_t epw = static_cast<uint32_t>(g.flat_epw);
  t->r_first = g.flat_cols.div(t->w0 * epw);
  t->r_last = g.flat_cols.div(t->w_end * epw - 1);
  t->lane = threadIdx.x & 31;
  t->ca = g.rank - 1;
  return true;
}

// A lane's word as (row - r_first, column): its first word w0 + lane, advanced 32 words per
// step (flat_step_r rows + flat_step_c columns, at most one wrap) without division.
template <int EPW>
struct FlatCursor {
  int32_t rr, c;
  __device__ __forceinline__ FlatCursor(const PadGeometry& g, const FlatTask& t, int lane) {
    const uint32_t e0 = (t.w0 + lane) * static_cast<uint32_t>(EPW);
    const uint32_t r0 = g.flat_cols.div(e0);
    rr = static_cast<int32_t>(r0 - t.r_first);
    c = static_cast<int32_t>(e0 - r0 * g.flat_cols.d);
  }
  __device__ __forceinline__ void step(const PadGeometry& g) {
    c += g.flat_step_c;
    const bool wrap = c >= static_cast<int32_t>(g.flat_cols.d);
    c -= wrap ? static_cast<int32_t>(g.flat_cols.d) : 0;
    rr += g.flat_step_r + wrap;
  }
};

template <class T, int EPW>
__global__ void __launch_bounds__(kPadThreads) pad_flat_forward_kernel(const __grid_constant__ PadGeometry g) {
  constexpr int K = kFlatWordsPerLane;
  using Word = FlatWord<T, EPW>;
  FlatTask t;
  if (!flat_task(g, &t)) return;  // uniform per warp
  const int lane = t.lane, ca = t.ca;
  const AxisMap col = axis_map(g.mode, static_cast<int32_t>(g.n[ca]), static_cast<int32_t>(g.lo[ca]));
  const int32_t xs = static_cast<int32_t>(g.xs[ca]);
  const T* __restrict__ src = static_cast<const T*>(g.src);
  auto* __restrict__ dst = static_cast<decltype(Word::w)*>(g.dst);
  const T fill = static_cast<T>(g.fill);

  // lane i: source offset of row r_first + i, or kNoRow where that row does not exist
  // (constant mode: in the padding; past r_last): one value, one shuffle per word
  const int32_t my_xo = t.r_first + lane <= t.r_last ? fwd_row_source(g, static_cast<int32_t>(t.r_first + lane)) : kNoRow;
  FlatCursor<EPW> cur(g, t, lane);
  // a word inside its row's source columns: 0 <= i0 <= n - EPW, one unsigned test
  const uint32_t inner_cols = static_cast<uint32_t>(max(0, col.n - EPW + 1));

  // Every word's loads stay inside x, also for the words of a partial last batch past w_end
  // (only their stores are skipped): their cursor walks on through real rows, or through the
  // lanes past r_last, which are fill rows (kNoRow).
  // Unit-stride source columns get their own copy of the loop (constant element offsets).
  // The bf16 [32, 64, 256, 256] pad 1 forward is issue-bound here (ncu: 0.72 instructions per
  // scheduler cycle, 74 % of DRAM bandwidth; docs/perf/pad.md): instructions per word count.
  auto walk = [&]<bool kUnit>() {
    const int32_t sx = kUnit ? 1 : xs;
    for (uint32_t wb = t.w0 + lane; wb - lane < t.w_end; wb += 32u * K) {  // warp-uniform trip count
      Word v[K];
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int32_t xo = __shfl_sync(0xffffffffu, my_xo, cur.rr & 31);
        const bool ok = xo != kNoRow;
        const int32_t i0 = cur.c - col.lo;
        // the whole word inside the source row: EPW loads at one offset (most steps take
        // this, warp-uniformly); else each element through the column map, or the fill
        if (__all_sync(0xffffffffu, ok && static_cast<uint32_t>(i0) < inner_cols)) {
          const T* p = src + (xo + i0 * sx);
#pragma unroll
          for (int j = 0; j < EPW; ++j) v[k].e[j] = __ldg(p + j * sx);
        } else {
#pragma unroll
          for (int j = 0; j < EPW; ++j) {
            const int32_t s = col(cur.c + j);
            v[k].e[j] = ok && s >= 0 ? __ldg(src + (xo + s * sx)) : fill;
          }
        }
        cur.step(g);
      }
      auto* __restrict__ out = dst + wb;  // one address, immediate offsets per word
#pragma unroll
      for (int k = 0; k < K; ++k)
        if (wb + 32u * k < t.w_end) out[32 * k] = v[k].w;
    }
  };
  if (xs == 1)
    walk.template operator()<true>();
  else
    walk.template operator()<false>();
}

// The flat backward: a dense dx walked like the flat forward (same words, cursor and row
// lanes). Lane i sets up dx row r_first + i: the dy offsets of its preimage rows (bwd_row;
// pad_plan_flat admits only geometries where no row has more than 4). Every dx element is the
// sum, in acc_t<T> from 0, over its preimage rows (in order) of its column cells (low range,
// identity, high range: PadColCells); an element with a single cell copies it (exact).
// Two passes per warp:
//   main:   a step where every word's row has one preimage row and every column its identity
//           cell (most steps) copies the identity cells, warp-uniformly, with all loads of a
//           batch in flight; other steps sum each element's cells (flat_bwd_word_general);
//   fix-up: then each lane recomputes, in its own row, the copied columns that have more cells
//           than the identity (outside [single_lo, single_hi): a few per row, pad_plan_flat),
//           and rewrites them after a __syncwarp, so the main pass needs no per-column test.

// Called warp-uniformly: lane `src` holds the preimage row offsets of the word's row.
template <class T, int EPW>
__device__ __forceinline__ void flat_bwd_word_general(const PadColCells& cc, const T* __restrict__ dy, int32_t sy, int n,
                                                      const int32_t (&my_off)[4], int src, int32_t c, FlatWord<T, EPW>* v) {
  acc_t<T> acc[EPW];
#pragma unroll
  for (int j = 0; j < EPW; ++j) acc[j] = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const T* row = dy + __shfl_sync(0xffffffffu, my_off[i], src);
    if (i < n) {
#pragma unroll
      for (int j = 0; j < EPW; ++j) acc[j] = add_col_cells<T>(cc, row, sy, c + j, acc[j]);
    }
  }
#pragma unroll
  for (int j = 0; j < EPW; ++j) v->e[j] = from_acc<T>(acc[j]);
}

// 4 blocks/SM caps it at 64 registers with no spill (H200, bf16 [16, 512, 16384]: 3 blocks
// 69 %, 4: 76 %, 5 spills: 49 % of copy; f32 85-86 % at all three).
template <class T, int EPW>
__global__ void __launch_bounds__(kPadThreads, 4) pad_flat_backward_kernel(const __grid_constant__ PadGeometry g) {
  constexpr int K = kFlatWordsPerLane;
  using Word = FlatWord<T, EPW>;
  FlatTask t;
  if (!flat_task(g, &t)) return;  // uniform per warp
  const int lane = t.lane, ca = t.ca;
  const PadColCells& cc = g.col_cells;  // read from the parameter bank, not registers
  const int32_t ys = static_cast<int32_t>(g.ys[ca]);
  const int32_t W = static_cast<int32_t>(g.flat_cols.d);
  const int32_t id_lo = max(0, -cc.lo), id_hi = min(W, cc.m - cc.lo);  // columns with an identity cell
  const T* __restrict__ dy = static_cast<const T*>(g.src);

  // lane i: the preimage rows of dx row r_first + i (lanes past r_last: none, so the words of
  // a partial last batch past w_end load nothing; their stores are skipped)
  int32_t my_off[4] = {0, 0, 0, 0};
  int my_n = 0;
  if (t.r_first + lane <= t.r_last) {
    int32_t unused;
    bwd_row<int32_t>(g, static_cast<int32_t>(t.r_first + lane), &unused, my_off, &my_n);
  }
  FlatCursor<EPW> cur(g, t, lane);

  auto walk = [&]<bool kUnit>() {
    const int32_t sy = kUnit ? 1 : ys;
    auto* __restrict__ dx = static_cast<decltype(Word::w)*>(g.dst);
    for (uint32_t wb = t.w0 + lane; wb - lane < t.w_end; wb += 32u * K) {  // warp-uniform trip count
      Word v[K];
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int n = __shfl_sync(0xffffffffu, my_n, cur.rr & 31);
        const int32_t o0 = __shfl_sync(0xffffffffu, my_off[0], cur.rr & 31);
        if (__all_sync(0xffffffffu, n == 1 && cur.c >= id_lo && cur.c + EPW <= id_hi)) {
          const T* p = dy + (o0 + (cur.c + cc.lo) * sy);
#pragma unroll
          for (int j = 0; j < EPW; ++j) v[k].e[j] = p[j * sy];
        } else {
          flat_bwd_word_general<T, EPW>(cc, dy, sy, n, my_off, cur.rr & 31, cur.c, &v[k]);
        }
        cur.step(g);
      }
#pragma unroll
      for (int k = 0; k < K; ++k)
        if (wb + 32u * k < t.w_end) dx[wb + 32u * k] = v[k].w;
    }
    // fix-up: this lane's row, its columns inside the warp's words that the copy got wrong
    __syncwarp();
    if (my_n != 1) return;
    const int32_t r = static_cast<int32_t>(t.r_first) + lane;
    const int32_t beg = max(0, static_cast<int32_t>(t.w0 * EPW) - r * W);
    const int32_t end = min(W, static_cast<int32_t>(t.w_end * EPW) - r * W);
    T* __restrict__ dx_row = static_cast<T*>(g.dst) + r * W;
    const T* __restrict__ dy_row = dy + my_off[0];
    auto fix = [&](int32_t x0, int32_t x1) {
      for (int32_t x = max(x0, beg); x < min(x1, end); ++x) dx_row[x] = from_acc<T>(add_col_cells<T>(cc, dy_row, sy, x, 0));
    };
    fix(id_lo, static_cast<int32_t>(g.single_lo));
    fix(static_cast<int32_t>(g.single_hi), id_hi);
  };
  if (ys == 1)
    walk.template operator()<true>();
  else
    walk.template operator()<false>();
}

}  // namespace

template <class T>
cudaError_t launch_flat_forward(const PadGeometry& g, cudaStream_t s) {
  void (*k)(PadGeometry) = nullptr;
  auto pick = [&]<int EPW>() {
    if (g.flat_epw == EPW) k = pad_flat_forward_kernel<T, EPW>;
  };
  pick.template operator()<1>();
  if constexpr (sizeof(T) <= 2) pick.template operator()<2>();
  if constexpr (sizeof(T) == 1) pick.template operator()<4>();
  return launch_kernel(k, dim3(static_cast<unsigned>(g.flat_blocks)), dim3(kPadThreads), 0, s, g);
}
template cudaError_t launch_flat_forward<uint8_t>(const PadGeometry&, cudaStream_t);
template cudaError_t launch_flat_forward<uint16_t>(const PadGeometry&, cudaStream_t);
template cudaError_t launch_flat_forward<uint32_t>(const PadGeometry&, cudaStream_t);
template cudaError_t launch_flat_forward<uint64_t>(const PadGeometry&, cudaStream_t);

template <class T>
cudaError_t launch_flat_backward(const PadGeometry& g, cudaStream_t s) {
  void (*k)(PadGeometry) = nullptr;
  if (g.flat_epw == 1) k = pad_flat_backward_kernel<T, 1>;
  if constexpr (sizeof(T) == 2)
    if (g.flat_epw == 2) k = pad_flat_backward_kernel<T, 2>;
  return launch_kernel(k, dim3(static_cast<unsigned>(g.flat_blocks)), dim3(kPadThreads), 0, s, g);
}
template cudaError_t launch_flat_backward<float>(const PadGeometry&, cudaStream_t);
template cudaError_t launch_flat_backward<double>(const PadGeometry&, cudaStream_t);
template cudaError_t launch_flat_backward<__half>(const PadGeometry&, cudaStream_t);
template cudaError_t launch_flat_backward<__nv_bfloat16>(const PadGeometry&, cudaStream_t);

}  // namespace baracuda::detail
