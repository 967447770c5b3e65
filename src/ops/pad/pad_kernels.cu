// Pad forward/backward kernels ("rowtile"): a block covers a tile of [rows x columns] of the
// destination; each thread owns up to V columns (strided by blockDim.x, so a warp's accesses
// are consecutive) and kPadRowsPerThread rows. Column source offsets are computed once per
// thread and reused across its rows; row source offsets once per row. All loads of a thread
// are issued before its first store.
#include "core/cuda_types.cuh"
#include "core/launch.cuh"
#include "ops/pad/pad_geometry.hpp"

namespace baracuda::detail {
namespace {

constexpr int kConstant = static_cast<int>(PadMode::kConstant);
constexpr int kReflect = static_cast<int>(PadMode::kReflect);
constexpr int kReplicate = static_cast<int>(PadMode::kReplicate);

// Source coordinate of padded coordinate o along one axis; -1 means "fill" (constant mode).
template <class Idx>
__device__ __forceinline__ Idx pad_source(int mode, Idx n, Idx lo, Idx o) {
  Idx i = o - lo;
  if (mode == kConstant) return (i >= 0 && i < n) ? i : Idx(-1);
  if (mode == kReflect) return i < 0 ? -i : (i >= n ? 2 * (n - 1) - i : i);
  if (mode == kReplicate) return i < 0 ? Idx(0) : (i >= n ? n - 1 : i);
  return i < 0 ? i + n : (i >= n ? i - n : i);  // circular: wraps at most once (validated)
}

// The padded coordinates whose source is x along one axis: up to 3 non-empty ranges [a, b),
// in increasing order.
template <class Idx>
struct Preimages {
  int cnt;
  Idx a[3];
  Idx b[3];
  __device__ __forceinline__ void add(Idx lo_, Idx hi_, Idx m) {
    lo_ = lo_ < 0 ? Idx(0) : lo_;
    hi_ = hi_ > m ? m : hi_;
    if (lo_ < hi_) {
      a[cnt] = lo_;
      b[cnt] = hi_;
      ++cnt;
    }
  }
  __device__ __forceinline__ bool single() const { return cnt == 1 && b[0] - a[0] == 1; }
};

template <class Idx>
__device__ __forceinline__ Preimages<Idx> pad_preimages(int mode, Idx n, Idx m, Idx lo, Idx x) {
  Preimages<Idx> p;
  p.cnt = 0;
  p.a[0] = p.b[0] = 0;
  const Idx o = x + lo;  // the identity cell
  if (mode == kConstant) {
    p.add(o, o + 1, m);
  } else if (mode == kReflect) {
    if (x > 0) p.add(lo - x, lo - x + 1, m);  // mirrored from i = -x
    p.add(o, o + 1, m);
    if (x < n - 1) p.add(lo + 2 * (n - 1) - x, lo + 2 * (n - 1) - x + 1, m);  // from i = 2(n-1)-x
  } else if (mode == kReplicate) {
    p.add(x == 0 ? Idx(0) : o, x == n - 1 ? m : o + 1, m);  // edges take every clamped cell
  } else {  // circular
    p.add(o - n, o - n + 1, m);
    p.add(o, o + 1, m);
    p.add(o + n, o + n + 1, m);
  }
  return p;
}

template <class T, class Idx, int V>
__global__ void __launch_bounds__(kPadThreads) pad_forward_kernel(const PadGeometry g) {
  constexpr int RPT = kPadRowsPerThread;
  const int ca = g.rank - 1;
  const int64_t tr = static_cast<int64_t>(blockIdx.x) / g.tiles_c;
  const int64_t tc = static_cast<int64_t>(blockIdx.x) - tr * g.tiles_c;
  const Idx W = static_cast<Idx>(g.m[ca]);
  const Idx c0 = static_cast<Idx>(tc) * static_cast<Idx>(g.bx * g.v_eff) + static_cast<Idx>(threadIdx.x);

  bool cact[V], cload[V];
  Idx xcol[V];
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const Idx c = c0 + static_cast<Idx>(k * g.bx);
    cact[k] = k < g.v_eff && c < W;
    const Idx s = cact[k] ? pad_source<Idx>(g.mode, g.n[ca], g.lo[ca], c) : Idx(-1);
    cload[k] = s >= 0;
    xcol[k] = s * static_cast<Idx>(g.xs[ca]);
  }

