// baracuda/ops/gemm.hpp — matrix products on cuBLASLt: mm, bmm, matmul, addmm, addmv, addr,
// baddbmm, addbmm, mv, dot, vdot, inner, outer, linear, and fp8 scaled_mm; forward and backward.
//
// Math (one descriptor serves every op; the factories below map PyTorch's ops onto it):
//   P      = a ⊗ b                       torch.matmul semantics: a 1-D a is [1, K] (the 1 is
//                                        dropped from the result), a 1-D b is [K, 1] (likewise),
//                                        batch dims (all but the last two) broadcast;
//                                        with transpose_b, b is given as [..., N, K] (nn.Linear).
//   Z      = alpha·P + beta·c + bias     c broadcasts to P's shape (read only when beta != 0:
//                                        beta == 0 ignores c, NaN included, as torch.addmm);
//                                        bias is [N], added to every row.
//   out    = act(Z)                      act: none, relu, gelu (tanh approximation), gelu (erf).
//   preact = Z                           optional second output (needed by the backward of gelu).
//   Backward epilogue (instead of act; for chaining layers' backward passes by hand):
//   out       = Z ⊙ gact'(aux)           gact = grad_activation, aux = that activation's input
//                                        (a preact saved by its forward; for relu the forward's
//                                        output works as well), out-shaped, row-major contiguous.
//   bias_grad = Σ_rows out               optional [N] output (has_bias_grad): the gradient of the
//                                        bias that fed that activation; f32 sums in a fixed order.
//   Batch reduction: out may have fewer batch dims than P, or size 1 where P's is larger; those
//   batch dims are summed (addbmm; the gradient of a broadcast operand). c then broadcasts to out.
//   K = 0 gives out = act(beta·c + bias) (zeros when beta == 0 and there is no bias).
//
// Shapes: every operand up to rank 8, any element strides (transposed views, leading-dimension
//   padding, stride-0 broadcast batch dims are used in place; layouts cuBLASLt cannot express —
//   negative or overlapping strides, a unit stride on neither matrix axis — are packed into the
//   workspace first). Batch count per cuBLASLt call < 2^31; further batch dims that do not
//   coalesce are looped on the host (one cuBLASLt call each, all on the stream).
// Dtypes (a, b -> out): f32 (IEEE by default, TF32 only with PlanPreference::allow_tf32),
//   f16, bf16 (f32 accumulation), f64 (f64 accumulation); c and bias have out's dtype.
//   fp8 (scaled_mm): e4m3 x e4m3, e4m3 x e5m2, e5m2 x e4m3 -> bf16, f16 or f32, with per-tensor
//   f32 scales (device pointers in the args), a 1-D..2-D row-major a [M, K] and a K-major b
//   ([K, N] with unit stride along K, i.e. transpose_b with b [N, K] row-major), K and N
//   multiples of 16, no c, bias bf16/f16 matching out (none for f32 out). Like torch._scaled_mm.
// Accumulator: f32 (f64 for f64). Split-K reductions stay in f32 unless the descriptor allows
//   reduced-precision reduction (PyTorch's allow_{bf16,fp16}_reduced_precision_reduction).
// Epilogue placement: bias, relu, gelu-tanh (with preact) and dgelu-tanh (f16/bf16, with bias_grad) can be
//   fused into cuBLASLt; gelu-erf, drelu (cuBLASLt's drelu needs its own bit-mask aux), f64
//   activations, strided bias and packed outs use the bespoke one-pass epilogue kernel. With
//   epilogue_impl = kAuto the default is what measured faster on the H200 (fused for the forward
//   epilogues, separate for the backward ones), unless PlanPreference::autotune is set: then
//   both forms are timed on the device and the faster is kept (the sku says which).
// Selection: cuBLASLt's heuristic first choice, or with PlanPreference::autotune the fastest of
//   its top 8 candidates timed at select(). Plans are cached per (descriptor, preference,
//   device): a repeated select() is a hash lookup (gemm_plan_cache_stats / _clear below).
// Determinism: run-to-run bitwise deterministic for a plan (cuBLASLt with a pinned algorithm and
//   workspace on one device model; the bespoke epilogue and column-sum kernels use no atomics).
// Workspace: cuBLASLt's need for the chosen algorithm (at most min(max_workspace_bytes, 32 MiB))
//   plus packed operands and the backward's intermediate dZ; fixed at select().
// Aliasing: out may be the very same view as c (in-place addmm); any other overlap between out
//   (or preact) and an input is rejected.
// Alignment: select() assumes every pointer is aligned to `pointer_alignment` bytes (default 16)
//   and lets cuBLASLt pick algorithms that rely on it; run() rejects a pointer below it with
//   MisalignedOperand. Offset views: describe them with a smaller pointer_alignment.
// Devices: with a GPU, select() takes the per-device cuBLASLt handle (created once, outside
//   run()) and fixes the algorithm from cuBLASLt's heuristic. Without one, select() with a
//   named target_arch validates everything and returns a plan whose run() reports Unsupported.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

