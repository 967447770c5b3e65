// The staged pad kernels: one block per tile of the destination (T rows x Wc columns of one
// plane; pad_plan_staged), only the last two (coalesced) axes padded, pads >= 0.
//
// Backward, dx = pad_backward(dy), every mode. Three phases, a barrier between each:
//   stage: the dy rows [sr0, sr1) x columns [sc0, sc1) that hold the tile's identity cells
//          (y + lo_h, x + lo_w), plus the padding beside them when the tile touches that edge
//          and the padding is short, copied into shared memory with 16-byte cp.async at the
//          source's own 16-byte phase (a row keeps its phase, so its blocks stay aligned);
//   fix:   every dx element outside the single intervals (rows or columns with more than their
//          identity cell) sums its cells, row cells outer and column cells inner, both in
//          increasing order, from 0 in acc_t<T> (the order of every pad backward path), reading
//          staged cells from shared memory and the rest from dy, and overwrites its identity
//          cell in shared memory with the rounded sum. No element's sum reads another's
//          identity cell (with pads >= 0 the other cells lie outside the identity ranges), so
//          the rewrites need no ordering among themselves;
//   write: each 16-byte-aligned dx block of the tile is a shifted window of its identity row
//          in shared memory (two aligned 16-byte shared loads, funnel shifts, one vector
//          store); blocks cut by a row's ends are written element by element.
// Every dx element is written once; no atomics.
//
// Forward, y = pad(x) (pad_staged_forward_kernel): the same three phases on "slots", one per
// source row the tile needs; see the kernel.
#include "core/cp_async.cuh"
#include "core/cuda_types.cuh"
#include "core/launch.cuh"
#include "ops/pad/pad_device.cuh"
#include "ops/pad/pad_staged.cuh"

