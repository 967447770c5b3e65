// PointwiseLossPlan and PointwiseLossBackwardPlan: which operands and options each op takes (a
// field set for an op without it is refused by name), PyTorch's defaults, the element geometry.
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

constexpr std::string_view kOp = "pointwise_loss";
constexpr std::string_view kOpBwd = "pointwise_loss_backward";

using K = PointwiseLossKind;
using FloatDTypes = DTypeList<DType::f32, DType::f16, DType::bf16, DType::f64>;

struct PwShape {
  std::vector<int64_t> shape, reduced;
  int64_t numel = 1, blocks = 1;
  double div = 1;
};

bool has_dtarget(K op) { return op != K::kBce && op != K::kHingeEmbedding; }

Result<PwShape> check_pw(std::string_view op, const PointwiseLossDescriptor& d) {
  PwShape sh;
  if (Status s = check_shape(op, d.rank, d.shape, 0, &sh.numel); !s.ok()) return s;
  if (Status s = check_dtype(op, "dtype", d.dtype, FloatDTypes{}); !s.ok()) return s;
  const std::string_view name = enum_name(d.op);
  auto only = [&](bool set, bool allowed, const char* field) -> Status {
    if (set && !allowed) return error(StatusCode::kInvalidProblem, op, ": ", field, " is not an option of ", name);
    return {};
  };
  const bool poisson = d.op == K::kPoissonNll, gauss = d.op == K::kGaussianNll;
  if (Status s = only(d.beta.has_value(), d.op == K::kSmoothL1, "beta"); !s.ok()) return s;
  if (Status s = only(d.delta.has_value(), d.op == K::kHuber, "delta"); !s.ok()) return s;
  if (Status s = only(d.margin.has_value(), d.op == K::kHingeEmbedding || d.op == K::kMarginRanking, "margin"); !s.ok()) return s;
  if (Status s = only(d.eps.has_value(), poisson || gauss, "eps"); !s.ok()) return s;
  if (Status s = only(!d.log_input, poisson, "log_input = false"); !s.ok()) return s;
  if (Status s = only(d.full, poisson || gauss, "full"); !s.ok()) return s;
  if (Status s = only(d.log_target, d.op == K::kKlDiv, "log_target"); !s.ok()) return s;
  if (Status s = only(d.weight, d.op == K::kBce || d.op == K::kBceWithLogits, "weight"); !s.ok()) return s;
  if (Status s = only(d.pos_weight, d.op == K::kBceWithLogits, "pos_weight"); !s.ok()) return s;
  if (Status s = only(d.reduction == LossReduction::kBatchMean, d.op == K::kKlDiv, "reduction batchmean"); !s.ok()) return s;
  if (d.beta && !(std::isfinite(*d.beta) && *d.beta >= 0)) return error(StatusCode::kInvalidProblem, op, ": beta = ", *d.beta, " must be finite and >= 0");
  if (d.delta && !(std::isfinite(*d.delta) && *d.delta > 0)) return error(StatusCode::kInvalidProblem, op, ": delta = ", *d.delta, " must be finite and > 0");
  if (d.margin && !std::isfinite(*d.margin)) return error(StatusCode::kInvalidProblem, op, ": margin = ", *d.margin, " must be finite");
  if (d.eps && !(std::isfinite(*d.eps) && *d.eps >= 0)) return error(StatusCode::kInvalidProblem, op, ": eps = ", *d.eps, " must be finite and >= 0");
  for (int a = 0; a < d.rank; ++a) sh.shape.push_back(d.shape[a]);
  if (d.reduction == LossReduction::kNone) sh.reduced = sh.shape;
  sh.div = d.reduction == LossReduction::kMean ? static_cast<double>(sh.numel)
           : d.reduction == LossReduction::kBatchMean ? static_cast<double>(d.rank > 0 ? d.shape[0] : 1)
                                                      : 1.0;
  sh.blocks = std::clamp<int64_t>((sh.numel + loss::kPwElemsPerBlock - 1) / loss::kPwElemsPerBlock, 1, loss::kPwMaxBlocks);
  return sh;
}

// The operands both directions read: input, input2, target, var, weight, pos_weight.
void declare_inputs(const PointwiseLossDescriptor& d, const PwShape& sh, OperandSpecs& o) {
  o.input("input", d.dtype, sh.shape);
  if (d.op == K::kMarginRanking) o.input("input2", d.dtype, sh.shape);
  o.input("target", d.dtype, sh.shape);
  if (d.op == K::kGaussianNll) o.input("var", d.dtype, sh.shape);
  if (d.weight) o.input("weight", d.dtype, sh.shape);
  if (d.pos_weight) o.input("pos_weight", d.dtype, sh.shape);
}

