// Device helpers the pad kernels share (pad_warprows.cu, pad_flat.cu, pad_segments.cu,
// pad_staged.cu, pad_pairs.cu).
#pragma once

#include <cstdint>

#include "ops/pad/pad_geometry.hpp"

namespace baracuda::detail {

constexpr int kConstant = static_cast<int>(PadMode::kConstant);
constexpr int kReflect = static_cast<int>(PadMode::kReflect);
constexpr int kReplicate = static_cast<int>(PadMode::kReplicate);

// Source coordinate of padded coordinate o along one axis; -1 means "fill" (constant mode).
template <class Idx>
__device__ __forceinline__ Idx pad_source(int mode, Idx n, Idx lo, Idx o) {
  Idx i = o - lo;
  if (mode == kConstant) return (i >= 0 && i < n) ? i : Idx(-1);
  if (mode == kReflect) return i < 0 ? -i : (i >= n ? 2 * (n - 1) - i : i);
  if (mode == kReplicate) return i < 0 ? Idx(0) : (i >= n ? n - 1 : i);
  return i < 0 ? i + n : (i >= n ? i - n : i);  // circular: wraps at most once (validated)
}

// Row setup shared by both directions: decompose the row index over the row axes of the
// destination and accumulate per-axis source/destination offsets through `axis(d, coord)`.
// With 32-bit indices the divisions go through the host-made FastDiv of each row axis.
template <class Idx, class F>
__device__ __forceinline__ void for_row_axes(const PadGeometry& g, Idx r, bool dst_is_x, F&& axis) {
#pragma unroll
  for (int d = kMaxRank - 2; d >= 0; --d) {
    if (d < g.rank - 1) {
      if constexpr (sizeof(Idx) == 4) {
        const uint32_t q = g.row_div[d].div(static_cast<uint32_t>(r));
        axis(d, static_cast<Idx>(static_cast<uint32_t>(r) - q * g.row_div[d].d));
        r = static_cast<Idx>(q);
      } else {
        const Idx ext = static_cast<Idx>(dst_is_x ? g.n[d] : g.m[d]);
        const Idx coord = r % ext;
        r /= ext;
        axis(d, coord);
      }
    }
  }
}

// The source coordinate of padded coordinate o along one axis with no branch on the mode: the
// unpadded coordinate i = o - lo itself inside [0, n), else a·i + b of the side it falls on
// (constant: -1, the fill; reflect: -i and 2(n-1) - i; replicate: 0 and n-1; circular: i + n
// and i - n). Same values as pad_source.
struct AxisMap {
  int32_t n, lo, al, bl, ah, bh;
  __device__ __forceinline__ int32_t operator()(int32_t o) const {
    const int32_t i = o - lo;
    const bool low = i < 0;
    const int32_t side = (low ? al : ah) * i + (low ? bl : bh);  // both computed: no branch
    return static_cast<uint32_t>(i) < static_cast<uint32_t>(n) ? i : side;
  }
};
__device__ __forceinline__ AxisMap axis_map(int mode, int32_t n, int32_t lo) {
  switch (mode) {
    case kConstant: return {n, lo, 0, -1, 0, -1};
    case kReflect: return {n, lo, -1, 0, -1, 2 * (n - 1)};
    case kReplicate: return {n, lo, 0, 0, 0, n - 1};
    default: return {n, lo, 1, n, 1, -n};  // circular
  }
}

// The x offset of the forward's destination row r (32-bit indices), or kNoRow where the row
// has no source (constant mode: a padding row).
constexpr int32_t kNoRow = INT32_MIN;  // index32 offsets stay above it by 2^16
__device__ __forceinline__ int32_t fwd_row_source(const PadGeometry& g, int32_t r) {
  int32_t xo = 0;
  bool ok = true;
  for_row_axes<int32_t>(g, r, false, [&](int d, int32_t o) {
    const int32_t s = axis_map(g.mode, static_cast<int32_t>(g.n[d]), static_cast<int32_t>(g.lo[d]))(o);
    ok = ok && s >= 0;
    xo += s * static_cast<int32_t>(g.xs[d]);
  });
  return ok ? xo : kNoRow;
}

// The unsigned word of one element of kBytes bytes (the forward moves raw bits).
template <int kBytes> struct WordOf;
template <> struct WordOf<1> { using type = uint8_t; };
template <> struct WordOf<2> { using type = uint16_t; };
template <> struct WordOf<4> { using type = uint32_t; };
template <> struct WordOf<8> { using type = uint64_t; };

__device__ __forceinline__ uint32_t fshr(uint32_t lo, uint32_t hi, unsigned bits) { return __funnelshift_r(lo, hi, bits); }

// 16 bytes starting at byte `s` (0 <= s < 16) of the 32 bytes a:b, without branches: the word
// offset s / 4 is picked by selects (a switch on it made ptxas spill the loaded words of the
// segment backward's batch).
__device__ __forceinline__ uint4 window16(const uint4 a, const uint4 b, unsigned s) {
  const unsigned r = (s & 3u) * 8u;
  uint32_t w0 = a.x, w1 = a.y, w2 = a.z, w3 = a.w, w4 = b.x, w5 = b.y, w6 = b.z, w7 = b.w;
  if (s & 8u) w0 = w2, w1 = w3, w2 = w4, w3 = w5, w4 = w6, w5 = w7;
  if (s & 4u) w0 = w1, w1 = w2, w2 = w3, w3 = w4, w4 = w5;
  return make_uint4(fshr(w0, w1, r), fshr(w1, w2, r), fshr(w2, w3, r), fshr(w3, w4, r));
}

// 16 bytes of T: the unit of a vector access.
template <class T>
union Vec16 {
  uint4 u;
  T e[16 / sizeof(T)];
};

// 16 consecutive bytes at p, read with aligned 16-byte loads only, in two steps so that a
// thread can issue all its loads before it consumes any: issue16 loads the aligned block at p,
// or the two around it (which must lie inside [lo, hi), else it returns false and loads
// nothing); take16 assembles the bytes once the loads have landed.
struct Load16 {
  uint4 a, b;
  unsigned shift;
};
__device__ __forceinline__ bool issue16(const void* p, const void* lo, const void* hi, Load16* l) {
  const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
  const uintptr_t base = addr & ~uintptr_t{15};
  l->shift = static_cast<unsigned>(addr - base);
  if (l->shift == 0) {
    l->a = __ldg(reinterpret_cast<const uint4*>(base));
    l->b = l->a;
    return true;
  }
  if (base < reinterpret_cast<uintptr_t>(lo) || base + 32 > reinterpret_cast<uintptr_t>(hi)) return false;
  l->a = __ldg(reinterpret_cast<const uint4*>(base));
  l->b = __ldg(reinterpret_cast<const uint4*>(base) + 1);
  return true;
}
__device__ __forceinline__ uint4 take16(const Load16& l) { return window16(l.a, l.b, l.shift); }

// x's cells along one axis, in order: [la, la + ln), the identity x + lo when id,
// [ha, ha + hn).
struct XCells {
  int32_t la, ln, ha, hn;
  bool id;
};
__device__ __forceinline__ XCells x_cells(const PadColCells& cc, int32_t x) {
  XCells r;
  r.la = cc.pl * x + cc.ql;
  r.ln = static_cast<uint32_t>(x - cc.l0) < static_cast<uint32_t>(cc.lw) ? cc.llen : 0;
  r.ha = cc.ph * x + cc.qh;
  r.hn = static_cast<uint32_t>(x - cc.h0) < static_cast<uint32_t>(cc.hw) ? cc.hlen : 0;
  r.id = static_cast<uint32_t>(x + cc.lo) < static_cast<uint32_t>(cc.m);
  return r;
}
}  // namespace baracuda::detail
