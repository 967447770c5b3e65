// Pad forward/backward kernels ("rowvec"): a block covers a tile of [rows x column chunks] of
// the destination. A chunk is 16 bytes of consecutive destination columns, aligned to 16-byte
// addresses when the destination's columns are unit-stride, so full chunks are written with one
// vector store; a thread owns one chunk in each of kPadRowsPerThread rows. Sources are read with
// one 16-byte load when the chunk is interior and aligned there too, else element by element
// (L1-cached). Row offsets are computed once per row. All loads precede the stores.
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

// 16 bytes of T: the unit of a vector access.
template <class T>
union Vec16 {
  uint4 u;
  T e[16 / sizeof(T)];
};

// Row setup shared by both directions: decompose the row index over the row axes of the
// destination and accumulate per-axis source/destination offsets through `axis(d, coord)`.
template <class Idx, class F>
__device__ __forceinline__ void for_row_axes(const PadGeometry& g, Idx r, bool dst_is_x, F&& axis) {
#pragma unroll
  for (int d = kMaxRank - 2; d >= 0; --d) {
    if (d < g.rank - 1) {
      const Idx ext = static_cast<Idx>(dst_is_x ? g.n[d] : g.m[d]);
      const Idx coord = r % ext;
      r /= ext;
      axis(d, coord);
    }
  }
}

// First destination column of chunk `chunk` in a row whose first element sits at `row_ptr`:
// chunks are aligned to 16-byte boundaries of the destination when its columns are unit-stride.
template <class T, class Idx>
__device__ __forceinline__ Idx chunk_start(const T* row_ptr, Idx chunk, bool unit_stride) {
  constexpr int VEC = 16 / sizeof(T);
  const Idx phase = unit_stride ? static_cast<Idx>((reinterpret_cast<uintptr_t>(row_ptr) / sizeof(T)) % VEC) : Idx(0);
  return chunk * VEC - phase;
}

__device__ __forceinline__ uint32_t fshr(uint32_t lo, uint32_t hi, unsigned bits) { return __funnelshift_r(lo, hi, bits); }

// 16 bytes starting at byte `s` (0 <= s < 16) of the 32 bytes a:b.
__device__ __forceinline__ uint4 window16(const uint4 a, const uint4 b, unsigned s) {
  const unsigned r = (s & 3u) * 8u;
  switch (s >> 2) {
    case 0: return make_uint4(fshr(a.x, a.y, r), fshr(a.y, a.z, r), fshr(a.z, a.w, r), fshr(a.w, b.x, r));
    case 1: return make_uint4(fshr(a.y, a.z, r), fshr(a.z, a.w, r), fshr(a.w, b.x, r), fshr(b.x, b.y, r));
    case 2: return make_uint4(fshr(a.z, a.w, r), fshr(a.w, b.x, r), fshr(b.x, b.y, r), fshr(b.y, b.z, r));
    default: return make_uint4(fshr(a.w, b.x, r), fshr(b.x, b.y, r), fshr(b.y, b.z, r), fshr(b.z, b.w, r));
  }
}

// 16 consecutive bytes at p with aligned 16-byte loads only: one load when p is aligned, else
// the two aligned blocks around it, which must lie inside [lo, hi) (the caller checks).
__device__ __forceinline__ bool try_load16(const void* p, const void* lo, const void* hi, uint4* out) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const uintptr_t base = a & ~uintptr_t{15};
  if (a == base) {
    *out = __ldg(reinterpret_cast<const uint4*>(base));
    return true;
  }
  if (base < reinterpret_cast<uintptr_t>(lo) || base + 32 > reinterpret_cast<uintptr_t>(hi)) return false;
  const uint4 v0 = __ldg(reinterpret_cast<const uint4*>(base));
  const uint4 v1 = __ldg(reinterpret_cast<const uint4*>(base) + 1);
  *out = window16(v0, v1, static_cast<unsigned>(a - base));
  return true;
}

