// What NonzeroPlan hands its kernels (no CUDA headers). Positions are split into tiles of
// kThreads · kItems; warp w of a tile owns kItems · 32 consecutive positions, 32 per step (lane
// = position, so reads and writes coalesce; warp order is position order). count pass: per
// tile the flagged positions (warp ballots); an exclusive scan of the tile counts (CUB); write
// pass: the tile's offset, the warps before, the step's ballot below the lane give every
// flagged position its rank; finish: the count, and the rows past it (nonzero, masked_select).
#pragma once

#include <cstddef>
#include <cstdint>

#include "baracuda/core/tensor.hpp"
#include "core/launch_fn.hpp"

namespace baracuda::nzk {

inline constexpr int kThreads = 256;
inline constexpr int kItems = 16;
inline constexpr int64_t kTile = int64_t{kThreads} * kItems;

struct Params {
  int op = 0;  // MaskOp
  int rank = 1;
  int64_t shape[kMaxRank] = {};
  int64_t numel = 0, tiles = 0;
  // the flag operand (nonzero: the input; masked_*: the mask)
  const char* flag = nullptr;
  int flag_es = 1;
  uint64_t flag_bits = 0;
  int64_t flag_stride[kMaxRank] = {};
  int flag_contig = 1;
  // the data (masked_*): input, its element size, source
  const char* in = nullptr;
  int es = 1;
  int64_t in_stride[kMaxRank] = {};
  int in_contig = 1;
  const char* src = nullptr;
  int64_t src_s = 1, source_numel = 0;
  // out: nonzero [max_count, rank] (out_stride[0], [1]); masked_select [max_count] ([0]);
  // masked_scatter [shape] (every axis)
  char* out = nullptr;
  int64_t out_stride[kMaxRank] = {};
  int out_contig = 1;
  int out_cols = 0;  // nonzero: the coordinates per row (the descriptor's rank; 0-d: none)
  int64_t max_count = 0, fill = -1;
  long long* count = nullptr;
  // workspace
  long long* tile_counts = nullptr;   // [tiles + 1]
  long long* tile_offsets = nullptr;  // [tiles + 1]: [tiles] = the total
  void* cub_temp = nullptr;
  size_t cub_bytes = 0;
};
using NonzeroLaunchFn = LaunchFn<Params>;

// The pipeline for data of es bytes (1, 2, 4, 8; nonzero: 8, its coordinates).
NonzeroLaunchFn find_nonzero(int es);
// CUB's scan scratch over n tile counts: a bound without a GPU, and the exact need.
size_t scan_bound(int64_t n);
cudaError_t scan_query(int64_t n, size_t* bytes);

}  // namespace baracuda::nzk
