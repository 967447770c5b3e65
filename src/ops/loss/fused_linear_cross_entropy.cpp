// FusedLinearCrossEntropyPlan and its backward: the chunking, the GEMM plans of each chunk size
// (GemmPlan, cuBLASLt), the workspace slices, and the loop of GEMMs and cross-entropy stages
// (ops/loss/loss_kernels.cu) that run() issues on the stream.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cuda_runtime.h>

#include "baracuda/ops/fused_linear_cross_entropy.hpp"
#include "baracuda/ops/gemm.hpp"
#include "core/checked_math.hpp"
#include "core/cuda_check.hpp"
#include "core/dispatch.hpp"
#include "core/plan_kit.hpp"
#include "core/validate.hpp"
#include "core/workspace.hpp"
#include "ops/loss/loss_geometry.hpp"

namespace baracuda {

namespace detail {

// The GEMMs of a chunk of n tokens; dweight / dbias overwrite (the first chunk) or accumulate.
struct FlceChunk {
  int64_t n = 0;
  GemmPlan logits, dinput, dweight, dbias;
};

struct FlceExec {
  int64_t S = 0, H = 0, V = 0, chunk = 0;
  FlceChunk first, mid, last;  // chunk 0; the full chunks after it; the tail (when S % chunk != 0)
  size_t off_logits = 0, off_lse = 0, off_part = 0, off_tw = 0, off_one = 0, off_ones = 0, off_gemm = 0, gemm_ws = 0;
};

}  // namespace detail

namespace {

constexpr std::string_view kOp = "fused_linear_cross_entropy";
constexpr std::string_view kOpBwd = "fused_linear_cross_entropy_backward";
constexpr int64_t kAutoChunkBytes = int64_t{256} << 20;

using FloatDTypes = DTypeList<DType::f32, DType::f16, DType::bf16, DType::f64>;
using IndexDTypes = DTypeList<DType::i32, DType::i64>;

struct Dims {
  int64_t S = 0, H = 0, V = 0;
  DType dt = DType::f32, acc = DType::f32;
};

Result<Dims> check_flce(std::string_view op, const FusedLinearCrossEntropyDescriptor& d) {
  if (Status s = check_layout(op, "input", d.input); !s.ok()) return s;
  if (Status s = check_layout(op, "weight", d.weight); !s.ok()) return s;
  if (d.input.rank != 2) return error(StatusCode::kInvalidProblem, op, ": input must be [tokens, hidden] (rank 2), got rank ", d.input.rank);
  if (d.weight.rank != 2)
    return error(StatusCode::kInvalidProblem, op, ": weight must be [classes, hidden] (rank 2), got rank ", d.weight.rank);
  if (Status s = check_dtype(op, "input.dtype", d.input.dtype, FloatDTypes{}); !s.ok()) return s;
  if (d.weight.dtype != d.input.dtype)
    return error(StatusCode::kInvalidProblem, op, ": weight.dtype ", dtype_name(d.weight.dtype), " differs from input.dtype ",
                 dtype_name(d.input.dtype));
  if (d.weight.shape[1] != d.input.shape[1])
    return error(StatusCode::kInvalidProblem, op, ": weight.shape[1] = ", d.weight.shape[1], " differs from input.shape[1] = ",
                 d.input.shape[1], " (the hidden size)");
  if (Status s = check_dtype(op, "index_dtype", d.index_dtype, IndexDTypes{}); !s.ok()) return s;
  if (!(d.label_smoothing >= 0.0 && d.label_smoothing <= 1.0))
    return error(StatusCode::kInvalidProblem, op, ": label_smoothing = ", d.label_smoothing, " must be in [0, 1]");
  if (!(std::isfinite(d.z_loss) && d.z_loss >= 0.0))
    return error(StatusCode::kInvalidProblem, op, ": z_loss = ", d.z_loss, " must be finite and >= 0");
  if (d.reduction != LossReduction::kMean && d.reduction != LossReduction::kSum)
    return error(StatusCode::kUnsupported, op, ": reduction ", enum_name(d.reduction),
                 " is not supported (mean or sum: the gradients are formed before dloss is known; for none compose gemm and "
                 "cross_entropy)");
  if (d.chunk_tokens < 0) return error(StatusCode::kInvalidProblem, op, ": chunk_tokens = ", d.chunk_tokens, " must be >= 0 (0: chosen)");
  Dims r{d.input.shape[0], d.input.shape[1], d.weight.shape[0], d.input.dtype, acc_of(d.input.dtype)};
  if (r.V == 0 && r.S > 0)
    return error(StatusCode::kInvalidProblem, op, ": weight.shape[0] (the classes) = 0 with tokens to score");
  return r;
}

// The chunk: the caller's, or the largest power of two whose logits fit the budget; at most S.
int64_t chunk_of(const FusedLinearCrossEntropyDescriptor& d, const Dims& m, size_t max_ws) {
  int64_t c = d.chunk_tokens;
  if (c == 0) {
    const int64_t budget = std::min<int64_t>(kAutoChunkBytes, static_cast<int64_t>(std::min<size_t>(max_ws / 2, INT64_MAX)));
    const int64_t row = std::max<int64_t>(1, m.V) * static_cast<int64_t>(dtype_size(m.dt));
    c = std::max<int64_t>(1, budget / row);
    c = int64_t{1} << (63 - std::countl_zero(static_cast<uint64_t>(c)));
  }
  return std::max<int64_t>(1, std::min(c, m.S));
}

// The largest power of two <= 16 dividing v (v = 0: 16).
int pow2_align(int64_t v) {
  int a = 16;
  while (a > 1 && v % a != 0) a >>= 1;
  return a;
}

TensorLayout rows_of(const TensorLayout& t, int64_t n) {  // the first n rows of a [rows, cols] view
  TensorLayout r = t;
  r.shape[0] = n;
  return r;
}
TensorLayout contiguous2(DType dt, int64_t r, int64_t c) {
  const int64_t s[2] = {r, c};
  return TensorLayout::make(dt, s);
}

// The GEMM plans of an n-token chunk.
Result<detail::FlceChunk> select_chunk(const FusedLinearCrossEntropyDescriptor& d, const Dims& m, int64_t n, bool first, int align,
                                       const PlanPreference& pref) {
  detail::FlceChunk c;
  c.n = n;
  const TensorLayout x = rows_of(d.input, n), L = contiguous2(m.dt, n, m.V);
  const int64_t vb[1] = {m.V};
  const TensorLayout bias = TensorLayout::make(m.dt, vb);
  auto pick = [&](GemmDescriptor g, GemmPlan* out, const char* what) -> Status {
    g.pointer_alignment = align;
    auto p = GemmPlan::select(g, pref);
    if (!p) return Status(p.status().code(), cat(kOp, ": the ", what, " GEMM of a ", n, "-token chunk: ", p.status().message()));
    *out = std::move(*p);
    return {};
  };
  if (Status s = pick(GemmDescriptor::linear(x, d.weight, d.bias ? &bias : nullptr, L), &c.logits, "logits"); !s.ok()) return s;
  if (!d.compute_grad) return c;
  if (Status s = pick(GemmDescriptor::matmul(L, d.weight, contiguous2(m.dt, n, m.H)), &c.dinput, "dinput"); !s.ok()) return s;
  const int64_t ts[2] = {m.V, n}, tst[2] = {1, m.V};
  const TensorLayout Lt = TensorLayout::make(m.dt, ts, tst), dW = contiguous2(m.dt, m.V, m.H);
  if (Status s = pick(first ? GemmDescriptor::matmul(Lt, x, dW) : GemmDescriptor::addmm(dW, Lt, x, dW), &c.dweight, "dweight"); !s.ok())
    return s;
  if (d.bias) {
    const TensorLayout ones = contiguous2(m.dt, 1, n), db = contiguous2(m.dt, 1, m.V);
    if (Status s = pick(first ? GemmDescriptor::matmul(ones, L, db) : GemmDescriptor::addmm(db, ones, L, db), &c.dbias, "dbias"); !s.ok())
      return s;
  }
  return c;
}

size_t gemm_workspace(const detail::FlceChunk& c) {
  return std::max({c.logits.workspace_size(), c.dinput.workspace_size(), c.dweight.workspace_size(), c.dbias.workspace_size()});
}

const char* byte_ptr(const void* p, int64_t elems, DType dt) {
  return static_cast<const char*>(p) + elems * static_cast<int64_t>(dtype_size(dt));
}

TensorRef ref_at(const void* p, const TensorLayout& l) {
  TensorRef r;
  static_cast<TensorLayout&>(r) = l;
  r.data = p;
  return r;
}
TensorMut mut_at(void* p, const TensorLayout& l) {
  TensorMut r;
  static_cast<TensorLayout&>(r) = l;
  r.data = p;
  return r;
}

}  // namespace

// ---------------------------------------------------------------- forward

Result<FusedLinearCrossEntropyPlan> FusedLinearCrossEntropyPlan::select(const FusedLinearCrossEntropyDescriptor& d, const PlanPreference& pref) {
  FusedLinearCrossEntropyPlan p;
  if (Status s = begin_select(kOp, d, pref, &p.sku_, Backend::kCuBLASLt); !s.ok()) return s;
  auto m = check_flce(kOp, d);
  if (!m) return m.status();
  if (!loss::find_cross_entropy(m->dt, false) || !loss::find_scale_by(m->dt))
    return error(StatusCode::kInternal, kOp, ": no kernel for ", dtype_name(m->dt));
  p.desc_ = d;
  auto ex = std::make_shared<detail::FlceExec>();
  ex->S = m->S, ex->H = m->H, ex->V = m->V;
  ex->chunk = chunk_of(d, *m, pref.max_workspace_bytes);
  const int64_t es = static_cast<int64_t>(dtype_size(m->dt));
  // every chunk's pointers (input rows, dinput rows) keep the alignment of chunk · row bytes
  int align = 16;
  if (ex->S > ex->chunk) {
    int64_t a = 0, b = 0;
    if (!checked_mul(ex->chunk, d.input.stride[0], &a) || !checked_mul(a, es, &a) || !checked_mul(ex->chunk, m->H, &b) ||
        !checked_mul(b, es, &b))
      return error(StatusCode::kInvalidProblem, kOp, ": chunk_tokens · input.stride[0] overflows int64");
    align = std::min(pow2_align(a), pow2_align(b));
    align = std::max(align, static_cast<int>(es));
  }
  if (ex->S > 0) {
    auto first = select_chunk(d, *m, ex->chunk, true, align, pref);
    if (!first) return first.status();
    ex->first = std::move(*first);
    ex->gemm_ws = gemm_workspace(ex->first);
    if (ex->S > ex->chunk) {
      auto mid = select_chunk(d, *m, ex->chunk, false, align, pref);
      if (!mid) return mid.status();
      ex->mid = std::move(*mid);
      ex->gemm_ws = std::max(ex->gemm_ws, gemm_workspace(ex->mid));
    }
    if (const int64_t tail = ex->S % ex->chunk; ex->S > ex->chunk && tail != 0) {
      auto last = select_chunk(d, *m, tail, false, align, pref);
      if (!last) return last.status();
      ex->last = std::move(*last);
      ex->gemm_ws = std::max(ex->gemm_ws, gemm_workspace(ex->last));
    }
  }
  int64_t logits = 0, part = 0;
  if (!checked_mul(ex->chunk, m->V, &logits) || !checked_mul(logits, es, &logits) ||
      !checked_mul(ex->S, int64_t{3} * static_cast<int64_t>(dtype_size(m->acc)), &part))
    return error(StatusCode::kInvalidProblem, kOp, ": the chunk's logits or the per-token partials exceed 2^63 bytes");
  const size_t acc = dtype_size(m->acc);
  WorkspaceLayout w;
  ex->off_logits = w.take(static_cast<size_t>(logits));
  ex->off_lse = w.take(static_cast<size_t>(ex->S) * acc);
  ex->off_part = w.take(static_cast<size_t>(ex->S) * 2 * acc);
  ex->off_tw = w.take(acc);
  ex->off_one = w.take(static_cast<size_t>(es));
  ex->off_ones = w.take(d.bias && d.compute_grad ? static_cast<size_t>(ex->chunk * es) : 0);
  ex->off_gemm = w.take(ex->gemm_ws);
  p.workspace_ = w.total();
  if (Status s = check_workspace_budget(kOp, p.workspace_, pref.max_workspace_bytes); !s.ok()) return s;

  const int64_t s_shape[1] = {m->S}, v_shape[1] = {m->V};
  p.operands_.add_layout("input", OperandRole::kIn, d.input).alignment = 16;
  p.operands_.add_layout("weight", OperandRole::kIn, d.weight).alignment = 16;
  auto contiguous_out = [&](std::string_view name, OperandRole role, const TensorLayout& l) {
    OperandSpec& o = p.operands_.add_layout(name, role, l);
    o.alignment = 16;
  };
  if (d.bias) contiguous_out("bias", OperandRole::kIn, TensorLayout::make(m->dt, v_shape));
  p.operands_.input("target", d.index_dtype, s_shape);
  if (d.ce_weight) p.operands_.input("ce_weight", m->dt, v_shape);
  p.operands_.output("loss", m->dt, {});
  if (d.compute_grad) {
    contiguous_out("dinput", OperandRole::kOut, contiguous2(m->dt, m->S, m->H));
    contiguous_out("dweight", OperandRole::kOut, contiguous2(m->dt, m->V, m->H));
    if (d.bias) contiguous_out("dbias", OperandRole::kOut, TensorLayout::make(m->dt, v_shape));
  }
  p.operands_.output("lse", m->acc, s_shape).optional = true;
  if (d.reduction == LossReduction::kMean) p.operands_.output("total_weight", m->acc, {}).optional = true;
  if (Status s = resolve_operands<FusedLinearCrossEntropyArgs>(kOp, p.operands_); !s.ok()) return s;
  p.exec_ = std::move(ex);
  p.sku_.op = "loss.fused_linear_cross_entropy";
  p.sku_.direction = Direction::kForward;
  p.sku_.dtype = m->dt;
  p.sku_.variant = cat("chunk", p.exec_->chunk, d.compute_grad ? "" : ".loss_only");
  p.guarantee_ = float_guarantee(m->dt);
  return p;
}

int64_t FusedLinearCrossEntropyPlan::chunk_tokens() const { return exec_ ? exec_->chunk : 0; }

Status FusedLinearCrossEntropyPlan::can_implement(const FusedLinearCrossEntropyArgs& a) const {
  return check_plan_args(kOp, selected(), operands_, a);
}

Status FusedLinearCrossEntropyPlan::run(cudaStream_t stream, Workspace ws, const FusedLinearCrossEntropyArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (Status s = check_workspace(kOp, ws, workspace_); !s.ok()) return s;
  const FusedLinearCrossEntropyDescriptor& d = desc_;
  const detail::FlceExec& ex = *exec_;
  const DType dt = d.input.dtype, acc = acc_of(dt);
  const bool grad = d.compute_grad, mean = d.reduction == LossReduction::kMean;
  char* base = static_cast<char*>(ws.ptr);
  void* L = base + ex.off_logits;
  void* part = base + ex.off_part;
  void* tw = base + ex.off_tw;
  void* one = base + ex.off_one;
  Workspace gws{base + ex.off_gemm, ex.gemm_ws};
  const loss::LossLaunchFn fwd = loss::find_cross_entropy(dt, false), bwd = loss::find_cross_entropy(dt, true);
  // the cross-entropy geometry every stage shares: samples along the target, classes along V
  loss::LossGeom base_g;
  base_g.C = ex.V;
  base_g.ko = 1;
  base_g.os[loss::kT][0] = a.target.stride[0];
  base_g.os[loss::kX][0] = base_g.os[loss::kDx][0] = ex.V;
  base_g.cs[loss::kX] = base_g.cs[loss::kDx] = 1;
  base_g.index64 = d.index_dtype == DType::i64;
  base_g.reduction = static_cast<int>(d.reduction);
  base_g.ignore_index = d.ignore_index;
  base_g.smoothing = d.label_smoothing;
  base_g.z = d.z_loss;
  base_g.w = a.ce_weight.data;
  base_g.ws = a.ce_weight.data ? a.ce_weight.stride[0] : 1;
  base_g.path = ex.V <= loss::kWarpMaxC ? loss::kWarpRows : loss::kBlockRows;
  base_g.vec = ex.V % (16 / static_cast<int64_t>(dtype_size(dt))) == 0;
  base_g.part_stride = ex.S;
  const bool user_lse = a.lse.data != nullptr;
  char* lse = user_lse ? static_cast<char*>(a.lse.data) : base + ex.off_lse;
  const int64_t lse_s = user_lse ? a.lse.stride[0] : 1;
  base_g.os[loss::kLse][0] = lse_s;
  auto cuda = [](cudaError_t e) { return cuda_status(e, kOp); };

  // the prep: mean's divisor, dloss = 1, the ones of dbias's GEMM
  if (grad || mean) {
    loss::LossGeom g = base_g;
    g.samples = ex.S;
    g.osize[0] = ex.S;
    g.in[loss::kT] = a.target.data;
    g.total_weight = mean ? tw : nullptr;
    g.one = one;
    g.ones = d.bias && grad ? base + ex.off_ones : nullptr;
    g.n_ones = d.bias && grad ? ex.chunk : 0;
    g.stages = loss::LossGeom::kPrep;
    if (Status s = cuda(fwd(g, stream)); !s.ok()) return s;
  }
  if (ex.S == 0 && grad) {  // nothing to accumulate: zero gradients of weight and bias
    if (ex.V * ex.H > 0)
      if (Status s = cuda(cudaMemsetAsync(a.dweight.data, 0, static_cast<size_t>(ex.V * ex.H) * dtype_size(dt), stream)); !s.ok()) return s;
    if (d.bias && ex.V > 0)
      if (Status s = cuda(cudaMemsetAsync(a.dbias.data, 0, static_cast<size_t>(ex.V) * dtype_size(dt), stream)); !s.ok()) return s;
  }
  const int64_t es = static_cast<int64_t>(dtype_size(dt));
  const int64_t accs = static_cast<int64_t>(dtype_size(acc));
  for (int64_t t0 = 0; t0 < ex.S; t0 += ex.chunk) {
    const int64_t n = std::min(ex.chunk, ex.S - t0);
    const detail::FlceChunk& c = t0 == 0 ? ex.first : n == ex.chunk ? ex.mid : ex.last;
    const TensorLayout xl = rows_of(d.input, n), Ll = contiguous2(dt, n, ex.V);
    const TensorRef x = ref_at(byte_ptr(a.input.data, t0 * d.input.stride[0], dt), xl);
    {
      GemmArgs g;
      g.a = x, g.b = a.weight, g.bias = a.bias, g.out = mut_at(L, Ll);
      if (Status s = c.logits.run(stream, gws, g); !s.ok()) return s;
    }
    loss::LossGeom g = base_g;
    g.samples = n;
    g.osize[0] = n;
    g.in[loss::kX] = L;
    g.in[loss::kT] = byte_ptr(a.target.data, t0 * a.target.stride[0], d.index_dtype);
    g.out[loss::kLse] = lse + t0 * lse_s * accs;
    g.partials = static_cast<char*>(part) + t0 * accs;
    g.stages = loss::LossGeom::kSamples;
    if (Status s = cuda(fwd(g, stream)); !s.ok()) return s;
    if (!grad) continue;
    g.in[loss::kLse] = g.out[loss::kLse];
    g.out[loss::kLse] = nullptr;
    g.in[loss::kDloss] = one;
    g.tw_in = mean ? tw : nullptr;
    g.out[loss::kDx] = L;  // dz over z: each element read, then written, by one thread
    if (Status s = cuda(bwd(g, stream)); !s.ok()) return s;
    {
      GemmArgs gd;
      gd.a = ref_at(L, Ll), gd.b = a.weight;
      gd.out = mut_at(static_cast<char*>(a.dinput.data) + t0 * ex.H * es, contiguous2(dt, n, ex.H));
      if (Status s = c.dinput.run(stream, gws, gd); !s.ok()) return s;
    }
    {
      const int64_t ts[2] = {ex.V, n}, tst[2] = {1, ex.V};
      GemmArgs gw;
      gw.a = ref_at(L, TensorLayout::make(dt, ts, tst)), gw.b = x;
      if (t0 > 0) gw.c = a.dweight;  // (the first chunk overwrites)
      gw.out = a.dweight;
      if (Status s = c.dweight.run(stream, gws, gw); !s.ok()) return s;
    }
    if (d.bias) {
      const TensorLayout db = contiguous2(dt, 1, ex.V);
      GemmArgs gb;
      gb.a = ref_at(base + ex.off_ones, contiguous2(dt, 1, n)), gb.b = ref_at(L, Ll);
      if (t0 > 0) gb.c = ref_at(a.dbias.data, db);
      gb.out = mut_at(a.dbias.data, db);
      if (Status s = c.dbias.run(stream, gws, gb); !s.ok()) return s;
    }
  }
  loss::LossGeom g = base_g;  // the finish: Σ l over every token (mean: over Σ w)
  g.samples = ex.S;
  g.partials = part;
  g.scalar_loss = a.loss.data;
  g.total_weight = a.total_weight.data;
  g.stages = loss::LossGeom::kFinish;
  return cuda(fwd(g, stream));
}

// ---------------------------------------------------------------- backward

Result<FusedLinearCrossEntropyBackwardPlan> FusedLinearCrossEntropyBackwardPlan::select(const FusedLinearCrossEntropyBackwardDescriptor& d,
                                                                                        const PlanPreference& pref) {
  FusedLinearCrossEntropyBackwardPlan p;
  if (Status s = begin_select(kOpBwd, d, pref, &p.sku_); !s.ok()) return s;
  auto m = check_flce(kOpBwd, d);
  if (!m) return m.status();
  if (!d.compute_grad) return error(StatusCode::kInvalidProblem, kOpBwd, ": compute_grad = false formed no gradients to scale");
  if (!loss::find_scale_by(m->dt)) return error(StatusCode::kInternal, kOpBwd, ": no kernel for ", dtype_name(m->dt));
  p.desc_ = d;
  const int64_t v_shape[1] = {m->V};
  p.operands_.input("dloss", m->dt, {});
  auto inout = [&](std::string_view name, const TensorLayout& l) {
    OperandSpec& o = p.operands_.add_layout(name, OperandRole::kInOut, l);
    o.optional = true, o.alignment = 16;  // (16-byte pieces)
  };
  inout("dinput", contiguous2(m->dt, m->S, m->H));
  inout("dweight", contiguous2(m->dt, m->V, m->H));
  if (d.bias) inout("dbias", TensorLayout::make(m->dt, v_shape));
  if (Status s = resolve_operands<FusedLinearCrossEntropyBackwardArgs>(kOpBwd, p.operands_); !s.ok()) return s;
  p.sku_.op = "loss.fused_linear_cross_entropy";
  p.sku_.direction = Direction::kBackward;
  p.sku_.dtype = m->dt;
  p.sku_.variant = "scale";
  p.guarantee_ = float_guarantee(m->dt);
  return p;
}

Status FusedLinearCrossEntropyBackwardPlan::can_implement(const FusedLinearCrossEntropyBackwardArgs& a) const {
  return check_plan_args(kOpBwd, selected(), operands_, a);
}

Status FusedLinearCrossEntropyBackwardPlan::run(cudaStream_t stream, Workspace, const FusedLinearCrossEntropyBackwardArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (writes_nothing(operands_, a)) return {};
  loss::ScaleGeom g;
  g.scale = a.dloss.data;
  const TensorMut* views[3] = {&a.dinput, &a.dweight, desc_.bias ? &a.dbias : nullptr};
  for (int i = 0; i < 3; ++i)
    if (views[i] && views[i]->data) g.buf[i] = views[i]->data, g.n[i] = views[i]->numel();
  return cuda_status(loss::find_scale_by(desc_.input.dtype)(g, stream), kOpBwd);
}

}  // namespace baracuda
