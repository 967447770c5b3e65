// CtcLossPlan's and CtcLossBackwardPlan's kernels. ctc_kernel: a block per sample. The sample's
// extended labels first (a bad length or label marks the sample bad: NaN), then α over t (one
// barrier per step, a position per thread, the next step's log-probability loaded during this
// one, the ping-pong rows in shared memory when they fit); the backward stores every α row, runs
// β the same way storing every row, and groups the positions by label (a slot per position in
// label order). ctc_grad_kernel (backward): a block per (t, n) writes the gradient row: every
// class as exp(lp) · g, then, after a barrier, each target label's class from log Σ α·β over its
// group (a thread per small group, a warp per large one). mean / sum: rows::block_sum of the
// per-sample losses.
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
// (the heads of groups larger than kBigGroup, in order); pos (slot -> position); then its state.
struct Ints {
  int32_t *lab, *slot, *head, *gbeg, *gend, *big, *pos, *state;
  __device__ Ints(const CtcGeom& g, int64_t n) {
    int32_t* b = g.ints + n * (kIntArrays * g.P + 1);
    lab = b, slot = b + g.P, head = b + 2 * g.P, gbeg = b + 3 * g.P, gend = b + 4 * g.P, big = b + 5 * g.P, pos = b + 6 * g.P;
    state = b + kIntArrays * g.P;
  }
};

