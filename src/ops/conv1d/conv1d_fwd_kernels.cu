// Causal conv1d forward (time and chan kernels, conv1d_geometry.hpp) and the decode update.
#include "ops/conv1d/conv1d_common.cuh"

namespace baracuda::detail {
namespace {

using namespace conv1d;

// ---------------------------------------------------------------- time kernel
// Warp task = (b, c, segment of warp_steps steps), walked in sub-chunks of 32·U vectors; lane
// `l` of sub-chunk iteration u holds steps t0 + (u·32 + l)·NE + [0, NE). Input j steps back
// (j < KW) comes from lane l − ceil(j/NE) (halo_before). Step indices inside the task are 32-bit
// (a task has at most warp_steps); sub-chunks wholly inside it run with no range tests.
template <class T, int NE, int KW, bool kEx>
__global__ void __launch_bounds__(kConvThreads, kTimeBlocksPerSm) fwd_time(const Conv1dParams p) {
  using A = acc_t<T>;
  constexpr int U = 4, kSub = 32 * U * NE;
  const int lane = threadIdx.x & 31;
  TimeTask tk;
  if (!time_task(p, tk)) return;
  const int64_t b = tk.b, c = tk.c, sg = tk.sg;
  const int n = tk.t_end > tk.t_beg ? static_cast<int>(tk.t_end - tk.t_beg) : 0;  // steps of this task
  A wr[KW], bias;  // before the first copies: after them measured 2-4 points slower
  load_taps<A, KW>(p, c, wr, bias);
  const int64_t xst = NE > 1 ? 1 : p.xs[2], yst = NE > 1 ? 1 : p.outs[2];  // vectors need unit stride
  const T* xr = row_ptr<const T>(p.x, p.xs, b, c) + tk.t_beg * xst;
  T* yr = row_ptr<T>(p.out, p.outs, b, c) + tk.t_beg * yst;
  const int lo = lane * NE;  // this lane's first step in an iteration, relative to it
  // sub-chunk k's U vectors per lane, staged kGroups − 1 sub-chunks ahead
  using Ring = StageRing<Vec<T, NE>, U, 1, 3>;
  __shared__ Vec<T, NE> stage[Ring::kSlots][kConvThreads];
  const int nsub = (n + kSub - 1) / kSub;
  const unsigned s0 = smem_u32(&stage[0][threadIdx.x]);
  auto issue = [&](int k) {
    if constexpr (Ring::kAsync) {
      if (k < nsub) {
        const int r0 = k * kSub + lo;
        const bool full = (k + 1) * kSub <= n;
        const unsigned d = s0 + Ring::slot(k) * Ring::kSlotBytes;
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (full || r0 + u * 32 * NE < n)
            cp_async<sizeof(Vec<T, NE>)>(d + u * Ring::kSlotBytes, xr + int64_t{r0 + u * 32 * NE} * xst);
      }
      cp_async_commit();
    }
  };
  Ring::start(issue);
  A carry[KW];  // halo_before's values for the first lanes
  halo_carry_init<T, NE, KW>(p, b, c, tk.t_beg, lane, carry);
  // one sub-chunk from relative step r0 + lo; kFull: every vector inside the task
  auto sub_chunk = [&]<bool kFull>(int k, int r0) {
    A xv[U][NE];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int r = r0 + u * 32 * NE;
      if (!kFull && r >= n) {
#pragma unroll
        for (int e = 0; e < NE; ++e) xv[u][e] = A(0);
      } else if constexpr (Ring::kAsync) {
        unpack<T, NE>(stage[Ring::slot(k) + u][threadIdx.x], xv[u]);
      } else {
        load_vec<T, NE>(xr, r, xst, xv[u]);
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      A h[KW];  // h[j] = x at (this vector's first step) − j
      halo_before<A, NE, KW>(xv[u], carry, h, lane, true);
      A y[NE];
#pragma unroll
      for (int e = 0; e < NE; ++e) {
        A z = bias;
#pragma unroll
        for (int j = 0; j < KW; ++j)
          if (kEx || j < p.W) z += wr[j] * (e >= j ? xv[u][e >= j ? e - j : 0] : h[e >= j ? 0 : j - e]);
        y[e] = z;
      }
      act_vec<A, NE>(y, p.silu);
      const int r = r0 + u * 32 * NE;
      if (kFull || r < n) store_vec<T, NE>(yr, r, yst, y);
    }
  };
  for (int k = 0; k < nsub; ++k) {
    Ring::advance(issue, k);
    const int r0 = k * kSub + lo;
    if ((k + 1) * kSub <= n) sub_chunk.template operator()<true>(k, r0);
    else sub_chunk.template operator()<false>(k, r0);
  }
  if (p.sfin != nullptr && sg == 0 && lane < p.W - 1) {
    const A v = x_at<T>(p, b, c, p.L - (p.W - 1) + lane);
    static_cast<T*>(p.sfin)[b * p.sfins[0] + c * p.sfins[1] + lane * p.sfins[2]] = from_acc<T>(v);
  }
}

// ---------------------------------------------------------------- chan kernel
// Lane = NE channels, warp = p.warp_steps steps of one batch row, block = 4 consecutive warps in
// time. Steps go KW at a time: the KW new inputs are loaded together, the previous KW kept.
// Step indices inside the warp's range are 32-bit (at most warp_steps).
template <class T, int NE, int KW, bool kEx>
__global__ void __launch_bounds__(kConvThreads, 6) fwd_chan(const Conv1dParams p) {
  using A = acc_t<T>;
  const int warp = threadIdx.x >> 5;
  const ChanTask tk = chan_task(p, NE);
  const int64_t b = tk.b, sg = tk.sg, c0 = tk.c0, t_beg = tk.t_beg;
  if (c0 >= p.C) return;
  const int n = tk.t_end > t_beg ? static_cast<int>(tk.t_end - t_beg) : 0;  // steps of this warp
  const int64_t xst = p.xs[2], yst = p.outs[2];
  const T* xi = static_cast<const T*>(p.x) + b * p.xs[0] + c0 * p.xs[1] + t_beg * xst;  // next group to issue
  const T* xg = xi;                                                                     // this group
  T* yo = static_cast<T*>(p.out) + b * p.outs[0] + c0 * p.outs[1] + t_beg * yst;        // its output
  // groups of KW steps staged kGroups − 1 groups ahead (issued in order)
  using Ring = StageRing<Vec<T, NE>, KW, 1, 4>;
  __shared__ Vec<T, NE> stage[Ring::kSlots][kConvThreads];
  const unsigned s0 = smem_u32(&stage[0][threadIdx.x]);
  auto issue = [&](int g) {  // group g = steps g·KW + [0, KW)
    if constexpr (Ring::kAsync) {
      const unsigned sa = s0 + Ring::slot(g) * Ring::kSlotBytes;
      if (g * KW + KW <= n) {
#pragma unroll
        for (int s = 0; s < KW; ++s) cp_async<sizeof(Vec<T, NE>)>(sa + s * Ring::kSlotBytes, xi + s * xst);
      } else {
#pragma unroll
        for (int s = 0; s < KW; ++s)
          if (g * KW + s < n) cp_async<sizeof(Vec<T, NE>)>(sa + s * Ring::kSlotBytes, xi + s * xst);
      }
      xi += KW * xst;
      cp_async_commit();
    }
  };
  Ring::start(issue);
  // taps and the previous inputs after the first copies, so that their latencies overlap
  A wr[KW][NE], bias[NE];
  load_chan_taps<A, KW, NE>(p, c0, wr, bias);
  A ring[KW][NE];  // ring[s] = x(tb − KW + s); a warp past the row end reads nothing
  load_x_window<T, KW, NE>(p, b, c0, t_beg - KW, ring);
  for (int g = 0, sb = 0; sb < n; ++g, sb += KW) {
    Ring::advance(issue, g);
    const int slot = Ring::slot(g);
    const bool full = sb + KW <= n;  // the whole group is inside the range: no test per step
    A nx[KW][NE];
#pragma unroll
    for (int s = 0; s < KW; ++s) {
      if (!full && sb + s >= n) {
#pragma unroll
        for (int e = 0; e < NE; ++e) nx[s][e] = A(0);
      } else if constexpr (Ring::kAsync) {
        unpack<T, NE>(stage[slot + s][threadIdx.x], nx[s]);
      } else {
        load_vec<T, NE>(xg + s * xst, 0, p.xs[1], nx[s]);
      }
    }
#pragma unroll
    for (int s = 0; s < KW; ++s) {
      if (!full && sb + s >= n) break;
      A y[NE];
#pragma unroll
      for (int e = 0; e < NE; ++e) {
        A z = bias[e];
#pragma unroll
        for (int j = 0; j < KW; ++j)
          if (kEx || j < p.W) z += wr[j][e] * (s >= j ? nx[s >= j ? s - j : 0][e] : ring[s >= j ? 0 : KW + s - j][e]);
        y[e] = z;
      }
      act_vec<A, NE>(y, p.silu);
      store_vec<T, NE>(yo + s * yst, 0, p.outs[1], y);
    }
#pragma unroll
    for (int s = 0; s < KW; ++s)
#pragma unroll
      for (int e = 0; e < NE; ++e) ring[s][e] = nx[s][e];
    xg += KW * xst;
    yo += KW * yst;
  }
  if (p.sfin != nullptr && sg == 0 && warp == 0) {
    for (int j = 0; j < p.W - 1; ++j)
#pragma unroll
      for (int e = 0; e < NE; ++e)
        if (c0 + e < p.C)
          static_cast<T*>(p.sfin)[b * p.sfins[0] + (c0 + e) * p.sfins[1] + j * p.sfins[2]] =
              from_acc<T>(x_at<T>(p, b, c0 + e, p.L - (p.W - 1) + j));
  }
}

struct Fwd {  // this direction's launch templates for direction_launcher
  static constexpr bool kBackward = false;
  template <class T, int NE, int KW, bool kEx>
  static cudaError_t time(const Conv1dParams& p, cudaStream_t s) {
    return launch_conv(fwd_time<T, NE, KW, kEx>, ConvKernel::kTime, p, s);
  }
  template <class T, int NE, int KW, bool kEx>
  static cudaError_t chan(const Conv1dParams& p, cudaStream_t s) {
    return launch_conv(fwd_chan<T, NE, KW, kEx>, ConvKernel::kChan, p, s);
  }
};

// ---------------------------------------------------------------- update (decode step)
// A thread takes one channel c of kUpdRows consecutive batch rows (same taps): it loads the W−1
// state entries before the new tokens and the first token of every row, then the taps, before
// using any (a decode step is a chain of memory latencies; one row per thread left each thread
// with one load in flight), walks each row's n new tokens with the window in registers, and
// writes the state (shift or circular). Adjacent threads take adjacent channels (coalesced).
// KM (4 or 8) is the register window, as the main kernels' KW.
inline constexpr int kUpdRows = 4;
template <class T, int KM>
__global__ void __launch_bounds__(kConvThreads) update_kernel(const Conv1dUpdateParams p) {
  using A = acc_t<T>;
  constexpr int R = kUpdRows;
  const int64_t i = int64_t{blockIdx.x} * kConvThreads + threadIdx.x, groups = (p.B + R - 1) / R;
  if (i >= groups * p.C) return;
  // 32-bit division where the thread count allows (a 64-bit one is a long subroutine)
  const int64_t g = groups * p.C <= INT32_MAX ? static_cast<int64_t>(static_cast<uint32_t>(i) / static_cast<uint32_t>(p.C)) : i / p.C;
  const int64_t c = i - g * p.C, S = p.S;
  T* st[R];
  const T* xr[R];
  int64_t head[R];  // circular: slot of the row's next token
  bool live[R];     // a real batch row with a state row
  T raw[R][KM];     // raw[k][j] = row k's input j steps before its first new token (j in [1, W))
  T x0[R];
#pragma unroll
  for (int k = 0; k < R; ++k) {
    const int64_t b = g * R + k;
    const int64_t row = b >= p.B ? -1 : p.indices != nullptr ? int64_t{p.indices[b * p.indices_s]} : b;
    live[k] = row >= 0 && row < p.state_rows;
    st[k] = static_cast<T*>(p.state) + (live[k] ? row : 0) * p.ss[0] + c * p.ss[1];
    xr[k] = static_cast<const T*>(p.x) + (b < p.B ? b : 0) * p.xs[0] + c * p.xs[1];
    head[k] = live[k] && p.seqlens != nullptr ? ((int64_t{p.seqlens[b * p.seqlens_s]} % S) + S) % S : 0;
#pragma unroll
    for (int j = 1; j < KM; ++j) {
      const int64_t back = j < p.W ? j : 1;
      if (live[k]) raw[k][j] = st[k][(p.seqlens != nullptr ? (((head[k] - back) % S) + S) % S : S - back) * p.ss[2]];
    }
    if (live[k]) x0[k] = xr[k][0];
  }
  A wr[KM], bias;  // wr[j] multiplies the input j steps back (0 for j >= W)
  load_taps<A, KM>(p, c, wr, bias);
#pragma unroll
  for (int k = 0; k < R; ++k) {
    const int64_t b = g * R + k;
    if (b >= p.B) break;
    T* yr = static_cast<T*>(p.y) + b * p.ys[0] + c * p.ys[1];
    if (!live[k]) {  // padding row: y zeros, no state
      for (int64_t t = 0; t < p.n; ++t) yr[t * p.ys[2]] = from_acc<T>(A(0));
      continue;
    }
    A h[KM];  // h[j] = input j steps before the current token
#pragma unroll
    for (int j = 0; j < KM; ++j) h[j] = j > 0 && j < p.W ? to_acc(raw[k][j]) : A(0);
    T xt_raw = x0[k];
    for (int64_t t = 0; t < p.n; ++t) {
      const A xt = to_acc(xt_raw);
      if (t + 1 < p.n) xt_raw = xr[k][(t + 1) * p.xs[2]];
      A z = bias + wr[0] * xt;
#pragma unroll
      for (int j = 1; j < KM; ++j)
        if (j < p.W) z += wr[j] * h[j];
#pragma unroll
      for (int j = KM - 1; j > 1; --j) h[j] = h[j - 1];
      h[1] = xt;
      A y[1] = {z};
      act_vec<A, 1>(y, p.silu);
      yr[t * p.ys[2]] = from_acc<T>(y[0]);
    }
    if (p.seqlens != nullptr) {
      for (int64_t t = 0; t < p.n; ++t) st[k][((head[k] + t) % S) * p.ss[2]] = xr[k][t * p.xs[2]];
    } else if (S == p.W - 1) {  // the shifted state is the window itself: slot S − j = h[j]
#pragma unroll
      for (int j = 1; j < KM; ++j)
        if (j < p.W) st[k][(S - j) * p.ss[2]] = from_acc<T>(h[j]);
    } else {
      for (int64_t j = 0; j < S; ++j)
        st[k][j * p.ss[2]] = j + p.n < S ? st[k][(j + p.n) * p.ss[2]] : xr[k][(j + p.n - S) * p.xs[2]];
    }
  }
}

template <class T, int KM>
cudaError_t launch_update(const Conv1dUpdateParams& p, cudaStream_t s) {
  const int64_t blocks = ((p.B + kUpdRows - 1) / kUpdRows * p.C + kConvThreads - 1) / kConvThreads;
  return launch_kernel(update_kernel<T, KM>, dim3(static_cast<unsigned>(blocks)), dim3(kConvThreads), 0, s, p);
}

}  // namespace

Conv1dLaunchFn conv1d_fwd_launcher(DType t, ConvKernel k, bool vec, int width) {
  return direction_launcher<Fwd>(t, k, vec, width);
}

Conv1dUpdateLaunchFn conv1d_update_launcher(DType t, int width) {
  Conv1dUpdateLaunchFn fn = nullptr;
  dispatch_dtype<CudaTypes>(t, FloatDTypes{}, [&]<class T>() {
    fn = conv_kw(width) == 4 ? &launch_update<T, 4> : &launch_update<T, 8>;
  });
  return fn;
}

}  // namespace baracuda::detail
