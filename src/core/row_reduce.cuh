// The row-reduction base of the row families (softmax, the norms, the losses): a line of
// elements is handled by a group of threads — one warp (WarpGroup) or a cluster of 1-8 blocks
// (ClusterGroup) — that stages it in shared memory (read from global memory once), reduces
// per-thread partials to one value every thread of the group holds, then writes from the stage.
//   - reductions are fixed-order (a butterfly per warp, the warps in order, the cluster's blocks
//     in rank order): bitwise run-to-run deterministic, and every thread holds the same bits;
//   - MaxSum is the online (max, Σ exp(x - max)) pair of softmax and logsumexp, with NaN and
//     ±inf as PyTorch (a NaN or an infinite max makes the line's sum NaN);
//   - stage_line copies a thread's pieces (16-byte vectors by cp.async when `vec`, else single
//     elements) into the stage; a thread reads back only what it copied, so no barrier is needed
//     between the copy and the use, and the next line can be staged while this one is used.
// Device code only (included by .cu files).
#pragma once

#include <cooperative_groups.h>

#include <cstdint>
#include <type_traits>

#include "baracuda/core/tensor.hpp"
#include "core/cp_async.cuh"
#include "core/cuda_types.cuh"

namespace baracuda::rows {

// exp of the row kernels: f32 as exp2(x·log2 e) on the MUFU unit (2 ulp, plus the argument's
// rounding: a relative error of about eps·|x|); f64 exact. row_exp keeps subnormal results;
// row_exp_ftz flushes results below 2^-126 to 0 (for sums of at least 1, where they vanish anyway).
__device__ __forceinline__ float row_exp(float v) { return exp2f(v * 1.4426950408889634f); }
__device__ __forceinline__ double row_exp(double v) { return exp(v); }
// 2^v on the MUFU unit, results below 2^-126 flushed to 0.
__device__ __forceinline__ float ex2_ftz(float v) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
  return r;
}
__device__ __forceinline__ float row_exp_ftz(float v) { return ex2_ftz(v * 1.4426950408889634f); }
__device__ __forceinline__ double row_exp_ftz(double v) { return exp(v); }

__device__ __forceinline__ float row_log(float v) { return logf(v); }
__device__ __forceinline__ double row_log(double v) { return log(v); }

// Each of NV views' offset of item i of an index space of `ko` axes (row-major over extents
// size[0..ko)), view v having strides st[v][0..ko): the families' line / sample / element offsets.
template <int NV>
__device__ __forceinline__ void split_offsets(int64_t i, int ko, const int64_t* size, const int64_t (*st)[kMaxRank], int64_t (&o)[NV]) {
#pragma unroll
  for (int v = 0; v < NV; ++v) o[v] = 0;
  for (int a = ko - 1; a >= 0; --a) {
    const int64_t q = i / size[a], c = i - q * size[a];
#pragma unroll
    for (int v = 0; v < NV; ++v) o[v] += c * st[v][a];
    i = q;
  }
}

// V elements of T at p (V > 1: whole 16-byte vectors, aligned; V = 1: the element at p), global or
// shared memory, into C.
template <class T, int V, class C>
__device__ __forceinline__ void load_piece(const T* p, C (&v)[V]) {
  constexpr int W = 16 / static_cast<int>(sizeof(T));
  if constexpr (V == 1) {
    v[0] = static_cast<C>(to_acc(p[0]));
  } else {
    static_assert(V % W == 0, "a piece is whole 16-byte vectors");
#pragma unroll
    for (int q = 0; q < V / W; ++q) {
      acc_t<T> w[W];
      load_acc_vec<T, W>(p + q * W, w);
#pragma unroll
      for (int e = 0; e < W; ++e) v[q * W + e] = static_cast<C>(w[e]);
    }
  }
}

