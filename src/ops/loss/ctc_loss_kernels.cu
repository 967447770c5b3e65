// CtcLossPlan's and CtcLossBackwardPlan's kernel: a block per sample. The sample's extended labels
// first (a bad length or label marks the sample NaN), then α over t (one barrier per step, the
// positions across the threads, the ping-pong rows in shared memory when they fit); the backward
// also stores every α row, groups the positions by label (a slot per position in label order),
// then runs β backwards and forms each step's gradient row as β's row completes: every class as
// exp(lp) · g, then, after a barrier, each target label's class from log Σ α·β over its group (a
// thread per small group, a warp per large one). mean / sum: rows::block_sum of the per-sample losses.
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

// The sample's int arrays (P each): extended labels; slot (position -> its place in label order);
// head (position -> its label's first position); gbeg / gend (at heads: the group's slots); big
// (the heads of groups larger than kBigGroup, in order).
struct Ints {
  int32_t *lab, *slot, *head, *gbeg, *gend, *big;
};

template <class T, class I, bool Bwd>
__global__ void __launch_bounds__(kMaxThreads) ctc_kernel(const CtcGeom g, const bool smem_rows) {
  using C = acc_t<T>;
  extern __shared__ __align__(16) unsigned char dyn[];
  const C ninf = C(-INFINITY);
  __shared__ unsigned long long sh_off;
  __shared__ int sh_bad, sh_nbig;
  const int tid = static_cast<int>(threadIdx.x), nt = static_cast<int>(blockDim.x);
  for (int64_t n = blockIdx.x; n < g.N; n += gridDim.x) {
    __syncthreads();  // the previous sample's readers of the shared values are done
    if (tid == 0) sh_off = 0, sh_bad = 0, sh_nbig = 0;
    __syncthreads();
    const int64_t Tn = ld<I>(g.il, n * g.ils), L = ld<I>(g.tl, n * g.tls);
    if (g.concatenated) {  // the sample's offset: the earlier samples' lengths (any bad one spoils it)
      unsigned long long part = 0;
      int bad_len = 0;
      for (int64_t i = tid; i < n; i += nt) {
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
    int32_t* base = g.ints + n * kIntArrays * g.P;
    const Ints ix{base, base + g.P, base + 2 * g.P, base + 3 * g.P, base + 4 * g.P, base + 5 * g.P};
    if (!bad)
      for (int64_t s = tid; s < P; s += nt) {
        int64_t v = g.blank;
        if (s & 1) v = ld<I>(g.tg, g.concatenated ? (off + s / 2) * g.tgs[1] : n * g.tgs[0] + (s / 2) * g.tgs[1]);
        if (v < 0 || v >= g.C) atomicOr(&sh_bad, 1), v = g.blank;
        ix.lab[s] = static_cast<int32_t>(v);
      }
    __syncthreads();
    bad = bad || sh_bad != 0;
    C* acc = static_cast<C*>(g.acc) + n * g.rows * g.P;
    // scratch rows: α ping-pong (2), then backward β ping-pong (2) and the grouped α·β (1)
    C* scratch = smem_rows ? reinterpret_cast<C*>(dyn) : acc + (Bwd ? g.T : 0) * g.P;
    C* const apong = scratch;
    auto lpat = [&](int64_t t, int64_t c) {
      return static_cast<C>(to_acc(static_cast<const T*>(g.lp)[t * g.lps[0] + n * g.lps[1] + c * g.lps[2]]));
    };
    C nll;
    if (bad) {
      nll = C(NAN);
    } else if (Tn == 0) {
      nll = L == 0 ? C(0) : C(INFINITY);
    } else {
      for (int64_t s = tid; s < P; s += nt) {
        const C v = s == 0 ? lpat(0, g.blank) : s == 1 ? lpat(0, ix.lab[1]) : ninf;
        apong[s] = v;
        if constexpr (Bwd) acc[s] = v;
      }
      __syncthreads();
      for (int64_t t = 1; t < Tn; ++t) {
        const C* pr = apong + ((t - 1) & 1) * g.P;
        C* cu = apong + (t & 1) * g.P;
        for (int64_t s = tid; s < P; s += nt) {
          const int32_t l = ix.lab[s];
          const C lp = lpat(t, l);
          const C b = s >= 1 ? pr[s - 1] : ninf;
          const C c2 = s >= 2 && l != g.blank && l != ix.lab[s - 2] ? pr[s - 2] : ninf;
          const C m = lse3(pr[s], b, c2);
          const C v = m == ninf ? ninf : m + lp;
          cu[s] = v;
          if constexpr (Bwd) acc[t * g.P + s] = v;
        }
        __syncthreads();
      }
      const C* la = apong + ((Tn - 1) & 1) * g.P;
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
      for (int64_t e = tid; e < (g.T - Tz) * g.C; e += nt) put(Tz + e / g.C, e % g.C, bad ? C(NAN) : C(0));
      if (!bad && !zero && Tn > 0) {
        // group the positions by label: within = same-label positions before s, head = the first
        for (int64_t s = tid; s < P; s += nt) {
          const int32_t l = ix.lab[s];
          int32_t within = 0, head = static_cast<int32_t>(s), size = 0;
          for (int64_t q = s - 1; q >= 0; --q)
            if (ix.lab[q] == l) ++within, head = static_cast<int32_t>(q);
          if (within == 0)
            for (int64_t q = s; q < P; ++q) size += ix.lab[q] == l;
          ix.slot[s] = within, ix.head[s] = head, ix.gend[s] = size;  // gend: the group's size at heads, 0 elsewhere
        }
        __syncthreads();
        for (int64_t s = tid; s < P; s += nt) {
          if (ix.head[s] != s) continue;
          int32_t start = 0, big_before = 0;
          for (int64_t q = 0; q < s; ++q) start += ix.gend[q], big_before += ix.gend[q] > kBigGroup;
          ix.gbeg[s] = start;
          if (ix.gend[s] > kBigGroup) ix.big[big_before] = static_cast<int32_t>(s), atomicAdd(&sh_nbig, 1);
        }
        __syncthreads();
        for (int64_t s = tid; s < P; s += nt) ix.slot[s] += ix.gbeg[ix.head[s]];
        __syncthreads();
        for (int64_t s = tid; s < P; s += nt)
          if (ix.head[s] == s) ix.gend[s] += ix.gbeg[s];
        const int nbig = sh_nbig;
        C* bpong = scratch + 2 * g.P;
        C* grouped = scratch + 4 * g.P;
        // log Σ over slots [b, e) of grouped: max, then Σ exp; `lanes` threads from lane `lane`
        auto group_lse = [&](int32_t b, int32_t e, int lane, int lanes) {
          C m = ninf;
          for (int32_t i = b + lane; i < e; i += lanes) m = grouped[i] > m ? grouped[i] : m;
          if (lanes > 1) m = rows::WarpGroup{lane}.reduce(m, rows::MaxOp{});
          if (m == ninf) return m;
          C sum = C(0);
          for (int32_t i = b + lane; i < e; i += lanes) sum += exp(grouped[i] - m);
          if (lanes > 1) sum = rows::WarpGroup{lane}.reduce(sum, rows::SumOp{});
          return m + log(sum);
        };
        for (int64_t t = Tn - 1; t >= 0; --t) {
          C* cu = bpong + (t & 1) * g.P;
          if (t == Tn - 1) {
            for (int64_t s = tid; s < P; s += nt) cu[s] = s == P - 1 ? lpat(t, g.blank) : s == P - 2 ? lpat(t, ix.lab[s]) : ninf;
          } else {
            const C* nx = bpong + ((t + 1) & 1) * g.P;
            for (int64_t s = tid; s < P; s += nt) {
              const int32_t l = ix.lab[s];
              const C lp = lpat(t, l);
              const C b1 = s + 1 < P ? nx[s + 1] : ninf;
              const C b2 = s + 2 < P && ix.lab[s + 2] != l ? nx[s + 2] : ninf;
              const C m = lse3(nx[s], b1, b2);
              cu[s] = m == ninf ? ninf : m + lp;
            }
          }
          // every class as if no position held it (lcab = -inf), PyTorch's formula taken literally
          for (int64_t c = tid; c < g.C; c += nt) {
            const C v = lpat(t, c);
            put(t, c, (exp(v) - exp(ninf + nll - v)) * gr);
          }
          __syncthreads();  // β's row t complete
          const C* la = acc + t * g.P;
          for (int64_t s = tid; s < P; s += nt) grouped[ix.slot[s]] = la[s] + cu[s];
          __syncthreads();  // the grouped row complete; the class writes above land before the rewrites below
          auto rewrite = [&](int64_t h, C lcab) {
            const int64_t c = ix.lab[h];
            const C v = lpat(t, c);
            put(t, c, (exp(v) - exp(lcab + nll - v)) * gr);
          };
          for (int64_t s = tid; s < P; s += nt)
            if (ix.head[s] == s && ix.gend[s] - ix.gbeg[s] <= kBigGroup) rewrite(s, group_lse(ix.gbeg[s], ix.gend[s], 0, 1));
          for (int w = tid >> 5; w < nbig; w += nt >> 5) {
            const int32_t h = ix.big[w];
            const C lcab = group_lse(ix.gbeg[h], ix.gend[h], tid & 31, 32);
            if ((tid & 31) == 0) rewrite(h, lcab);
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
    // a thread per position (up to 1024); the backward at least 256 (its class rows)
    const int64_t want = std::max<int64_t>(Bwd ? 256 : 64, (g.P + 31) / 32 * 32);
    const int threads = static_cast<int>(std::min<int64_t>(want, kMaxThreads));
    const size_t rows_bytes = static_cast<size_t>(Bwd ? kScratchRows : 2) * static_cast<size_t>(g.P) * sizeof(acc_t<T>);
    const bool smem = rows_bytes <= 48 * 1024;
    BARACUDA_CUDA_TRY(launch_kernel(ctc_kernel<T, I, Bwd>, dim3(static_cast<unsigned>(blocks)), dim3(static_cast<unsigned>(threads)),
                                    smem ? rows_bytes : 0, stream, g, smem));
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