namespace baracuda::detail {
namespace {

// A block's tile: plane, destination rows [r0, r1) and columns [c0, c1), and the plane's
// element offsets in the source and the destination (plane axes are unpadded).
struct StagedTile {
  int32_t r0, r1, c0, c1;
  int32_t src_off, dst_off;
};
__device__ __forceinline__ StagedTile staged_tile(const PadGeometry& g, int32_t rows, int32_t cols, bool dst_is_x) {
  const PadStaged& s = g.st;
  const uint32_t b = blockIdx.x;
  const uint32_t qc = s.tiles_c.div(b), qr = s.tiles_r.div(qc);
  const auto tc = static_cast<int32_t>(b - qc * s.tiles_c.d), tr = static_cast<int32_t>(qc - qr * s.tiles_r.d);
  // the plane's offsets: its row 0 decomposed over the row axes (the H coordinate is 0)
  int32_t xo = 0, yo = 0;
  for_row_axes<int32_t>(g, static_cast<int32_t>(qr) * (dst_is_x ? s.H : s.Mh), dst_is_x, [&](int d, int32_t c) {
    xo += c * static_cast<int32_t>(g.xs[d]);
    yo += c * static_cast<int32_t>(g.ys[d]);
  });
  StagedTile t;
  t.r0 = tr * s.T;
  t.r1 = min(rows, t.r0 + s.T);
  t.c0 = tc * s.Wc;
  t.c1 = min(cols, t.c0 + s.Wc);
  t.src_off = dst_is_x ? yo : xo;
  t.dst_off = dst_is_x ? xo : yo;
  return t;
}

// Copies n source row spans into shared memory and waits for them: span(k) gives the bytes
// [g0, g1) and the shared offset s0 of g0 (s0 = g0 mod 16, so 16-byte blocks stay aligned).
// Blocks inside the source view [src_lo, src_hi) go by cp.async; a block cut by the view's ends
// moves its elements one by one.
template <int E, class Span>
__device__ __forceinline__ void staged_load(const PadGeometry& g, unsigned char* smem, int32_t n, Span&& span) {
  using U = typename WordOf<E>::type;
  constexpr int EPB = 16 / E;
  const auto lo_b = reinterpret_cast<uintptr_t>(g.src_lo), hi_b = reinterpret_cast<uintptr_t>(g.src_hi);
  const unsigned sbase = smem_u32(smem);
  const uint32_t nb = g.st.blk_in.d, total = static_cast<uint32_t>(n) * nb;
  for (uint32_t i = threadIdx.x; i < total; i += kStagedThreads) {
    const uint32_t k = g.st.blk_in.div(i), j = i - k * nb;
    uintptr_t g0, g1;
    int32_t s0;
    span(static_cast<int32_t>(k), &g0, &g1, &s0);
    const uintptr_t blk = (g0 & ~uintptr_t{15}) + 16u * j;
    if (blk >= g1) continue;
    const int32_t so = s0 - static_cast<int32_t>(g0 & 15u) + 16 * static_cast<int32_t>(j);
    if (blk >= lo_b && blk + 16 <= hi_b) {
      cp_async<16>(sbase + static_cast<unsigned>(so), reinterpret_cast<const void*>(blk));
    } else {
      const uintptr_t e0 = max(g0, lo_b), e1 = min(g1, hi_b);
#pragma unroll
      for (int q = 0; q < EPB; ++q) {
        const uintptr_t ep = blk + static_cast<uintptr_t>(q * E);
        if (ep >= e0 && ep < e1) *reinterpret_cast<U*>(smem + so + q * E) = *reinterpret_cast<const U*>(ep);
      }
    }
  }
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
}

// Writes the tile's destination rows: column c of row y is the element at shared byte
// row_smem(y) + (c - c0)·E. Each 16-byte-aligned destination block is one window of two
// aligned shared loads; blocks cut by the tile's column ends go element by element.
template <int E, class RowSmem>
__device__ __forceinline__ void staged_store(const PadGeometry& g, const unsigned char* smem, unsigned char* dst,
                                             int32_t row_stride, const StagedTile& t, RowSmem&& row_smem) {
  using U = typename WordOf<E>::type;
  constexpr int EPB = 16 / E;
  const uint32_t nb = g.st.blk_out.d, total = static_cast<uint32_t>(t.r1 - t.r0) * nb;
  for (uint32_t i = threadIdx.x; i < total; i += kStagedThreads) {
    const uint32_t r = g.st.blk_out.div(i), k = i - r * nb;
    const int32_t y = t.r0 + static_cast<int32_t>(r);
    U* row = reinterpret_cast<U*>(dst) + y * row_stride;
    const auto a0 = reinterpret_cast<uintptr_t>(row + t.c0);
    const uintptr_t blk = (a0 & ~uintptr_t{15}) + 16u * k;
    const int32_t cf = t.c0 + static_cast<int32_t>(static_cast<intptr_t>(blk - a0) / E);  // may be < c0
    if (cf >= t.c1) continue;
    const int32_t so = row_smem(y) + (cf - t.c0) * E;  // >= 1: rooms before each row cover a head block
    if (cf >= t.c0 && cf + EPB <= t.c1) {
      const int32_t sb = so & ~15;
      const uint4 va = *reinterpret_cast<const uint4*>(smem + sb);
      const uint4 vb = *reinterpret_cast<const uint4*>(smem + sb + 16);
      *reinterpret_cast<uint4*>(blk) = window16(va, vb, static_cast<unsigned>(so & 15));
    } else {
#pragma unroll
      for (int q = 0; q < EPB; ++q) {
        const int32_t c = cf + q;
        if (c >= t.c0 && c < t.c1) row[c] = *reinterpret_cast<const U*>(smem + so + q * E);
      }
    }
  }
}

template <class T>
__global__ void __launch_bounds__(kStagedThreads) pad_staged_backward_kernel(const __grid_constant__ PadGeometry g) {
  extern __shared__ __align__(16) unsigned char smem[];
  constexpr int E = sizeof(T);
  const PadStaged& s = g.st;
  const StagedTile t = staged_tile(g, s.H, s.W, /*dst_is_x=*/true);
  const T* __restrict__ dy = static_cast<const T*>(g.src) + t.src_off;
  const int32_t r0 = t.r0, r1 = t.r1, c0 = t.c0, c1 = t.c1;
  const int32_t sr0 = (r0 == 0 && s.ext_lo_h) ? 0 : r0 + s.lo_h;
  const int32_t sr1 = (r1 == s.H && s.ext_hi_h) ? s.Mh : r1 + s.lo_h;
  const int32_t sc0 = (c0 == 0 && s.ext_lo_w) ? 0 : c0 + s.lo_w;
  const int32_t sc1 = (c1 == s.W && s.ext_hi_w) ? s.Mw : c1 + s.lo_w;
  // shared byte offset of the staged cell (py, px): each row at its dy 16-byte phase
  auto row_start = [&](int32_t py) { return reinterpret_cast<uintptr_t>(dy + (py * s.ys_h + sc0)); };
  auto sm_off = [&](int32_t py, int32_t px) {
    return static_cast<int32_t>(kStagedGuard + (py - sr0) * s.pitch + static_cast<int32_t>(row_start(py) & 15u) +
                                (px - sc0) * E);
  };

  staged_load<E>(g, smem, sr1 - sr0, [&](int32_t k, uintptr_t* g0, uintptr_t* g1, int32_t* s0) {
    *g0 = row_start(sr0 + k);
    *g1 = *g0 + static_cast<uintptr_t>((sc1 - sc0) * E);
    *s0 = sm_off(sr0 + k, sc0);
  });

  // fix: rows [r0, mr_a) and [mr_b, r1) take every column; rows in between the columns
  // [c0, mc_a) and [mc_b, c1)
  {
    const int32_t mr_a = min(r1, max(r0, s.s_lo_h)), mr_b = min(r1, max(mr_a, s.s_hi_h));
    const int32_t mc_a = min(c1, max(c0, s.s_lo_w)), mc_b = min(c1, max(mc_a, s.s_hi_w));
    const int32_t e1 = mr_a - r0, e2 = r1 - mr_b, k1 = mc_a - c0, K = k1 + (c1 - mc_b);
    const int32_t Wt = c1 - c0, n1 = (e1 + e2) * Wt, n = n1 + (mr_b - mr_a) * K;
    if (n > 0) {  // uniform per block
      auto cell = [&](int32_t py, int32_t px) -> acc_t<T> {
        if (py >= sr0 && py < sr1 && px >= sc0 && px < sc1)
          return to_acc(*reinterpret_cast<const T*>(smem + sm_off(py, px)));
        return to_acc(dy[py * s.ys_h + px]);
      };
      for (int32_t i = threadIdx.x; i < n; i += kStagedThreads) {
        int32_t y, x;
        if (i < n1) {
          const int32_t q = i / Wt;
          y = q < e1 ? r0 + q : mr_b + (q - e1);
          x = c0 + (i - q * Wt);
        } else {
          const int32_t j = i - n1, q = j / K, k = j - q * K;
          y = mr_a + q;
          x = k < k1 ? c0 + k : mc_b + (k - k1);
        }
        const XCells rc = x_cells(s.rows, y), cc = x_cells(s.cols, x);
        acc_t<T> acc = 0;
        auto add_row = [&](int32_t py) {
          for (int32_t q = 0; q < cc.ln; ++q) acc += cell(py, cc.la + q);
          acc += cell(py, x + s.lo_w);  // pads >= 0: the identity cell exists
          for (int32_t q = 0; q < cc.hn; ++q) acc += cell(py, cc.ha + q);
        };
        for (int32_t q = 0; q < rc.ln; ++q) add_row(rc.la + q);
        add_row(y + s.lo_h);
        for (int32_t q = 0; q < rc.hn; ++q) add_row(rc.ha + q);
        *reinterpret_cast<T*>(smem + sm_off(y + s.lo_h, x + s.lo_w)) = from_acc<T>(acc);
      }
      __syncthreads();
    }
  }

  staged_store<E>(g, smem, static_cast<unsigned char*>(g.dst) + int64_t{t.dst_off} * E, s.xs_h, t,
                  [&](int32_t y) { return sm_off(y + s.lo_h, c0 + s.lo_w); });
}

// The staged forward: y = pad(x) for any mode with only the last two axes padded (pads >= 0),
// raw E-byte elements. The tile's y rows take their x rows from up to three runs (the rows of
// the top padding, the identity rows, the rows of the bottom padding; each run's source rows
// are consecutive), each staged once as a "slot": the image of a y row of the tile's columns,
// x columns at their y positions. The fix pass fills each slot's padding columns (from the
// slot when the source column is staged, else from x; constant: the fill), and constant mode
// adds one slot of fill for its padding rows. Then every y row is a window of its slot.
template <int E>
__global__ void __launch_bounds__(kStagedThreads, 16) pad_staged_forward_kernel(const __grid_constant__ PadGeometry g) {
  extern __shared__ __align__(16) unsigned char smem[];
  using U = typename WordOf<E>::type;
  const PadStaged& s = g.st;
  const bool constant = g.mode == kConstant;
  const StagedTile t = staged_tile(g, s.Mh, s.Mw, /*dst_is_x=*/false);
  const U* __restrict__ x = static_cast<const U*>(g.src) + t.src_off;
  const int32_t r0 = t.r0, r1 = t.r1, c0 = t.c0, c1 = t.c1;
  // the runs of source rows: top padding y in [r0, ya), identity [ya, yb), bottom [yb, r1)
  const int32_t ya = min(r1, max(r0, s.lo_h)), yb = min(r1, max(ya, s.lo_h + s.H));
  auto run_of = [&](int32_t y0, int32_t y1, int32_t* first, int32_t* len) {
    if (y0 >= y1 || (constant && (y0 < s.lo_h || y0 >= s.lo_h + s.H))) {
      *first = 0;
      *len = 0;
      return;
    }
    const int32_t u = pad_source<int32_t>(g.mode, s.H, s.lo_h, y0), v = pad_source<int32_t>(g.mode, s.H, s.lo_h, y1 - 1);
    *first = min(u, v);
    *len = max(u, v) - *first + 1;
  };
  int32_t a0, na, i0, ni, b0, nbr;
  run_of(r0, ya, &a0, &na);
  run_of(ya, yb, &i0, &ni);
  run_of(yb, r1, &b0, &nbr);
  const int32_t nsrc = na + ni + nbr;  // slots with a source row; constant: slot nsrc is the fill
  auto slot_row = [&](int32_t k) { return k < na ? a0 + k : k < na + ni ? i0 + (k - na) : b0 + (k - na - ni); };
  auto slot_of = [&](int32_t y) {
    if (constant && (y < s.lo_h || y >= s.lo_h + s.H)) return nsrc;
    const int32_t xr = pad_source<int32_t>(g.mode, s.H, s.lo_h, y);
    return y < ya ? xr - a0 : y < yb ? na + (xr - i0) : na + ni + (xr - b0);
  };
  // y column c of slot k at shared byte slot_col(k) + (c - c0)·E, at the 16-byte phase of the
  // x address of column c - lo_w in the slot's row (so staged x blocks stay aligned)
  auto slot_col = [&](int32_t k) {
    const int32_t base = kStagedGuard + k * s.pitch + 16;
    if (k >= nsrc) return base;
    const uintptr_t v = reinterpret_cast<uintptr_t>(x + slot_row(k) * s.xs_h) + static_cast<uintptr_t>((c0 - s.lo_w) * E);
    return base + static_cast<int32_t>(v & 15u);
  };
  // per slot (x row offset, shared column origin) and per tile row its slot's origin, set up
  // once so that the copy loops do no index work beyond their own
  __shared__ int32_t slot_x[kStagedMaxRows + 1], slot_so[kStagedMaxRows + 1], row_so[kStagedMaxRows];
  for (int32_t k = threadIdx.x; k <= nsrc; k += kStagedThreads) {
    slot_x[k] = k < nsrc ? slot_row(k) * s.xs_h : 0;
    slot_so[k] = slot_col(k);
  }
  for (int32_t i = threadIdx.x; i < r1 - r0; i += kStagedThreads) row_so[i] = slot_col(slot_of(r0 + i));
  __syncthreads();
  const int32_t xa = max(0, c0 - s.lo_w), xb = min(s.W, c1 - s.lo_w);  // staged x columns
  if (xa < xb)
    staged_load<E>(g, smem, nsrc, [&](int32_t k, uintptr_t* g0, uintptr_t* g1, int32_t* s0) {
      const U* row = x + slot_x[k];
      *g0 = reinterpret_cast<uintptr_t>(row + xa);
      *g1 = reinterpret_cast<uintptr_t>(row + xb);
      *s0 = slot_so[k] + (xa + s.lo_w - c0) * E;
    });
  // fix: the padding columns [c0, pa) and [pb, c1) of every slot; every column of the fill slot
  {
    const int32_t pa = min(c1, max(c0, s.lo_w)), pb = min(c1, max(pa, s.lo_w + s.W));
    const int32_t k1 = pa - c0, K = k1 + (c1 - pb), Wt = c1 - c0;
    const bool fill_rows = constant && (ya > r0 || yb < r1);  // the tile has padding rows
    const int32_t n1 = nsrc * K, n = n1 + (fill_rows ? Wt : 0);
    if (n > 0) {  // uniform per block
      const U fill = static_cast<U>(g.fill);
      for (int32_t i = threadIdx.x; i < n; i += kStagedThreads) {
        int32_t k, c;
        if (i < n1) {
          k = i / K;
          const int32_t j = i - k * K;
          c = j < k1 ? c0 + j : pb + (j - k1);
        } else {
          k = nsrc;
          c = c0 + (i - n1);
        }
        U v = fill;
        if (!constant) {
          const int32_t xc = pad_source<int32_t>(g.mode, s.W, s.lo_w, c);
          v = (xc >= xa && xc < xb) ? *reinterpret_cast<const U*>(smem + slot_so[k] + (xc + s.lo_w - c0) * E)
                                    : x[slot_x[k] + xc];
        }
        *reinterpret_cast<U*>(smem + slot_so[k] + (c - c0) * E) = v;
      }
      __syncthreads();
    }
  }
  staged_store<E>(g, smem, static_cast<unsigned char*>(g.dst) + int64_t{t.dst_off} * E, s.ys_h, t,
                  [&](int32_t y) { return row_so[y - r0]; });
}

}  // namespace

template <class T>
cudaError_t launch_staged_backward(const PadGeometry& g, cudaStream_t s) {
  return launch_kernel(pad_staged_backward_kernel<T>, dim3(static_cast<unsigned>(g.st.tiles)),
                                        dim3(kStagedThreads), static_cast<size_t>(g.st.smem), s, g);
}
template cudaError_t launch_staged_backward<float>(const PadGeometry&, cudaStream_t);
template cudaError_t launch_staged_backward<double>(const PadGeometry&, cudaStream_t);
template cudaError_t launch_staged_backward<__half>(const PadGeometry&, cudaStream_t);
template cudaError_t launch_staged_backward<__nv_bfloat16>(const PadGeometry&, cudaStream_t);

template <int E>
cudaError_t launch_staged_forward(const PadGeometry& g, cudaStream_t s) {
  return launch_kernel(pad_staged_forward_kernel<E>, dim3(static_cast<unsigned>(g.st.tiles)),
                                        dim3(kStagedThreads), static_cast<size_t>(g.st.smem), s, g);
}
template cudaError_t launch_staged_forward<1>(const PadGeometry&, cudaStream_t);
template cudaError_t launch_staged_forward<2>(const PadGeometry&, cudaStream_t);
template cudaError_t launch_staged_forward<4>(const PadGeometry&, cudaStream_t);
template cudaError_t launch_staged_forward<8>(const PadGeometry&, cudaStream_t);

}  // namespace baracuda::detail
