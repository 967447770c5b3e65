// RowLossPlan and RowLossBackwardPlan: the descriptor's checks, each op's operands (PyTorch's
// names), the row geometry of every view, the path, the launch.
#include <cmath>

#include "baracuda/ops/row_loss.hpp"
#include "core/checked_math.hpp"
#include "core/cuda_check.hpp"
#include "core/dispatch.hpp"
#include "core/plan_kit.hpp"
#include "core/validate.hpp"
#include "core/workspace.hpp"
#include "ops/loss/loss_geometry.hpp"

namespace baracuda {

namespace {

constexpr std::string_view kOp = "row_loss";
constexpr std::string_view kOpBwd = "row_loss_backward";

using FloatDTypes = DTypeList<DType::f32, DType::f16, DType::bf16, DType::f64>;

// The row inputs of each op, in the order of the kernels' views kRA, kRB, kRC.
struct Names {
  const char* rows[3];
  int n;
};
Names names_of(RowLossKind op) {
  switch (op) {
    case RowLossKind::kMultilabelSoftMargin: return {{"input", nullptr, nullptr}, 1};
    case RowLossKind::kCosineEmbedding: return {{"input1", "input2", nullptr}, 2};
    default: return {{"anchor", "positive", "negative"}, 3};
  }
}

struct Shapes {
  std::vector<int64_t> row, per_sample, reduced;
  int64_t N = 1, D = 0;
};

Result<Shapes> check_row_loss(std::string_view op, const RowLossDescriptor& d) {
  int64_t numel = 0;
  if (d.rank != 1 && d.rank != 2)
    return error(StatusCode::kInvalidProblem, op, ": rank = ", d.rank, " (rows are [N, D] or one sample [D])");
  if (Status s = check_shape(op, d.rank, d.shape, 1, &numel); !s.ok()) return s;
  if (Status s = check_dtype(op, "dtype", d.dtype, FloatDTypes{}); !s.ok()) return s;
  if (d.reduction == LossReduction::kBatchMean)
    return error(StatusCode::kInvalidProblem, op, ": reduction batchmean is kl_div's (none, mean or sum here)");
  if (d.weight && d.op != RowLossKind::kMultilabelSoftMargin)
    return error(StatusCode::kInvalidProblem, op, ": weight is multilabel_soft_margin's (", enum_name(d.op), " has none)");
  if (d.margin && !std::isfinite(*d.margin)) return error(StatusCode::kInvalidProblem, op, ": margin = ", *d.margin, " must be finite");
  if (d.op == RowLossKind::kTripletMargin) {
    if (!(d.p > 0.0 && std::isfinite(d.p)))
      return error(StatusCode::kUnsupported, op, ": triplet_margin's p = ", d.p, " is not supported (finite and > 0)");
    if (!std::isfinite(d.eps)) return error(StatusCode::kInvalidProblem, op, ": eps = ", d.eps, " must be finite");
  }
  Shapes sh;
  sh.D = d.shape[d.rank - 1];
  if (d.rank == 2) sh.N = d.shape[0], sh.per_sample = {d.shape[0]};
  for (int a = 0; a < d.rank; ++a) sh.row.push_back(d.shape[a]);
  if (d.reduction == LossReduction::kNone) sh.reduced = sh.per_sample;
  return sh;
}

double margin_of(const RowLossDescriptor& d) {
  return d.margin ? *d.margin : d.op == RowLossKind::kTripletMargin ? 1.0 : 0.0;
}

// The geometry of a call: views[v] the views present (null: absent).
void build(const RowLossDescriptor& d, const Shapes& sh, const TensorLayout* const* views, void* const* data, loss::RowLossGeom* g) {
  g->N = sh.N, g->D = sh.D;
  bool unit = true;
  for (int v = 0; v < loss::kRowViews; ++v) {
    const TensorLayout* t = views[v];
    if (!t || !data[v]) continue;
    g->p[v] = data[v];
    const bool per_sample = v == loss::kRLoss || v == loss::kRDloss || (v == loss::kRT && d.op == RowLossKind::kCosineEmbedding);
    if (per_sample) {
      g->os[v] = t->rank >= 1 ? t->stride[0] : 0;
    } else {
      g->s[v] = t->stride[t->rank - 1];
      g->os[v] = t->rank == 2 ? t->stride[0] : 0;
      if (g->s[v] != 1 && sh.D > 1) unit = false;
    }
  }
  g->op = static_cast<int>(d.op);
  g->reduction = static_cast<int>(d.reduction);
  g->margin = margin_of(d);
  g->p_norm = d.p, g->eps = d.eps, g->swap = d.swap;
  g->path = !unit ? loss::kColumns : sh.D <= loss::kWarpMaxC ? loss::kWarpRows : loss::kBlockRows;
}

const char* contiguous_path(const Shapes& sh) { return sh.D <= loss::kWarpMaxC ? "warp_rows" : "block_rows"; }

// The operands both directions read: the op's rows, its target, multilabel's weight.
void add_inputs(const RowLossDescriptor& d, const Shapes& sh, OperandSpecs& o) {
  const Names n = names_of(d.op);
  for (int i = 0; i < n.n; ++i) o.input(n.rows[i], d.dtype, sh.row);
  if (d.op == RowLossKind::kMultilabelSoftMargin) o.input("target", d.dtype, sh.row);
  if (d.op == RowLossKind::kCosineEmbedding) o.input("target", d.dtype, sh.per_sample);
  if (d.weight) o.input("weight", d.dtype, {sh.D});
}

}  // namespace

Result<RowLossPlan> RowLossPlan::select(const RowLossDescriptor& d, const PlanPreference& pref) {
  RowLossPlan p;
  if (Status s = begin_select(kOp, d, pref, &p.sku_); !s.ok()) return s;
  auto sh = check_row_loss(kOp, d);
  if (!sh) return sh.status();
  if (!loss::find_row_loss(d.dtype, false)) return error(StatusCode::kInternal, kOp, ": no kernel for ", dtype_name(d.dtype));
  p.desc_ = d;
  add_inputs(d, *sh, p.operands_);
  p.operands_.output("loss", d.dtype, sh->reduced);
  if (Status s = resolve_operands<RowLossArgs>(kOp, p.operands_); !s.ok()) return s;
  if (d.reduction != LossReduction::kNone) {
    int64_t bytes = 0;
    if (!checked_mul(sh->N, static_cast<int64_t>(dtype_size(acc_of(d.dtype))), &bytes))
      return error(StatusCode::kInvalidProblem, kOp, ": the per-sample partials exceed 2^63 bytes");
    p.workspace_ = static_cast<size_t>(bytes);
  }
  if (Status s = check_workspace_budget(kOp, p.workspace_, pref.max_workspace_bytes); !s.ok()) return s;
  p.sku_.op = cat("loss.", enum_name(d.op));
  p.sku_.direction = Direction::kForward;
  p.sku_.dtype = d.dtype;
  p.sku_.variant = contiguous_path(*sh);
  p.guarantee_ = float_guarantee(d.dtype);
  return p;
}

Status RowLossPlan::can_implement(const RowLossArgs& a) const { return check_plan_args(kOp, selected(), operands_, a); }

Status RowLossPlan::run(cudaStream_t stream, Workspace ws, const RowLossArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (Status s = check_workspace(kOp, ws, workspace_); !s.ok()) return s;
  auto sh = check_row_loss(kOp, desc_);
  if (!sh) return sh.status();
  const bool trip = desc_.op == RowLossKind::kTripletMargin, cos = desc_.op == RowLossKind::kCosineEmbedding;
  const TensorRef& ra = trip ? a.anchor : cos ? a.input1 : a.input;
  const TensorRef& rb = trip ? a.positive : a.input2;
  const bool none = desc_.reduction == LossReduction::kNone;
  const TensorLayout* views[loss::kRowViews] = {&ra, &rb, &a.negative, &a.target, nullptr, nullptr, nullptr, nullptr, &a.loss, nullptr};
  void* data[loss::kRowViews] = {const_cast<void*>(ra.data), const_cast<void*>(rb.data), const_cast<void*>(a.negative.data),
                                 const_cast<void*>(a.target.data), nullptr, nullptr, nullptr, nullptr, none ? a.loss.data : nullptr, nullptr};
  loss::RowLossGeom g;
  build(desc_, *sh, views, data, &g);
  g.w = a.weight.data;
  g.ws = a.weight.data ? a.weight.stride[0] : 1;
  g.partials = workspace_ > 0 ? ws.ptr : nullptr;
  g.scalar_loss = none ? nullptr : a.loss.data;
  return cuda_status(loss::find_row_loss(desc_.dtype, false)(g, stream), kOp);
}

Result<RowLossBackwardPlan> RowLossBackwardPlan::select(const RowLossBackwardDescriptor& d, const PlanPreference& pref) {
  RowLossBackwardPlan p;
  if (Status s = begin_select(kOpBwd, d, pref, &p.sku_); !s.ok()) return s;
  auto sh = check_row_loss(kOpBwd, d);
  if (!sh) return sh.status();
  if (!loss::find_row_loss(d.dtype, true)) return error(StatusCode::kInternal, kOpBwd, ": no kernel for ", dtype_name(d.dtype));
  p.desc_ = d;
  add_inputs(d, *sh, p.operands_);
  p.operands_.input("dloss", d.dtype, sh->reduced);
  const Names n = names_of(d.op);
  static const char* const grads[3][3] = {{"dinput", nullptr, nullptr}, {"dinput1", "dinput2", nullptr}, {"danchor", "dpositive", "dnegative"}};
  for (int i = 0; i < n.n; ++i) p.operands_.output(grads[static_cast<int>(d.op)][i], d.dtype, sh->row).optional = true;
  if (d.op == RowLossKind::kMultilabelSoftMargin) p.operands_.output("dtarget", d.dtype, sh->row).optional = true;
  if (Status s = resolve_operands<RowLossBackwardArgs>(kOpBwd, p.operands_); !s.ok()) return s;
  p.sku_.op = cat("loss.", enum_name(d.op));
  p.sku_.direction = Direction::kBackward;
  p.sku_.dtype = d.dtype;
  p.sku_.variant = contiguous_path(*sh);
  p.guarantee_ = float_guarantee(d.dtype);
  return p;
}

Status RowLossBackwardPlan::can_implement(const RowLossBackwardArgs& a) const { return check_plan_args(kOpBwd, selected(), operands_, a); }

Status RowLossBackwardPlan::run(cudaStream_t stream, Workspace, const RowLossBackwardArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (writes_nothing(operands_, a)) return {};
  auto sh = check_row_loss(kOpBwd, desc_);
  if (!sh) return sh.status();
  const bool trip = desc_.op == RowLossKind::kTripletMargin, cos = desc_.op == RowLossKind::kCosineEmbedding;
  const TensorRef& ra = trip ? a.anchor : cos ? a.input1 : a.input;
  const TensorRef& rb = trip ? a.positive : a.input2;
  const TensorMut& da = trip ? a.danchor : cos ? a.dinput1 : a.dinput;
  const TensorMut& db = trip ? a.dpositive : a.dinput2;
  const bool none = desc_.reduction == LossReduction::kNone;
  const TensorLayout* views[loss::kRowViews] = {&ra, &rb, &a.negative, &a.target, &da, &db, &a.dnegative, &a.dtarget, nullptr, &a.dloss};
  void* data[loss::kRowViews] = {const_cast<void*>(ra.data), const_cast<void*>(rb.data), const_cast<void*>(a.negative.data),
                                 const_cast<void*>(a.target.data), da.data, db.data, a.dnegative.data, a.dtarget.data, nullptr,
                                 const_cast<void*>(a.dloss.data)};
  loss::RowLossGeom g;
  build(desc_, *sh, views, data, &g);
  if (!none) g.os[loss::kRDloss] = 0;
  g.w = a.weight.data;
  g.ws = a.weight.data ? a.weight.stride[0] : 1;
  return cuda_status(loss::find_row_loss(desc_.dtype, true)(g, stream), kOpBwd);
}

}  // namespace baracuda
