// The pairs forward (PadPairs in pad_geometry.hpp): 2-byte elements into a dense y with rows
// of 64 to ~290 4-byte words, such as bf16 [32, 64, 256, 256] padded by 1 (rows of 258).
//
// A warp owns rw consecutive y rows and walks them in address order. In every row, lane l
// writes words 32 s + l (s < nseg), each from one aligned 4-byte x load. With an odd low pad
// the word's elements straddle two aligned x words: its upper element is the low half of this
// lane's word, its lower one the high half of the word of the lane below (lane 0: lane 31's
// word of the previous segment), one shuffle and one byte permute. The x pointers of a lane's
// words are fixed for the whole task: per row and word one address add, one load, one
// shuffle, one permute, one store. Words holding padding cells (lanes of the first and last
// segment) are redone element by element after the loads; constant-mode padding rows and
// cells take the fill through selects, so every mode runs the same code. The row's tail
// words (at most kPairsMaxTail) go one lane per row at the end.
//
// Why this shape (H200, bf16 [32, 64, 256, 256] pad 1, docs/perf/pad.md): the flat kernel
// (two 2-byte loads per word and a per-word row cursor) reached 83.5-85.5 % of copy; this
// kernel 88.5-90.4 %. Tasks longer than 4 rows lost (a bare version with two 2-byte loads per
// word: 8, 16, 32 rows per warp 76, 61, 52 % against 84 % at 4): a warp's long walk spreads
// the concurrent DRAM accesses. So did a persistent loop over tasks (80-82 %, 64 registers).
#include <utility>

#include "core/cuda_types.cuh"
#include "core/launch.cuh"
#include "ops/pad/pad_device.cuh"
#include "ops/pad/pad_geometry.hpp"
#include "ops/pad/pad_pairs.cuh"