// (max, Σ exp(x - max)) over a set of elements; the empty set is (-inf, 0). The max ignores NaN
// (fmax: one instruction) and the sum carries it instead: exp(NaN - m) is NaN, so a set holding a
// NaN has s = NaN, as has a set whose max is +inf (inf - inf); every element -inf gives (-inf, 0),
// and x - max is NaN: the line's outputs are then NaN, as PyTorch's.
template <class C>
struct MaxSum {
  C m, s;
};
template <class C>
__device__ __forceinline__ MaxSum<C> max_sum_empty() {
  return {-INFINITY, C(0)};
}
// The union of two sets: commutative bit for bit (every lane of a butterfly gets the same value).
template <class C>
__device__ __forceinline__ MaxSum<C> combine(const MaxSum<C>& a, const MaxSum<C>& b) {
  const C m = fmax(a.m, b.m);
  const C sa = a.s == C(0) ? C(0) : a.s * row_exp(a.m - m);  // an empty side adds nothing (-inf - -inf is NaN)
  const C sb = b.s == C(0) ? C(0) : b.s * row_exp(b.m - m);
  return {m, sa + sb};
}
// Adds n values v[0..n) (one piece) to the pair: the piece's max first, then its exponentials.
template <class C, int N>
__device__ __forceinline__ void add_piece(MaxSum<C>& a, const C (&v)[N], int n = N) {
  C pm = v[0];
#pragma unroll
  for (int e = 1; e < N; ++e)
    if (e < n) pm = fmax(pm, v[e]);
  if (pm > a.m) {
    a.s = a.s == C(0) ? C(0) : a.s * row_exp(a.m - pm);
    a.m = pm;
  }
  // While the max is still -inf every value here is -inf or NaN: exp(v - 0) gives their 0 or NaN
  // (exp(-inf - -inf) would be NaN for a masked entry; SoftmaxDevice.SpecialRowsOnEveryPath).
  const C base = a.m == C(-INFINITY) ? C(0) : a.m;
  C t = C(0);
  if constexpr (std::is_same_v<C, float>) {  // exp2(v·log2 e - base·log2 e): one FFMA and one MUFU an element
    const float mb = base * 1.4426950408889634f;
#pragma unroll
    for (int e = 0; e < N; ++e)
      if (e < n) t += ex2_ftz(fmaf(v[e], 1.4426950408889634f, -mb));
  } else {
#pragma unroll
    for (int e = 0; e < N; ++e)
      if (e < n) t += row_exp_ftz(v[e] - base);
  }
  a.s += t;
}

// v[0] + ... + v[N-1] pairwise (a fixed order).
template <class C, int N>
__device__ __forceinline__ C tree_sum(const C (&v)[N]) {
  C t[N];
#pragma unroll
  for (int e = 0; e < N; ++e) t[e] = v[e];
#pragma unroll
  for (int w = 1; w < N; w <<= 1)
#pragma unroll
    for (int e = 0; e + w < N; e += 2 * w) t[e] += t[e + w];
  return t[0];
}

struct SumOp {
  template <class V>
  __device__ __forceinline__ V operator()(const V& a, const V& b) const { return a + b; }
};
struct MaxOp {  // fmax: NaN ignored (see MaxSum)
  template <class V>
  __device__ __forceinline__ V operator()(const V& a, const V& b) const { return fmax(a, b); }
};
struct MaxSumOp {
  template <class C>
  __device__ __forceinline__ MaxSum<C> operator()(const MaxSum<C>& a, const MaxSum<C>& b) const { return combine(a, b); }
};

// A value's shuffle, member by member (float, double, MaxSum, or a struct of them: Shuffle<V>).
template <class V>
__device__ __forceinline__ V shfl_xor(const V& v, int d) {
  if constexpr (sizeof(V) <= 8 && (std::is_arithmetic_v<V>)) {
    return __shfl_xor_sync(0xffffffffu, v, d);
  } else {
    static_assert(sizeof(V) % 4 == 0, "shuffled values are whole 32-bit words");
    V r;
    const uint32_t* s = reinterpret_cast<const uint32_t*>(&v);
    uint32_t* o = reinterpret_cast<uint32_t*>(&r);
#pragma unroll
    for (int w = 0; w < static_cast<int>(sizeof(V) / 4); ++w) o[w] = __shfl_xor_sync(0xffffffffu, s[w], d);
    return r;
  }
}

