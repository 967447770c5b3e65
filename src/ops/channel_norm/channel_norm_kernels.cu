// ChannelNormPlan's and ChannelNormBackwardPlan's kernels: chunk partials (a warp or a thread per
// chunk of a cell), the per-statistic merge (a thread per statistic, cells and chunks in order)
// and the element pass (x's storage order). See channel_norm_geometry.hpp for the layout.
#include <algorithm>

#include "core/arch.hpp"
#include "core/launch.cuh"
#include "core/row_reduce.cuh"
#include "ops/channel_norm/channel_norm_geometry.hpp"

namespace baracuda::cn {

namespace {

constexpr int kThreads = 256;

// (count, mean, M2) of a set of elements; merge is Chan's pairwise update.
template <class C>
struct Moments {
  C n, mean, m2;
};
template <class C>
__device__ __forceinline__ Moments<C> merge(const Moments<C>& a, const Moments<C>& b) {
  if (b.n == C(0)) return a;
  if (a.n == C(0)) return b;
  const C n = a.n + b.n, d = b.mean - a.mean, f = b.n / n;
  return {n, a.mean + d * f, a.m2 + b.m2 + d * d * a.n * f};
}

__device__ __forceinline__ int64_t stat_of(const CnGeom& g, int64_t n, int64_t c) {
  return g.kind == kBatch ? c : g.kind == kGroup ? n * g.G + c / g.Cg : n * g.C + c;
}
// The offset of statistic `st` in the mean (or rstd) view.
__device__ __forceinline__ int64_t stat_offset(const CnGeom& g, int64_t st, int64_t s0, int64_t s1) {
  if (g.kind == kBatch) return st * s1;
  const int64_t per = g.kind == kGroup ? g.G : g.C;
  return st / per * s0 + st % per * s1;
}
// The cells of statistic st: first, count, and the step between consecutive ones (cells are n·C + c).
__device__ __forceinline__ void cells_of(const CnGeom& g, int64_t st, int64_t* first, int64_t* count, int64_t* step) {
  if (g.kind == kBatch) *first = st, *count = g.N, *step = g.C;
  else if (g.kind == kGroup) *first = st / g.G * g.C + st % g.G * g.Cg, *count = g.Cg, *step = 1;
  else *first = st, *count = 1, *step = 1;
}

template <class C>
__device__ __forceinline__ C warp_sum(C v) {
  return rows::warp_all(v, rows::SumOp{});
}

// Chunk partials. W = 32: a warp per chunk (lanes along s); W = 1: a thread per chunk. Forward:
// (mean, M2) of the chunk; backward: (Σdy, Σdy·(x - mean of its statistic)).
template <class T, bool Bwd, int W>
__global__ void __launch_bounds__(kThreads) partials_kernel(const CnGeom g) {
  using C = acc_t<T>;
  const int lane = W == 32 ? static_cast<int>(threadIdx.x) & 31 : 0;
  const int64_t total = g.N * g.C * g.chunks;
  const int64_t per_block = kThreads / W;
  const int64_t step = static_cast<int64_t>(gridDim.x) * per_block;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * per_block + threadIdx.x / W; k < total; k += step) {
    const int64_t c = k % g.C, nj = k / g.C, j = nj % g.chunks, n = nj / g.chunks;
    const int64_t lo = j * g.chunk, hi = std::min(g.S, lo + g.chunk);
    const T* x = static_cast<const T*>(g.x) + n * g.sn[kX] + c * g.sc[kX];
    C a = C(0), b = C(0);
    if constexpr (!Bwd) {
      // sums shifted by the lane's first element (accurate for large means), then (n, mean, M2)
      C shift = C(0), cnt = C(0);
      if (lo + lane < hi) shift = to_acc(x[(lo + lane) * g.ss[kX]]);
      for (int64_t s = lo + lane; s < hi; s += W) {
        const C d = to_acc(x[s * g.ss[kX]]) - shift;
        a += d, b += d * d, cnt += C(1);
      }
      Moments<C> m{cnt, cnt > C(0) ? shift + a / cnt : C(0), cnt > C(0) ? b - a * a / cnt : C(0)};
      if constexpr (W == 32) {
#pragma unroll
        for (int o = 16; o >= 1; o >>= 1) {
          Moments<C> other{__shfl_xor_sync(0xffffffffu, m.n, o), __shfl_xor_sync(0xffffffffu, m.mean, o),
                           __shfl_xor_sync(0xffffffffu, m.m2, o)};
          // the lower lane's set first on both sides: every lane gets the same bits
          m = (lane & o) ? merge(other, m) : merge(m, other);
        }
      }
      a = m.mean, b = m.m2;
    } else {
      const T* dy = static_cast<const T*>(g.dy) + n * g.sn[kYd] + c * g.sc[kYd];
      const int64_t st = stat_of(g, n, c);
      const C mu = static_cast<const C*>(g.mean)[stat_offset(g, st, g.ms0, g.ms1)];
      for (int64_t s = lo + lane; s < hi; s += W) {
        const C d = to_acc(dy[s * g.ss[kYd]]);
        a += d, b += d * (to_acc(x[s * g.ss[kX]]) - mu);
      }
      if constexpr (W == 32) a = warp_sum(a), b = warp_sum(b);
    }
    if (lane == 0) {
      C* p = static_cast<C*>(g.part) + 2 * ((n * g.C + c) * g.chunks + j);
      p[0] = a, p[1] = b;
    }
  }
}

// The vector form of partials_kernel (vec_p: 16-byte pieces). W = 32: a warp per chunk, lane
// pieces of V consecutive spatial elements; W = 1: a thread per chunk of V consecutive channels
// (channels_last), each channel its own sums. Same partials, same layout.
template <class T, bool Bwd, int W>
__global__ void __launch_bounds__(kThreads) partials_vec_kernel(const CnGeom g) {
  using C = acc_t<T>;
  constexpr int V = 16 / static_cast<int>(sizeof(T));
  constexpr int K = W == 32 ? 1 : V;  // channels per thread
  const int lane = W == 32 ? static_cast<int>(threadIdx.x) & 31 : 0;
  const int64_t cq = g.C / K;  // channel groups
  const int64_t total = g.N * cq * g.chunks;
  const int64_t per_block = kThreads / W;
  const int64_t step = static_cast<int64_t>(gridDim.x) * per_block;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * per_block + threadIdx.x / W; k < total; k += step) {
    const int64_t c0 = k % cq * K, nj = k / cq, j = nj % g.chunks, n = nj / g.chunks;
    const int64_t lo = j * g.chunk, hi = std::min(g.S, lo + g.chunk);
    const T* x = static_cast<const T*>(g.x) + n * g.sn[kX] + c0 * g.sc[kX];
    const T* dy = Bwd ? static_cast<const T*>(g.dy) + n * g.sn[kYd] + c0 * g.sc[kYd] : nullptr;
    C a[K], b[K], shift[K], mu[K];
#pragma unroll
    for (int e = 0; e < K; ++e) {
      a[e] = b[e] = shift[e] = mu[e] = C(0);
      if constexpr (Bwd) mu[e] = static_cast<const C*>(g.mean)[stat_offset(g, stat_of(g, n, c0 + e), g.ms0, g.ms1)];
    }
    C cnt = C(0);
    // pieces: W = 32, V spatial elements at s = lo + (lane + 32 t)·V; W = 1, V channels at each s
    const int64_t first = W == 32 ? lo + lane * V : lo, stride = W == 32 ? 32 * V : 1;
    if constexpr (!Bwd) {
      if (first < hi) {
        C v[V];
        load_acc_vec<T, V>(x + first * g.ss[kX], v);
#pragma unroll
        for (int e = 0; e < K; ++e) shift[e] = v[W == 32 ? 0 : e];
      }
    }
    for (int64_t s = first; s < hi; s += stride) {
      C v[V];
      load_acc_vec<T, V>(x + s * g.ss[kX], v);
      if constexpr (!Bwd) {
#pragma unroll
        for (int q = 0; q < V; ++q) {
          const int e = W == 32 ? 0 : q;
          const C d = v[q] - shift[e];
          a[e] += d, b[e] += d * d;
        }
        cnt += W == 32 ? C(V) : C(1);
      } else {
        C d[V];
        load_acc_vec<T, V>(dy + s * g.ss[kYd], d);
#pragma unroll
        for (int q = 0; q < V; ++q) {
          const int e = W == 32 ? 0 : q;
          a[e] += d[q], b[e] += d[q] * (v[q] - mu[e]);
        }
      }
    }
#pragma unroll
    for (int e = 0; e < K; ++e) {
      C ra = a[e], rb = b[e];
      if constexpr (!Bwd) {
        Moments<C> m{cnt, cnt > C(0) ? shift[e] + a[e] / cnt : C(0), cnt > C(0) ? b[e] - a[e] * a[e] / cnt : C(0)};
        if constexpr (W == 32) {
#pragma unroll
          for (int o = 16; o >= 1; o >>= 1) {
            Moments<C> other{__shfl_xor_sync(0xffffffffu, m.n, o), __shfl_xor_sync(0xffffffffu, m.mean, o),
                             __shfl_xor_sync(0xffffffffu, m.m2, o)};
            m = (lane & o) ? merge(other, m) : merge(m, other);
          }
        }
        ra = m.mean, rb = m.m2;
      } else if constexpr (W == 32) {
        ra = warp_sum(ra), rb = warp_sum(rb);
      }
      if (lane == 0) {
        C* p = static_cast<C*>(g.part) + 2 * ((n * g.C + c0 + e) * g.chunks + j);
        p[0] = ra, p[1] = rb;
      }
    }
  }
}

