// CopyPlan: a broadcast of src to dst's shape (stride-0 axes) run through the elementwise
// engine's `to`, which already has every layout path (contiguous, rows, tiled transposes,
// strided) and every dtype conversion.
#include "baracuda/ops/copy.hpp"

#include <algorithm>

#include "baracuda/ops/elementwise.hpp"
#include "core/dispatch.hpp"
#include "core/plan_kit.hpp"
#include "core/validate.hpp"

namespace baracuda {

namespace {

constexpr std::string_view kOp = "copy";


std::span<const int64_t> dims(const int64_t* s, int rank) { return {s, static_cast<size_t>(std::clamp(rank, 0, kMaxRank))}; }

}  // namespace

CopyDescriptor CopyDescriptor::make(DType dtype, std::span<const int64_t> shape, std::optional<DType> out_dtype) {
  CopyDescriptor d;
  d.dtype = dtype;
  d.out_dtype = out_dtype.value_or(dtype);
  d.in_rank = d.out_rank = shape.size() > static_cast<size_t>(kMaxRank) ? -1 : static_cast<int>(shape.size());
  if (d.in_rank > 0) {
    std::copy(shape.begin(), shape.end(), d.in_shape);
    std::copy(shape.begin(), shape.end(), d.out_shape);
  }
  return d;
}

Result<CopyPlan> CopyPlan::select(const CopyDescriptor& d, const PlanPreference& pref) {
  CopyPlan p;
  if (Status s = begin_select(kOp, d, pref, &p.sku_); !s.ok()) return s;
  if (Status s = check_dtype(kOp, "dtype", d.dtype, RealDTypes{}); !s.ok()) return s;
  if (Status s = check_dtype(kOp, "out_dtype", d.out_dtype, RealDTypes{}); !s.ok()) return s;
  if (d.out_rank < 0 || d.out_rank > kMaxRank)
    return error(StatusCode::kInvalidProblem, kOp, ": out_rank = ", d.out_rank, " must be in [0, ", kMaxRank, "]");
  if (d.in_rank < 0 || d.in_rank > d.out_rank)
    return error(StatusCode::kInvalidProblem, kOp, ": in_rank = ", d.in_rank, " must be in [0, out_rank = ", d.out_rank, "]");
  const int off = d.out_rank - d.in_rank;
  for (int a = 0; a < d.out_rank; ++a) {
    if (d.out_shape[a] < 0)
      return error(StatusCode::kInvalidProblem, kOp, ": out_shape[", a, "] = ", d.out_shape[a], " must be >= 0");
    if (a >= off && d.in_shape[a - off] != 1 && d.in_shape[a - off] != d.out_shape[a])
      return error(StatusCode::kInvalidProblem, kOp, ": in_shape[", a - off, "] = ", d.in_shape[a - off],
                   " must be 1 or out_shape[", a, "] = ", d.out_shape[a], " (src broadcasts to dst)");
  }
  ElementwiseDescriptor e = ElementwiseDescriptor::make(EwOp::to, {EwOperand::tensor(d.dtype, dims(d.out_shape, d.out_rank))});
  e.out_dtype = d.out_dtype;
  e.saturate_fp8 = d.saturate_fp8;
  PlanPreference inner = pref;
  inner.forced_backend = Backend::kAny;
  auto cast = ElementwisePlan::select(e, inner);
  if (!cast) return Status(cast.status().code(), cat(kOp, ": ", cast.status().message()));
  p.desc_ = d;
  p.sku_.op = "copy";
  p.sku_.direction = Direction::kForward;
  p.sku_.dtype = d.out_dtype;
  p.sku_.variant = cast->sku().variant;
  p.guarantee_ = cast->precision_guarantee();
  p.guarantee_.bit_exact = d.dtype == d.out_dtype;
  p.operands_.input("src", d.dtype, dims(d.in_shape, d.in_rank));
  p.operands_.output("dst", d.out_dtype, dims(d.out_shape, d.out_rank));
  if (d.dtype == d.out_dtype && d.in_rank == d.out_rank && std::equal(d.in_shape, d.in_shape + d.in_rank, d.out_shape))
    p.operands_.may_alias("dst", "src");
  if (Status s = resolve_operands<CopyArgs>(kOp, p.operands_); !s.ok()) return s;
  p.cast_ = std::make_shared<const ElementwisePlan>(std::move(*cast));
  return p;
}

Status CopyPlan::can_implement(const CopyArgs& a) const { return check_plan_args(kOp, selected(), operands_, a); }

Status CopyPlan::run(cudaStream_t stream, Workspace ws, const CopyArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (a.dst.data == a.src.data && a.dst.identical(a.src)) return {};  // dst is src: nothing to move
  // src seen at dst's shape: broadcast axes take stride 0
  const CopyDescriptor& d = desc_;
  ElementwiseArgs e;
  TensorRef& x = e.in[0];
  x = a.src;
  x.rank = d.out_rank;
  const int off = d.out_rank - d.in_rank;
  for (int i = 0; i < d.out_rank; ++i) {
    const bool own = i >= off && d.in_shape[i - off] == d.out_shape[i];
    x.shape[i] = d.out_shape[i];
    x.stride[i] = own ? a.src.stride[i - off] : 0;
  }
  e.out = a.dst;
  return cast_->run(stream, ws, e);
}

}  // namespace baracuda