// The geometry: every view's strides, flat when all are row-major contiguous; the options.
loss::PwGeom geometry(const PointwiseLossDescriptor& d, const PwShape& sh, const TensorLayout* const* views) {
  loss::PwGeom g;
  g.n = sh.numel;
  g.rank = d.rank;
  for (int a = 0; a < d.rank; ++a) g.size[a] = d.shape[a];
  bool flat = true;
  for (int v = 0; v < loss::kPwViews; ++v) {
    if (!views[v]) continue;
    int64_t want = 1;
    for (int a = d.rank - 1; a >= 0; --a) {
      g.st[v][a] = views[v]->stride[a];
      if (d.shape[a] > 1 && views[v]->stride[a] != want) flat = false;
      want *= d.shape[a];
    }
  }
  g.flat = flat;
  g.vec = flat;  // (and the data aligned: set_vec once the pointers are bound)
  g.op = static_cast<int>(d.op);
  g.reduction = static_cast<int>(d.reduction);
  g.beta = d.beta.value_or(1.0);
  g.delta = d.delta.value_or(1.0);
  g.margin = d.margin.value_or(d.op == K::kHingeEmbedding ? 1.0 : 0.0);
  g.eps = d.eps.value_or(d.op == K::kPoissonNll ? 1e-8 : 1e-6);
  g.log_input = d.log_input;
  g.full = d.full;
  g.log_target = d.log_target;
  g.div = sh.div;
  g.blocks = sh.numel > 0 ? sh.blocks : 0;
  return g;
}

void bind_inputs(loss::PwGeom& g, const TensorRef& in, const TensorRef& in2, const TensorRef& tgt, const TensorRef& var, const TensorRef& w,
                 const TensorRef& pw) {
  g.in[loss::kPwIn] = in.data;
  g.in[loss::kPwIn2] = in2.data;
  g.in[loss::kPwTgt] = tgt.data;
  g.in[loss::kPwVar] = var.data;
  g.in[loss::kPwW] = w.data;
  g.in[loss::kPwPw] = pw.data;
}

const TensorLayout* present(const TensorLayout& t, const void* data) { return data ? &t : nullptr; }

// The vector path needs every bound pointer 16-byte aligned (besides flat).
void set_vec(loss::PwGeom& g) {
  for (int v = 0; v < loss::kPwViews; ++v) {
    const void* p = g.in[v] ? g.in[v] : g.out[v];
    if (v == loss::kPwDl && g.reduction != static_cast<int>(LossReduction::kNone)) continue;  // (a scalar)
    if (p && reinterpret_cast<uintptr_t>(p) % 16 != 0) g.vec = false;
  }
}

}  // namespace

Result<PointwiseLossPlan> PointwiseLossPlan::select(const PointwiseLossDescriptor& d, const PlanPreference& pref) {
  PointwiseLossPlan p;
  if (Status s = begin_select(kOp, d, pref, &p.sku_); !s.ok()) return s;
  auto sh = check_pw(kOp, d);
  if (!sh) return sh.status();
  if (!loss::find_pointwise_loss(d.dtype, false)) return error(StatusCode::kInternal, kOp, ": no kernel for ", dtype_name(d.dtype));
  p.desc_ = d;
  declare_inputs(d, *sh, p.operands_);
  p.operands_.output("loss", d.dtype, sh->reduced);
  if (Status s = resolve_operands<PointwiseLossArgs>(kOp, p.operands_); !s.ok()) return s;
  if (d.reduction != LossReduction::kNone) {
    WorkspaceLayout w;
    w.take(static_cast<size_t>(sh->blocks) * dtype_size(acc_of(d.dtype)));
    p.workspace_ = w.total();
  }
  if (Status s = check_workspace_budget(kOp, p.workspace_, pref.max_workspace_bytes); !s.ok()) return s;
  p.sku_.op = cat("loss.", enum_name(d.op));
  p.sku_.direction = Direction::kForward;
  p.sku_.dtype = d.dtype;
  p.sku_.variant = d.reduction == LossReduction::kNone ? "elementwise" : "elementwise_reduce";
  p.guarantee_ = float_guarantee(d.dtype);
  return p;
}

Status PointwiseLossPlan::can_implement(const PointwiseLossArgs& a) const { return check_plan_args(kOp, selected(), operands_, a); }