template <class T>
__device__ __forceinline__ acc_t<T> lp_at(const CtcGeom& g, int64_t t, int64_t n, int64_t c) {
  return to_acc(static_cast<const T*>(g.lp)[t * g.lps[0] + n * g.lps[1] + c * g.lps[2]]);
}

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
    const Ints ix(g, n);
    if (!bad)
      for (int64_t s = tid; s < P; s += nt) {
        int64_t v = g.blank;
        if (s & 1) v = ld<I>(g.tg, g.concatenated ? (off + s / 2) * g.tgs[1] : n * g.tgs[0] + (s / 2) * g.tgs[1]);
        if (v < 0 || v >= g.C) atomicOr(&sh_bad, 1), v = g.blank;
        ix.lab[s] = static_cast<int32_t>(v);
      }
    __syncthreads();
    bad = bad || sh_bad != 0;
    C* rows = static_cast<C*>(g.acc) + n * g.rows * g.P;  // forward: α ping-pong; backward: α rows, then β rows
    C* const pp = reinterpret_cast<C*>(dyn);              // smem_rows: α or β ping-pong
    // row t of the recursion running (beta: the β rows)
    auto row = [&](int64_t t, bool beta) -> C* {
      if (smem_rows) return pp + (t & 1) * g.P;
      if constexpr (Bwd) return rows + ((beta ? g.T : 0) + t) * g.P;
      return rows + (t & 1) * g.P;
    };
    auto keep = [&](int64_t t, bool beta, int64_t s, C v) {  // the backward stores every row
      if constexpr (Bwd) rows[((beta ? g.T : 0) + t) * g.P + s] = v;
    };
    // one position per thread (P <= threads): its labels in registers, the next step's lp prefetched
    const bool one = P <= nt;
    const int32_t my_lab = one && tid < P ? ix.lab[tid] : 0;
    const bool my_skip_a = one && tid >= 2 && tid < P && my_lab != g.blank && my_lab != ix.lab[tid - 2];
    const bool my_skip_b = one && tid + 2 < P && ix.lab[tid + 2] != my_lab;
    C nll;
    if (bad) {
      nll = C(NAN);
    } else if (Tn == 0) {
      nll = L == 0 ? C(0) : C(INFINITY);
    } else {
      for (int64_t s = tid; s < P; s += nt) {
        const C v = s == 0 ? lp_at<T>(g, 0, n, g.blank) : s == 1 ? lp_at<T>(g, 0, n, ix.lab[1]) : ninf;
        row(0, false)[s] = v;
        keep(0, false, s, v);
      }
      C lp_next = one && tid < P && Tn > 1 ? lp_at<T>(g, 1, n, my_lab) : C(0);
      __syncthreads();
      for (int64_t t = 1; t < Tn; ++t) {
        const C* pr = row(t - 1, false);
        C* cu = row(t, false);
        auto step = [&](int64_t s, C lp, bool skip) {
          const C m = lse3(pr[s], s >= 1 ? pr[s - 1] : ninf, skip ? pr[s - 2] : ninf);
          const C v = m == ninf ? ninf : m + lp;
          cu[s] = v;
          keep(t, false, s, v);
        };
        if (one) {
          if (tid < P) {
            const C lp = lp_next;
            if (t + 1 < Tn) lp_next = lp_at<T>(g, t + 1, n, my_lab);
            step(tid, lp, my_skip_a);
          }
        } else {
          for (int64_t s = tid; s < P; s += nt) {
            const int32_t l = ix.lab[s];
            step(s, lp_at<T>(g, t, n, l), s >= 2 && l != g.blank && l != ix.lab[s - 2]);
          }
        }
        __syncthreads();
      }
      const C* la = row(Tn - 1, false);
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
      if (tid == 0) static_cast<C*>(g.partials)[n] = nll, *ix.state = bad ? 1 : 0;
      if (!bad && !(g.zero_infinity && nll == C(INFINITY)) && Tn > 0) {
        __syncthreads();  // every thread has read the last α row (the β ping-pong reuses it)
        // β, every row kept
        for (int64_t s = tid; s < P; s += nt) {
          const C v = s == P - 1 ? lp_at<T>(g, Tn - 1, n, g.blank) : s == P - 2 ? lp_at<T>(g, Tn - 1, n, ix.lab[s]) : ninf;
          row(Tn - 1, true)[s] = v;
          keep(Tn - 1, true, s, v);
        }
        C lp_next = one && tid < P && Tn > 1 ? lp_at<T>(g, Tn - 2, n, my_lab) : C(0);
        __syncthreads();
        for (int64_t t = Tn - 2; t >= 0; --t) {
          const C* nx = row(t + 1, true);
          C* cu = row(t, true);
          auto step = [&](int64_t s, C lp, bool skip) {
            const C m = lse3(nx[s], s + 1 < P ? nx[s + 1] : ninf, skip ? nx[s + 2] : ninf);
            const C v = m == ninf ? ninf : m + lp;
            cu[s] = v;
            keep(t, true, s, v);
          };
          if (one) {
            if (tid < P) {
              const C lp = lp_next;
              if (t >= 1) lp_next = lp_at<T>(g, t - 1, n, my_lab);
              step(tid, lp, my_skip_b);
            }
          } else {
            for (int64_t s = tid; s < P; s += nt) {
              const int32_t l = ix.lab[s];
              step(s, lp_at<T>(g, t, n, l), s + 2 < P && ix.lab[s + 2] != l);
            }
          }
          __syncthreads();
        }
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
        for (int64_t s = tid; s < P; s += nt) {
          const int32_t sl = ix.slot[s] + ix.gbeg[ix.head[s]];
          ix.slot[s] = sl, ix.pos[sl] = static_cast<int32_t>(s);
        }
        __syncthreads();
        for (int64_t s = tid; s < P; s += nt)
          if (ix.head[s] == s) ix.gend[s] += ix.gbeg[s];
        if (tid == 0) ix.big[P - 1] = sh_nbig;  // the count (at most P / 33 heads precede it)
      }
    }
  }
}

