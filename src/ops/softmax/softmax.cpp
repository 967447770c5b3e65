// SoftmaxPlan and SoftmaxBackwardPlan: the descriptor's checks, the line geometry and its path
// (softmax_geometry.hpp), the launches.
#include "baracuda/ops/softmax.hpp"

#include <algorithm>

#include "core/checked_math.hpp"
#include "core/cuda_check.hpp"
#include "core/dispatch.hpp"
#include "core/plan_kit.hpp"
#include "core/validate.hpp"
#include "ops/softmax/softmax_geometry.hpp"

namespace baracuda {

namespace {

constexpr std::string_view kOp = "softmax";
constexpr std::string_view kOpBwd = "softmax_backward";

using FloatDTypes = DTypeList<DType::f32, DType::f16, DType::bf16, DType::f64>;

// The descriptor's checks shared by both plans: the normalized axis and y's dtype.
Result<int> check_softmax(std::string_view op, const SoftmaxDescriptor& d, DType* out) {
  int64_t numel = 0;
  if (Status s = check_shape(op, d.rank, d.shape, 0, &numel); !s.ok()) return s;
  const int r = std::max(d.rank, 1);
  if (d.dim < -r || d.dim >= r)
    return error(StatusCode::kInvalidProblem, op, ": dim = ", d.dim, " is out of range for rank ", d.rank, " (expected [", -r, ", ", r - 1, "])");
  if (Status s = check_dtype(op, "dtype", d.dtype, FloatDTypes{}); !s.ok()) return s;
  *out = d.out_dtype.value_or(d.dtype);
  const bool half_to_float = (d.dtype == DType::f16 || d.dtype == DType::bf16) && *out == DType::f32;
  if (*out != d.dtype && !half_to_float)
    return error(StatusCode::kUnsupported, op, ": out_dtype ", dtype_name(*out), " for x of ", dtype_name(d.dtype),
                 " (supported: x's dtype, or f32 for an f16 / bf16 x)");
  const int axis = d.dim < 0 ? d.dim + r : d.dim;
  if (d.mask_dtype && *d.mask_dtype != DType::boolean && *d.mask_dtype != DType::f32 && *d.mask_dtype != d.dtype)
    return error(StatusCode::kUnsupported, op, ": mask_dtype ", dtype_name(*d.mask_dtype), " for x of ", dtype_name(d.dtype),
                 " (supported: bool, f32 or x's dtype)");
  if (d.causal && (d.rank < 2 || axis < 1))
    return error(StatusCode::kInvalidProblem, op, ": causal needs the query axis before dim (rank >= 2, dim >= 1); got rank ", d.rank,
                 ", dim ", d.dim);
  return axis;
}

std::span<const int64_t> shape_of(const SoftmaxDescriptor& d) { return {d.shape, static_cast<size_t>(d.rank)}; }

std::string path_name(const smx::SoftmaxGeom& g) {
  const char* p = g.path == smx::kWarpRows ? "warp_rows" : g.path == smx::kClusterRows ? (g.staged ? "cluster_rows" : "cluster_rows_unstaged") : "columns";
  return g.masked() ? cat(p, ".masked") : std::string(p);
}

// The geometry of a call: lines of the views (null: shape only), the path and the masks (the
// backward reads a bool mask only: an additive one passes the gradient through).
smx::SoftmaxGeom geometry(const SoftmaxDescriptor& d, int axis, const TensorRef* v0, const TensorRef* v1, const TensorMut* v2,
                          const TensorRef* mask, int reads, DType in, DType out) {
  smx::SoftmaxGeom g;
  const bool bwd = reads == 2;
  const bool with_mask = d.mask_dtype && (!bwd || *d.mask_dtype == DType::boolean);
  const TensorLayout* views[4] = {v0, v1, v2, with_mask ? mask : nullptr};
  smx::build_lines(d.rank, d.shape, axis, views, &g);
  g.in0 = v0 ? v0->data : nullptr;
  g.in1 = v1 ? v1->data : nullptr;
  g.out = v2 ? v2->data : nullptr;
  if (with_mask) {
    g.mask = mask ? mask->data : nullptr;
    g.mask_dtype = static_cast<int>(*d.mask_dtype);
  }
  g.causal = d.causal;
  g.diagonal = d.diagonal;
  g.zero_rows = d.masked_rows == MaskedRows::kZero && (!bwd || d.op == SoftmaxKind::kLogSoftmax);
  if (d.causal) {  // the query axis (axis - 1) is other axis axis - 1 (the axes before `axis` keep their places)
    g.qsize = g.osize[axis - 1];
    g.qdiv = 1;
    for (int a = axis; a < g.ko; ++a) g.qdiv *= g.osize[a];
  }
  smx::choose_path(&g, reads, dtype_size(in), dtype_size(out));
  return g;
}

}  // namespace

// ---------------------------------------------------------------- geometry

void smx::build_lines(int rank, const int64_t* shape, int axis, const TensorLayout* const* views, SoftmaxGeom* g) {
  g->ko = 0;
  g->lines = 1;
  g->L = rank == 0 ? 1 : shape[axis];
  for (int a = 0; a < rank; ++a) {
    if (a == axis) continue;
    g->osize[g->ko] = shape[a];
    for (int v = 0; v < 4; ++v) g->os[v][g->ko] = views[v] ? views[v]->stride[a] : 0;
    g->lines *= shape[a];
    ++g->ko;
  }
  for (int v = 0; v < 4; ++v) {
    // shape only (select): the axis taken as unit-stride where it is the innermost
    const int64_t shape_only = axis == std::max(rank, 1) - 1 ? 1 : 0;
    g->s[v] = views[v] ? (rank ? views[v]->stride[axis] : 1) : shape_only;
    if (g->L == 1) g->s[v] = 1;
  }
}

void smx::choose_path(SoftmaxGeom* g, int reads, size_t in_bytes, size_t out_bytes) {
  // the read views (forward: x = view 0; backward: y, dy = views 0, 1) unit-stride along the axis
  const bool rowable = g->s[0] == 1 && (reads == 1 || g->s[1] == 1);
  g->vec = false;
  g->staged = true;
  g->buffers = 1;
  g->cluster = 1;
  if (!rowable || g->lines == 0 || g->L == 0) {  // (no element: nothing runs, and L may be any size)
    g->path = kColumns;
    return;
  }
  // 16-byte pieces: the narrower type's 16 bytes per piece, every line whole pieces, every view
  // unit-stride with 16-byte aligned lines
  const int64_t piece = 16 / static_cast<int64_t>(std::min(in_bytes, out_bytes));
  auto aligned = [&](int v, size_t bytes) {
    if (g->s[v] != 1 || reinterpret_cast<uintptr_t>(v == 2 ? g->out : (v == 0 ? g->in0 : g->in1)) % 16 != 0) return false;
    for (int a = 0; a < g->ko; ++a)
      if (g->osize[a] > 1 && (g->os[v][a] * static_cast<int64_t>(bytes)) % 16 != 0) return false;
    return true;
  };
  g->vec = g->L % piece == 0 && aligned(0, in_bytes) && (reads == 1 || aligned(1, in_bytes)) && aligned(2, out_bytes);
  const int64_t slice_full = g->vec ? ceil_div(g->L, piece) * piece : g->L;
  const int64_t bytes = slice_full * static_cast<int64_t>(in_bytes) * reads;
  if (bytes <= kWarpLineBytes) {
    g->path = kWarpRows;
    g->slice = ceil_div(g->L, piece) * piece;  // the warp's stage per line (whole vectors)
    g->buffers = 2;
    return;
  }
  g->path = kClusterRows;
  int cs = 1;
  while (cs < kMaxCluster && ceil_div(bytes, cs) > kSliceBytes) cs *= 2;
  // few lines: spread each over more blocks while a block keeps at least 16 KB
  while (cs < kMaxCluster && g->lines * cs < 2 * 132 && bytes / (2 * cs) >= 16 * 1024) cs *= 2;
  g->cluster = cs;
  g->staged = ceil_div(bytes, cs) <= kMaxSliceBytes;
  g->buffers = ceil_div(bytes, cs) <= kDoubleBytes ? 2 : 1;
  g->slice = ceil_div(ceil_div(g->L, cs), piece) * piece;
}

// ---------------------------------------------------------------- forward

Result<SoftmaxPlan> SoftmaxPlan::select(const SoftmaxDescriptor& d, const PlanPreference& pref) {
  SoftmaxPlan p;
  if (Status s = begin_select(kOp, d, pref, &p.sku_); !s.ok()) return s;
  auto axis = check_softmax(kOp, d, &p.out_);
  if (!axis) return axis.status();
  if (!smx::find_softmax(d.dtype, p.out_, false))
    return error(StatusCode::kInternal, kOp, ": no kernel for ", dtype_name(d.dtype), " -> ", dtype_name(p.out_));
  p.desc_ = d;
  p.operands_.input("x", d.dtype, shape_of(d));
  if (d.mask_dtype) p.operands_.input("mask", *d.mask_dtype, shape_of(d));
  p.operands_.output("y", p.out_, shape_of(d));
  if (Status s = resolve_operands<SoftmaxArgs>(kOp, p.operands_); !s.ok()) return s;
  const smx::SoftmaxGeom g = geometry(d, *axis, nullptr, nullptr, nullptr, nullptr, 1, d.dtype, p.out_);
  p.sku_.op = cat("softmax.", enum_name(d.op));
  p.sku_.direction = Direction::kForward;
  p.sku_.dtype = d.dtype;
  p.sku_.variant = path_name(g);
  p.guarantee_ = float_guarantee(d.dtype);
  return p;
}

Status SoftmaxPlan::can_implement(const SoftmaxArgs& a) const { return check_plan_args(kOp, selected(), operands_, a); }

Status SoftmaxPlan::run(cudaStream_t stream, Workspace, const SoftmaxArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (writes_nothing(operands_, a)) return {};
  const SoftmaxDescriptor& d = desc_;
  const int axis = d.dim < 0 ? d.dim + std::max(d.rank, 1) : d.dim;
  smx::SoftmaxGeom g = geometry(d, axis, &a.x, nullptr, &a.y, &a.mask, 1, d.dtype, out_);
  g.kind = static_cast<int>(d.op);
  return cuda_status(smx::find_softmax(d.dtype, out_, false)(g, stream), kOp);
}

// ---------------------------------------------------------------- backward

Result<SoftmaxBackwardPlan> SoftmaxBackwardPlan::select(const SoftmaxBackwardDescriptor& d, const PlanPreference& pref) {
  SoftmaxBackwardPlan p;
  if (Status s = begin_select(kOpBwd, d, pref, &p.sku_); !s.ok()) return s;
  auto axis = check_softmax(kOpBwd, d, &p.out_);
  if (!axis) return axis.status();
  if (!smx::find_softmax(p.out_, d.dtype, true))
    return error(StatusCode::kInternal, kOpBwd, ": no kernel for ", dtype_name(p.out_), " -> ", dtype_name(d.dtype));
  p.desc_ = d;
  p.operands_.input("y", p.out_, shape_of(d));
  p.operands_.input("dy", p.out_, shape_of(d));
  if (d.mask_dtype == DType::boolean) p.operands_.input("mask", DType::boolean, shape_of(d));
  p.operands_.output("dx", d.dtype, shape_of(d));
  if (Status s = resolve_operands<SoftmaxBackwardArgs>(kOpBwd, p.operands_); !s.ok()) return s;
  const smx::SoftmaxGeom g = geometry(d, *axis, nullptr, nullptr, nullptr, nullptr, 2, p.out_, d.dtype);
  p.sku_.op = cat("softmax.", enum_name(d.op));
  p.sku_.direction = Direction::kBackward;
  p.sku_.dtype = d.dtype;
  p.sku_.variant = path_name(g);
  p.guarantee_ = float_guarantee(d.dtype);
  return p;
}

Status SoftmaxBackwardPlan::can_implement(const SoftmaxBackwardArgs& a) const {
  return check_plan_args(kOpBwd, selected(), operands_, a);
}

Status SoftmaxBackwardPlan::run(cudaStream_t stream, Workspace, const SoftmaxBackwardArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (writes_nothing(operands_, a)) return {};
  const SoftmaxDescriptor& d = desc_;
  const int axis = d.dim < 0 ? d.dim + std::max(d.rank, 1) : d.dim;
  smx::SoftmaxGeom g = geometry(d, axis, &a.y, &a.dy, &a.dx, &a.mask, 2, out_, d.dtype);
  g.kind = static_cast<int>(d.op);
  return cuda_status(smx::find_softmax(out_, d.dtype, true)(g, stream), kOpBwd);
}

}  // namespace baracuda