Status PointwiseLossPlan::run(cudaStream_t stream, Workspace ws, const PointwiseLossArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (Status s = check_workspace(kOp, ws, workspace_); !s.ok()) return s;
  const PointwiseLossDescriptor& d = desc_;
  auto sh = check_pw(kOp, d);
  if (!sh) return sh.status();
  const bool none = d.reduction == LossReduction::kNone;
  const TensorLayout* views[loss::kPwViews] = {&a.input, present(a.input2, a.input2.data), &a.target, present(a.var, a.var.data),
                                               present(a.weight, a.weight.data), present(a.pos_weight, a.pos_weight.data), nullptr,
                                               none ? &a.loss : nullptr, nullptr, nullptr, nullptr};
  loss::PwGeom g = geometry(d, *sh, views);
  bind_inputs(g, a.input, a.input2, a.target, a.var, a.weight, a.pos_weight);
  if (none) g.out[loss::kPwOut] = a.loss.data;
  else g.scalar_loss = a.loss.data, g.partials = ws.ptr;
  set_vec(g);
  return cuda_status(loss::find_pointwise_loss(d.dtype, false)(g, stream), kOp);
}

Result<PointwiseLossBackwardPlan> PointwiseLossBackwardPlan::select(const PointwiseLossBackwardDescriptor& d, const PlanPreference& pref) {
  PointwiseLossBackwardPlan p;
  if (Status s = begin_select(kOpBwd, d, pref, &p.sku_); !s.ok()) return s;
  auto sh = check_pw(kOpBwd, d);
  if (!sh) return sh.status();
  if (!loss::find_pointwise_loss(d.dtype, true)) return error(StatusCode::kInternal, kOpBwd, ": no kernel for ", dtype_name(d.dtype));
  p.desc_ = d;
  declare_inputs(d, *sh, p.operands_);
  p.operands_.input("dloss", d.dtype, sh->reduced);
  p.operands_.output("dinput", d.dtype, sh->shape);
  if (d.op == K::kMarginRanking) p.operands_.output("dinput2", d.dtype, sh->shape).optional = true;
  if (has_dtarget(d.op)) p.operands_.output("dtarget", d.dtype, sh->shape).optional = true;
  if (d.op == K::kGaussianNll) p.operands_.output("dvar", d.dtype, sh->shape).optional = true;
  if (Status s = resolve_operands<PointwiseLossBackwardArgs>(kOpBwd, p.operands_); !s.ok()) return s;
  p.sku_.op = cat("loss.", enum_name(d.op));
  p.sku_.direction = Direction::kBackward;
  p.sku_.dtype = d.dtype;
  p.sku_.variant = "elementwise";
  p.guarantee_ = float_guarantee(d.dtype);
  return p;
}

Status PointwiseLossBackwardPlan::can_implement(const PointwiseLossBackwardArgs& a) const {
  return check_plan_args(kOpBwd, selected(), operands_, a);
}

Status PointwiseLossBackwardPlan::run(cudaStream_t stream, Workspace, const PointwiseLossBackwardArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (writes_nothing(operands_, a)) return {};
  const PointwiseLossDescriptor& d = desc_;
  auto sh = check_pw(kOpBwd, d);
  if (!sh) return sh.status();
  const bool none = d.reduction == LossReduction::kNone;
  const TensorLayout* views[loss::kPwViews] = {&a.input,
                                               present(a.input2, a.input2.data),
                                               &a.target,
                                               present(a.var, a.var.data),
                                               present(a.weight, a.weight.data),
                                               present(a.pos_weight, a.pos_weight.data),
                                               none ? &a.dloss : nullptr,
                                               present(a.dinput, a.dinput.data),
                                               present(a.dinput2, a.dinput2.data),
                                               present(a.dtarget, a.dtarget.data),
                                               present(a.dvar, a.dvar.data)};
  loss::PwGeom g = geometry(d, *sh, views);
  bind_inputs(g, a.input, a.input2, a.target, a.var, a.weight, a.pos_weight);
  g.in[loss::kPwDl] = a.dloss.data;
  g.out[loss::kPwOut] = a.dinput.data;
  g.out[loss::kPwOut2] = a.dinput2.data;
  g.out[loss::kPwDt] = a.dtarget.data;
  g.out[loss::kPwDv] = a.dvar.data;
  set_vec(g);
  return cuda_status(loss::find_pointwise_loss(d.dtype, true)(g, stream), kOpBwd);
}

}  // namespace baracuda