// v over the warp by a butterfly; every lane gets the same bits (op commutative bit for bit).
template <class V, class Op>
__device__ __forceinline__ V warp_all(V v, Op op) {
#pragma unroll
  for (int d = 16; d >= 1; d >>= 1) v = op(v, shfl_xor(v, d));
  return v;
}

// The group of a line: one warp. tid / size index the line's pieces; reduce() gives every
// lane the warp's total.
struct WarpGroup {
  int tid;
  static constexpr int size = 32;
  static constexpr int rank = 0, ranks = 1;  // one slice: the whole line
  template <class V, class Op>
  __device__ __forceinline__ V reduce(V v, Op op) const { return warp_all(v, op); }
};

// The group of a line: a cluster of `ranks` blocks of kThreads threads, block `rank` holding
// slice `rank` of the line. reduce(): warp butterflies, the warps in order (slots: kThreads / 32
// values of shared memory), then the blocks' totals in rank order through distributed shared
// memory (mine: two values of shared memory per block, used in turn). Every thread of the cluster
// calls it, the same number of times, and the kernel ends with one more cluster barrier (a block
// must not exit while another may still read its `mine`).
template <int kThreads>
struct ClusterGroup {
  static constexpr int kMaxRanks = 8;  // the portable cluster size
  int tid;
  static constexpr int size = kThreads;
  int rank, ranks;
  mutable unsigned parity = 0;
  template <class V, class Op>
  __device__ __forceinline__ V reduce(V v, Op op, V* slots, V* mine) const {
    namespace cg = cooperative_groups;
    constexpr int kWarps = kThreads / 32;
    v = warp_all(v, op);
    if ((tid & 31) == 0) slots[tid >> 5] = v;
    __syncthreads();
    V t = slots[0];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) t = op(t, slots[w]);
    if (ranks == 1) {
      __syncthreads();  // slots are rewritten by the next call
      return t;
    }
    cg::cluster_group cl = cg::this_cluster();
    // mine[0] and mine[1] alternate between calls: a block rewrites one only after the next
    // call's barrier, which every block passes after reading this call's values, so one cluster
    // barrier per call suffices
    V* slot = mine + (parity & 1);
    ++parity;
    if (tid == 0) *slot = t;
    cl.sync();
    V all[kMaxRanks];  // every block's value read at once (remote reads in flight together)
#pragma unroll
    for (int r = 0; r < kMaxRanks; ++r)
      if (r < ranks) all[r] = *cl.map_shared_rank(slot, r);
    V c = all[0];
#pragma unroll
    for (int r = 1; r < kMaxRanks; ++r)
      if (r < ranks) c = op(c, all[r]);
    return c;
  }
};

// Σ f(i) over i in [0, n) by one block of kThreads (the families' finish of per-sample or
// per-block partials): thread t adds t, t + kThreads, ... in order, then the block's fixed tree;
// every thread gets the total (bitwise the same for the same n, whatever the device). V: a value
// with operator+= (a float or a pair of them); called once per kernel.
template <int kThreads, class V, class F>
__device__ __forceinline__ V block_sum(int64_t n, V zero, F&& f) {
  __shared__ __align__(16) unsigned char slots[kThreads / 32 * sizeof(V)];
  __shared__ __align__(16) unsigned char mine[2 * sizeof(V)];
  const int tid = static_cast<int>(threadIdx.x);
  V a = zero;
  for (int64_t i = tid; i < n; i += kThreads) a += f(i);
  const ClusterGroup<kThreads> grp{tid, 0, 1};
  return grp.reduce(a, SumOp{}, reinterpret_cast<V*>(slots), reinterpret_cast<V*>(mine));
}