// The backward's gradient rows: a block per (t, n).
template <class T, class I>
__global__ void __launch_bounds__(kGradThreads) ctc_grad_kernel(const CtcGeom g) {
  using C = acc_t<T>;
  const C ninf = C(-INFINITY);
  const int tid = static_cast<int>(threadIdx.x);
  for (int64_t b = blockIdx.x; b < g.T * g.N; b += gridDim.x) {
    const int64_t t = b / g.N, n = b - t * g.N;
    const Ints ix(g, n);
    T* dlp = static_cast<T*>(g.dlp) + t * g.dlps[0] + n * g.dlps[1];
    auto put = [&](int64_t c, C v) { dlp[c * g.dlps[2]] = from_c<T>(static_cast<acc_t<T>>(v), false); };
    const C nll = static_cast<const C*>(g.partials)[n];
    const int64_t Tn = ld<I>(g.il, n * g.ils), L = ld<I>(g.tl, n * g.tls);
    if (*ix.state) {  // bad lengths or labels: NaN everywhere
      for (int64_t c = tid; c < g.C; c += kGradThreads) put(c, C(NAN));
      continue;
    }
    if (t >= Tn || (g.zero_infinity && nll == C(INFINITY))) {
      for (int64_t c = tid; c < g.C; c += kGradThreads) put(c, C(0));
      continue;
    }
    C gr = static_cast<C>(to_acc(static_cast<const T*>(g.dloss)[n * g.dloss_s]));
    if (g.reduction == kMeanR) gr = gr / static_cast<C>(L > 1 ? L : 1) / static_cast<C>(g.N);
    // every class as if no position held it (lcab = -inf), PyTorch's formula taken literally
    for (int64_t c = tid; c < g.C; c += kGradThreads) {
      const C v = lp_at<T>(g, t, n, c);
      put(c, (exp(v) - exp(ninf + nll - v)) * gr);
    }
    __syncthreads();  // the class writes above land before the rewrites below
    const int64_t P = 2 * L + 1;
    const C* la = static_cast<const C*>(g.acc) + (n * g.rows + t) * g.P;
    const C* lb = la + g.T * g.P;
    // log Σ α·β over slots [b, e): max, then Σ exp; `lanes` threads from lane `lane`
    auto group_lse = [&](int32_t sb, int32_t se, int lane, int lanes) {
      C m = ninf;
      for (int32_t i = sb + lane; i < se; i += lanes) {
        const int32_t p = ix.pos[i];
        const C v = la[p] + lb[p];
        m = v > m ? v : m;
      }
      if (lanes > 1) m = rows::WarpGroup{lane}.reduce(m, rows::MaxOp{});
      if (m == ninf) return m;
      C sum = C(0);
      for (int32_t i = sb + lane; i < se; i += lanes) {
        const int32_t p = ix.pos[i];
        sum += exp(la[p] + lb[p] - m);
      }
      if (lanes > 1) sum = rows::WarpGroup{lane}.reduce(sum, rows::SumOp{});
      return m + log(sum);
    };
    auto rewrite = [&](int64_t h, C lcab) {
      const int64_t c = ix.lab[h];
      const C v = lp_at<T>(g, t, n, c);
      put(c, (exp(v) - exp(lcab + nll - v)) * gr);
    };
    for (int64_t s = tid; s < P; s += kGradThreads)
      if (ix.head[s] == s && ix.gend[s] - ix.gbeg[s] <= kBigGroup) rewrite(s, group_lse(ix.gbeg[s], ix.gend[s], 0, 1));
    const int32_t nbig = ix.big[P - 1];
    for (int w = tid >> 5; w < nbig; w += kGradThreads >> 5) {
      const int32_t h = ix.big[w];
      const C lcab = group_lse(ix.gbeg[h], ix.gend[h], tid & 31, 32);
      if ((tid & 31) == 0) rewrite(h, lcab);
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
    // a thread per position (up to 1024)
    const int threads = static_cast<int>(std::min<int64_t>(std::max<int64_t>(64, (g.P + 31) / 32 * 32), kMaxThreads));
    const size_t rows_bytes = 2 * static_cast<size_t>(g.P) * sizeof(acc_t<T>);
    const bool smem = rows_bytes <= 48 * 1024;
    BARACUDA_CUDA_TRY(launch_kernel(ctc_kernel<T, I, Bwd>, dim3(static_cast<unsigned>(blocks)), dim3(static_cast<unsigned>(threads)),
                                    smem ? rows_bytes : 0, stream, g, smem));
    if (Bwd && g.T > 0) {
      const int64_t grad_blocks = std::min<int64_t>(g.T * g.N, int64_t{132} * 64);
      BARACUDA_CUDA_TRY(launch_kernel(ctc_grad_kernel<T, I>, dim3(static_cast<unsigned>(grad_blocks)), dim3(kGradThreads), 0, stream, g));
    }
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
