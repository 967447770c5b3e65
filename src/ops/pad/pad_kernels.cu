// Pad forward/backward kernels ("warprows") and the flat forward kernel (dense y).
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
#include "core/cuda_types.cuh"
#include "core/launch.cuh"
#include "ops/pad/pad_device.cuh"
#include "ops/pad/pad_geometry.hpp"
#include "ops/pad/pad_pairs.cuh"
#include "ops/pad/pad_staged.cuh"

namespace baracuda::detail {
namespace {

// The padded coordinates whose source is x along one axis: up to 3 non-empty ranges [a, b),
// in increasing order.
template <class Idx>
struct Preimages {
  int cnt;
  Idx a[3];
  Idx b[3];
  __device__ __forceinline__ void add(Idx lo_, Idx hi_, Idx m) {
    lo_ = lo_ < 0 ? Idx(0) : lo_;
    hi_ = hi_ > m ? m : hi_;
    if (lo_ < hi_) {  // appended through selects, not a[cnt]: the ranges stay in registers
#pragma unroll
      for (int i = 0; i < 3; ++i) {
        a[i] = i == cnt ? lo_ : a[i];
        b[i] = i == cnt ? hi_ : b[i];
      }
      ++cnt;
    }
  }
};

template <class Idx>
__device__ __forceinline__ Preimages<Idx> pad_preimages(int mode, Idx n, Idx m, Idx lo, Idx x) {
  Preimages<Idx> p;
  p.cnt = 0;
  p.a[0] = p.b[0] = p.a[1] = p.b[1] = p.a[2] = p.b[2] = 0;
  const Idx o = x + lo;  // the identity cell
  if (mode == kConstant) {
    p.add(o, o + 1, m);
  } else if (mode == kReflect) {
    if (x > 0) p.add(lo - x, lo - x + 1, m);  // mirrored from i = -x
    p.add(o, o + 1, m);
    if (x < n - 1) p.add(lo + 2 * (n - 1) - x, lo + 2 * (n - 1) - x + 1, m);  // from i = 2(n-1)-x
  } else if (mode == kReplicate) {
    p.add(x == 0 ? Idx(0) : o, x == n - 1 ? m : o + 1, m);  // edges take every clamped cell
  } else {  // circular
    p.add(o - n, o - n + 1, m);
    p.add(o, o + 1, m);
    p.add(o + n, o + n + 1, m);
  }
  return p;
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

template <class Idx>
__device__ __forceinline__ Idx pick4(const Idx (&a)[4], int i) {
  return i == 0 ? a[0] : i == 1 ? a[1] : i == 2 ? a[2] : a[3];
}

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

// The c-th cell (0-based) of a preimage set, counting through its ranges in order.
template <class Idx>
__device__ __forceinline__ Idx nth_cell(const Preimages<Idx>& p, Idx c) {
  const Idx l0 = p.b[0] - p.a[0], l1 = p.cnt > 1 ? p.b[1] - p.a[1] : Idx(0);
  return c < l0 ? p.a[0] + c : (c < l0 + l1 ? p.a[1] + (c - l0) : p.a[2] + (c - l0 - l1));
}

// Backward row set-up: the dy row offsets of one dx row (every combination of its per-axis
// preimage cells) when there are at most 4. nrow = 0: nothing maps to the row; 5: more than 4.
template <class Idx>
__device__ __forceinline__ void bwd_row(const PadGeometry& g, Idx r, Idx* xo, Idx (&off)[4], int* nrow) {
  off[0] = off[1] = off[2] = off[3] = 0;
  int cnt = 1;
  Idx x_off = 0;
  for_row_axes<Idx>(g, r, true, [&](int d, Idx x) {
    x_off += x * static_cast<Idx>(g.xs[d]);
    if (cnt == 0 || cnt > 4) return;
    const Preimages<Idx> p = pad_preimages<Idx>(g.mode, g.n[d], g.m[d], g.lo[d], x);
    Idx cells = 0;
#pragma unroll
    for (int i = 0; i < 3; ++i)
      if (i < p.cnt) cells += p.b[i] - p.a[i];
    if (cells == 0) {
      cnt = 0;
      return;
    }
    if (cells > 4 || cnt * static_cast<int>(cells) > 4) {
      cnt = 5;
      return;
    }
    const int cl = static_cast<int>(cells);
    Idx nw[4];
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      const int i = s / cl, c = s - i * cl;
      nw[s] = i < cnt ? pick4(off, i) + nth_cell(p, static_cast<Idx>(c)) * static_cast<Idx>(g.ys[d]) : Idx(0);
    }
#pragma unroll
    for (int s = 0; s < 4; ++s) off[s] = nw[s];
    cnt *= cl;
  });
  *xo = x_off;
  *nrow = cnt;
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

// ---------------------------------------------------------------- flat forward kernel
// A dense y (32-bit indices) walked as consecutive words of EPW elements: warp w owns words
// [w·32K, (w+1)·32K), lane l takes word w·32K + 32k + l at step k, so every store instruction
// covers 32 consecutive words. A word never straddles two rows (the row length is a multiple
// of EPW). The warp's words span at most 32 rows (pad_plan_flat): lane i sets up row
// r_first + i once (source offset and whether the source row exists), and each word takes its
// row's values by shuffle. Every word's element offsets are computed before any load, and all
// loads are issued before the first store (K·EPW loads in flight per lane, 32 registers).

template <class T, int EPW>
union FlatWord {
  typename WordOf<sizeof(T) * EPW>::type w;
  T e[EPW];
};

// This warp's words [w0, w_end) (flat_batches batches of 32·K) and the first and last
// destination rows they touch; false when the warp has none.
struct FlatTask {
  uint32_t w0, w_end, r_first, r_last;
  int lane, ca;  // this thread's lane; the column (innermost) axis
};
__device__ __forceinline__ bool flat_task(const PadGeometry& g, FlatTask* t) {
  const int64_t warp_words = int64_t{32} * kFlatWordsPerLane * g.flat_batches;
  const int64_t w0 = (int64_t{blockIdx.x} * (kPadThreads / 32) + (threadIdx.x >> 5)) * warp_words;
  if (w0 >= g.flat_words) return false;
  t->w0 = static_cast<uint32_t>(w0);
  t->w_end = static_cast<uint32_t>(min(g.flat_words, w0 + warp_words));
  const uint32_t epw = static_cast<uint32_t>(g.flat_epw);
  t->r_first = g.flat_cols.div(t->w0 * epw);
  t->r_last = g.flat_cols.div(t->w_end * epw - 1);
  t->lane = threadIdx.x & 31;
  t->ca = g.rank - 1;
  return true;
}

// A lane's word as (row - r_first, column): its first word w0 + lane, advanced 32 words per
// step (flat_step_r rows + flat_step_c columns, at most one wrap) without division.
template <int EPW>
struct FlatCursor {
  int32_t rr, c;
  __device__ __forceinline__ FlatCursor(const PadGeometry& g, const FlatTask& t, int lane) {
    const uint32_t e0 = (t.w0 + lane) * static_cast<uint32_t>(EPW);
    const uint32_t r0 = g.flat_cols.div(e0);
    rr = static_cast<int32_t>(r0 - t.r_first);
    c = static_cast<int32_t>(e0 - r0 * g.flat_cols.d);
  }
  __device__ __forceinline__ void step(const PadGeometry& g) {
    c += g.flat_step_c;
    const bool wrap = c >= static_cast<int32_t>(g.flat_cols.d);
    c -= wrap ? static_cast<int32_t>(g.flat_cols.d) : 0;
    rr += g.flat_step_r + wrap;
  }
};

template <class T, int EPW>
__global__ void __launch_bounds__(kPadThreads) pad_flat_forward_kernel(const __grid_constant__ PadGeometry g) {
  constexpr int K = kFlatWordsPerLane;
  using Word = FlatWord<T, EPW>;
  FlatTask t;
  if (!flat_task(g, &t)) return;  // uniform per warp
  const int lane = t.lane, ca = t.ca;
  const AxisMap col = axis_map(g.mode, static_cast<int32_t>(g.n[ca]), static_cast<int32_t>(g.lo[ca]));
  const int32_t xs = static_cast<int32_t>(g.xs[ca]);
  const T* __restrict__ src = static_cast<const T*>(g.src);
  auto* __restrict__ dst = static_cast<decltype(Word::w)*>(g.dst);
  const T fill = static_cast<T>(g.fill);

  // lane i: source offset of row r_first + i, or kNoRow where that row does not exist
  // (constant mode: in the padding; past r_last): one value, one shuffle per word
  const int32_t my_xo = t.r_first + lane <= t.r_last ? fwd_row_source(g, static_cast<int32_t>(t.r_first + lane)) : kNoRow;
  FlatCursor<EPW> cur(g, t, lane);
  // a word inside its row's source columns: 0 <= i0 <= n - EPW, one unsigned test
  const uint32_t inner_cols = static_cast<uint32_t>(max(0, col.n - EPW + 1));

  // Every word's loads stay inside x, also for the words of a partial last batch past w_end
  // (only their stores are skipped): their cursor walks on through real rows, or through the
  // lanes past r_last, which are fill rows (kNoRow).
  // Unit-stride source columns get their own copy of the loop (constant element offsets).
  // The bf16 [32, 64, 256, 256] pad 1 forward is issue-bound here (ncu: 0.72 instructions per
  // scheduler cycle, 74 % of DRAM bandwidth; docs/perf/pad.md): instructions per word count.
  auto walk = [&]<bool kUnit>() {
    const int32_t sx = kUnit ? 1 : xs;
    for (uint32_t wb = t.w0 + lane; wb - lane < t.w_end; wb += 32u * K) {  // warp-uniform trip count
      Word v[K];
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int32_t xo = __shfl_sync(0xffffffffu, my_xo, cur.rr & 31);
        const bool ok = xo != kNoRow;
        const int32_t i0 = cur.c - col.lo;
        // the whole word inside the source row: EPW loads at one offset (most steps take
        // this, warp-uniformly); else each element through the column map, or the fill
        if (__all_sync(0xffffffffu, ok && static_cast<uint32_t>(i0) < inner_cols)) {
          const T* p = src + (xo + i0 * sx);
#pragma unroll
          for (int j = 0; j < EPW; ++j) v[k].e[j] = __ldg(p + j * sx);
        } else {
#pragma unroll
          for (int j = 0; j < EPW; ++j) {
            const int32_t s = col(cur.c + j);
            v[k].e[j] = ok && s >= 0 ? __ldg(src + (xo + s * sx)) : fill;
          }
        }
        cur.step(g);
      }
      auto* __restrict__ out = dst + wb;  // one address, immediate offsets per word
#pragma unroll
      for (int k = 0; k < K; ++k)
        if (wb + 32u * k < t.w_end) out[32 * k] = v[k].w;
    }
  };
  if (xs == 1)
    walk.template operator()<true>();
  else
    walk.template operator()<false>();
}

// The flat backward: a dense dx walked like the flat forward (same words, cursor and row
// lanes). Lane i sets up dx row r_first + i: the dy offsets of its preimage rows (bwd_row;
// pad_plan_flat admits only geometries where no row has more than 4). Every dx element is the
// sum, in acc_t<T> from 0, over its preimage rows (in order) of its column cells (low range,
// identity, high range: PadColCells); an element with a single cell copies it (exact).
// Two passes per warp:
//   main:   a step where every word's row has one preimage row and every column its identity
//           cell (most steps) copies the identity cells, warp-uniformly, with all loads of a
//           batch in flight; other steps sum each element's cells (flat_bwd_word_general);
//   fix-up: then each lane recomputes, in its own row, the copied columns that have more cells
//           than the identity (outside [single_lo, single_hi): a few per row, pad_plan_flat),
//           and rewrites them after a __syncwarp, so the main pass needs no per-column test.
// acc plus dx column x's cells of one preimage row.
template <class T>
__device__ __forceinline__ acc_t<T> add_col_cells(const PadColCells& cc, const T* __restrict__ row, int32_t sy, int32_t x,
                                                  acc_t<T> acc) {
  const XCells c = x_cells(cc, x);
  for (int32_t t = 0; t < c.ln; ++t) acc += to_acc(row[(c.la + t) * sy]);
  if (c.id) acc += to_acc(row[(x + cc.lo) * sy]);
  for (int32_t t = 0; t < c.hn; ++t) acc += to_acc(row[(c.ha + t) * sy]);
  return acc;
}

// Called warp-uniformly: lane `src` holds the preimage row offsets of the word's row.
template <class T, int EPW>
__device__ __forceinline__ void flat_bwd_word_general(const PadColCells& cc, const T* __restrict__ dy, int32_t sy, int n,
                                                      const int32_t (&my_off)[4], int src, int32_t c, FlatWord<T, EPW>* v) {
  acc_t<T> acc[EPW];
#pragma unroll
  for (int j = 0; j < EPW; ++j) acc[j] = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const T* row = dy + __shfl_sync(0xffffffffu, my_off[i], src);
    if (i < n) {
#pragma unroll
      for (int j = 0; j < EPW; ++j) acc[j] = add_col_cells<T>(cc, row, sy, c + j, acc[j]);
    }
  }
#pragma unroll
  for (int j = 0; j < EPW; ++j) v->e[j] = from_acc<T>(acc[j]);
}

// 4 blocks/SM caps it at 64 registers with no spill (H200, bf16 [16, 512, 16384]: 3 blocks
// 69 %, 4: 76 %, 5 spills: 49 % of copy; f32 85-86 % at all three).
template <class T, int EPW>
__global__ void __launch_bounds__(kPadThreads, 4) pad_flat_backward_kernel(const __grid_constant__ PadGeometry g) {
  constexpr int K = kFlatWordsPerLane;
  using Word = FlatWord<T, EPW>;
  FlatTask t;
  if (!flat_task(g, &t)) return;  // uniform per warp
  const int lane = t.lane, ca = t.ca;
  const PadColCells& cc = g.col_cells;  // read from the parameter bank, not registers
  const int32_t ys = static_cast<int32_t>(g.ys[ca]);
  const int32_t W = static_cast<int32_t>(g.flat_cols.d);
  const int32_t id_lo = max(0, -cc.lo), id_hi = min(W, cc.m - cc.lo);  // columns with an identity cell
  const T* __restrict__ dy = static_cast<const T*>(g.src);

  // lane i: the preimage rows of dx row r_first + i (lanes past r_last: none, so the words of
  // a partial last batch past w_end load nothing; their stores are skipped)
  int32_t my_off[4] = {0, 0, 0, 0};
  int my_n = 0;
  if (t.r_first + lane <= t.r_last) {
    int32_t unused;
    bwd_row<int32_t>(g, static_cast<int32_t>(t.r_first + lane), &unused, my_off, &my_n);
  }
  FlatCursor<EPW> cur(g, t, lane);

  auto walk = [&]<bool kUnit>() {
    const int32_t sy = kUnit ? 1 : ys;
    auto* __restrict__ dx = static_cast<decltype(Word::w)*>(g.dst);
    for (uint32_t wb = t.w0 + lane; wb - lane < t.w_end; wb += 32u * K) {  // warp-uniform trip count
      Word v[K];
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int n = __shfl_sync(0xffffffffu, my_n, cur.rr & 31);
        const int32_t o0 = __shfl_sync(0xffffffffu, my_off[0], cur.rr & 31);
        if (__all_sync(0xffffffffu, n == 1 && cur.c >= id_lo && cur.c + EPW <= id_hi)) {
          const T* p = dy + (o0 + (cur.c + cc.lo) * sy);
#pragma unroll
          for (int j = 0; j < EPW; ++j) v[k].e[j] = p[j * sy];
        } else {
          flat_bwd_word_general<T, EPW>(cc, dy, sy, n, my_off, cur.rr & 31, cur.c, &v[k]);
        }
        cur.step(g);
      }
#pragma unroll
      for (int k = 0; k < K; ++k)
        if (wb + 32u * k < t.w_end) dx[wb + 32u * k] = v[k].w;
    }
    // fix-up: this lane's row, its columns inside the warp's words that the copy got wrong
    __syncwarp();
    if (my_n != 1) return;
    const int32_t r = static_cast<int32_t>(t.r_first) + lane;
    const int32_t beg = max(0, static_cast<int32_t>(t.w0 * EPW) - r * W);
    const int32_t end = min(W, static_cast<int32_t>(t.w_end * EPW) - r * W);
    T* __restrict__ dx_row = static_cast<T*>(g.dst) + r * W;
    const T* __restrict__ dy_row = dy + my_off[0];
    auto fix = [&](int32_t x0, int32_t x1) {
      for (int32_t x = max(x0, beg); x < min(x1, end); ++x) dx_row[x] = from_acc<T>(add_col_cells<T>(cc, dy_row, sy, x, 0));
    };
    fix(id_lo, static_cast<int32_t>(g.single_lo));
    fix(static_cast<int32_t>(g.single_hi), id_hi);
  };
  if (ys == 1)
    walk.template operator()<true>();
  else
    walk.template operator()<false>();
}

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

