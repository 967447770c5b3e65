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

// Each view's offset of line `line` (the other axes row-major, outer-first).
__device__ __forceinline__ void line_offsets(const SoftmaxGeom& g, int64_t line, int64_t (&o)[3]) {
  rows::split_offsets<3>(line, g.ko, g.osize, g.os, o);
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

// One line (or one block's slice of it: n elements) for a group of threads (tid of nt). Reads
// views 0 (and 1: backward) from src0 / src1 (the stage, or global memory: Staged = false),
// reduces through red(value, op) and writes view 2 at out (stride os2 along the axis). V: the
// piece width (16-byte vectors in every view, else 1); Log: log_softmax. The forward's (max,
// sum): staged, the line's max, then its sum of exp(x - max) (one exp per element); unstaged,
// the online pair per piece (one read), pairs combined. softmin's sign (sg) is folded into x - m = fma(x, sg, -m).
template <class TI, class TO, bool Bwd, bool Staged, int V, bool Log, class Red>
__device__ __forceinline__ void line_body(const SoftmaxGeom& g, const TI* src0, const TI* src1, TO* out, int64_t os2, int64_t n,
                                          int tid, int nt, Red&& red) {
  using C = acc_t<TI>;
  using CO = acc_t<TO>;
  const int64_t pieces = (n + V - 1) / V;
  auto store = [&](int64_t i, const CO (&o)[V]) {
    if constexpr (V > 1) store_global16<TO, V>(out + i * V, o);
    else out[i * os2] = from_c<TO>(o[0], false);
  };
  if constexpr (!Bwd) {
    const C sg = g.kind == kMin ? C(-1) : C(1);
    rows::MaxSum<C> a = rows::max_sum_empty<C>();
    if constexpr (Staged) {
      // two cheap reductions: the line's max (fmax), then the sum of exp(x - max) over it (V
      // independent maxima and sums per thread: no long dependent chain)
      C m[V], t[V];
#pragma unroll
      for (int e = 0; e < V; ++e) m[e] = -INFINITY, t[e] = C(0);
      for (int64_t i = tid; i < pieces; i += nt) {
        C v[V];
        rows::load_piece<TI, V>(src0 + i * V, v);
#pragma unroll
        for (int e = 0; e < V; ++e) m[e] = fmax(m[e], v[e] * sg);
      }
#pragma unroll
      for (int e = 0; e < V; ++e) a.m = fmax(a.m, m[e]);
      a.m = red(a.m, rows::MaxOp{});
      for (int64_t i = tid; i < pieces; i += nt) {
        C v[V];
        rows::load_piece<TI, V>(src0 + i * V, v);
#pragma unroll
        for (int e = 0; e < V; ++e) t[e] += rows::row_exp_ftz(fma(v[e], sg, -a.m));
      }
      a.s = red(rows::tree_sum<C, V>(t), rows::SumOp{});
    } else {
      for (int64_t i = tid; i < pieces; i += nt) {
        C v[V];
        rows::load_piece<TI, V>(src0 + i * V, v);
#pragma unroll
        for (int e = 0; e < V; ++e) v[e] *= sg;
        rows::add_piece<C, V>(a, v);
      }
      a = red(a, rows::MaxSumOp{});
    }
    const C inv = C(1) / a.s, logs = log(a.s);
    for (int64_t i = tid; i < pieces; i += nt) {
      C v[V];
      rows::load_piece<TI, V>(src0 + i * V, v);
      CO o[V];
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const C d = fma(v[e], sg, -a.m);
        o[e] = static_cast<CO>(Log ? d - logs : rows::row_exp(d) * inv);
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
      for (int e = 0; e < V; ++e) o[e] = static_cast<CO>(backward_value<Log, C>(g.kind, y[e], d[e], t));
      store(i, o);
    }
  }
}

// The line offsets of the three views, as an array type rows::for_each_line can copy.
struct Offsets3 {
  int64_t v[3];
};

// A group's lines first, first + step, ...: elements [lo, lo + n) of each (a block's slice, or
// the whole line), staged by rows::for_each_line.
template <class TI, class TO, bool Bwd, class Red>
__device__ __forceinline__ void group_lines(const SoftmaxGeom& g, int64_t first, int64_t step, int64_t lo, int64_t n, TI* stage,
                                            int64_t buf_elems, int tid, int nt, Red&& red) {
  constexpr int VW = kPiece<TI, TO>;
  constexpr int R = Bwd ? 2 : 1;
  rows::for_each_line<R, VW, TI, Offsets3>(
      first, step, g.lines, stage, buf_elems, n, tid, nt, g.vec, g.staged, g.buffers,
      [&](int64_t line, Offsets3& o) { line_offsets(g, line, o.v); },
      [&](const Offsets3& o, int r) { return static_cast<const TI*>(r == 0 ? g.in0 : g.in1) + o.v[r] + lo; },
      [&]<bool Staged>(const Offsets3& o, const TI* const* p) {
        TO* out = static_cast<TO*>(g.out) + o.v[2] + lo * g.s[2];
        const TI* x1 = Bwd ? p[R - 1] : nullptr;
        if (g.kind == kLog) {
          if (g.vec) line_body<TI, TO, Bwd, Staged, VW, true>(g, p[0], x1, out, g.s[2], n, tid, nt, red);
          else line_body<TI, TO, Bwd, Staged, 1, true>(g, p[0], x1, out, g.s[2], n, tid, nt, red);
        } else {
          if (g.vec) line_body<TI, TO, Bwd, Staged, VW, false>(g, p[0], x1, out, g.s[2], n, tid, nt, red);
          else line_body<TI, TO, Bwd, Staged, 1, false>(g, p[0], x1, out, g.s[2], n, tid, nt, red);
        }
      });
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
    int64_t o[3];
    line_offsets(g, line, o);
    const TI* x0 = static_cast<const TI*>(g.in0) + o[0];
    const TI* x1 = Bwd ? static_cast<const TI*>(g.in1) + o[1] : nullptr;
    TO* out = static_cast<TO*>(g.out) + o[2];
    if constexpr (!Bwd) {
      const C sg = g.kind == kMin ? C(-1) : C(1);
      rows::MaxSum<C> a = rows::max_sum_empty<C>();
      for (int64_t k = 0; k < g.L; ++k) {
        C v[1] = {to_acc(x0[k * g.s[0]]) * sg};
        rows::add_piece<C, 1>(a, v);
      }
      const C inv = C(1) / a.s, logs = log(a.s);
      for (int64_t k = 0; k < g.L; ++k) {
        const C d = fma(to_acc(x0[k * g.s[0]]), sg, -a.m);
        out[k * g.s[2]] = from_c<TO>(static_cast<acc_t<TO>>(g.kind == kLog ? d - logs : rows::row_exp(d) * inv), false);
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
        const C v = log_kind ? backward_value<true, C>(g.kind, y, d, t) : backward_value<false, C>(g.kind, y, d, t);
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
