// baracuda/ops/loss.hpp — F.cross_entropy and F.nll_loss (class-index or probability targets,
// class weights, ignore_index, label_smoothing, reduction none / mean / sum), with an optional
// z-loss term, and their backward (the gradient of the input).
//
// Shapes: input [C] (one sample), [N, C] or [N, C, d1, ..., dk] (the class axis is 1; every
//   other position is a sample: S = N · d1 · ... · dk samples); a class-index target has the
//   samples' shape ([], [N] or [N, d1, ...]), a probability target the input's shape; weight [C];
//   loss: reduction none the samples' shape, else a scalar (rank 0). Any strides on every view.
// Math, per sample with scores x_0 .. x_{C-1} (cross_entropy: lse = log Σ_c exp(x_c), logp_c =
//   x_c - lse; nll_loss: logp = x, the input holds log-probabilities already), ε label_smoothing,
//   w the class weights (absent: all 1), W = Σ_c w_c:
//   class index t   l = (1 - ε) · w_t · (-logp_t) + ε / C · Σ_c w_c · (-logp_c)   (nll_loss: ε = 0)
//                   a sample whose t is ignore_index gives l = 0 and weight 0; a t outside
//                   [0, C) that is not ignore_index is never dereferenced: its l is NaN (PyTorch
//                   raises a device-side assert), which makes a mean or sum NaN too
//   probability t   t'_c = (1 - ε) · t_c + ε / C,  l = Σ_c w_c · t'_c · (-logp_c)  (cross_entropy only)
//   z_loss > 0      l += z_loss · lse² for every sample not ignored (PaLM's auxiliary term; not in
//                   PyTorch; cross_entropy only)
//   reduction none: loss = l per sample; sum: Σ l; mean: Σ l / Σ w_t over the samples kept (class
//   index; every sample ignored gives 0 / 0 = NaN, as PyTorch), Σ l / S (probability target).
//   Special values as log_softmax: a NaN or +inf score, or a fully -inf row, makes l NaN.
// Dtypes: input, weight, probability target and loss share `dtype` (f32, f16, bf16, f64); a
//   class-index target `index_dtype` (i64 or i32); lse and total_weight f32 (f64 for f64).
// Outputs besides loss (both optional): lse per sample (cross_entropy: what the backward reads;
//   NaN where a score is NaN or +inf, -inf for a row of -inf),
//   total_weight (the mean's divisor Σ w_t, as aten's nll_loss_forward returns it; S for a
//   probability target). Accumulation: f32 (f64): each sample's max and Σ exp(x - max) online over
//   a thread's classes, the threads' pairs combined in a fixed tree; mean / sum: the per-sample
//   losses added in a fixed order (one block, in sample order per thread, then a tree).
// Layout: class axis of unit stride: a warp per sample (C ≤ 1024) or a block of 256 threads per
//   sample, 16-byte loads where aligned; otherwise a thread per sample (adjacent samples on
//   adjacent threads: the [N, C, d...] form reads coalesced along d). The input is read once.
// Determinism: bitwise run-to-run (fixed orders; no atomics).
// Workspace: mean / sum: 2 · S accumulators (the per-sample losses and weights); none: 0.
// Aliasing: none.
#pragma once

#include <cstddef>
#include <cstdint>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

BARACUDA_ENUM(LossReduction, uint8_t, (kNone, "none"), (kMean, "mean"), (kSum, "sum"));
BARACUDA_ENUM(ClassLossKind, uint8_t, (kCrossEntropy, "cross_entropy"), (kNllLoss, "nll_loss"));
BARACUDA_ENUM(LossTarget, uint8_t, (kIndex, "index"), (kProbability, "probability"));

struct CrossEntropyDescriptor {
  ClassLossKind op = ClassLossKind::kCrossEntropy;
  DType dtype = DType::f32;        // input, weight, probability target, loss
  DType index_dtype = DType::i64;  // class-index target
  LossTarget target = LossTarget::kIndex;
  int rank = 2;  // input: 1 ([C]) .. 8 ([N, C, d1, ...])
  int64_t shape[kMaxRank] = {};
  bool weight = false;  // class weights [C]
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;  // in [0, 1]
  LossReduction reduction = LossReduction::kMean;
  double z_loss = 0.0;  // >= 0; cross_entropy only

  bool operator==(const CrossEntropyDescriptor&) const = default;
};
BARACUDA_DESCRIBE(CrossEntropyDescriptor, op, dtype, index_dtype, target, rank, shape, weight, ignore_index, label_smoothing, reduction,
                  z_loss);

struct CrossEntropyArgs {
  TensorRef input;
  TensorRef target;
  TensorRef weight;        // with `weight`
  TensorMut loss;
  TensorMut lse;           // optional; cross_entropy
  TensorMut total_weight;  // optional; reduction mean
};
BARACUDA_DESCRIBE(CrossEntropyArgs, input, target, weight, loss, lse, total_weight);

class CrossEntropyPlan : public PlanBase<CrossEntropyDescriptor> {
 public:
  static Result<CrossEntropyPlan> select(const CrossEntropyDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const CrossEntropyArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const CrossEntropyArgs& args) const;

 private:
  DType acc_ = DType::f32;
};

// ---------------------------------------------------------------- backward
// dinput from dloss (reduction none: the samples' shape; else a scalar), with p = exp(x - lse)
// (lse: the forward's output; cross_entropy) and g = dloss (none), dloss / total_weight (mean;
// total_weight the forward's output), dloss (sum), per sample not ignored (ignored: dinput = 0):
//   class index     dinput_c = g · ((1 - ε) · w_t · (p_c - [c = t]) + ε / C · (W · p_c - w_c)
//                               + 2 · z_loss · lse · p_c)
//   nll_loss        dinput_c = -g · w_t · [c = t]   (input not read)
//   probability     dinput_c = g · (p_c · Σ_k w_k t'_k - w_c · t'_c + 2 · z_loss · lse · p_c)
// The probability target's own gradient is not computed. Operands: input (cross_entropy), target,
// weight, lse (cross_entropy), total_weight (mean), dloss -> dinput. Accumulation f32 (f64);
// W and Σ w t' summed per sample in a fixed tree. Layout and determinism as the forward; each
// element of dinput written once. Workspace: none. Aliasing: none.
using CrossEntropyBackwardDescriptor = CrossEntropyDescriptor;

struct CrossEntropyBackwardArgs {
  TensorRef input;
  TensorRef target;
  TensorRef weight;
  TensorRef lse;
  TensorRef total_weight;
  TensorRef dloss;
  TensorMut dinput;
};
BARACUDA_DESCRIBE(CrossEntropyBackwardArgs, input, target, weight, lse, total_weight, dloss, dinput);

class CrossEntropyBackwardPlan : public PlanBase<CrossEntropyDescriptor> {
 public:
  static Result<CrossEntropyBackwardPlan> select(const CrossEntropyBackwardDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const CrossEntropyBackwardArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const CrossEntropyBackwardArgs& args) const;

 private:
  DType acc_ = DType::f32;
};

}  // namespace baracuda
