// SoftmaxPlan's and SoftmaxBackwardPlan's kernels on the row base (core/row_reduce.cuh): one
// line body shared by the warp and cluster paths, and a thread-per-line kernel for strided axes.
#include <algorithm>
#include <type_traits>

#include "baracuda/ops/softmax.hpp"
#include "core/arch.hpp"
#include "core/launch.cuh"
#include "core/row_reduce.cuh"
#include "ops/softmax/softmax_geometry.hpp"

namespace baracuda::smx {

namespace {

constexpr int kLog = static_cast<int>(SoftmaxKind::kLogSoftmax);
constexpr int kMin = static_cast<int>(SoftmaxKind::kSoftmin);

// A line's offsets in the four views (the other axes row-major, outer-first) and its causal
// limit: entries k > lim are removed (INT64_MAX: none).
struct LineAt {
  int64_t v[4];
  int64_t lim;
};
__device__ __forceinline__ LineAt line_at(const SoftmaxGeom& g, int64_t line) {
  LineAt o;
  rows::split_offsets<4>(line, g.ko, g.osize, g.os, o.v);
  o.lim = INT64_MAX;
  if (g.causal) {
    const int64_t q = line / g.qdiv % g.qsize;  // q + diagonal, saturated (q >= 0)
    o.lim = g.diagonal > INT64_MAX - q ? INT64_MAX : q + g.diagonal;
  }
  return o;
}

// The exponential's argument of element k of a line after the masks (v: x, or -x for softmin):
// -inf where the causal limit or a false bool mask removes it, v + mask for an additive mask.
template <class C>
__device__ __forceinline__ C masked_value(const SoftmaxGeom& g, const LineAt& o, int64_t k, C v) {
  if (k > o.lim) return C(-INFINITY);
  if (g.mask_dtype < 0) return v;
  const int64_t off = o.v[3] + k * g.s[3];
  switch (static_cast<DType>(g.mask_dtype)) {
    case DType::boolean: return static_cast<const uint8_t*>(g.mask)[off] ? v : C(-INFINITY);
    case DType::f32: return v + static_cast<C>(static_cast<const float*>(g.mask)[off]);
    case DType::f16: return v + static_cast<C>(to_acc(static_cast<const __half*>(g.mask)[off]));
    case DType::bf16: return v + static_cast<C>(to_acc(static_cast<const __nv_bfloat16*>(g.mask)[off]));
    case DType::f64: return v + static_cast<C>(static_cast<const double*>(g.mask)[off]);
    default: return v;
  }
}

// Elements per piece of the vector layout: 16 bytes of the narrower of the two types.
template <class TI, class TO>
inline constexpr int kPiece = 16 / static_cast<int>(sizeof(TI) < sizeof(TO) ? sizeof(TI) : sizeof(TO));

// The backward's value of one element: t = Σ dy·y (softmax, softmin) or Σ dy (log_softmax).
template <bool Log, class C>
__device__ __forceinline__ C backward_value(int kind, C y, C dy, C t) {
  if constexpr (Log) {
    return dy - rows::row_exp(y) * t;
  } else {
    const C v = y * (dy - t);
    return kind == kMin ? -v : v;
  }
}

// One line (or one block's slice of it: n elements from element lo) for a group of threads (tid
// of nt). Reads views 0 (and 1: backward) from src0 / src1 (the stage, or global memory: Staged =
// false), reduces through red(value, op) and writes view 2 at out (stride os2 along the axis).
// V: the piece width (16-byte vectors in every view, else 1); Log: log_softmax; Masked: the
// masks of `o` apply (masked_value; element k of the line is lo + i·V + e). The forward's (max,
// sum): staged, the line's max, then its sum of exp(x - max) (one exp per element); unstaged,
// the online pair per piece (one read), pairs combined. Unmasked, softmin's sign (sg) is folded
// into x - m = fma(x, sg, -m); masked, the loads apply it with the masks.
template <class TI, class TO, bool Bwd, bool Staged, int V, bool Log, bool Masked, class Red>
__device__ __forceinline__ void line_body(const SoftmaxGeom& g, const LineAt& lo_at, int64_t lo, const TI* src0, const TI* src1, TO* out,
                                          int64_t os2, int64_t n, int tid, int nt, Red&& red) {
  using C = acc_t<TI>;
  using CO = acc_t<TO>;
  const int64_t pieces = (n + V - 1) / V;
  auto store = [&](int64_t i, const CO (&o)[V]) {
    if constexpr (V > 1) store_global16<TO, V>(out + i * V, o);
    else out[i * os2] = from_c<TO>(o[0], false);
  };
  if constexpr (!Bwd) {
    const C sg0 = g.kind == kMin ? C(-1) : C(1);
    // A staged line under removal masks only (bool, causal): the removed entries are written into
    // the stage once, as the value whose signed form is -inf (each thread rewrites the pieces it
    // staged and reads back only those: no barrier), and the passes below read it unmasked.
    bool in_stage = false;
    if constexpr (Masked && Staged) {
      if (g.mask_dtype < 0 || g.mask_dtype == static_cast<int>(DType::boolean)) {
        TI* st = const_cast<TI*>(src0);
        const TI removed = from_c<TI>(static_cast<acc_t<TI>>(g.kind == kMin ? INFINITY : -INFINITY), false);
        for (int64_t i = tid; i < pieces; i += nt)
#pragma unroll
          for (int e = 0; e < V; ++e)
            if (masked_value<C>(g, lo_at, lo + i * V + e, C(0)) == C(-INFINITY)) st[i * V + e] = removed;
        in_stage = true;
      }
    }
    const C sg = Masked && !in_stage ? C(1) : sg0;  // masked: the sign is applied by load
    auto load = [&](int64_t i, C (&v)[V]) {
      rows::load_piece<TI, V>(src0 + i * V, v);
      if constexpr (Masked) {
        if (!in_stage) {
#pragma unroll
          for (int e = 0; e < V; ++e) v[e] = masked_value<C>(g, lo_at, lo + i * V + e, v[e] * sg0);
        }
      }
    };
    rows::MaxSum<C> a = rows::max_sum_empty<C>();
    if constexpr (Staged) {
      // two cheap reductions: the line's max (fmax), then the sum of exp(x - max) over it (V
      // independent maxima and sums per thread: no long dependent chain)
      C m[V], t[V];
#pragma unroll
      for (int e = 0; e < V; ++e) m[e] = -INFINITY, t[e] = C(0);
      for (int64_t i = tid; i < pieces; i += nt) {
        C v[V];
        load(i, v);
#pragma unroll
        for (int e = 0; e < V; ++e) m[e] = fmax(m[e], v[e] * sg);
      }
#pragma unroll
      for (int e = 0; e < V; ++e) a.m = fmax(a.m, m[e]);
      a.m = red(a.m, rows::MaxOp{});
      for (int64_t i = tid; i < pieces; i += nt) {
        C v[V];
        load(i, v);
#pragma unroll
        for (int e = 0; e < V; ++e) t[e] += rows::row_exp_ftz(fma(v[e], sg, -a.m));
      }
      a.s = red(rows::tree_sum<C, V>(t), rows::SumOp{});
    } else {
      for (int64_t i = tid; i < pieces; i += nt) {
        C v[V];
        load(i, v);
#pragma unroll
        for (int e = 0; e < V; ++e) v[e] *= sg;
        rows::add_piece<C, V>(a, v);
      }
      a = red(a, rows::MaxSumOp{});
    }
    const C inv = C(1) / a.s, logs = log(a.s);
    // masked_rows = zero: a line with no entry left (max -inf) is 0 (log_softmax: -inf)
    const bool zero = Masked && g.zero_rows && a.m == C(-INFINITY);
    for (int64_t i = tid; i < pieces; i += nt) {
      C v[V];
      load(i, v);
      CO o[V];
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const C d = fma(v[e], sg, -a.m);
        o[e] = static_cast<CO>(Log ? d - logs : rows::row_exp(d) * inv);
        if (zero) o[e] = Log ? CO(-INFINITY) : CO(0);
      }
      store(i, o);
    }
  } else {
    C ts[V];
#pragma unroll
    for (int e = 0; e < V; ++e) ts[e] = C(0);
    for (int64_t i = tid; i < pieces; i += nt) {
      C y[V], d[V];
      rows::load_piece<TI, V>(src0 + i * V, y);
      rows::load_piece<TI, V>(src1 + i * V, d);
#pragma unroll
      for (int e = 0; e < V; ++e) ts[e] += Log ? d[e] : d[e] * y[e];
    }
    C t = rows::tree_sum<C, V>(ts);
    t = red(t, rows::SumOp{});
    for (int64_t i = tid; i < pieces; i += nt) {
      C y[V], d[V];
      rows::load_piece<TI, V>(src0 + i * V, y);
      rows::load_piece<TI, V>(src1 + i * V, d);
      CO o[V];
#pragma unroll
      for (int e = 0; e < V; ++e) {
        o[e] = static_cast<CO>(backward_value<Log, C>(g.kind, y[e], d[e], t));
        // removed by a bool / causal mask, or (masked_rows = zero) log_softmax's -inf
        if constexpr (Masked)
          if (masked_value<C>(g, lo_at, lo + i * V + e, C(0)) == C(-INFINITY) || (Log && g.zero_rows && y[e] == C(-INFINITY)))
            o[e] = CO(0);
      }
      store(i, o);
    }
  }
}

// A group's lines first, first + step, ...: elements [lo, lo + n) of each (a block's slice, or
// the whole line), staged by rows::for_each_line.
template <class TI, class TO, bool Bwd, bool Masked, class Red>
__device__ __forceinline__ void group_lines_m(const SoftmaxGeom& g, int64_t first, int64_t step, int64_t lo, int64_t n, TI* stage,
                                              int64_t buf_elems, int tid, int nt, Red&& red) {
  constexpr int VW = kPiece<TI, TO>;
  constexpr int R = Bwd ? 2 : 1;
  rows::for_each_line<R, VW, TI, LineAt>(
      first, step, g.lines, stage, buf_elems, n, tid, nt, g.vec, g.staged, g.buffers,
      [&](int64_t line, LineAt& o) { o = line_at(g, line); },
      [&](const LineAt& o, int r) { return static_cast<const TI*>(r == 0 ? g.in0 : g.in1) + o.v[r] + lo; },
      [&]<bool Staged>(const LineAt& o, const TI* const* p) {
        TO* out = static_cast<TO*>(g.out) + o.v[2] + lo * g.s[2];
        const TI* x1 = Bwd ? p[R - 1] : nullptr;
        if (g.kind == kLog) {
          if (g.vec) line_body<TI, TO, Bwd, Staged, VW, true, Masked>(g, o, lo, p[0], x1, out, g.s[2], n, tid, nt, red);
          else line_body<TI, TO, Bwd, Staged, 1, true, Masked>(g, o, lo, p[0], x1, out, g.s[2], n, tid, nt, red);
        } else {
          if (g.vec) line_body<TI, TO, Bwd, Staged, VW, false, Masked>(g, o, lo, p[0], x1, out, g.s[2], n, tid, nt, red);
          else line_body<TI, TO, Bwd, Staged, 1, false, Masked>(g, o, lo, p[0], x1, out, g.s[2], n, tid, nt, red);
        }
      });
}
template <class TI, class TO, bool Bwd, class Red>
__device__ __forceinline__ void group_lines(const SoftmaxGeom& g, int64_t first, int64_t step, int64_t lo, int64_t n, TI* stage,
                                            int64_t buf_elems, int tid, int nt, Red&& red) {
  if (g.masked()) group_lines_m<TI, TO, Bwd, true>(g, first, step, lo, n, stage, buf_elems, tid, nt, red);
  else group_lines_m<TI, TO, Bwd, false>(g, first, step, lo, n, stage, buf_elems, tid, nt, red);
}

template <class TI, class TO, bool Bwd>
__global__ void __launch_bounds__(32 * kRowWarps) softmax_warp_kernel(const SoftmaxGeom g) {
  extern __shared__ __align__(16) unsigned char stage[];
  const int w = static_cast<int>(threadIdx.x) >> 5, lane = static_cast<int>(threadIdx.x) & 31;
  // a warp's stage: g.buffers buffers of the read views' lines (slice elements each: L rounded up
  // to whole vectors)
  TI* st = reinterpret_cast<TI*>(stage) + static_cast<int64_t>(w) * g.slice * (Bwd ? 2 : 1) * g.buffers;
  const rows::WarpGroup grp{lane};
  group_lines<TI, TO, Bwd>(g, static_cast<int64_t>(blockIdx.x) * kRowWarps + w, static_cast<int64_t>(gridDim.x) * kRowWarps, 0, g.L, st,
                           g.slice, lane, 32, [&](auto v, auto op) { return grp.reduce(v, op); });
}

template <class TI, class TO, bool Bwd>
__global__ void __launch_bounds__(kRowThreads) softmax_cluster_kernel(const SoftmaxGeom g) {
  extern __shared__ __align__(16) unsigned char stage[];
  // the group reduction's shared values (at most 16 bytes each: a MaxSum of doubles)
  __shared__ __align__(16) unsigned char slots[kRowThreads / 32 * 16];
  __shared__ __align__(16) unsigned char mine[32];
  const int cs = g.cluster;
  const int rank = cs > 1 ? static_cast<int>(cooperative_groups::this_cluster().block_rank()) : 0;
  const rows::ClusterGroup<kRowThreads> grp{static_cast<int>(threadIdx.x), rank, cs};
  const int64_t lo = rank * g.slice;
  const int64_t n = std::max<int64_t>(0, std::min<int64_t>(g.slice, g.L - lo));
  group_lines<TI, TO, Bwd>(g, blockIdx.x / cs, gridDim.x / cs, lo, n, reinterpret_cast<TI*>(stage), g.slice,
                           static_cast<int>(threadIdx.x), kRowThreads, [&](auto v, auto op) {
                             using V = decltype(v);
                             return grp.reduce(v, op, reinterpret_cast<V*>(slots), reinterpret_cast<V*>(mine));
                           });
  // a block exits only once no other block can still read its `mine` (the last reduction's
  // remote reads): compute-sanitizer reported reads of an exited block's shared memory without it
  if (cs > 1) cooperative_groups::this_cluster().sync();
}

// A thread per line, adjacent lines on adjacent threads; the line read twice at its strides.
template <class TI, class TO, bool Bwd>
__global__ void __launch_bounds__(256) softmax_columns_kernel(const SoftmaxGeom g) {
  using C = acc_t<TI>;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t line = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; line < g.lines; line += step) {
    const LineAt o = line_at(g, line);
    const TI* x0 = static_cast<const TI*>(g.in0) + o.v[0];
    const TI* x1 = Bwd ? static_cast<const TI*>(g.in1) + o.v[1] : nullptr;
    TO* out = static_cast<TO*>(g.out) + o.v[2];
    const bool masked = g.masked();
    if constexpr (!Bwd) {
      const C sg = g.kind == kMin ? C(-1) : C(1);
      auto value = [&](int64_t k) {
        const C v = to_acc(x0[k * g.s[0]]) * sg;
        return masked ? masked_value<C>(g, o, k, v) : v;
      };
      rows::MaxSum<C> a = rows::max_sum_empty<C>();
      for (int64_t k = 0; k < g.L; ++k) {
        C v[1] = {value(k)};
        rows::add_piece<C, 1>(a, v);
      }
      const C inv = C(1) / a.s, logs = log(a.s);
      const bool zero = masked && g.zero_rows && a.m == C(-INFINITY);
      for (int64_t k = 0; k < g.L; ++k) {
        const C d = value(k) - a.m;
        C r = g.kind == kLog ? d - logs : rows::row_exp(d) * inv;
        if (zero) r = g.kind == kLog ? C(-INFINITY) : C(0);
        out[k * g.s[2]] = from_c<TO>(static_cast<acc_t<TO>>(r), false);
      }
    } else {
      const bool log_kind = g.kind == kLog;
      C t = C(0);
      for (int64_t k = 0; k < g.L; ++k) {
        const C y = to_acc(x0[k * g.s[0]]), d = to_acc(x1[k * g.s[1]]);
        t += log_kind ? d : d * y;
      }
      for (int64_t k = 0; k < g.L; ++k) {
        const C y = to_acc(x0[k * g.s[0]]), d = to_acc(x1[k * g.s[1]]);
        C v = log_kind ? backward_value<true, C>(g.kind, y, d, t) : backward_value<false, C>(g.kind, y, d, t);
        if (masked && (masked_value<C>(g, o, k, C(0)) == C(-INFINITY) || (log_kind && g.zero_rows && y == C(-INFINITY)))) v = C(0);
        out[k * g.s[2]] = from_c<TO>(static_cast<acc_t<TO>>(v), false);
      }
    }
  }
}