namespace baracuda::detail {
namespace {

// fwd_row_source for up to two row axes (rank <= 3, the usual 1-D and 2-D pads) without the
// general loop over kMaxRank axes.
__device__ __forceinline__ int32_t pairs_row_source(const PadGeometry& g, int32_t r) {
  if (g.rank > 3) return fwd_row_source(g, r);
  auto src = [&](int d, int32_t o) { return axis_map(g.mode, static_cast<int32_t>(g.n[d]), static_cast<int32_t>(g.lo[d]))(o); };
  int32_t p = 0, h = r, sp = 0;
  if (g.rank == 3) {
    p = static_cast<int32_t>(g.row_div[1].div(static_cast<uint32_t>(r)));
    h = r - p * static_cast<int32_t>(g.row_div[1].d);
    sp = src(0, p);
  }
  const int32_t sh = src(g.rank - 2, h);
  const int32_t xo = (g.rank == 3 ? sp * static_cast<int32_t>(g.xs[0]) : 0) + sh * static_cast<int32_t>(g.xs[g.rank - 2]);
  return sp >= 0 && sh >= 0 ? xo : kNoRow;
}

template <int NSEG, int SHIFT, int RW>
__global__ void __launch_bounds__(kPadThreads) pad_pairs_forward_kernel(const __grid_constant__ PadGeometry g) {
  const PadPairs& pr = g.pr;
  const int lane = threadIdx.x & 31;
  const int32_t r0 = (blockIdx.x * (kPadThreads / 32) + (threadIdx.x >> 5)) * RW;
  if (r0 >= pr.rows) return;  // uniform per warp
  const int nrows = min(RW, pr.rows - r0);
  const int32_t my_xo = lane < nrows ? pairs_row_source(g, r0 + lane) : kNoRow;
  const int ca = g.rank - 1;
  const int32_t W = static_cast<int32_t>(g.n[ca]), lo = static_cast<int32_t>(g.lo[ca]);
  const AxisMap col = axis_map(g.mode, W, lo);
  const uint16_t* __restrict__ x = static_cast<const uint16_t*>(g.src);
  uint32_t* __restrict__ y = static_cast<uint32_t*>(g.dst);
  const uint32_t fill = static_cast<uint32_t>(g.fill & 0xffffu);
  const uint32_t fill_word = fill * 0x10001u;

  // x + the aligned word each of this lane's words loads, as an integer made opaque so the row
  // offset is added with one IMAD.WIDE.U32 (ptxas re-associates it into a 64-bit
  // sign-extending sum otherwise); words that are not plain load a valid dummy (column 0)
  uint64_t px[NSEG];
  uint32_t edge = 0;  // bit s: word 32 s + lane is redone element by element
#pragma unroll
  for (int s = 0; s < NSEG; ++s) {
    const int32_t j = 32 * s + lane;
    if (!pad_pairs_plain(j, lo, W, SHIFT)) edge |= 1u << s;
    const int32_t b = 2 * j - lo + SHIFT;
    px[s] = reinterpret_cast<uint64_t>(x + (b >= 0 && b + 1 < W ? b : 0));
    asm("mov.b64 %0, %0;" : "+l"(px[s]));
  }
  // the element columns of the edge words (segments 0 and NSEG-1 only: pad_plan_pairs)
  const int32_t c00 = col(2 * lane), c01 = col(2 * lane + 1);
  const int32_t c10 = col(2 * (32 * (NSEG - 1) + lane)), c11 = col(2 * (32 * (NSEG - 1) + lane) + 1);
  auto element = [&](uint32_t xo, int32_t c) -> uint32_t { return c >= 0 ? x[xo + c] : fill; };

  uint32_t* __restrict__ out = y + int64_t{r0} * pr.words + lane;
  // all word loads of the task, then per row the shuffles, the edge words and the stores
  uint32_t w[RW][NSEG], xl[RW];
  bool fill_row[RW];
#pragma unroll
  for (int u = 0; u < RW; ++u) {
    const int32_t xo = __shfl_sync(0xffffffffu, my_xo, u);
    fill_row[u] = xo == kNoRow;
    xl[u] = fill_row[u] ? 0u : static_cast<uint32_t>(xo);  // a padding row reads row 0, then takes the fill
#pragma unroll
    for (int s = 0; s < NSEG; ++s) w[u][s] = __ldg(reinterpret_cast<const uint32_t*>(px[s] + uint64_t{xl[u]} * 2));
  }
#pragma unroll
  for (int u = 0; u < RW; ++u) {
    uint32_t v[NSEG];
#pragma unroll
    for (int s = 0; s < NSEG; ++s) {
      v[s] = w[u][s];
      if constexpr (SHIFT) {  // w, not v: lane 31 hands on its unshifted word of segment s - 1
        const uint32_t give = lane == 31 && s > 0 ? w[u][s - 1] : w[u][s];
        v[s] = __byte_perm(__shfl_sync(0xffffffffu, give, (lane + 31) & 31), v[s], 0x5432);
      }
      if ((s == 0 || s == NSEG - 1) && (edge >> s & 1u)) {
        const int32_t c0 = s == 0 ? c00 : c10, c1 = s == 0 ? c01 : c11;
        v[s] = (element(xl[u], c0) & 0xffffu) | element(xl[u], c1) << 16;
      }
      v[s] = fill_row[u] ? fill_word : v[s];
    }
    if (u < nrows) {
#pragma unroll
      for (int s = 0; s < NSEG; ++s) out[int64_t{u} * pr.words + 32 * s] = v[s];
    }
  }
  // the tail words, one lane per row
  if (lane < nrows) {
    const uint32_t xo = my_xo == kNoRow ? 0u : static_cast<uint32_t>(my_xo);
    uint32_t* __restrict__ row = y + int64_t{r0 + lane} * pr.words;
    for (int32_t j = NSEG * 32; j < pr.words; ++j) {
      const uint32_t v = (element(xo, col(2 * j)) & 0xffffu) | element(xo, col(2 * j + 1)) << 16;
      row[j] = my_xo == kNoRow ? fill_word : v;
    }
  }
}

}  // namespace

cudaError_t launch_pairs_forward(const PadGeometry& g, cudaStream_t s) {
  void (*k)(PadGeometry) = nullptr;
  auto pick = [&]<int NSEG>() {
    constexpr int RW = pad_pairs_rows_per_warp(NSEG);
    if (g.pr.nseg == NSEG && g.pr.rw == RW)
      k = g.pr.shift ? pad_pairs_forward_kernel<NSEG, 1, RW> : pad_pairs_forward_kernel<NSEG, 0, RW>;
  };
  [&]<int... N>(std::integer_sequence<int, N...>) { (pick.template operator()<N + 2>(), ...); }(
      std::make_integer_sequence<int, kPairsMaxSeg - 1>{});
  if (k == nullptr) return cudaErrorInvalidConfiguration;
  return launch_kernel(k, dim3(static_cast<unsigned>(g.pr.blocks)), dim3(kPadThreads), 0, s, g);
}

}  // namespace baracuda::detail
