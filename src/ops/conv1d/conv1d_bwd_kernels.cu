// Causal conv1d backward: dx, d(initial states) and per-segment partial dweight / dbias (time
// and chan kernels, conv1d_geometry.hpp), then the fixed-order reduction of the partials.
//
// Per row: z = Σ_j wr[j]·x[t − j] + bias (recomputed), dz = dy·act'(z) (0 for t >= L),
// dx[s] = Σ_j wr[j]·dz[s + j] + dfinal[s − L + W − 1]; s in [−(W−1), 0) gives d(initial states).
#include "ops/conv1d/conv1d_common.cuh"

namespace baracuda::detail {
namespace {

using namespace conv1d;

template <class T>
__device__ __forceinline__ void store_ds0(const Conv1dParams& p, int64_t b, int64_t c, int64_t i, acc_t<T> v) {
  static_cast<T*>(p.ds0)[b * p.ds0s[0] + c * p.ds0s[1] + i * p.ds0s[2]] = from_acc<T>(v);
}

// Partial row of one (segment, channel): [0, W) dweight, W dbias. dwr[j] is tap j = w[W−1−j].
template <class A, int KW>
__device__ __forceinline__ void store_partial(const Conv1dParams& p, int64_t part, int64_t c, const A (&dwr)[KW], A db) {
  A* row = static_cast<A*>(p.partial) + (part * p.C + c) * (p.W + 1);
#pragma unroll
  for (int j = 0; j < KW; ++j)
    if (j < p.W) row[p.W - 1 - j] = dwr[j];
  row[p.W] = db;
}

// ---------------------------------------------------------------- time kernel
// As the forward's (U iterations of 32 lanes × NE steps per sub-chunk), plus one look-ahead
// iteration loaded only on the first lanes: the W−1 gradients after a lane's vector come from
// lanes l + ceil(j/NE) of the same iteration or of the look-ahead. Step indices are 32-bit,
// relative to the task's first step. A task of several rows (task_rows) stages them as one
// sequence of sub-chunks: the next row's first loads are in flight while this row ends.
//
// Sub-chunk forms: kTested (range tests per vector and step, d(final states)); kInterior (the
// sub-chunk and its look-ahead inside the row, before the steps d(final states) reaches: no
// tests); kRowEnd (the sub-chunk ends exactly at the row end and there is no d(final states):
// no tests, and the look-ahead, all past the row, is zero and not computed).
enum SubForm : int { kTested, kInterior, kRowEnd };
template <class T, int NE, int KW, bool kEx>
__global__ void __launch_bounds__(kConvThreads, kTimeBlocksPerSm) bwd_time(const Conv1dParams p) {
  using A = acc_t<T>;
  constexpr int U = 2, kSub = 32 * U * NE, PB = (KW - 1 + NE - 1) / NE;
  const int lane = threadIdx.x & 31;
  TimeTask tk;
  if (!time_task(p, tk)) return;
  const int64_t c = tk.c, sg = tk.sg, t_beg = tk.t_beg;
  int64_t b = tk.b;  // the current row is (b, c)
  const int n = tk.t_end > t_beg ? static_cast<int>(tk.t_end - t_beg) : 0;  // steps of this task (per row)
  const int n_row = rel_steps(p.L - t_beg);                                // steps before the row end
  const int n_fin = rel_steps(p.L - p.W + 1 - t_beg);  // steps before the first one d(final states) reaches
  A wr[KW], bias;  // before the first copies: after them measured 2-4 points slower
  load_taps<A, KW>(p, c, wr, bias);
  const int64_t xst = NE > 1 ? 1 : p.xs[2], dyst = NE > 1 ? 1 : p.dys[2], dxst = NE > 1 ? 1 : p.outs[2];
  const T* xr = row_ptr<const T>(p.x, p.xs, b, c) + t_beg * xst;  // the task's first row
  const T* dyr = row_ptr<const T>(p.dy, p.dys, b, c) + t_beg * dyst;
  const T* xc = xr;  // the current row (plain loads; no registers where cp.async stages)
  const T* dyc = dyr;
  T* dxr = row_ptr<T>(p.out, p.outs, b, c) + t_beg * dxst;  // the current row
  const int lo = lane * NE;  // this lane's first step in an iteration, relative to it
  // sub-chunk k's U + 1 vectors of x and dy per lane, staged kGroups − 1 sub-chunks ahead;
  // at least one pass per row, so that a row with L = 0 still gets its d(initial states)
  using V = Vec<T, NE>;
  using Ring = StageRing<V, U + 1, 2, 3>;
  __shared__ V stage_x[Ring::kSlots][kConvThreads], stage_dy[Ring::kSlots][kConvThreads];
  const int nsub = n > 0 ? (n + kSub - 1) / kSub : 1;  // per row
  const unsigned sx0 = smem_u32(&stage_x[0][threadIdx.x]), sdy0 = smem_u32(&stage_dy[0][threadIdx.x]);
  auto wanted = [&](int u, int r) { return (u < U || lane < PB) && r < n_row; };
  // issue(g) stages the task's g-th sub-chunk: called in order of g, so it keeps its own cursor
  // (row is_i, sub-chunk is_k of that row)
  int is_i = 0, is_k = 0;
  auto issue = [&](int g) {
    if constexpr (Ring::kAsync) {
      if (is_i < tk.rows) {
        const T* xq = xr + is_i * p.xs[0];
        const T* dyq = dyr + is_i * p.dys[0];
#pragma unroll
        for (int u = 0; u <= U; ++u) {
          const int r = is_k * kSub + u * 32 * NE + lo;
          if (wanted(u, r)) {
            const unsigned off = (Ring::slot(g) + u) * Ring::kSlotBytes;
            cp_async<sizeof(V)>(sx0 + off, xq + r * xst);
            cp_async<sizeof(V)>(sdy0 + off, dyq + r * dyst);
          }
        }
        if (++is_k == nsub) {
          is_k = 0;
          ++is_i;
        }
      }
      cp_async_commit();
    }
  };
  Ring::start(issue);
  A carry[KW];  // halo_before's values for the first lanes
  A dwr[KW], db;
  // One sub-chunk from relative step r0 of the current row (staging slot of task sub-chunk g,
  // row sub-chunk k; iteration u, lane l: r0 + u·32·NE + l·NE). kInterior's look-ahead lanes
  // past PB read stale staging slots (cp.async) or load in-row inputs (scalar loads), which feed
  // nothing.
  auto sub_chunk = [&]<int kForm>(int g, int k, int r0) {
    constexpr bool kIn = kForm != kTested;
    constexpr int UL = kForm == kRowEnd ? U : U + 1;  // vectors read and computed
    A xv[U + 1][NE], dz[U + 1][NE];  // dz holds dy until pass 1 turns it into dz
#pragma unroll
    for (int u = 0; u < UL; ++u) {
      const int r = r0 + u * 32 * NE + lo;
      if (!kIn && !wanted(u, r)) {
#pragma unroll
        for (int e = 0; e < NE; ++e) xv[u][e] = dz[u][e] = A(0);
      } else if constexpr (Ring::kAsync) {
        const int slot = Ring::slot(g) + u;
        unpack<T, NE>(stage_x[slot][threadIdx.x], xv[u]);
        unpack<T, NE>(stage_dy[slot][threadIdx.x], dz[u]);
      } else {
        load_vec<T, NE>(xc, r, xst, xv[u]);
        load_vec<T, NE>(dyc, r, dyst, dz[u]);
      }
    }
    if constexpr (kForm == kRowEnd)
#pragma unroll
      for (int e = 0; e < NE; ++e) xv[U][e] = dz[U][e] = A(0);
    // pass 1: dz, and the dweight / dbias sums over this task's steps
#pragma unroll
    for (int u = 0; u < UL; ++u) {
      A h[KW];  // the look-ahead vector is the next sub-chunk's first: it keeps the carry
      halo_before<A, NE, KW>(xv[u], carry, h, lane, u < U);
      // the look-ahead vector only feeds the first KW − 1 gradients after the sub-chunk
      const int need = u == U && KW - 1 < NE ? KW - 1 : NE;  // folds: u is unrolled
      A z[NE];
#pragma unroll
      for (int e = 0; e < NE; ++e) {
        if (e >= need) break;
        A v = bias;
#pragma unroll
        for (int j = 0; j < KW; ++j)
          if (kEx || j < p.W) v += wr[j] * (e >= j ? xv[u][e >= j ? e - j : 0] : h[e >= j ? 0 : j - e]);
        z[e] = v;
      }
      if (p.silu)
#pragma unroll
        for (int e = 0; e < NE; ++e)
          if (e < need) dz[u][e] *= silu_grad(z[e]);
#pragma unroll
      for (int e = 0; e < NE; ++e) {
        if (e >= need) break;
        const int r = r0 + u * 32 * NE + lo + e;
        const A gz = kIn || r < n_row ? dz[u][e] : A(0);
        dz[u][e] = gz;
        if (u < U && (kIn || r < n_row)) {
          db += gz;
#pragma unroll
          for (int j = 0; j < KW; ++j)
            if (kEx || j < p.W) dwr[j] += gz * (e >= j ? xv[u][e >= j ? e - j : 0] : h[e >= j ? 0 : j - e]);
        }
      }
    }
    // pass 2: dx. The gradients after a lane's vector: f[j] = dz at (its last step) + j from
    // lane l + q (q = ceil(j / NE)); fr[u][j] is that shuffle for vector u, and the last lanes
    // take the next vector's (the lanes l + q >= 32 receive lane l + q − 32 of vector u + 1).
    A fr[U + 1][KW];
#pragma unroll
    for (int u = 0; u <= U; ++u)
#pragma unroll
      for (int j = 1; j < KW; ++j) {
        const int q = (j + NE - 1) / NE, e = NE - 1 + j - q * NE;
        fr[u][j] = u < UL ? __shfl_sync(0xffffffffu, dz[u][e], (lane + q) & 31) : A(0);
      }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      A f[KW];  // f[h] = dz at (this vector's last step) + h
      f[0] = A(0);
#pragma unroll
      for (int j = 1; j < KW; ++j) {
        const int q = (j + NE - 1) / NE;
        f[j] = lane + q < 32 ? fr[u][j] : fr[u + 1][j];
      }
      const int rv = r0 + u * 32 * NE + lo;
      const bool tail = !kIn && p.dsfin != nullptr && rv + NE > n_fin;  // dfinal reaches this vector
      A d[NE];
#pragma unroll
      for (int e = 0; e < NE; ++e) {
        A s = tail ? dfinal_at<T>(p, b, c, t_beg + rv + e) : A(0);
#pragma unroll
        for (int j = 0; j < KW; ++j)
          if (kEx || j < p.W) s += wr[j] * (e + j < NE ? dz[u][e + j < NE ? e + j : 0] : f[e + j < NE ? 0 : e + j - NE + 1]);
        d[e] = s;
      }
      if (kIn || rv < n_row) store_vec<T, NE>(dxr, rv, dxst, d);
    }
    // d(initial states): positions s = m − (KW−1), m < KW−1, from dz[0 .. KW−2] of lanes 0..
    if (p.ds0 != nullptr && t_beg == 0 && k == 0) {
      A g0[KW];  // g0[m] = dz at step m
#pragma unroll
      for (int m = 0; m + 1 < KW; ++m) g0[m] = __shfl_sync(0xffffffffu, dz[0][m % NE], m / NE);
      g0[KW - 1] = A(0);
      if (lane == 0) {
#pragma unroll
        for (int m = 0; m + 1 < KW; ++m) {
          const int s = m - (KW - 1);
          if (s < -(p.W - 1)) continue;
          A v = dfinal_at<T>(p, b, c, s);
#pragma unroll
          for (int j = 0; j < KW; ++j)
            if ((kEx || j < p.W) && m + j >= KW - 1) v += wr[j] * g0[m + j >= KW - 1 ? m + j - (KW - 1) : 0];
          store_ds0<T>(p, b, c, s + p.W - 1, v);
        }
      }
    }
  };
  for (int i = 0, g = 0; i < tk.rows; ++i, ++b) {
    if (i > 0) {
      xc += p.xs[0];
      dyc += p.dys[0];
      dxr += p.outs[0];
    }
    halo_carry_init<T, NE, KW>(p, b, c, t_beg, lane, carry);
    if (i == 0 || !p.direct) {  // per-lane sums: of the row, or of the channel
      db = A(0);
#pragma unroll
      for (int j = 0; j < KW; ++j) dwr[j] = A(0);
    }
    for (int k = 0; k < nsub; ++k, ++g) {
      Ring::advance(issue, g);
      const int r0 = k * kSub;
      if (r0 + kSub + 32 * NE <= n_row && r0 + kSub <= n_fin) sub_chunk.template operator()<kInterior>(g, k, r0);
      else if (r0 + kSub == n_row && p.dsfin == nullptr) sub_chunk.template operator()<kRowEnd>(g, k, r0);
      else sub_chunk.template operator()<kTested>(g, k, r0);
    }
    if (p.direct && i + 1 < tk.rows) continue;
    // fixed-order butterfly over the warp, then one partial row per row of the task, or the
    // channel's dweight / dbias
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      db += __shfl_xor_sync(0xffffffffu, db, o);
#pragma unroll
      for (int j = 0; j < KW; ++j) dwr[j] += __shfl_xor_sync(0xffffffffu, dwr[j], o);
    }
    if (lane == 0) {
      if (p.direct) {
#pragma unroll
        for (int j = 0; j < KW; ++j)
          if (j < p.W) store_as<A>(p.dw, p.wdt, c * p.dws[0] + (p.W - 1 - j) * p.dws[1], dwr[j]);
        if (p.db != nullptr) store_as<A>(p.db, p.wdt, c * p.dbs, db);
      } else {
        store_partial<A, KW>(p, b * p.segs + sg, c, dwr, db);
      }
    }
  }
}

