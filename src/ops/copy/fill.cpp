// FillPlan: the factories (PyTorch's arange length and errors), the descriptor's checks, each
// constant converted to the dtype once at select (PyTorch's checked conversion), the launch.
#include "baracuda/ops/fill.hpp"

#include <bit>
#include <cmath>
#include <limits>

#include "baracuda/core/half_bits.hpp"
#include "core/checked_math.hpp"
#include "core/cuda_check.hpp"
#include "core/dispatch.hpp"
#include "core/plan_kit.hpp"
#include "core/scalar_convert.hpp"
#include "core/validate.hpp"
#include "ops/copy/fill_geometry.hpp"

namespace baracuda {

namespace {

constexpr std::string_view kOp = "fill";

using FullDTypes = DTypeList<DType::f32, DType::f16, DType::bf16, DType::f64, DType::i8, DType::u8, DType::i16, DType::i32,
                             DType::i64, DType::boolean>;
using RangeDTypes = DTypeList<DType::f32, DType::f16, DType::bf16, DType::f64, DType::i8, DType::u8, DType::i16, DType::i32,
                              DType::i64>;

bool is_float(DType dt) { return FloatDTypes::contains(dt); }

// v as the dtype holds it (PyTorch's v.to<scalar_t>(): floats rounded, integers checked and
// truncated), widened to double.
Result<double> narrow(std::string_view field, DType dt, const Scalar& v) {
  auto bits = scalar_to_bits(kOp, field, dt, v);
  if (!bits) return bits.status();
  const uint64_t b = *bits;
  switch (dt) {
    case DType::f32: return static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(b)));
    case DType::f16: return static_cast<double>(f16_bits_to_float(static_cast<uint16_t>(b)));
    case DType::bf16: return static_cast<double>(bf16_bits_to_float(static_cast<uint16_t>(b)));
    case DType::f64: return std::bit_cast<double>(b);
    case DType::i8: return static_cast<double>(static_cast<int8_t>(b));
    case DType::u8: return static_cast<double>(static_cast<uint8_t>(b));
    case DType::i16: return static_cast<double>(static_cast<int16_t>(b));
    case DType::i32: return static_cast<double>(static_cast<int32_t>(b));
    case DType::i64: return static_cast<double>(static_cast<int64_t>(b));
    default: return error(StatusCode::kUnsupported, kOp, ": ", field, " cannot be converted to ", dtype_name(dt));
  }
}

// v as an integer (integer dtypes' arange: PyTorch's to<int64_t>(), truncating).
Result<int64_t> as_integer(std::string_view field, const Scalar& v) {
  auto bits = scalar_to_bits(kOp, field, DType::i64, v);
  if (!bits) return bits.status();
  return static_cast<int64_t>(*bits);
}

int rank_of(FillKind k) { return k == FillKind::kEye ? 2 : k == FillKind::kFull ? -1 : 1; }

}  // namespace

FillDescriptor FillDescriptor::full(DType dtype, std::span<const int64_t> shape, Scalar value) {
  FillDescriptor d;
  d.dtype = dtype;
  d.rank = shape.size() > static_cast<size_t>(kMaxRank) ? -1 : static_cast<int>(shape.size());
  if (d.rank > 0) std::copy(shape.begin(), shape.end(), d.shape);
  d.value = value;
  return d;
}