template <class T, class Idx>
cudaError_t launch_forward(const PadGeometry& g, cudaStream_t s) {
  if constexpr (sizeof(Idx) == 4) {
    if (g.st.tiles > 0) return launch_staged_forward<static_cast<int>(sizeof(T))>(g, s);
    if constexpr (sizeof(T) == 2)
      if (g.pr.blocks > 0) return launch_pairs_forward(g, s);
    if (g.flat_words > 0) {
      void (*k)(PadGeometry) = nullptr;
      auto pick = [&]<int EPW>() {
        if (g.flat_epw == EPW) k = pad_flat_forward_kernel<T, EPW>;
      };
      pick.template operator()<1>();
      if constexpr (sizeof(T) <= 2) pick.template operator()<2>();
      if constexpr (sizeof(T) == 1) pick.template operator()<4>();
      return launch_kernel(k, dim3(static_cast<unsigned>(g.flat_blocks)), dim3(kPadThreads), 0, s, g);
    }
  }
  return launch_kernel(pad_forward_kernel<T, Idx>, dim3(static_cast<unsigned>(g.blocks)),
                                        dim3(kPadThreads), 0, s, g);
}

template <class T, class Idx>
cudaError_t launch_backward(const PadGeometry& g, cudaStream_t s) {
  if constexpr (sizeof(Idx) == 4) {
    if (g.st.tiles > 0) return launch_staged_backward<T>(g, s);
    if (g.seg_tasks > 0)
      return launch_kernel(pad_segment_backward_kernel<T>, dim3(static_cast<unsigned>(g.seg_blocks)),
                                            dim3(kPadThreads), 0, s, g);
    if (g.flat_words > 0) {
      void (*k)(PadGeometry) = nullptr;
      if (g.flat_epw == 1) k = pad_flat_backward_kernel<T, 1>;
      if constexpr (sizeof(T) == 2)
        if (g.flat_epw == 2) k = pad_flat_backward_kernel<T, 2>;
      return launch_kernel(k, dim3(static_cast<unsigned>(g.flat_blocks)), dim3(kPadThreads), 0, s, g);
    }
  }
  return launch_kernel(pad_backward_kernel<T, Idx>, dim3(static_cast<unsigned>(g.blocks)),
                                        dim3(kPadThreads), 0, s, g);
}

}  // namespace

PadLaunchFn pad_forward_launcher(DType dtype, bool index64) {
  PadLaunchFn fn = nullptr;
  dispatch_dtype<StorageTypes>(dtype, PadForwardDTypes{}, [&]<class T>() {
    fn = index64 ? &launch_forward<T, int64_t> : &launch_forward<T, int32_t>;
  });
  return fn;
}

PadLaunchFn pad_backward_launcher(DType dtype, bool index64) {
  PadLaunchFn fn = nullptr;
  dispatch_dtype<CudaTypes>(dtype, PadBackwardDTypes{}, [&]<class T>() {
    fn = index64 ? &launch_backward<T, int64_t> : &launch_backward<T, int32_t>;
  });
  return fn;
}

}  // namespace baracuda::detail
