// NormalizePlan and NormalizeBackwardPlan: the descriptor's checks, the operands, the line
// geometry of every view (the line axes merged into one strided run), the path, the launch.
#include <cmath>

#include "baracuda/ops/normalize.hpp"
#include "core/cuda_check.hpp"
#include "core/dispatch.hpp"
#include "core/plan_kit.hpp"
#include "core/validate.hpp"
#include "ops/normalize/normalize_geometry.hpp"

namespace baracuda {

namespace {

constexpr std::string_view kOp = "normalize";
constexpr std::string_view kOpBwd = "normalize_backward";

using FloatDTypes = DTypeList<DType::f32, DType::f16, DType::bf16, DType::f64>;

struct Shapes {
  std::vector<int64_t> x, per_line;  // per_line: g / norm (weight_norm): 1 on every axis but dim
  int axis = 0;                      // normalize: the line axis; weight_norm: the axis kept
  int64_t lines = 0, N = 0;
  DType acc = DType::f32;
  bool wn = false;
};

Result<Shapes> check_normalize(std::string_view op, const NormalizeDescriptor& d) {
  int64_t numel = 0;
  if (Status s = check_shape(op, d.rank, d.shape, 1, &numel); !s.ok()) return s;
  if (Status s = check_dtype(op, "dtype", d.dtype, FloatDTypes{}); !s.ok()) return s;
  const int r = d.rank;
  if (d.dim < -r || d.dim >= r)
    return error(StatusCode::kInvalidProblem, op, ": dim = ", d.dim, " is out of range for rank ", r, " (expected [", -r, ", ", r - 1, "])");
  Shapes sh;
  sh.wn = d.op == NormalizeKind::kWeightNorm;
  sh.axis = d.dim < 0 ? d.dim + r : d.dim;
  if (sh.wn) {
    if (sh.axis != 0 && sh.axis != r - 1)
      return error(StatusCode::kUnsupported, op, ": weight_norm over dim = ", d.dim, " (axis ", sh.axis, " of rank ", r,
                   "): only the first or the last axis (PyTorch's fused kernel's two; move the axis first)");
    if (d.p != 2.0) return error(StatusCode::kInvalidProblem, op, ": weight_norm's p = ", d.p, " must be 2");
  } else {
    if (!(d.p > 0.0)) return error(StatusCode::kUnsupported, op, ": p = ", d.p, " is not supported (p > 0, inf allowed)");
    if (!(std::isfinite(d.eps) && d.eps >= 0.0)) return error(StatusCode::kInvalidProblem, op, ": eps = ", d.eps, " must be finite and >= 0");
  }
  for (int a = 0; a < r; ++a) {
    sh.x.push_back(d.shape[a]);
    sh.per_line.push_back(a == sh.axis ? d.shape[a] : 1);
  }
  const int64_t kept = d.shape[sh.axis];
  if (sh.wn) {
    sh.lines = kept;
    sh.N = kept == 0 ? 0 : numel / kept;
    if (sh.N == 0 && sh.lines > 0)
      return error(StatusCode::kInvalidProblem, op, ": weight_norm: v has no element besides axis ", sh.axis, " (a 0 extent): no norm is defined");
  } else {
    sh.N = kept;
    sh.lines = kept == 0 ? 0 : numel / kept;
  }
  sh.acc = acc_of(d.dtype);
  return sh;
}

int path_of(bool unit, int64_t N) {
  if (!unit) return N >= nrmz::kColumnMinN ? nrmz::kColumnBlocks : nrmz::kColumns;
  return N <= nrmz::kWarpMaxN ? nrmz::kWarpRows : nrmz::kBlockRows;
}

const char* path_name(int path) {
  static const char* const names[] = {"warp_rows", "block_rows", "columns", "column_blocks"};
  return names[path];
}

// The geometry of a call: line views (x, y, dy, dx) and per-line views (g, norm, dg), null when absent.
Status build(std::string_view op, const NormalizeDescriptor& d, const Shapes& sh, const TensorLayout* const* views,
             const char* const* names, nrmz::NormalizeGeom* g) {
  g->lines = sh.lines;
  g->N = sh.N;
  g->weight_norm = sh.wn;
  g->p_norm = d.p;
  g->eps = d.eps;
  const int r = d.rank;
  if (sh.wn) {  // one line axis: the kept one
    g->ko = 1;
    g->osize[0] = d.shape[sh.axis];
  } else {
    int k = 0;
    for (int a = 0; a < r; ++a)
      if (a != sh.axis) g->osize[k++] = d.shape[a];
    g->ko = k;
  }
  bool unit = sh.N > 1;
  for (int v = 0; v < nrmz::kViews; ++v) {
    const TensorLayout* t = views[v];
    if (!t) continue;
    const bool per_line = v == nrmz::kG || v == nrmz::kNorm || v == nrmz::kDg;
    if (sh.wn) {
      g->os[v][0] = t->stride[sh.axis];
      if (!per_line) {
        const int from = sh.axis == 0 ? 1 : 0, to = sh.axis == 0 ? r : r - 1;
        if (!merged_stride(*t, from, to, &g->s[v]))
          return error(StatusCode::kUnsupported, op, ": ", names[v], "'s axes other than dim do not merge into one strided run (strides ",
                       "of axes ", from, "..", to - 1, " are not nested)");
      }
    } else {
      int k = 0;
      for (int a = 0; a < r; ++a)
        if (a != sh.axis) g->os[v][k++] = t->stride[a];
      if (!per_line) g->s[v] = t->stride[sh.axis];
    }
    if (!per_line && g->s[v] != 1) unit = false;
  }
  g->path = path_of(unit, sh.N);
  return {};
}

// The sku's path for contiguous views: the line is unit-stride when it runs along the last axes.
int contiguous_path(const Shapes& sh, const NormalizeDescriptor& d) {
  bool unit = sh.N > 1;
  if (sh.wn) unit = unit && sh.axis == 0;
  else
    for (int a = sh.axis + 1; a < d.rank; ++a)
      if (d.shape[a] > 1) unit = false;
  return path_of(unit, sh.N);
}

}  // namespace

Result<NormalizePlan> NormalizePlan::select(const NormalizeDescriptor& d, const PlanPreference& pref) {
  NormalizePlan p;
  if (Status s = begin_select(kOp, d, pref, &p.sku_); !s.ok()) return s;
  auto sh = check_normalize(kOp, d);
  if (!sh) return sh.status();
  if (!nrmz::find_normalize(d.dtype, false)) return error(StatusCode::kInternal, kOp, ": no kernel for ", dtype_name(d.dtype));
  p.desc_ = d;
  p.operands_.input("input", d.dtype, sh->x);
  if (sh->wn) p.operands_.input("g", d.dtype, sh->per_line);
  p.operands_.output("output", d.dtype, sh->x);
  if (sh->wn) p.operands_.output("norm", sh->acc, sh->per_line).optional = true;
  if (Status s = resolve_operands<NormalizeArgs>(kOp, p.operands_); !s.ok()) return s;
  p.sku_.op = cat("normalize.", enum_name(d.op));
  p.sku_.direction = Direction::kForward;
  p.sku_.dtype = d.dtype;
  p.sku_.variant = path_name(contiguous_path(*sh, d));
  p.guarantee_ = float_guarantee(d.dtype);
  return p;
}

Status NormalizePlan::can_implement(const NormalizeArgs& a) const { return check_plan_args(kOp, selected(), operands_, a); }

Status NormalizePlan::run(cudaStream_t stream, Workspace, const NormalizeArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (writes_nothing(operands_, a)) return {};
  auto sh = check_normalize(kOp, desc_);
  if (!sh) return sh.status();
  const TensorLayout* views[nrmz::kViews] = {&a.input, &a.output, nullptr, nullptr, sh->wn ? &a.g : nullptr,
                                             a.norm.data ? &a.norm : nullptr, nullptr};
  const char* names[nrmz::kViews] = {"input", "output", "", "", "g", "norm", ""};
  nrmz::NormalizeGeom g;
  if (Status s = build(kOp, desc_, *sh, views, names, &g); !s.ok()) return s;
  g.p[nrmz::kX] = const_cast<void*>(a.input.data);
  g.p[nrmz::kY] = a.output.data;
  g.p[nrmz::kG] = sh->wn ? const_cast<void*>(a.g.data) : nullptr;
  g.p[nrmz::kNorm] = a.norm.data;
  return cuda_status(nrmz::find_normalize(desc_.dtype, false)(g, stream), kOp);
}

Result<NormalizeBackwardPlan> NormalizeBackwardPlan::select(const NormalizeBackwardDescriptor& d, const PlanPreference& pref) {
  NormalizeBackwardPlan p;
  if (Status s = begin_select(kOpBwd, d, pref, &p.sku_); !s.ok()) return s;
  auto sh = check_normalize(kOpBwd, d);
  if (!sh) return sh.status();
  if (!nrmz::find_normalize(d.dtype, true)) return error(StatusCode::kInternal, kOpBwd, ": no kernel for ", dtype_name(d.dtype));
  p.desc_ = d;
  p.operands_.input("input", d.dtype, sh->x);
  if (sh->wn) {
    p.operands_.input("g", d.dtype, sh->per_line);
    p.operands_.input("norm", sh->acc, sh->per_line);
  }
  p.operands_.input("doutput", d.dtype, sh->x);
  p.operands_.output("dinput", d.dtype, sh->x);
  if (sh->wn) p.operands_.output("dg", d.dtype, sh->per_line).optional = true;
  if (Status s = resolve_operands<NormalizeBackwardArgs>(kOpBwd, p.operands_); !s.ok()) return s;
  p.sku_.op = cat("normalize.", enum_name(d.op));
  p.sku_.direction = Direction::kBackward;
  p.sku_.dtype = d.dtype;
  p.sku_.variant = path_name(contiguous_path(*sh, d));
  p.guarantee_ = float_guarantee(d.dtype);
  return p;
}

Status NormalizeBackwardPlan::can_implement(const NormalizeBackwardArgs& a) const { return check_plan_args(kOpBwd, selected(), operands_, a); }

Status NormalizeBackwardPlan::run(cudaStream_t stream, Workspace, const NormalizeBackwardArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (writes_nothing(operands_, a)) return {};
  auto sh = check_normalize(kOpBwd, desc_);
  if (!sh) return sh.status();
  const TensorLayout* views[nrmz::kViews] = {&a.input,        nullptr, &a.doutput, &a.dinput, sh->wn ? &a.g : nullptr,
                                             sh->wn ? &a.norm : nullptr, a.dg.data ? &a.dg : nullptr};
  const char* names[nrmz::kViews] = {"input", "", "doutput", "dinput", "g", "norm", "dg"};
  nrmz::NormalizeGeom g;
  if (Status s = build(kOpBwd, desc_, *sh, views, names, &g); !s.ok()) return s;
  g.p[nrmz::kX] = const_cast<void*>(a.input.data);
  g.p[nrmz::kDy] = const_cast<void*>(a.doutput.data);
  g.p[nrmz::kDx] = a.dinput.data;
  if (sh->wn) g.p[nrmz::kG] = const_cast<void*>(a.g.data), g.p[nrmz::kNorm] = const_cast<void*>(a.norm.data);
  g.p[nrmz::kDg] = a.dg.data;
  return cuda_status(nrmz::find_normalize(desc_.dtype, true)(g, stream), kOpBwd);
}

}  // namespace baracuda