BARACUDA_ENUM(GemmActivation, uint8_t, (kNone, "none"), (kRelu, "relu"), (kGeluTanh, "gelu_tanh"), (kGeluErf, "gelu_erf"));

// Where the epilogue (bias, activation, preact) runs.
BARACUDA_ENUM(GemmEpilogueImpl, uint8_t,
              (kAuto, "auto"),           // fused into cuBLASLt where it can be; otherwise the bespoke epilogue kernel
              (kFused, "fused"),         // cuBLASLt epilogue only (select fails if it cannot express it)
              (kSeparate, "separate"));  // plain GEMM, then the bespoke epilogue kernel (one pass over out)

// The rank GemmDescriptor::inner gives b or out when their dims cannot fold into one axis.
inline constexpr int kGemmUnfoldable = -2;

struct GemmDescriptor {
  TensorLayout a;                 // [..., M, K] or [K]
  TensorLayout b;                 // [..., K, N] or [K]; [..., N, K] when transpose_b
  TensorLayout out;               // P's shape, or with summed batch dims (see above)
  TensorLayout c;                 // addend broadcastable to out; used when has_c && beta != 0
  TensorLayout bias;              // [N]; used when has_bias
  bool transpose_b = false;
  bool has_c = false;
  bool has_bias = false;
  double alpha = 1.0;
  double beta = 0.0;
  GemmActivation activation = GemmActivation::kNone;
  bool save_preactivation = false;  // preact output, out's shape, row-major contiguous
  GemmEpilogueImpl epilogue_impl = GemmEpilogueImpl::kAuto;
  int pointer_alignment = 16;       // bytes every operand pointer is guaranteed to be aligned to
  bool allow_reduced_precision_reduction = false;  // split-K partials in 16-bit (bf16/f16 out)
  bool fp8_fast_accum = false;      // fp8: cuBLASLt FAST_ACCUM (no periodic promotion)
  bool sum_batch = false;           // out may omit / have size 1 on P's batch dims: they are summed
  GemmActivation grad_activation = GemmActivation::kNone;  // backward epilogue: out = Z ⊙ gact'(aux)
  bool has_bias_grad = false;       // bias_grad = Σ_rows out (with or without grad_activation)

  bool operator==(const GemmDescriptor& o) const;  // every field (fields_equal)

  // PyTorch's ops as descriptors (shapes as torch documents them; out shape checked at select).
  static GemmDescriptor matmul(const TensorLayout& a, const TensorLayout& b, const TensorLayout& out);
  static GemmDescriptor mm(const TensorLayout& a, const TensorLayout& b, const TensorLayout& out) { return matmul(a, b, out); }
  static GemmDescriptor bmm(const TensorLayout& a, const TensorLayout& b, const TensorLayout& out) { return matmul(a, b, out); }
  static GemmDescriptor mv(const TensorLayout& a, const TensorLayout& v, const TensorLayout& out) { return matmul(a, v, out); }
  static GemmDescriptor dot(const TensorLayout& x, const TensorLayout& y, const TensorLayout& out) { return matmul(x, y, out); }
  // Real dtypes only: vdot == dot (no conjugation to do).
  static GemmDescriptor vdot(const TensorLayout& x, const TensorLayout& y, const TensorLayout& out) { return matmul(x, y, out); }
  // out = beta·input + alpha·(m1 @ m2): addmm, addmv, baddbmm (input broadcasts to out).
  static GemmDescriptor addmm(const TensorLayout& input, const TensorLayout& m1, const TensorLayout& m2,
                              const TensorLayout& out, double beta = 1.0, double alpha = 1.0);
  static GemmDescriptor addmv(const TensorLayout& input, const TensorLayout& m, const TensorLayout& v,
                              const TensorLayout& out, double beta = 1.0, double alpha = 1.0) {
    return addmm(input, m, v, out, beta, alpha);
  }
  static GemmDescriptor baddbmm(const TensorLayout& input, const TensorLayout& b1, const TensorLayout& b2,
                                const TensorLayout& out, double beta = 1.0, double alpha = 1.0) {
    return addmm(input, b1, b2, out, beta, alpha);
  }
  // out[M,N] = beta·input + alpha·Σ_b b1[b] @ b2[b]
  static GemmDescriptor addbmm(const TensorLayout& input, const TensorLayout& b1, const TensorLayout& b2,
                               const TensorLayout& out, double beta = 1.0, double alpha = 1.0) {
    return addmm(input, b1, b2, out, beta, alpha);
  }
  // out[M,N] = a[M] ⊗ b[N]: a is viewed as [M, 1], b as [1, N] (K = 1).
  static GemmDescriptor outer(const TensorLayout& a, const TensorLayout& b, const TensorLayout& out);
  // out = beta·input + alpha·outer(a, b)
  static GemmDescriptor addr(const TensorLayout& input, const TensorLayout& a, const TensorLayout& b,
                             const TensorLayout& out, double beta = 1.0, double alpha = 1.0);
  // y = x @ wᵀ (+ bias): x [..., in], w [out, in], bias [out]; args.b is w itself.
  static GemmDescriptor linear(const TensorLayout& x, const TensorLayout& w, const TensorLayout* bias,
                               const TensorLayout& y);
  // inner(a, b) for a [..., K], b [K] or b [N, K] (b's leading dims must fold into one N; where
  // they, or out's trailing dims, do not, that layout gets rank kGemmUnfoldable and select()
  // says which).
  static GemmDescriptor inner(const TensorLayout& a, const TensorLayout& b, const TensorLayout& out);
};
BARACUDA_DESCRIBE(GemmDescriptor, a, b, out, c, bias, transpose_b, has_c, has_bias, alpha, beta, activation, save_preactivation,
                  epilogue_impl, pointer_alignment, allow_reduced_precision_reduction, fp8_fast_accum, sum_batch,
                  grad_activation, has_bias_grad);
