// CrossEntropyPlan and CrossEntropyBackwardPlan: the descriptor's checks, the operands, the
// sample geometry (class axis and sample axes of every view), the path, the launches.
#include <algorithm>
#include <cmath>

#include "baracuda/ops/loss.hpp"
#include "core/checked_math.hpp"
#include "core/cuda_check.hpp"
#include "core/dispatch.hpp"
#include "core/plan_kit.hpp"
#include "core/validate.hpp"
#include "core/workspace.hpp"
#include "ops/loss/loss_geometry.hpp"

namespace baracuda {

namespace {

constexpr std::string_view kOp = "cross_entropy";
constexpr std::string_view kOpBwd = "cross_entropy_backward";

using FloatDTypes = DTypeList<DType::f32, DType::f16, DType::bf16, DType::f64>;
using IndexDTypes = DTypeList<DType::i32, DType::i64>;

struct Shapes {
  std::vector<int64_t> input, samples_shape, reduced;  // reduced: the loss's shape
  int class_axis = 0;
  int64_t samples = 1, classes = 0;
  DType acc = DType::f32;
};

Result<Shapes> check_ce(std::string_view op, const CrossEntropyDescriptor& d) {
  int64_t numel = 0;
  if (Status s = check_shape(op, d.rank, d.shape, 1, &numel); !s.ok()) return s;
  if (Status s = check_dtype(op, "dtype", d.dtype, FloatDTypes{}); !s.ok()) return s;
  if (d.target_kind == LossTarget::kIndex)
    if (Status s = check_dtype(op, "index_dtype", d.index_dtype, IndexDTypes{}); !s.ok()) return s;
  if (!(d.label_smoothing >= 0.0 && d.label_smoothing <= 1.0))
    return error(StatusCode::kInvalidProblem, op, ": label_smoothing = ", d.label_smoothing, " must be in [0, 1]");
  if (!(std::isfinite(d.z_loss) && d.z_loss >= 0.0))
    return error(StatusCode::kInvalidProblem, op, ": z_loss = ", d.z_loss, " must be finite and >= 0");
  if (d.reduction == LossReduction::kBatchMean)
    return error(StatusCode::kInvalidProblem, op, ": reduction batchmean is kl_div's (none, mean or sum here)");
  if (d.target_kind == LossTarget::kProbability && d.ignore_index >= 0)
    return error(StatusCode::kInvalidProblem, op, ": ignore_index = ", d.ignore_index,
                 " with a probability target (PyTorch: ignore_index is not supported for floating point targets; leave it negative)");
  if (d.op == ClassLossKind::kNllLoss) {
    if (d.target_kind == LossTarget::kProbability)
      return error(StatusCode::kInvalidProblem, op, ": nll_loss takes class-index targets only (target = index)");
    if (d.label_smoothing != 0.0 || d.z_loss != 0.0)
      return error(StatusCode::kInvalidProblem, op, ": nll_loss has no label_smoothing or z_loss (both must be 0)");
  }
  Shapes sh;
  sh.class_axis = d.rank == 1 ? 0 : 1;
  sh.classes = d.shape[sh.class_axis];
  for (int a = 0; a < d.rank; ++a) {
    sh.input.push_back(d.shape[a]);
    if (a != sh.class_axis) sh.samples_shape.push_back(d.shape[a]), sh.samples *= d.shape[a];
  }
  if (sh.classes == 0 && sh.samples > 0)
    return error(StatusCode::kInvalidProblem, op, ": shape[", sh.class_axis, "] (the classes) = 0 with samples to score");
  if (d.reduction == LossReduction::kNone) sh.reduced = sh.samples_shape;
  sh.acc = acc_of(d.dtype);
  return sh;
}

// The geometry of a call: views[v] the views present (null: absent), `classed` which carry the
// class axis.
void build(const CrossEntropyDescriptor& d, const Shapes& sh, const TensorLayout* const* views, const bool* classed, loss::LossGeom* g) {
  g->samples = sh.samples;
  g->C = sh.classes;
  int k = 0;
  for (int a = 0; a < d.rank; ++a)
    if (a != sh.class_axis) g->osize[k++] = d.shape[a];
  g->ko = k;
  for (int v = 0; v < loss::kViews; ++v) {
    if (!views[v]) continue;
    const TensorLayout& t = *views[v];
    if (classed[v]) {
      int j = 0;
      for (int a = 0; a < t.rank; ++a) {
        if (a == sh.class_axis) g->cs[v] = t.stride[a];
        else g->os[v][j++] = t.stride[a];
      }
    } else {
      for (int a = 0; a < t.rank && a < kMaxRank; ++a) g->os[v][a] = t.stride[a];
    }
  }
  g->kind = static_cast<int>(d.op);
  g->prob = d.target_kind == LossTarget::kProbability;
  g->index64 = d.index_dtype == DType::i64;
  g->reduction = static_cast<int>(d.reduction);
  g->ignore_index = d.ignore_index;
  g->smoothing = d.label_smoothing;
  g->z = d.z_loss;
}

// The path and the vector flag from the class views' strides and pointers.
void choose_path(loss::LossGeom* g, DType dt, const int* class_views, int n) {
  bool unit = true, vec = true;
  const int64_t eb = static_cast<int64_t>(dtype_size(dt)), w = 16 / eb;
  for (int i = 0; i < n; ++i) {
    const int v = class_views[i];
    const void* p = v == loss::kDx ? g->out[v] : g->in[v];
    if (!p) continue;
    if (g->cs[v] != 1 && g->C > 1) unit = false;
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) vec = false;
    for (int a = 0; a < g->ko; ++a)
      if (g->osize[a] > 1 && (g->os[v][a] * eb) % 16 != 0) vec = false;
  }
  if (g->C % w != 0) vec = false;
  g->path = !unit ? loss::kColumns : g->C <= loss::kWarpMaxC ? loss::kWarpRows : loss::kBlockRows;
  g->vec = unit && vec;
  if (g->vec)
    for (int i = 0; i < n; ++i) g->cs[class_views[i]] = 1;
}

const char* path_name(int64_t classes, bool class_unit) {
  return !class_unit ? "columns" : classes <= loss::kWarpMaxC ? "warp_rows" : "block_rows";
}

// The sku variant of a contiguous call: the class axis is unit-stride when no axis follows it
// with more than one element.
bool contiguous_class_unit(const CrossEntropyDescriptor& d, const Shapes& sh) {
  for (int a = sh.class_axis + 1; a < d.rank; ++a)
    if (d.shape[a] > 1) return false;
  return true;
}

}  // namespace

