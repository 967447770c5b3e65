// What CatPlan hands its kernel for one launch (no CUDA headers): up to kMaxCatInputsPerLaunch
// pieces (inputs), each split into tiles of kTileUnits units; a block finds its piece by the
// tiles' prefix.
//
// rows (every view of the launch in row form): a piece is `outer` rows of row_units units, unit
// = 16 bytes (vec) or one element; its row r, unit c is at src + r·src_row + c·unit and lands at
// dst + begin_bytes + r·dst_row + c·unit (byte offsets). Otherwise a strided element walk: a
// piece's element e is decomposed over the output's extents with shape[dim] = size.
#pragma once

#include <cstdint>

#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/cat.hpp"
#include "core/fast_div.hpp"
#include "core/launch_fn.hpp"

namespace baracuda::catk {

inline constexpr int kThreads = 128;
inline constexpr int kUnitsPerThread = 4;
inline constexpr int64_t kTileUnits = int64_t{kThreads} * kUnitsPerThread;

struct CatPiece {
  const char* src = nullptr;
  int64_t first_tile = 0;  // tiles of the pieces before this one in the launch
  int64_t units = 0;       // rows · row_units (rows) or the piece's elements (walk)
  int64_t row_units = 1;   // rows: units per row
  int64_t src_row = 0;     // rows: bytes between rows
  int64_t begin = 0;       // the first index along dim in the output
  detail::FastDiv row_div; // rows: divides by row_units when units < 2^31
  bool vec = false;        // rows: 16-byte units
  int64_t stride[kMaxRank] = {};  // walk: src's element strides at the output's axes (stack: 0 on dim)
  int64_t size = 0;               // walk: extent along dim
};

struct CatParams {
  char* dst = nullptr;
  int esize = 1;
  bool rows = true;
  int64_t dst_row = 0;  // rows: bytes between output rows
  int64_t inner = 1;    // rows: elements after dim (one index along dim = inner elements)
  int rank = 0, dim = 0;
  int64_t shape[kMaxRank] = {};       // walk: the output's extents
  int64_t dst_stride[kMaxRank] = {};  // walk: the output's element strides
  int n = 0;
  int64_t tiles = 0;
  CatPiece piece[kMaxCatInputsPerLaunch];
};
using CatLaunchFn = LaunchFn<CatParams>;

// The launcher for an element size (1, 2, 4, 8 bytes); null for any other.
CatLaunchFn find_cat(int esize);

}  // namespace baracuda::catk