// ---------------------------------------------------------------- chan kernel
// Lane = NE channels, warp = p.warp_steps steps, block = 4 warps consecutive in time. Step t
// computes dz(t) and emits dx(t − (KW−1)), whose dz(t − KW + 1 .. t) are then all known; the
// warp runs KW−1 steps past its range for the dz its last outputs need.
template <class T, int NE, int KW, bool kEx>
__global__ void __launch_bounds__(kConvThreads, kChanBwdBlocksPerSm) bwd_chan(const Conv1dParams p) {
  using A = acc_t<T>;
  constexpr int NR = NE * (KW + 1);
  __shared__ A red[kConvThreads / 32 - 1][32][NR];
  using V = Vec<T, NE>;  // groups of KW steps of x and dy staged kGroups − 1 groups ahead
  using Ring = StageRing<V, KW, 2, 4>;
  __shared__ V stage_x[Ring::kSlots][kConvThreads], stage_dy[Ring::kSlots][kConvThreads];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const ChanTask tk = chan_task(p, NE);
  const int64_t b = tk.b, sg = tk.sg, c0 = tk.c0, t_beg = tk.t_beg;
  const bool live = c0 < p.C;
  A dw[KW][NE], db[NE];
#pragma unroll
  for (int e = 0; e < NE; ++e) {
    db[e] = A(0);
#pragma unroll
    for (int j = 0; j < KW; ++j) dw[j][e] = A(0);
  }
  if (live) {
    // Step indices relative to t_beg are 32-bit: the warp walks n + KW − 1 <= warp_steps + 7
    // steps; row limits are clamped into that range.
    const int n = tk.t_end > t_beg ? static_cast<int>(tk.t_end - t_beg) : 0;
    const int n_stop = n + KW - 1;
    const int n_row = rel_steps(p.L - t_beg);              // steps before the row end (t < L)
    const int n_load = n_row < n_stop ? n_row : n_stop;
    const int last_in = rel_steps(p.L - p.W - t_beg);      // a group starting past this meets d(final states)
    const int64_t xst = p.xs[2], dyst = p.dys[2], dxst = p.outs[2];
    const T* xi = static_cast<const T*>(p.x) + b * p.xs[0] + c0 * p.xs[1] + t_beg * xst;  // next group to issue
    const T* dyi = static_cast<const T*>(p.dy) + b * p.dys[0] + c0 * p.dys[1] + t_beg * dyst;
    const T* xg = xi;  // this group (plain loads)
    const T* dyg = dyi;
    const unsigned sx0 = smem_u32(&stage_x[0][threadIdx.x]), sdy0 = smem_u32(&stage_dy[0][threadIdx.x]);
    auto issue = [&](int g) {  // group g = steps g·KW + [0, KW)
      if constexpr (Ring::kAsync) {
        const unsigned off = Ring::slot(g) * Ring::kSlotBytes;
        auto copy = [&](int s) {
          cp_async<sizeof(V)>(sx0 + off + s * Ring::kSlotBytes, xi + s * xst);
          cp_async<sizeof(V)>(sdy0 + off + s * Ring::kSlotBytes, dyi + s * dyst);
        };
        if (g * KW + KW <= n_load) {
#pragma unroll
          for (int s = 0; s < KW; ++s) copy(s);
        } else {
#pragma unroll
          for (int s = 0; s < KW; ++s)
            if (g * KW + s < n_load) copy(s);
        }
        xi += KW * xst;
        dyi += KW * dyst;
        cp_async_commit();
      }
    };
    Ring::start(issue);
    // taps and the previous inputs after the first copies, so that their latencies overlap
    A wr[KW][NE], bias[NE];
    load_chan_taps<A, KW, NE>(p, c0, wr, bias);
    A xo[KW][NE], go[KW][NE];  // previous KW steps: x and dz (slot s = step tb − KW + s)
    load_x_window<T, KW, NE>(p, b, c0, t_beg - KW, xo);
#pragma unroll
    for (int s = 0; s < KW; ++s)
#pragma unroll
      for (int e = 0; e < NE; ++e) go[s][e] = A(0);
    // dx row of step sb's output (step sb − (KW − 1))
    T* dxo = static_cast<T*>(p.out) + b * p.outs[0] + c0 * p.outs[1] + (t_beg - (KW - 1)) * dxst;
    for (int g = 0, sb = 0; sb < n_stop; ++g, sb += KW) {
      Ring::advance(issue, g);
      const int slot = Ring::slot(g);
      A xn[KW][NE], gn[KW][NE];
      auto load_step = [&](int s) {
        if constexpr (Ring::kAsync) {
          unpack<T, NE>(stage_x[slot + s][threadIdx.x], xn[s]);
          unpack<T, NE>(stage_dy[slot + s][threadIdx.x], gn[s]);
        } else {
          load_vec<T, NE>(xg + s * xst, 0, p.xs[1], xn[s]);
          load_vec<T, NE>(dyg + s * dyst, 0, p.dys[1], gn[s]);
        }
      };
      if (sb + KW <= n_load) {  // every step of the group was loaded
#pragma unroll
        for (int s = 0; s < KW; ++s) load_step(s);
      } else {
#pragma unroll
        for (int s = 0; s < KW; ++s) {
          if (sb + s < n_load) {
            load_step(s);
          } else {
#pragma unroll
            for (int e = 0; e < NE; ++e) xn[s][e] = gn[s][e] = A(0);
          }
        }
      }
      // kIn: every step of this group is inside the warp's range, past its first KW − 1 steps
      // and before the last W − 1 steps of the row (no range tests, no d(final / initial
      // states)); the other groups take the tested form.
      auto steps = [&]<bool kIn>() {
#pragma unroll
        for (int s = 0; s < KW; ++s) {
          const int ts = sb + s;
          A z[NE];
#pragma unroll
          for (int e = 0; e < NE; ++e) {
            A v = bias[e];
#pragma unroll
            for (int j = 0; j < KW; ++j)
              if (kEx || j < p.W) v += wr[j][e] * (s >= j ? xn[s >= j ? s - j : 0][e] : xo[s >= j ? 0 : KW + s - j][e]);
            z[e] = v;
          }
          act_grad_vec<A, NE>(z, gn[s], p.silu);  // dz = dy·act'(z); 0 past the row end
          if (!kIn && ts >= n_row)
#pragma unroll
            for (int e = 0; e < NE; ++e) gn[s][e] = A(0);
          if (kIn || ts < n) {
#pragma unroll
            for (int e = 0; e < NE; ++e) {
              db[e] += gn[s][e];
#pragma unroll
              for (int j = 0; j < KW; ++j)
                if (kEx || j < p.W) dw[j][e] += gn[s][e] * (s >= j ? xn[s >= j ? s - j : 0][e] : xo[s >= j ? 0 : KW + s - j][e]);
            }
          }
          const int sx = ts - (KW - 1);  // the dx step this step completes, relative to t_beg
          const bool out_dx = kIn || (sx >= 0 && sx < n);
          const bool out_ds0 = !kIn && p.ds0 != nullptr && t_beg == 0 && sx < 0 && sx >= -(p.W - 1);
          if (out_dx || out_ds0) {
            const bool tail = !kIn && p.dsfin != nullptr && sx > last_in;
            A d[NE];
#pragma unroll
            for (int e = 0; e < NE; ++e) {
              A v = tail ? dfinal_at<T>(p, b, c0 + e, t_beg + sx) : A(0);
#pragma unroll
              for (int j = 0; j < KW; ++j) {
                const int m = s - (KW - 1) + j;  // dz slot relative to this group of steps
                if (kEx || j < p.W) v += wr[j][e] * (m >= 0 ? gn[m >= 0 ? m : 0][e] : go[m >= 0 ? 0 : KW + m][e]);
              }
              d[e] = v;
            }
            if (out_dx) {
              store_vec<T, NE>(dxo + s * dxst, 0, p.outs[1], d);
            } else {
#pragma unroll
              for (int e = 0; e < NE; ++e)
                if (c0 + e < p.C) store_ds0<T>(p, b, c0 + e, sx + p.W - 1, d[e]);
            }
          }
        }
      };
      if (sb >= KW && sb + KW <= n && sb <= last_in) steps.template operator()<true>();
      else steps.template operator()<false>();
      xg += KW * xst;
      dyg += KW * dyst;
      dxo += KW * dxst;
#pragma unroll
      for (int s = 0; s < KW; ++s)
#pragma unroll
        for (int e = 0; e < NE; ++e) {
          xo[s][e] = xn[s][e];
          go[s][e] = gn[s][e];
        }
    }
  }
  // the 4 warps' sums, added in warp order
  if (warp > 0) {
#pragma unroll
    for (int e = 0; e < NE; ++e) {
#pragma unroll
      for (int j = 0; j < KW; ++j) red[warp - 1][lane][e * (KW + 1) + j] = dw[j][e];
      red[warp - 1][lane][e * (KW + 1) + KW] = db[e];
    }
  }
  __syncthreads();
  if (warp == 0 && live) {
#pragma unroll
    for (int e = 0; e < NE; ++e) {
      if (c0 + e >= p.C) break;
      A dwr[KW];
      A dbs = db[e];
#pragma unroll
      for (int j = 0; j < KW; ++j) dwr[j] = dw[j][e];
#pragma unroll
      for (int w = 0; w < kConvThreads / 32 - 1; ++w) {
#pragma unroll
        for (int j = 0; j < KW; ++j) dwr[j] += red[w][lane][e * (KW + 1) + j];
        dbs += red[w][lane][e * (KW + 1) + KW];
      }
      store_partial<A, KW>(p, b * p.segs + sg, c0 + e, dwr, dbs);
    }
  }
}