  bool ract[RPT], rload[RPT];
  Idx xrow[RPT], yrow[RPT];
#pragma unroll
  for (int j = 0; j < RPT; ++j) {
    const int64_t r = (tr * RPT + j) * g.by + threadIdx.y;
    ract[j] = r < g.rows;
    Idx rr = static_cast<Idx>(ract[j] ? r : 0);
    Idx xo = 0, yo = 0;
    bool load = true;
#pragma unroll
    for (int d = kMaxRank - 2; d >= 0; --d) {
      if (d < ca) {
        const Idx md = static_cast<Idx>(g.m[d]);
        const Idx o = rr % md;
        rr /= md;
        yo += o * static_cast<Idx>(g.ys[d]);
        const Idx s = pad_source<Idx>(g.mode, g.n[d], g.lo[d], o);
        load = load && s >= 0;
        xo += s * static_cast<Idx>(g.xs[d]);
      }
    }
    rload[j] = load;
    xrow[j] = xo;
    yrow[j] = yo;
  }

  const T* __restrict__ src = static_cast<const T*>(g.src);
  T* __restrict__ dst = static_cast<T*>(g.dst);
  const T fill = static_cast<T>(g.fill);
  T v[RPT][V];
#pragma unroll
  for (int j = 0; j < RPT; ++j)
#pragma unroll
    for (int k = 0; k < V; ++k)
      v[j][k] = (ract[j] && cact[k] && rload[j] && cload[k]) ? __ldg(src + xrow[j] + xcol[k]) : fill;
  const Idx ysc = static_cast<Idx>(g.ys[ca]);
#pragma unroll
  for (int j = 0; j < RPT; ++j)
#pragma unroll
    for (int k = 0; k < V; ++k)
      if (ract[j] && cact[k]) dst[yrow[j] + (c0 + static_cast<Idx>(k * g.bx)) * ysc] = v[j][k];
}

// Full gather for one dx element: every combination of per-axis preimage cells, in row-major
// order. Used for edge elements (more than one preimage); the common case is a single load.
template <class T, class Idx>
__device__ __noinline__ acc_t<T> pad_gather_all(const PadGeometry& g, const T* __restrict__ dy, Idx r, Idx c) {
  const int R = g.rank;
  Preimages<Idx> P[kMaxRank];
  for (int d = R - 2; d >= 0; --d) {
    const Idx nd = static_cast<Idx>(g.n[d]);
    const Idx x = r % nd;
    r /= nd;
    P[d] = pad_preimages<Idx>(g.mode, nd, g.m[d], g.lo[d], x);
    if (P[d].cnt == 0) return acc_t<T>(0);
  }
  P[R - 1] = pad_preimages<Idx>(g.mode, g.n[R - 1], g.m[R - 1], g.lo[R - 1], c);
  if (P[R - 1].cnt == 0) return acc_t<T>(0);
  int ri[kMaxRank];
  Idx o[kMaxRank];
  for (int d = 0; d < R; ++d) {
    ri[d] = 0;
    o[d] = P[d].a[0];
  }
  acc_t<T> acc = 0;
  for (;;) {
    Idx off = 0;
    for (int d = 0; d < R; ++d) off += o[d] * static_cast<Idx>(g.ys[d]);
    acc += to_acc(dy[off]);
    int d = R - 1;
    for (; d >= 0; --d) {
      if (++o[d] < P[d].b[ri[d]]) break;
      if (++ri[d] < P[d].cnt) {
        o[d] = P[d].a[ri[d]];
        break;
      }
      ri[d] = 0;
      o[d] = P[d].a[0];
    }
    if (d < 0) break;
  }
  return acc;
}

template <class T, class Idx, int V>
__global__ void __launch_bounds__(kPadThreads) pad_backward_kernel(const PadGeometry g) {
  using A = acc_t<T>;
  constexpr int RPT = kPadRowsPerThread;
  const int ca = g.rank - 1;
  const int64_t tr = static_cast<int64_t>(blockIdx.x) / g.tiles_c;
  const int64_t tc = static_cast<int64_t>(blockIdx.x) - tr * g.tiles_c;
  const Idx Wn = static_cast<Idx>(g.n[ca]);
  const Idx c0 = static_cast<Idx>(tc) * static_cast<Idx>(g.bx * g.v_eff) + static_cast<Idx>(threadIdx.x);

  bool cact[V], csingle[V], cempty[V];
  Idx ycol[V];
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const Idx c = c0 + static_cast<Idx>(k * g.bx);
    cact[k] = k < g.v_eff && c < Wn;
    const Preimages<Idx> p = pad_preimages<Idx>(g.mode, g.n[ca], g.m[ca], g.lo[ca], cact[k] ? c : Idx(0));
    csingle[k] = p.single();
    cempty[k] = p.cnt == 0;
    ycol[k] = p.a[0] * static_cast<Idx>(g.ys[ca]);
  }

