// What SoftmaxPlan / SoftmaxBackwardPlan hand their kernels (no CUDA headers).
//
// The tensor is viewed as `lines` lines of L elements along `dim`; the other axes (outer-first,
// unmerged) give each line's offset in every view. Views: forward 0 = x, 2 = y; backward 0 = y,
// 1 = dy, 2 = dx (view 1 unused by the forward); 3 = the mask (any strides, read element by
// element; not part of the path's choice).
//   kWarpRows     the axis unit-stride in the read views: a warp per line, the line(s) staged in
//                 the warp's share of the block's dynamic shared memory (lines of at most
//                 kWarpLineBytes staged bytes), two buffers: the next line's copies in flight
//                 while this one is reduced and written.
//   kClusterRows  as above, a cluster of `cluster` blocks of kRowThreads per line, block r
//                 staging elements [r·slice, (r+1)·slice), double-buffered up to kDoubleBytes a
//                 slice; staged = false: too long to stage, read twice from global memory.
//   kColumns      otherwise: a thread per line (adjacent lines on adjacent threads), read twice.
#pragma once

#include <cstddef>
#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/tensor.hpp"
#include "core/hd.hpp"
#include "core/launch_fn.hpp"

namespace baracuda::smx {

inline constexpr int kRowThreads = 256;
inline constexpr int kRowWarps = 4;                 // warps (lines) per block of kWarpRows
inline constexpr int64_t kWarpLineBytes = 8192;     // a warp's staged bytes at most
inline constexpr int64_t kSliceBytes = 64 * 1024;     // a cluster block's staged bytes, preferred
inline constexpr int64_t kMaxSliceBytes = 96 * 1024;  // ... at most (past 8 of them: unstaged)
inline constexpr int64_t kDoubleBytes = 48 * 1024;    // slices up to this are double-buffered
inline constexpr int kMaxCluster = 8;

enum Path : int { kWarpRows = 0, kClusterRows = 1, kColumns = 2 };

struct SoftmaxGeom {
  int64_t lines = 0, L = 0;
  int ko = 0;
  int64_t osize[kMaxRank] = {};
  int64_t os[4][kMaxRank] = {};  // per view: strides of the other axes
  int64_t s[4] = {};             // per view: stride along the axis
  const void* in0 = nullptr;     // x / y
  const void* in1 = nullptr;     // backward: dy
  void* out = nullptr;           // y / dx
  int kind = 0;                  // SoftmaxKind
  int path = kColumns;
  int cluster = 1;
  int64_t slice = 0;  // kClusterRows: elements per block
  bool staged = true;
  int buffers = 1;  // staged: 2 = the next line's copies in flight while this one is used
  bool vec = false;  // 16-byte pieces in every view (unit stride, aligned lines, whole vectors)
  // masks (SoftmaxDescriptor): any of them set selects the masked kernels
  const void* mask = nullptr;  // view 3
  int mask_dtype = -1;          // DType of the mask (bool: keep where true; float: added); -1 none
  bool causal = false;
  int64_t diagonal = 0;
  int64_t qdiv = 1, qsize = 1;  // causal: the line's q = line / qdiv % qsize
  bool zero_rows = false;       // masked_rows = zero
  BARACUDA_HD bool masked() const { return mask_dtype >= 0 || causal || zero_rows; }
};
using SoftmaxLaunchFn = LaunchFn<SoftmaxGeom>;

// Forward launcher for x of `in` and y of `out` (f32 / f16 / bf16 / f64, or f16 / bf16 -> f32);
// backward for y / dy of `in` and dx of `out`. nullptr when there is none.
SoftmaxLaunchFn find_softmax(DType in, DType out, bool backward);

// The line view of a descriptor's shape (axis normalized) and, at run, of the views' strides
// (4 views, null: shape only, the innermost axis taken as unit-stride); the caller sets the data
// pointers, then choose_path.
void build_lines(int rank, const int64_t* shape, int axis, const TensorLayout* const* views, SoftmaxGeom* g);
// Picks the path, the cluster and the vector flag from the strides and pointers: in_bytes the
// read views' element size (the backward stages two lines), out_bytes the written view's.
void choose_path(SoftmaxGeom* g, int reads, size_t in_bytes, size_t out_bytes);

}  // namespace baracuda::smx