inline bool GemmDescriptor::operator==(const GemmDescriptor& o) const { return fields_equal(*this, o); }

struct GemmArgs {
  TensorRef a, b;
  TensorRef c;          // when has_c && beta != 0
  TensorRef bias;       // when has_bias
  TensorMut out;
  TensorMut preact;     // when save_preactivation
  TensorRef a_scale;    // fp8 (required): f32 dequantisation factors, 0-dim (one element), 16-byte aligned
  TensorRef b_scale;
  TensorRef aux;        // when grad_activation != kNone: out-shaped, row-major contiguous
  TensorMut bias_grad;  // when has_bias_grad: [N], unit stride
};
BARACUDA_DESCRIBE(GemmArgs, a, b, c, bias, a_scale, b_scale, aux, out, preact, bias_grad);

// The library-wide cache of selected GEMM plans (GemmPlan and GemmBackwardPlan; bilinear plans are
// not cached).
struct GemmPlanCacheStats {
  size_t entries = 0, hits = 0, misses = 0;
};
GemmPlanCacheStats gemm_plan_cache_stats();
void gemm_plan_cache_clear();

namespace detail {
struct GemmExec;          // the resolved forward: canonical dims, cuBLASLt calls, packing steps
struct GemmBackwardExec;  // dZ step, the da / db GEMMs, the column sums
}

class GemmPlan : public PlanBase<GemmDescriptor> {
 public:
  static Result<GemmPlan> select(const GemmDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const GemmArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const GemmArgs& args) const;

 private:
  std::shared_ptr<const detail::GemmExec> exec_;  // immutable after select; shared by copies
};

// Backward of the forward problem described by the same GemmDescriptor (not fp8).
//   dZ    = d_out ⊙ act'(Z)    (Z from preact for gelu; relu uses out > 0)
//   da    = alpha · dZ ⊗ bᵀ    reduced to a's shape (broadcast batch dims summed)
//   db    = alpha · aᵀ ⊗ dZ    reduced to b's shape (for transpose_b, db has b's [.., N, K] shape)
//   dbias = Σ over all but the last axis of dZ (f32 accumulation, fixed order)
//   dc    = beta · dZ           only when c has out's full shape (broadcast c: Unsupported yet)
// Any gradient whose pointer is null in the args is skipped.
using GemmBackwardDescriptor = GemmDescriptor;
struct GemmBackwardArgs {
  TensorRef a, b;        // forward inputs (needed for db and da respectively)
  TensorRef out;         // forward output (relu backward)
  TensorRef preact;      // forward preact (gelu backward)
  TensorRef d_out;
  TensorMut da, db, dbias, dc;
};
BARACUDA_DESCRIBE(GemmBackwardArgs, a, b, out, preact, d_out, da, db, dbias, dc);

class GemmBackwardPlan : public PlanBase<GemmBackwardDescriptor> {
 public:
  static Result<GemmBackwardPlan> select(const GemmBackwardDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const GemmBackwardArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const GemmBackwardArgs& args) const;

 private:
  std::shared_ptr<const detail::GemmBackwardExec> exec_;
};

}  // namespace baracuda
