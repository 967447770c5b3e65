// What GatherPlan and ScatterPlan hand their kernels (no CUDA headers).
//
// Move pass (gather; scatter none; the atomic scatter): the iteration space S as up to kMaxRank
// axes, outermost first, extent-1 axes dropped and nesting axes merged. A unit is one element,
// or VEC elements of a trailing run contiguous in both data operands and constant in the index
// (16 bytes). Per unit: idx_off = Σ c·idx_s, data_off = Σ c·data_s, out_off = Σ c·out_s
// (element offsets; the side the index addresses has stride 0 along dim), then the index entry j
// is normalized (wrap, clamp, check) and the indexed side gets j·dim_s.
//
// Sort pass (ScatterPlan "sort"): positions = the iteration axes that the index varies over
// (elements: all; slices: dim), columns = the others. keys: per position p its target key
// (row-major over self's extents on the position axes, dim's coordinate the index entry; an
// out-of-range entry the sentinel 2^key_bits − 1, sorted last); sort (key, p); segments: one
// thread per (sorted slot, column unit) where a key's run starts combines the run in order.
#pragma once

#include <cstdint>

#include "baracuda/core/tensor.hpp"
#include "core/fast_div.hpp"
#include "core/launch_fn.hpp"

namespace baracuda::gs {

inline constexpr int kThreads = 256;
inline constexpr int kUnitsPerThread = 4;

enum class Reduce : int { kNone = 0, kSum, kProd, kMean, kAmax, kAmin };

struct Axis {
  int64_t n = 1;       // extent (the last axis of a vector pass: in units)
  int64_t data_s = 0;  // gather: input (0 on dim); scatter: src
  int64_t out_s = 0;   // out (scatter: 0 on dim)
  int64_t idx_s = 0;   // index
  detail::FastDiv div;  // n, when the pass has under 2^31 units
};

// The index rule: j valid in [0, n), [−n, n) with wrap; clamp instead of check.
struct IndexRule {
  const void* idx = nullptr;
  int idx64 = 1;
  int wrap = 0;
  int clamp = 0;
  int64_t n = 0;                          // extent along dim of the indexed side
  unsigned long long* invalid = nullptr;  // out-of-range count (optional)
};

struct MoveParams {
  const char* data = nullptr;  // gather: input; scatter: src (null: the value form)
  char* out = nullptr;
  IndexRule rule;
  int64_t dim_s = 0;  // element stride along dim of the indexed side (gather: input; scatter: out)
  int scatter = 0;    // 0: out[o] = data[d + j·dim_s]; 1: out[o + j·dim_s] = data[d]
  int naxes = 0;
  Axis ax[kMaxRank];
  int64_t units = 0;
  int small = 1;       // units < 2^31: FastDiv decomposition
  int narrow = 0;      // small, and every element offset (j·dim_s included) within ±2^31
  int passes = 1;      // move pass: consecutive passes of kThreads · kUnitsPerThread units per block
  int esize = 1;       // element bytes
  uint64_t fill[2] = {};  // one unit of bytes: gather's out-of-range fill / scatter's value
  // atomic scatter
  Reduce reduce = Reduce::kSum;
  int phase = 1;              // 0: targets set to the identity (include_self = false); 1: combine
  uint64_t alpha_bits = 0;    // sum: alpha as the compute type's bits (double or int64)
  int has_alpha = 0;
};
using MoveLaunchFn = LaunchFn<MoveParams>;

// Element size (1, 2, 4, 8) and vector pass -> the move launcher (gather; scatter none).
MoveLaunchFn find_move(int esize, bool vec);
// The atomic scatter for dtype t (sum / prod / amax / amin); vec: 16-byte float sums.
MoveLaunchFn find_atomic(DType t, bool vec);

struct PosAxis {
  int64_t n = 1;       // extent in the iteration space
  int64_t src_s = 0;   // src
  int64_t idx_s = 0;   // index
  int64_t key_n = 1;   // self's extent (the key's digit)
  int64_t key_c = 0;   // the key's weight (row-major over key_n)
  int64_t out_s = 0;   // out
  int is_dim = 0;
};
struct ColAxis {
  int64_t n = 1;  // the last one in units of vec
  int64_t src_s = 0, out_s = 0;
};

struct SortParams {
  IndexRule rule;
  const char* src = nullptr;  // null: the value form
  char* out = nullptr;
  int npos = 0;
  PosAxis pa[kMaxRank];
  int64_t positions = 0;
  int ncol = 0;
  ColAxis ca[kMaxRank];
  int64_t cols = 1;  // column units per target
  int small = 1;      // positions · cols < 2^31: cols_div splits a thread's unit
  detail::FastDiv cols_div;
  int vec = 1;       // elements per column unit
  Reduce reduce = Reduce::kSum;
  int include_self = 1;
  uint64_t value_bits = 0;  // value form: the value in dtype
  uint64_t alpha_bits = 0;  // sum: alpha as the compute type's bits
  int has_alpha = 0;
  // workspace
  int wide = 0;  // u64 keys / i64 positions
  int key_bits = 1;
  void* keys = nullptr;
  void* keys_alt = nullptr;
  void* pos = nullptr;
  void* pos_alt = nullptr;
  void* cub_temp = nullptr;
  size_t cub_bytes = 0;
};
using SortLaunchFn = LaunchFn<SortParams>;

// The sorted scatter for dtype t (reduce none: any dtype, by element size); vec: 16-byte units.
SortLaunchFn find_sorted(DType t, bool vec, bool none);
// keys + sort (gather_scatter_keys.cu): on return p->keys / p->pos hold the sorted pairs.
cudaError_t sort_targets(SortParams* p, cudaStream_t stream);

}  // namespace baracuda::gs
