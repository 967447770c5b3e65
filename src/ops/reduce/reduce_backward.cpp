// ReduceBackwardPlan: the forward's validation (ReducePlan::select), which operands the formula
// reads, var / std's mean pass into the workspace, the broadcast pass.
#include <algorithm>
#include <cmath>
#include <tuple>

#include "baracuda/ops/reduce.hpp"
#include "core/cuda_check.hpp"
#include "core/plan_kit.hpp"
#include "core/validate.hpp"
#include "core/workspace.hpp"
#include "ops/reduce/reduce_geometry.hpp"

namespace baracuda {

namespace {

constexpr std::string_view kOp = "reduce_backward";
bool reads_x(ReduceKind op, double p) {
  switch (op) {
    case ReduceKind::kNanSum: case ReduceKind::kNanMean: case ReduceKind::kProd: case ReduceKind::kAmax: case ReduceKind::kAmin:
    case ReduceKind::kLogSumExp: case ReduceKind::kVar: case ReduceKind::kStd: case ReduceKind::kVarMean:
    case ReduceKind::kStdMean: case ReduceKind::kAminmax:
      return true;
    case ReduceKind::kNorm: return p != 0;
    default: return false;
  }
}
bool reads_y(ReduceKind op, double p) {
  switch (op) {
    case ReduceKind::kProd: case ReduceKind::kAmax: case ReduceKind::kAmin: case ReduceKind::kLogSumExp: case ReduceKind::kStd:
    case ReduceKind::kStdMean: case ReduceKind::kAminmax:
      return true;
    case ReduceKind::kNorm: return p != 0 && p != 1;
    default: return false;
  }
}
// The per-output values a pre-pass over x puts in the workspace first (0: none; 2: prod's two,
// aminmax's two counts).
int prepass_values(const ReduceDescriptor& d) {
  switch (d.op) {
    case ReduceKind::kVar: case ReduceKind::kStd: case ReduceKind::kVarMean: case ReduceKind::kStdMean: case ReduceKind::kAmax:
    case ReduceKind::kAmin: case ReduceKind::kNanMean:
      return 1;
    case ReduceKind::kProd: case ReduceKind::kAminmax: return 2;
    case ReduceKind::kNorm: return std::isinf(d.p) ? 1 : 0;
    default: return 0;
  }
}

// Strides of a per-output view in keepdim form over x's axes (0 on the reduced ones).
void keepdim_strides(const TensorLayout& v, int rank, const bool* reduced, bool keepdim, int64_t* out) {
  int j = 0;
  for (int a = 0; a < rank; ++a) {
    if (reduced[a]) {
      out[a] = 0;
      if (keepdim) ++j;
    } else {
      out[a] = v.shape[j] == 1 ? 0 : v.stride[j];
      ++j;
    }
  }
}

}  // namespace

Result<ReduceBackwardPlan> ReduceBackwardPlan::select(const ReduceBackwardDescriptor& d, const PlanPreference& pref) {
  auto fwd = ReducePlan::select(d, pref);  // the same descriptor: its checks, result type and shapes
  if (!fwd) return Status(fwd.status().code(), cat(kOp, ": ", fwd.status().message()));
  switch (d.op) {
    case ReduceKind::kAll: case ReduceKind::kAny: case ReduceKind::kCountNonzero: case ReduceKind::kArgmax: case ReduceKind::kArgmin:
      return error(StatusCode::kInvalidProblem, kOp, ": ", enum_name(d.op), " is not differentiable");
    default: break;
  }
  if (!is_floating(d.dtype)) return error(StatusCode::kUnsupported, kOp, ": the backward needs a floating x (", dtype_name(d.dtype), ")");
  ReduceBackwardPlan p;
  if (Status s = begin_select(kOp, d, pref, &p.sku_); !s.ok()) return s;
  if (!red::find_backward(d.dtype, red::kernel_kind(d))) return error(StatusCode::kInternal, kOp, ": no kernel for ", dtype_name(d.dtype));
  p.desc_ = d;
  const OperandSpec& y = *fwd->expected_operands().find(d.op == ReduceKind::kMax || d.op == ReduceKind::kMin ? "indices" : "y");
  p.out_ = d.op == ReduceKind::kMax || d.op == ReduceKind::kMin ? d.dtype : y.dtype;
  for (int a = 0; a < d.rank; ++a) p.reduced_[a] = d.num_dims == 0;
  for (int i = 0; i < d.num_dims; ++i) p.reduced_[d.dims[i] < 0 ? d.dims[i] + d.rank : d.dims[i]] = true;
  for (int a = 0; a < d.rank; ++a) p.keep_shape_[a] = p.reduced_[a] ? 1 : d.shape[a];
  const std::span<const int64_t> xs(d.shape, static_cast<size_t>(d.rank));
  if (reads_x(d.op, d.p)) p.operands_.input("x", d.dtype, xs);
  const bool pair = d.op == ReduceKind::kVarMean || d.op == ReduceKind::kStdMean || d.op == ReduceKind::kAminmax;
  if (reads_y(d.op, d.p)) p.operands_.input("y", p.out_, y.dims());
  if (d.op == ReduceKind::kAminmax) p.operands_.input("y2", p.out_, y.dims());
  if (d.op == ReduceKind::kMax || d.op == ReduceKind::kMin) p.operands_.input("indices", DType::i64, y.dims());
  p.operands_.input("dy", p.out_, y.dims());
  if (pair) p.operands_.input("dy2", p.out_, y.dims());
  p.operands_.output("dx", d.dtype, xs);
  if (Status s = resolve_operands<ReduceBackwardArgs>(kOp, p.operands_); !s.ok()) return s;
  WorkspaceLayout w;
  // (reserved whatever the layout: run() may take var / std's mean in the pass instead)
  if (const int values = prepass_values(d); values > 0) {
    // the pre-pass's per-output values (f32, f64 for f64 x), then its split partials (the
    // policy's accumulator: at most 16 bytes)
    red::ReduceGeom g;
    red::build_geometry(red::ReduceShape{d.dtype, d.rank, d.shape, d.rank, p.keep_shape_}, nullptr, nullptr, &g);
    const size_t acc = d.dtype == DType::f64 ? 8 : 4;
    auto partials = red::partials_bytes(kOp, g, 16);
    if (!partials) return partials.status();
    p.mean_bytes_ = static_cast<size_t>(g.K) * acc;
    p.mean_partials_ = *partials;
    for (int i = 0; i < values; ++i) w.take(p.mean_bytes_);
    if (*partials) w.take(*partials);
  }
  p.workspace_ = w.total();
  if (Status s = check_workspace_budget(kOp, p.workspace_, pref.max_workspace_bytes); !s.ok()) return s;
  p.sku_.op = cat("reduce.", enum_name(d.op));
  p.sku_.direction = Direction::kBackward;
  p.sku_.dtype = d.dtype;
  p.sku_.variant = "broadcast";
  p.guarantee_ = float_guarantee(d.dtype);
  return p;
}

Status ReduceBackwardPlan::can_implement(const ReduceBackwardArgs& a) const {
  return check_plan_args(kOp, selected(), operands_, a);
}

Status ReduceBackwardPlan::run(cudaStream_t stream, Workspace ws, const ReduceBackwardArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  const ReduceDescriptor& d = desc_;
  if (Status s = check_workspace(kOp, ws, workspace_); !s.ok()) return s;
  red::ReduceBwdGeom b;
  b.rank = d.rank;
  b.numel = a.dx.numel();
  if (b.numel == 0) return {};
  int64_t n = 1;  // elements per output
  for (int i = 0; i < d.rank; ++i) {
    b.size[i] = d.shape[i];
    b.xs[i] = a.x.data ? a.x.stride[i] : 0;
    b.dxs[i] = a.dx.stride[i];
    if (reduced_[i]) n *= d.shape[i];
  }
  int64_t mul = 1;
  for (int i = d.rank - 1; i >= 0; --i)
    if (reduced_[i]) b.rmul[i] = mul, mul *= d.shape[i];
  keepdim_strides(a.dy, d.rank, reduced_, d.keepdim, b.dys);
  if (a.y.data) keepdim_strides(a.y, d.rank, reduced_, d.keepdim, b.ys);
  // y2 and dy2 are read at y's and dy's offsets: their strides must agree
  for (auto [v, like, name] : {std::tuple{&a.y2, b.ys, "y2's strides must equal y's"}, std::tuple{&a.dy2, b.dys, "dy2's strides must equal dy's"}}) {
    int64_t s2[kMaxRank] = {};
    if (!v->data) continue;
    keepdim_strides(*v, d.rank, reduced_, d.keepdim, s2);
    if (!std::equal(s2, s2 + d.rank, like)) return error(StatusCode::kUnsupported, kOp, ": ", name);
  }
  if (a.indices.data) keepdim_strides(a.indices, d.rank, reduced_, d.keepdim, b.ixs);
  b.x = a.x.data;
  b.y = a.y.data;
  b.y2 = a.y2.data;
  b.dy = a.dy.data;
  b.dy2 = a.dy2.data;
  b.indices = a.indices.data;
  b.dx = a.dx.data;
  b.y_dtype = static_cast<uint8_t>(out_);
  b.kind = red::kernel_kind(d);  // norm p = ±inf is refused at select
  b.p = d.p;
  b.inv_n = d.op == ReduceKind::kSum ? 1.0 : 1.0 / static_cast<double>(n);  // sum's formula is mean's with scale 1
  b.dof = std::max(0.0, static_cast<double>(n) - d.correction);
  // var / std (and _mean) over the inner axis alone, rows long enough for a block each: the
  // kernel takes each row's mean itself (no pre-pass reading x once more from DRAM)
  bool fused_mean = false;
  if (d.op == ReduceKind::kVar || d.op == ReduceKind::kStd || d.op == ReduceKind::kVarMean || d.op == ReduceKind::kStdMean) {
    red::ReduceBwdGeom probe = b;
    red::finish_backward(&probe, d.dtype);
    fused_mean = red::fused_mean(probe);
  }
  if (const int values = prepass_values(d); values > 0 && !fused_mean) {
    // the per-output values, contiguous over the kept axes, by a pre-pass over x (var / std: the
    // forward's mean pass)
    const DType acc = d.dtype == DType::f64 ? DType::f64 : DType::f32;
    TensorLayout vals = TensorLayout::make(acc, std::span<const int64_t>(keep_shape_, static_cast<size_t>(d.rank)));
    red::ReduceGeom g;
    red::build_geometry(red::ReduceShape{d.dtype, d.rank, d.shape, d.rank, keep_shape_}, &a.x, &vals, &g);
    WorkspaceLayout w;
    const size_t at1 = w.take(mean_bytes_), at2 = values > 1 ? w.take(mean_bytes_) : 0, atp = w.take(mean_partials_);
    g.x = a.x.data;
    g.y = slice<char>(ws, at1);
    g.y_dtype = static_cast<uint8_t>(acc);
    if (values > 1) {
      g.y2 = slice<char>(ws, at2);
      g.y2_dtype = static_cast<uint8_t>(acc);
      std::copy(g.kys, g.kys + kMaxRank, g.kys2);
    }
    if (g.splits > 1) g.partials = slice<char>(ws, atp);
    const int kind = red::kernel_kind(d);
    const bool mean_pass = d.op == ReduceKind::kVar || d.op == ReduceKind::kStd || d.op == ReduceKind::kVarMean || d.op == ReduceKind::kStdMean;
    if (d.op == ReduceKind::kAminmax) {
      // two counting passes: the min's extremes into the first values, the max's into the second
      const red::ReduceLaunchFn lo = red::find_backward_prepass(d.dtype, static_cast<int>(ReduceKind::kAmin)),
                                 hi = red::find_backward_prepass(d.dtype, static_cast<int>(ReduceKind::kAmax));
      if (!lo || !hi) return error(StatusCode::kInternal, kOp, ": no pre-pass for ", enum_name(d.op));
      red::ReduceGeom g2 = g;
      g2.y = g.y2;
      g2.y2 = nullptr;
      g.y2 = nullptr;
      if (Status s = cuda_status(lo(g, stream), kOp); !s.ok()) return s;
      if (Status s = cuda_status(hi(g2, stream), kOp); !s.ok()) return s;
      b.mean = g.y;
      b.aux2 = g2.y;
    } else {
      const red::ReduceLaunchFn pre = mean_pass ? red::find_sums(d.dtype, static_cast<int>(ReduceKind::kMean))
                                                : red::find_backward_prepass(d.dtype, kind);
      if (!pre) return error(StatusCode::kInternal, kOp, ": no pre-pass for ", enum_name(d.op));
      if (Status s = cuda_status(pre(g, stream), kOp); !s.ok()) return s;
      b.mean = g.y;
      b.aux2 = g.y2;
    }
    std::copy(vals.stride, vals.stride + d.rank, b.ms);
    for (int i = 0; i < d.rank; ++i)
      if (reduced_[i]) b.ms[i] = 0;
  }
  red::finish_backward(&b, d.dtype);
  return cuda_status(red::find_backward(d.dtype, b.kind)(b, stream), kOp);
}

}  // namespace baracuda
