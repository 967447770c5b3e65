// What ScanPlan / ScanBackwardPlan hand their kernels (no CUDA headers).
//
// x is viewed as `lines` lines of length L along the scanned axis; the other axes (outer-first,
// unmerged) give each line's offset in every operand.
//   row mode     the scanned axis is unit-stride in x and y (and indices): chunks of 32 x 8
//                positions, a lane holding 8 consecutive ones (16-byte loads and stores where
//                the lines are aligned: vec_*). Short lines (tiled = false): a
//                warp per line walks it chunk after chunk. Long lines or few lines (tiled): one
//                pass over tiles of seg_len positions, a block each; a tile sums the published
//                totals of its line's earlier tiles in a fixed order (scan_tile_kernel).
//   column mode  otherwise: a thread per (line, segment) walks it serially (adjacent lines are
//                adjacent threads: coalesced when the innermost other axis is unit-stride).
//                segments > 1 (few, long lines): pass 1 writes each segment's total to
//                partials[line][segment], pass 2 turns a line's totals into exclusive prefixes
//                in order (a warp per line), pass 3 scans each segment from its prefix.
// The segment count and every order of combination are functions of the shape alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/scan.hpp"
#include "core/launch_fn.hpp"

namespace baracuda::scan {

inline constexpr int kItems = 8;                 // positions per lane in row mode
inline constexpr int64_t kChunk = 32 * kItems;   // positions per warp step
// Elements per vector load of a storage type of `bytes` (16 bytes; 8 for 1-byte types).
constexpr int vector_width(int bytes) { return bytes == 1 ? 8 : 16 / bytes; }
// Chunks per warp of a row-mode tile (8 warps): 4 for 4-byte accumulators, 2 for wider ones.
constexpr int tile_chunks(int acc_bytes) { return acc_bytes <= 4 ? 4 : 2; }
inline constexpr int64_t kTileGridCap = int64_t{1} << 16;  // blocks of the tile kernel (they loop)
// Tiles per group: a group's total is published once complete (scan_tile_kernel).
inline constexpr int64_t kTileGroup = 1024;
// The tile kernel's total slots: a line's tiles (lines x segments), then each line's complete
// groups.
constexpr int64_t tile_slots(int64_t lines, int64_t segments) { return lines * segments + lines * (segments / kTileGroup); }
// The tile kernel's counter (16 bytes) and a flag per slot (4 bytes each), 16-byte rounded; the
// slots' totals follow.
constexpr int64_t tile_flag_bytes(int64_t slots) { return 16 + (slots * 4 + 15) / 16 * 16; }

struct ScanGeom {
  int64_t lines = 0, L = 0;
  int ko = 0;                                                  // the other axes
  int64_t osize[kMaxRank] = {}, oxs[kMaxRank] = {}, oys[kMaxRank] = {}, ois[kMaxRank] = {};
  int64_t xs = 0, ys = 0, is = 0;                              // strides along the scanned axis
  int64_t segments = 1, seg_len = 0;
  const void* x = nullptr;
  void* y = nullptr;
  void* indices = nullptr;  // cummax / cummin (may be null)
  uint8_t y_dtype = 0;
  void* partials = nullptr;   // column mode: lines * segments accumulators; tiled: counter, flags
  void* tile_aggs = nullptr;  // tiled: the slots' totals (after the flags)
  int acc_bytes = 4;          // the accumulator's size (the tile length)
  bool reverse = false, exclusive = false, row_mode = false, tiled = false;
  bool vec_x = false, vec_y = false, vec_i = false;  // row mode: whole aligned vectors
};
using ScanLaunchFn = LaunchFn<ScanGeom>;
// The launcher (all passes) of ScanKind `kind` for storage dtype `in` (accumulating in f64 when
// f64); nullptr when there is none.
ScanLaunchFn find_scan(DType in, int kind, bool f64);
// Bytes of one segment total of `kind` for storage `in`.
size_t scan_acc_bytes(DType in, int kind, bool f64);

// Line geometry from the descriptor and, at run, the operands' strides (null: shape only).
void build_scan_geometry(const ScanDescriptor& d, const TensorLayout* x, const TensorLayout* y, const TensorLayout* indices,
                         ScanGeom* g);
// Segments of the geometry's mode; the workspace select() reserves (both modes: the run-time
// layout may pick either); an error past 2^63 bytes.
void choose_segments(ScanGeom* g);
// Row mode's vector flags from the data pointers and strides (set g.x, g.y, g.indices first):
// x of dtype in, y of dtype out.
void set_vector_flags(ScanGeom* g, DType in, DType out);
Result<size_t> scan_partials_bytes(std::string_view op, const ScanGeom& g, size_t acc_bytes);

// ScanBackwardPlan's serial pass (cumprod, cummax / cummin, logcumsumexp): a thread per line.
struct ScanBwdGeom {
  int64_t lines = 0, L = 0;
  int ko = 0;
  int64_t osize[kMaxRank] = {};
  int64_t ox[kMaxRank] = {}, oy[kMaxRank] = {}, oi[kMaxRank] = {}, ody[kMaxRank] = {}, odx[kMaxRank] = {};
  int64_t xs = 0, ys = 0, is = 0, dys = 0, dxs = 0;
  const void* x = nullptr;
  const void* y = nullptr;
  const void* indices = nullptr;
  const void* dy = nullptr;
  void* dx = nullptr;
  uint8_t y_dtype = 0;  // y and dy
  int kind = 0;         // ScanKind
  bool reverse = false, exclusive = false;
};
using ScanBwdLaunchFn = LaunchFn<ScanBwdGeom>;
ScanBwdLaunchFn find_scan_backward(DType x);  // f32 / f16 / bf16 / f64

}  // namespace baracuda::scan