template <class P, class C>
__device__ __forceinline__ C param_at(const void* p, int64_t stride, int64_t c, C dflt) {
  return p ? static_cast<C>(to_acc(static_cast<const P*>(p)[c * stride])) : dflt;
}

// Forward statistics: a thread per statistic merges its cells' chunks in order; writes mean /
// rstd, the cells' table and (batch_norm, training) the running stats. Eval: from the running
// stats.
template <class T, class P>
__global__ void __launch_bounds__(kThreads) stats_kernel(const CnGeom g) {
  using C = acc_t<T>;
  const int64_t nst = g.stats();
  for (int64_t st = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; st < nst; st += static_cast<int64_t>(gridDim.x) * kThreads) {
    int64_t first, count, step;
    cells_of(g, st, &first, &count, &step);
    C mean, var;
    if (g.training) {
      Moments<C> m{C(0), C(0), C(0)};
      const C* part = static_cast<const C*>(g.part);
      for (int64_t i = 0; i < count; ++i) {
        const int64_t cell = first + i * step;
        for (int64_t j = 0; j < g.chunks; ++j) {
          const int64_t lo = j * g.chunk, len = std::min(g.S, lo + g.chunk) - lo;
          const C* p = part + 2 * (cell * g.chunks + j);
          m = merge(m, Moments<C>{static_cast<C>(len), p[0], p[1]});
        }
      }
      mean = m.mean;
      var = m.n > C(0) ? m.m2 / m.n : C(NAN);
      if (g.running && g.kind == kBatch) {
        P* rm = static_cast<P*>(g.rm) + st * g.rmst;
        P* rv = static_cast<P*>(g.rv) + st * g.rvst;
        const C mo = static_cast<C>(g.momentum);
        *rm = from_c<P>(static_cast<acc_t<P>>((C(1) - mo) * to_acc(*rm) + mo * mean), false);
        *rv = from_c<P>(static_cast<acc_t<P>>((C(1) - mo) * to_acc(*rv) + mo * m.m2 / (m.n - C(1))), false);
      }
    } else {  // the running stats of the statistic's channel
      const int64_t c = g.kind == kBatch ? st : st % g.C;
      mean = static_cast<C>(to_acc(static_cast<const P*>(g.rm)[c * g.rmst]));
      var = static_cast<C>(to_acc(static_cast<const P*>(g.rv)[c * g.rvst]));
    }
    const C rstd = C(1) / sqrt(var + static_cast<C>(g.eps));
    static_cast<C*>(g.mean)[stat_offset(g, st, g.ms0, g.ms1)] = mean;
    static_cast<C*>(g.rstd)[stat_offset(g, st, g.rs0, g.rs1)] = rstd;
    for (int64_t i = 0; i < count; ++i) {
      const int64_t cell = first + i * step, c = cell % g.C;
      C* t = static_cast<C*>(g.cell) + 4 * cell;
      t[0] = mean, t[1] = rstd * param_at<P, C>(g.w, g.wst, c, C(1)), t[2] = param_at<P, C>(g.b, g.bst, c, C(0)), t[3] = var;
    }
  }
}

