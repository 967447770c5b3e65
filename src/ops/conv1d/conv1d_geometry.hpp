// Causal conv1d launch parameters: what the host resolves at run() and the kernels read.
//
// Two kernel shapes, chosen at run() by which axis of the big operands has unit stride:
//   time: a warp owns one (b, c) row segment of warp_steps = conv_time_task_bytes / element size
//         steps, NE consecutive steps per lane per vector; the W−1 inputs before a lane's vector
//         come from neighbouring lanes by shuffle (and the backward's W−1 gradients after it
//         the same way). The backward's task takes several whole rows of one channel where
//         rows are shorter than warp_steps (task_rows).
//   chan: a lane owns NE consecutive channels and walks warp_steps time steps of one batch row
//         with a ring of the last KW inputs in registers; a block is 4 warps on consecutive
//         time ranges (its backward partial sums are added across the 4 in shared memory).
// Views with neither unit stride run the time kernel with NE = 1 (scalar accesses).
// KW (4 or 8) is the register window: a width W <= KW runs in it with the missing taps skipped.
// The backward writes per-(segment, channel) partial dweight/dbias rows into the workspace and a
// second kernel adds them in a fixed order (deterministic).
#pragma once

#include <cstddef>
#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/ops/causal_conv1d.hpp"
#include "core/launch_fn.hpp"


