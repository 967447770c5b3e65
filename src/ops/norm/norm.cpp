// NormPlan and NormBackwardPlan: the descriptor's checks and defaults (PyTorch's eps), the row
// geometry (the normalized axes merged into one per view), the launches.
#include "baracuda/ops/norm.hpp"

#include <algorithm>
#include <cmath>

#include "core/checked_math.hpp"
#include "core/cuda_check.hpp"
#include "core/dispatch.hpp"
#include "core/plan_kit.hpp"
#include "core/validate.hpp"
#include "core/workspace.hpp"
#include "ops/norm/norm_geometry.hpp"

namespace baracuda {

namespace {

constexpr std::string_view kOp = "norm";
constexpr std::string_view kOpBwd = "norm_backward";

using FloatDTypes = DTypeList<DType::f32, DType::f16, DType::bf16, DType::f64>;

struct Shapes {
  std::vector<int64_t> x, pshape, sshape;
  int64_t rows = 1, n = 1;
  DType param = DType::f32, stat = DType::f32;
  double eps = 1e-5;
};

// The descriptor's checks shared by both plans; the operand shapes, dtypes and eps.
Result<Shapes> check_norm(std::string_view op, const NormDescriptor& d) {
  int64_t numel = 0;
  if (Status s = check_shape(op, d.rank, d.shape, 1, &numel); !s.ok()) return s;
  if (d.norm_dims < 1 || d.norm_dims > d.rank)
    return error(StatusCode::kInvalidProblem, op, ": norm_dims = ", d.norm_dims, " must be in [1, rank = ", d.rank, "]");
  if (Status s = check_dtype(op, "dtype", d.dtype, FloatDTypes{}); !s.ok()) return s;
  Shapes sh;
  sh.param = d.param_dtype.value_or(d.dtype);
  if (sh.param != d.dtype && !(sh.param == DType::f32 && (d.dtype == DType::f16 || d.dtype == DType::bf16)))
    return error(StatusCode::kUnsupported, op, ": param_dtype ", dtype_name(sh.param), " for x of ", dtype_name(d.dtype),
                 " (supported: x's dtype, or f32 for an f16 / bf16 x)");
  if (d.op == NormKind::kRmsNorm && d.bias) return error(StatusCode::kInvalidProblem, op, ": rms_norm has no bias (set bias = false)");
  if (d.eps && !(std::isfinite(*d.eps) && *d.eps >= 0))
    return error(StatusCode::kInvalidProblem, op, ": eps = ", *d.eps, " must be finite and >= 0");
  sh.stat = d.dtype == DType::f64 ? DType::f64 : DType::f32;
  const int lead = d.rank - d.norm_dims;
  for (int a = 0; a < d.rank; ++a) {
    sh.x.push_back(d.shape[a]);
    if (a < lead) sh.rows *= d.shape[a];
    else sh.n *= d.shape[a], sh.pshape.push_back(d.shape[a]);
    sh.sshape.push_back(a < lead ? d.shape[a] : 1);
  }
  if (sh.n == 0 && sh.rows > 0)
    return error(StatusCode::kInvalidProblem, op, ": the normalized axes hold no element (shape[", lead, "..] has a 0 extent): no mean or rstd is defined");
  sh.eps = norm_eps(d);
  return sh;
}

Status merge_view(std::string_view op, const char* name, const TensorLayout& v, int from, int64_t* stride) {
  if (merged_stride(v, from, v.rank, stride)) return {};
  return error(StatusCode::kUnsupported, op, ": ", name, "'s normalized axes do not merge into one axis (strides of axes ", from,
               "..", v.rank - 1, " are not nested)");
}

// Fills the row geometry of a call: views[v] the row views present (null: absent), params the
// weight / bias (or dweight / dbias) views.
Status build(std::string_view op, const NormDescriptor& d, const Shapes& sh, const TensorLayout* const* views, void* const* data,
             const char* const* names, nrm::NormGeom* g) {
  const int lead = d.rank - d.norm_dims;
  g->lines = sh.rows;
  g->N = sh.n;
  g->ko = lead;
  for (int a = 0; a < lead; ++a) g->osize[a] = d.shape[a];
  for (int v = 0; v < nrm::kViews; ++v) {
    g->p[v] = data[v];
    if (!views[v] || !data[v]) continue;
    for (int a = 0; a < lead; ++a) g->os[v][a] = views[v]->stride[a];
    if (v == nrm::kMean || v == nrm::kRstd) continue;
    if (Status s = merge_view(op, names[v], *views[v], lead, &g->s[v]); !s.ok()) return s;
  }
  g->layer = d.op == NormKind::kLayerNorm;
  g->eps = sh.eps;
  return {};
}

// Whether every row view present and the parameters take 16-byte pieces; the staging.
void choose_layout(nrm::NormGeom* g, DType x, int read0, int read1, const void* const* params, const int64_t* pstrides,
                   int nparams) {
  const int64_t xb = static_cast<int64_t>(dtype_size(x)), v = 16 / xb;
  bool vec = g->N % v == 0;
  for (int k = 0; k < nrm::kViews && vec; ++k) {
    if (!g->p[k] || k == nrm::kMean || k == nrm::kRstd) continue;
    if (g->s[k] != 1 || reinterpret_cast<uintptr_t>(g->p[k]) % 16 != 0) vec = false;
    for (int a = 0; a < g->ko && vec; ++a)
      if (g->osize[a] > 1 && (g->os[k][a] * xb) % 16 != 0) vec = false;
  }
  for (int k = 0; k < nparams && vec; ++k)
    if (params[k] && (pstrides[k] != 1 || reinterpret_cast<uintptr_t>(params[k]) % 16 != 0)) vec = false;
  g->vec = vec;
  if (g->lines == 0 || g->N == 0) {  // no row: nothing is staged (N may be any size)
    g->staged = false;
    return;
  }
  const int reads = read1 >= 0 && g->p[read1] ? 2 : 1;
  const int64_t bytes = g->N * xb * reads;
  const bool unit = g->s[read0] == 1 && (reads == 1 || g->s[read1] == 1);
  g->staged = unit && bytes <= 96 * 1024;
  g->buffers = bytes <= nrm::kStageBytes ? 2 : 1;
  g->warp = false;
}

}  // namespace

double norm_eps(const NormDescriptor& d) {
  if (d.eps) return *d.eps;
  if (d.op == NormKind::kLayerNorm) return 1e-5;
  // rms_norm's eps=None: torch.finfo(x.dtype).eps
  switch (d.dtype) {
    case DType::f64: return 2.220446049250313e-16;
    case DType::f16: return 9.765625e-4;
    case DType::bf16: return 7.8125e-3;
    default: return 1.1920928955078125e-07;
  }
}

// ---------------------------------------------------------------- forward

Result<NormPlan> NormPlan::select(const NormDescriptor& d, const PlanPreference& pref) {
  NormPlan p;
  if (Status s = begin_select(kOp, d, pref, &p.sku_); !s.ok()) return s;
  auto sh = check_norm(kOp, d);
  if (!sh) return sh.status();
  if (!nrm::find_norm(d.dtype, sh->param, false))
    return error(StatusCode::kInternal, kOp, ": no kernel for ", dtype_name(d.dtype), " with ", dtype_name(sh->param), " parameters");
  p.desc_ = d;
  p.param_ = sh->param;
  p.stat_ = sh->stat;
  p.eps_ = sh->eps;
  const bool layer = d.op == NormKind::kLayerNorm;
  p.operands_.input("x", d.dtype, sh->x);
  if (d.residual) p.operands_.input("residual", d.dtype, sh->x);
  if (d.weight) p.operands_.input("weight", sh->param, sh->pshape);
  if (layer && d.bias) p.operands_.input("bias", sh->param, sh->pshape);
  p.operands_.output("y", d.dtype, sh->x);
  if (d.residual) p.operands_.output("h", d.dtype, sh->x);
  if (layer) p.operands_.output("mean", sh->stat, sh->sshape);
  p.operands_.output("rstd", sh->stat, sh->sshape);
  if (Status s = resolve_operands<NormArgs>(kOp, p.operands_); !s.ok()) return s;
  p.sku_.op = cat("norm.", enum_name(d.op));
  p.sku_.direction = Direction::kForward;
  p.sku_.dtype = d.dtype;
  // (run() takes the warp path for staged rows of at most kWarpRowBytes: unit-stride rows)
  const bool warp = sh->n * static_cast<int64_t>(dtype_size(d.dtype)) * (d.residual ? 2 : 1) <= nrm::kWarpRowBytes;
  p.sku_.variant = cat(warp ? "warp_rows" : "block_rows", d.residual ? "_residual" : "");
  p.guarantee_ = float_guarantee(d.dtype);
  return p;
}

Status NormPlan::can_implement(const NormArgs& a) const { return check_plan_args(kOp, selected(), operands_, a); }

Status NormPlan::run(cudaStream_t stream, Workspace, const NormArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (writes_nothing(operands_, a)) return {};
  const NormDescriptor& d = desc_;
  auto sh = check_norm(kOp, d);
  if (!sh) return sh.status();
  nrm::NormGeom g;
  const TensorLayout* views[nrm::kViews] = {&a.x, &a.residual, &a.y, &a.h, nullptr, nullptr, nullptr, &a.mean, &a.rstd};
  void* data[nrm::kViews] = {const_cast<void*>(a.x.data), const_cast<void*>(a.residual.data), a.y.data, a.h.data, nullptr, nullptr, nullptr,
                             a.mean.data, a.rstd.data};
  const char* names[nrm::kViews] = {"x", "residual", "y", "h", "", "", "", "mean", "rstd"};
  if (Status s = build(kOp, d, *sh, views, data, names, &g); !s.ok()) return s;
  if (a.weight.data && !merged_stride(a.weight, 0, a.weight.rank, &g.ws)) return merge_view(kOp, "weight", a.weight, 0, &g.ws);
  if (a.bias.data && !merged_stride(a.bias, 0, a.bias.rank, &g.bs)) return merge_view(kOp, "bias", a.bias, 0, &g.bs);
  g.w = a.weight.data;
  g.b = a.bias.data;
  const void* params[2] = {g.w, g.b};
  const int64_t pst[2] = {g.ws, g.bs};
  choose_layout(&g, d.dtype, nrm::kX, nrm::kR, params, pst, 2);
  g.warp = g.staged && g.N * static_cast<int64_t>(dtype_size(d.dtype)) * (g.p[nrm::kR] ? 2 : 1) <= nrm::kWarpRowBytes;
  return cuda_status(nrm::find_norm(d.dtype, param_, false)(g, stream), kOp);
}

// ---------------------------------------------------------------- backward

Result<NormBackwardPlan> NormBackwardPlan::select(const NormBackwardDescriptor& d, const PlanPreference& pref) {
  NormBackwardPlan p;
  if (Status s = begin_select(kOpBwd, d, pref, &p.sku_); !s.ok()) return s;
  auto sh = check_norm(kOpBwd, d);
  if (!sh) return sh.status();
  if (!nrm::find_norm(d.dtype, sh->param, true))
    return error(StatusCode::kInternal, kOpBwd, ": no kernel for ", dtype_name(d.dtype), " with ", dtype_name(sh->param), " parameters");
  p.desc_ = d;
  p.param_ = sh->param;
  p.stat_ = sh->stat;
  const bool layer = d.op == NormKind::kLayerNorm;
  p.operands_.input("x", d.dtype, sh->x);
  if (d.weight) p.operands_.input("weight", sh->param, sh->pshape);
  if (layer) p.operands_.input("mean", sh->stat, sh->sshape);
  p.operands_.input("rstd", sh->stat, sh->sshape);
  p.operands_.input("dy", d.dtype, sh->x);
  if (d.residual) p.operands_.input("dh", d.dtype, sh->x).optional = true;
  p.operands_.output("dx", d.dtype, sh->x);
  if (d.weight) p.operands_.output("dweight", sh->param, sh->pshape);
  if (layer && d.bias) p.operands_.output("dbias", sh->param, sh->pshape);
  if (Status s = resolve_operands<NormBackwardArgs>(kOpBwd, p.operands_); !s.ok()) return s;
  p.groups_ = std::min<int64_t>(sh->rows, nrm::kMaxGroups);  // the grid: fixed, so the partials' order is
  if (d.weight || (layer && d.bias)) {
    int64_t bytes = 0;
    const int64_t acc = d.dtype == DType::f64 ? 8 : 4;
    if (!checked_mul(p.groups_ * 2 * acc, sh->n, &bytes))
      return error(StatusCode::kInvalidProblem, kOpBwd, ": the dweight / dbias partials exceed 2^63 bytes");
    WorkspaceLayout w;
    w.take(static_cast<size_t>(bytes));
    p.workspace_ = w.total();
  }
  if (Status s = check_workspace_budget(kOpBwd, p.workspace_, pref.max_workspace_bytes); !s.ok()) return s;
  p.sku_.op = cat("norm.", enum_name(d.op));
  p.sku_.direction = Direction::kBackward;
  p.sku_.dtype = d.dtype;
  p.sku_.variant = "block_rows";
  p.guarantee_ = float_guarantee(d.dtype);
  return p;
}

Status NormBackwardPlan::can_implement(const NormBackwardArgs& a) const { return check_plan_args(kOpBwd, selected(), operands_, a); }

Status NormBackwardPlan::run(cudaStream_t stream, Workspace ws, const NormBackwardArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (Status s = check_workspace(kOpBwd, ws, workspace_); !s.ok()) return s;
  if (writes_nothing(operands_, a)) return {};
  const NormDescriptor& d = desc_;
  auto sh = check_norm(kOpBwd, d);
  if (!sh) return sh.status();
  nrm::NormGeom g;
  const TensorLayout* views[nrm::kViews] = {&a.x, nullptr, nullptr, nullptr, &a.dy, &a.dh, &a.dx, &a.mean, &a.rstd};
  void* data[nrm::kViews] = {const_cast<void*>(a.x.data), nullptr, nullptr, nullptr, const_cast<void*>(a.dy.data), const_cast<void*>(a.dh.data),
                             a.dx.data, const_cast<void*>(a.mean.data), const_cast<void*>(a.rstd.data)};
  const char* names[nrm::kViews] = {"x", "", "", "", "dy", "dh", "dx", "mean", "rstd"};
  if (Status s = build(kOpBwd, d, *sh, views, data, names, &g); !s.ok()) return s;
  if (a.weight.data && !merged_stride(a.weight, 0, a.weight.rank, &g.ws)) return merge_view(kOpBwd, "weight", a.weight, 0, &g.ws);
  if (a.dweight.data && !merged_stride(a.dweight, 0, a.dweight.rank, &g.dws)) return merge_view(kOpBwd, "dweight", a.dweight, 0, &g.dws);
  if (a.dbias.data && !merged_stride(a.dbias, 0, a.dbias.rank, &g.dbs)) return merge_view(kOpBwd, "dbias", a.dbias, 0, &g.dbs);
  g.w = a.weight.data;
  g.dw = a.dweight.data;
  g.db = a.dbias.data;
  g.groups = groups_;
  g.partials = workspace_ > 0 ? ws.ptr : nullptr;
  const void* params[1] = {g.w};
  const int64_t pst[1] = {g.ws};
  choose_layout(&g, d.dtype, nrm::kX, nrm::kDy, params, pst, 1);
  return cuda_status(nrm::find_norm(d.dtype, param_, true)(g, stream), kOpBwd);
}

}  // namespace baracuda