Result<FillDescriptor> FillDescriptor::arange(DType dtype, Scalar start, Scalar end, Scalar step) {
  FillDescriptor d;
  d.dtype = dtype;
  d.rank = 1;
  d.kind = FillKind::kArange;
  d.start = start, d.end = end, d.step = step;
  double size = 0;
  if (is_float(dtype)) {
    const double s = start.as_double(), e = end.as_double(), st = step.as_double();
    if (st == 0 || std::isnan(st)) return error(StatusCode::kInvalidProblem, "arange: step must be nonzero");
    if (!std::isfinite(s) || !std::isfinite(e)) return error(StatusCode::kInvalidProblem, "arange: unsupported range: ", s, " -> ", e);
    if (!((st > 0 && e >= s) || (st < 0 && e <= s)))
      return error(StatusCode::kInvalidProblem, "arange: upper bound and larger bound inconsistent with step sign");
    size = std::ceil((e - s) / st);
  } else {
    auto s = as_integer("start", start), e = as_integer("end", end), st = as_integer("step", step);
    if (!s) return s.status();
    if (!e) return e.status();
    if (!st) return st.status();
    if (*st == 0) return error(StatusCode::kInvalidProblem, "arange: step must be nonzero");
    if (!((*st > 0 && *e >= *s) || (*st < 0 && *e <= *s)))
      return error(StatusCode::kInvalidProblem, "arange: upper bound and larger bound inconsistent with step sign");
    if (dtype == DType::i64) {  // PyTorch's integer form: (end − start + step − sign(step)) / step
      int64_t num = 0;
      if (!checked_sub(*e, *s, &num) || !checked_add(num, *st - (*st > 0 ? 1 : -1), &num))
        return error(StatusCode::kInvalidProblem, "arange: invalid size, possible overflow?");
      size = static_cast<double>(num / *st);
    } else {
      size = std::ceil((end.as_double() - start.as_double()) / step.as_double());
    }
  }
  if (!(size >= 0 && size <= 9.2e18)) return error(StatusCode::kInvalidProblem, "arange: invalid size, possible overflow?");
  d.shape[0] = static_cast<int64_t>(size);
  return d;
}

FillDescriptor FillDescriptor::linspace(DType dtype, Scalar start, Scalar end, int64_t steps) {
  FillDescriptor d;
  d.dtype = dtype;
  d.rank = 1;
  d.shape[0] = steps;
  d.kind = FillKind::kLinspace;
  d.start = start, d.end = end;
  return d;
}

FillDescriptor FillDescriptor::logspace(DType dtype, Scalar start, Scalar end, int64_t steps, double base) {
  FillDescriptor d = linspace(dtype, start, end, steps);
  d.kind = FillKind::kLogspace;
  d.base = base;
  return d;
}

FillDescriptor FillDescriptor::eye(DType dtype, int64_t n, int64_t m) {
  FillDescriptor d;
  d.dtype = dtype;
  d.rank = 2;
  d.shape[0] = n, d.shape[1] = m;
  d.kind = FillKind::kEye;
  return d;
}

