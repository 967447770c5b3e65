// The kept x reduced geometry shared by ReduceToShapePlan and ReducePlan: axis classification,
// merging of contiguous runs, row or column mode, the split count.
#include <algorithm>

#include "core/checked_math.hpp"
#include "core/validate.hpp"
#include "ops/reduce/reduce_geometry.hpp"

namespace baracuda::red {

namespace {
// Shape-only classification (strides filled at run).
struct Axes {
  int n = 0;
  int64_t size[kMaxRank];
  bool reduced[kMaxRank];
  int src[kMaxRank];  // x axis
};

Axes classify(const ReduceShape& d) {
  Axes ax;
  const int off = d.in_rank - d.out_rank;
  for (int a = 0; a < d.in_rank; ++a) {
    const int64_t n = d.in_shape[a];
    const int64_t o = a < off ? 1 : d.out_shape[a - off];
    if (n == 1) continue;
    ax.size[ax.n] = n;
    ax.reduced[ax.n] = o == 1 && n != 1;
    ax.src[ax.n] = a;
    ++ax.n;
  }
  return ax;
}

}  // namespace

// Splits chosen from the shape only (so workspace_size() is fixed at select).
void choose_splits(ReduceGeom* g) {
  g->splits = 1;
  if (g->R == 0 || g->K == 0) {
    g->r_per_split = g->R;
    return;
  }
  // row mode: one wave of warps at 32 per SM (the row kernel's registers allow 48); more left a
  // partial second wave (an all-reduce at 0.9x PyTorch)
  constexpr int64_t kTargetWarps = 132 * 32, kTargetThreads = 132 * 1024;  // column mode likewise: 32 warps per SM
  if (g->row_mode) {
    if (g->K < kTargetWarps && g->R >= 4096) g->splits = std::min<int64_t>(ceil_div(g->R, 2048), ceil_div(kTargetWarps, g->K));
  } else {
    const int64_t threads = g->K / g->split_vec;
    if (threads < kTargetThreads && g->R >= 64) g->splits = std::min<int64_t>(ceil_div(g->R, 32), ceil_div(kTargetThreads, std::max<int64_t>(threads, 1)));
    g->splits = std::min<int64_t>(g->splits, 65535);
  }
  g->r_per_split = ceil_div(g->R, g->splits);
  g->splits = ceil_div(g->R, g->r_per_split);
}

void build_geometry(const ReduceShape& d, const TensorLayout* x, const TensorLayout* y, ReduceGeom* g) {
  const Axes ax = classify(d);
  const int off = d.in_rank - d.out_rank;
  g->kk = g->kr = 0;
  g->K = g->R = 1;
  // merge runs of same-class axes that are contiguous in x (and y for kept)
  for (int i = 0; i < ax.n; ++i) {
    const int a = ax.src[i];
    const int64_t xs = x ? x->stride[a] : 0, ys = (y && !ax.reduced[i]) ? y->stride[a - off] : 0;
    if (ax.reduced[i]) {
      if (g->kr > 0 && i > 0 && ax.reduced[i - 1] && g->rxs[g->kr - 1] == xs * ax.size[i]) {
        g->rsize[g->kr - 1] *= ax.size[i];
        g->rxs[g->kr - 1] = xs;
      } else {
        g->rsize[g->kr] = ax.size[i];
        g->rxs[g->kr] = xs;
        ++g->kr;
      }
      g->R *= ax.size[i];
    } else {
      if (g->kk > 0 && i > 0 && !ax.reduced[i - 1] && g->kxs[g->kk - 1] == xs * ax.size[i] && g->kys[g->kk - 1] == ys * ax.size[i]) {
        g->ksize[g->kk - 1] *= ax.size[i];
        g->kxs[g->kk - 1] = xs;
        g->kys[g->kk - 1] = ys;
      } else {
        g->ksize[g->kk] = ax.size[i];
        g->kxs[g->kk] = xs;
        g->kys[g->kk] = ys;
        ++g->kk;
      }
      g->K *= ax.size[i];
    }
  }
  // zero-extent reduced axes reduce nothing (identity); zero-extent kept axes: nothing to write
  for (int a = 0; a < d.in_rank; ++a) {
    const int64_t o = a < off ? 1 : d.out_shape[a - off];
    if (d.in_shape[a] == 0 && o == 1) g->R = 0;
    if (d.in_shape[a] == 0 && o == 0) g->K = 0;
  }
  if (g->kr == 0) {
    g->rsize[0] = 1;
    g->rxs[0] = 0;
    g->kr = 1;
  }
  // row mode when the smallest-|stride| axis of x is reduced (or nothing is kept)
  int64_t best = INT64_MAX;
  bool inner_reduced = g->kk == 0;
  for (int i = 0; i < g->kr; ++i)
    if (g->rsize[i] > 1 && saturating_abs(g->rxs[i]) < best) best = saturating_abs(g->rxs[i]), inner_reduced = true;
  for (int i = 0; i < g->kk; ++i)
    if (g->ksize[i] > 1 && saturating_abs(g->kxs[i]) < best) best = saturating_abs(g->kxs[i]), inner_reduced = false;
  if (!x) inner_reduced = ax.n > 0 ? ax.reduced[ax.n - 1] : true;  // shape-only: last axis
  g->row_mode = inner_reduced;
  const int64_t v = 16 / static_cast<int64_t>(dtype_size(d.in_dtype));
  const bool vec_type = d.in_dtype == DType::f32 || d.in_dtype == DType::f16 || d.in_dtype == DType::bf16 || d.in_dtype == DType::f64;
  // column vectors: col_vec adjacent outputs along the innermost kept run (its extent a multiple)
  g->col_vec = vec_type && v > 1 && g->kk >= 1 && g->kr == 1 && g->ksize[g->kk - 1] % v == 0 ? static_cast<int>(v) : 1;
  g->split_vec = vec_type && v > 1 && g->K % v == 0 ? static_cast<int>(v) : 1;
  choose_splits(g);
}


Result<size_t> partials_bytes(std::string_view op, const ReduceGeom& g, size_t acc_bytes) {
  ReduceGeom other = g;
  other.row_mode = !g.row_mode;
  choose_splits(&other);
  const int64_t splits = std::max(g.splits, other.splits);
  if (splits <= 1) return size_t{0};
  int64_t bytes = 0;
  if (!checked_mul(splits, g.K, &bytes) || !checked_mul(bytes, static_cast<int64_t>(acc_bytes), &bytes))
    return error(StatusCode::kInvalidProblem, op, ": the split partials exceed 2^63 bytes");
  return static_cast<size_t>(bytes);
}

void finish_backward(ReduceBwdGeom* g, DType x) {
  int64_t* views[] = {g->xs, g->dxs, g->ys, g->dys, g->ixs, g->ms, g->rmul};
  // drop extent-1 axes, then merge an axis into the next where every view steps evenly
  int n = 0;
  for (int a = 0; a < g->rank; ++a) {
    if (g->size[a] == 1) continue;
    for (int64_t* v : views) v[n] = v[a];
    g->size[n++] = g->size[a];
  }
  int m = 0;
  for (int a = 0; a < n; ++a) {
    bool merge = m > 0;
    for (const int64_t* v : views) merge = merge && v[m - 1] == v[a] * g->size[a];
    if (merge) {
      g->size[m - 1] *= g->size[a];
      for (int64_t* v : views) v[m - 1] = v[a];
    } else {
      for (int64_t* v : views) v[m] = v[a];
      g->size[m++] = g->size[a];
    }
  }
  g->rank = m;
  g->inner = m > 0 ? g->size[m - 1] : 1;
  g->rows = g->inner > 0 ? g->numel / g->inner : 0;
  const int64_t unit = dtype_size(x) == 8 ? 4 : 8;  // the kernel's elements per thread (reduce_backward.cu)
  const int64_t units = (g->inner + unit - 1) / unit;
  g->tile_units = static_cast<int>(std::min<int64_t>(units, 256));
  g->rows_per_tile = 256 / g->tile_units;
  g->ctiles = (units + g->tile_units - 1) / g->tile_units;
  g->small = g->rows < (int64_t{1} << 31);
  for (int a = 0; a + 1 < m; ++a) g->div[a] = g->small ? detail::FastDiv(static_cast<uint32_t>(g->size[a])) : detail::FastDiv();
  // whole 16-byte loads and stores of a unit: unit stride along inner, aligned base, rows a
  // multiple of the unit apart
  auto vec = [&](const void* p, const int64_t* st, size_t elem) {
    if (!p || m == 0 || st[m - 1] != 1 || reinterpret_cast<uintptr_t>(p) % 16 != 0 || (unit * static_cast<int64_t>(elem)) % 16 != 0)
      return false;
    for (int a = 0; a + 1 < m; ++a)
      if (st[a] % unit != 0) return false;
    return true;
  };
  const size_t xe = dtype_size(x), ye = dtype_size(static_cast<DType>(g->y_dtype)), me = x == DType::f64 ? 8 : 4;
  g->vec_x = vec(g->x, g->xs, xe);
  g->vec_dx = vec(g->dx, g->dxs, xe);
  g->vec_y = vec(g->y, g->ys, ye) && (!g->y2 || reinterpret_cast<uintptr_t>(g->y2) % 16 == 0);
  g->vec_dy = vec(g->dy, g->dys, ye) && (!g->dy2 || reinterpret_cast<uintptr_t>(g->dy2) % 16 == 0);
  g->vec_ix = vec(g->indices, g->ixs, 8);
  g->vec_m = vec(g->mean, g->ms, me) && (!g->aux2 || reinterpret_cast<uintptr_t>(g->aux2) % 16 == 0);
}

bool fused_mean(const ReduceBwdGeom& g) {
  if (g.rank < 1 || g.tile_units != 256 || g.rows_per_tile != 1 || g.rmul[g.rank - 1] == 0) return false;
  for (int a = 0; a + 1 < g.rank; ++a)
    if (g.rmul[a] != 0) return false;
  return true;
}

}  // namespace baracuda::red
