// Embedding / embedding_bag launch parameters: what the host resolves at run() and the kernels
// read by value (embedding_common.cuh has the device side).
//
// Work split. A "group" of G lanes (power of two <= 32, inside one warp) owns one work item —
// an output row (gather), a bag, a dweight row, a partial tile or a position — restricted to
// one column chunk of G·VEC columns (gather: kGatherUnroll·G·VEC; backward rows: kSegCols·G·VEC). VEC is the 16-byte vector
// width of the dtype when every row operand allows it, else 1 (scalar, any strides).
//
// Backward pipeline (one per plan; sort or scatter differs only in step 3):
//   1. prep: per position its key (the index, or V for padding / out-of-range / no bag), the
//      per-key histogram, per-bag valid counts (mean) and the position's bag (offsets form)
//   2. row_start = exclusive scan of the histogram (CUB); rows = the rows with terms, ascending,
//      and their number n_rows (CUB select over the histogram)
//   3. sort: CUB radix sort of (key, position — or its bag, without per-sample weights);
//      scatter: atomic counting scatter by key
//   4. heavy: rows with more than kEmbTile terms are summed as per-tile partials (tile t covers
//      sorted slots [t·kEmbTile, (t+1)·kEmbTile); at most two heavy rows meet a tile)
//   4b. fold: a heavy row's tile partials summed in groups of kEmbFold tiles (tile order)
//   5. zero: rows with no terms get zeros (or, when few rows have terms, the whole table);
//      rows: a group per (row with terms, column group) writes it — its terms in slot order, or
//      its partials
//   6. per-sample-weight gradients (optional)
#pragma once

#include <cstddef>
#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/tensor.hpp"
#include "core/fast_div.hpp"
#include "core/launch_fn.hpp"


namespace baracuda::detail {

inline constexpr int kEmbThreads = 256;
inline constexpr int kEmbTile = 64;       // heavy-row threshold and partial tile (sorted slots)
inline constexpr int kGatherUnroll = 4;   // vectors in flight per lane in the gather
inline constexpr int kSegCols = 4;        // vectors per lane of a backward row item
inline constexpr int kEmbFold = 16;       // heavy-row tile partials folded per group
inline constexpr int kWholeFillShare = 16;  // zero the whole table when under V / this rows have terms
inline constexpr int kFillChunk = 8 * kEmbThreads;  // zero fill: table vectors per ticket (8 per thread)
inline constexpr int kFillBlocksPerSm = 4;           // zero fill: grid, blocks per SM (8: 0.3-1.1 % slower)
inline constexpr int kRowsBlocksPerSm = 2;  // row writer: resident blocks (its launch bounds)
inline constexpr int kRowsWaves = 4;        // row writer grid: this many waves at most (perf/embedding.md)

// Position p (row-major over a view's shape) -> element offset; axes merged where contiguous.
struct PosMap {
  int rank = 1;
  int64_t shape[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};
};
PosMap make_pos_map(const TensorLayout& t, int rank);  // over the first `rank` axes of t

enum class EmbKind : int { kEmbedding = 0, kSum = 1, kMean = 2, kMax = 3 };

struct EmbParams {
  EmbKind kind = EmbKind::kEmbedding;
  int64_t V = 0, D = 0, N = 0, B = 0;
  int64_t bag_size = 0;      // > 0: bag of position p is p / bag_size
  int64_t padding = -1;      // normalized padding_idx, -1: none
  int idx64 = 1;             // index_dtype is i64 (else i32)
  int group = 32;            // lanes per work item
  int64_t chunks = 1;        // column chunks per row
  int sms = 1;               // SMs of the device (zero-fill and row-writer grids)
  // indices (position map), offsets
  const void* idx = nullptr;
  PosMap idx_map;
  const void* off = nullptr;
  int64_t off_s = 0;
  int include_last = 0;
  // per-sample weights (position map)
  const void* psw = nullptr;
  PosMap psw_map;
  // table (forward / psw gradient)
  const void* weight = nullptr;
  int64_t w_s0 = 0, w_s1 = 1;
  // forward output / backward dout: row of position (embedding) or of bag
  void* out = nullptr;
  const void* dout = nullptr;
  PosMap row_map;
  int64_t row_s1 = 1;
  // max indices [B, D]
  void* max_idx = nullptr;
  int64_t mi_s0 = 0, mi_s1 = 1;
  // backward outputs
  void* dweight = nullptr;
  int64_t dw_s0 = 0, dw_s1 = 1;
  void* dpsw = nullptr;
  PosMap dpsw_map;
  int scale_freq = 0;
  unsigned long long* invalid = nullptr;  // out-of-range counter
  // backward workspace
  int* counts = nullptr;      // [V + 1]
  unsigned* fill_ticket = nullptr;  // [1] zero-fill chunk counter: counts[V + 1], zeroed with counts
  FastDiv fill_div;           // zero fill: vector index -> row (vectors per row), table under 2^31 vectors
  int* row_start = nullptr;   // [V + 1]
  int* rows = nullptr;        // [min(N, V)] rows with terms, ascending
  int* n_rows = nullptr;      // [1] their number
  uint32_t* keys_in = nullptr;
  uint32_t* keys = nullptr;   // sorted
  int* pos_in = nullptr;
  int* pos = nullptr;         // sorted
  int slot_bag = 0;           // pos_in / pos hold each position's bag (no per-sample weights)
  int* bag_of = nullptr;      // [N] (offsets form)
  int* bag_count = nullptr;   // [B] (mean)
  void* partials = nullptr;   // [tiles, 2, D] accumulator
  void* cub_temp = nullptr;
  size_t cub_bytes = 0;
  int key_bits = 1;
  int sorted = 1;
};

// Returns the cudaError_t of the launches as an int.
using EmbLaunchFn = LaunchFn<EmbParams>;
// Forward (embedding gather or bag pooling per p.kind) and backward (the whole pipeline) for
// dtype t with VEC = 16 / size (vector) or 1; nullptr when t is not a float dtype.
EmbLaunchFn emb_forward_launcher(DType t, bool vector);
EmbLaunchFn emb_backward_launcher(DType t, bool vector);

// CUB scratch: a bound fixed at select() (no GPU needed) and the exact need asked of CUB at run.
size_t emb_cub_bound(int64_t n, int64_t v);
cudaError_t emb_cub_query(int64_t n, int64_t v, int key_bits, size_t* bytes);

}  // namespace baracuda::detail
