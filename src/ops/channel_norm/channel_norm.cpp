// ChannelNormPlan and ChannelNormBackwardPlan: the descriptor's checks, the [N, C, S] geometry
// (each view's spatial axes merged), the chunking and the workspace, the launches.
#include "baracuda/ops/channel_norm.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/checked_math.hpp"
#include "core/cuda_check.hpp"
#include "core/dispatch.hpp"
#include "core/plan_kit.hpp"
#include "core/validate.hpp"
#include "core/workspace.hpp"
#include "ops/channel_norm/channel_norm_geometry.hpp"

namespace baracuda {

namespace {

constexpr std::string_view kOp = "channel_norm";
constexpr std::string_view kOpBwd = "channel_norm_backward";

using FloatDTypes = DTypeList<DType::f32, DType::f16, DType::bf16, DType::f64>;

struct Shapes {
  std::vector<int64_t> x, pshape, sshape;
  int64_t N = 0, C = 0, S = 1, G = 1;
  DType param = DType::f32, stat = DType::f32;
  size_t part_off = 0, cell_off = 0, workspace = 0;
  int64_t chunks = 1, chunk = 0;
  bool warp = true;
};

// The descriptor's checks shared by both plans; shapes, dtypes, the chunking and the workspace
// (backward: partials only where they are read).
Result<Shapes> check_channel_norm(std::string_view op, const ChannelNormDescriptor& d, bool backward) {
  int64_t numel = 0;
  if (Status s = check_shape(op, d.rank, d.shape, 2, &numel); !s.ok()) return s;
  if (Status s = check_dtype(op, "dtype", d.dtype, FloatDTypes{}); !s.ok()) return s;
  Shapes sh;
  sh.param = d.param_dtype.value_or(d.dtype);
  if (sh.param != d.dtype && !(sh.param == DType::f32 && (d.dtype == DType::f16 || d.dtype == DType::bf16)))
    return error(StatusCode::kUnsupported, op, ": param_dtype ", dtype_name(sh.param), " for x of ", dtype_name(d.dtype),
                 " (supported: x's dtype, or f32 for an f16 / bf16 x)");
  sh.stat = d.dtype == DType::f64 ? DType::f64 : DType::f32;
  sh.N = d.shape[0];
  sh.C = d.shape[1];
  for (int a = 0; a < d.rank; ++a) sh.x.push_back(d.shape[a]);
  // S, N·C, N·S, C·S in int64 (an empty x's other extents may be anything: the products are
  // checked before the shape's numel decides anything)
  bool fits = true;
  for (int a = 2; a < d.rank; ++a) fits = fits && checked_mul(sh.S, d.shape[a], &sh.S);
  int64_t prod = 0;
  fits = fits && checked_mul(sh.N, sh.C, &prod) && checked_mul(sh.N, sh.S, &prod) && checked_mul(sh.C, sh.S, &prod);
  if (!fits)
    return error(StatusCode::kInvalidProblem, op, ": shape ", shape_string(std::span<const int64_t>(d.shape, static_cast<size_t>(d.rank))),
                 ": the products of N, C and the spatial extents exceed int64");
  sh.pshape = {sh.C};
  if (!(std::isfinite(d.eps) && d.eps >= 0)) return error(StatusCode::kInvalidProblem, op, ": eps = ", d.eps, " must be finite and >= 0");
  if (!std::isfinite(d.momentum)) return error(StatusCode::kInvalidProblem, op, ": momentum = ", d.momentum, " must be finite");
  const bool group = d.op == ChannelNormKind::kGroupNorm;
  if (group) {
    if (d.groups < 1 || sh.C % d.groups != 0)
      return error(StatusCode::kInvalidProblem, op, ": groups = ", d.groups, " must be >= 1 and divide C = ", sh.C);
    sh.G = d.groups;
    if (d.running_stats || !d.training)
      return error(StatusCode::kInvalidProblem, op, ": group_norm has no running stats (running_stats = false, training = true)");
  }
  if (!d.training && !d.running_stats)
    return error(StatusCode::kInvalidProblem, op, ": training = false normalizes with the running stats: set running_stats");
  const int64_t cells = sh.N * sh.C;
  const int64_t M = d.op == ChannelNormKind::kBatchNorm ? sh.N * sh.S : group ? sh.C / sh.G * sh.S : sh.S;
  if (cells > 0 && d.training && M == 0)
    return error(StatusCode::kInvalidProblem, op, ": the statistics' sets hold no element (a 0 spatial extent): no mean or var is defined");
  if (cells > 0 && d.training && d.running_stats && M == 1)
    return error(StatusCode::kInvalidProblem, op, ": expected more than 1 value per ", d.op == ChannelNormKind::kBatchNorm ? "channel" : "instance",
                 " when training with running stats (the unbiased variance of one value)");
  if (d.op == ChannelNormKind::kBatchNorm) sh.sshape = {sh.C};
  else sh.sshape = {sh.N, group ? sh.G : sh.C};
  // the chunking (select assumes x contiguous: a warp per chunk of a cell; run redoes the choice
  // from the strides, which changes only the chunk count's target)
  sh.warp = true;
  const int64_t target = int64_t{132} * 32;  // warps in flight for the partials pass
  sh.chunks = cells == 0 ? 1 : std::clamp<int64_t>(ceil_div(target, cells), 1, std::max<int64_t>(1, ceil_div(sh.S, 2048)));
  sh.chunk = ceil_div(sh.S, sh.chunks);
  if (sh.chunks > 1) sh.chunk = ceil_div(sh.chunk, 8) * 8;  // whole 16-byte pieces of every dtype
  sh.chunks = sh.chunk == 0 ? 1 : ceil_div(sh.S, sh.chunk);
  const int64_t acc = static_cast<int64_t>(dtype_size(sh.stat));
  const bool partials = backward ? (d.training || d.weight || d.bias) : d.training;
  int64_t part_bytes = 0, cell_bytes = 0;
  if ((partials && !checked_mul(cells, sh.chunks * 2 * acc, &part_bytes)) || !checked_mul(cells, 4 * acc, &cell_bytes))
    return error(StatusCode::kInvalidProblem, op, ": the workspace exceeds 2^63 bytes");
  // a chunk count that may grow at run (the thread mapping): reserve for the larger of the two
  WorkspaceLayout w;
  sh.part_off = w.take(static_cast<size_t>(part_bytes) * (partials ? 2 : 0));
  sh.cell_off = w.take(static_cast<size_t>(cell_bytes));
  sh.workspace = w.total();
  return sh;
}

Status check_spatial(std::string_view op, const char* name, const TensorLayout& v, int64_t* stride) {
  if (merged_stride(v, 2, v.rank, stride)) return {};
  return error(StatusCode::kUnsupported, op, ": ", name, "'s spatial axes do not merge into one axis (strides of axes 2..", v.rank - 1,
               " are not nested)");
}

Status set_view(std::string_view op, const char* name, const TensorLayout& v, int k, cn::CnGeom* g) {
  g->sn[k] = v.stride[0];
  g->sc[k] = v.stride[1];
  return check_spatial(op, name, v, &g->ss[k]);
}

// The stride of a [C] view (rank 1), or of a statistics view's two axes (batch_norm's [C]: s1).
void stat_strides(const ChannelNormDescriptor& d, const TensorLayout& v, int64_t* s0, int64_t* s1) {
  if (d.op == ChannelNormKind::kBatchNorm) *s0 = 0, *s1 = v.stride[0];
  else *s0 = v.stride[0], *s1 = v.stride[1];
}

// The geometry common to both directions once the views are set: the mapping, the chunking
// (as select's, or finer for the thread mapping) and the element pass's divisors.
void finish_geometry(const ChannelNormDescriptor& d, const Shapes& sh, bool backward, Workspace ws, cn::CnGeom* g) {
  g->kind = d.op == ChannelNormKind::kBatchNorm ? cn::kBatch : d.op == ChannelNormKind::kGroupNorm ? cn::kGroup : cn::kInstance;
  g->N = sh.N, g->C = sh.C, g->S = sh.S, g->G = sh.G, g->Cg = sh.C / sh.G;
  g->training = d.training, g->running = d.running_stats;
  g->momentum = d.momentum, g->eps = d.eps;
  const int reads = backward ? 2 : 1;
  // a warp per chunk where the cells are long unit-stride runs; else a thread per chunk (adjacent
  // channels on adjacent threads: channels_last, and [N, C] with S = 1)
  g->warp = g->ss[cn::kX] == 1 && (reads == 1 || g->ss[cn::kYd] == 1) && sh.S >= 32;
  g->chunks = sh.chunks, g->chunk = sh.chunk;
  const int64_t cells = sh.N * sh.C;
  if (!g->warp && cells > 0 && sh.S > 0) {  // a thread per chunk: up to twice select's chunk count
    const int64_t want = std::clamp<int64_t>(ceil_div(int64_t{132} * 1024, cells), 1, std::max<int64_t>(1, ceil_div(sh.S, 64)));
    const int64_t chunks = std::min(want, sh.chunks * 2);
    g->chunk = ceil_div(sh.S, chunks);
    g->chunks = ceil_div(sh.S, g->chunk);
  }
  g->channels_last = g->sc[cn::kX] < g->ss[cn::kX] && sh.C > 1;
  const int64_t inner = g->channels_last ? sh.C : sh.S, mid = g->channels_last ? sh.S : sh.C;
  int64_t total = 0;
  // (an empty tensor's other extents may be past 2^31: the divisors must fit FastDiv too)
  g->small = checked_mul(cells, sh.S, &total) && total < (int64_t{1} << 31) && inner > 0 && mid > 0 && inner < (int64_t{1} << 31) &&
             mid < (int64_t{1} << 31);
  if (g->small) {
    g->inner_div = detail::FastDiv(static_cast<uint32_t>(inner));
    g->mid_div = detail::FastDiv(static_cast<uint32_t>(mid));
  }
  // 16-byte pieces: the piece axis unit-stride in every view, the other strides whole pieces,
  // 16-byte aligned data (views: x, y | x, dy, dx)
  const int64_t V = 16 / static_cast<int64_t>(dtype_size(d.dtype));
  const void* ptrs[cn::kViews] = {g->x, backward ? g->dy : g->y, g->dx};
  const int nviews = backward ? 3 : 2;
  auto pieces_along = [&](bool spatial, int views) {  // spatial: pieces along s (else along c)
    for (int k = 0; k < views; ++k) {
      const int64_t unit = spatial ? g->ss[k] : g->sc[k], other = spatial ? g->sc[k] : g->ss[k];
      if (unit != 1 || g->sn[k] % V != 0 || (other % V != 0 && (spatial ? sh.C : sh.S) > 1) ||
          reinterpret_cast<uintptr_t>(ptrs[k]) % 16 != 0)
        return false;
    }
    return true;
  };
  const int reads_views = backward ? 2 : 1;
  g->vec_p = g->warp ? sh.S % V == 0 && g->chunk % V == 0 && pieces_along(true, reads_views)
                     : sh.C % V == 0 && pieces_along(false, reads_views);
  g->vec_e = (g->channels_last ? sh.C % V == 0 && pieces_along(false, nviews) : sh.S % V == 0 && pieces_along(true, nviews));
  g->part = static_cast<char*>(ws.ptr) + sh.part_off;
  g->cell = static_cast<char*>(ws.ptr) + sh.cell_off;
}

std::string variant_of(const ChannelNormDescriptor& d) {
  return cat(enum_name(d.op), d.training ? "" : ".eval");
}

}  // namespace

// ---------------------------------------------------------------- forward

Result<ChannelNormPlan> ChannelNormPlan::select(const ChannelNormDescriptor& d, const PlanPreference& pref) {
  ChannelNormPlan p;
  if (Status s = begin_select(kOp, d, pref, &p.sku_); !s.ok()) return s;
  auto sh = check_channel_norm(kOp, d, false);
  if (!sh) return sh.status();
  if (!cn::find_channel_norm(d.dtype, sh->param, false))
    return error(StatusCode::kInternal, kOp, ": no kernel for ", dtype_name(d.dtype), " / ", dtype_name(sh->param));
  p.desc_ = d;
  p.param_ = sh->param;
  p.stat_ = sh->stat;
  p.operands_.input("x", d.dtype, sh->x);
  if (d.weight) p.operands_.input("weight", sh->param, sh->pshape);
  if (d.bias) p.operands_.input("bias", sh->param, sh->pshape);
  if (d.running_stats) {
    p.operands_.add("running_mean", d.training ? OperandRole::kInOut : OperandRole::kIn, sh->param, sh->pshape);
    p.operands_.add("running_var", d.training ? OperandRole::kInOut : OperandRole::kIn, sh->param, sh->pshape);
  }
  p.operands_.output("y", d.dtype, sh->x);
  p.operands_.output("mean", sh->stat, sh->sshape);
  p.operands_.output("rstd", sh->stat, sh->sshape);
  if (Status s = resolve_operands<ChannelNormArgs>(kOp, p.operands_); !s.ok()) return s;
  p.workspace_ = sh->workspace;
  if (Status s = check_workspace_budget(kOp, p.workspace_, pref.max_workspace_bytes); !s.ok()) return s;
  p.sku_.op = cat("channel_norm.", enum_name(d.op));
  p.sku_.direction = Direction::kForward;
  p.sku_.dtype = d.dtype;
  p.sku_.variant = variant_of(d);
  p.guarantee_ = float_guarantee(d.dtype);
  return p;
}

Status ChannelNormPlan::can_implement(const ChannelNormArgs& a) const {
  if (Status s = check_plan_args(kOp, selected(), operands_, a); !s.ok()) return s;
  int64_t st = 0;
  if (Status s = check_spatial(kOp, "x", a.x, &st); !s.ok()) return s;
  return check_spatial(kOp, "y", a.y, &st);
}

Status ChannelNormPlan::run(cudaStream_t stream, Workspace ws, const ChannelNormArgs& a) const {
  if (Status s = check_plan_args(kOp, selected(), operands_, a); !s.ok()) return s;
  if (Status s = check_workspace(kOp, ws, workspace_); !s.ok()) return s;
  if (writes_nothing(operands_, a)) return {};
  const ChannelNormDescriptor& d = desc_;
  auto sh = check_channel_norm(kOp, d, false);
  if (!sh) return sh.status();
  cn::CnGeom g;
  if (Status s = set_view(kOp, "x", a.x, cn::kX, &g); !s.ok()) return s;
  if (Status s = set_view(kOp, "y", a.y, cn::kYd, &g); !s.ok()) return s;
  g.x = a.x.data;
  g.y = a.y.data;
  g.mean = a.mean.data;
  g.rstd = a.rstd.data;
  stat_strides(d, a.mean, &g.ms0, &g.ms1);
  stat_strides(d, a.rstd, &g.rs0, &g.rs1);
  g.w = d.weight ? a.weight.data : nullptr;
  g.b = d.bias ? a.bias.data : nullptr;
  if (d.weight) g.wst = a.weight.stride[0];
  if (d.bias) g.bst = a.bias.stride[0];
  if (d.running_stats) {
    g.rm = a.running_mean.data, g.rv = a.running_var.data;
    g.rmst = a.running_mean.stride[0], g.rvst = a.running_var.stride[0];
  }
  finish_geometry(d, *sh, false, ws, &g);
  return cuda_status(cn::find_channel_norm(d.dtype, param_, false)(g, stream), kOp);
}

// ---------------------------------------------------------------- backward

Result<ChannelNormBackwardPlan> ChannelNormBackwardPlan::select(const ChannelNormBackwardDescriptor& d, const PlanPreference& pref) {
  ChannelNormBackwardPlan p;
  if (Status s = begin_select(kOpBwd, d, pref, &p.sku_); !s.ok()) return s;
  auto sh = check_channel_norm(kOpBwd, d, true);
  if (!sh) return sh.status();
  if (!cn::find_channel_norm(d.dtype, sh->param, true))
    return error(StatusCode::kInternal, kOpBwd, ": no kernel for ", dtype_name(d.dtype), " / ", dtype_name(sh->param));
  p.desc_ = d;
  p.param_ = sh->param;
  p.stat_ = sh->stat;
  p.operands_.input("x", d.dtype, sh->x);
  if (d.weight) p.operands_.input("weight", sh->param, sh->pshape);
  p.operands_.input("mean", sh->stat, sh->sshape);
  p.operands_.input("rstd", sh->stat, sh->sshape);
  p.operands_.input("dy", d.dtype, sh->x);
  p.operands_.output("dx", d.dtype, sh->x);
  if (d.weight) p.operands_.output("dweight", sh->param, sh->pshape);
  if (d.bias) p.operands_.output("dbias", sh->param, sh->pshape);
  if (Status s = resolve_operands<ChannelNormBackwardArgs>(kOpBwd, p.operands_); !s.ok()) return s;
  p.workspace_ = sh->workspace;
  if (Status s = check_workspace_budget(kOpBwd, p.workspace_, pref.max_workspace_bytes); !s.ok()) return s;
  p.sku_.op = cat("channel_norm.", enum_name(d.op));
  p.sku_.direction = Direction::kBackward;
  p.sku_.dtype = d.dtype;
  p.sku_.variant = variant_of(d);
  p.guarantee_ = float_guarantee(d.dtype);
  return p;
}

Status ChannelNormBackwardPlan::can_implement(const ChannelNormBackwardArgs& a) const {
  if (Status s = check_plan_args(kOpBwd, selected(), operands_, a); !s.ok()) return s;
  int64_t st = 0;
  if (Status s = check_spatial(kOpBwd, "x", a.x, &st); !s.ok()) return s;
  if (Status s = check_spatial(kOpBwd, "dy", a.dy, &st); !s.ok()) return s;
  return check_spatial(kOpBwd, "dx", a.dx, &st);
}

Status ChannelNormBackwardPlan::run(cudaStream_t stream, Workspace ws, const ChannelNormBackwardArgs& a) const {
  if (Status s = check_plan_args(kOpBwd, selected(), operands_, a); !s.ok()) return s;
  if (Status s = check_workspace(kOpBwd, ws, workspace_); !s.ok()) return s;
  if (writes_nothing(operands_, a)) return {};
  const ChannelNormDescriptor& d = desc_;
  auto sh = check_channel_norm(kOpBwd, d, true);
  if (!sh) return sh.status();
  cn::CnGeom g;
  if (Status s = set_view(kOpBwd, "x", a.x, cn::kX, &g); !s.ok()) return s;
  if (Status s = set_view(kOpBwd, "dy", a.dy, cn::kYd, &g); !s.ok()) return s;
  if (Status s = set_view(kOpBwd, "dx", a.dx, cn::kDx, &g); !s.ok()) return s;
  g.x = a.x.data;
  g.dy = a.dy.data;
  g.dx = a.dx.data;
  g.mean = const_cast<void*>(a.mean.data);
  g.rstd = const_cast<void*>(a.rstd.data);
  stat_strides(d, a.mean, &g.ms0, &g.ms1);
  stat_strides(d, a.rstd, &g.rs0, &g.rs1);
  g.w = d.weight ? a.weight.data : nullptr;
  if (d.weight) g.wst = a.weight.stride[0];
  g.dw = d.weight ? a.dweight.data : nullptr;
  g.db = d.bias ? a.dbias.data : nullptr;
  if (g.dw) g.dwst = a.dweight.stride[0];
  if (g.db) g.dbst = a.dbias.stride[0];
  finish_geometry(d, *sh, true, ws, &g);
  return cuda_status(cn::find_channel_norm(d.dtype, param_, true)(g, stream), kOpBwd);
}

}  // namespace baracuda
