// LocalResponseNormPlan's and LocalResponseNormBackwardPlan's kernels. Spatial-fast layouts
// (NCHW): a thread walks a chunk of kChunk channels of one (n, position) — consecutive threads at
// consecutive positions, so every load is coalesced and each element is read once (plus the
// window's halo per chunk) — holding the last `size` values it needs in shared-memory rings (x;
// backward also dy, u = dy x d^(-beta-1) and d^beta), every window sum taken whole from the ring.
// Channels-last layouts (and windows past kMaxRing): a thread per element, its channel window
// (and, backward, the windows of the channels whose window holds it) read from cache.
#include <algorithm>
#include <cmath>

#include "core/cuda_types.cuh"
#include "core/launch.cuh"
#include "ops/local_response_norm/lrn_geometry.hpp"

namespace baracuda::lrn {

namespace {

template <class T, bool Bwd>
__global__ void __launch_bounds__(kThreads) lrn_kernel(const LrnGeom g, const int64_t numel) {
  using C = acc_t<T>;
  const int64_t half_lo = g.size / 2, half_hi = (g.size - 1) / 2;
  const C scale = static_cast<C>(g.alpha) / static_cast<C>(g.size), beta = static_cast<C>(g.beta), k = static_cast<C>(g.k);
  const C coef = C(2) * static_cast<C>(g.alpha) * beta / static_cast<C>(g.size);
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; e < numel; e += static_cast<int64_t>(gridDim.x) * kThreads) {
    int64_t n, c, sp;
    if (g.channels_fast) {
      c = e % g.C;
      const int64_t r = e / g.C;
      sp = r % g.S, n = r / g.S;
    } else {
      sp = e % g.S;
      const int64_t r = e / g.S;
      c = r % g.C, n = r / g.C;
    }
    const T* x = static_cast<const T*>(g.p[kX]) + n * g.s[kX][0] + sp * g.s[kX][2];
    const int64_t xs = g.s[kX][1];
    auto xat = [&](int64_t j) { return static_cast<C>(to_acc(x[j * xs])); };
    // d_j = k + alpha / size · Σ_{W(j)} x²
    auto den = [&](int64_t j) {
      C sum = C(0);
      const int64_t hi = std::min(g.C - 1, j + half_hi);
      for (int64_t i = std::max<int64_t>(0, j - half_lo); i <= hi; ++i) {
        const C v = xat(i);
        sum += v * v;
      }
      return k + scale * sum;
    };
    const C xc = xat(c), dc = den(c), qc = pow(dc, beta);
    if constexpr (!Bwd) {
      T* y = static_cast<T*>(g.p[kY]) + n * g.s[kY][0] + c * g.s[kY][1] + sp * g.s[kY][2];
      *y = from_c<T>(static_cast<acc_t<T>>(xc / qc), false);
    } else {
      const T* dy = static_cast<const T*>(g.p[kDy]) + n * g.s[kDy][0] + sp * g.s[kDy][2];
      const int64_t dys = g.s[kDy][1];
      C acc = C(0);
      const int64_t hi = std::min(g.C - 1, c + half_lo);
      for (int64_t j = std::max<int64_t>(0, c - half_hi); j <= hi; ++j) {
        const C dj = j == c ? dc : den(j), qj = j == c ? qc : pow(dj, beta);
        acc += static_cast<C>(to_acc(dy[j * dys])) * xat(j) / (qj * dj);
      }
      const C dyc = static_cast<C>(to_acc(dy[c * dys]));
      T* dx = static_cast<T*>(g.p[kDx]) + n * g.s[kDx][0] + c * g.s[kDx][1] + sp * g.s[kDx][2];
      *dx = from_c<T>(static_cast<acc_t<T>>(dyc / qc - coef * xc * acc), false);
    }
  }
}

// The channel walk: thread = (chunk, n, position), positions fastest. Rings of R = size slots,
// position p at slot (p - start) mod R, each slot strided by the block's threads.
constexpr int kAhead = 4;

template <class T, bool Bwd>
__global__ void __launch_bounds__(kWalkThreads) lrn_walk_kernel(const LrnGeom g, const int64_t lines) {
  using C = acc_t<T>;
  extern __shared__ __align__(16) unsigned char dyn[];
  C* const rings = reinterpret_cast<C*>(dyn);
  const int64_t R = g.size, half_lo = g.size / 2, half_hi = (g.size - 1) / 2;
  const int tid = static_cast<int>(threadIdx.x);
  C* rx = rings + tid;  // ring k slot i: rings[(k * R + i) * kWalkThreads + tid]
  C* rdy = rx + R * kWalkThreads;
  C* ru = rdy + R * kWalkThreads;
  C* rq = ru + R * kWalkThreads;
  const C scale = static_cast<C>(g.alpha) / static_cast<C>(g.size), beta = static_cast<C>(g.beta), k = static_cast<C>(g.k);
  const C coef = C(2) * static_cast<C>(g.alpha) * beta / static_cast<C>(g.size);
  const int64_t chunks = (g.C + kChunk - 1) / kChunk;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * kWalkThreads + tid; e < lines * chunks; e += static_cast<int64_t>(gridDim.x) * kWalkThreads) {
    const int64_t line = e % lines, chunk = e / lines;
    const int64_t n = line / g.S, sp = line - n * g.S;
    const int64_t c0 = chunk * kChunk, c1 = std::min(g.C, c0 + kChunk);
    const T* x = static_cast<const T*>(g.p[kX]) + n * g.s[kX][0] + sp * g.s[kX][2];
    const T* dy = Bwd ? static_cast<const T*>(g.p[kDy]) + n * g.s[kDy][0] + sp * g.s[kDy][2] : nullptr;
    T* out = static_cast<T*>(g.p[Bwd ? kDx : kY]) + n * g.s[Bwd ? kDx : kY][0] + sp * g.s[Bwd ? kDx : kY][2];
    const int64_t os = g.s[Bwd ? kDx : kY][1];
    const int64_t start = Bwd ? c0 - (R - 1) : c0 - half_lo, end = Bwd ? c1 - 1 + (R - 1) : c1 - 1 + half_hi;
    // Every window is the whole ring: d's window for j = m - half_hi is [m - R + 1, m] (the x ring),
    // the u's of dx_c for c = m - R + 1 are positions (m - half_hi - R, m - half_hi] (the u ring).
    auto ring_sum = [&](const C* r, bool squares) {
      C sum = C(0);
      for (int64_t i = 0; i < R; ++i) {
        const C v = r[i * kWalkThreads];
        sum += squares ? v * v : v;
      }
      return sum;
    };
    // the loads kAhead positions ahead (a thread's loads in flight while it works on m)
    auto load = [&](const T* v, int64_t vs, int64_t m) { return m >= 0 && m < g.C && m <= end ? static_cast<C>(to_acc(v[m * vs])) : C(0); };
    C qx[kAhead], qdy[kAhead];
#pragma unroll
    for (int a = 0; a < kAhead; ++a) {
      qx[a] = load(x, g.s[kX][1], start + a);
      if constexpr (Bwd) qdy[a] = load(dy, g.s[kDy][1], start + a);
    }
    int64_t sm = 0;  // (m - start) mod R
    for (int64_t m = start; m <= end; ++m, sm = sm + 1 == R ? 0 : sm + 1) {
      const int64_t sj = sm >= half_hi ? sm - half_hi : sm - half_hi + R;  // slot of m - half_hi
      rx[sm * kWalkThreads] = qx[0];
      if constexpr (Bwd) rdy[sm * kWalkThreads] = qdy[0];
#pragma unroll
      for (int a = 0; a + 1 < kAhead; ++a) {
        qx[a] = qx[a + 1];
        if constexpr (Bwd) qdy[a] = qdy[a + 1];
      }
      qx[kAhead - 1] = load(x, g.s[kX][1], m + kAhead);
      if constexpr (Bwd) qdy[kAhead - 1] = load(dy, g.s[kDy][1], m + kAhead);
      if constexpr (!Bwd) {
        const int64_t c = m - half_hi;
        if (c >= c0) out[c * os] = from_c<T>(static_cast<acc_t<T>>(rx[sj * kWalkThreads] / pow(k + scale * ring_sum(rx, true), beta)), false);
      } else {
        const int64_t j = m - half_hi;
        if (j >= c0 - half_hi) {
          C u = C(0), q = C(1);
          if (j >= 0 && j < g.C) {
            const C d = k + scale * ring_sum(rx, true);
            q = pow(d, beta);
            u = rdy[sj * kWalkThreads] * rx[sj * kWalkThreads] / (q * d);
          }
          ru[sj * kWalkThreads] = u, rq[sj * kWalkThreads] = q;
        }
        const int64_t c = m - (R - 1), sc = sm + 1 == R ? 0 : sm + 1;  // slot of c
        if (c >= c0)
          out[c * os] = from_c<T>(static_cast<acc_t<T>>(rdy[sc * kWalkThreads] / rq[sc * kWalkThreads] - coef * rx[sc * kWalkThreads] * ring_sum(ru, false)), false);
      }
    }
  }
}