  bool ract[RPT], rsingle[RPT], rempty[RPT];
  Idx xrow[RPT], yrow[RPT], ridx[RPT];
#pragma unroll
  for (int j = 0; j < RPT; ++j) {
    const int64_t r = (tr * RPT + j) * g.by + threadIdx.y;
    ract[j] = r < g.rows;
    ridx[j] = static_cast<Idx>(ract[j] ? r : 0);
    Idx rr = ridx[j];
    Idx xo = 0, yo = 0;
    bool single = true, empty = false;
#pragma unroll
    for (int d = kMaxRank - 2; d >= 0; --d) {
      if (d < ca) {
        const Idx nd = static_cast<Idx>(g.n[d]);
        const Idx x = rr % nd;
        rr /= nd;
        xo += x * static_cast<Idx>(g.xs[d]);
        const Preimages<Idx> p = pad_preimages<Idx>(g.mode, nd, g.m[d], g.lo[d], x);
        single = single && p.single();
        empty = empty || p.cnt == 0;
        yo += p.a[0] * static_cast<Idx>(g.ys[d]);
      }
    }
    rsingle[j] = single;
    rempty[j] = empty;
    xrow[j] = xo;
    yrow[j] = yo;
  }

  const T* __restrict__ dy = static_cast<const T*>(g.src);
  T* __restrict__ dx = static_cast<T*>(g.dst);
  A acc[RPT][V];
#pragma unroll
  for (int j = 0; j < RPT; ++j)
#pragma unroll
    for (int k = 0; k < V; ++k)
      acc[j][k] = (ract[j] && cact[k] && rsingle[j] && csingle[k]) ? to_acc(__ldg(dy + yrow[j] + ycol[k])) : A(0);
#pragma unroll
  for (int j = 0; j < RPT; ++j)
#pragma unroll
    for (int k = 0; k < V; ++k)
      if (ract[j] && cact[k] && !(rsingle[j] && csingle[k]) && !rempty[j] && !cempty[k])
        acc[j][k] = pad_gather_all<T, Idx>(g, dy, ridx[j], c0 + static_cast<Idx>(k * g.bx));
  const Idx xsc = static_cast<Idx>(g.xs[ca]);
#pragma unroll
  for (int j = 0; j < RPT; ++j)
#pragma unroll
    for (int k = 0; k < V; ++k)
      if (ract[j] && cact[k]) dx[xrow[j] + (c0 + static_cast<Idx>(k * g.bx)) * xsc] = from_acc<T>(acc[j][k]);
}

int64_t grid_blocks(const PadGeometry& g) {
  const int64_t rows_per_tile = static_cast<int64_t>(g.by) * kPadRowsPerThread;
  return (g.rows + rows_per_tile - 1) / rows_per_tile * g.tiles_c;
}

template <class T, class Idx>
int launch_forward(const PadGeometry& g, cudaStream_t s) {
  constexpr int V = pad_fwd_cols_per_thread(sizeof(T));
  return static_cast<int>(launch_kernel(pad_forward_kernel<T, Idx, V>, dim3(static_cast<unsigned>(grid_blocks(g))),
                                        dim3(g.bx, g.by), 0, s, g));
}

template <class T, class Idx>
int launch_backward(const PadGeometry& g, cudaStream_t s) {
  constexpr int V = pad_bwd_cols_per_thread(sizeof(T));
  return static_cast<int>(launch_kernel(pad_backward_kernel<T, Idx, V>, dim3(static_cast<unsigned>(grid_blocks(g))),
                                        dim3(g.bx, g.by), 0, s, g));
}

}  // namespace

PadLaunchFn pad_forward_launcher(int elem_size, bool index64) {
  switch (elem_size) {
    case 1: return index64 ? &launch_forward<uint8_t, int64_t> : &launch_forward<uint8_t, int32_t>;
    case 2: return index64 ? &launch_forward<uint16_t, int64_t> : &launch_forward<uint16_t, int32_t>;
    case 4: return index64 ? &launch_forward<uint32_t, int64_t> : &launch_forward<uint32_t, int32_t>;
    case 8: return index64 ? &launch_forward<uint64_t, int64_t> : &launch_forward<uint64_t, int32_t>;
    default: return nullptr;
  }
}

PadLaunchFn pad_backward_launcher(DType dtype, bool index64) {
  PadLaunchFn fn = nullptr;
  dispatch_dtype<CudaTypes>(dtype, FloatDTypes{}, [&]<class T>() {
    fn = index64 ? &launch_backward<T, int64_t> : &launch_backward<T, int32_t>;
  });
  return fn;
}

}  // namespace baracuda::detail
