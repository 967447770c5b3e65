// ScanPlan and ScanBackwardPlan: PyTorch's result types, the line geometry and its segments
// (scan_geometry.hpp), the launches.
#include "baracuda/ops/scan.hpp"

#include <algorithm>

#include "core/checked_math.hpp"
#include "core/cuda_check.hpp"
#include "core/dispatch.hpp"
#include "core/plan_kit.hpp"
#include "core/validate.hpp"
#include "core/workspace.hpp"
#include "ops/reduce/scan_geometry.hpp"

namespace baracuda {

namespace {

constexpr std::string_view kOp = "scan";
constexpr std::string_view kOpBwd = "scan_backward";

using FloatDTypes = DTypeList<DType::f32, DType::f16, DType::bf16, DType::f64>;
using AnyDTypes = DTypeList<DType::f32, DType::f16, DType::bf16, DType::f64, DType::i8, DType::u8, DType::i16, DType::i32, DType::i64,
                            DType::boolean>;

bool is_arg(ScanKind op) { return op == ScanKind::kCummax || op == ScanKind::kCummin; }

// PyTorch's result type of op on x (out_dtype: its dtype argument).
Result<DType> scan_result_dtype(std::string_view op, const ScanDescriptor& d) {
  const bool fx = is_floating(d.dtype);
  switch (d.op) {
    case ScanKind::kCumsum: case ScanKind::kCumprod:
      if (d.out_dtype) {
        if (fx && *d.out_dtype != d.dtype && *d.out_dtype != DType::f32 && *d.out_dtype != DType::f64)
          return error(StatusCode::kUnsupported, op, ": ", enum_name(d.op), " of ", dtype_name(d.dtype), " into ", dtype_name(*d.out_dtype),
                       " (supported: x's dtype, f32, f64)");
        if (!fx && *d.out_dtype != DType::i64)
          return error(StatusCode::kUnsupported, op, ": ", enum_name(d.op), " of an integer x accumulates into i64 (out_dtype = ",
                       dtype_name(*d.out_dtype), ")");
        return *d.out_dtype;
      }
      return fx ? d.dtype : DType::i64;
    default:
      if (d.out_dtype && *d.out_dtype != d.dtype)
        return error(StatusCode::kInvalidProblem, op, ": ", enum_name(d.op), "'s result has x's dtype (out_dtype = ", dtype_name(*d.out_dtype), ")");
      return d.dtype;
  }
}

// The descriptor's checks shared by both plans; the normalized axis.
Result<int> check_scan(std::string_view op, const ScanDescriptor& d) {
  if (d.rank < 0 || d.rank > kMaxRank) return error(StatusCode::kInvalidProblem, op, ": rank = ", d.rank, " must be in [0, 8]");
  for (int a = 0; a < d.rank; ++a)
    if (d.shape[a] < 0) return error(StatusCode::kInvalidProblem, op, ": shape[", a, "] = ", d.shape[a], " must be >= 0");
  const int r = std::max(d.rank, 1);
  if (d.dim < -r || d.dim >= r)
    return error(StatusCode::kInvalidProblem, op, ": dim = ", d.dim, " is out of range for rank ", d.rank, " (expected [", -r, ", ", r - 1, "])");
  if (Status s = check_dtype(op, "dtype", d.dtype, AnyDTypes{}); !s.ok()) return s;
  if (d.op == ScanKind::kLogCumSumExp && !is_floating(d.dtype))
    return error(StatusCode::kUnsupported, op, ": logcumsumexp of ", dtype_name(d.dtype), " (supported: ", FloatDTypes::names(), ")");
  if (d.exclusive && is_arg(d.op))
    return error(StatusCode::kInvalidProblem, op, ": exclusive ", enum_name(d.op), " has no index for the first position");
  return d.dim < 0 ? d.dim + r : d.dim;
}

// x's shape as a span (rank 0: a line of one).
std::span<const int64_t> shape_of(const ScanDescriptor& d) { return {d.shape, static_cast<size_t>(d.rank)}; }

bool accumulates_f64(const ScanDescriptor& d, DType out) { return d.dtype == DType::f64 || out == DType::f64; }

// The segment totals of a segmented layout in the workspace (at most workspace_size(): select()
// reserved the larger of the two modes).
Status attach_partials(std::string_view op, scan::ScanGeom* g, Workspace ws, size_t workspace, size_t acc_bytes) {
  if (g->segments <= 1 && !g->tiled) return {};
  // checked by select()'s workspace size
  const int64_t units = g->tiled ? scan::tile_slots(g->lines, g->segments) : g->segments * g->lines;
  const int64_t flags = g->tiled ? scan::tile_flag_bytes(units) : 0;
  if (static_cast<size_t>(flags) + static_cast<size_t>(units) * acc_bytes > workspace)
    return error(StatusCode::kInternal, op, ": the segments of this layout need more than workspace_size()");
  g->partials = ws.ptr;
  g->tile_aggs = static_cast<char*>(ws.ptr) + flags;
  return {};
}

}  // namespace

// ---------------------------------------------------------------- geometry

void scan::choose_segments(ScanGeom* g) {
  g->segments = 1;
  g->seg_len = g->L;
  g->tiled = false;
  if (g->lines == 0 || g->L == 0) return;
  if (g->row_mode) {
    // tiles when the lines are long, or moderately long and too few for a warp each
    const int64_t tile = 8 * tile_chunks(g->acc_bytes) * kChunk;
    constexpr int64_t kFewLines = 132 * 32;
    if (g->L > tile || (g->L > 8 * kChunk && g->lines < kFewLines)) {
      g->tiled = true;
      g->seg_len = tile;
      g->segments = ceil_div(g->L, tile);
    }
    return;
  }
  constexpr int64_t kTargetThreads = 132 * 2048;
  if (g->lines < kTargetThreads && g->L >= 64)
    g->segments = std::min(ceil_div(kTargetThreads, g->lines), ceil_div(g->L, int64_t{32}));
  g->seg_len = ceil_div(g->L, g->segments);
  g->segments = ceil_div(g->L, g->seg_len);
}

void scan::set_vector_flags(ScanGeom* g, DType in, DType out) {
  g->vec_x = g->vec_y = g->vec_i = false;
  if (!g->row_mode || g->L < 2) return;
  const int isz = static_cast<int>(dtype_size(in)), osz = static_cast<int>(dtype_size(out));
  // every line's vectors aligned (strides in whole vectors; reversed, L too): granule elements
  auto lines_aligned = [&](const void* p, const int64_t* st, int64_t granule, int64_t bytes) {
    if (!p || reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(granule * bytes) != 0) return false;
    if (g->reverse && g->L % granule != 0) return false;
    for (int a = 0; a < g->ko; ++a)
      if (st[a] % granule != 0 && g->osize[a] > 1) return false;
    return true;
  };
  g->vec_x = lines_aligned(g->x, g->oxs, vector_width(isz), isz);
  g->vec_y = lines_aligned(g->y, g->oys, std::min(16, kItems * osz) / osz, osz);  // a lane's run: its stores
  g->vec_i = lines_aligned(g->indices, g->ois, 2, 8);
}

void scan::build_scan_geometry(const ScanDescriptor& d, const TensorLayout* x, const TensorLayout* y, const TensorLayout* indices,
                               ScanGeom* g) {
  const int axis = d.dim < 0 ? d.dim + std::max(d.rank, 1) : d.dim;
  g->ko = 0;
  g->lines = 1;
  g->reverse = d.reverse;
  // the accumulator: {value, index} for cummax / cummin, i64 for integers, f64 for an f64 x or
  // result, else f32 (scan_acc_bytes)
  g->acc_bytes = d.op == ScanKind::kCummax || d.op == ScanKind::kCummin ? 16
                 : !is_floating(d.dtype) || d.dtype == DType::f64 || (d.out_dtype && *d.out_dtype == DType::f64) ? 8 : 4;
  g->L = d.rank == 0 ? 1 : d.shape[axis];
  for (int a = 0; a < d.rank; ++a) {
    if (a == axis) continue;
    g->osize[g->ko] = d.shape[a];
    g->oxs[g->ko] = x ? x->stride[a] : 0;
    g->oys[g->ko] = y ? y->stride[a] : 0;
    g->ois[g->ko] = indices ? indices->stride[a] : 0;
    g->lines *= d.shape[a];
    ++g->ko;
  }
  g->xs = x && d.rank ? x->stride[axis] : 1;
  g->ys = y && d.rank ? y->stride[axis] : 1;
  g->is = indices && d.rank ? indices->stride[axis] : 1;
  g->row_mode = x ? (g->xs == 1 || g->L == 1) && (g->ys == 1 || g->L == 1) && (!indices || g->is == 1 || g->L == 1)
                  : axis == std::max(d.rank, 1) - 1;
  if (g->L == 1) g->xs = g->ys = g->is = 1;
  choose_segments(g);
}

// The workspace of one mode's layout: column segments' totals, or the tiles' counter, flags and
// totals.
static Result<int64_t> mode_bytes(std::string_view op, const scan::ScanGeom& g, size_t acc_bytes) {
  int64_t units = 0, bytes = 0;
  if (g.segments <= 1 && !g.tiled) return int64_t{0};
  if (!checked_mul(g.segments, g.lines, &units) || units > (int64_t{1} << 60))
    return error(StatusCode::kInvalidProblem, op, ": the segment totals exceed 2^63 bytes");
  if (g.tiled) units = scan::tile_slots(g.lines, g.segments);  // at most 1.001 x lines x segments
  if (!checked_mul(units, static_cast<int64_t>(acc_bytes), &bytes) ||
      (g.tiled && !checked_add(bytes, scan::tile_flag_bytes(units), &bytes)))
    return error(StatusCode::kInvalidProblem, op, ": the segment totals exceed 2^63 bytes");
  return bytes;
}

Result<size_t> scan::scan_partials_bytes(std::string_view op, const ScanGeom& g, size_t acc_bytes) {
  ScanGeom other = g;
  other.row_mode = !g.row_mode;
  choose_segments(&other);
  auto a = mode_bytes(op, g, acc_bytes);
  if (!a) return a.status();
  auto b = mode_bytes(op, other, acc_bytes);
  if (!b) return b.status();
  return static_cast<size_t>(std::max(*a, *b));
}

// ---------------------------------------------------------------- forward

Result<ScanPlan> ScanPlan::select(const ScanDescriptor& d, const PlanPreference& pref) {
  ScanPlan p;
  if (Status s = begin_select(kOp, d, pref, &p.sku_); !s.ok()) return s;
  auto axis = check_scan(kOp, d);
  if (!axis) return axis.status();
  auto out = scan_result_dtype(kOp, d);
  if (!out) return out.status();
  p.out_ = *out;
  const bool f64 = accumulates_f64(d, p.out_);
  if (!scan::find_scan(d.dtype, static_cast<int>(d.op), f64))
    return error(StatusCode::kInternal, kOp, ": no kernel for ", enum_name(d.op), " of ", dtype_name(d.dtype));
  p.desc_ = d;
  p.operands_.input("x", d.dtype, shape_of(d));
  p.operands_.output("y", p.out_, shape_of(d));
  if (is_arg(d.op) && d.indices) p.operands_.output("indices", DType::i64, shape_of(d));
  if (Status s = resolve_operands<ScanArgs>(kOp, p.operands_); !s.ok()) return s;
  scan::ScanGeom g;
  scan::build_scan_geometry(d, nullptr, nullptr, nullptr, &g);
  p.acc_bytes_ = scan::scan_acc_bytes(d.dtype, static_cast<int>(d.op), f64);
  auto partials = scan::scan_partials_bytes(kOp, g, p.acc_bytes_);
  if (!partials) return partials.status();
  p.workspace_ = *partials;
  if (Status s = check_workspace_budget(kOp, p.workspace_, pref.max_workspace_bytes); !s.ok()) return s;
  p.sku_.op = cat("scan.", enum_name(d.op));
  p.sku_.direction = Direction::kForward;
  p.sku_.dtype = d.dtype;
  p.sku_.variant = g.row_mode ? "rows" : "columns";
  const DType acc = !is_floating(d.dtype) ? DType::i64 : f64 ? DType::f64 : DType::f32;
  p.guarantee_.accumulator = p.guarantee_.math = acc;
  p.guarantee_.bit_exact = is_arg(d.op) || !is_floating(d.dtype);
  p.guarantee_.determinism = Determinism::kRunToRun;
  return p;
}

Status ScanPlan::can_implement(const ScanArgs& a) const { return check_plan_args(kOp, selected(), operands_, a); }

Status ScanPlan::run(cudaStream_t stream, Workspace ws, const ScanArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (Status s = check_workspace(kOp, ws, workspace_); !s.ok()) return s;
  const ScanDescriptor& d = desc_;
  scan::ScanGeom g;
  scan::build_scan_geometry(d, &a.x, &a.y, a.indices.data ? &a.indices : nullptr, &g);
  if (Status s = attach_partials(kOp, &g, ws, workspace_, acc_bytes_); !s.ok()) return s;
  g.x = a.x.data;
  g.y = a.y.data;
  g.indices = a.indices.data;
  g.y_dtype = static_cast<uint8_t>(out_);
  g.reverse = d.reverse;
  g.exclusive = d.exclusive;
  scan::set_vector_flags(&g, d.dtype, out_);
  return cuda_status(scan::find_scan(d.dtype, static_cast<int>(d.op), accumulates_f64(d, out_))(g, stream), kOp);
}

// ---------------------------------------------------------------- backward

Result<ScanBackwardPlan> ScanBackwardPlan::select(const ScanBackwardDescriptor& d, const PlanPreference& pref) {
  ScanBackwardPlan p;
  if (Status s = begin_select(kOpBwd, d, pref, &p.sku_); !s.ok()) return s;
  auto axis = check_scan(kOpBwd, d);
  if (!axis) return axis.status();
  if (!is_floating(d.dtype)) return error(StatusCode::kUnsupported, kOpBwd, ": the backward needs a floating x (", dtype_name(d.dtype), ")");
  if (is_arg(d.op) && !d.indices)
    return error(StatusCode::kInvalidProblem, kOpBwd, ": the backward of ", enum_name(d.op), " reads the forward's indices (set `indices`)");
  auto out = scan_result_dtype(kOpBwd, d);
  if (!out) return out.status();
  p.out_ = *out;
  p.desc_ = d;
  const std::span<const int64_t> xs = shape_of(d);
  const bool reads_xy = d.op == ScanKind::kCumprod || d.op == ScanKind::kLogCumSumExp;
  if (reads_xy) p.operands_.input("x", d.dtype, xs);
  if (reads_xy) p.operands_.input("y", p.out_, xs);
  if (is_arg(d.op)) p.operands_.input("indices", DType::i64, xs);
  p.operands_.input("dy", p.out_, xs);
  p.operands_.output("dx", d.dtype, xs);
  if (Status s = resolve_operands<ScanBackwardArgs>(kOpBwd, p.operands_); !s.ok()) return s;
  const bool f64 = accumulates_f64(d, p.out_);
  if (d.op == ScanKind::kCumsum) {
    // the scan of dy the other way round: dy's dtype in, x's out
    if (!scan::find_scan(p.out_, static_cast<int>(ScanKind::kCumsum), f64))
      return error(StatusCode::kInternal, kOpBwd, ": no kernel for cumsum of ", dtype_name(p.out_));
    scan::ScanGeom g;
    scan::build_scan_geometry(d, nullptr, nullptr, nullptr, &g);
    p.acc_bytes_ = scan::scan_acc_bytes(p.out_, static_cast<int>(ScanKind::kCumsum), f64);
    auto partials = scan::scan_partials_bytes(kOpBwd, g, p.acc_bytes_);
    if (!partials) return partials.status();
    p.workspace_ = *partials;
    p.sku_.variant = g.row_mode ? "rows" : "columns";
  } else {
    if (!scan::find_scan_backward(d.dtype)) return error(StatusCode::kInternal, kOpBwd, ": no kernel for ", dtype_name(d.dtype));
    p.sku_.variant = "serial";
  }
  if (Status s = check_workspace_budget(kOpBwd, p.workspace_, pref.max_workspace_bytes); !s.ok()) return s;
  p.sku_.op = cat("scan.", enum_name(d.op));
  p.sku_.direction = Direction::kBackward;
  p.sku_.dtype = d.dtype;
  p.guarantee_ = float_guarantee(f64 ? DType::f64 : d.dtype);
  return p;
}

Status ScanBackwardPlan::can_implement(const ScanBackwardArgs& a) const { return check_plan_args(kOpBwd, selected(), operands_, a); }

Status ScanBackwardPlan::run(cudaStream_t stream, Workspace ws, const ScanBackwardArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (Status s = check_workspace(kOpBwd, ws, workspace_); !s.ok()) return s;
  const ScanDescriptor& d = desc_;
  const bool f64 = accumulates_f64(d, out_);
  if (d.op == ScanKind::kCumsum) {
    ScanDescriptor r = d;
    r.reverse = !d.reverse;
    scan::ScanGeom g;
    scan::build_scan_geometry(r, &a.dy, &a.dx, nullptr, &g);
    if (Status s = attach_partials(kOpBwd, &g, ws, workspace_, acc_bytes_); !s.ok()) return s;
    g.x = a.dy.data;
    g.y = a.dx.data;
    g.y_dtype = static_cast<uint8_t>(d.dtype);
    g.reverse = r.reverse;
    g.exclusive = d.exclusive;
    scan::set_vector_flags(&g, out_, d.dtype);
    return cuda_status(scan::find_scan(out_, static_cast<int>(ScanKind::kCumsum), f64)(g, stream), kOpBwd);
  }
  const int axis = d.dim < 0 ? d.dim + std::max(d.rank, 1) : d.dim;
  scan::ScanBwdGeom b;
  b.lines = 1;
  b.L = d.rank == 0 ? 1 : d.shape[axis];
  auto stride = [&](const auto& t, int ax) -> int64_t { return t.data && d.rank ? t.stride[ax] : 0; };
  for (int ax = 0; ax < d.rank; ++ax) {
    if (ax == axis) continue;
    b.osize[b.ko] = d.shape[ax];
    b.ox[b.ko] = stride(a.x, ax);
    b.oy[b.ko] = stride(a.y, ax);
    b.oi[b.ko] = stride(a.indices, ax);
    b.ody[b.ko] = stride(a.dy, ax);
    b.odx[b.ko] = stride(a.dx, ax);
    b.lines *= d.shape[ax];
    ++b.ko;
  }
  b.xs = stride(a.x, axis);
  b.ys = stride(a.y, axis);
  b.is = stride(a.indices, axis);
  b.dys = stride(a.dy, axis);
  b.dxs = stride(a.dx, axis);
  b.x = a.x.data;
  b.y = a.y.data;
  b.indices = a.indices.data;
  b.dy = a.dy.data;
  b.dx = a.dx.data;
  b.y_dtype = static_cast<uint8_t>(out_);
  b.kind = static_cast<int>(d.op);
  b.reverse = d.reverse;
  b.exclusive = d.exclusive;
  return cuda_status(scan::find_scan_backward(d.dtype)(b, stream), kOpBwd);
}

}  // namespace baracuda
