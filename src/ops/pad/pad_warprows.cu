// The warprows pad kernels: forward and backward for every geometry (32- or 64-bit indices).
//
// Work unit: a warp owns up to 32 destination rows (one per lane for the row set-up: index
// decomposition and per-axis source/preimage offsets, computed once and handed to the other
// lanes with warp shuffles) times a tile of 16-byte column chunks. Chunks are aligned to 16-byte
// destination addresses when its columns are unit-stride, so full chunks are one vector store.
// The lanes walk the (row, chunk) items of the tile 32 at a time, U items per lane in flight:
// all loads of a batch precede its stores. Interior chunks are a shifted copy (one or two
// aligned 16-byte loads and a funnel shift); chunks at the padded edges go element by element.
// The backward is a gather in three passes per warp (pad_backward_kernel): a core chunk of a
// row with one preimage row copies the dy chunk it came from (exact); a core chunk of an edge
// row sums the dy chunks of its preimage rows; every other element sums its preimage cells in
// a fixed order. No element is written twice, nothing is accumulated with atomics.
#include <cstdint>

#include "core/cuda_types.cuh"
#include "core/launch.cuh"
#include "ops/pad/pad_device.cuh"
#include "ops/pad/pad_geometry.hpp"
#include "ops/pad/pad_preimages.cuh"
#include "ops/pad/pad_warprows.cuh"

