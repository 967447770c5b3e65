// What the host hands the elementwise kernels (no CUDA headers: included by g++ host code).
//
// Paths:
//   flat     [rows, cols], every operand a 16-byte aligned run per row (the contiguous case is
//            rows = 1; GLU halves and row-broadcast biases have rows > 1): one grid row per row.
//   rows     [rows, cols] where every tensor operand has unit stride along cols (or stride 0:
//            one value per row) and 16-byte aligned rows; vectorized along cols. Serves short
//            rows, per-row (column-broadcast) and literal scalar operands.
//   tile     2-D with a row-fastest (transposed) operand.
//   strided  any coalesced layout up to rank 8, per-operand dtypes converted on load/store.
// All use 32-bit index math; the host splits problems whose offsets do not fit.
#pragma once

#include <cstddef>
#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/tensor.hpp"
#include "core/fast_div.hpp"

namespace baracuda::ew {

inline constexpr int kMaxIn = 4;   // forward: 3 operands; backward: g + 3 operands
inline constexpr int kMaxOut = 3;  // backward of a ternary op
inline constexpr int kLiteralSlot = 4;  // EwScalars slots 4..7 hold literal scalar operands

using FastDiv = ::baracuda::detail::FastDiv;  // n / d for n < 2^31 by multiply-high (core/fast_div.hpp)

// Parameters and literal scalars in every compute type (the kernel reads the one it uses).
struct EwScalars {
  double d[8] = {};
  float f[8] = {};
  int64_t i[8] = {};
};

enum OperandKind : uint8_t { kVector = 0, kRowScalar = 1, kLiteral = 2 };

struct EwRows {
  uint32_t cols = 0;          // logical columns per row
  uint32_t vecs_per_row = 0;  // ceil(cols / VEC)
  FastDiv vpr;                // divides by vecs_per_row
  uint32_t total = 0;         // rows * vecs_per_row (< 2^31)
  uint32_t flat_rows = 1;     // flat kernel: rows in this launch (grid.y), each g.cols long
  const void* in[kMaxIn] = {};
  int64_t in_rs[kMaxIn] = {};  // row stride in elements
  uint8_t in_kind[kMaxIn] = {};
  void* out[kMaxOut] = {};
  int64_t out_rs[kMaxOut] = {};
  uint8_t out_on[kMaxOut] = {};  // 0: output not wanted (backward)
  uint8_t sat_fp8 = 0;
  EwScalars s;
};

struct EwStrided {
  int rank = 1;            // coalesced, innermost first
  uint32_t numel = 0;      // < 2^31
  uint32_t size[kMaxRank] = {};
  FastDiv div[kMaxRank];
  int32_t in_st[kMaxIn][kMaxRank] = {};
  int32_t out_st[kMaxOut][kMaxRank] = {};
  const void* in[kMaxIn] = {};
  uint8_t in_dt[kMaxIn] = {};
  uint8_t in_kind[kMaxIn] = {};  // kVector or kLiteral
  void* out[kMaxOut] = {};
  uint8_t out_dt[kMaxOut] = {};
  uint8_t out_on[kMaxOut] = {};
  uint8_t sat_fp8 = 0;
  EwScalars s;
};

// 2-D problems where some operand walks the rows fastest (a transposed view): 32 x 32 tiles,
// such operands staged through shared memory so every global access is coalesced.
struct EwTile {
  int64_t rows = 0, cols = 0;
  const void* in[kMaxIn] = {};
  int64_t in_rs[kMaxIn] = {}, in_cs[kMaxIn] = {};
  uint8_t in_dt[kMaxIn] = {}, in_kind[kMaxIn] = {}, in_t[kMaxIn] = {};  // in_t: row-fastest (staged)
  void* out[kMaxOut] = {};
  int64_t out_rs[kMaxOut] = {}, out_cs[kMaxOut] = {};
  uint8_t out_dt[kMaxOut] = {}, out_on[kMaxOut] = {}, out_t[kMaxOut] = {};
  uint8_t sat_fp8 = 0;
  EwScalars s;
};

// The backward of an op with one broadcast operand (output `red`), its gradient summed inside
// the same pass (bcast_bwd_kernel): the problem coalesces to [rows, cols] and that operand is
// [1, cols] (row mode: a sum over rows, a bias) or [rows, 1] (col mode: a sum along each row).
// Blocks of kBcastThreads threads cover kBcastThreads x VEC columns and rows_per_block rows;
// each writes one partial per reduced element (row mode [grid.y, cols], col mode [rows, grid.x],
// in the compute type), and a second kernel sums the partials of each element in a fixed order
// into `grad`. Operands as in EwRows (vectors along cols, or one value per row), 64-bit offsets.
inline constexpr int kBcastThreads = 128;
inline constexpr int kBcastColRows = 32;  // col mode: rows per block (one shared sum per row and thread)
struct EwBcast {
  uint32_t rows = 0, cols = 0;
  uint32_t rows_per_block = 0;
  uint32_t grid_x = 0, grid_y = 0;
  uint8_t col_mode = 0;
  uint8_t red = 0;
  void* part = nullptr;  // partial sums, compute type
  void* grad = nullptr;  // the reduced gradient: cols (row mode) or rows (col mode) contiguous elements
  const void* in[kMaxIn] = {};
  int64_t in_rs[kMaxIn] = {};
  uint8_t in_kind[kMaxIn] = {};
  void* out[kMaxOut] = {};
  int64_t out_rs[kMaxOut] = {};
  uint8_t out_on[kMaxOut] = {};
  EwScalars s;
};

using EwRowsFn = int (*)(const EwRows&, cudaStream_t);
using EwBcastFn = int (*)(const EwBcast&, cudaStream_t);
using EwTileFn = int (*)(const EwTile&, cudaStream_t);
using EwStridedFn = int (*)(const EwStrided&, cudaStream_t);

// Compute type of the strided path.
enum class EwCompute : uint8_t { kF32, kF64, kI64 };

// The kernels of one (op, direction): rows kernel for one storage dtype pair (null when that
// pair has none) and the strided kernel for one compute type.
struct EwKernels {
  EwRowsFn rows = nullptr;
  EwRowsFn flat = nullptr;  // same storage types, every operand a vector along cols
  int rows_vec = 0;         // elements per vector of the rows / flat kernels
  int flat_block = 0;       // elements per block of the flat kernel (rows shorter: rows kernel)
  EwStridedFn strided = nullptr;
  EwTileFn tile = nullptr;  // f32 compute only
  bool tile_pairs = false;  // the tile kernel moves 2-byte element pairs: try_tile checks their alignment
  EwBcastFn bcast = nullptr;  // backward, f32 / f16 / bf16 storage: one broadcast operand's gradient summed in the pass
  int bcast_vec = 0;          // its elements per thread (kBcastThreads x bcast_vec columns per block)
  DType rows_in = DType::c128, rows_out = DType::c128;  // the storage dtypes the rows kernel takes
  DType rows_out1 = DType::c128;  // output 1's storage dtype when it is not rows_out (frexp: i32)
};

// Defined by the instantiation units (ew_inst_<group>.cu). rows_in/rows_out: the storage dtypes
// of a uniform-dtype problem (rows == null if the op has no kernel for them).
EwKernels ew_find_kernels(int op, bool backward, DType rows_in, DType rows_out, EwCompute c);
// frexp's two-result kernels: rows (mantissa in the input's storage dtype ri, exponent i32)
// and strided.
EwKernels ew_frexp_kernels(DType ri, EwCompute c);

}  // namespace baracuda::ew