// instance_norm's running stats (training): a thread per channel, the batch's means and unbiased
// variances averaged over n in order.
template <class T, class P>
__global__ void __launch_bounds__(kThreads) instance_running_kernel(const CnGeom g) {
  using C = acc_t<T>;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; c < g.C; c += static_cast<int64_t>(gridDim.x) * kThreads) {
    C sm = C(0), sv = C(0);
    for (int64_t n = 0; n < g.N; ++n) {
      const C* t = static_cast<const C*>(g.cell) + 4 * (n * g.C + c);
      sm += t[0], sv += t[3] * static_cast<C>(g.S) / static_cast<C>(g.S - 1);
    }
    const C mo = static_cast<C>(g.momentum), inv = C(1) / static_cast<C>(g.N);
    P* rm = static_cast<P*>(g.rm) + c * g.rmst;
    P* rv = static_cast<P*>(g.rv) + c * g.rvst;
    *rm = from_c<P>(static_cast<acc_t<P>>((C(1) - mo) * to_acc(*rm) + mo * sm * inv), false);
    *rv = from_c<P>(static_cast<acc_t<P>>((C(1) - mo) * to_acc(*rv) + mo * sv * inv), false);
  }
}

// Backward coefficients: a thread per statistic sums its cells' chunks (Σg, Σg·(x - mean)) and
// writes each cell's (mean, a1, a2, a3).
template <class T, class P>
__global__ void __launch_bounds__(kThreads) bwd_stats_kernel(const CnGeom g) {
  using C = acc_t<T>;
  const int64_t nst = g.stats();
  for (int64_t st = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; st < nst; st += static_cast<int64_t>(gridDim.x) * kThreads) {
    int64_t first, count, step;
    cells_of(g, st, &first, &count, &step);
    const C mean = static_cast<const C*>(g.mean)[stat_offset(g, st, g.ms0, g.ms1)];
    const C rstd = static_cast<const C*>(g.rstd)[stat_offset(g, st, g.rs0, g.rs1)];
    C sg = C(0), sgx = C(0);
    if (g.training) {
      const C* part = static_cast<const C*>(g.part);
      for (int64_t i = 0; i < count; ++i) {
        const int64_t cell = first + i * step;
        const C w = param_at<P, C>(g.w, g.wst, cell % g.C, C(1));
        C a = C(0), b = C(0);
        for (int64_t j = 0; j < g.chunks; ++j) a += part[2 * (cell * g.chunks + j)], b += part[2 * (cell * g.chunks + j) + 1];
        sg += w * a, sgx += w * b;
      }
    }
    const C M = static_cast<C>(count) * static_cast<C>(g.S);
    for (int64_t i = 0; i < count; ++i) {
      const int64_t cell = first + i * step;
      const C w = param_at<P, C>(g.w, g.wst, cell % g.C, C(1));
      C* t = static_cast<C*>(g.cell) + 4 * cell;
      t[0] = mean, t[1] = rstd * w;
      t[2] = g.training ? -rstd * rstd * rstd * sgx / M : C(0);
      t[3] = g.training ? -rstd * sg / M : C(0);
    }
  }
}

