// LocalResponseNormPlan and LocalResponseNormBackwardPlan: the descriptor's checks, the [N, C, S]
// geometry of every view (the spatial axes merged), the walk order, the launch.
#include <cmath>

#include "baracuda/ops/local_response_norm.hpp"
#include "core/checked_math.hpp"
#include "core/cuda_check.hpp"
#include "core/dispatch.hpp"
#include "core/plan_kit.hpp"
#include "core/validate.hpp"
#include "ops/local_response_norm/lrn_geometry.hpp"

namespace baracuda {

namespace {

constexpr std::string_view kOp = "local_response_norm";
constexpr std::string_view kOpBwd = "local_response_norm_backward";

using FloatDTypes = DTypeList<DType::f32, DType::f16, DType::bf16, DType::f64>;

Result<std::vector<int64_t>> check_lrn(std::string_view op, const LocalResponseNormDescriptor& d) {
  int64_t numel = 0;
  if (d.rank < 3)
    return error(StatusCode::kInvalidProblem, op, ": rank = ", d.rank, ": the input is [N, C, spatial...] (3 or more axes, as PyTorch)");
  if (Status s = check_shape(op, d.rank, d.shape, 3, &numel); !s.ok()) return s;
  if (Status s = check_dtype(op, "dtype", d.dtype, FloatDTypes{}); !s.ok()) return s;
  if (d.size <= 0) return error(StatusCode::kInvalidProblem, op, ": size = ", d.size, " must be > 0");
  if (!std::isfinite(d.alpha)) return error(StatusCode::kInvalidProblem, op, ": alpha = ", d.alpha, " must be finite");
  if (!std::isfinite(d.beta)) return error(StatusCode::kInvalidProblem, op, ": beta = ", d.beta, " must be finite");
  if (!std::isfinite(d.k)) return error(StatusCode::kInvalidProblem, op, ": k = ", d.k, " must be finite");
  return std::vector<int64_t>(d.shape, d.shape + d.rank);
}

// The geometry of a call over the views present (null: absent).
Status build(std::string_view op, const LocalResponseNormDescriptor& d, const TensorLayout* const* views, const char* const* names,
             lrn::LrnGeom* g) {
  g->N = d.shape[0], g->C = d.shape[1], g->S = 1;
  for (int a = 2; a < d.rank; ++a)
    if (!checked_mul(g->S, d.shape[a], &g->S)) return error(StatusCode::kInvalidProblem, op, ": the spatial extent exceeds 2^63");
  g->size = d.size, g->alpha = d.alpha, g->beta = d.beta, g->k = d.k;
  for (int v = 0; v < lrn::kViews; ++v) {
    const TensorLayout* t = views[v];
    if (!t) continue;
    g->s[v][0] = t->stride[0], g->s[v][1] = t->stride[1];
    if (!merged_stride(*t, 2, d.rank, &g->s[v][2]))
      return error(StatusCode::kUnsupported, op, ": ", names[v], "'s spatial axes 2..", d.rank - 1,
                   " do not merge into one strided run (their strides are not nested)");
  }
  g->channels_fast = g->C > 1 && (g->S == 1 || g->s[lrn::kX][1] == 1);  // S = 1: the channels are the lines
  return {};
}

// The path of contiguous (NCHW) views: the channel walk unless the window is too wide.
const char* variant_of(const LocalResponseNormDescriptor& d, bool bwd) {
  return lrn::walks(false, d.size, dtype_size(acc_of(d.dtype)), bwd) ? "channel_walk" : "elements";
}

}  // namespace

Result<LocalResponseNormPlan> LocalResponseNormPlan::select(const LocalResponseNormDescriptor& d, const PlanPreference& pref) {
  LocalResponseNormPlan p;
  if (Status s = begin_select(kOp, d, pref, &p.sku_); !s.ok()) return s;
  auto shape = check_lrn(kOp, d);
  if (!shape) return shape.status();
  if (!lrn::find_lrn(d.dtype, false)) return error(StatusCode::kInternal, kOp, ": no kernel for ", dtype_name(d.dtype));
  p.desc_ = d;
  p.operands_.input("input", d.dtype, *shape);
  p.operands_.output("output", d.dtype, *shape);
  if (Status s = resolve_operands<LocalResponseNormArgs>(kOp, p.operands_); !s.ok()) return s;
  p.sku_.op = "local_response_norm";
  p.sku_.direction = Direction::kForward;
  p.sku_.dtype = d.dtype;
  p.sku_.variant = variant_of(d, false);
  p.guarantee_ = float_guarantee(d.dtype);
  return p;
}

Status LocalResponseNormPlan::can_implement(const LocalResponseNormArgs& a) const { return check_plan_args(kOp, selected(), operands_, a); }

Status LocalResponseNormPlan::run(cudaStream_t stream, Workspace, const LocalResponseNormArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (writes_nothing(operands_, a)) return {};
  const TensorLayout* views[lrn::kViews] = {&a.input, &a.output, nullptr, nullptr};
  const char* names[lrn::kViews] = {"input", "output", "", ""};
  lrn::LrnGeom g;
  if (Status s = build(kOp, desc_, views, names, &g); !s.ok()) return s;
  g.p[lrn::kX] = const_cast<void*>(a.input.data);
  g.p[lrn::kY] = a.output.data;
  return cuda_status(lrn::find_lrn(desc_.dtype, false)(g, stream), kOp);
}

Result<LocalResponseNormBackwardPlan> LocalResponseNormBackwardPlan::select(const LocalResponseNormBackwardDescriptor& d,
                                                                            const PlanPreference& pref) {
  LocalResponseNormBackwardPlan p;
  if (Status s = begin_select(kOpBwd, d, pref, &p.sku_); !s.ok()) return s;
  auto shape = check_lrn(kOpBwd, d);
  if (!shape) return shape.status();
  if (!lrn::find_lrn(d.dtype, true)) return error(StatusCode::kInternal, kOpBwd, ": no kernel for ", dtype_name(d.dtype));
  p.desc_ = d;
  p.operands_.input("input", d.dtype, *shape);
  p.operands_.input("doutput", d.dtype, *shape);
  p.operands_.output("dinput", d.dtype, *shape);
  if (Status s = resolve_operands<LocalResponseNormBackwardArgs>(kOpBwd, p.operands_); !s.ok()) return s;
  p.sku_.op = "local_response_norm";
  p.sku_.direction = Direction::kBackward;
  p.sku_.dtype = d.dtype;
  p.sku_.variant = variant_of(d, true);
  p.guarantee_ = float_guarantee(d.dtype);
  return p;
}

Status LocalResponseNormBackwardPlan::can_implement(const LocalResponseNormBackwardArgs& a) const {
  return check_plan_args(kOpBwd, selected(), operands_, a);
}

Status LocalResponseNormBackwardPlan::run(cudaStream_t stream, Workspace, const LocalResponseNormBackwardArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (writes_nothing(operands_, a)) return {};
  const TensorLayout* views[lrn::kViews] = {&a.input, nullptr, &a.doutput, &a.dinput};
  const char* names[lrn::kViews] = {"input", "", "doutput", "dinput"};
  lrn::LrnGeom g;
  if (Status s = build(kOpBwd, desc_, views, names, &g); !s.ok()) return s;
  g.p[lrn::kX] = const_cast<void*>(a.input.data);
  g.p[lrn::kDy] = const_cast<void*>(a.doutput.data);
  g.p[lrn::kDx] = a.dinput.data;
  return cuda_status(lrn::find_lrn(desc_.dtype, true)(g, stream), kOpBwd);
}

}  // namespace baracuda
