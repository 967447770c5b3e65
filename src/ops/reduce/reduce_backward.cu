// ReduceBackwardPlan's pass: dx from dy broadcast over the reduced axes (reduce.hpp's formulas),
// a kernel per formula; and the pre-passes that give a formula its per-output values.
#include <algorithm>

#include "core/arch.hpp"
#include "core/cp_async.cuh"
#include "ops/reduce/reduce_policies.cuh"

namespace baracuda::red {

namespace {

constexpr int kUnit = 8;  // consecutive elements of a row per thread
// The fused-mean var / std backward: rows of at most this many bytes take a warp each, in
// blocks of kRowWarps warps (a staged row in the warp's 8 KB of the block's 32 KB of dynamic
// shared memory), longer ones a block of 256 threads.
constexpr int64_t kWarpRowBytes = 8192;
constexpr int kRowWarps = 4;
constexpr int64_t kStagedRowBytes = 65536;  // a row staged in a block's dynamic shared memory
// Whether the fused-mean rows are staged in shared memory (both sides decide by it): x and dx
// unit-stride with 16-byte aligned rows, whole 16-byte pieces, at most kStagedRowBytes.
__host__ __device__ inline bool staged_rows(const ReduceBwdGeom& g, size_t elem) {
  const int64_t bytes = g.inner * static_cast<int64_t>(elem);
  return g.vec_x && g.vec_dx && bytes % 16 == 0 && bytes <= kStagedRowBytes;
}

// The formulas (red::Kind values) and the operands each reads. One kernel serves kinds that read
// the same operands, g.kind telling them apart: kSum (sum, mean: scaled by inv_n), kMax (max,
// min), kAmax (amax, amin, norm ±inf), kNorm2 (norm p = 2 and any other p), kVar (var, var_mean:
// dy2 present), kStd (std, std_mean).
template <int F>
struct Reads {
  static constexpr bool x = F != kSum && F != kNorm0 && F != kMax;
  static constexpr bool y = F == kProd || F == kAmax || F == kLogSumExp || F == kNorm2 || F == kStd || F == kAminmax;
  static constexpr bool y2 = F == kAminmax;
  static constexpr bool dy2 = F == kVar || F == kStd || F == kAminmax;  // kVar / kStd: when g.dy2 is set
  static constexpr bool m = F == kNanMean || F == kProd || F == kAmax || F == kVar || F == kStd || F == kAminmax;
  static constexpr bool aux2 = F == kProd || F == kAminmax;
  static constexpr bool ix = F == kMax;
};

// One element's gradient: d / d2 the gradients, x the element, y / y2 the forward's results, m /
// a2 the pre-pass values, ix the forward's index and r the element's reduced index.
template <int F, class C>
__device__ __forceinline__ C formula(const ReduceBwdGeom& g, C d, C d2, C x, C y, C y2, C m, C a2, int64_t ix, int64_t r) {
  if constexpr (F == kSum) return d * static_cast<C>(g.inv_n);  // inv_n: 1 for sum
  else if constexpr (F == kNanSum) return x != x ? C(0) : d;
  else if constexpr (F == kNanMean) return d / m * (x != x ? C(0) : C(1));
  else if constexpr (F == kProd)  // no zero: dy * y / x; one: dy * (the others' product) at it; more: 0
    return a2 == C(0) ? d * (y / x) : (a2 == C(1) && x == C(0) ? d * m : C(0));
  else if constexpr (F == kAmax) {
    const C q = d / m;
    if (g.kind == kAmax || g.kind == kAmin) return x == y ? q : q * C(0);  // PyTorch's (dy / count) * (x == y): NaN everywhere when nothing equals y
    // norm ±inf: sgn(x) * (|x| == y, or both NaN) * dy / count
    const C sg = x > C(0) ? C(1) : (x < C(0) ? C(-1) : (x != x ? x : C(0)));
    return sg * ((fabs(x) == y || (x != x && y != y)) ? C(1) : C(0)) * q;
  } else if constexpr (F == kAminmax) {
    const C q = d / m, q2 = d2 / a2;
    return (x == y ? q : q * C(0)) + (x == y2 ? q2 : q2 * C(0));
  } else if constexpr (F == kLogSumExp) return d * exp(x - y);
  else if constexpr (F == kNorm0) return C(0);
  else if constexpr (F == kNorm1) return x > C(0) ? d : (x < C(0) ? -d : C(0));
  else if constexpr (F == kNorm2) {
    if (y == C(0)) return C(0);
    if (g.kind == kNorm2) return d * x / y;
    const C pm1 = static_cast<C>(g.p - 1.0), s = x > C(0) ? C(1) : (x < C(0) ? C(-1) : C(0));
    return d * s * pow(fabs(x), pm1) / pow(y, pm1);
  } else if constexpr (F == kVar) {
    const C v = d * (C(2) / static_cast<C>(g.dof)) * (x - m);
    return g.dy2 ? v + d2 * static_cast<C>(g.inv_n) : v;
  } else if constexpr (F == kStd) {
    const C v = y == C(0) ? C(0) : d * (x - m) / (static_cast<C>(g.dof) * y);
    return g.dy2 ? v + d2 * static_cast<C>(g.inv_n) : v;
  } else if constexpr (F == kMax) return ix == r ? d : C(0);
  else return C(0);
}

// An operand's values over a unit: one (Row: the operand is constant along the row, the inner
// axis being reduced) or kUnit.
template <class C, int U, bool Row>
struct Vals {
  C v[Row ? 1 : U];
  __device__ C operator[](int e) const { return v[Row ? 0 : e]; }
};

// A unit of an operand of storage S at p + off, element stride s along inner, n elements valid;
// vec: whole 16-byte loads (s = 1, aligned).
template <class C, int U, bool Row, class S>
__device__ __forceinline__ void load_unit(const S* p, int64_t off, int64_t s, int n, bool vec, Vals<C, U, Row>& v) {
  if constexpr (Row) {
    v.v[0] = to_c<C>(p[off]);
  } else if (vec && n == U) {
    constexpr int V = (16 / static_cast<int>(sizeof(S))) < U ? 16 / static_cast<int>(sizeof(S)) : U;
#pragma unroll
    for (int h = 0; h < U / V; ++h) {
      acc_t<S> w[V];
      load_acc_vec<S, V>(p + off + h * V, w);
#pragma unroll
      for (int e = 0; e < V; ++e) v.v[h * V + e] = static_cast<C>(w[e]);
    }
  } else {
#pragma unroll
    for (int e = 0; e < U; ++e) v.v[e] = e < n ? to_c<C>(p[off + e * s]) : C(0);
  }
}

// The sum of a unit's values, pairwise (a fixed order).
template <class C, int U>
__device__ __forceinline__ C unit_sum(const C (&v)[U]) {
  C t[U];
#pragma unroll
  for (int e = 0; e < U; ++e) t[e] = v[e];
#pragma unroll
  for (int w = 1; w < U; w <<= 1)
#pragma unroll
    for (int e = 0; e + w < U; e += 2 * w) t[e] += t[e + w];
  return t[0];
}

// v summed over the warp by a butterfly: every lane gets the total, in a fixed order.
__device__ __forceinline__ double warp_total(double v) {
#pragma unroll
  for (int d = 16; d >= 1; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d);
  return v;
}
// v summed over a block of 256 threads: warp butterflies, then the 8 warps in order; every
// thread gets the total. sums: 8 shared doubles, free for the next call on return.
__device__ __forceinline__ double block_total(double v, double* sums) {
  v = warp_total(v);
  if ((threadIdx.x & 31) == 0) sums[threadIdx.x >> 5] = v;
  __syncthreads();
  double t = sums[0];
#pragma unroll
  for (int w = 1; w < 8; ++w) t += sums[w];
  __syncthreads();  // sums is rewritten by the next call
  return t;
}

struct Offsets {
  int64_t x, dx, y, dy, ix, m, r;
};

// Row `row`'s offsets in every view (the outer axes' coordinates by div[] when rows < 2^31).
__device__ __forceinline__ Offsets row_offsets(const ReduceBwdGeom& g, int64_t row) {
  Offsets o{0, 0, 0, 0, 0, 0, 0};
  auto add = [&](int a, int64_t c) {
    o.x += c * g.xs[a], o.dx += c * g.dxs[a], o.y += c * g.ys[a], o.dy += c * g.dys[a];
    o.ix += c * g.ixs[a], o.m += c * g.ms[a], o.r += c * g.rmul[a];
  };
  if (g.rank < 2) return o;
  for (int a = g.rank - 2; a >= 1; --a) {
    int64_t q;
    if (g.small) q = g.div[a].div(static_cast<uint32_t>(row));
    else q = row / g.size[a];
    add(a, row - q * g.size[a]);
    row = q;
  }
  add(0, row);
  return o;
}

// Each thread: one unit (U consecutive elements of a row) per row of its row group. Row: the
// inner axis is reduced, so every per-output view is one value per row.
template <class T, int F, bool Row>
__global__ void __launch_bounds__(256, 3) reduce_backward_kernel(const ReduceBwdGeom g) {
  using C = acc_t<T>;
  using R = Reads<F>;
  constexpr int U = sizeof(T) == 8 ? 4 : kUnit;
  // rows in flight: 4 when a row's unit holds no array (one value per view), fewer the more
  // arrays it holds (registers: 85 at 3 blocks of 256 per SM)
  constexpr int kArrays = (R::x ? 1 : 0) + (Row ? 0 : 1 + R::dy2 + R::y + R::y2 + R::m + R::aux2 + 2 * R::ix);
  constexpr int kRows = kArrays == 0 ? 4 : (kArrays == 1 ? 2 : 1);
  const int sub = static_cast<int>(threadIdx.x) / g.tile_units, uc = static_cast<int>(threadIdx.x) - sub * g.tile_units;
  if (sub >= g.rows_per_tile) return;
  const int last = g.rank - 1;
  const int64_t in_x = last >= 0 ? g.xs[last] : 0, in_dx = last >= 0 ? g.dxs[last] : 0, in_y = last >= 0 ? g.ys[last] : 0,
                in_dy = last >= 0 ? g.dys[last] : 0, in_ix = last >= 0 ? g.ixs[last] : 0, in_m = last >= 0 ? g.ms[last] : 0,
                in_r = last >= 0 ? g.rmul[last] : 0;
  const int64_t rgroups = gridDim.x / g.cgroups, rg = blockIdx.x / g.cgroups;
  const int64_t rstep = rgroups * g.rows_per_tile;
  T* dx = static_cast<T*>(g.dx);
  const T* xp = static_cast<const T*>(g.x);
  const C* mp = static_cast<const C*>(g.mean);
  const C* ap = static_cast<const C*>(g.aux2);
  const int64_t* ixp = static_cast<const int64_t*>(g.indices);
  struct Loaded {
    Offsets o;
    Vals<C, U, false> x;
    Vals<C, U, Row> d, d2, y, y2, m, a2;
    Vals<int64_t, U, Row> ix;
  };
  // the per-output views of the unit at o (Row: one value each for the row)
  auto load_views = [&](int n, Loaded& L) {
    const Offsets& o = L.o;
    with_float_type(g.y_dtype, [&]<class D>() {
      load_unit(static_cast<const D*>(g.dy), o.dy, in_dy, n, g.vec_dy, L.d);
      if constexpr (R::dy2)
        if (g.dy2) load_unit(static_cast<const D*>(g.dy2), o.dy, in_dy, n, g.vec_dy, L.d2);
      if constexpr (R::y) load_unit(static_cast<const D*>(g.y), o.y, in_y, n, g.vec_y, L.y);
      if constexpr (R::y2) load_unit(static_cast<const D*>(g.y2), o.y, in_y, n, g.vec_y, L.y2);
    });
    if constexpr (R::m)
      if (mp) load_unit(mp, o.m, in_m, n, g.vec_m, L.m);  // var / std without a pre-pass: row_mean
    if constexpr (R::aux2) load_unit(ap, o.m, in_m, n, g.vec_m, L.a2);
    if constexpr (R::ix) {
      if constexpr (Row) {
        L.ix.v[0] = ixp[o.ix];
      } else {
#pragma unroll
        for (int e = 0; e < U; ++e) L.ix.v[e] = e < n ? ixp[o.ix + e * in_ix] : 0;
      }
    }
  };
  auto store = [&](const Loaded& L, int n) {
    C out[U];
    if constexpr (F == kMax && Row) {  // the index's place in this unit, once (in_r = 1 on a reduced inner axis)
      const int64_t k = L.ix[0] - L.o.r;
#pragma unroll
      for (int e = 0; e < U; ++e) out[e] = k == e ? L.d[0] : C(0);
    } else {
#pragma unroll
      for (int e = 0; e < U; ++e)
        out[e] = formula<F, C>(g, L.d[e], L.d2[e], L.x[e], L.y[e], L.y2[e], L.m[e], L.a2[e], L.ix[e], L.o.r + e * in_r);
    }
    if (g.vec_dx && n == U) {
      store_global16<T, U>(dx + L.o.dx, out);
    } else {
#pragma unroll
      for (int e = 0; e < U; ++e)
        if (e < n) dx[L.o.dx + e * in_dx] = from_c<T>(out[e], false);
    }
  };
  auto unit_n = [&](int64_t col) { return g.inner - col < U ? static_cast<int>(g.inner - col) : U; };
  if constexpr (Row) {
    // rows outermost: a row's per-output values are loaded once, then its column tiles written,
    // kC of them (their x loads) in flight at a time
    constexpr int kC = R::x && sizeof(T) < 8 ? 4 : 2;
    auto write_row = [&](const Loaded& base) {
      for (int64_t ct0 = blockIdx.x % g.cgroups; ct0 < g.ctiles; ct0 += kC * g.cgroups) {
        Loaded L[kC];
        int64_t cols[kC];
#pragma unroll
        for (int k = 0; k < kC; ++k) {
          const int64_t ct = ct0 + k * g.cgroups;
          cols[k] = ct < g.ctiles ? (ct * g.tile_units + uc) * U : g.inner;
          L[k] = base;
          L[k].o.x += cols[k] * in_x, L[k].o.dx += cols[k] * in_dx, L[k].o.r += cols[k] * in_r;
          if constexpr (R::x)
            if (cols[k] < g.inner) load_unit(xp, L[k].o.x, in_x, unit_n(cols[k]), g.vec_x, L[k].x);
        }
#pragma unroll
        for (int k = 0; k < kC; ++k)
          if (cols[k] < g.inner) store(L[k], unit_n(cols[k]));
      }
    };
    if constexpr (F == kVar || F == kStd) {
      if (!mp) {
        // var / std with g.mean null (the inner axis alone reduced: fused_mean): each row's mean
        // taken in the pass, in f64 (x - mean cancels where x is near it) and a fixed order.
        // Rows of at most kWarpRowBytes: a warp each (staged_rows: staged in the warp's 8 KB;
        // else x read twice). Longer staged rows: a block each, the row in dynamic shared memory
        // (the launch gives either layout its buffers). Longer others: a block each, x read
        // twice (the second time mostly from L2).
        extern __shared__ __align__(16) unsigned char row_stage[];
        __shared__ double block_sums[8];  // block_total's
        constexpr int kM = sizeof(T) < 8 ? 4 : 2;
        // A staged row (staged_rows): the nt threads of its group (this one: tid) copy its
        // 16-byte pieces tid, tid + nt, ... into buf by cp.async, all in flight at once (x read
        // once), sum them in f64 (a piece pairwise, then in order; group_sum: the group's total
        // in a fixed order), then write their pieces from buf: dx = (x - mean) * k1 + k0 with the
        // row's coefficients (var: dy * 2 / dof; std: dy / (dof * y), 0 where y = 0; k0 the
        // mean's gradient dy2 / n). A thread reads back only the pieces it copied; a warp's
        // 16-byte accesses are consecutive (no bank conflict).
        auto staged_row = [&](const Loaded& base, unsigned char* buf, int tid, int nt, auto&& group_sum) {
          constexpr int V = 16 / static_cast<int>(sizeof(T));
          const int64_t pieces = g.inner / V;
          const unsigned char* xr = reinterpret_cast<const unsigned char*>(xp + base.o.x);
          const unsigned sb = smem_u32(buf);
          for (int64_t i = tid; i < pieces; i += nt) cp_async<16>(sb + static_cast<unsigned>(i * 16), xr + i * 16);
          cp_async_commit();
          cp_async_wait<0>();
          auto piece = [&](int64_t i, C (&w)[V]) { load_acc_vec<T, V>(reinterpret_cast<const T*>(buf + i * 16), w); };
          double sum = 0;
          for (int64_t i = tid; i < pieces; i += nt) {
            C w[V];
            piece(i, w);
            double d[V];
#pragma unroll
            for (int e = 0; e < V; ++e) d[e] = static_cast<double>(w[e]);
            sum += unit_sum<double, V>(d);
          }
          const C m = static_cast<C>(group_sum(sum) / static_cast<double>(g.inner)), d = base.d[0];
          C k1;
          if constexpr (F == kVar) k1 = d * (C(2) / static_cast<C>(g.dof));
          else k1 = base.y[0] == C(0) ? C(0) : d / (static_cast<C>(g.dof) * base.y[0]);
          const C k0 = g.dy2 ? base.d2[0] * static_cast<C>(g.inv_n) : C(0);
          T* dr = dx + base.o.dx;
          for (int64_t i = tid; i < pieces; i += nt) {
            C w[V];
            piece(i, w);
            C out[V];
#pragma unroll
            for (int e = 0; e < V; ++e) out[e] = fma(w[e] - m, k1, k0);
            store_global16<T, V>(dr + i * V, out);
          }
        };
        if (g.inner * static_cast<int64_t>(sizeof(T)) > kWarpRowBytes && staged_rows(g, sizeof(T))) {
          for (int64_t row = rg; row < g.rows; row += rstep) {
            Loaded base = {};
            base.o = row_offsets(g, row);
            load_views(U, base);
            staged_row(base, row_stage, static_cast<int>(threadIdx.x), 256, [&](double v) { return block_total(v, block_sums); });
          }
          return;
        }
        if (g.inner * static_cast<int64_t>(sizeof(T)) <= kWarpRowBytes) {
          // short rows: a warp per row (no barrier; kRowWarps rows in flight per block). A lane sums its
          // units (lane, lane + 32, ...) in order, then a butterfly: a fixed order.
          const int lane = static_cast<int>(threadIdx.x) & 31;
          const int64_t units = (g.inner + U - 1) / U;
          const bool staged = staged_rows(g, sizeof(T));
          for (int64_t row = static_cast<int64_t>(blockIdx.x) * kRowWarps + (threadIdx.x >> 5); row < g.rows;
               row += static_cast<int64_t>(gridDim.x) * kRowWarps) {
            Loaded base = {};
            base.o = row_offsets(g, row);
            load_views(U, base);
            if (staged) {
              staged_row(base, row_stage + (threadIdx.x >> 5) * kWarpRowBytes, lane, 32, [](double v) { return warp_total(v); });
              continue;
            }
            double sum = 0;
            for (int64_t u0 = lane; u0 < units; u0 += 32 * kM) {
              Vals<C, U, false> v[kM] = {};
#pragma unroll
              for (int k = 0; k < kM; ++k) {
                const int64_t col = (u0 + 32 * k) * U;
                if (col < g.inner) load_unit(xp, base.o.x + col * in_x, in_x, unit_n(col), g.vec_x, v[k]);
              }
#pragma unroll
              for (int k = 0; k < kM; ++k)
#pragma unroll
                for (int e = 0; e < U; ++e) sum += static_cast<double>(v[k][e]);
            }
            base.m.v[0] = static_cast<C>(warp_total(sum) / static_cast<double>(g.inner));
            for (int64_t u0 = lane; u0 < units; u0 += 32 * kM) {
              Loaded L[kM];
              int64_t cols[kM];
#pragma unroll
              for (int k = 0; k < kM; ++k) {
                cols[k] = (u0 + 32 * k) * U;
                L[k] = base;
                L[k].o.x += cols[k] * in_x, L[k].o.dx += cols[k] * in_dx, L[k].o.r += cols[k] * in_r;
                if (cols[k] < g.inner) load_unit(xp, L[k].o.x, in_x, unit_n(cols[k]), g.vec_x, L[k].x);
              }
#pragma unroll
              for (int k = 0; k < kM; ++k)
                if (cols[k] < g.inner) store(L[k], unit_n(cols[k]));
            }
          }
          return;
        }
        for (int64_t row = rg; row < g.rows; row += rstep) {  // rows_per_tile = 1, sub = 0
          Loaded base = {};
          base.o = row_offsets(g, row);
          load_views(U, base);
          double sum = 0;
          for (int64_t ct0 = 0; ct0 < g.ctiles; ct0 += kM) {
            Vals<C, U, false> v[kM] = {};
#pragma unroll
            for (int k = 0; k < kM; ++k) {
              const int64_t col = ((ct0 + k) * g.tile_units + uc) * U;
              if (ct0 + k < g.ctiles && col < g.inner) load_unit(xp, base.o.x + col * in_x, in_x, unit_n(col), g.vec_x, v[k]);
            }
#pragma unroll
            for (int k = 0; k < kM; ++k)
#pragma unroll
              for (int e = 0; e < U; ++e) sum += static_cast<double>(v[k][e]);
          }
          base.m.v[0] = static_cast<C>(block_total(sum, block_sums) / static_cast<double>(g.inner));
          write_row(base);
        }
        return;
      }
    }
    for (int64_t row = rg * g.rows_per_tile + sub; row < g.rows; row += rstep) {
      Loaded base = {};
      base.o = row_offsets(g, row);
      load_views(U, base);
      write_row(base);
    }
  } else {
    for (int64_t ct = blockIdx.x % g.cgroups; ct < g.ctiles; ct += g.cgroups) {
      const int64_t col = (ct * g.tile_units + uc) * U;
      if (col >= g.inner) continue;
      const int n = unit_n(col);
      auto load = [&](int64_t row, Loaded& L) {
        Offsets& o = L.o;
        o = row_offsets(g, row);
        o.x += col * in_x, o.dx += col * in_dx, o.r += col * in_r;
        o.y += col * in_y, o.dy += col * in_dy, o.ix += col * in_ix, o.m += col * in_m;
        if constexpr (R::x) load_unit(xp, o.x, in_x, n, g.vec_x, L.x);
        load_views(n, L);
      };
      // kRows rows' loads in flight before the first is computed (the per-row values of the
      // next rows are L2 or DRAM misses)
      for (int64_t row = rg * g.rows_per_tile + sub; row < g.rows; row += kRows * rstep) {
        Loaded L[kRows] = {};
#pragma unroll
        for (int k = 0; k < kRows; ++k)
          if (row + k * rstep < g.rows) load(row + k * rstep, L[k]);
#pragma unroll
        for (int k = 0; k < kRows; ++k)
          if (row + k * rstep < g.rows) store(L[k], n);
      }
    }
  }
}

// The grid fills the resident blocks exactly once (no partial last wave): column groups times row
// groups, each block walking its rows.
template <class T, int F, bool Row>
cudaError_t launch_rows(ReduceBwdGeom g, cudaStream_t stream) {
  // resident blocks per SM: a property of the compiled kernel, asked once
  static const int per_sm = [] {
    int n = 0;
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, reduce_backward_kernel<T, F, Row>, 256, 0) == cudaSuccess && n > 0 ? n : 3;
  }();
  const int sms = current_device_sm_count();
  const int64_t target = static_cast<int64_t>(sms > 0 ? sms : 132) * per_sm;
  const int64_t row_tiles = (g.rows + g.rows_per_tile - 1) / g.rows_per_tile;
  // Row: as few column groups as fill the target (a block then writes whole rows); otherwise as
  // many as there are column tiles, up to the target
  if constexpr (Row) g.cgroups = std::min<int64_t>(g.ctiles, std::max<int64_t>(1, (target + row_tiles - 1) / row_tiles));
  else g.cgroups = g.ctiles < target ? g.ctiles : target;
  if constexpr (Row && (F == kVar || F == kStd)) {
    if (!g.mean) {  // the fused mean: a block (or, short rows, a warp) per whole row
      if (g.tile_units != 256 || g.rows_per_tile != 1) return cudaErrorInvalidValue;
      g.cgroups = 1;
      const int64_t row_bytes = g.inner * static_cast<int64_t>(sizeof(T));
      if (row_bytes > kWarpRowBytes && staged_rows(g, sizeof(T))) {  // a block per row, staged
        const int smem = static_cast<int>(row_bytes);
        BARACUDA_CUDA_TRY(cudaFuncSetAttribute(reduce_backward_kernel<T, F, Row>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        int n = 0;
        BARACUDA_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, reduce_backward_kernel<T, F, Row>, 256, smem));
        const int64_t blocks = std::min<int64_t>(static_cast<int64_t>(sms > 0 ? sms : 132) * std::max(n, 1), g.rows);
        return launch_kernel(reduce_backward_kernel<T, F, Row>, dim3(static_cast<unsigned>(blocks)), dim3(256), static_cast<size_t>(smem), stream, g);
      }
      if (row_bytes <= kWarpRowBytes) {
        const int64_t blocks = std::min<int64_t>(target * (256 / (32 * kRowWarps)), (g.rows + kRowWarps - 1) / kRowWarps);
        return launch_kernel(reduce_backward_kernel<T, F, Row>, dim3(static_cast<unsigned>(blocks > 0 ? blocks : 1)), dim3(32 * kRowWarps),
                             static_cast<size_t>(kRowWarps * kWarpRowBytes), stream, g);
      }
    }
  }
  int64_t rgroups = target / g.cgroups;
  if (rgroups > row_tiles) rgroups = row_tiles;
  if (rgroups < 1) rgroups = 1;
  return launch_kernel(reduce_backward_kernel<T, F, Row>, dim3(static_cast<unsigned>(g.cgroups * rgroups)), dim3(256), 0, stream, g);
}

template <class T, int F>
cudaError_t launch_backward(const ReduceBwdGeom& g, cudaStream_t stream) {
  if (g.numel == 0) return cudaSuccess;
  // the inner axis reduced: every per-output view is constant along a row
  const bool row = g.rank == 0 || g.rmul[g.rank - 1] != 0;
  return row ? launch_rows<T, F, true>(g, stream) : launch_rows<T, F, false>(g, stream);
}

}  // namespace