Result<FillPlan> FillPlan::select(const FillDescriptor& d, const PlanPreference& pref) {
  FillPlan p;
  if (Status s = begin_select(kOp, d, pref, &p.sku_); !s.ok()) return s;
  const std::string kind(enum_name(d.kind));
  Status dt;
  switch (d.kind) {
    case FillKind::kFull: dt = check_dtype(kOp, "dtype", d.dtype, FullDTypes{}); break;
    case FillKind::kEye: dt = check_dtype(kOp, "dtype", d.dtype, RealDTypes{}); break;
    case FillKind::kLogspace: dt = check_dtype(kOp, "dtype", d.dtype, FloatDTypes{}); break;
    default: dt = check_dtype(kOp, "dtype", d.dtype, RangeDTypes{}); break;
  }
  if (!dt.ok()) return Status(dt.code(), cat(dt.message(), " for kind ", kind));
  const int want_rank = rank_of(d.kind);
  if (want_rank >= 0 && d.rank != want_rank)
    return error(StatusCode::kInvalidProblem, kOp, ": rank = ", d.rank, " must be ", want_rank, " for kind ", kind);
  int64_t numel = 0;
  if (Status s = check_shape(kOp, d.rank, d.shape, 0, &numel); !s.ok()) return s;
  switch (d.kind) {
    case FillKind::kFull: {
      auto b = scalar_to_bits(kOp, "value", d.dtype, d.value);
      if (!b) return b.status();
      p.bits_ = *b;
      break;
    }
    case FillKind::kEye:
      p.bits_ = d.dtype == DType::f8e4m3 ? 0x38 : d.dtype == DType::f8e5m2 ? 0x3C : *scalar_to_bits(kOp, "1", d.dtype, Scalar(int64_t{1}));
      break;
    case FillKind::kArange:
      if (is_float(d.dtype)) {
        if (!std::isfinite(d.start.as_double())) return error(StatusCode::kInvalidProblem, kOp, ": start = ", d.start.as_double(), " must be finite");
        if (!std::isfinite(d.step.as_double())) return error(StatusCode::kInvalidProblem, kOp, ": step = ", d.step.as_double(), " must be finite");
      } else {
        if (auto s = as_integer("start", d.start); !s) return s.status();
        if (auto s = as_integer("step", d.step); !s) return s.status();
      }
      break;
    default:  // linspace, logspace: both ends in the dtype
      if (auto s = narrow("start", d.dtype, d.start); !s) return s.status();
      if (auto s = narrow("end", d.dtype, d.end); !s) return s.status();
      break;
  }
  if (!fillk::find_fill(d.dtype, d.kind)) return error(StatusCode::kInternal, kOp, ": no kernel for ", dtype_name(d.dtype), " ", kind);
  p.desc_ = d;
  p.operands_.output("out", d.dtype, std::span<const int64_t>(d.shape, static_cast<size_t>(d.rank)));
  if (Status s = resolve_operands<FillArgs>(kOp, p.operands_); !s.ok()) return s;
  p.sku_.op = "fill";
  p.sku_.direction = Direction::kForward;
  p.sku_.dtype = d.dtype;
  p.sku_.variant = kind;
  const bool exact = d.kind == FillKind::kFull || d.kind == FillKind::kEye || !is_float(d.dtype);
  p.guarantee_ = float_guarantee(is_float(d.dtype) ? d.dtype : DType::f32, exact);
  return p;
}

Status FillPlan::can_implement(const FillArgs& a) const { return check_plan_args(kOp, selected(), operands_, a); }

Status FillPlan::run(cudaStream_t stream, Workspace, const FillArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (writes_nothing(operands_, a)) return {};
  const FillDescriptor& d = desc_;
  fillk::FillParams g;
  g.out = a.out.data;
  g.rank = d.rank;
  std::copy(a.out.shape, a.out.shape + d.rank, g.shape);
  std::copy(a.out.stride, a.out.stride + d.rank, g.stride);
  g.numel = a.out.numel();
  g.esize = static_cast<int>(dtype_size(d.dtype));
  g.contiguous = a.out.is_contiguous();
  g.kind = d.kind;
  g.bits = bits_;
  g.base = d.base;
  if (d.kind == FillKind::kArange) {
    if (is_float(d.dtype)) {
      g.start = d.start.as_double(), g.step = d.step.as_double();
    } else {
      g.istart = *as_integer("start", d.start), g.istep = *as_integer("step", d.step);
    }
  } else if (d.kind == FillKind::kLinspace || d.kind == FillKind::kLogspace) {
    // the ends in the dtype; step in the compute type (f32, f64 for f64), as PyTorch forms it
    const double s = *narrow("start", d.dtype, d.start), e = *narrow("end", d.dtype, d.end);
    const int64_t n = d.shape[0];
    g.steps = n, g.halfway = n / 2;
    g.start = s, g.end = n == 1 ? s : e;  // one point: start
    if (n > 1)
      g.step = d.dtype == DType::f64 ? (e - s) / static_cast<double>(n - 1)
                                      : static_cast<double>((static_cast<float>(e) - static_cast<float>(s)) / static_cast<float>(n - 1));
  }
  return cuda_status(fillk::find_fill(d.dtype, d.kind)(g, stream), kOp);
}

}  // namespace baracuda
