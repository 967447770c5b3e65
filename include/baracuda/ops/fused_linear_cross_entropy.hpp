// baracuda/ops/fused_linear_cross_entropy.hpp — the LM head's linear layer and cross entropy in
// one op that never holds the [tokens, classes] logits: loss = cross_entropy(input @ weightᵀ +
// bias, target) and, in the same pass, the gradients of input, weight and bias (Liger-Kernel's
// fused linear cross entropy; not in PyTorch).
//
// Shapes: input [S, H] (S tokens, H features), weight [V, H] (V classes, nn.Linear's layout),
//   bias [V] (optional), target [S] class indices, ce_weight [V] (optional class weights);
//   loss a scalar (rank 0); dinput [S, H], dweight [V, H], dbias [V]; lse [S] (optional).
// Math: z = input @ weightᵀ + bias, then exactly CrossEntropyPlan's class-index cross entropy of
//   z (loss.hpp: ignore_index, ce_weight, label_smoothing, z_loss; reduction mean or sum), and
//   with compute_grad: dinput = dz @ weight, dweight = dzᵀ @ input, dbias = Σ_tokens dz, where
//   dz = d loss / d z (CrossEntropyBackwardPlan's dinput for dloss = 1). The backward plan below
//   multiplies the three by the incoming dloss. Reduction none is refused: the gradients are formed
//   before dloss is known, which a per-token dloss would make impossible (compose GemmPlan and
//   CrossEntropyPlan for it).
// How: the tokens in chunks of `chunk_tokens` (0: the largest power of two whose chunk of logits
//   fits 256 MiB, at most S): per chunk, z_chunk = input_chunk @ weightᵀ + bias (cuBLASLt, into the
//   workspace, in `dtype`), the per-token losses and lse (f32), dz_chunk written over z_chunk, then
//   dinput_chunk = dz_chunk @ weight, dweight += dz_chunkᵀ @ input_chunk and dbias += Σ dz_chunk
//   (cuBLASLt, accumulating into dweight / dbias in their dtype: one rounding per chunk, as Liger).
//   Before the chunks, a one-block pass sums the class weights of the kept targets (mean's divisor,
//   needed by the first chunk's dz); after them, the per-token losses are summed in a fixed order.
// Memory: workspace = the chunk's logits (chunk_tokens · V · sizeof(dtype)) + 3 · S accumulators +
//   cuBLASLt's; nothing else is allocated (the unfused path holds [S, V] logits, their log-softmax
//   and their gradient).
// Dtypes: input, weight, bias, ce_weight, loss and the gradients share `dtype` = input.dtype (f32,
//   f16, bf16, f64; f32 GEMMs IEEE unless PlanPreference::allow_tf32); target `index_dtype` (i64
//   or i32); lse and total_weight f32 (f64 for f64). Accumulation f32 (f64); the logits and dz are
//   rounded to dtype between the GEMMs and the loss (as the unfused bf16 path rounds its logits).
// Layouts: input and weight any strides (fixed at select, as GemmDescriptor's); target, ce_weight
//   and lse any strides; bias, dinput, dweight and dbias row-major contiguous. input, weight, bias,
//   dinput, dweight and dbias 16-byte aligned.
// Special values: as cross_entropy: an out-of-range target (not ignore_index) makes the loss and
//   the gradients NaN (its dz row is NaN, which dweight and dbias then carry); every token ignored
//   gives loss = 0 / 0 = NaN (mean) and zero gradients; S = 0 gives dweight = dbias = 0.
// Determinism: bitwise run-to-run (pinned cuBLASLt algorithms, fixed-order sums, no atomics).
// Aliasing: none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/loss.hpp"

namespace baracuda {

struct FusedLinearCrossEntropyDescriptor {
  TensorLayout input;   // [S, H]; its dtype is every float operand's
  TensorLayout weight;  // [V, H]
  bool bias = false;    // bias [V] (and dbias)
  DType index_dtype = DType::i64;
  bool ce_weight = false;  // class weights [V]
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;  // in [0, 1]
  LossReduction reduction = LossReduction::kMean;  // mean or sum
  double z_loss = 0.0;                             // >= 0
  bool compute_grad = true;  // false: the loss (and lse / total_weight) only, no gradient operands
  int64_t chunk_tokens = 0;  // tokens per chunk; 0: chosen (see above)

  bool operator==(const FusedLinearCrossEntropyDescriptor& o) const;  // every field (fields_equal)
};
BARACUDA_DESCRIBE(FusedLinearCrossEntropyDescriptor, input, weight, bias, index_dtype, ce_weight, ignore_index, label_smoothing,
                  reduction, z_loss, compute_grad, chunk_tokens);
inline bool FusedLinearCrossEntropyDescriptor::operator==(const FusedLinearCrossEntropyDescriptor& o) const { return fields_equal(*this, o); }

struct FusedLinearCrossEntropyArgs {
  TensorRef input;
  TensorRef weight;
  TensorRef bias;       // with `bias`
  TensorRef target;
  TensorRef ce_weight;  // with `ce_weight`
  TensorMut loss;
  TensorMut dinput;        // with compute_grad
  TensorMut dweight;       // with compute_grad
  TensorMut dbias;         // with compute_grad and bias
  TensorMut lse;           // optional
  TensorMut total_weight;  // optional; reduction mean
};
BARACUDA_DESCRIBE(FusedLinearCrossEntropyArgs, input, weight, bias, target, ce_weight, loss, dinput, dweight, dbias, lse, total_weight);

namespace detail {
struct FlceExec;  // the chunk plans (cuBLASLt GEMMs) and the workspace slices
}

class FusedLinearCrossEntropyPlan : public PlanBase<FusedLinearCrossEntropyDescriptor> {
 public:
  static Result<FusedLinearCrossEntropyPlan> select(const FusedLinearCrossEntropyDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const FusedLinearCrossEntropyArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const FusedLinearCrossEntropyArgs& args) const;
  int64_t chunk_tokens() const;  // the chunk the plan runs

 private:
  std::shared_ptr<const detail::FlceExec> exec_;
};

// ---------------------------------------------------------------- backward
// The gradients the forward formed, times the incoming dloss (a scalar of dtype), in place:
// dinput, dweight, dbias *= dloss (each optional: a null view is skipped). Workspace: none.
// Determinism: bitwise (one multiplication per element in f32 (f64), rounded to dtype).
using FusedLinearCrossEntropyBackwardDescriptor = FusedLinearCrossEntropyDescriptor;

struct FusedLinearCrossEntropyBackwardArgs {
  TensorRef dloss;
  TensorMut dinput;
  TensorMut dweight;
  TensorMut dbias;
};
BARACUDA_DESCRIBE(FusedLinearCrossEntropyBackwardArgs, dloss, dinput, dweight, dbias);

class FusedLinearCrossEntropyBackwardPlan : public PlanBase<FusedLinearCrossEntropyDescriptor> {
 public:
  static Result<FusedLinearCrossEntropyBackwardPlan> select(const FusedLinearCrossEntropyBackwardDescriptor& desc,
                                                             const PlanPreference& pref = {});
  Status can_implement(const FusedLinearCrossEntropyBackwardArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const FusedLinearCrossEntropyBackwardArgs& args) const;
};

}  // namespace baracuda
