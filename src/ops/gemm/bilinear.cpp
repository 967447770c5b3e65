// Bilinear plans: torch.nn.functional.bilinear as chains of canonical GEMMs on GemmCore.
#include "baracuda/ops/bilinear.hpp"

#include <algorithm>
#include <bit>

#include "core/arch.hpp"
#include "core/dispatch.hpp"
#include "core/plan_kit.hpp"
#include "core/validate.hpp"
#include "core/workspace.hpp"
#include "ops/gemm/gemm_core.hpp"

namespace baracuda {

namespace detail {

struct BilinearExec {
  int64_t B = 0, I = 0, J = 0, O = 0;
  int64_t x1_b = 0, x1_i = 0, x2_b = 0, x2_j = 0, y_b = 0, y_o = 0;  // strides of the folded views
  GemmCore u, y;                    // forward: U = x1·W[o] (batched over o), out = x2·U[b]ᵀ
  GemmCore t, dx1, dx2, g, dw;      // backward
  int64_t scratch_offset = 0;       // the GEMMs' own workspace starts here (after the buffer)
  size_t colsum_ws = 0;
  size_t workspace = 0;
  int arch = 0;
  TensorLayout x1_grad, x2_grad, w_grad, bias_grad;
};

}  // namespace detail

using detail::GemmAxis;
using detail::GemmCanon;
using detail::GemmCore;
using detail::GemmCoreOptions;
using detail::kOpA;
using detail::kOpB;
using detail::kOpD;

namespace {

constexpr std::string_view kOp = "bilinear";
constexpr std::string_view kOpBwd = "bilinear_backward";

// The leading dims of t (all but the last) as one axis: extent and stride; false if they do not nest.
bool fold_leading(const TensorLayout& t, int64_t* ext, int64_t* stride) {
  *ext = 1;
  *stride = 0;
  int64_t inner_ext = 1, inner_stride = 0;
  bool have = false;
  for (int i = t.rank - 2; i >= 0; --i) {
    *ext *= t.shape[i];
    if (t.shape[i] == 1) continue;
    if (have && t.stride[i] != inner_stride * inner_ext) return false;
    if (!have) *stride = t.stride[i];
    have = true;
    inner_ext = t.shape[i];
    inner_stride = t.stride[i];
  }
  return true;
}

GemmAxis axis(int64_t ext, int64_t sa, int64_t sb, int64_t sd) {
  GemmAxis x;
  x.ext = ext;
  if (ext > 1) x.s[kOpA] = sa, x.s[kOpB] = sb, x.s[kOpD] = sd;
  return x;
}

// A one-batch-axis canonical problem.
GemmCanon canon(DType dt, GemmAxis batch, GemmAxis m, GemmAxis n, GemmAxis k) {
  GemmCanon c;
  c.a_dtype = c.b_dtype = c.d_dtype = dt;
  c.nb = 1;
  c.batch[0] = batch;
  c.m = m, c.n = n, c.k = k;
  // K = 1 outer products: any stride addresses one element
  if (k.ext == 1) c.k.s[kOpA] = c.k.s[kOpB] = 1;
  return c;
}

Result<std::shared_ptr<detail::BilinearExec>> build(std::string_view op, const BilinearDescriptor& d,
                                                    const PlanPreference& pref, bool backward) {
  for (auto [name, t] : {std::pair<const char*, const TensorLayout*>{"x1", &d.x1}, {"x2", &d.x2}, {"weight", &d.weight},
                         {"out", &d.out}})
    if (Status s = check_layout(op, name, *t); !s.ok()) return s;
  if (d.has_bias)
    if (Status s = check_layout(op, "bias", d.bias); !s.ok()) return s;
  const DType dt = d.x1.dtype;
  if (Status s = check_dtype(op, "x1.dtype", dt, FloatDTypes{}); !s.ok()) return s;
  for (auto [name, t] : {std::pair<const char*, const TensorLayout*>{"x2", &d.x2}, {"weight", &d.weight}, {"out", &d.out},
                         {"bias", d.has_bias ? &d.bias : nullptr}})
    if (t && t->dtype != dt)
      return error(StatusCode::kInvalidProblem, op, ": ", name, " dtype ", dtype_name(t->dtype), " differs from x1's ", dtype_name(dt));
  if (d.pointer_alignment < 1 || d.pointer_alignment > 256 || !std::has_single_bit(static_cast<unsigned>(d.pointer_alignment)))
    return error(StatusCode::kInvalidProblem, op, ": pointer_alignment = ", d.pointer_alignment, " must be a power of two in [1, 256]");
  if (d.weight.rank != 3)
    return error(StatusCode::kInvalidProblem, op, ": weight ", shape_string(d.weight), " must be [O, I, J]");
  const int64_t O = d.weight.shape[0], I = d.weight.shape[1], J = d.weight.shape[2];
  if (d.x1.rank < 1 || d.x2.rank != d.x1.rank || d.out.rank != d.x1.rank)
    return error(StatusCode::kInvalidProblem, op, ": x1 ", shape_string(d.x1), ", x2 ", shape_string(d.x2), " and out ",
                 shape_string(d.out), " must have the same rank >= 1");
  for (int i = 0; i + 1 < d.x1.rank; ++i)
    if (d.x2.shape[i] != d.x1.shape[i] || d.out.shape[i] != d.x1.shape[i])
      return error(StatusCode::kInvalidProblem, op, ": leading dims of x1 ", shape_string(d.x1), ", x2 ", shape_string(d.x2),
                   " and out ", shape_string(d.out), " differ");
  const int r = d.x1.rank;
  if (d.x1.shape[r - 1] != I || d.x2.shape[r - 1] != J || d.out.shape[r - 1] != O)
    return error(StatusCode::kInvalidProblem, op, ": x1 ", shape_string(d.x1), " [.., I], x2 ", shape_string(d.x2),
                 " [.., J] and out ", shape_string(d.out), " [.., O] do not match weight ", shape_string(d.weight));
  if (d.has_bias && (d.bias.rank != 1 || d.bias.shape[0] != O))
    return error(StatusCode::kInvalidProblem, op, ": bias ", shape_string(d.bias), " must be [", O, "]");
  if (Status s = check_no_internal_overlap(op, "out", d.out); !s.ok()) return s;

  auto ex = std::make_shared<detail::BilinearExec>();
  ex->O = O, ex->I = I, ex->J = J;
  int64_t B2 = 0, By = 0;
  if (!fold_leading(d.x1, &ex->B, &ex->x1_b) || !fold_leading(d.x2, &B2, &ex->x2_b) || !fold_leading(d.out, &By, &ex->y_b))
    return error(StatusCode::kUnsupported, op, ": the leading dims of x1, x2 and out must each fold into one axis");
  ex->x1_i = d.x1.stride[r - 1], ex->x2_j = d.x2.stride[r - 1], ex->y_o = d.out.stride[r - 1];
  const int64_t B = ex->B;
  const int64_t w_o = d.weight.stride[0], w_i = d.weight.stride[1], w_j = d.weight.stride[2];
  auto arch = resolve_arch(op, pref);
  if (!arch) return arch.status();
  ex->arch = *arch;

  GemmCoreOptions o;
  o.pointer_alignment = d.pointer_alignment;
  auto make = [&](const GemmCanon& c, const GemmCoreOptions& opt) { return GemmCore::select(op, c, opt, pref, *arch); };
  const int64_t es = static_cast<int64_t>(dtype_size(dt));
  int64_t buf = B * O * std::max(I, J) * es;
  buf = (buf + 255) / 256 * 256;
  ex->scratch_offset = buf;
  size_t scratch = 0;

  // U[b, o, j] = Σ_i x1[b, i] W[o, i, j]   (batch o; U contiguous [B, O, J])
  auto u = make(canon(dt, axis(O, 0, w_o, J), axis(B, ex->x1_b, 0, O * J), axis(J, 0, w_j, 1), axis(I, ex->x1_i, w_i, 0)), o);
  if (!u) return u.status();
  ex->u = std::move(*u);
  scratch = std::max(scratch, ex->u.workspace);
  if (!backward) {
    // out[b, o] = Σ_j x2[b, j] U[b, o, j] (+ bias[o])   (batch b, M = 1)
    GemmCoreOptions oy = o;
    oy.has_bias = d.has_bias;
    oy.bias_dtype = dt;
    oy.bias_stride = d.has_bias ? d.bias.stride[0] : 1;
    if (d.has_bias && oy.bias_stride != 1 && O > 1) oy.epilogue = GemmEpilogueImpl::kSeparate;
    auto y = make(canon(dt, axis(B, ex->x2_b, O * J, ex->y_b), axis(1, 0, 0, 0), axis(O, 0, J, ex->y_o),
                        axis(J, ex->x2_j, 1, 0)),
                  oy);
    if (!y) return y.status();
    ex->y = std::move(*y);
    scratch = std::max(scratch, ex->y.workspace);
  } else {
    ex->x1_grad = d.x1.contiguous(), ex->x2_grad = d.x2.contiguous(), ex->w_grad = d.weight.contiguous();
    if (d.has_bias) ex->bias_grad = d.bias.contiguous();
    const int64_t dy_b = ex->y_b, dy_o = ex->y_o;  // d_out has out's layout
    // dx2[b, j] = Σ_o d_out[b, o] U[b, o, j]
    auto dx2 = make(canon(dt, axis(B, dy_b, O * J, J), axis(1, 0, 0, 0), axis(J, 0, 1, 1), axis(O, dy_o, J, 0)), o);
    if (!dx2) return dx2.status();
    ex->dx2 = std::move(*dx2);
    // T[b, o, i] = Σ_j x2[b, j] W[o, i, j]   (batch o; T contiguous [B, O, I])
    auto t = make(canon(dt, axis(O, 0, w_o, I), axis(B, ex->x2_b, 0, O * I), axis(I, 0, w_i, 1), axis(J, ex->x2_j, w_j, 0)), o);
    if (!t) return t.status();
    ex->t = std::move(*t);
    // dx1[b, i] = Σ_o d_out[b, o] T[b, o, i]
    auto dx1 = make(canon(dt, axis(B, dy_b, O * I, I), axis(1, 0, 0, 0), axis(I, 0, 1, 1), axis(O, dy_o, I, 0)), o);
    if (!dx1) return dx1.status();
    ex->dx1 = std::move(*dx1);
    // G[b, o, j] = d_out[b, o] x2[b, j]   (batch b, K = 1)
    auto g = make(canon(dt, axis(B, dy_b, ex->x2_b, O * J), axis(O, dy_o, 0, J), axis(J, 0, ex->x2_j, 1), axis(1, 0, 0, 0)), o);
    if (!g) return g.status();
    ex->g = std::move(*g);
    // dW[o, i, j] = Σ_b x1[b, i] G[b, o, j]   (batch o; dW contiguous [O, I, J])
    auto dw = make(canon(dt, axis(O, 0, J, I * J), axis(I, ex->x1_i, 0, J), axis(J, 0, 1, 1), axis(B, ex->x1_b, O * J, 0)), o);
    if (!dw) return dw.status();
    ex->dw = std::move(*dw);
    if (d.has_bias) ex->colsum_ws = detail::column_sum_workspace(dt, B, O);
    scratch = std::max({scratch, ex->dx2.workspace, ex->t.workspace, ex->dx1.workspace, ex->g.workspace, ex->dw.workspace,
                        ex->colsum_ws});
  }
  ex->workspace = static_cast<size_t>(buf) + scratch;
  return ex;
}

KernelSku make_sku(const BilinearDescriptor& d, const detail::BilinearExec& ex, Direction dir) {
  KernelSku k;
  k.op = "gemm.bilinear";
  k.direction = dir;
  k.dtype = d.x1.dtype;
  k.backend = Backend::kCuBLASLt;
  k.arch = ex.arch;
  k.variant = dir == Direction::kForward ? cat("u:", ex.u.variant, "|y:", ex.y.variant) : cat("u:", ex.u.variant, "|dw:", ex.dw.variant);
  return k;
}

PrecisionGuarantee guarantee(const BilinearDescriptor& d, const detail::BilinearExec* ex) {
  PrecisionGuarantee g;
  g.accumulator = d.x1.dtype == DType::f64 ? DType::f64 : DType::f32;
  g.math = g.accumulator;
  g.determinism = Determinism::kRunToRun;
  g.tf32_inputs = ex && ex->u.tf32;
  g.split_k = ex ? std::max({ex->u.split_k, ex->y.split_k, ex->dw.split_k, ex->dx1.split_k, ex->dx2.split_k}) : 1;
  return g;
}

// The operands of either direction, at the layouts the descriptor fixed.
OperandSpecs bilinear_operands(const BilinearDescriptor& d, const detail::BilinearExec& ex, bool backward) {
  OperandSpecs s;
  auto in = [&](std::string_view name, const TensorLayout& l, bool optional) {
    OperandSpec& o = s.add_layout(name, OperandRole::kIn, l);
    o.alignment = d.pointer_alignment;
    o.optional = optional;
  };
  in("x1", d.x1, backward);  // the backward needs each input only for some gradients
  in("x2", d.x2, backward);
  in("weight", d.weight, backward);
  if (!backward) {
    if (d.has_bias) in("bias", d.bias, false);
    s.add_layout("out", OperandRole::kOut, d.out).alignment = d.pointer_alignment;
    return s;
  }
  in("d_out", d.out, false);
  const std::pair<std::string_view, const TensorLayout*> grads[] = {
      {"dx1", &ex.x1_grad}, {"dx2", &ex.x2_grad}, {"dweight", &ex.w_grad}, {"dbias", &ex.bias_grad}};
  for (auto [name, l] : grads) {
    if (name == "dbias" && !d.has_bias) continue;
    OperandSpec& o = s.add_layout(name, OperandRole::kOut, *l);
    o.alignment = d.pointer_alignment;
    o.optional = true;
  }
  return s;
}

}  // namespace

// ------------------------------------------------------------------ forward
Result<BilinearPlan> BilinearPlan::select(const BilinearDescriptor& desc, const PlanPreference& pref) {
  BilinearPlan p;
  if (Status s = begin_select(kOp, desc, pref, &p.sku_, Backend::kCuBLASLt); !s.ok()) return s;
  auto ex = build(kOp, desc, pref, false);
  if (!ex) return ex.status();
  p.desc_ = desc;
  p.sku_ = make_sku(desc, **ex, Direction::kForward);
  p.guarantee_ = guarantee(desc, ex->get());
  p.workspace_ = (*ex)->workspace;
  p.operands_ = bilinear_operands(desc, **ex, false);
  if (Status s = resolve_operands<BilinearArgs>(kOp, p.operands_); !s.ok()) return s;
  p.exec_ = std::move(*ex);
  return p;
}

Status BilinearPlan::can_implement(const BilinearArgs& a) const { return check_plan_args(kOp, selected(), operands_, a); }

Status BilinearPlan::run(cudaStream_t stream, Workspace ws, const BilinearArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  const detail::BilinearExec& ex = *exec_;
  if (Status s = check_workspace(kOp, ws, ex.workspace); !s.ok()) return s;
  char* base = static_cast<char*>(ws.ptr);
  Workspace scratch{base + ex.scratch_offset, ws.bytes - static_cast<size_t>(ex.scratch_offset)};
  GemmCore::RunArgs r;
  r.a = a.x1.data, r.b = a.weight.data, r.d = base;
  if (Status s = ex.u.run(kOp, stream, scratch, r); !s.ok()) return s;
  GemmCore::RunArgs y;
  y.a = a.x2.data, y.b = base, y.d = a.out.data;
  y.bias = desc_.has_bias ? a.bias.data : nullptr;
  y.bias_stride = desc_.has_bias ? desc_.bias.stride[0] : 1;
  return ex.y.run(kOp, stream, scratch, y);
}

// ------------------------------------------------------------------ backward
Result<BilinearBackwardPlan> BilinearBackwardPlan::select(const BilinearDescriptor& desc, const PlanPreference& pref) {
  BilinearBackwardPlan p;
  if (Status s = begin_select(kOpBwd, desc, pref, &p.sku_, Backend::kCuBLASLt); !s.ok()) return s;
  auto ex = build(kOpBwd, desc, pref, true);
  if (!ex) return ex.status();
  p.desc_ = desc;
  p.sku_ = make_sku(desc, **ex, Direction::kBackward);
  p.guarantee_ = guarantee(desc, ex->get());
  p.workspace_ = (*ex)->workspace;
  p.operands_ = bilinear_operands(desc, **ex, true);
  if (Status s = resolve_operands<BilinearBackwardArgs>(kOpBwd, p.operands_); !s.ok()) return s;
  p.exec_ = std::move(*ex);
  return p;
}

Status BilinearBackwardPlan::can_implement(const BilinearBackwardArgs& a) const {
  if (Status s = check_plan_args(kOpBwd, selected(), operands_, a); !s.ok()) return s;
  if (a.dbias.data && !desc_.has_bias) return error(StatusCode::kInvalidProblem, kOpBwd, ": dbias given but the forward has no bias");
  // dx2 needs x1 and W (U = x1·W); dx1 needs x2 and W; dweight needs x1 and x2
  const bool need_x1 = a.dx2.data || a.dweight.data, need_x2 = a.dx1.data || a.dweight.data, need_w = a.dx1.data || a.dx2.data;
  const std::pair<const TensorRef*, const char*> need[] = {{need_x1 ? &a.x1 : nullptr, "x1 (for dx2 and dweight)"},
                                                            {need_x2 ? &a.x2 : nullptr, "x2 (for dx1 and dweight)"},
                                                            {need_w ? &a.weight : nullptr, "weight (for dx1 and dx2)"}};
  for (auto [t, name] : need)
    if (t && t->data == nullptr && t->numel() != 0) return error(StatusCode::kInvalidProblem, kOpBwd, ": ", name, " is missing");
  return {};
}

Status BilinearBackwardPlan::run(cudaStream_t stream, Workspace ws, const BilinearBackwardArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  const detail::BilinearExec& ex = *exec_;
  if (Status s = check_workspace(kOpBwd, ws, ex.workspace); !s.ok()) return s;
  char* base = static_cast<char*>(ws.ptr);
  Workspace scratch{base + ex.scratch_offset, ws.bytes - static_cast<size_t>(ex.scratch_offset)};
  auto gemm = [&](const GemmCore& core, const void* x, const void* y, void* out) {
    GemmCore::RunArgs r;
    r.a = x, r.b = y, r.d = out;
    return core.run(kOpBwd, stream, scratch, r);
  };
  if (a.dx2.data) {
    if (Status s = gemm(ex.u, a.x1.data, a.weight.data, base); !s.ok()) return s;
    if (Status s = gemm(ex.dx2, a.d_out.data, base, a.dx2.data); !s.ok()) return s;
  }
  if (a.dx1.data) {
    if (Status s = gemm(ex.t, a.x2.data, a.weight.data, base); !s.ok()) return s;
    if (Status s = gemm(ex.dx1, a.d_out.data, base, a.dx1.data); !s.ok()) return s;
  }
  if (a.dweight.data) {
    if (Status s = gemm(ex.g, a.d_out.data, a.x2.data, base); !s.ok()) return s;
    if (Status s = gemm(ex.dw, a.x1.data, base, a.dweight.data); !s.ok()) return s;
  }
  if (a.dbias.data) {
    detail::PointwiseGeometry pg;
    pg.rank = 2;
    pg.ext[0] = ex.B, pg.ext[1] = ex.O;
    pg.s_out[0] = ex.y_b, pg.s_out[1] = ex.y_o;
    pg.numel = ex.B * ex.O;
    if (Status s = detail::launch_column_sum_over(desc_.x1.dtype, pg, a.d_out.data, a.dbias.data, 1.0, scratch.ptr, stream);
        !s.ok())
      return s;
  }
  return {};
}

}  // namespace baracuda