namespace baracuda::detail {
namespace {

// Full gather for one dx element: every combination of per-axis preimage cells, in row-major
// order. Used for edge elements (more than one preimage); the common case is a single load.
template <class T, class Idx>
__device__ __noinline__ acc_t<T> pad_gather_all(const PadGeometry& g, const T* __restrict__ dy, Idx r, Idx c) {
  const int R = g.rank;
  Preimages<Idx> P[kMaxRank];
  for (int d = R - 2; d >= 0; --d) {
    const Idx nd = static_cast<Idx>(g.n[d]);
    const Idx x = r % nd;
    r /= nd;
    P[d] = pad_preimages<Idx>(g.mode, nd, g.m[d], g.lo[d], x);
    if (P[d].cnt == 0) return acc_t<T>(0);
  }
  P[R - 1] = pad_preimages<Idx>(g.mode, g.n[R - 1], g.m[R - 1], g.lo[R - 1], c);
  if (P[R - 1].cnt == 0) return acc_t<T>(0);
  int ri[kMaxRank];
  Idx o[kMaxRank];
  for (int d = 0; d < R; ++d) {
    ri[d] = 0;
    o[d] = P[d].a[0];
  }
  acc_t<T> acc = 0;
  for (;;) {
    Idx off = 0;
    for (int d = 0; d < R; ++d) off += o[d] * static_cast<Idx>(g.ys[d]);
    acc += to_acc(dy[off]);
    int d = R - 1;
    for (; d >= 0; --d) {
      if (++o[d] < P[d].b[ri[d]]) break;
      if (++ri[d] < P[d].cnt) {
        o[d] = P[d].a[ri[d]];
        break;
      }
      ri[d] = 0;
      o[d] = P[d].a[0];
    }
    if (d < 0) break;
  }
  return acc;
}

inline constexpr int kItemsInFlight = 4;  // U: items per lane per batch

// (row, index) of a lane's item in a rows x nq grid, advanced by 32 items per step without a
// division when nq >= 32 (at most two wraps per step).
struct ItemCursor {
  int rr, q;
  __device__ __forceinline__ ItemCursor(int f, int nq) : rr(f / nq), q(f - (f / nq) * nq) {}
  __device__ __forceinline__ void step32(int nq) {
    if (nq >= 32) {
      q += 32;
      if (q >= nq) { q -= nq; ++rr; }
      if (q >= nq) { q -= nq; ++rr; }
    } else {
      const int f = rr * nq + q + 32;
      rr = f / nq;
      q = f - rr * nq;
    }
  }
};

// This warp's tile: rows [row0, row0 + nrows), core chunks [q0, q0 + nq); the first column
// tile (edges) also owns the edge elements of its rows (the backward: those left of the core;
// the last tile takes the ones right of it).
struct WarpTile {
  int64_t row0;
  int nrows;
  int64_t q0;
  int nq;
  bool edges;
};

__device__ __forceinline__ bool warp_tile(const PadGeometry& g, WarpTile* t) {
  const int64_t b = blockIdx.x;
  const int64_t tc = b % g.tiles_c;
  const int64_t rg = (b / g.tiles_c) * (kPadThreads / 32) + (threadIdx.x >> 5);
  t->row0 = rg * g.rows_per_warp;
  if (t->row0 >= g.rows) return false;
  t->nrows = static_cast<int>(min(int64_t{g.rows_per_warp}, g.rows - t->row0));
  t->q0 = tc * g.chunks_per_tile;
  t->nq = static_cast<int>(max(int64_t{0}, min(g.chunks_per_tile, g.core_chunks - t->q0)));
  t->edges = tc == 0;
  return true;
}

// First column >= core_lo at which a destination row starting at row_ptr is 16-byte aligned
// (core_lo itself when the columns are strided: no alignment to seek).
template <class T, class Idx>
__device__ __forceinline__ Idx first_aligned(const T* row_ptr, Idx core_lo, bool unit_stride) {
  constexpr int VEC = 16 / sizeof(T);
  if (!unit_stride) return core_lo;
  const Idx phase = static_cast<Idx>((reinterpret_cast<uintptr_t>(row_ptr) / sizeof(T)) % VEC);
  return core_lo + (VEC - (phase + core_lo) % VEC) % VEC;
}

// Core chunk: VEC consecutive source elements at p (stride xs), as one or two aligned 16-byte
// loads when unit-stride and those stay inside [lo, hi), else element by element. The forward
// passes its source row as [lo, hi); the backward the byte span of the whole dy view, so that a
// row's first and last chunks load as vectors too (reading bytes of the neighbouring rows,
// never outside the view): an element-wise chunk in a batch makes the lanes wait for its loads.
template <class T, class Idx>
__device__ __forceinline__ void issue_core(const T* p, Idx xs, const T* lo, const T* hi, Load16* l) {
  constexpr int VEC = 16 / sizeof(T);
  if (xs == 1 && issue16(p, lo, hi, l)) return;
  Vec16<T> e;
#pragma unroll
  for (int k = 0; k < VEC; ++k) e.e[k] = __ldg(p + k * xs);
  l->a = e.u;
  l->shift = 0;
}

template <class T, class Idx>
__device__ __forceinline__ void store_chunk(T* p, Idx s, const Vec16<T>& v) {
  constexpr int VEC = 16 / sizeof(T);
  if (s == 1) {
    *reinterpret_cast<uint4*>(p) = v.u;  // 16-byte aligned by construction
  } else {
#pragma unroll
    for (int k = 0; k < VEC; ++k) p[k * s] = v.e[k];
  }
}

// The column axis: unpadded extent, padded extent, pad_low, x-side and y-side strides.
template <class Idx>
struct ColumnAxis {
  Idx n, m, lo, xs, ys;
};
template <class Idx>
__device__ __forceinline__ ColumnAxis<Idx> column_axis(const PadGeometry& g) {
  const int ca = g.rank - 1;
  return {static_cast<Idx>(g.n[ca]), static_cast<Idx>(g.m[ca]), static_cast<Idx>(g.lo[ca]),
          static_cast<Idx>(g.xs[ca]), static_cast<Idx>(g.ys[ca])};
}

template <class T, class Idx>
__global__ void __launch_bounds__(kPadThreads, 3) pad_forward_kernel(const __grid_constant__ PadGeometry g) {
  constexpr int VEC = 16 / sizeof(T);
  constexpr int U = kItemsInFlight;
  WarpTile t;
  if (!warp_tile(g, &t)) return;  // uniform per warp
  const int lane = threadIdx.x & 31;
  const auto [n, W, lo, xs, ys] = column_axis<Idx>(g);
  const T* __restrict__ src = static_cast<const T*>(g.src);
  T* __restrict__ dst = static_cast<T*>(g.dst);
  const T fill = static_cast<T>(g.fill);
  const Idx core_w = static_cast<Idx>(g.core_chunks) * VEC;

  // this lane's row: offsets, whether the source row exists, where its aligned core starts
  Idx my_xo = 0, my_yo = 0;
  bool my_load = true;
  for_row_axes<Idx>(g, static_cast<Idx>(t.row0 + min(lane, t.nrows - 1)), false, [&](int d, Idx o) {
    my_yo += o * static_cast<Idx>(g.ys[d]);
    const Idx s = pad_source<Idx>(g.mode, g.n[d], g.lo[d], o);
    my_load = my_load && s >= 0;
    my_xo += s * static_cast<Idx>(g.xs[d]);
  });
  const Idx my_a = first_aligned<T, Idx>(dst + my_yo, static_cast<Idx>(g.core_lo), ys == 1);

  Vec16<T> fillv;
#pragma unroll
  for (int k = 0; k < VEC; ++k) fillv.e[k] = fill;

  // core: aligned chunks whose every element copies the source row (a shifted copy)
  const int items = t.nrows * t.nq;
  ItemCursor cur(lane, max(t.nq, 1));
  for (int base = 0; base < items; base += 32 * U) {
    Load16 raw[U];
    Idx yo[U], c0[U];
    bool act[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      act[u] = base + u * 32 + lane < items;
      const int rr = act[u] ? cur.rr : 0;
      const Idx q = static_cast<Idx>(t.q0 + cur.q);
      cur.step32(t.nq);
      const Idx xo = __shfl_sync(0xffffffffu, my_xo, rr);
      yo[u] = __shfl_sync(0xffffffffu, my_yo, rr);
      const bool load = __shfl_sync(0xffffffffu, my_load, rr);
      c0[u] = __shfl_sync(0xffffffffu, my_a, rr) + q * VEC;
      if (act[u] && load) {
        const T* row = src + xo;
        issue_core<T, Idx>(row + (c0[u] - lo) * xs, xs, row, row + n, &raw[u]);
      } else {
        raw[u].a = fillv.u;
        raw[u].shift = 0;
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (!act[u]) continue;
      Vec16<T> v;
      v.u = take16(raw[u]);
      store_chunk<T, Idx>(dst + yo[u] + c0[u] * ys, ys, v);
    }
  }
  if (!t.edges) return;
  // edges: the columns outside this row's core, element by element
  const int E = static_cast<int>(W - core_w);
  const int eitems = t.nrows * E;
  ItemCursor ec(lane, max(E, 1));
  for (int base = 0; base < eitems; base += 32 * U) {
    T v[U];
    Idx dsto[U];
    bool act[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      act[u] = base + u * 32 + lane < eitems;
      const int rr = act[u] ? ec.rr : 0;
      const Idx e = static_cast<Idx>(ec.q);
      ec.step32(E);
      const Idx xo = __shfl_sync(0xffffffffu, my_xo, rr);
      const Idx yo = __shfl_sync(0xffffffffu, my_yo, rr);
      const bool load = __shfl_sync(0xffffffffu, my_load, rr);
      const Idx a = __shfl_sync(0xffffffffu, my_a, rr);
      const Idx c = e < a ? e : e + core_w;
      const Idx s = (act[u] && load) ? pad_source<Idx>(g.mode, n, lo, c) : Idx(-1);
      v[u] = s >= 0 ? __ldg(src + xo + s * xs) : fill;
      dsto[u] = yo + c * ys;
    }
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (act[u]) dst[dsto[u]] = v[u];
  }
}

// A vector chunk of dx summed in acc_t<T> (a chunk of an edge row: several preimage rows).
template <class T>
struct AccChunk {
  static constexpr int VEC = 16 / sizeof(T);
  acc_t<T> v[VEC];
  __device__ __forceinline__ void add(const uint4 u) {
    Vec16<T> e;
    e.u = u;
#pragma unroll
    for (int k = 0; k < VEC; ++k) v[k] += to_acc(e.e[k]);
  }
};

// The edge pass gathers up to kEdgeSlots preimage cells per element with every load in flight
// at once; an element with more goes through pad_gather_all.
inline constexpr int kEdgeSlots = 4;
inline constexpr int kEdgeItems = 2;  // edge elements per lane in flight

// One lane's dx row in the backward: dx offset, the dy offsets of its preimage rows (n of
// them; 5 = more than 4), and the first column of its aligned core.
template <class Idx>
struct BwdRow {
  Idx xo, off[4], a;
  int n;
};

// This lane's row of the warp's tile (rows past the tile repeat its last row).
template <class T, class Idx>
__device__ __forceinline__ BwdRow<Idx> bwd_lane_row(const PadGeometry& g, const WarpTile& t) {
  BwdRow<Idx> me;
  bwd_row<Idx>(g, static_cast<Idx>(t.row0 + min(static_cast<int>(threadIdx.x & 31), t.nrows - 1)), &me.xo, me.off, &me.n);
  me.a = g.core_a >= 0 ? static_cast<Idx>(g.core_a)
                       : first_aligned<T, Idx>(static_cast<T*>(g.dst) + me.xo, static_cast<Idx>(g.core_lo), g.xs[g.rank - 1] == 1);
  return me;
}

// What an out-of-line backward pass recomputes on entry: the warp's tile, this lane's row,
// the operands.
template <class T, class Idx>
struct BwdPass {
  WarpTile t;
  BwdRow<Idx> me;
  const T* dy;
  T* dx;
};
template <class T, class Idx>
__device__ __forceinline__ BwdPass<T, Idx> bwd_pass_setup(const PadGeometry& g) {
  BwdPass<T, Idx> w;
  warp_tile(g, &w.t);
  w.me = bwd_lane_row<T, Idx>(g, w.t);
  w.dy = static_cast<const T*>(g.src);
  w.dx = static_cast<T*>(g.dst);
  return w;
}

// The columns [p, q) of a row whose core starts at a that the core chunks write (one preimage
// column each); the edge pass writes the rest: [0, p) in the first column tile, [q, W) in the
// last.
template <class T, class Idx>
__device__ __forceinline__ void bwd_core_span(const PadGeometry& g, Idx a, Idx* p, Idx* q) {
  *p = max(a, static_cast<Idx>(g.single_lo));
  *q = max(*p, min(a + static_cast<Idx>(g.core_chunks) * (16 / static_cast<int>(sizeof(T))), static_cast<Idx>(g.single_hi)));
}
// The part of the core chunk at c0 that the core writes, packed as kb | ke << 8 (element
// indices in the chunk; VEC << 8 = all of it).
template <class T, class Idx>
__device__ __forceinline__ int bwd_chunk_range(const PadGeometry& g, Idx a, Idx c0) {
  constexpr int VEC = 16 / sizeof(T);
  Idx p, q;
  bwd_core_span<T, Idx>(g, a, &p, &q);
  const int kb = static_cast<int>(min(max(p - c0, Idx(0)), Idx(VEC)));
  const int ke = static_cast<int>(min(max(q - c0, Idx(0)), Idx(VEC)));
  return kb | ke << 8;
}
template <class T, class Idx>
__device__ __forceinline__ void bwd_store_range(T* p, Idx xs, const Vec16<T>& v, int range) {
  constexpr int VEC = 16 / sizeof(T);
  if (range == VEC << 8) {
    store_chunk<T, Idx>(p, xs, v);
  } else {
#pragma unroll
    for (int k = 0; k < VEC; ++k)
      if (k >= (range & 0xff) && k < (range >> 8)) p[k * xs] = v.e[k];
  }
}

// Core chunks of the rows with other than one preimage row (edge rows: several, or none), one
// row at a time, a chunk per lane: the sum of the dy chunks of its preimage rows, in order.
// Out of line, so that its registers do not weigh on the main loop.
template <class T, class Idx>
__device__ __noinline__ void bwd_other_rows(const PadGeometry& g) {
  constexpr int VEC = 16 / sizeof(T);
  const auto [t, me, dy, dx] = bwd_pass_setup<T, Idx>(g);
  const int lane = threadIdx.x & 31;
  const auto [Wn, m, lo, xs, ys] = column_axis<Idx>(g);
  unsigned others = __ballot_sync(0xffffffffu, lane < t.nrows && me.n != 1);
  while (others != 0) {
    const int rr = __ffs(others) - 1;
    others &= others - 1;
    const Idx xo = __shfl_sync(0xffffffffu, me.xo, rr);
    const int nr = __shfl_sync(0xffffffffu, me.n, rr);
    const Idx a = __shfl_sync(0xffffffffu, me.a, rr);
    Idx off[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) off[i] = __shfl_sync(0xffffffffu, me.off[i], rr);
    for (int qi = lane; qi < t.nq; qi += 32) {
      const Idx c0 = a + static_cast<Idx>(t.q0 + qi) * VEC;
      Vec16<T> v;
      if (nr >= 2 && nr <= 4) {
        Load16 l[4];
#pragma unroll
        for (int i = 0; i < 4; ++i)
          if (i < nr) {
            const T* row = dy + off[i];
            issue_core<T, Idx>(row + (c0 + lo) * ys, ys, static_cast<const T*>(g.src_lo), static_cast<const T*>(g.src_hi), &l[i]);
          }
        AccChunk<T> acc{};
#pragma unroll
        for (int i = 0; i < 4; ++i)
          if (i < nr) acc.add(take16(l[i]));
#pragma unroll
        for (int k = 0; k < VEC; ++k) v.e[k] = from_acc<T>(acc.v[k]);
      } else {  // no preimage row (0), or more than 4 (element by element)
        const Idx r = static_cast<Idx>(t.row0 + rr);
#pragma unroll 1
        for (int k = 0; k < VEC; ++k)
          v.e[k] = from_acc<T>(nr == 0 ? acc_t<T>(0) : pad_gather_all<T, Idx>(g, dy, r, c0 + k));
      }
      bwd_store_range<T, Idx>(dx + xo + c0 * xs, xs, v, bwd_chunk_range<T, Idx>(g, a, c0));
    }
  }
}

// Edge elements: the columns the core left, each the sum of its preimage cells (row cells
// outer, column cells inner, both increasing), kEdgeItems elements per lane with all of their
// loads in flight. Out of line like bwd_other_rows.
template <class T, class Idx>
__device__ __noinline__ void bwd_edges(const PadGeometry& g) {
  constexpr int S = kEdgeSlots, UE = kEdgeItems;
  const auto [t, me, dy, dx] = bwd_pass_setup<T, Idx>(g);
  const int lane = threadIdx.x & 31;
  const auto [Wn, m, lo, xs, ys] = column_axis<Idx>(g);
  const bool last_tile = t.q0 + int64_t{t.nq} >= g.core_chunks;
  Idx my_p, my_q;
  bwd_core_span<T, Idx>(g, me.a, &my_p, &my_q);
  const Idx my_left = t.edges ? my_p : Idx(0);
  const int my_e = static_cast<int>(my_left + (last_tile ? Wn - my_q : Idx(0)));
  const int E = static_cast<int>(__reduce_max_sync(0xffffffffu, static_cast<unsigned>(lane < t.nrows ? my_e : 0)));
  const int eitems = t.nrows * E;
  ItemCursor ec(lane, max(E, 1));
  for (int base = 0; base < eitems; base += 32 * UE) {
    Idx offs[UE][S];
    Idx dxo[UE], cc[UE];
    int cnt[UE], rows_[UE];
#pragma unroll
    for (int u = 0; u < UE; ++u) {
      const bool in = base + u * 32 + lane < eitems;
      const int rr = in ? ec.rr : 0;
      rows_[u] = rr;
      const Idx e = static_cast<Idx>(ec.q);
      ec.step32(E);
      const Idx xo = __shfl_sync(0xffffffffu, me.xo, rr);
      const int nr = __shfl_sync(0xffffffffu, me.n, rr);
      const Idx left = __shfl_sync(0xffffffffu, my_left, rr);
      const Idx q = __shfl_sync(0xffffffffu, my_q, rr);
      const int er = __shfl_sync(0xffffffffu, my_e, rr);
      Idx off[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) off[i] = __shfl_sync(0xffffffffu, me.off[i], rr);
      cc[u] = e < left ? e : q + (e - left);
      dxo[u] = xo + cc[u] * xs;
      cnt[u] = -2;  // not an element
      if (!in || e >= er) continue;
      const Preimages<Idx> pc = pad_preimages<Idx>(g.mode, Wn, m, lo, cc[u]);
      int cells = 0;
#pragma unroll
      for (int i = 0; i < 3; ++i)
        if (i < pc.cnt) cells += static_cast<int>(pc.b[i] - pc.a[i]);
      cnt[u] = nr <= 4 && nr * cells <= S ? nr * cells : -1;  // -1: gather it on its own
#pragma unroll
      for (int s = 0; s < S; ++s) {  // slot s = preimage row i, column cell s - i·cells
        const int i = s >= 3 * cells ? 3 : s >= 2 * cells ? 2 : s >= cells ? 1 : 0;
        offs[u][s] = pick4(off, i) + nth_cell(pc, static_cast<Idx>(s - i * cells)) * ys;
      }
    }
    acc_t<T> vals[UE][S];
#pragma unroll
    for (int u = 0; u < UE; ++u)
#pragma unroll
      for (int s = 0; s < S; ++s) vals[u][s] = s < cnt[u] ? to_acc(__ldg(dy + offs[u][s])) : acc_t<T>(0);
#pragma unroll
    for (int u = 0; u < UE; ++u) {
      if (cnt[u] == -2) continue;
      acc_t<T> acc = vals[u][0];  // 0 when there is no preimage; a lone cell is moved exactly
      if (cnt[u] >= 0) {
#pragma unroll
        for (int s = 1; s < S; ++s)
          if (s < cnt[u]) acc += vals[u][s];
      } else {
        acc = pad_gather_all<T, Idx>(g, dy, static_cast<Idx>(t.row0 + rows_[u]), cc[u]);
      }
      dx[dxo[u]] = from_acc<T>(acc);
    }
  }
}

// 3 blocks/SM caps the backward at 80 registers: the main loop fits without spilling (128
// registers and 2 blocks/SM measured 2-6 points slower on the 1-D benchmark rows).
inline constexpr int kBwdBlocksPerSm = 3;

// The backward: dx is written by three passes of each warp over its tile. The main loop
// copies the core chunks of the rows with a single preimage row (dx chunk = dy chunk at column
// + lo: aligned 16-byte stores, U chunks per lane in flight); bwd_other_rows sums the core
// chunks of the edge rows; bwd_edges the remaining elements. No element is written twice.
template <class T, class Idx>
__global__ void __launch_bounds__(kPadThreads, kBwdBlocksPerSm) pad_backward_kernel(const __grid_constant__ PadGeometry g) {
  constexpr int VEC = 16 / sizeof(T);
  constexpr int U = kItemsInFlight;
  WarpTile t;
  if (!warp_tile(g, &t)) return;  // uniform per warp
  const int lane = threadIdx.x & 31;
  const auto [Wn, m, lo, xs, ys] = column_axis<Idx>(g);
  const T* __restrict__ dy = static_cast<const T*>(g.src);
  T* __restrict__ dx = static_cast<T*>(g.dst);

  const BwdRow<Idx> me = bwd_lane_row<T, Idx>(g, t);

  const int items = t.nrows * t.nq;
  ItemCursor cur(lane, max(t.nq, 1));
  for (int base = 0; base < items; base += 32 * U) {
    Load16 raw[U];
    Idx xo[U], c0[U];
    int range[U];
    bool act[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int rr = cur.rr < t.nrows ? cur.rr : 0;
      const Idx q = static_cast<Idx>(t.q0 + cur.q);
      cur.step32(t.nq);
      xo[u] = __shfl_sync(0xffffffffu, me.xo, rr);
      const int nr = __shfl_sync(0xffffffffu, me.n, rr);
      const Idx off0 = __shfl_sync(0xffffffffu, me.off[0], rr);
      const Idx a = __shfl_sync(0xffffffffu, me.a, rr);
      act[u] = base + u * 32 + lane < items && nr == 1;
      c0[u] = a + q * VEC;
      range[u] = bwd_chunk_range<T, Idx>(g, a, c0[u]);
      if (act[u]) {
        const T* row = dy + off0;
        issue_core<T, Idx>(row + (c0[u] + lo) * ys, ys, static_cast<const T*>(g.src_lo), static_cast<const T*>(g.src_hi), &raw[u]);
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (!act[u]) continue;
      Vec16<T> v;
      v.u = take16(raw[u]);
      bwd_store_range<T, Idx>(dx + xo[u] + c0[u] * xs, xs, v, range[u]);
    }
  }
  // the rarer passes recompute the tile and row set-up, so nothing stays live across the calls
  if (__any_sync(0xffffffffu, lane < t.nrows && me.n != 1)) bwd_other_rows<T, Idx>(g);
  bwd_edges<T, Idx>(g);
}

}  // namespace

template <class T, class Idx>
cudaError_t launch_warprows_forward(const PadGeometry& g, cudaStream_t s) {
  return launch_kernel(pad_forward_kernel<T, Idx>, dim3(static_cast<unsigned>(g.blocks)),
                                        dim3(kPadThreads), 0, s, g);
}
template cudaError_t launch_warprows_forward<uint8_t, int32_t>(const PadGeometry&, cudaStream_t);
template cudaError_t launch_warprows_forward<uint8_t, int64_t>(const PadGeometry&, cudaStream_t);
template cudaError_t launch_warprows_forward<uint16_t, int32_t>(const PadGeometry&, cudaStream_t);
template cudaError_t launch_warprows_forward<uint16_t, int64_t>(const PadGeometry&, cudaStream_t);
template cudaError_t launch_warprows_forward<uint32_t, int32_t>(const PadGeometry&, cudaStream_t);
template cudaError_t launch_warprows_forward<uint32_t, int64_t>(const PadGeometry&, cudaStream_t);
template cudaError_t launch_warprows_forward<uint64_t, int32_t>(const PadGeometry&, cudaStream_t);
template cudaError_t launch_warprows_forward<uint64_t, int64_t>(const PadGeometry&, cudaStream_t);

template <class T, class Idx>
cudaError_t launch_warprows_backward(const PadGeometry& g, cudaStream_t s) {
  return launch_kernel(pad_backward_kernel<T, Idx>, dim3(static_cast<unsigned>(g.blocks)),
                                        dim3(kPadThreads), 0, s, g);
}
template cudaError_t launch_warprows_backward<float, int32_t>(const PadGeometry&, cudaStream_t);
template cudaError_t launch_warprows_backward<float, int64_t>(const PadGeometry&, cudaStream_t);
template cudaError_t launch_warprows_backward<double, int32_t>(const PadGeometry&, cudaStream_t);
template cudaError_t launch_warprows_backward<double, int64_t>(const PadGeometry&, cudaStream_t);
template cudaError_t launch_warprows_backward<__half, int32_t>(const PadGeometry&, cudaStream_t);
template cudaError_t launch_warprows_backward<__half, int64_t>(const PadGeometry&, cudaStream_t);
template cudaError_t launch_warprows_backward<__nv_bfloat16, int32_t>(const PadGeometry&, cudaStream_t);
template cudaError_t launch_warprows_backward<__nv_bfloat16, int64_t>(const PadGeometry&, cudaStream_t);

}  // namespace baracuda::detail
