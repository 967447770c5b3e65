// baracuda/ops/ctc_loss.hpp — F.ctc_loss (connectionist temporal classification), forward and
// backward, with PyTorch's arguments, defaults and gradient.
//
// Math, per sample n: lp = log_probs[:input_length_n, n, :] (log-probabilities, normally a
// log_softmax's output), target l_1 .. l_L (L = target_length_n), extended labels
// l' = (blank, l_1, blank, l_2, ..., l_L, blank) of 2L + 1 positions;
//   α_0(0) = lp[0, blank], α_0(1) = lp[0, l_1];
//   α_t(s) = lp[t, l'_s] + log(exp α_{t-1}(s) + exp α_{t-1}(s-1) + [l'_s ≠ blank, l'_s ≠ l'_{s-2}] exp α_{t-1}(s-2));
//   nll_n  = -log(exp α_{T-1}(2L) + exp α_{T-1}(2L-1))  (T = input_length_n; T = 0: 0 for L = 0, else inf)
// (the sum over every alignment that collapses to the target). An impossible target (too long for
// the input) gives inf; zero_infinity turns an infinite loss and its gradient into 0.
// reduction: none nll_n per sample; sum Σ nll_n; mean (PyTorch's default) Σ_n nll_n / max(L_n, 1) / N.
// Backward (PyTorch's ctc_loss_backward): with β the same recursion run backwards,
//   dlog_probs[t, n, c] = g_n · (exp lp[t, c] - exp(log Σ_{s: l'_s = c} α_t(s) β_t(s) + nll_n - lp[t, c]))
//   for t < input_length_n, 0 for later t; g_n = dloss (none: dloss[n]; mean: dloss / max(L_n, 1) / N).
//   This is the gradient with respect to the logits of a log_softmax (what PyTorch returns); the
//   gradient with respect to log_probs as free inputs is it minus g_n · exp lp, a term
//   log_softmax's backward removes (Σ_c exp lp = 1).
// Shapes: log_probs [T, N, C] (batched) or [T, C] (one sample); targets [N, S] padded (sample n's
//   labels in its first L_n entries; S = max_target_length) or [total_target_length] concatenated
//   (samples one after another, in order); input_lengths, target_lengths [N] ([] unbatched);
//   loss [N] (none; [] unbatched) or []; dlog_probs log_probs' shape. Any strides.
// Lengths and labels are device data and are not read on the host (graph-capturable): a sample
//   whose input_length is outside [0, T], whose target_length is outside [0, max_target_length]
//   (concatenated: or runs past total_target_length), or whose label is outside [0, C) gets a NaN
//   loss and NaN gradient (PyTorch raises). Labels equal to blank are not refused (PyTorch leaves
//   them undefined; here they take part in the recursion like any label).
// Dtypes: log_probs, loss, dloss, dlog_probs `dtype` (f32, f16, bf16, f64); targets and lengths
//   `index_dtype` (i32, i64). Math and accumulation f32 (f64).
// Layout: a block per sample walks t with the positions s across its threads (one barrier per
//   step; PyTorch's structure; the next step's log-probability fetched during this one), the
//   step's rows in shared memory when they fit. The backward's block per sample stores α and β
//   of every step and groups the positions by label (O(S²) work once); a second kernel, a block
//   per (t, n), forms the gradient row (log Σ α·β per label: a thread per small group, a warp per
//   group of more than 32 positions). Determinism: bitwise run-to-run (fixed-order sums; mean /
//   sum: rows::block_sum of the per-sample losses; no atomics on floats). Workspace: forward
//   N · (2 rows of 2S + 1 accumulators + 7 index arrays of 2S + 1); backward N · (2T rows + 7
//   index arrays) (α and β of every step); workspace_size() gives it. Aliasing: none.
#pragma once

#include <cstddef>
#include <cstdint>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/loss.hpp"

namespace baracuda {

struct CtcLossDescriptor {
  DType dtype = DType::f32;        // log_probs, loss
  DType index_dtype = DType::i64;  // targets, input_lengths, target_lengths
  bool batched = true;             // log_probs [T, N, C]; false: [T, C], N = 1
  int64_t T = 0, N = 1, C = 0;
  int64_t max_target_length = 0;   // S: padded targets' second extent; concatenated: the longest target allowed
  bool concatenated = false;       // targets [total_target_length] (else [N, S] padded)
  int64_t total_target_length = 0;
  int64_t blank = 0;               // in [0, C)
  LossReduction reduction = LossReduction::kMean;
  bool zero_infinity = false;

  bool operator==(const CtcLossDescriptor&) const = default;
};
BARACUDA_DESCRIBE(CtcLossDescriptor, dtype, index_dtype, batched, T, N, C, max_target_length, concatenated, total_target_length, blank,
                  reduction, zero_infinity);

struct CtcLossArgs {
  TensorRef log_probs;
  TensorRef targets;
  TensorRef input_lengths;
  TensorRef target_lengths;
  TensorMut loss;
};
BARACUDA_DESCRIBE(CtcLossArgs, log_probs, targets, input_lengths, target_lengths, loss);

class CtcLossPlan : public PlanBase<CtcLossDescriptor> {
 public:
  static Result<CtcLossPlan> select(const CtcLossDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const CtcLossArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const CtcLossArgs& args) const;
};

// Backward: dlog_probs from dloss (the forward's α recomputed; nothing saved between the two).
using CtcLossBackwardDescriptor = CtcLossDescriptor;

struct CtcLossBackwardArgs {
  TensorRef log_probs;
  TensorRef targets;
  TensorRef input_lengths;
  TensorRef target_lengths;
  TensorRef dloss;
  TensorMut dlog_probs;
};
BARACUDA_DESCRIBE(CtcLossBackwardArgs, log_probs, targets, input_lengths, target_lengths, dloss, dlog_probs);

class CtcLossBackwardPlan : public PlanBase<CtcLossDescriptor> {
 public:
  static Result<CtcLossBackwardPlan> select(const CtcLossBackwardDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const CtcLossBackwardArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const CtcLossBackwardArgs& args) const;
};

}  // namespace baracuda
