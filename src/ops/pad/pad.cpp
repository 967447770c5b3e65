// Pad plans: descriptor validation, selection, argument checks, and run(), which builds the
// kernels' PadGeometry (pad_geometry.cpp) and launches the kernel its planners chose.
#include <algorithm>
#include <type_traits>

#include "baracuda/ops/pad.hpp"
#include "core/checked_math.hpp"
#include "core/cuda_check.hpp"
#include "core/dispatch.hpp"
#include "core/plan_kit.hpp"
#include "core/scalar_convert.hpp"
#include "core/validate.hpp"
#include "ops/pad/pad_geometry.hpp"

namespace baracuda {

namespace {

constexpr std::string_view kOp = "pad";
constexpr std::string_view kOpBwd = "pad_backward";

using detail::PadBackwardDTypes;
using detail::PadForwardDTypes;

Status validate_descriptor(std::string_view op, const PadDescriptor& d, bool backward) {
  if (d.rank < 1 || d.rank > kMaxRank)
    return error(StatusCode::kInvalidProblem, op, ": rank = ", d.rank, " must be in [1, ", kMaxRank, "]");
  if (Status s = backward ? check_dtype(op, "dtype", d.dtype, PadBackwardDTypes{}) : check_dtype(op, "dtype", d.dtype, PadForwardDTypes{});
      !s.ok())
    return s;
  if (d.mode != PadMode::kConstant && !(d.value.as_double() == 0.0))
    return error(StatusCode::kInvalidProblem, op, ": value = ", d.value.as_double(), " is only meaningful in constant mode (mode is ",
                 enum_name(d.mode), ")");
  const std::string_view mode = enum_name(d.mode);
  int64_t out_numel = 1;
  for (int a = 0; a < d.rank; ++a) {
    const int64_t n = d.in_shape[a], lo = d.pad_low[a], hi = d.pad_high[a];
    if (n < 0) return error(StatusCode::kInvalidProblem, op, ": in_shape[", a, "] = ", n, " must be >= 0");
    if (lo < -n) return error(StatusCode::kInvalidProblem, op, ": pad_low[", a, "] = ", lo, " crops more than in_shape[", a, "] = ", n);
    if (hi < -n) return error(StatusCode::kInvalidProblem, op, ": pad_high[", a, "] = ", hi, " crops more than in_shape[", a, "] = ", n);
    int64_t out = 0;
    if (!checked_add(n, lo, &out) || !checked_add(out, hi, &out))
      return error(StatusCode::kInvalidProblem, op, ": axis ", a, " output size overflows int64");
    if (out < 0)
      return error(StatusCode::kInvalidProblem, op, ": axis ", a, ": in_shape ", n, " with pad_low ", lo, " and pad_high ", hi,
                   " gives a negative output size ", out);
    const bool padded = lo != 0 || hi != 0;
    if (padded && (d.mode == PadMode::kReflect || d.mode == PadMode::kReplicate)) {
      if (n < 1) return error(StatusCode::kInvalidProblem, op, ": ", mode, " padding of axis ", a, " needs in_shape[", a, "] >= 1 (it is 0)");
      if (out < 1) return error(StatusCode::kInvalidProblem, op, ": ", mode, " padding of axis ", a, " gives output size ", out, "; it must be >= 1");
    }
    if (d.mode == PadMode::kReflect && (lo >= n || hi >= n) && padded)
      return error(StatusCode::kInvalidProblem, op, ": reflect padding (", lo, ", ", hi, ") of axis ", a,
                   " must be < in_shape[", a, "] = ", n, " on both sides");
    if (d.mode == PadMode::kCircular && (lo > n || hi > n))
      return error(StatusCode::kInvalidProblem, op, ": circular padding (", lo, ", ", hi, ") of axis ", a,
                   " wraps around more than once; each side must be <= in_shape[", a, "] = ", n);
    if (!checked_mul(out_numel, out, &out_numel))
      return error(StatusCode::kInvalidProblem, op, ": output has more than 2^63 elements");
  }
  return {};
}

// What both plans settle at select(): validity, architecture, backend, operands.
template <class Plan>
Status select_common(std::string_view op, const PadDescriptor& d, const PlanPreference& pref, bool backward, KernelSku* sku,
                     PrecisionGuarantee* guarantee, OperandSpecs* operands) {
  if (Status s = begin_select(op, d, pref, sku); !s.ok()) return s;
  if (Status s = validate_descriptor(op, d, backward); !s.ok()) return s;
  for (bool i64 : {false, true})
    if (!(backward ? detail::pad_backward_launcher(d.dtype, i64) : detail::pad_forward_launcher(d.dtype, i64)))
      return error(StatusCode::kInternal, op, ": no kernel for ", dtype_name(d.dtype));
  sku->op = cat("pad.", enum_name(d.mode));
  sku->direction = backward ? Direction::kBackward : Direction::kForward;
  sku->dtype = d.dtype;
  sku->variant = "flat-warprows";  // a stable label: which kernel runs is chosen per layout at run()
  // forward: data movement; backward constant mode: every dx element has at most one preimage
  *guarantee = backward ? float_guarantee(d.dtype, d.mode == PadMode::kConstant) : PrecisionGuarantee{d.dtype, d.dtype, true};
  int64_t out[kMaxRank];
  for (int a = 0; a < d.rank; ++a) out[a] = d.out_dim(a);
  const std::span<const int64_t> out_shape(out, static_cast<size_t>(d.rank));
  if (backward) operands->input("dy", d.dtype, out_shape), operands->output("dx", d.dtype, d.in_span());
  else operands->input("x", d.dtype, d.in_span()), operands->output("y", d.dtype, out_shape);
  return resolve_operands<std::conditional_t<std::is_same_v<Plan, PadPlan>, PadArgs, PadBackwardArgs>>(op, *operands);
}

}  // namespace

Result<PadDescriptor> PadDescriptor::torch_style(DType dtype, std::span<const int64_t> in_shape,
                                                 std::span<const int64_t> pads, PadMode mode, Scalar value) {
  if (in_shape.size() > static_cast<size_t>(kMaxRank))
    return error(StatusCode::kInvalidProblem, kOp, ": rank = ", in_shape.size(), " must be <= ", kMaxRank);
  if (pads.size() % 2 != 0)
    return error(StatusCode::kInvalidProblem, kOp, ": pad length must be even but is ", pads.size());
  if (pads.size() > 2 * in_shape.size())
    return error(StatusCode::kInvalidProblem, kOp, ": pad length ", pads.size(), " is more than twice the rank ",
                 in_shape.size());
  PadDescriptor d;
  d.dtype = dtype;
  d.mode = mode;
  d.value = value;
  d.rank = static_cast<int>(in_shape.size());
  std::copy(in_shape.begin(), in_shape.end(), d.in_shape);
  for (size_t p = 0; p < pads.size() / 2; ++p) {
    const size_t axis = in_shape.size() - 1 - p;
    d.pad_low[axis] = pads[2 * p];
    d.pad_high[axis] = pads[2 * p + 1];
  }
  return d;
}

// ---------------------------------------------------------------- forward

Result<PadPlan> PadPlan::select(const PadDescriptor& desc, const PlanPreference& pref) {
  PadPlan plan;
  if (Status s = select_common<PadPlan>(kOp, desc, pref, false, &plan.sku_, &plan.guarantee_, &plan.operands_); !s.ok())
    return s;
  auto bits = scalar_to_bits(kOp, "value", desc.dtype, desc.value);
  if (!bits) return bits.status();
  plan.desc_ = desc;
  plan.fill_bits_ = *bits;
  return plan;
}

Status PadPlan::can_implement(const PadArgs& a) const { return check_plan_args(kOp, selected(), operands_, a); }

Status PadPlan::run(cudaStream_t stream, Workspace, const PadArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  detail::PadGeometry g;
  if (Status s = detail::pad_build_geometry(kOp, desc_, a.x, a.y, /*dst_is_x=*/false, &g, a.y.data); !s.ok()) return s;
  if (g.rows == 0 || g.blocks == 0) return {};
  g.src = a.x.data;
  g.dst = a.y.data;
  g.fill = fill_bits_;
  detail::pad_source_span(a.x, &g);
  const bool i64 = !(detail::pad_fits_index32(a.x) && detail::pad_fits_index32(a.y));
  if (!i64) {
    const int elem = static_cast<int>(dtype_size(desc_.dtype));
    detail::pad_plan_staged(&g, elem, g.dst, g.src, /*backward=*/false);
    if (g.st.tiles == 0 && elem == 2) detail::pad_plan_pairs(&g, g.dst, g.src);
    if (g.st.tiles == 0 && g.pr.blocks == 0) detail::pad_plan_flat(&g, elem, g.dst, /*backward=*/false);
  }
  return cuda_status(detail::pad_forward_launcher(desc_.dtype, i64)(g, stream), kOp);
}

// ---------------------------------------------------------------- backward

Result<PadBackwardPlan> PadBackwardPlan::select(const PadBackwardDescriptor& desc, const PlanPreference& pref) {
  PadBackwardPlan plan;
  if (Status s = select_common<PadBackwardPlan>(kOpBwd, desc, pref, true, &plan.sku_, &plan.guarantee_, &plan.operands_);
      !s.ok())
    return s;
  plan.desc_ = desc;
  return plan;
}

Status PadBackwardPlan::can_implement(const PadBackwardArgs& a) const {
  return check_plan_args(kOpBwd, selected(), operands_, a);
}

Status PadBackwardPlan::run(cudaStream_t stream, Workspace, const PadBackwardArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  detail::PadGeometry g;
  if (Status s = detail::pad_build_geometry(kOpBwd, desc_, a.dx, a.dy, /*dst_is_x=*/true, &g, a.dx.data); !s.ok()) return s;
  if (g.rows == 0 || g.blocks == 0) return {};
  g.src = a.dy.data;
  g.dst = a.dx.data;
  detail::pad_source_span(a.dy, &g);
  const bool i64 = !(detail::pad_fits_index32(a.dx) && detail::pad_fits_index32(a.dy));
  if (!i64) {
    const int elem = static_cast<int>(dtype_size(desc_.dtype));
    detail::pad_plan_staged(&g, elem, g.dst, g.src, /*backward=*/true);
    if (g.st.tiles == 0) detail::pad_plan_segments(&g, elem, g.dst, g.src);
    if (g.st.tiles == 0 && g.seg_tasks == 0) detail::pad_plan_flat(&g, elem, g.dst, /*backward=*/true);
  }
  return cuda_status(detail::pad_backward_launcher(desc_.dtype, i64)(g, stream), kOpBwd);
}

}  // namespace baracuda
