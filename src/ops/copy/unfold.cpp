// UnfoldBackwardPlan: the descriptor's checks (PyTorch's unfold rules), grad_out's shape; disjoint
// windows as a copy into grad_input's windows view (after a zero fill when there are gaps);
// otherwise the gather kernel's geometry: grad_input's axes with both views' strides, extent-1
// axes dropped and nesting neighbours merged (the unfolded axis kept as it is).
#include "baracuda/ops/unfold.hpp"

#include <algorithm>
#include <cstdint>

#include "baracuda/ops/copy.hpp"
#include "baracuda/ops/fill.hpp"
#include "core/checked_math.hpp"
#include "core/cuda_check.hpp"
#include "core/dispatch.hpp"
#include "core/plan_kit.hpp"
#include "core/validate.hpp"
#include "ops/copy/unfold_geometry.hpp"

namespace baracuda {

namespace {

constexpr std::string_view kOp = "unfold_backward";

int axis_of(const UnfoldBackwardDescriptor& d) { return d.dim < 0 ? d.dim + d.rank : d.dim; }

// Every element offset of the view (Σ index·stride, either sign) is within ±(2^31 − 1).
bool fits_int32(const TensorLayout& v) {
  int64_t up = 0, down = 0;
  for (int k = 0; k < v.rank; ++k) {
    if (v.shape[k] <= 1) continue;
    if (v.stride[k] == INT64_MIN) return false;
    int64_t r = 0;
    if (!checked_mul(v.shape[k] - 1, v.stride[k] < 0 ? -v.stride[k] : v.stride[k], &r)) return false;
    if (!checked_add(v.stride[k] < 0 ? down : up, r, v.stride[k] < 0 ? &down : &up)) return false;
  }
  return up < (int64_t{1} << 31) && down < (int64_t{1} << 31);
}

}  // namespace

UnfoldBackwardDescriptor UnfoldBackwardDescriptor::make(DType dtype, std::span<const int64_t> input_shape, int dim, int64_t size,
                                                        int64_t step) {
  UnfoldBackwardDescriptor d;
  d.dtype = dtype, d.dim = dim, d.size = size, d.step = step;
  d.rank = input_shape.size() > static_cast<size_t>(kMaxRank) ? -1 : static_cast<int>(input_shape.size());
  if (d.rank > 0) std::copy(input_shape.begin(), input_shape.end(), d.shape);
  return d;
}

int64_t UnfoldBackwardDescriptor::windows() const {
  if (rank < 1 || rank >= kMaxRank || dim < -rank || dim >= rank || step < 1 || size < 0) return -1;
  const int64_t len = shape[dim < 0 ? dim + rank : dim];
  if (len < 0 || size > len) return -1;
  return (len - size) / step + 1;
}

Result<UnfoldBackwardPlan> UnfoldBackwardPlan::select(const UnfoldBackwardDescriptor& d, const PlanPreference& pref) {
  UnfoldBackwardPlan p;
  if (Status s = begin_select(kOp, d, pref, &p.sku_); !s.ok()) return s;
  if (Status s = check_dtype(kOp, "dtype", d.dtype, FloatDTypes{}); !s.ok()) return s;
  if (d.rank < 1 || d.rank >= kMaxRank)
    return error(StatusCode::kInvalidProblem, kOp, ": rank = ", d.rank, " must be in [1, ", kMaxRank - 1,
                 "] (the input's rank; grad_out has one axis more)");
  int64_t numel = 0;
  if (Status s = check_shape(kOp, d.rank, d.shape, 1, &numel); !s.ok()) return s;
  if (d.dim < -d.rank || d.dim >= d.rank)
    return error(StatusCode::kInvalidProblem, kOp, ": dim = ", d.dim, " is out of range [", -d.rank, ", ", d.rank - 1, "]");
  const int dim = axis_of(d);
  if (d.step < 1) return error(StatusCode::kInvalidProblem, kOp, ": step = ", d.step, " must be >= 1");
  if (d.size < 0 || d.size > d.shape[dim])
    return error(StatusCode::kInvalidProblem, kOp, ": size = ", d.size, " must be in [0, shape[", dim, "] = ", d.shape[dim], "]");
  if (!unfk::find_unfold_backward(d.dtype)) return error(StatusCode::kInternal, kOp, ": no kernel for ", dtype_name(d.dtype));
  int64_t go_shape[kMaxRank];
  std::copy(d.shape, d.shape + d.rank, go_shape);
  go_shape[dim] = d.windows();
  go_shape[d.rank] = d.size;
  int64_t go_numel = 0;
  if (Status s = check_shape(kOp, d.rank + 1, go_shape, 1, &go_numel); !s.ok())
    return error(StatusCode::kInvalidProblem, kOp, ": grad_out (", d.windows(), " windows of ", d.size,
                 ") has more than 2^58 elements");
  p.desc_ = d;
  p.operands_.input("grad_out", d.dtype, std::span<const int64_t>(go_shape, static_cast<size_t>(d.rank + 1)));
  p.operands_.output("grad_input", d.dtype, std::span<const int64_t>(d.shape, static_cast<size_t>(d.rank)));
  if (Status s = resolve_operands<UnfoldBackwardArgs>(kOp, p.operands_); !s.ok()) return s;
  p.sku_.op = "unfold_backward";
  p.sku_.direction = Direction::kBackward;
  p.sku_.dtype = d.dtype;
  p.sku_.variant = "gather";
  p.guarantee_ = float_guarantee(d.dtype);
  if (d.size > 0 && d.step >= d.size) {  // disjoint windows: no sums, a strided copy
    PlanPreference pp = pref;
    pp.forced_backend = Backend::kAny;
    auto copy = CopyPlan::select(CopyDescriptor::make(d.dtype, std::span<const int64_t>(go_shape, static_cast<size_t>(d.rank + 1))), pp);
    if (!copy) return copy.status();
    p.copy_ = std::make_shared<const CopyPlan>(std::move(*copy));
    if (d.step > d.size || d.windows() * d.size != d.shape[dim]) {
      auto zero = FillPlan::select(FillDescriptor::full(d.dtype, std::span<const int64_t>(d.shape, static_cast<size_t>(d.rank)), Scalar(0.0)), pp);
      if (!zero) return zero.status();
      p.zero_ = std::make_shared<const FillPlan>(std::move(*zero));
    }
    p.sku_.variant = p.zero_ ? "fill+copy" : "copy";
    p.guarantee_.bit_exact = true;
  }
  return p;
}

Status UnfoldBackwardPlan::can_implement(const UnfoldBackwardArgs& a) const { return check_plan_args(kOp, selected(), operands_, a); }

Status UnfoldBackwardPlan::run(cudaStream_t stream, Workspace, const UnfoldBackwardArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (writes_nothing(operands_, a)) return {};
  const UnfoldBackwardDescriptor& d = desc_;
  const int dim = axis_of(d);
  if (copy_) {
    if (zero_)
      if (Status s = zero_->run(stream, {}, FillArgs{a.grad_input}); !s.ok()) return s;
    // grad_input seen as the unfolded view: dim -> the windows (stride step·s), the window axis
    // appended (stride s); disjoint, so the copy's destination does not overlap itself
    TensorMut windows = a.grad_input;
    const int64_t s = a.grad_input.stride[dim], w = d.windows();
    windows.rank = d.rank + 1;
    windows.shape[dim] = w;
    windows.stride[dim] = w > 1 ? d.step * s : s;  // (w − 1)·step·s is within the view's reach
    windows.shape[d.rank] = d.size;
    windows.stride[d.rank] = s;
    return copy_->run(stream, {}, CopyArgs{a.grad_out, windows});
  }
  unfk::Params p;
  p.grad_out = a.grad_out.data;
  p.grad_input = a.grad_input.data;
  p.windows = d.windows(), p.size = d.size, p.step = d.step;
  p.go_k = a.grad_out.stride[d.rank];
  p.go_w = a.grad_out.stride[dim];
  int axis = -1;  // the unfolded axis' place once appended (p.axis = 0 would block the first merge)
  for (int k = 0; k < d.rank; ++k) {
    const bool unfolded = k == dim;
    if (!unfolded && d.shape[k] == 1) continue;
    int64_t gi_next = 0, go_next = 0;
    const bool prev_merges = p.na > 0 && (p.na - 1) != axis;
    if (!unfolded && prev_merges && checked_mul(a.grad_input.stride[k], d.shape[k], &gi_next) &&
        checked_mul(a.grad_out.stride[k], d.shape[k], &go_next) && p.gi[p.na - 1] == gi_next && p.go[p.na - 1] == go_next) {
      p.n[p.na - 1] *= d.shape[k], p.gi[p.na - 1] = a.grad_input.stride[k], p.go[p.na - 1] = a.grad_out.stride[k];
      continue;
    }
    if (unfolded) axis = p.na;
    p.n[p.na] = d.shape[k], p.gi[p.na] = a.grad_input.stride[k], p.go[p.na] = a.grad_out.stride[k];
    ++p.na;
  }
  p.axis = axis;
  p.units = a.grad_input.numel();
  p.small = p.units < (int64_t{1} << 31);
  if (p.small) {
    for (int k = 0; k < p.na; ++k) p.div[k] = detail::FastDiv(static_cast<uint32_t>(p.n[k]));
    // l < L < 2^31 here; a step past L divides like L + 1 (every l / step is 0)
    p.step_div = detail::FastDiv(static_cast<uint32_t>(std::min<int64_t>(d.step, d.shape[dim] + 1)));
    p.narrow = fits_int32(a.grad_out) && fits_int32(a.grad_input);
    p.run = p.narrow && p.na > 0 && p.n[p.na - 1] % unfk::kRun == 0;  // a warp's runs
  }
  return cuda_status(unfk::find_unfold_backward(d.dtype)(p, stream), kOp);
}

}  // namespace baracuda
