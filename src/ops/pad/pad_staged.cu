// The staged pad backward: dx = pad_backward(dy) for reflect / replicate / circular padding of
// the last two (coalesced) axes, one block per tile of T dx rows x Wc columns of one plane
// (pad_plan_staged). Three phases, a barrier between each:
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
#include "core/cp_async.cuh"
#include "core/cuda_types.cuh"
#include "core/launch.cuh"
#include "ops/pad/pad_device.cuh"
#include "ops/pad/pad_staged.cuh"

namespace baracuda::detail {
namespace {

template <class T>
__global__ void __launch_bounds__(kStagedThreads) pad_staged_backward_kernel(const __grid_constant__ PadGeometry g) {
  extern __shared__ __align__(16) unsigned char smem[];
  constexpr int E = sizeof(T), EPB = 16 / E;
  const PadStaged& s = g.st;
  // tile (plane p, row tile tr, column tile tc) and the plane's offsets
  const uint32_t b = blockIdx.x;
  const uint32_t qc = s.tiles_c.div(b), qr = s.tiles_r.div(qc);
  const int32_t tc = static_cast<int32_t>(b - qc * s.tiles_c.d), tr = static_cast<int32_t>(qc - qr * s.tiles_r.d);
  uint32_t p = qr;
  int32_t xo = 0, yo = 0;
#pragma unroll
  for (int a = kMaxRank - 3; a >= 0; --a) {
    if (a < g.rank - 2) {
      const uint32_t q = g.row_div[a].div(p);
      const auto c = static_cast<int32_t>(p - q * g.row_div[a].d);
      xo += c * static_cast<int32_t>(g.xs[a]);
      yo += c * static_cast<int32_t>(g.ys[a]);
      p = q;
    }
  }
  const T* __restrict__ dy = static_cast<const T*>(g.src) + yo;
  T* __restrict__ dx = static_cast<T*>(g.dst) + xo;
  const int32_t r0 = tr * s.T, r1 = min(s.H, r0 + s.T), c0 = tc * s.Wc, c1 = min(s.W, c0 + s.Wc);
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

  // stage
  {
    const auto lo_b = reinterpret_cast<uintptr_t>(g.src_lo), hi_b = reinterpret_cast<uintptr_t>(g.src_hi);
    const unsigned sbase = smem_u32(smem) + kStagedGuard;
    const uint32_t nb = s.blk_in.d, total = static_cast<uint32_t>(sr1 - sr0) * nb;
    for (uint32_t i = threadIdx.x; i < total; i += kStagedThreads) {
      const uint32_t row = s.blk_in.div(i), k = i - row * nb;
      const int32_t py = sr0 + static_cast<int32_t>(row);
      const uintptr_t rs = row_start(py), re = rs + static_cast<uintptr_t>((sc1 - sc0) * E);
      const uintptr_t blk = (rs & ~uintptr_t{15}) + 16u * k;
      if (blk >= re) continue;
      const unsigned sa = sbase + row * static_cast<uint32_t>(s.pitch) + 16u * k;
      if (blk >= lo_b && blk + 16 <= hi_b) {
        cp_async<16>(sa, reinterpret_cast<const void*>(blk));
      } else {  // a block cut by the dy view's ends: its elements inside the row and the view
        const uintptr_t e0 = max(rs, lo_b), e1 = min(re, hi_b);
        unsigned char* d = smem + kStagedGuard + row * s.pitch + 16u * k;
#pragma unroll
        for (int j = 0; j < EPB; ++j) {
          const uintptr_t ep = blk + static_cast<uintptr_t>(j * E);
          if (ep >= e0 && ep < e1) *reinterpret_cast<T*>(d + j * E) = *reinterpret_cast<const T*>(ep);
        }
      }
    }
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
  }

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
          for (int32_t t = 0; t < cc.ln; ++t) acc += cell(py, cc.la + t);
          acc += cell(py, x + s.lo_w);  // pads >= 0: the identity cell exists
          for (int32_t t = 0; t < cc.hn; ++t) acc += cell(py, cc.ha + t);
        };
        for (int32_t t = 0; t < rc.ln; ++t) add_row(rc.la + t);
        add_row(y + s.lo_h);
        for (int32_t t = 0; t < rc.hn; ++t) add_row(rc.ha + t);
        *reinterpret_cast<T*>(smem + sm_off(y + s.lo_h, x + s.lo_w)) = from_acc<T>(acc);
      }
      __syncthreads();
    }
  }

  // write
  {
    const uint32_t nb = s.blk_out.d, total = static_cast<uint32_t>(r1 - r0) * nb;
    for (uint32_t i = threadIdx.x; i < total; i += kStagedThreads) {
      const uint32_t t = s.blk_out.div(i), k = i - t * nb;
      const int32_t y = r0 + static_cast<int32_t>(t);
      T* row = dx + y * s.xs_h;
      const auto a0 = reinterpret_cast<uintptr_t>(row + c0);
      const uintptr_t blk = (a0 & ~uintptr_t{15}) + 16u * k;
      const int32_t cf = c0 + static_cast<int32_t>(static_cast<intptr_t>(blk - a0) / E);  // may be < c0
      if (cf >= c1) continue;
      const int32_t so = sm_off(y + s.lo_h, cf + s.lo_w);  // >= 1: the guard covers a head block
      if (cf >= c0 && cf + EPB <= c1) {
        const int32_t sb = so & ~15;
        const uint4 va = *reinterpret_cast<const uint4*>(smem + sb);
        const uint4 vb = *reinterpret_cast<const uint4*>(smem + sb + 16);
        *reinterpret_cast<uint4*>(blk) = window16(va, vb, static_cast<unsigned>(so & 15));
      } else {
#pragma unroll
        for (int j = 0; j < EPB; ++j) {
          const int32_t c = cf + j;
          if (c >= c0 && c < c1) row[c] = *reinterpret_cast<const T*>(smem + so + j * E);
        }
      }
    }
  }
}

}  // namespace

template <class T>
int launch_staged_backward(const PadGeometry& g, cudaStream_t s) {
  return static_cast<int>(launch_kernel(pad_staged_backward_kernel<T>, dim3(static_cast<unsigned>(g.st.tiles)),
                                        dim3(kStagedThreads), static_cast<size_t>(g.st.smem), s, g));
}

template int launch_staged_backward<float>(const PadGeometry&, cudaStream_t);
template int launch_staged_backward<double>(const PadGeometry&, cudaStream_t);
template int launch_staged_backward<__half>(const PadGeometry&, cudaStream_t);
template int launch_staged_backward<__nv_bfloat16>(const PadGeometry&, cudaStream_t);

}  // namespace baracuda::detail
