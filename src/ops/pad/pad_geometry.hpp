// The pad problem as the kernels see it: axes reordered and coalesced on the host at run(),
// so the kernels walk a "column" axis (the last, smallest destination stride) and up to
// kMaxRank-1 "row" axes. Host- and device-safe plain data.
#pragma once

#include <cstdint>
#include <string_view>

#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/pad.hpp"
#include "core/dispatch.hpp"
#include "core/fast_div.hpp"
#include "core/launch_fn.hpp"

namespace baracuda::detail {

// Along one axis of the backward, coordinate x's preimage cells in increasing order: a "low"
// range (the left padding that came from x), the identity x + lo when inside [0, m), and a
// "high" range (the right padding). x in [l0, l0 + lw) has the low range [pl·x + ql, + llen),
// likewise high (pad_col_cells):
//   reflect:   low x in [1, lo] -> lo - x;          high x in [n-1-hi, n-2] -> lo + 2(n-1) - x
//   replicate: low x = 0 -> [0, lo);                high x = n-1 -> [lo + n, m)
//   circular:  low x in [n-lo, n-1] -> x + lo - n;  high x in [0, hi-1] -> x + lo + n
//   constant:  none.   (lo, hi here: the pads clamped at 0; negative pads only crop.)
struct PadColCells {
  int32_t lo = 0, m = 0, l0 = 0, lw = 0, pl = 0, ql = 0, llen = 0, h0 = 0, hw = 0, ph = 0, qh = 0, hlen = 0;
};

// The staged kernels (pad_plan_staged, pad_staged.cu): the coalesced problem as planes x H x W
// with only H and W padded (pads >= 0), columns unit-stride on both sides. A block owns a tile
// of T destination rows x Wc columns of one plane: it copies the source rows the tile needs
// into shared memory, completes there the elements that are not a plain shifted copy
// (backward: sums of several cells; forward: padding cells), then writes the tile as shifted
// 16-byte windows of that copy.
struct PadStaged {
  int64_t tiles = 0;  // grid size; 0 = not used
  int32_t H = 1, Mh = 1, lo_h = 0, W = 0, Mw = 0, lo_w = 0;  // x / dx extents, y / dy extents, pad_low
  int32_t xs_h = 0, ys_h = 0;                                // row strides (elements)
  int32_t T = 1, Wc = 1;                                     // tile: destination rows x columns
  // backward: stage the rows [0, lo_h) with the first row tile, [lo_h + H, Mh) with the last
  // (likewise columns): 0 when that padding is too long to stage (its cells are then read from dy)
  int32_t ext_lo_h = 0, ext_hi_h = 0, ext_lo_w = 0, ext_hi_w = 0;
  // backward: dx rows / columns outside [s_lo, s_hi) may have more than their identity cell
  int32_t s_lo_h = 0, s_hi_h = 0, s_lo_w = 0, s_hi_w = 0;
  int32_t pitch = 0;  // shared-memory bytes per staged source row (16-byte multiple)
  int32_t smem = 0;   // dynamic shared memory per block
  FastDiv tiles_c, tiles_r;  // column and row tiles per plane
  FastDiv blk_in;            // 16-byte blocks per staged row (pitch / 16)
  FastDiv blk_out;           // 16-byte blocks a tile row of the destination can touch
  PadColCells rows, cols;    // backward: the preimage-cell rules of H and W
};

// The pairs forward (pad_plan_pairs, pad_pairs.cu): 2-byte elements into a dense y whose rows
// are nseg·32 + tail 4-byte words (two elements), the column axis unit-stride in x with every
// x row 4-byte aligned. A warp owns rw consecutive y rows; in each, lane l takes words
// 32 s + l (s < nseg) as one aligned 4-byte x load each, shifted by one element through the
// lane below when the low pad is odd (shift); words holding padding cells occur only in
// segments 0 and nseg-1 (checked here) and go element by element, as do the tail words.
struct PadPairs {
  int64_t blocks = 0;  // grid size; 0 = not used
  int32_t rows = 0;    // y rows (product of y's row extents)
  int32_t words = 0;   // 4-byte words per y row
  int32_t tasks = 0;   // tasks of rw rows, one per warp
  int nseg = 0, shift = 0, rw = 0;
};

struct PadGeometry {
  int rank = 0;  // coalesced rank, >= 1; axis rank-1 is the column axis
  int mode = 0;  // PadMode
  int64_t n[kMaxRank] = {};   // unpadded (x / dx) extent
  int64_t m[kMaxRank] = {};   // padded (y / dy) extent
  int64_t lo[kMaxRank] = {};  // pad_low per axis
  int64_t xs[kMaxRank] = {};  // x / dx element strides
  int64_t ys[kMaxRank] = {};  // y / dy element strides
  const void* src = nullptr;  // forward: x; backward: dy
  // byte span of the whole source view [src_lo, src_hi) (dy backward, x forward): aligned
  // vector loads may read any bytes inside it (issue_core, the staged kernels). The other
  // forward kernels stay inside each source row.
  const void* src_lo = nullptr;
  const void* src_hi = nullptr;
  void* dst = nullptr;        // forward: y; backward: dx
  uint64_t fill = 0;          // forward constant fill, raw bits of the element
  // The row "core": destination columns [core_lo, ...) that take one cell of the other side,
  // c - lo (forward) or c + lo (backward). Each row copies core_chunks 16-byte-aligned chunks of
  // it, from its first aligned column: core_a for every row when all rows share one 16-byte
  // phase (-1: each row finds its own). The rest of the row are edge elements, and in the
  // backward so are the core columns outside [single_lo, single_hi), the ones with more than one
  // preimage (the core chunks leave them to the edge pass).
  int64_t core_lo = 0;
  int64_t core_chunks = 0;
  int64_t core_a = -1;
  int64_t single_lo = 0, single_hi = 0;
  // launch shape, chosen on the host (pad_build_geometry): a warp covers rows_per_warp (<= 32)
  // destination rows times chunks_per_tile core chunks (the end tiles also their edges)
  int64_t rows = 0;             // product of the destination's row extents
  int64_t chunks_per_tile = 0;  // core chunks one warp covers per row
  int64_t tiles_c = 0;          // column tiles per row
  int rows_per_warp = 32;
  int64_t blocks = 0;           // grid size
  // Divisors of the destination's row axes (extents < 2^31; the 32-bit kernels decompose row
  // indices with them instead of hardware division).
  FastDiv row_div[kMaxRank];
  // The flat kernels (pad_plan_flat): a dense destination walked as consecutive words of
  // flat_epw elements, flat_batches x 32 lanes x kFlatWordsPerLane words per warp; 0 words =
  // not used.
  int flat_epw = 1;
  int flat_batches = 1;
  int flat_step_r = 0, flat_step_c = 0;  // 32 words = flat_step_r rows + flat_step_c columns
  int64_t flat_words = 0;
  int64_t flat_blocks = 0;
  FastDiv flat_cols;  // destination row length in elements
  PadColCells col_cells;  // flat and segment backward: the column axis's preimage cells
  // The segment backward (pad_plan_segments): dx rows cut into segments of 2^seg_group_log2
  // aligned 16-byte chunks, one lane per chunk; seg_tasks = rows x segments (0 = not used),
  // seg_tpw consecutive tasks per warp.
  int seg_group_log2 = 5;
  int seg_tpw = 0;
  int64_t seg_tasks = 0;
  int64_t seg_blocks = 0;
  FastDiv seg_per_row;  // segments per row
  PadStaged st;  // the staged kernels (st.tiles = 0: not used)
  PadPairs pr;   // the pairs forward (pr.blocks = 0: not used)
};

// Compile-time tile constants shared by the host (tiling) and the kernels.
inline constexpr int kPadThreads = 256;  // 8 warps per block
inline constexpr int kFlatWordsPerLane = 8;
inline constexpr int kSegTasksInFlight = 4;  // segment backward: tasks per lane group per batch
inline constexpr int kStagedThreads = 128;     // staged kernels: threads per block
inline constexpr int kStagedGuard = 16;        // staged kernels: shared bytes before the first row
inline constexpr int kStagedMaxRows = 256;     // staged forward: tile rows at most
inline constexpr int kPairsMaxSeg = 8;         // pairs forward: 32-word segments per row at most
inline constexpr int kPairsMaxTail = 4;        // pairs forward: words past the segments at most
// Pairs forward rows per warp: 4 up to 4 segments (16 words per lane in flight), 2 beyond (H200,
// bf16 [16, 16, 512, 512] pad 2, 8 segments: 2 rows 87.2-87.5 % of copy, 4 rows 84.4-86.3 %).
constexpr int pad_pairs_rows_per_warp(int nseg) { return nseg <= 4 ? 4 : 2; }
// Columns in one 16-byte chunk.
constexpr int pad_chunk_elems(int elem_size) { return 16 / elem_size; }

// Reorders axes (column axis = smallest destination stride, rows by decreasing stride), merges
// unpadded neighbours contiguous on both sides, and picks the tiling. `dst_is_x` for backward;
// `dst` (the destination's data pointer, when known) lets it fix the core's alignment once.
Status pad_build_geometry(std::string_view op, const PadDescriptor& d, const TensorLayout& xl,
                          const TensorLayout& yl, bool dst_is_x, PadGeometry* g, const void* dst = nullptr);
// Decides whether a flat kernel serves this geometry (call only with 32-bit indices; needs a
// dense destination at `dst`, y forward or dx backward, with rows of at least 32 elements)
// and sets its word size, grid and (backward) column cell rule; elem = element bytes.
void pad_plan_flat(PadGeometry* g, int elem, const void* dst, bool backward);
// Decides whether the segment backward serves this geometry (call only with 32-bit indices):
// unit-stride columns in dx and dy, both element-aligned, at most 4 preimage rows per dx row,
// rows of at least 4 chunks, and no column with a cell besides its identity (constant or
// unpadded column axis); sets its group size, tasks and grid, and the column cell rule.
void pad_plan_segments(PadGeometry* g, int elem, const void* dx, const void* dy);
// Decides whether a staged kernel serves this geometry (call only with 32-bit indices; see
// PadStaged; dst / src: dx / dy backward, y / x forward) and sets its tiling.
void pad_plan_staged(PadGeometry* g, int elem, const void* dst, const void* src, bool backward);
// Decides whether the pairs forward serves this geometry (call only with 32-bit indices and
// 2-byte elements; see PadPairs) and sets its launch shape.
void pad_plan_pairs(PadGeometry* g, const void* dst, const void* src);
// A pairs word (4-byte y word j of a row, elements 2j and 2j+1) that is a plain copy of x
// columns i0 = 2j - lo and i0 + 1 through the aligned x word at b = i0 + shift: both inside the
// row's W source columns (and, shifted, not the row's first word, whose lower half comes
// from the lane below). Host and device use this one rule.
BARACUDA_HD bool pad_pairs_plain(int32_t j, int32_t lo, int32_t W, int shift) {
  const int32_t i0 = 2 * j - lo, b = i0 + shift;
  return i0 >= 0 && i0 + 1 < W && b >= 0 && b + 1 < W && !(shift && j == 0);
}
// The preimage-cell rule of one axis (32-bit extents).
PadColCells pad_col_cells(PadMode mode, int64_t n, int64_t m, int64_t lo);
// Sets g->src_lo / src_hi to the byte span of the source view (dy backward, x forward).
void pad_source_span(const TensorRef& src, PadGeometry* g);
// Conservative interval of unpadded coordinates whose only preimage is x + lo.
void pad_single_interval(PadMode mode, int64_t n, int64_t m, int64_t lo, int64_t* x0, int64_t* x1);
// 32-bit index math is safe for this operand: element count and element offsets below
// 2^31 - 2^16 (kernels index in elements; the pointer addition itself is 64-bit).
bool pad_fits_index32(const TensorLayout& t);

// Dtypes each direction supports. The forward moves raw bits, so it is instantiated per
// element size (StorageTypes): ten dtypes, four kernels.
using PadForwardDTypes = DTypeList<DType::f32, DType::f16, DType::bf16, DType::f64, DType::i8, DType::u8,
                                   DType::i16, DType::i32, DType::i64, DType::boolean>;
using PadBackwardDTypes = FloatDTypes;

// Launcher tables (defined in pad_launch.cu); null when the dtype is not supported.
using PadLaunchFn = LaunchFn<PadGeometry>;
PadLaunchFn pad_forward_launcher(DType dtype, bool index64);
PadLaunchFn pad_backward_launcher(DType dtype, bool index64);

}  // namespace baracuda::detail
