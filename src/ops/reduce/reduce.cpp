// ReducePlan: PyTorch's result types and empty-reduction rules, the reduced axes, the kernel
// kind, the geometry and its split partials (reduce_geometry.cpp), the launch.
#include "baracuda/ops/reduce.hpp"

#include <algorithm>
#include <cmath>

#include "core/checked_math.hpp"
#include "core/cuda_check.hpp"
#include "core/dispatch.hpp"
#include "core/plan_kit.hpp"
#include "core/validate.hpp"
#include "core/workspace.hpp"
#include "ops/reduce/reduce_geometry.hpp"

namespace baracuda {

namespace {

constexpr std::string_view kOp = "reduce";

using FloatDTypes = DTypeList<DType::f32, DType::f16, DType::bf16, DType::f64>;
using AnyDTypes = DTypeList<DType::f32, DType::f16, DType::bf16, DType::f64, DType::i8, DType::u8, DType::i16, DType::i32, DType::i64,
                            DType::boolean>;

// The kernels' kinds (red::Kind in reduce_policies.cuh: ReduceKind's order, the norms by p).
enum Group : int { kSums, kExtremes, kStats };
constexpr int kNorm0 = red::kNormKind0;

bool takes_integers(ReduceKind op) {
  switch (op) {
    case ReduceKind::kSum: case ReduceKind::kNanSum: case ReduceKind::kProd: case ReduceKind::kAmax: case ReduceKind::kAmin:
    case ReduceKind::kAll: case ReduceKind::kAny: case ReduceKind::kCountNonzero: case ReduceKind::kLogSumExp:
    case ReduceKind::kArgmax: case ReduceKind::kArgmin: case ReduceKind::kMax: case ReduceKind::kMin: case ReduceKind::kAminmax:
      return true;
    default:
      return false;
  }
}
// var_mean / std_mean (the mean) and aminmax (the max) have a second result, y2.
bool has_second(ReduceKind op) { return op == ReduceKind::kVarMean || op == ReduceKind::kStdMean || op == ReduceKind::kAminmax; }
bool has_values(ReduceKind op) { return op != ReduceKind::kArgmax && op != ReduceKind::kArgmin; }
bool has_indices(ReduceKind op) {
  return op == ReduceKind::kArgmax || op == ReduceKind::kArgmin || op == ReduceKind::kMax || op == ReduceKind::kMin;
}
// Ops with no identity: an empty reduction is refused (PyTorch raises).
bool needs_elements(const ReduceDescriptor& d) {
  switch (d.op) {
    case ReduceKind::kAmax: case ReduceKind::kAmin: case ReduceKind::kArgmax: case ReduceKind::kArgmin: case ReduceKind::kMax:
    case ReduceKind::kMin: case ReduceKind::kAminmax:
      return true;
    case ReduceKind::kNorm:
      return d.p < 0 || std::isinf(d.p);
    default:
      return false;
  }
}

Group group_of(ReduceKind op) {
  switch (op) {
    case ReduceKind::kAmax: case ReduceKind::kAmin: case ReduceKind::kArgmax: case ReduceKind::kArgmin: case ReduceKind::kMax:
    case ReduceKind::kMin: case ReduceKind::kAminmax:
      return kExtremes;
    case ReduceKind::kNanMean: case ReduceKind::kLogSumExp: case ReduceKind::kNorm: case ReduceKind::kVar: case ReduceKind::kStd:
    case ReduceKind::kVarMean: case ReduceKind::kStdMean:
      return kStats;
    default:
      return kSums;
  }
}

red::ReduceLaunchFn find(int group, DType in, int kind) {
  switch (group) {
    case kExtremes: return red::find_extremes(in, kind);
    case kStats: return red::find_stats(in, kind);
    default: return red::find_sums(in, kind);
  }
}

// PyTorch's result type of op on x (out_dtype: its dtype argument).
Result<DType> result_dtype(const ReduceDescriptor& d) {
  const bool fx = is_floating(d.dtype);
  const std::string_view name = enum_name(d.op);
  switch (d.op) {
    case ReduceKind::kAll: case ReduceKind::kAny:
      if (d.out_dtype) return error(StatusCode::kInvalidProblem, kOp, ": ", name, " takes no out_dtype (bool; u8 for u8)");
      return d.dtype == DType::u8 ? DType::u8 : DType::boolean;
    case ReduceKind::kCountNonzero: case ReduceKind::kArgmax: case ReduceKind::kArgmin:
      if (d.out_dtype) return error(StatusCode::kInvalidProblem, kOp, ": ", name, " takes no out_dtype (i64)");
      return DType::i64;
    case ReduceKind::kAmax: case ReduceKind::kAmin: case ReduceKind::kMax: case ReduceKind::kMin: case ReduceKind::kAminmax:
      if (d.out_dtype && *d.out_dtype != d.dtype)
        return error(StatusCode::kInvalidProblem, kOp, ": ", name, "'s result has x's dtype (out_dtype = ", dtype_name(*d.out_dtype), ")");
      return d.dtype;
    case ReduceKind::kVar: case ReduceKind::kStd: case ReduceKind::kVarMean: case ReduceKind::kStdMean:
      if (d.out_dtype && *d.out_dtype != d.dtype)
        return error(StatusCode::kInvalidProblem, kOp, ": ", name, "'s result has x's dtype (out_dtype = ", dtype_name(*d.out_dtype), ")");
      return d.dtype;
    case ReduceKind::kSum: case ReduceKind::kNanSum: case ReduceKind::kProd:
      if (d.out_dtype) {
        if (fx != is_floating(*d.out_dtype) || (fx && *d.out_dtype != d.dtype && *d.out_dtype != DType::f32 && *d.out_dtype != DType::f64))
          return error(StatusCode::kUnsupported, kOp, ": ", name, " of ", dtype_name(d.dtype), " into ", dtype_name(*d.out_dtype),
                       " (supported: x's dtype, f32 or f64 for float x; i64 for integer x)");
        if (!fx && *d.out_dtype != DType::i64)
          return error(StatusCode::kUnsupported, kOp, ": ", name, " of an integer x accumulates into i64 (out_dtype = ",
                       dtype_name(*d.out_dtype), ")");
        return *d.out_dtype;
      }
      return fx ? d.dtype : DType::i64;
    case ReduceKind::kLogSumExp:
      if (d.out_dtype && *d.out_dtype != (fx ? d.dtype : DType::f32))
        return error(StatusCode::kUnsupported, kOp, ": logsumexp's result is x's dtype (f32 for integer x)");
      return fx ? d.dtype : DType::f32;
    default:  // mean, nanmean, norm
      if (d.out_dtype && *d.out_dtype != d.dtype && !(is_floating(*d.out_dtype) && (*d.out_dtype == DType::f32 || *d.out_dtype == DType::f64)))
        return error(StatusCode::kUnsupported, kOp, ": ", name, " into ", dtype_name(*d.out_dtype), " (supported: x's dtype, f32, f64)");
      return d.out_dtype.value_or(d.dtype);
  }
}

// Bytes of one accumulator of the kind's policy (the split partials).
size_t acc_bytes(int kind, DType in) {
  const size_t c = in == DType::f64 ? 8 : (is_floating(in) || kind == static_cast<int>(ReduceKind::kLogSumExp)) ? 4 : 8;
  switch (kind) {
    case static_cast<int>(ReduceKind::kNanMean): case static_cast<int>(ReduceKind::kLogSumExp): return 2 * c;
    case static_cast<int>(ReduceKind::kVar): case static_cast<int>(ReduceKind::kStd): case static_cast<int>(ReduceKind::kVarMean):
    case static_cast<int>(ReduceKind::kStdMean):
      return 3 * c;
    case static_cast<int>(ReduceKind::kAminmax): return 2 * c;
    case static_cast<int>(ReduceKind::kSum): case static_cast<int>(ReduceKind::kNanSum): case static_cast<int>(ReduceKind::kMean):
    case static_cast<int>(ReduceKind::kNorm):
      return 8;  // f32 sums keep f64 partials (the engine's tree type)
    case static_cast<int>(ReduceKind::kArgmax): case static_cast<int>(ReduceKind::kArgmin): case static_cast<int>(ReduceKind::kMax):
    case static_cast<int>(ReduceKind::kMin):
      return 16;
    case static_cast<int>(ReduceKind::kAll): case static_cast<int>(ReduceKind::kAny): case static_cast<int>(ReduceKind::kCountNonzero):
      return 8;
    default:
      return c;
  }
}

// A view of rank x.rank with the reduced axes kept as extent 1 (y / indices without keepdim).
TensorLayout keepdim_view(const TensorLayout& v, int rank, const bool* reduced, bool keepdim) {
  if (keepdim) return v;
  TensorLayout out = v;
  out.rank = rank;
  int j = 0;
  for (int a = 0; a < rank; ++a) {
    if (reduced[a]) {
      out.shape[a] = 1;
      out.stride[a] = 0;
    } else {
      out.shape[a] = v.shape[j];
      out.stride[a] = v.stride[j];
      ++j;
    }
  }
  return out;
}

}  // namespace

int red::kernel_kind(const ReduceDescriptor& d) {
  if (d.op != ReduceKind::kNorm) return static_cast<int>(d.op);
  if (d.p == 0) return kNorm0;
  if (d.p == 1) return kNorm0 + 1;
  if (d.p == 2) return kNorm0 + 2;
  if (std::isinf(d.p)) return d.p > 0 ? kNorm0 + 3 : kNorm0 + 4;
  return kNorm0 + 5;
}

Result<ReducePlan> ReducePlan::select(const ReduceDescriptor& d, const PlanPreference& pref) {
  ReducePlan p;
  if (Status s = begin_select(kOp, d, pref, &p.sku_); !s.ok()) return s;
  if (d.rank < 0 || d.rank > kMaxRank) return error(StatusCode::kInvalidProblem, kOp, ": rank = ", d.rank, " must be in [0, 8]");
  for (int a = 0; a < d.rank; ++a)
    if (d.shape[a] < 0) return error(StatusCode::kInvalidProblem, kOp, ": shape[", a, "] = ", d.shape[a], " must be >= 0");
  if (d.num_dims < 0 || d.num_dims > d.rank)
    return error(StatusCode::kInvalidProblem, kOp, ": num_dims = ", d.num_dims, " must be in [0, rank = ", d.rank, "]");
  for (int a = 0; a < d.rank; ++a) p.reduced_[a] = d.num_dims == 0;
  for (int i = 0; i < d.num_dims; ++i) {
    const int a = d.dims[i] < 0 ? d.dims[i] + d.rank : d.dims[i];
    if (a < 0 || a >= d.rank)
      return error(StatusCode::kInvalidProblem, kOp, ": dims[", i, "] = ", d.dims[i], " is out of range for rank ", d.rank);
    if (p.reduced_[a]) return error(StatusCode::kInvalidProblem, kOp, ": dims[", i, "] = ", d.dims[i], " names axis ", a, " twice");
    p.reduced_[a] = true;
  }
  if (Status s = check_dtype(kOp, "dtype", d.dtype, AnyDTypes{}); !s.ok()) return s;
  if (!is_floating(d.dtype) && !takes_integers(d.op))
    return error(StatusCode::kUnsupported, kOp, ": ", enum_name(d.op), " of ", dtype_name(d.dtype), " (supported: ", FloatDTypes::names(),
                 "; PyTorch requires a floating x)");
  if (d.op == ReduceKind::kNorm && std::isnan(d.p)) return error(StatusCode::kInvalidProblem, kOp, ": norm's p is NaN");
  if ((d.op == ReduceKind::kVar || d.op == ReduceKind::kStd || d.op == ReduceKind::kVarMean || d.op == ReduceKind::kStdMean) &&
      !std::isfinite(d.correction))
    return error(StatusCode::kInvalidProblem, kOp, ": correction = ", d.correction, " must be finite");
  auto out = result_dtype(d);
  if (!out) return out.status();
  p.out_ = *out;
  for (int a = 0; a < d.rank; ++a) p.keep_shape_[a] = p.reduced_[a] ? 1 : d.shape[a];
  if (needs_elements(d))
    for (int a = 0; a < d.rank; ++a)
      if (p.reduced_[a] && d.shape[a] == 0)
        return error(StatusCode::kInvalidProblem, kOp, ": Expected reduction dim ", a, " to have non-zero size (", enum_name(d.op),
                     d.op == ReduceKind::kNorm ? cat(" with p = ", d.p) : std::string(), " of an empty axis has no identity)");
  p.kind_ = red::kernel_kind(d);
  p.group_ = group_of(d.op);
  if (!find(p.group_, d.dtype, p.kind_)) return error(StatusCode::kInternal, kOp, ": no kernel for ", enum_name(d.op), " of ", dtype_name(d.dtype));
  p.desc_ = d;
  // operands first: their sizes are checked before the geometry multiplies extents
  const std::span<const int64_t> xs(d.shape, static_cast<size_t>(d.rank));
  int64_t ys[kMaxRank];
  int yr = 0;
  for (int a = 0; a < d.rank; ++a)
    if (!p.reduced_[a] || d.keepdim) ys[yr++] = p.keep_shape_[a];
  const std::span<const int64_t> yspan(ys, static_cast<size_t>(yr));
  p.operands_.input("x", d.dtype, xs);
  if (has_values(d.op)) p.operands_.output("y", p.out_, yspan);
  if (has_indices(d.op)) p.operands_.output("indices", DType::i64, yspan);
  if (has_second(d.op)) p.operands_.output("y2", p.out_, yspan);
  if (Status s = resolve_operands<ReduceArgs>(kOp, p.operands_); !s.ok()) return s;
  red::ReduceGeom g;
  const red::ReduceShape shape{d.dtype, d.rank, d.shape, d.rank, p.keep_shape_};
  red::build_geometry(shape, nullptr, nullptr, &g);
  p.acc_bytes_ = acc_bytes(p.kind_ >= kNorm0 ? static_cast<int>(ReduceKind::kNorm) : p.kind_, d.dtype);
  auto partials = red::partials_bytes(kOp, g, p.acc_bytes_);
  if (!partials) return partials.status();
  WorkspaceLayout w;
  if (*partials) w.take(*partials);
  p.workspace_ = w.total();
  if (Status s = check_workspace_budget(kOp, p.workspace_, pref.max_workspace_bytes); !s.ok()) return s;
  p.sku_.op = cat("reduce.", enum_name(d.op));
  p.sku_.direction = Direction::kForward;
  p.sku_.dtype = d.dtype;
  p.sku_.variant = g.row_mode ? "rows" : "columns";
  const DType acc = d.dtype == DType::f64 ? DType::f64 : is_floating(d.dtype) || d.op == ReduceKind::kLogSumExp ? DType::f32 : DType::i64;
  p.guarantee_.accumulator = p.guarantee_.math = acc;
  p.guarantee_.bit_exact = d.op == ReduceKind::kAmax || d.op == ReduceKind::kAmin || d.op == ReduceKind::kAminmax || d.op == ReduceKind::kAll ||
                           d.op == ReduceKind::kAny || d.op == ReduceKind::kCountNonzero || has_indices(d.op) ||
                           (!is_floating(d.dtype) && d.op != ReduceKind::kLogSumExp);
  p.guarantee_.determinism = Determinism::kRunToRun;
  return p;
}

Status ReducePlan::can_implement(const ReduceArgs& a) const {
  if (Status s = check_plan_args(kOp, selected(), operands_, a); !s.ok()) return s;
  if (has_values(desc_.op) && has_indices(desc_.op) && a.indices.numel() > 1)
    for (int i = 0; i < a.y.rank; ++i)
      if (a.y.shape[i] > 1 && a.y.stride[i] != a.indices.stride[i])
        return error(StatusCode::kUnsupported, kOp, ": indices must have y's strides (stride[", i, "] = ", a.indices.stride[i],
                     ", y's ", a.y.stride[i], ")");
  if (has_second(desc_.op) && a.y2.numel() > 1)
    for (int i = 0; i < a.y.rank; ++i)
      if (a.y.shape[i] > 1 && a.y.stride[i] != a.y2.stride[i])
        return error(StatusCode::kUnsupported, kOp, ": y2 must have y's strides (stride[", i, "] = ", a.y2.stride[i], ", y's ",
                     a.y.stride[i], ")");
  return {};
}

Status ReducePlan::run(cudaStream_t stream, Workspace ws, const ReduceArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  const ReduceDescriptor& d = desc_;
  const bool values = has_values(d.op), indices = has_indices(d.op);
  const TensorLayout primary = keepdim_view(values ? static_cast<const TensorLayout&>(a.y) : a.indices, d.rank, reduced_, d.keepdim);
  red::ReduceGeom g;
  const red::ReduceShape shape{d.dtype, d.rank, d.shape, d.rank, keep_shape_};
  red::build_geometry(shape, &a.x, &primary, &g);
  if (g.K == 0) return {};
  // the caller owes workspace_size() whatever this layout's split turns out to be (the contract)
  if (Status s = check_workspace(kOp, ws, workspace_); !s.ok()) return s;
  if (g.splits > 1) {
    if (static_cast<size_t>(g.splits * g.K) * acc_bytes_ > workspace_)
      return error(StatusCode::kInternal, kOp, ": the split of this layout needs more partials than workspace_size()");
    g.partials = ws.ptr;
  }
  g.x = a.x.data;
  g.y = values ? a.y.data : nullptr;
  g.y_dtype = static_cast<uint8_t>(out_);
  if (has_second(d.op)) {
    g.y2 = a.y2.data;
    g.y2_dtype = static_cast<uint8_t>(out_);
    std::copy(g.kys, g.kys + kMaxRank, g.kys2);  // y's strides (can_implement)
  }
  if (indices) {
    g.y2 = a.indices.data;
    g.y2_dtype = static_cast<uint8_t>(DType::i64);
    std::copy(g.kys, g.kys + kMaxRank, g.kys2);  // y's strides (can_implement), or the indices are y
  }
  g.p = d.p;
  g.correction = d.correction;
  return cuda_status(find(group_, d.dtype, kind_)(g, stream), kOp);
}

}  // namespace baracuda
