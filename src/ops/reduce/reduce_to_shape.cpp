// ReduceToShapePlan: validation, axis classification/coalescing, split choice, launch.
#include "baracuda/ops/reduce_to_shape.hpp"

#include <algorithm>
#include <cstdlib>

#include "core/checked_math.hpp"
#include "core/cuda_check.hpp"
#include "core/dispatch.hpp"
#include "core/plan_kit.hpp"
#include "core/validate.hpp"
#include "core/workspace.hpp"
#include "ops/reduce/reduce_geometry.hpp"

namespace baracuda {

namespace {

constexpr std::string_view kOp = "reduce_to_shape";

using ReduceDTypes = DTypeList<DType::f32, DType::f16, DType::bf16, DType::f64, DType::i8, DType::u8, DType::i16, DType::i32,
                               DType::i64, DType::boolean>;

DType accumulator(const ReduceToShapeDescriptor& d);

bool f64_acc(const ReduceToShapeDescriptor& d) { return d.in_dtype == DType::f64 || d.out_dtype == DType::f64; }

// i64 for integer and bool inputs, f64 when either side is f64, else f32.
DType accumulator(const ReduceToShapeDescriptor& d) {
  return is_integral(d.in_dtype) || d.in_dtype == DType::boolean ? DType::i64 : f64_acc(d) ? DType::f64 : DType::f32;
}

// Splits chosen from the shape only (so workspace_size() is fixed at select).
void choose_splits(red::ReduceGeom* g) {
  g->splits = 1;
  if (g->R == 0 || g->K == 0) {
    g->r_per_split = g->R;
    return;
  }
  constexpr int64_t kTargetWarps = 132 * 64, kTargetThreads = 132 * 2048;
  if (g->row_mode) {
    if (g->K < kTargetWarps && g->R >= 4096) g->splits = std::min<int64_t>(ceil_div(g->R, 2048), ceil_div(kTargetWarps, g->K));
  } else {
    const int64_t threads = g->K / g->col_vec;
    if (threads < kTargetThreads && g->R >= 64) g->splits = std::min<int64_t>(ceil_div(g->R, 32), ceil_div(kTargetThreads, std::max<int64_t>(threads, 1)));
    g->splits = std::min<int64_t>(g->splits, 65535);
  }
  g->r_per_split = ceil_div(g->R, g->splits);
  g->splits = ceil_div(g->R, g->r_per_split);
}

// Shape-only classification (strides filled at run).
struct Axes {
  int n = 0;
  int64_t size[kMaxRank];
  bool reduced[kMaxRank];
  int src[kMaxRank];  // x axis
};

Axes classify(const ReduceToShapeDescriptor& d) {
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

void build(const ReduceToShapeDescriptor& d, const TensorLayout* x, const TensorLayout* y, red::ReduceGeom* g) {
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
  g->col_vec = vec_type && v > 1 && g->kk == 1 && g->kr == 1 && g->K % v == 0 ? static_cast<int>(v) : 1;
  choose_splits(g);
}

}  // namespace

ReduceToShapeDescriptor ReduceToShapeDescriptor::make(ReduceOp op, DType in_dtype, std::span<const int64_t> in_shape,
                                                      DType out_dtype, std::span<const int64_t> out_shape) {
  ReduceToShapeDescriptor d;
  d.op = op;
  d.in_dtype = in_dtype;
  d.out_dtype = out_dtype;
  d.in_rank = in_shape.size() > static_cast<size_t>(kMaxRank) ? -1 : static_cast<int>(in_shape.size());
  d.out_rank = out_shape.size() > static_cast<size_t>(kMaxRank) ? -1 : static_cast<int>(out_shape.size());
  if (d.in_rank > 0) std::copy(in_shape.begin(), in_shape.end(), d.in_shape);
  if (d.out_rank > 0) std::copy(out_shape.begin(), out_shape.end(), d.out_shape);
  return d;
}

Result<ReduceToShapePlan> ReduceToShapePlan::select(const ReduceToShapeDescriptor& d, const PlanPreference& pref) {
  ReduceToShapePlan p;
  if (Status s = begin_select(kOp, d, pref, &p.sku_); !s.ok()) return s;
  if (d.in_rank < 0 || d.in_rank > kMaxRank) return error(StatusCode::kInvalidProblem, kOp, ": in rank = ", d.in_rank, " must be in [0, 8]");
  if (d.out_rank < 0 || d.out_rank > d.in_rank)
    return error(StatusCode::kInvalidProblem, kOp, ": out rank = ", d.out_rank, " must be in [0, in rank = ", d.in_rank, "]");
  if (Status s = check_dtype(kOp, "in_dtype", d.in_dtype, ReduceDTypes{}); !s.ok()) return s;
  if (Status s = check_dtype(kOp, "out_dtype", d.out_dtype, ReduceDTypes{}); !s.ok()) return s;
  const bool in_f = is_floating(d.in_dtype), out_f = is_floating(d.out_dtype);
  if (in_f && !out_f) return error(StatusCode::kUnsupported, kOp, ": a floating input cannot reduce into ", dtype_name(d.out_dtype));
  const int off = d.in_rank - d.out_rank;
  for (int a = 0; a < d.in_rank; ++a) {
    if (d.in_shape[a] < 0) return error(StatusCode::kInvalidProblem, kOp, ": in_shape[", a, "] = ", d.in_shape[a], " must be >= 0");
    if (a < off) continue;
    const int64_t o = d.out_shape[a - off];
    if (o != 1 && o != d.in_shape[a])
      return error(StatusCode::kInvalidProblem, kOp, ": out_shape[", a - off, "] = ", o, " must be 1 or in_shape[", a, "] = ", d.in_shape[a]);
  }
  if (d.op == ReduceOp::kMax || d.op == ReduceOp::kMin)
    for (int a = 0; a < d.in_rank; ++a)
      if (d.in_shape[a] == 0 && (a < off || d.out_shape[a - off] == 1))
        return error(StatusCode::kInvalidProblem, kOp, ": ", enum_name(d.op), " over an empty axis (in_shape[", a,
                     "] = 0) has no identity (as torch.amax)");
  if (!red::reduce_find_kernel(d.in_dtype, static_cast<int>(d.op), f64_acc(d)))
    return error(StatusCode::kInternal, kOp, ": no kernel for ", dtype_name(d.in_dtype));
  p.desc_ = d;
  // the operands first: their sizes are checked before the geometry multiplies extents
  p.operands_.input("x", d.in_dtype, std::span<const int64_t>(d.in_shape, static_cast<size_t>(d.in_rank)));
  p.operands_.output("y", d.out_dtype, std::span<const int64_t>(d.out_shape, static_cast<size_t>(d.out_rank)));
  if (Status s = resolve_operands<ReduceToShapeArgs>(kOp, p.operands_); !s.ok()) return s;
  red::ReduceGeom g;
  build(d, nullptr, nullptr, &g);
  // the run-time classification may pick the other mode; reserve for the larger split count
  red::ReduceGeom g2 = g;
  g2.row_mode = !g.row_mode;
  choose_splits(&g2);
  const int64_t splits = std::max(g.splits, g2.splits);
  WorkspaceLayout w;
  if (splits > 1) w.take(static_cast<size_t>(splits * g.K) * dtype_size(accumulator(d)));
  p.workspace_ = w.total();
  if (Status s = check_workspace_budget(kOp, p.workspace_, pref.max_workspace_bytes); !s.ok()) return s;
  p.sku_.op = cat("reduce_to_shape.", enum_name(d.op));
  p.sku_.direction = Direction::kForward;
  p.sku_.dtype = d.in_dtype;
  p.sku_.variant = g.row_mode ? "rows" : "columns";
  p.guarantee_.accumulator = p.guarantee_.math = accumulator(d);
  return p;
}

Status ReduceToShapePlan::can_implement(const ReduceToShapeArgs& a) const {
  return check_plan_args(kOp, selected(), operands_, a);
}

Status ReduceToShapePlan::run(cudaStream_t stream, Workspace ws, const ReduceToShapeArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  red::ReduceGeom g;
  build(desc_, &a.x, &a.y, &g);
  if (g.splits > 1) {
    if (Status s = check_workspace(kOp, ws, static_cast<size_t>(g.splits * g.K) * dtype_size(accumulator(desc_))); !s.ok())
      return s;
    g.partials = ws.ptr;
  }
  g.x = a.x.data;
  g.y = a.y.data;
  g.y_dtype = static_cast<uint8_t>(desc_.out_dtype);
  if (g.K == 0) return {};
  auto fn = red::reduce_find_kernel(desc_.in_dtype, static_cast<int>(desc_.op), f64_acc(desc_));
  return cuda_status(fn(g, stream), kOp);
}

}  // namespace baracuda
