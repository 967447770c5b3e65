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

red::ReduceShape shape_of(const ReduceToShapeDescriptor& d) {
  return {d.in_dtype, d.in_rank, d.in_shape, d.out_rank, d.out_shape};
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
  red::build_geometry(shape_of(d), nullptr, nullptr, &g);
  auto partials = red::partials_bytes(kOp, g, red::kPartialBytes);
  if (!partials) return partials.status();
  WorkspaceLayout w;
  if (*partials) w.take(*partials);
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
  red::build_geometry(shape_of(desc_), &a.x, &a.y, &g);
  if (g.splits > 1) {
    if (Status s = check_workspace(kOp, ws, static_cast<size_t>(g.splits * g.K) * red::kPartialBytes); !s.ok())
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