// A lone thread per line (lines along a strided axis): nothing to combine.
struct ThreadGroup {
  static constexpr int tid = 0, size = 1;
};

// The three ways a kernel walks lines with a group per line; body(line, grp, red) runs the line
// on every thread of its group, red(v, op) giving the group's total (the line bodies of the loss
// and normalize families). kWarps lines (warps) per block of 32·kWarps threads:
template <int kWarps, class Body>
__device__ __forceinline__ void warp_lines(int64_t lines, Body&& body) {
  const int w = static_cast<int>(threadIdx.x) >> 5, lane = static_cast<int>(threadIdx.x) & 31;
  const WarpGroup grp{lane};
  auto red = [&](auto v, auto op) { return grp.reduce(v, op); };
  for (int64_t l = static_cast<int64_t>(blockIdx.x) * kWarps + w; l < lines; l += static_cast<int64_t>(gridDim.x) * kWarps) body(l, grp, red);
}
// a block of kThreads per line, reducing values of at most kSlotBytes:
template <int kThreads, int kSlotBytes, class Body>
__device__ __forceinline__ void block_lines(int64_t lines, Body&& body) {
  __shared__ __align__(16) unsigned char slots[kThreads / 32 * kSlotBytes];
  __shared__ __align__(16) unsigned char mine[2 * kSlotBytes];
  const ClusterGroup<kThreads> grp{static_cast<int>(threadIdx.x), 0, 1};
  auto red = [&](auto v, auto op) {
    using VT = decltype(v);
    static_assert(sizeof(VT) <= kSlotBytes, "a reduced value fits its slot");
    return grp.reduce(v, op, reinterpret_cast<VT*>(slots), reinterpret_cast<VT*>(mine));
  };
  for (int64_t l = blockIdx.x; l < lines; l += gridDim.x) body(l, grp, red);
}
// a thread per line, adjacent lines on adjacent threads:
template <int kThreads, class Body>
__device__ __forceinline__ void thread_lines(int64_t lines, Body&& body) {
  const ThreadGroup grp;
  auto red = [](auto v, auto) { return v; };
  for (int64_t l = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; l < lines; l += static_cast<int64_t>(gridDim.x) * kThreads)
    body(l, grp, red);
}

// The group of a line along a strided axis with few lines: kY threads of one block column
// (threadIdx.y = 0 .. kY - 1), kX lines side by side along threadIdx.x (adjacent lines on
// adjacent lanes: their elements share sectors when the lines are adjacent in memory). reduce():
// each column's kY values through shared memory (slots: kY · kX values), added in y order.
template <int kX, int kY>
struct ColumnGroup {
  int tid;  // threadIdx.y
  static constexpr int size = kY;
  template <class V, class Op>
  __device__ __forceinline__ V reduce(V v, Op op, V* slots) const {
    const int x = static_cast<int>(threadIdx.x);
    slots[tid * kX + x] = v;
    __syncthreads();
    V t = slots[x];
#pragma unroll
    for (int y = 1; y < kY; ++y) t = op(t, slots[y * kX + x]);
    __syncthreads();  // slots are rewritten by the next call
    return t;
  }
};
// kX lines per block of (kX, kY) threads. Every thread runs the same number of lines (the
// reduce's barriers): a lane past the last line redoes the last line (the same values to the same
// places).
template <int kX, int kY, int kSlotBytes, class Body>
__device__ __forceinline__ void column_lines(int64_t lines, Body&& body) {
  __shared__ __align__(16) unsigned char slots[kY * kX * kSlotBytes];
  const ColumnGroup<kX, kY> grp{static_cast<int>(threadIdx.y)};
  auto red = [&](auto v, auto op) {
    using VT = decltype(v);
    static_assert(sizeof(VT) <= kSlotBytes, "a reduced value fits its slot");
    return grp.reduce(v, op, reinterpret_cast<VT*>(slots));
  };
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * kX; base < lines; base += static_cast<int64_t>(gridDim.x) * kX) {
    const int64_t l = base + threadIdx.x;
    body(l < lines ? l : lines - 1, grp, red);
  }
}

