// The segment pad backward (pad_plan_segments): dx rows cut into segments of aligned 16-byte
// chunks, one lane per chunk, 32-bit indices.
#include <cstdint>

#include "core/cuda_types.cuh"
#include "core/fast_div.hpp"
#include "core/launch.cuh"
#include "ops/pad/pad_device.cuh"
#include "ops/pad/pad_geometry.hpp"
#include "ops/pad/pad_preimages.cuh"
#include "ops/pad/pad_segments.cuh"

namespace baracuda::detail {
namespace {

// ---------------------------------------------------------------- segment backward kernel
// dx rows with unit-stride columns (any row strides; dy's columns unit-stride too; 32-bit
// indices; at most 4 preimage rows per dx row) cut into segments of G = 2^seg_group_log2
// (4..32) 16-byte-aligned dx chunks (pad_plan_segments). A task is one segment: G lanes, a
// chunk each. A warp takes seg_tpw consecutive tasks spanning at most 32 rows (lane i sets up
// row r_first + i, as in the flat kernels), kSegTasksInFlight x 32/G tasks per batch, all
// loads of a batch before its stores.
//   fast:     a chunk of a row with one preimage row whose columns all have their identity cell
//             (all but a row's ends, in the geometries pad_plan_segments admits: no column has
//             another cell) is a shifted copy of dy: each lane loads its aligned 16-byte block,
//             takes the next from the lane above by shuffle (or loads it itself at the group's
//             end or next to a deferred lane) and funnel-shifts the window: one vector load and
//             one vector store per chunk;
//   deferred: every other chunk (rows with several preimage rows or none, partial chunks at
//             unaligned row ends, cropped columns, a pair that would leave the dy view) is
//             queued in shared memory; when a batch leaves more than kSegFlushAt queued, and at
//             the end, the warp computes them 32 at a time, one per lane (seg_chunk), so their
//             loads are in flight together rather than one chunk after another.
// Each element is written once, as the sum in acc_t of its cells in the order of every pad
// backward path (preimage rows outer; low range, identity, high range), from 0.
inline constexpr int kSegQueue = 256;  // deferred chunks per warp
inline constexpr int kSegFlushAt = kSegQueue - 32 * kSegTasksInFlight;  // a batch queues <= 32 U

struct SegEntry {
  int32_t x0;  // the chunk's first column (negative: a partial first chunk)
  int32_t rr;  // its row, relative to the warp's first
};

// One dx chunk of VEC columns from x0 in a row at dx offset xo with n preimage rows at off[]:
// per preimage row, the identity cells as one vector when the whole chunk has them inside the
// dy view, the other cells one by one.
template <class T>
__device__ __forceinline__ void seg_chunk(const PadGeometry& g, const T* __restrict__ dy, T* __restrict__ dx, int n,
                                          const int32_t (&off)[4], int32_t xo, int32_t x0) {
  constexpr int VEC = 16 / sizeof(T);
  const PadColCells& cc = g.col_cells;
  const int32_t W = static_cast<int32_t>(g.n[g.rank - 1]);
  const int32_t s_lo = static_cast<int32_t>(g.single_lo), s_hi = static_cast<int32_t>(g.single_hi);
  acc_t<T> acc[VEC];
#pragma unroll
  for (int k = 0; k < VEC; ++k) acc[k] = 0;
#pragma unroll 1
  for (int i = 0; i < n; ++i) {
    const T* row = dy + (i == 0 ? off[0] : i == 1 ? off[1] : i == 2 ? off[2] : off[3]);
    Load16 l;
    const bool vec = x0 >= max(0, -cc.lo) && x0 + VEC <= min(W, cc.m - cc.lo) &&
                     issue16(row + (cc.lo + x0), g.src_lo, g.src_hi, &l);
    Vec16<T> v;
    v.u = vec ? take16(l) : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      const int32_t x = x0 + k;
      if (x < 0 || x >= W) continue;
      if (vec && x >= s_lo && x < s_hi)
        acc[k] += to_acc(v.e[k]);
      else
        acc[k] = add_col_cells<T>(cc, row, 1, x, acc[k]);
    }
  }
  Vec16<T> out;
#pragma unroll
  for (int k = 0; k < VEC; ++k) out.e[k] = from_acc<T>(acc[k]);
  if (x0 >= 0 && x0 + VEC <= W) {
    *reinterpret_cast<uint4*>(dx + (xo + x0)) = out.u;  // 16-byte aligned: x0 is a chunk start
  } else {
#pragma unroll
    for (int k = 0; k < VEC; ++k)
      if (x0 + k >= 0 && x0 + k < W) dx[xo + x0 + k] = out.e[k];
  }
}

// A deferred chunk: its row's set-up, then seg_chunk. Out of line: the main loop's registers
// stay free of it.
template <class T>
__device__ __noinline__ void seg_deferred_chunk(const PadGeometry& g, int32_t r, int32_t x0) {
  int32_t xo, off[4];
  int n;
  bwd_row<int32_t>(g, r, &xo, off, &n);
  seg_chunk<T>(g, static_cast<const T*>(g.src), static_cast<T*>(g.dst), n, off, xo, x0);
}

// 3 blocks/SM (80 registers, no spill in the main loop). Measured on the H200 (bf16 / f32
// [32, 64, 256, 256] constant): 4 tasks in flight at 3 blocks 86 / 92 % of copy; 2 tasks at 4
// blocks (64 registers, spills) 74.5 / 81.5 %.
template <class T>
__global__ void __launch_bounds__(kPadThreads, 3) pad_segment_backward_kernel(const __grid_constant__ PadGeometry g) {
  constexpr int VEC = 16 / sizeof(T);
  constexpr int U = kSegTasksInFlight;
  __shared__ SegEntry queue[kPadThreads / 32][kSegQueue];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t t0_64 = (int64_t{blockIdx.x} * (kPadThreads / 32) + warp) * g.seg_tpw;
  if (t0_64 >= g.seg_tasks) return;  // uniform per warp
  const auto t0 = static_cast<uint32_t>(t0_64);
  const auto t_end = static_cast<uint32_t>(min(g.seg_tasks, t0_64 + g.seg_tpw));
  const FastDiv segs = g.seg_per_row;
  const uint32_t r_first = segs.div(t0), r_last = segs.div(t_end - 1);
  const T* __restrict__ dy = static_cast<const T*>(g.src);
  T* __restrict__ dx = static_cast<T*>(g.dst);

  // lane i: dx row r_first + i (its offset, first preimage row and their count, 16-byte phase)
  int32_t my_xo = 0, my_o0 = 0;
  int my_n = 0, my_ph = 0;
  if (r_first + lane <= r_last) {
    int32_t off[4];
    bwd_row<int32_t>(g, static_cast<int32_t>(r_first + lane), &my_xo, off, &my_n);
    my_o0 = off[0];
    my_ph = static_cast<int>((reinterpret_cast<uintptr_t>(dx + my_xo) / sizeof(T)) % VEC);
  }
  const int glog = g.seg_group_log2;
  const int slot = lane >> glog, lg = lane & ((1 << glog) - 1);
  const uint32_t per_u = 32u >> glog;  // tasks per batch step
  const int32_t W = static_cast<int32_t>(g.n[g.rank - 1]);
  const int32_t s_lo = static_cast<int32_t>(g.single_lo), s_hi = static_cast<int32_t>(g.single_hi);
  const int32_t lo = g.col_cells.lo;
  const unsigned lanes_below = (1u << lane) - 1u;

  SegEntry* q = queue[warp];
  int queued = 0;  // warp-uniform
  // Each lane sets up its entry's row again (rare: a lane of the warp, not every lane, pays it).
  auto flush = [&]() {
    __syncwarp();
    for (int i = lane; i < queued; i += 32) {
      const SegEntry e = q[i];
      seg_deferred_chunk<T>(g, static_cast<int32_t>(r_first) + e.rr, e.x0);
    }
    __syncwarp();
    queued = 0;
  };

  const auto src_lo = reinterpret_cast<uintptr_t>(g.src_lo), src_hi = reinterpret_cast<uintptr_t>(g.src_hi);
  const int last_lg = (1 << glog) - 1;
  for (uint32_t tb = t0; tb < t_end; tb += U * per_u) {  // uniform trip count
    // A fast chunk's 16 bytes are bytes [sh, sh + 16) of the aligned pair a:b. Each lane loads
    // its own aligned block a; b is the next lane's a (shuffled down), except where that lane
    // is not a fast chunk of the same task (the group's last lane, a deferred neighbour):
    // there the lane loads b itself.
    uint4 a[U], b[U];
    unsigned sh[U];
    int32_t dxo[U];
    unsigned fast = 0, own_b = 0;
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const uint32_t t = tb + u * per_u + slot;
      const bool act = t < t_end;
      const uint32_t r = segs.div(t);
      const int rr = act ? static_cast<int>(r - r_first) : 0;
      const int32_t seg = static_cast<int32_t>(t - r * segs.d);
      const int n = __shfl_sync(0xffffffffu, my_n, rr);
      const int32_t o0 = __shfl_sync(0xffffffffu, my_o0, rr);
      const int32_t xo = __shfl_sync(0xffffffffu, my_xo, rr);
      const int ph = __shfl_sync(0xffffffffu, my_ph, rr);
      const int32_t x0 = ((seg << glog) + lg) * VEC - ph;
      const bool in_row = act && x0 < W && x0 + VEC > 0;
      dxo[u] = xo + x0;
      const uintptr_t addr = reinterpret_cast<uintptr_t>(dy + (o0 + lo + x0));
      const uintptr_t base = addr & ~uintptr_t{15};
      sh[u] = static_cast<unsigned>(addr - base);
      const bool pair = sh[u] != 0;  // then the pair must lie inside the dy view
      const bool f = in_row && n == 1 && x0 >= s_lo && x0 + VEC <= s_hi && (!pair || (base >= src_lo && base + 32 <= src_hi));
      const bool next_f = __shfl_down_sync(0xffffffffu, f, 1);
      const bool ob = f && pair && (lg == last_lg || !next_f);
      a[u] = b[u] = make_uint4(0, 0, 0, 0);  // defined on every path: predicated loads, no spill
      if (f) a[u] = __ldg(reinterpret_cast<const uint4*>(base));
      if (ob) b[u] = __ldg(reinterpret_cast<const uint4*>(base) + 1);
      fast |= static_cast<unsigned>(f) << u;
      own_b |= static_cast<unsigned>(ob) << u;
      const bool deferred = in_row && !f;
      const unsigned ballot = __ballot_sync(0xffffffffu, deferred);
      if (deferred) q[queued + __popc(ballot & lanes_below)] = SegEntry{x0, rr};
      queued += __popc(ballot);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      uint4 nb;
      nb.x = __shfl_down_sync(0xffffffffu, a[u].x, 1);
      nb.y = __shfl_down_sync(0xffffffffu, a[u].y, 1);
      nb.z = __shfl_down_sync(0xffffffffu, a[u].z, 1);
      nb.w = __shfl_down_sync(0xffffffffu, a[u].w, 1);
      if (!(own_b >> u & 1u)) b[u] = nb;
      if (fast >> u & 1u) *reinterpret_cast<uint4*>(dx + dxo[u]) = window16(a[u], b[u], sh[u]);
    }
    if (queued > kSegFlushAt) flush();
  }
  if (queued > 0) flush();
}

}  // namespace

template <class T>
cudaError_t launch_segment_backward(const PadGeometry& g, cudaStream_t s) {
  return launch_kernel(pad_segment_backward_kernel<T>, dim3(static_cast<unsigned>(g.seg_blocks)),
                                        dim3(kPadThreads), 0, s, g);
}
template cudaError_t launch_segment_backward<float>(const PadGeometry&, cudaStream_t);
template cudaError_t launch_segment_backward<double>(const PadGeometry&, cudaStream_t);
template cudaError_t launch_segment_backward<__half>(const PadGeometry&, cudaStream_t);
template cudaError_t launch_segment_backward<__nv_bfloat16>(const PadGeometry&, cudaStream_t);

}  // namespace baracuda::detail