// dweight / dbias: a thread per channel, its cells' chunk sums over n in order.
template <class T, class P>
__global__ void __launch_bounds__(kThreads) param_grad_kernel(const CnGeom g) {
  using C = acc_t<T>;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; c < g.C; c += static_cast<int64_t>(gridDim.x) * kThreads) {
    C sw = C(0), sb = C(0);
    const C* part = static_cast<const C*>(g.part);
    for (int64_t n = 0; n < g.N; ++n) {
      const int64_t cell = n * g.C + c, st = stat_of(g, n, c);
      const C rstd = static_cast<const C*>(g.rstd)[stat_offset(g, st, g.rs0, g.rs1)];
      C a = C(0), b = C(0);
      for (int64_t j = 0; j < g.chunks; ++j) a += part[2 * (cell * g.chunks + j)], b += part[2 * (cell * g.chunks + j) + 1];
      sb += a, sw += rstd * b;
    }
    if (g.dw) static_cast<P*>(g.dw)[c * g.dwst] = from_c<P>(static_cast<acc_t<P>>(sw), false);
    if (g.db) static_cast<P*>(g.db)[c * g.dbst] = from_c<P>(static_cast<acc_t<P>>(sb), false);
  }
}

// The element pass over rows x inner in x's storage order: forward y = (x - mean)·a + b; backward
// dx = a1·dy + a2·(x - mean) + a3. Small: 32-bit indices through FastDiv.
template <class T, bool Bwd, bool Small>
__global__ void __launch_bounds__(kThreads) elements_kernel(const CnGeom g) {
  using C = acc_t<T>;
  const int64_t total = g.N * g.C * g.S;
  const int64_t inner = g.channels_last ? g.C : g.S, mid = g.channels_last ? g.S : g.C;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < total; i += static_cast<int64_t>(gridDim.x) * kThreads) {
    int64_t row, col, n, m;
    if constexpr (Small) {
      row = g.inner_div.div(static_cast<uint32_t>(i));
      col = i - row * inner;
      n = g.mid_div.div(static_cast<uint32_t>(row));
      m = row - n * mid;
    } else {
      row = i / inner, col = i - row * inner, n = row / mid, m = row - n * mid;
    }
    const int64_t c = g.channels_last ? col : m, s = g.channels_last ? m : col;
    const C* t = static_cast<const C*>(g.cell) + 4 * (n * g.C + c);
    const C xv = to_acc(static_cast<const T*>(g.x)[n * g.sn[kX] + c * g.sc[kX] + s * g.ss[kX]]);
    if constexpr (!Bwd) {
      static_cast<T*>(g.y)[n * g.sn[kYd] + c * g.sc[kYd] + s * g.ss[kYd]] = from_c<T>(static_cast<acc_t<T>>((xv - t[0]) * t[1] + t[2]), false);
    } else {
      const C d = to_acc(static_cast<const T*>(g.dy)[n * g.sn[kYd] + c * g.sc[kYd] + s * g.ss[kYd]]);
      static_cast<T*>(g.dx)[n * g.sn[kDx] + c * g.sc[kDx] + s * g.ss[kDx]] =
          from_c<T>(static_cast<acc_t<T>>(t[1] * d + t[2] * (xv - t[0]) + t[3]), false);
    }
  }
}