ReduceLaunchFn find_backward_prepass(DType x, int kind) {
  ReduceLaunchFn fn = nullptr;
  dispatch_storage<true, false>(x, [&]<class T>() {
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    switch (kind) {
      case kAmax:
        fn = &engine_launch<ExtremeCount<T, C, true, false>>;
        break;
      case kAmin:
        fn = &engine_launch<ExtremeCount<T, C, false, false>>;
        break;
      case kNormInf:
        fn = &engine_launch<ExtremeCount<T, C, true, true>>;
        break;
      case kNormNegInf:
        fn = &engine_launch<ExtremeCount<T, C, false, true>>;
        break;
      case kNanMean:
        fn = &engine_launch<NotNanCount<T, C>>;
        break;
      case kProd:
        fn = &engine_launch<ProdZeros<T, C>>;
        break;
      default:
        break;
    }
  });
  return fn;
}

ReduceBwdLaunchFn find_backward(DType x, int kind) {
  // the formula serving kind (Reads: the kinds one kernel serves)
  int f = kind;
  switch (kind) {
    case kMean: f = kSum; break;
    case kMin: f = kMax; break;
    case kAmin: case kNormInf: case kNormNegInf: f = kAmax; break;
    case kNormP: f = kNorm2; break;
    case kVarMean: f = kVar; break;
    case kStdMean: f = kStd; break;
    default: break;
  }
  ReduceBwdLaunchFn fn = nullptr;
  dispatch_storage<true, false>(x, [&]<class T>() {
    switch (f) {
#define BARACUDA_FORMULA(F) \
  case F: fn = &launch_backward<T, F>; break;
      BARACUDA_FORMULA(kSum) BARACUDA_FORMULA(kNanSum) BARACUDA_FORMULA(kNanMean) BARACUDA_FORMULA(kProd)
      BARACUDA_FORMULA(kAmax) BARACUDA_FORMULA(kAminmax) BARACUDA_FORMULA(kLogSumExp) BARACUDA_FORMULA(kNorm0)
      BARACUDA_FORMULA(kNorm1) BARACUDA_FORMULA(kNorm2) BARACUDA_FORMULA(kVar) BARACUDA_FORMULA(kStd)
      BARACUDA_FORMULA(kMax)
#undef BARACUDA_FORMULA
      default: break;
    }
  });
  return fn;
}

}  // namespace baracuda::red