template <class TI, class TO, bool Bwd>
cudaError_t launch(const SoftmaxGeom& g, cudaStream_t stream) {
  if (g.lines == 0 || g.L == 0) return cudaSuccess;
  const int sms = std::max(current_device_sm_count(), 1);
  const size_t reads = Bwd ? 2 : 1;
  if (g.path == kColumns) {
    const int64_t blocks = std::min<int64_t>((g.lines + 255) / 256, int64_t{sms} * 8);
    return launch_kernel(softmax_columns_kernel<TI, TO, Bwd>, dim3(static_cast<unsigned>(blocks)), dim3(256), 0, stream, g);
  }
  if (g.path == kWarpRows) {
    auto* k = softmax_warp_kernel<TI, TO, Bwd>;
    const size_t smem = static_cast<size_t>(g.slice) * sizeof(TI) * reads * g.buffers * kRowWarps;
    BARACUDA_CUDA_TRY(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    int per_sm = 0;
    BARACUDA_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, 32 * kRowWarps, smem));
    const int64_t blocks = std::min<int64_t>((g.lines + kRowWarps - 1) / kRowWarps, int64_t{sms} * std::max(per_sm, 1));
    return launch_kernel(k, dim3(static_cast<unsigned>(blocks)), dim3(32 * kRowWarps), smem, stream, g);
  }
  auto* k = softmax_cluster_kernel<TI, TO, Bwd>;
  const size_t smem = g.staged ? static_cast<size_t>(g.slice) * sizeof(TI) * reads * g.buffers : 0;
  BARACUDA_CUDA_TRY(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  int per_sm = 0;
  BARACUDA_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, kRowThreads, smem));
  int64_t blocks = std::min<int64_t>(g.lines * g.cluster, int64_t{sms} * std::max(per_sm, 1));
  blocks = std::max<int64_t>(g.cluster, blocks / g.cluster * g.cluster);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(blocks));
  cfg.blockDim = dim3(kRowThreads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = static_cast<unsigned>(g.cluster);
  attr[0].val.clusterDim.y = attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  BARACUDA_CUDA_TRY(cudaLaunchKernelEx(&cfg, k, g));
  return cudaGetLastError();
}

}  // namespace

SoftmaxLaunchFn find_softmax(DType in, DType out, bool backward) {
  auto pick = [&]<class TI, class TO>() -> SoftmaxLaunchFn { return backward ? &launch<TI, TO, true> : &launch<TI, TO, false>; };
  if (in == out) return pick_float_type<SoftmaxLaunchFn>(in, [&]<class T>() { return pick.template operator()<T, T>(); });
  // the half-to-float forms: forward f16 / bf16 -> f32; backward f32 (y, dy) -> f16 / bf16
  if (!backward && out == DType::f32 && in == DType::f16) return pick.template operator()<__half, float>();
  if (!backward && out == DType::f32 && in == DType::bf16) return pick.template operator()<__nv_bfloat16, float>();
  if (backward && in == DType::f32 && out == DType::f16) return pick.template operator()<float, __half>();
  if (backward && in == DType::f32 && out == DType::bf16) return pick.template operator()<float, __nv_bfloat16>();
  return nullptr;
}

}  // namespace baracuda::smx