// ---------------------------------------------------------------- forward

Result<CrossEntropyPlan> CrossEntropyPlan::select(const CrossEntropyDescriptor& d, const PlanPreference& pref) {
  CrossEntropyPlan p;
  if (Status s = begin_select(kOp, d, pref, &p.sku_); !s.ok()) return s;
  auto sh = check_ce(kOp, d);
  if (!sh) return sh.status();
  if (!loss::find_cross_entropy(d.dtype, false)) return error(StatusCode::kInternal, kOp, ": no kernel for ", dtype_name(d.dtype));
  p.desc_ = d;
  p.acc_ = sh->acc;
  const bool prob = d.target_kind == LossTarget::kProbability;
  p.operands_.input("input", d.dtype, sh->input);
  if (prob) p.operands_.input("target", d.dtype, sh->input);
  else p.operands_.input("target", d.index_dtype, sh->samples_shape);
  if (d.weight) p.operands_.input("weight", d.dtype, {sh->classes});
  p.operands_.output("loss", d.dtype, sh->reduced);
  if (d.op == ClassLossKind::kCrossEntropy) p.operands_.output("lse", sh->acc, sh->samples_shape).optional = true;
  if (d.reduction == LossReduction::kMean) p.operands_.output("total_weight", sh->acc, {}).optional = true;
  if (Status s = resolve_operands<CrossEntropyArgs>(kOp, p.operands_); !s.ok()) return s;
  if (d.reduction != LossReduction::kNone) {
    int64_t bytes = 0;
    if (!checked_mul(sh->samples, int64_t{2} * static_cast<int64_t>(dtype_size(sh->acc)), &bytes))
      return error(StatusCode::kInvalidProblem, kOp, ": the per-sample partials exceed 2^63 bytes");
    WorkspaceLayout w;
    w.take(static_cast<size_t>(bytes));
    p.workspace_ = w.total();
  }
  if (Status s = check_workspace_budget(kOp, p.workspace_, pref.max_workspace_bytes); !s.ok()) return s;
  p.sku_.op = cat("loss.", enum_name(d.op));
  p.sku_.direction = Direction::kForward;
  p.sku_.dtype = d.dtype;
  p.sku_.variant = path_name(sh->classes, contiguous_class_unit(d, *sh));
  p.guarantee_ = float_guarantee(d.dtype);
  return p;
}

Status CrossEntropyPlan::can_implement(const CrossEntropyArgs& a) const { return check_plan_args(kOp, selected(), operands_, a); }