template <class T, bool Bwd>
cudaError_t launch(const LrnGeom& g, cudaStream_t stream) {
  const int64_t numel = g.N * g.C * g.S;  // the plan's operands: fits int64
  if (numel == 0) return cudaSuccess;
  if (walks(g.channels_fast, g.size, sizeof(acc_t<T>), Bwd)) {
    const int64_t lines = g.N * g.S, work = lines * ((g.C + kChunk - 1) / kChunk);
    const int64_t blocks = std::min<int64_t>((work + kWalkThreads - 1) / kWalkThreads, kMaxGrid);
    return launch_kernel(lrn_walk_kernel<T, Bwd>, dim3(static_cast<unsigned>(blocks)), dim3(kWalkThreads), ring_bytes(g.size, sizeof(acc_t<T>), Bwd), stream, g, lines);
  }
  const int64_t blocks = std::min<int64_t>((numel + kThreads - 1) / kThreads, kMaxGrid);
  return launch_kernel(lrn_kernel<T, Bwd>, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, stream, g, numel);
}

}  // namespace

LrnLaunchFn find_lrn(DType x, bool backward) {
  return pick_float_type<LrnLaunchFn>(x, [&]<class T>() -> LrnLaunchFn { return backward ? &launch<T, true> : &launch<T, false>; });
}

}  // namespace baracuda::lrn
