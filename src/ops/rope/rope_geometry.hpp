// RoPE launch parameters: what the host resolves at run() and the kernel reads (by value).
//
// Work split: a group of `group_lanes` lanes (power of two <= 32) owns one token (b, s) and
// walks its items (head of q then k, chunk) — a rotary chunk is NP pairs read as two
// NP-element vectors (kHalf: at f and f + R/2; kInterleaved: two adjacent vectors), a
// pass-through chunk copies up to 2·NP elements of [R, D). A lane whose chunk stays the same
// across its items keeps that chunk's (cos, sign·sin) in registers for the whole token.
#pragma once

#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/ops/rope.hpp"
#include "core/launch_fn.hpp"

namespace baracuda::detail {

inline constexpr int kRopeThreads = 256;       // register-staged kernel
inline constexpr int kRopeAsyncThreads = 128;  // cp.async-staged kernel (the smaller block: grid bound)

struct RopeParams {
  const void* in[2] = {};  // [0] q side, [1] k side
  void* out[2] = {};
  int64_t in_sb[2] = {}, in_ss[2] = {}, in_sh[2] = {};  // element strides of b, s, h
  int64_t out_sb[2] = {}, out_ss[2] = {}, out_sh[2] = {};
  int64_t seq = 0, tokens = 0;      // tokens = B·S
  int heads_q = 0, heads = 0;       // heads = Hq + Hk
  int half_rot = 0, rot = 0, head_dim = 0;
  int chunks_rot = 0, chunks_pass = 0, group_lanes = 32;
  // positions (rank 0: position_offset + s)
  const void* pos = nullptr;
  int pos_rank = 0, pos_i64 = 1;
  int64_t pos_sb = 0, pos_ss = 0, pos_offset = 0;
  // angles: cache rows, or computed from inv_freq
  const void* cos = nullptr;
  const void* sin = nullptr;
  int cache_dtype = -1;  // DType of the cache, -1 = computed angles
  int64_t cache_rows = 0, cos_sr = 0, cos_sf = 0, sin_sr = 0, sin_sf = 0;
  double sign = 1.0, mscale = 1.0;
  double inv_freq[kRopeMaxComputedPairs] = {};
};

using RopeLaunchFn = LaunchFn<RopeParams>;

// Widest pairs-per-chunk the dtype's 16-byte vectors allow.
constexpr int rope_max_np(DType t) { return 16 / static_cast<int>(dtype_size(t)); }
// Kernel for (dtype, pairing, NP in {1, 2, 4, 8} not above rope_max_np); nullptr otherwise.
RopeLaunchFn rope_launcher(DType t, RopePairing pairing, int np);

}  // namespace baracuda::detail