template <class T, class Idx>
__global__ void __launch_bounds__(kPadThreads) pad_forward_kernel(const __grid_constant__ PadGeometry g) {
  constexpr int RPT = kPadRowsPerThread;
  constexpr int VEC = 16 / sizeof(T);
  const int ca = g.rank - 1;
  const int64_t tr = static_cast<int64_t>(blockIdx.x) / g.tiles_c;
  const int64_t tc = static_cast<int64_t>(blockIdx.x) - tr * g.tiles_c;
  const Idx W = static_cast<Idx>(g.m[ca]);
  const Idx n = static_cast<Idx>(g.n[ca]), lo = static_cast<Idx>(g.lo[ca]);
  const Idx xs = static_cast<Idx>(g.xs[ca]), ys = static_cast<Idx>(g.ys[ca]);
  const Idx chunk = static_cast<Idx>(tc) * g.bx + static_cast<Idx>(threadIdx.x);
  const T* __restrict__ src = static_cast<const T*>(g.src);
  T* __restrict__ dst = static_cast<T*>(g.dst);
  const T fill = static_cast<T>(g.fill);

  Vec16<T> v[RPT];
  Idx yrow[RPT], c0[RPT];
  bool ract[RPT];
#pragma unroll
  for (int j = 0; j < RPT; ++j) {
    const int64_t r = (tr * RPT + j) * g.by + threadIdx.y;
    ract[j] = r < g.rows;
    Idx xo = 0, yo = 0;
    bool load = true;
    for_row_axes<Idx>(g, static_cast<Idx>(ract[j] ? r : 0), false, [&](int d, Idx o) {
      yo += o * static_cast<Idx>(g.ys[d]);
      const Idx s = pad_source<Idx>(g.mode, g.n[d], g.lo[d], o);
      load = load && s >= 0;
      xo += s * static_cast<Idx>(g.xs[d]);
    });
    yrow[j] = yo;
    c0[j] = chunk_start<T, Idx>(dst + yo, chunk, ys == 1);
    const Idx s0 = c0[j] - lo;  // source column of the chunk's first element if interior
    const bool interior = s0 >= 0 && s0 + VEC <= n;
    if (!(ract[j] && load && interior && xs == 1 && try_load16(src + xo + s0, src + xo, src + xo + n, &v[j].u))) {
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const Idx c = c0[j] + k;
        const Idx s = (c >= 0 && c < W) ? pad_source<Idx>(g.mode, n, lo, c) : Idx(-1);
        v[j].e[k] = (ract[j] && load && s >= 0) ? __ldg(src + xo + s * xs) : fill;
      }
    }
  }
#pragma unroll
  for (int j = 0; j < RPT; ++j) {
    if (!ract[j]) continue;
    if (ys == 1 && c0[j] >= 0 && c0[j] + VEC <= W) {
      *reinterpret_cast<uint4*>(dst + yrow[j] + c0[j]) = v[j].u;  // 16-byte aligned by construction
    } else {
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const Idx c = c0[j] + k;
        if (c >= 0 && c < W) dst[yrow[j] + c * ys] = v[j].e[k];
      }
    }
  }
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