namespace baracuda::detail {

inline constexpr int kConvThreads = 128;   // 4 warps
// Time kernel: bytes of its row each warp task covers. A task's first loads are not overlapped
// with its own work (its ramp); longer tasks amortize it but leave a longer last wave. The
// backward's ramp and epilogue cost more: 16 KB for 16-bit data (bf16 8192 steps), 8 KB
// otherwise; the forward takes 4 KB. H200, % of copy, after the set-up loads were batched:
//   backward 8 / 16 KB: bf16 [4, 8192, 4096] 79.2 / 84.0, [1, 8192, 32768] 82.7 / 88.4;
//                       f32 [4, 8192, 4096] 97.0 / 94.9;
//   forward 4 / 8 KB: bf16 [4, 8192, 4096] 89.9 / 90.7, [1, 8192, 32768] 93.4 / 93.4,
//                     [8, 4096, 2048] 85.3 / 83.9; f32 [4, 8192, 4096] 94.1 / 92.2.
// (Before, 4 KB backward tasks: bf16 [4, 8192, 4096] 66 %; 12 KB splits an 8192-step row unevenly.)
constexpr int64_t conv_time_task_bytes(int es, bool backward) { return backward ? (es == 2 ? 16384 : 8192) : 4096; }
inline constexpr int kTimeBlocksPerSm = 4;  // the time kernels' launch bounds
// Chan kernels: time steps per warp (a block does 4·that). The forward's short warps keep the grid
// at several waves: 32 steps for 16-bit data, 64 otherwise (bf16 fwd, % of copy, 16 / 24 / 32 /
// 40 / 48 / 64 steps: [4, 8192, 4096] 80 / 87 / 89-90 / 89 / 88 / 87-88, [8, 4096, 2048]
// 74 / 79 / 83 / 81 / 79 / 79-80; f32 [4, 8192, 4096] at 32 / 64: 88.0 / 89.2-89.9). The
// backward's warps are long (its per-block set-up — taps, the ring of previous inputs, the
// pipeline's first loads, the partial-sum epilogue — costs more), 512 steps unless 256 alone
// gives at least two full waves of blocks (H200 bf16, % of copy, steps 128 / 256 / 512, measured
// before the set-up loads were batched: [4, 8192, 4096] 76 / 82 / 77, [1, 8192, 32768]
// 83 / 88 / 89, [8, 4096, 2048] 69 / 69 / 77).
inline constexpr int64_t kChanStepsFwd = 64, kChanStepsFwd16 = 32;
inline constexpr int64_t kChanStepsBwdShort = 256, kChanStepsBwdLong = 512;
inline constexpr int kChanBwdBlocksPerSm = 3;  // bwd_chan's launch bounds

inline constexpr int kConvMaxTaps = kCausalConv1dMaxWidth;

enum class ConvKernel : int { kTime, kChan };

struct Conv1dParams {
  // (b, c, t) element strides of the [B, C, L]-indexed views
  const void* x = nullptr;
  int64_t xs[3] = {};
  const void* dy = nullptr;  // backward
  int64_t dys[3] = {};
  void* out = nullptr;  // y (forward) or dx (backward)
  int64_t outs[3] = {};
  const void* w = nullptr;  // [C, W]
  int64_t ws[2] = {};
  const void* bias = nullptr;  // nullptr: no bias
  int64_t bs = 0;
  int wdt = 0;  // DType of weight / bias / their gradients, as int
  const void* s0 = nullptr;  // initial states [B, C, W−1] (nullptr: zeros)
  int64_t s0s[3] = {};
  void* sfin = nullptr;  // forward: final states out
  int64_t sfins[3] = {};
  const void* dsfin = nullptr;  // backward: gradient of the final states (nullptr: none)
  int64_t dsfins[3] = {};
  void* ds0 = nullptr;  // backward: gradient of the initial states
  int64_t ds0s[3] = {};
  void* partial = nullptr;  // backward: [parts, C, W+1] in the accumulator type
  // backward, time kernel with a task per channel (task_rows = B, segs = 1): the task writes
  // dweight[c, ·] and dbias[c] itself (weight dtype wdt), with no partial rows or reduction
  int direct = 0;
  void* dw = nullptr;
  int64_t dws[2] = {};
  void* db = nullptr;  // nullptr: no bias
  int64_t dbs = 0;
  int64_t B = 0, C = 0, L = 0;
  int W = 0;
  int silu = 0;
  int64_t tasks = 0;  // time kernel: warp tasks (B·C·segs, or C·row_groups);  chan kernel: blocks
  // Time backward with whole-row tasks (segs = 1): a task takes task_rows consecutive batch rows
  // of one channel (row_groups = ceil(B / task_rows) tasks per channel) and runs one staging
  // pipeline through them, so only its first row waits for its loads. 1 elsewhere.
  int64_t task_rows = 1, row_groups = 0;
  int64_t segs = 0;   // partial rows per batch row: time: ceil(L / warp_steps); chan: ceil(L / (4·warp_steps))
  int64_t cblocks = 0;  // chan kernel: channel blocks per (b, time block)
  int64_t warp_steps = 0;  // time steps per warp: time kernel per task, chan kernel per warp (a block does 4·that)
};

// Update (decode) parameters.
struct Conv1dUpdateParams {
  const void* x = nullptr;
  int64_t xs[3] = {};  // (b, c, i)
  void* y = nullptr;
  int64_t ys[3] = {};
  void* state = nullptr;
  int64_t ss[3] = {};  // (row, c, slot)
  const void* w = nullptr;
  int64_t ws[2] = {};
  const void* bias = nullptr;
  int64_t bs = 0;
  int wdt = 0;
  const int32_t* seqlens = nullptr;  // circular mode
  int64_t seqlens_s = 0;
  const int32_t* indices = nullptr;  // state rows
  int64_t indices_s = 0;
  int64_t B = 0, C = 0, n = 0, S = 0, state_rows = 0;
  int W = 0;
  int silu = 0;
};

using Conv1dLaunchFn = LaunchFn<Conv1dParams>;
using Conv1dUpdateLaunchFn = LaunchFn<Conv1dUpdateParams>;

// Elements per vector: the time kernel uses 16-byte vectors; the chan kernel keeps KW·NE
// values per register ring (the forward two rings, the backward four) and so narrows NE to
// bound registers: NE·KW <= 16 (bf16 at KW = 4: 8-byte vectors, 7 blocks/SM instead of 4).
// `es` is the element size in bytes.
constexpr int conv_time_ne(int es) { return 16 / es; }
constexpr int conv_chan_ne(int es, int kw, bool backward) {
  const int v = 16 / es, r = 16 / kw;
  (void)backward;
  return v < r ? v : r;
}
constexpr int conv_kw(int width) { return width <= 4 ? 4 : 8; }

// Forward / backward main kernel for (dtype, kernel, vectorized or scalar, width): width 4 runs
// a kernel compiled for exactly 4 taps (Mamba's width; no per-tap width test), widths 2-3 the
// KW = 4 window with the missing taps skipped at run time, widths 5-8 the KW = 8 window.
Conv1dLaunchFn conv1d_fwd_launcher(DType t, ConvKernel k, bool vec, int width);
Conv1dLaunchFn conv1d_bwd_launcher(DType t, ConvKernel k, bool vec, int width);
Conv1dUpdateLaunchFn conv1d_update_launcher(DType t, int width);  // the window of conv_kw(width)

// dweight[c, k] (k < W) and dbias[c] from `parts` partial rows [parts, C, W+1].
struct Conv1dReduceParams {
  const void* partial = nullptr;
  int64_t parts = 0, C = 0;
  int W = 0;
  void* dw = nullptr;
  int64_t dws[2] = {};
  void* db = nullptr;  // nullptr: no bias
  int64_t dbs = 0;
  int wdt = 0;
};
cudaError_t conv1d_reduce_launch(DType t, const Conv1dReduceParams& p, cudaStream_t s);

}  // namespace baracuda::detail
