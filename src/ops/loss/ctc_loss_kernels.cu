// CtcLossPlan's and CtcLossBackwardPlan's kernel: a block per sample. The sample's extended labels
// first (a bad length or label marks the sample NaN), then α over t (one barrier per step, the
// positions across the threads); the forward keeps two rows, the backward every row, then runs β
// backwards and forms each step's gradient row as β's row completes: exp(lp) · g over the classes,
// then, after a barrier, the classes of the target rewritten by their label's first position
// (walking the positions of that label). mean / sum: rows::block_sum of the per-sample losses.
#include <algorithm>
#include <cmath>

#include "baracuda/ops/loss.hpp"
#include "core/cuda_types.cuh"
#include "core/launch.cuh"
#include "core/row_reduce.cuh"
#include "ops/loss/ctc_geometry.hpp"

namespace baracuda::ctc {

namespace {

constexpr int kNoneR = static_cast<int>(LossReduction::kNone);
constexpr int kMeanR = static_cast<int>(LossReduction::kMean);

template <class C>
__device__ __forceinline__ C lse2(C a, C b) {
  const C m = a > b ? a : b;
  if (m == C(-INFINITY)) return m;
  return m + log(exp(a - m) + exp(b - m));
}
template <class C>
__device__ __forceinline__ C lse3(C a, C b, C c) {
  C m = a > b ? a : b;
  m = m > c ? m : c;
  if (m == C(-INFINITY)) return m;
  return m + log(exp(a - m) + exp(b - m) + exp(c - m));
}

template <class I>
__device__ __forceinline__ int64_t ld(const void* p, int64_t off) {
  return static_cast<int64_t>(static_cast<const I*>(p)[off]);
}

template <class T, class I, bool Bwd>
__global__ void __launch_bounds__(kThreads) ctc_kernel(const CtcGeom g) {
  using C = acc_t<T>;
  const C ninf = C(-INFINITY);
  __shared__ unsigned long long sh_off;
  __shared__ int sh_bad;
  const int tid = static_cast<int>(threadIdx.x);
  for (int64_t n = blockIdx.x; n < g.N; n += gridDim.x) {
    __syncthreads();  // the previous sample's readers of the shared values are done
    if (tid == 0) sh_off = 0, sh_bad = 0;
    __syncthreads();
    const int64_t Tn = ld<I>(g.il, n * g.ils), L = ld<I>(g.tl, n * g.tls);
    if (g.concatenated) {  // the sample's offset: the earlier samples' lengths (any bad one spoils it)
      unsigned long long part = 0;
      int bad_len = 0;
      for (int64_t i = tid; i < n; i += kThreads) {
        const int64_t li = ld<I>(g.tl, i * g.tls);
        if (li < 0 || li > g.S) bad_len = 1;
        else part += static_cast<unsigned long long>(li);
      }
      if (part) atomicAdd(&sh_off, part);
      if (bad_len) atomicOr(&sh_bad, 1);
    }
    __syncthreads();
    const int64_t off = static_cast<int64_t>(sh_off);
    bool bad = sh_bad != 0 || Tn < 0 || Tn > g.T || L < 0 || L > g.S || (g.concatenated && off + L > g.total);
    const int64_t P = bad ? 1 : 2 * L + 1;
    int32_t* lab = g.ints + n * 3 * g.P;
    int32_t* nxt = lab + g.P;
    int32_t* first = nxt + g.P;
    if (!bad)
      for (int64_t s = tid; s < P; s += kThreads) {
        int64_t v = g.blank;
        if (s & 1) v = ld<I>(g.tg, g.concatenated ? (off + s / 2) * g.tgs[1] : n * g.tgs[0] + (s / 2) * g.tgs[1]);
        if (v < 0 || v >= g.C) atomicOr(&sh_bad, 1), v = g.blank;
        lab[s] = static_cast<int32_t>(v);
      }
    __syncthreads();
    bad = bad || sh_bad != 0;
    C* acc = static_cast<C*>(g.acc) + n * g.rows * g.P;
    auto arow = [&](int64_t t) { return acc + (Bwd ? t : (t & 1)) * g.P; };
    auto lpat = [&](int64_t t, int64_t c) {
      return static_cast<C>(to_acc(static_cast<const T*>(g.lp)[t * g.lps[0] + n * g.lps[1] + c * g.lps[2]]));
    };
    C nll;
    if (bad) {
      nll = C(NAN);
    } else if (Tn == 0) {
      nll = L == 0 ? C(0) : C(INFINITY);
    } else {
      C* a0 = arow(0);
      for (int64_t s = tid; s < P; s += kThreads) a0[s] = s == 0 ? lpat(0, g.blank) : s == 1 ? lpat(0, lab[1]) : ninf;
      __syncthreads();
      for (int64_t t = 1; t < Tn; ++t) {
        const C* pr = arow(t - 1);
        C* cu = arow(t);
        for (int64_t s = tid; s < P; s += kThreads) {
          const C b = s >= 1 ? pr[s - 1] : ninf;
          const C c2 = s >= 2 && lab[s] != g.blank && lab[s] != lab[s - 2] ? pr[s - 2] : ninf;
          const C m = lse3(pr[s], b, c2);
          cu[s] = m == ninf ? ninf : m + lpat(t, lab[s]);
        }
        __syncthreads();
      }
      const C* la = arow(Tn - 1);
      nll = -lse2(la[P - 1], L > 0 ? la[P - 2] : ninf);
    }
    if constexpr (!Bwd) {
      if (tid == 0) {
        C l = nll;
        if (g.zero_infinity && l == C(INFINITY)) l = C(0);
        if (g.reduction == kNoneR) static_cast<T*>(g.loss)[n * g.loss_s] = from_c<T>(static_cast<acc_t<T>>(l), false);
        else static_cast<C*>(g.partials)[n] = g.reduction == kMeanR ? l / static_cast<C>(L > 1 ? L : 1) : l;
      }
    } else {
      C gr = static_cast<C>(to_acc(static_cast<const T*>(g.dloss)[n * g.dloss_s]));
      if (g.reduction == kMeanR) gr = gr / static_cast<C>(L > 1 ? L : 1) / static_cast<C>(g.N);
      const bool zero = g.zero_infinity && nll == C(INFINITY);
      T* dlp = static_cast<T*>(g.dlp) + n * g.dlps[1];
      auto put = [&](int64_t t, int64_t c, C v) { dlp[t * g.dlps[0] + c * g.dlps[2]] = from_c<T>(static_cast<acc_t<T>>(v), false); };
      // the steps past the input (every step of a zeroed or bad sample)
      const int64_t Tz = bad || zero ? 0 : Tn;
      for (int64_t e = tid; e < (g.T - Tz) * g.C; e += kThreads) put(Tz + e / g.C, e % g.C, bad ? C(NAN) : C(0));
      if (!bad && !zero && Tn > 0) {
        for (int64_t s = tid; s < P; s += kThreads) {
          int32_t nx = -1, f = 1;
          for (int64_t q = s + 1; q < P; ++q)
            if (lab[q] == lab[s]) {
              nx = static_cast<int32_t>(q);
              break;
            }
          for (int64_t q = 0; q < s; ++q)
            if (lab[q] == lab[s]) {
              f = 0;
              break;
            }
          nxt[s] = nx, first[s] = f;
        }
        auto brow = [&](int64_t t) { return acc + (g.T + (t & 1)) * g.P; };
        for (int64_t t = Tn - 1; t >= 0; --t) {
          C* cu = brow(t);
          if (t == Tn - 1) {
            for (int64_t s = tid; s < P; s += kThreads) cu[s] = s == P - 1 ? lpat(t, g.blank) : s == P - 2 ? lpat(t, lab[s]) : ninf;
          } else {
            const C* nx = brow(t + 1);
            for (int64_t s = tid; s < P; s += kThreads) {
              const C b1 = s + 1 < P ? nx[s + 1] : ninf;
              const C b2 = s + 2 < P && lab[s + 2] != lab[s] ? nx[s + 2] : ninf;
              const C m = lse3(nx[s], b1, b2);
              cu[s] = m == ninf ? ninf : m + lpat(t, lab[s]);
            }
          }
          // every class as if no position held it (lcab = -inf), PyTorch's formula taken literally
          for (int64_t c = tid; c < g.C; c += kThreads) {
            const C v = lpat(t, c);
            put(t, c, (exp(v) - exp(ninf + nll - v)) * gr);
          }
          __syncthreads();  // β's row t complete; the row's writes above land before the rewrites below
          const C* la = arow(t);
          for (int64_t s = tid; s < P; s += kThreads) {
            if (!first[s]) continue;
            C lcab = ninf;
            for (int64_t q = s; q >= 0; q = nxt[q]) lcab = lse2(lcab, la[q] + cu[q]);
            const int64_t c = lab[s];
            const C v = lpat(t, c);
            put(t, c, (exp(v) - exp(lcab + nll - v)) * gr);
          }
        }
      }
    }
  }
}

// mean / sum: the per-sample losses in a fixed order.
template <class T>
__global__ void __launch_bounds__(kFinishThreads) ctc_finish_kernel(const CtcGeom g) {
  using C = acc_t<T>;
  const C* part = static_cast<const C*>(g.partials);
  const C total = rows::block_sum<kFinishThreads>(g.N, C(0), [&](int64_t s) { return part[s]; });
  if (threadIdx.x == 0)
    static_cast<T*>(g.loss)[0] = from_c<T>(static_cast<acc_t<T>>(g.reduction == kMeanR ? total / static_cast<C>(g.N) : total), false);
}

template <class T, class I, bool Bwd>
cudaError_t launch(const CtcGeom& g, cudaStream_t stream) {
  if (g.N > 0) {
    const int64_t blocks = std::min<int64_t>(g.N, kMaxGrid);
    BARACUDA_CUDA_TRY(launch_kernel(ctc_kernel<T, I, Bwd>, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, stream, g));
  }
  if (!Bwd && g.reduction != kNoneR) BARACUDA_CUDA_TRY(launch_kernel(ctc_finish_kernel<T>, dim3(1), dim3(kFinishThreads), 0, stream, g));
  return cudaSuccess;
}

}  // namespace

CtcLaunchFn find_ctc(DType x, DType index, bool backward) {
  return pick_float_type<CtcLaunchFn>(x, [&]<class T>() -> CtcLaunchFn {
    if (index == DType::i32) return backward ? &launch<T, int32_t, true> : &launch<T, int32_t, false>;
    if (index == DType::i64) return backward ? &launch<T, int64_t, true> : &launch<T, int64_t, false>;
    return nullptr;
  });
}

}  // namespace baracuda::ctc