// Starts copying elements [0, n) of a line at src (unit stride) into stage: thread tid of nt
// takes the pieces tid, tid + nt, ... — pieces of V elements (V·sizeof(T) a multiple of 16:
// whole 16-byte vectors by cp.async) when vec (src 16-byte aligned, n a multiple of V), else
// single elements (copied at once). The caller commits the cp.async group and waits for it
// (cp_async_wait); the thread then reads back the same pieces, so no barrier is needed, and may
// stage the next line into another buffer meanwhile.
template <class T, int V>
__device__ __forceinline__ void stage_line(T* stage, const T* src, int64_t n, int tid, int nt, bool vec) {
  constexpr int kChunks = V * static_cast<int>(sizeof(T)) / 16;
  if constexpr (kChunks >= 1 && V * sizeof(T) % 16 == 0) {
    if (vec) {
      const unsigned sb = smem_u32(stage);
      const unsigned char* s = reinterpret_cast<const unsigned char*>(src);
      for (int64_t i = tid; i < n / V; i += nt)
#pragma unroll
        for (int c = 0; c < kChunks; ++c) cp_async<16>(sb + static_cast<unsigned>((i * kChunks + c) * 16), s + (i * kChunks + c) * 16);
      return;
    }
  }
  for (int64_t i = tid; i < n; i += nt) stage[i] = src[i];
}

// Walks a group's lines first, first + step, ... below `lines`. offsets(line, o) fills a line's
// offsets (O: an array type); src(o, r) is read view r's global start of the line (unit stride
// when staged). Staged: the R read views' elements [0, n) are copied into buffer b of the stage
// (view r at stage + (b·R + r)·buf_elems, V-element pieces by stage_line), the next line's copies
// issued before this line is used when buffers == 2, and body.operator()<true>(o, p) gets the
// stage pointers p[r]; unstaged, body.operator()<false>(o, p) gets the global ones (body: a
// lambda [&]<bool Staged>(const O& o, const T* const* p)).
template <int R, int V, class T, class O, class Offsets, class Src, class Body>
__device__ __forceinline__ void for_each_line(int64_t first, int64_t step, int64_t lines, T* stage, int64_t buf_elems, int64_t n, int tid,
                                              int nt, bool vec, bool staged, int buffers, Offsets&& offsets, Src&& src, Body&& body) {
  const T* p[R];
  if (!staged) {
    for (int64_t line = first; line < lines; line += step) {
      O o;
      offsets(line, o);
#pragma unroll
      for (int r = 0; r < R; ++r) p[r] = src(o, r);
      body.template operator()<false>(o, static_cast<const T* const*>(p));
    }
    return;
  }
  auto issue = [&](const O& o, int b) {
#pragma unroll
    for (int r = 0; r < R; ++r) stage_line<T, V>(stage + (b * R + r) * buf_elems, src(o, r), n, tid, nt, vec);
    cp_async_commit();
  };
  O o, on;
  int64_t line = first;
  if (line < lines) {
    offsets(line, o);
    issue(o, 0);
  }
  for (int k = 0; line < lines; ++k) {
    const int64_t next = line + step;
    const int b = buffers == 2 ? (k & 1) : 0;
    const bool ahead = buffers == 2 && next < lines;
    if (ahead) {
      offsets(next, on);
      issue(on, b ^ 1);
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
#pragma unroll
    for (int r = 0; r < R; ++r) p[r] = stage + (b * R + r) * buf_elems;
    body.template operator()<true>(o, static_cast<const T* const*>(p));
    line = next;
    if (line >= lines) break;
    if (ahead) {
      o = on;
    } else {
      offsets(line, o);
      issue(o, 0);
    }
  }
}

}  // namespace baracuda::rows
