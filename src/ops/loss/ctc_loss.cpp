// CtcLossPlan and CtcLossBackwardPlan: the descriptor's checks, the operands (PyTorch's names),
// the workspace (checked sizes), the geometry of every view, the launch.
#include "baracuda/ops/ctc_loss.hpp"
#include "core/checked_math.hpp"
#include "core/cuda_check.hpp"
#include "core/dispatch.hpp"
#include "core/plan_kit.hpp"
#include "core/validate.hpp"
#include "core/workspace.hpp"
#include "ops/loss/ctc_geometry.hpp"

namespace baracuda {

namespace {

constexpr std::string_view kOp = "ctc_loss";
constexpr std::string_view kOpBwd = "ctc_loss_backward";

using FloatDTypes = DTypeList<DType::f32, DType::f16, DType::bf16, DType::f64>;
using IndexDTypes = DTypeList<DType::i32, DType::i64>;

struct Shapes {
  std::vector<int64_t> lp, targets, per_sample, loss;
  int64_t P = 1;
};

Result<Shapes> check_ctc(std::string_view op, const CtcLossDescriptor& d) {
  if (Status s = check_dtype(op, "dtype", d.dtype, FloatDTypes{}); !s.ok()) return s;
  if (Status s = check_dtype(op, "index_dtype", d.index_dtype, IndexDTypes{}); !s.ok()) return s;
  if (d.T < 0 || d.N < 0 || d.C < 0 || d.max_target_length < 0 || d.total_target_length < 0)
    return error(StatusCode::kInvalidProblem, op, ": T = ", d.T, ", N = ", d.N, ", C = ", d.C, ", max_target_length = ", d.max_target_length,
                 ", total_target_length = ", d.total_target_length, ": every extent must be >= 0");
  if (!d.batched && d.N != 1) return error(StatusCode::kInvalidProblem, op, ": N = ", d.N, " unbatched (log_probs [T, C]: one sample)");
  if (d.C > INT32_MAX) return error(StatusCode::kUnsupported, op, ": C = ", d.C, " classes exceed 2^31 - 1");
  if (d.C == 0) return error(StatusCode::kInvalidProblem, op, ": C = 0: no class for the blank");
  if (d.blank < 0 || d.blank >= d.C) return error(StatusCode::kInvalidProblem, op, ": blank = ", d.blank, " is outside [0, C = ", d.C, ")");
  if (d.reduction == LossReduction::kBatchMean) return error(StatusCode::kInvalidProblem, op, ": reduction batchmean is kl_div's");
  if (!d.concatenated && d.total_target_length != 0)
    return error(StatusCode::kInvalidProblem, op, ": total_target_length = ", d.total_target_length, " is for concatenated targets");
  Shapes sh;
  // P = 2S + 1 positions, int32-indexed
  if (d.max_target_length > (INT32_MAX - 1) / 2)
    return error(StatusCode::kUnsupported, op, ": max_target_length = ", d.max_target_length, " exceeds 2^30 - 1");
  sh.P = 2 * d.max_target_length + 1;
  int64_t numel = 0;
  sh.lp = d.batched ? std::vector<int64_t>{d.T, d.N, d.C} : std::vector<int64_t>{d.T, d.C};
  if (Status s = check_shape(op, static_cast<int>(sh.lp.size()), sh.lp.data(), 1, &numel); !s.ok()) return s;
  if (d.concatenated) sh.targets = {d.total_target_length};
  else sh.targets = d.batched ? std::vector<int64_t>{d.N, d.max_target_length} : std::vector<int64_t>{d.max_target_length};
  if (Status s = check_shape(op, static_cast<int>(sh.targets.size()), sh.targets.data(), 1, &numel); !s.ok()) return s;
  if (d.batched) sh.per_sample = {d.N};
  if (d.reduction == LossReduction::kNone) sh.loss = sh.per_sample;
  return sh;
}

// The workspace's parts: ints, accumulators (rows per sample), partials; every size checked.
struct Carve {
  size_t ints = 0, acc = 0, partials = 0, total = 0;  // offsets; total bytes
  bool has_partials = false;
  int64_t rows = 2;
};
Result<Carve> carve_of(std::string_view op, const CtcLossDescriptor& d, const Shapes& sh, bool bwd) {
  Carve c;
  const int64_t acc_size = static_cast<int64_t>(dtype_size(acc_of(d.dtype)));
  int64_t ints = 0, acc = 0;
  // rows per sample: the forward's α ping-pong (2), the backward's α and β of every step (2T; T can
  // be anything when N = 0)
  const bool rows_ok = bwd ? checked_mul(d.T, 2, &c.rows) : (c.rows = 2, true);
  if (!rows_ok || !checked_mul(d.N, ctc::kIntArrays * sh.P + 1, &ints) || !checked_mul(ints, 4, &ints) || !checked_mul(d.N, c.rows, &acc) ||
      !checked_mul(acc, sh.P, &acc) || !checked_mul(acc, acc_size, &acc))
    return error(StatusCode::kInvalidProblem, op, ": the workspace (N · 2T · (2 · max_target_length + 1) accumulators) exceeds 2^63 bytes");
  WorkspaceLayout l;
  c.ints = l.take(static_cast<size_t>(ints));
  c.acc = l.take(static_cast<size_t>(acc));
  c.has_partials = bwd || d.reduction != LossReduction::kNone;
  c.partials = l.take(c.has_partials ? static_cast<size_t>(d.N * acc_size) : 0);
  c.total = l.total();
  return c;
}

void add_inputs(const CtcLossDescriptor& d, const Shapes& sh, OperandSpecs& o) {
  o.input("log_probs", d.dtype, sh.lp);
  o.input("targets", d.index_dtype, sh.targets);
  o.input("input_lengths", d.index_dtype, sh.per_sample);
  o.input("target_lengths", d.index_dtype, sh.per_sample);
}

// [T, N, C] strides of log_probs / dlog_probs (unbatched: N's 0).
void tnc_strides(const TensorLayout& t, bool batched, int64_t* out) {
  out[0] = t.stride[0];
  out[1] = batched ? t.stride[1] : 0;
  out[2] = t.stride[batched ? 2 : 1];
}

void build(const CtcLossDescriptor& d, const Shapes& sh, const TensorLayout& lp, const TensorLayout& tg, const TensorLayout& il,
           const TensorLayout& tl, ctc::CtcGeom* g) {
  g->T = d.T, g->N = d.N, g->C = d.C, g->S = d.max_target_length, g->total = d.total_target_length, g->blank = d.blank, g->P = sh.P;
  g->concatenated = d.concatenated, g->zero_infinity = d.zero_infinity;
  g->reduction = static_cast<int>(d.reduction);
  tnc_strides(lp, d.batched, g->lps);
  if (d.concatenated) g->tgs[0] = 0, g->tgs[1] = tg.stride[0];
  else g->tgs[0] = d.batched ? tg.stride[0] : 0, g->tgs[1] = tg.stride[d.batched ? 1 : 0];
  g->ils = d.batched ? il.stride[0] : 0;
  g->tls = d.batched ? tl.stride[0] : 0;
}

void point_workspace(const Carve& c, Workspace ws, ctc::CtcGeom* g) {
  g->ints = slice<int32_t>(ws, c.ints);
  g->acc = slice<char>(ws, c.acc);
  g->partials = c.has_partials ? slice<char>(ws, c.partials) : nullptr;
  g->rows = c.rows;
}

}  // namespace

Result<CtcLossPlan> CtcLossPlan::select(const CtcLossDescriptor& d, const PlanPreference& pref) {
  CtcLossPlan p;
  if (Status s = begin_select(kOp, d, pref, &p.sku_); !s.ok()) return s;
  auto sh = check_ctc(kOp, d);
  if (!sh) return sh.status();
  if (!ctc::find_ctc(d.dtype, d.index_dtype, false)) return error(StatusCode::kInternal, kOp, ": no kernel for ", dtype_name(d.dtype));
  p.desc_ = d;
  add_inputs(d, *sh, p.operands_);
  p.operands_.output("loss", d.dtype, sh->loss);
  if (Status s = resolve_operands<CtcLossArgs>(kOp, p.operands_); !s.ok()) return s;
  auto c = carve_of(kOp, d, *sh, false);
  if (!c) return c.status();
  p.workspace_ = c->total;
  if (Status s = check_workspace_budget(kOp, p.workspace_, pref.max_workspace_bytes); !s.ok()) return s;
  p.sku_.op = "loss.ctc";
  p.sku_.direction = Direction::kForward;
  p.sku_.dtype = d.dtype;
  p.sku_.variant = "block_per_sample";
  p.guarantee_ = float_guarantee(d.dtype);
  return p;
}

Status CtcLossPlan::can_implement(const CtcLossArgs& a) const { return check_plan_args(kOp, selected(), operands_, a); }

Status CtcLossPlan::run(cudaStream_t stream, Workspace ws, const CtcLossArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (Status s = check_workspace(kOp, ws, workspace_); !s.ok()) return s;
  auto sh = check_ctc(kOp, desc_);
  if (!sh) return sh.status();
  auto c = carve_of(kOp, desc_, *sh, false);
  if (!c) return c.status();
  ctc::CtcGeom g;
  build(desc_, *sh, a.log_probs, a.targets, a.input_lengths, a.target_lengths, &g);
  point_workspace(*c, ws, &g);
  g.lp = a.log_probs.data, g.tg = a.targets.data, g.il = a.input_lengths.data, g.tl = a.target_lengths.data;
  g.loss = a.loss.data;
  g.loss_s = desc_.reduction == LossReduction::kNone && desc_.batched ? a.loss.stride[0] : 0;
  return cuda_status(ctc::find_ctc(desc_.dtype, desc_.index_dtype, false)(g, stream), kOp);
}

Result<CtcLossBackwardPlan> CtcLossBackwardPlan::select(const CtcLossBackwardDescriptor& d, const PlanPreference& pref) {
  CtcLossBackwardPlan p;
  if (Status s = begin_select(kOpBwd, d, pref, &p.sku_); !s.ok()) return s;
  auto sh = check_ctc(kOpBwd, d);
  if (!sh) return sh.status();
  if (!ctc::find_ctc(d.dtype, d.index_dtype, true)) return error(StatusCode::kInternal, kOpBwd, ": no kernel for ", dtype_name(d.dtype));
  p.desc_ = d;
  add_inputs(d, *sh, p.operands_);
  p.operands_.input("dloss", d.dtype, sh->loss);
  p.operands_.output("dlog_probs", d.dtype, sh->lp);
  if (Status s = resolve_operands<CtcLossBackwardArgs>(kOpBwd, p.operands_); !s.ok()) return s;
  auto c = carve_of(kOpBwd, d, *sh, true);
  if (!c) return c.status();
  p.workspace_ = c->total;
  if (Status s = check_workspace_budget(kOpBwd, p.workspace_, pref.max_workspace_bytes); !s.ok()) return s;
  p.sku_.op = "loss.ctc";
  p.sku_.direction = Direction::kBackward;
  p.sku_.dtype = d.dtype;
  p.sku_.variant = "block_per_sample";
  p.guarantee_ = float_guarantee(d.dtype);
  return p;
}

Status CtcLossBackwardPlan::can_implement(const CtcLossBackwardArgs& a) const { return check_plan_args(kOpBwd, selected(), operands_, a); }

Status CtcLossBackwardPlan::run(cudaStream_t stream, Workspace ws, const CtcLossBackwardArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (writes_nothing(operands_, a)) return {};
  if (Status s = check_workspace(kOpBwd, ws, workspace_); !s.ok()) return s;
  auto sh = check_ctc(kOpBwd, desc_);
  if (!sh) return sh.status();
  auto c = carve_of(kOpBwd, desc_, *sh, true);
  if (!c) return c.status();
  ctc::CtcGeom g;
  build(desc_, *sh, a.log_probs, a.targets, a.input_lengths, a.target_lengths, &g);
  point_workspace(*c, ws, &g);
  g.lp = a.log_probs.data, g.tg = a.targets.data, g.il = a.input_lengths.data, g.tl = a.target_lengths.data;
  g.dloss = a.dloss.data;
  g.dloss_s = desc_.reduction == LossReduction::kNone && desc_.batched ? a.dloss.stride[0] : 0;
  g.dlp = a.dlog_probs.data;
  tnc_strides(a.dlog_probs, desc_.batched, g.dlps);
  return cuda_status(ctc::find_ctc(desc_.dtype, desc_.index_dtype, true)(g, stream), kOpBwd);
}

}  // namespace baracuda