template <class A>
__global__ void __launch_bounds__(256) reduce_parts(const Conv1dReduceParams p) {
  const int64_t i = int64_t{blockIdx.x} * 256 + threadIdx.x;
  const int64_t row = p.W + 1;
  if (i >= p.C * row) return;
  const A* part = static_cast<const A*>(p.partial);
  A s = A(0);
  for (int64_t k = 0; k < p.parts; ++k) s += part[k * p.C * row + i];
  const int64_t c = i / row, k = i - c * row;
  if (k < p.W) store_as<A>(p.dw, p.wdt, c * p.dws[0] + k * p.dws[1], s);
  else if (p.db != nullptr) store_as<A>(p.db, p.wdt, c * p.dbs, s);
}

struct Bwd {  // this direction's launch templates for direction_launcher
  static constexpr bool kBackward = true;
  template <class T, int NE, int KW, bool kEx>
  static cudaError_t time(const Conv1dParams& p, cudaStream_t s) {
    return launch_conv(bwd_time<T, NE, KW, kEx>, ConvKernel::kTime, p, s);
  }
  template <class T, int NE, int KW, bool kEx>
  static cudaError_t chan(const Conv1dParams& p, cudaStream_t s) {
    return launch_conv(bwd_chan<T, NE, KW, kEx>, ConvKernel::kChan, p, s);
  }
};


}  // namespace

Conv1dLaunchFn conv1d_bwd_launcher(DType t, ConvKernel k, bool vec, int width) {
  return direction_launcher<Bwd>(t, k, vec, width);
}

cudaError_t conv1d_reduce_launch(DType t, const Conv1dReduceParams& p, cudaStream_t s) {
  const int64_t n = p.C * (p.W + 1);
  if (n == 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>((n + 255) / 256));
  return t == DType::f64 ? launch_kernel(reduce_parts<double>, grid, dim3(256), 0, s, p)
                         : launch_kernel(reduce_parts<float>, grid, dim3(256), 0, s, p);
}

}  // namespace baracuda::detail