// The element pass in 16-byte pieces (vec_e): V consecutive elements along the inner axis (one
// cell for NCHW order, V cells of one (n, s) for channels_last).
template <class T, bool Bwd, bool Small>
__global__ void __launch_bounds__(kThreads) elements_vec_kernel(const CnGeom g) {
  using C = acc_t<T>;
  constexpr int V = 16 / static_cast<int>(sizeof(T));
  const int64_t total = g.N * g.C * g.S / V;
  const int64_t inner = g.channels_last ? g.C : g.S, mid = g.channels_last ? g.S : g.C;
  for (int64_t q = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; q < total; q += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int64_t i = q * V;
    int64_t row, col, n, m;
    if constexpr (Small) {
      row = g.inner_div.div(static_cast<uint32_t>(i));
      col = i - row * inner;
      n = g.mid_div.div(static_cast<uint32_t>(row));
      m = row - n * mid;
    } else {
      row = i / inner, col = i - row * inner, n = row / mid, m = row - n * mid;
    }
    const int64_t c = g.channels_last ? col : m, s = g.channels_last ? m : col;
    C xv[V], o[V];
    load_acc_vec<T, V>(static_cast<const T*>(g.x) + n * g.sn[kX] + c * g.sc[kX] + s * g.ss[kX], xv);
    const C* t0 = static_cast<const C*>(g.cell) + 4 * (n * g.C + c);
    if constexpr (!Bwd) {
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const C* t = g.channels_last ? t0 + 4 * e : t0;
        o[e] = (xv[e] - t[0]) * t[1] + t[2];
      }
      store_global16<T, V>(static_cast<T*>(g.y) + n * g.sn[kYd] + c * g.sc[kYd] + s * g.ss[kYd], o);
    } else {
      C d[V];
      load_acc_vec<T, V>(static_cast<const T*>(g.dy) + n * g.sn[kYd] + c * g.sc[kYd] + s * g.ss[kYd], d);
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const C* t = g.channels_last ? t0 + 4 * e : t0;
        o[e] = t[1] * d[e] + t[2] * (xv[e] - t[0]) + t[3];
      }
      store_global16<T, V>(static_cast<T*>(g.dx) + n * g.sn[kDx] + c * g.sc[kDx] + s * g.ss[kDx], o);
    }
  }
}