Status CrossEntropyPlan::run(cudaStream_t stream, Workspace ws, const CrossEntropyArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (Status s = check_workspace(kOp, ws, workspace_); !s.ok()) return s;
  const CrossEntropyDescriptor& d = desc_;
  auto sh = check_ce(kOp, d);
  if (!sh) return sh.status();
  const bool prob = d.target_kind == LossTarget::kProbability;
  loss::LossGeom g;
  const TensorLayout* views[loss::kViews] = {&a.input, &a.target, nullptr, d.reduction == LossReduction::kNone ? &a.loss : nullptr,
                                             a.lse.data ? &a.lse : nullptr, nullptr};
  const bool classed[loss::kViews] = {true, prob, true, false, false, false};
  build(d, *sh, views, classed, &g);
  g.in[loss::kX] = a.input.data;
  g.in[loss::kT] = a.target.data;
  if (d.reduction == LossReduction::kNone) g.out[loss::kLoss] = a.loss.data;
  else g.scalar_loss = a.loss.data;
  g.out[loss::kLse] = a.lse.data;
  g.total_weight = a.total_weight.data;
  g.w = a.weight.data;
  g.ws = a.weight.data ? a.weight.stride[0] : 1;
  g.partials = workspace_ > 0 ? ws.ptr : nullptr;
  const int class_views[2] = {loss::kX, prob ? loss::kT : loss::kX};
  choose_path(&g, d.dtype, class_views, 2);
  return cuda_status(loss::find_cross_entropy(d.dtype, false)(g, stream), kOp);
}

// ---------------------------------------------------------------- backward

Result<CrossEntropyBackwardPlan> CrossEntropyBackwardPlan::select(const CrossEntropyBackwardDescriptor& d, const PlanPreference& pref) {
  CrossEntropyBackwardPlan p;
  if (Status s = begin_select(kOpBwd, d, pref, &p.sku_); !s.ok()) return s;
  auto sh = check_ce(kOpBwd, d);
  if (!sh) return sh.status();
  if (!loss::find_cross_entropy(d.dtype, true)) return error(StatusCode::kInternal, kOpBwd, ": no kernel for ", dtype_name(d.dtype));
  p.desc_ = d;
  p.acc_ = sh->acc;
  const bool prob = d.target_kind == LossTarget::kProbability, ce = d.op == ClassLossKind::kCrossEntropy;
  if (ce) p.operands_.input("input", d.dtype, sh->input);
  if (prob) p.operands_.input("target", d.dtype, sh->input);
  else p.operands_.input("target", d.index_dtype, sh->samples_shape);
  if (d.weight) p.operands_.input("weight", d.dtype, {sh->classes});
  if (ce) p.operands_.input("lse", sh->acc, sh->samples_shape);
  if (d.reduction == LossReduction::kMean) p.operands_.input("total_weight", sh->acc, {});
  p.operands_.input("dloss", d.dtype, sh->reduced);
  p.operands_.output("dinput", d.dtype, sh->input);
  if (Status s = resolve_operands<CrossEntropyBackwardArgs>(kOpBwd, p.operands_); !s.ok()) return s;
  p.sku_.op = cat("loss.", enum_name(d.op));
  p.sku_.direction = Direction::kBackward;
  p.sku_.dtype = d.dtype;
  p.sku_.variant = path_name(sh->classes, contiguous_class_unit(d, *sh));
  p.guarantee_ = float_guarantee(d.dtype);
  return p;
}

Status CrossEntropyBackwardPlan::can_implement(const CrossEntropyBackwardArgs& a) const {
  return check_plan_args(kOpBwd, selected(), operands_, a);
}

Status CrossEntropyBackwardPlan::run(cudaStream_t stream, Workspace, const CrossEntropyBackwardArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (writes_nothing(operands_, a)) return {};
  const CrossEntropyDescriptor& d = desc_;
  auto sh = check_ce(kOpBwd, d);
  if (!sh) return sh.status();
  const bool prob = d.target_kind == LossTarget::kProbability, ce = d.op == ClassLossKind::kCrossEntropy;
  loss::LossGeom g;
  const bool none = d.reduction == LossReduction::kNone;
  const TensorLayout* views[loss::kViews] = {ce ? &a.input : nullptr, &a.target, &a.dinput, nullptr, ce ? &a.lse : nullptr,
                                             none ? &a.dloss : nullptr};
  const bool classed[loss::kViews] = {true, prob, true, false, false, false};
  build(d, *sh, views, classed, &g);
  g.in[loss::kX] = ce ? a.input.data : nullptr;
  g.in[loss::kT] = a.target.data;
  g.in[loss::kLse] = ce ? a.lse.data : nullptr;
  g.in[loss::kDloss] = a.dloss.data;
  g.tw_in = a.total_weight.data;
  g.out[loss::kDx] = a.dinput.data;
  g.w = a.weight.data;
  g.ws = a.weight.data ? a.weight.stride[0] : 1;
  const int class_views[3] = {loss::kX, prob ? loss::kT : loss::kX, loss::kDx};
  choose_path(&g, d.dtype, class_views, 3);
  return cuda_status(loss::find_cross_entropy(d.dtype, true)(g, stream), kOpBwd);
}

}  // namespace baracuda