template <class T, class Idx>
__global__ void __launch_bounds__(kPadThreads) pad_backward_kernel(const __grid_constant__ PadGeometry g) {
  using A = acc_t<T>;
  constexpr int RPT = kPadRowsPerThread;
  constexpr int VEC = 16 / sizeof(T);
  const int ca = g.rank - 1;
  const int64_t tr = static_cast<int64_t>(blockIdx.x) / g.tiles_c;
  const int64_t tc = static_cast<int64_t>(blockIdx.x) - tr * g.tiles_c;
  const Idx Wn = static_cast<Idx>(g.n[ca]);
  const Idx m = static_cast<Idx>(g.m[ca]), lo = static_cast<Idx>(g.lo[ca]);
  const Idx xs = static_cast<Idx>(g.xs[ca]), ys = static_cast<Idx>(g.ys[ca]);
  const Idx chunk = static_cast<Idx>(tc) * g.bx + static_cast<Idx>(threadIdx.x);
  const T* __restrict__ dy = static_cast<const T*>(g.src);
  T* __restrict__ dx = static_cast<T*>(g.dst);

  A acc[RPT][VEC];
  Idx xrow[RPT], c0[RPT], ridx[RPT];
  unsigned slow[RPT];
  bool ract[RPT];
#pragma unroll
  for (int j = 0; j < RPT; ++j) {
    const int64_t r = (tr * RPT + j) * g.by + threadIdx.y;
    ract[j] = r < g.rows;
    const Idx ri = static_cast<Idx>(ract[j] ? r : 0);
    ridx[j] = ri;
    Idx xo = 0, yo = 0;
    bool single = true, empty = false;
    for_row_axes<Idx>(g, ri, true, [&](int d, Idx x) {
      xo += x * static_cast<Idx>(g.xs[d]);
      const Preimages<Idx> p = pad_preimages<Idx>(g.mode, g.n[d], g.m[d], g.lo[d], x);
      single = single && p.single();
      empty = empty || p.cnt == 0;
      yo += p.a[0] * static_cast<Idx>(g.ys[d]);
    });
    xrow[j] = xo;
    c0[j] = chunk_start<T, Idx>(dx + xo, chunk, xs == 1);
    slow[j] = 0;
    // fast path: the whole chunk has one preimage per element, consecutive in dy
    Vec16<T> in;
    const Idx o0 = c0[j] + lo;
    if (ract[j] && single && c0[j] >= static_cast<Idx>(g.single_lo) && c0[j] + VEC <= static_cast<Idx>(g.single_hi) &&
        ys == 1 && try_load16(dy + yo + o0, dy + yo, dy + yo + m, &in.u)) {
#pragma unroll
      for (int k = 0; k < VEC; ++k) acc[j][k] = to_acc(in.e[k]);
      continue;
    }
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      const Idx c = c0[j] + k;
      const bool act = ract[j] && !empty && c >= 0 && c < Wn;
      const bool one = c >= static_cast<Idx>(g.single_lo) && c < static_cast<Idx>(g.single_hi);
      acc[j][k] = (act && single && one) ? to_acc(__ldg(dy + yo + (c + lo) * ys)) : A(0);
      if (act && !(single && one)) slow[j] |= 1u << k;  // edge element: gathered below
    }
  }
#pragma unroll
  for (int j = 0; j < RPT; ++j) {
    if (slow[j] == 0) continue;
#pragma unroll
    for (int k = 0; k < VEC; ++k)
      if ((slow[j] >> k) & 1u) acc[j][k] = pad_gather_all<T, Idx>(g, dy, ridx[j], c0[j] + k);
  }
#pragma unroll
  for (int j = 0; j < RPT; ++j) {
    if (!ract[j]) continue;
    if (xs == 1 && c0[j] >= 0 && c0[j] + VEC <= Wn) {
      Vec16<T> out;
#pragma unroll
      for (int k = 0; k < VEC; ++k) out.e[k] = from_acc<T>(acc[j][k]);
      *reinterpret_cast<uint4*>(dx + xrow[j] + c0[j]) = out.u;  // 16-byte aligned by construction
    } else {
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const Idx c = c0[j] + k;
        if (c >= 0 && c < Wn) dx[xrow[j] + c * xs] = from_acc<T>(acc[j][k]);
      }
    }
  }
}

int64_t grid_blocks(const PadGeometry& g) {
  const int64_t rows_per_tile = static_cast<int64_t>(g.by) * kPadRowsPerThread;
  return (g.rows + rows_per_tile - 1) / rows_per_tile * g.tiles_c;
}

template <class T, class Idx>
int launch_forward(const PadGeometry& g, cudaStream_t s) {
  return static_cast<int>(launch_kernel(pad_forward_kernel<T, Idx>, dim3(static_cast<unsigned>(grid_blocks(g))),
                                        dim3(g.bx, g.by), 0, s, g));
}

template <class T, class Idx>
int launch_backward(const PadGeometry& g, cudaStream_t s) {
  return static_cast<int>(launch_kernel(pad_backward_kernel<T, Idx>, dim3(static_cast<unsigned>(grid_blocks(g))),
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