unsigned grid_for(int64_t items, int64_t per_block, int64_t cap) {
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(items / per_block + (items % per_block != 0), cap)));
}

template <class T, class P, bool Bwd>
cudaError_t launch(const CnGeom& g, cudaStream_t stream) {
  const int64_t cap = int64_t{std::max(current_device_sm_count(), 1)} * 16;
  const int64_t cells = g.N * g.C;
  if (cells == 0) return cudaSuccess;
  const bool partials = Bwd ? (g.training || g.dw || g.db) : g.training;
  constexpr int V = 16 / static_cast<int>(sizeof(T));
  if (partials && g.S > 0 && g.vec_p) {
    if (g.warp)
      BARACUDA_CUDA_TRY(launch_kernel(partials_vec_kernel<T, Bwd, 32>, dim3(grid_for(cells * g.chunks, kThreads / 32, cap)), dim3(kThreads), 0,
                                      stream, g));
    else
      BARACUDA_CUDA_TRY(launch_kernel(partials_vec_kernel<T, Bwd, 1>, dim3(grid_for(cells / V * g.chunks, kThreads, cap)), dim3(kThreads), 0,
                                      stream, g));
  } else if (partials && g.S > 0) {
    const int64_t chunks_total = cells * g.chunks;
    if (g.warp)
      BARACUDA_CUDA_TRY(launch_kernel(partials_kernel<T, Bwd, 32>, dim3(grid_for(chunks_total, kThreads / 32, cap)), dim3(kThreads), 0, stream, g));
    else
      BARACUDA_CUDA_TRY(launch_kernel(partials_kernel<T, Bwd, 1>, dim3(grid_for(chunks_total, kThreads, cap)), dim3(kThreads), 0, stream, g));
  }
  const unsigned sgrid = grid_for(g.stats(), kThreads, cap);
  if constexpr (!Bwd) {
    BARACUDA_CUDA_TRY(launch_kernel(stats_kernel<T, P>, dim3(sgrid), dim3(kThreads), 0, stream, g));
    if (g.training && g.running && g.kind == kInstance)
      BARACUDA_CUDA_TRY(launch_kernel(instance_running_kernel<T, P>, dim3(grid_for(g.C, kThreads, cap)), dim3(kThreads), 0, stream, g));
  } else {
    BARACUDA_CUDA_TRY(launch_kernel(bwd_stats_kernel<T, P>, dim3(sgrid), dim3(kThreads), 0, stream, g));
    if (g.dw || g.db) BARACUDA_CUDA_TRY(launch_kernel(param_grad_kernel<T, P>, dim3(grid_for(g.C, kThreads, cap)), dim3(kThreads), 0, stream, g));
  }
  if (g.S == 0) return cudaSuccess;
  if (g.vec_e) {
    const unsigned vgrid = grid_for(cells * g.S / V, kThreads, cap * 8);
    return g.small ? launch_kernel(elements_vec_kernel<T, Bwd, true>, dim3(vgrid), dim3(kThreads), 0, stream, g)
                   : launch_kernel(elements_vec_kernel<T, Bwd, false>, dim3(vgrid), dim3(kThreads), 0, stream, g);
  }
  const unsigned egrid = grid_for(cells * g.S, kThreads, cap * 8);
  return g.small ? launch_kernel(elements_kernel<T, Bwd, true>, dim3(egrid), dim3(kThreads), 0, stream, g)
                 : launch_kernel(elements_kernel<T, Bwd, false>, dim3(egrid), dim3(kThreads), 0, stream, g);
}

}  // namespace

CnLaunchFn find_channel_norm(DType x, DType param, bool backward) {
  auto pick = [&]<class T, class P>() -> CnLaunchFn { return backward ? &launch<T, P, true> : &launch<T, P, false>; };
  if (x == param) return pick_float_type<CnLaunchFn>(x, [&]<class T>() { return pick.template operator()<T, T>(); });
  if (param == DType::f32 && x == DType::f16) return pick.template operator()<__half, float>();
  if (param == DType::f32 && x == DType::bf16) return pick.template operator()<__nv_bfloat16, float>();
  return nullptr;
}

}  // namespace baracuda::cn
