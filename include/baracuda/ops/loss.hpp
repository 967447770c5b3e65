// baracuda/ops/loss.hpp — F.cross_entropy and F.nll_loss (class-index or probability targets,
// class weights, ignore_index, label_smoothing, reduction none / mean / sum), with an optional
// z-loss term, and their backward (the gradient of the input).
//
// (reduction batchmean is kl_div's: refused here.)
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
//   probability t   t'_c = (1 - ε) · t_c + ε / C,  l = Σ_c w_c · t'_c · (-logp_c)  (cross_entropy only;
//                   ignore_index must be negative, as PyTorch requires)
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
#include <optional>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

BARACUDA_ENUM(LossReduction, uint8_t, (kNone, "none"), (kMean, "mean"), (kSum, "sum"), (kBatchMean, "batchmean"));  // batchmean: kl_div only
BARACUDA_ENUM(ClassLossKind, uint8_t, (kCrossEntropy, "cross_entropy"), (kNllLoss, "nll_loss"));
BARACUDA_ENUM(LossTarget, uint8_t, (kIndex, "index"), (kProbability, "probability"));

struct CrossEntropyDescriptor {
  ClassLossKind op = ClassLossKind::kCrossEntropy;
  DType dtype = DType::f32;        // input, weight, probability target, loss
  DType index_dtype = DType::i64;  // class-index target
  LossTarget target_kind = LossTarget::kIndex;  // (PyTorch infers it from the target's dtype)
  int rank = 2;  // input: 1 ([C]) .. 8 ([N, C, d1, ...])
  int64_t shape[kMaxRank] = {};
  bool weight = false;  // class weights [C]
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;  // in [0, 1]
  LossReduction reduction = LossReduction::kMean;
  double z_loss = 0.0;  // >= 0; cross_entropy only

  bool operator==(const CrossEntropyDescriptor&) const = default;
};
BARACUDA_DESCRIBE(CrossEntropyDescriptor, op, dtype, index_dtype, target_kind, rank, shape, weight, ignore_index, label_smoothing, reduction,
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
// total_weight the forward's output), dloss (sum), per sample not ignored (ignored: dinput = 0 · p,
// NaN where the row's softmax is, as log_softmax's backward of a zero row; nll_loss: exactly 0):
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

// ================================================================ pointwise losses
// baracuda's F.mse_loss, l1_loss, smooth_l1_loss, huber_loss, binary_cross_entropy,
// binary_cross_entropy_with_logits, kl_div, poisson_nll_loss, gaussian_nll_loss,
// soft_margin_loss, hinge_embedding_loss and margin_ranking_loss: an element-wise loss l_i of the
// operands' element i, then reduction none (l), sum (Σ l), mean (Σ l / numel) or batchmean
// (kl_div: Σ l / shape[0]). Per element (d = x - y; PyTorch's definitions and defaults):
//   mse                 d²
//   l1                  |d|
//   smooth_l1 (beta 1)  |d| < beta ? 0.5 d² / beta : |d| - 0.5 beta     (beta = 0: l1)
//   huber (delta 1)     |d| < delta ? 0.5 d² : delta (|d| - 0.5 delta)
//   binary_cross_entropy            -w (y max(log x, -100) + (1 - y) max(log1p(-x), -100))  (x outside
//                       [0, 1] is NaN, where PyTorch raises)
//   binary_cross_entropy_with_logits w ((1 - y) x + (1 + (pw - 1) y) (log1p(exp(-|x|)) + max(-x, 0)))
//   kl_div              y (log y - x) (y = 0: 0 - 0 · x; y < 0: NaN); log_target: exp(y) (y - x)
//   poisson_nll         log_input: exp(x) - y x; else x - y log(x + eps) (eps 1e-8); full: +
//                       y log y - y + 0.5 log(2 pi y) where y > 1
//   gaussian_nll        0.5 (log v + d² / v) with v = max(var, eps) (eps 1e-6; a negative var is clamped,
//                       where PyTorch raises); full: + 0.5 log(2 pi)
//   soft_margin         log(1 + exp(-y x))
//   hinge_embedding     (y != 1 ? max(0, margin - x) : 0) + (y != -1 ? x : 0)   (margin 1)
//   margin_ranking      max(0, -y (x - x2) + margin)                         (margin 0; x2 = input2)
// Operands: input, target, and as the op takes them input2 (margin_ranking), var (gaussian_nll),
//   weight (binary_cross_entropy[_with_logits], optional), pos_weight (with_logits, optional):
//   all of the input's shape, any strides (a broadcast operand is a view with stride 0 on the
//   broadcast axes, e.g. pos_weight [C] as strides (0, ..., 0, 1)). loss: the input's shape
//   (none) or a scalar.
// Dtypes: every operand `dtype` (f32, f16, bf16, f64); math in f32 (f64).
// Accumulation (sum / mean / batchmean): each of G = min(ceil(numel / 4096), 1024) blocks adds its
//   elements (grid-stride, in order per thread, then a fixed tree), a second pass the G partials in
//   order: bitwise run-to-run and across devices for the same layout (flat 16-byte-aligned views
//   take vector pieces, whose order differs from the scalar path's). Workspace: G accumulators.
// Aliasing: none. Backward: below.
BARACUDA_ENUM(PointwiseLossKind, uint8_t, (kMse, "mse"), (kL1, "l1"), (kSmoothL1, "smooth_l1"), (kHuber, "huber"),
              (kBce, "binary_cross_entropy"), (kBceWithLogits, "binary_cross_entropy_with_logits"), (kKlDiv, "kl_div"),
              (kPoissonNll, "poisson_nll"), (kGaussianNll, "gaussian_nll"), (kSoftMargin, "soft_margin"),
              (kHingeEmbedding, "hinge_embedding"), (kMarginRanking, "margin_ranking"));

struct PointwiseLossDescriptor {
  PointwiseLossKind op = PointwiseLossKind::kMse;
  DType dtype = DType::f32;
  int rank = 1;  // 0 .. 8
  int64_t shape[kMaxRank] = {};
  LossReduction reduction = LossReduction::kMean;
  std::optional<double> beta;    // smooth_l1 (1.0)
  std::optional<double> delta;   // huber (1.0)
  std::optional<double> margin;  // hinge_embedding (1.0), margin_ranking (0.0)
  std::optional<double> eps;     // poisson_nll (1e-8), gaussian_nll (1e-6)
  bool log_input = true;         // poisson_nll
  bool full = false;             // poisson_nll, gaussian_nll
  bool log_target = false;       // kl_div
  bool weight = false;           // binary_cross_entropy[_with_logits]
  bool pos_weight = false;       // binary_cross_entropy_with_logits

  bool operator==(const PointwiseLossDescriptor&) const = default;
};
BARACUDA_DESCRIBE(PointwiseLossDescriptor, op, dtype, rank, shape, reduction, beta, delta, margin, eps, log_input, full, log_target,
                  weight, pos_weight);

struct PointwiseLossArgs {
  TensorRef input;
  TensorRef input2;  // margin_ranking
  TensorRef target;
  TensorRef var;  // gaussian_nll
  TensorRef weight;
  TensorRef pos_weight;
  TensorMut loss;
};
BARACUDA_DESCRIBE(PointwiseLossArgs, input, input2, target, var, weight, pos_weight, loss);

class PointwiseLossPlan : public PlanBase<PointwiseLossDescriptor> {
 public:
  static Result<PointwiseLossPlan> select(const PointwiseLossDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const PointwiseLossArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const PointwiseLossArgs& args) const;
};

// Backward: dloss (the input's shape for none, else a scalar) times d l_i / d operand, divided by
// numel (mean) or shape[0] (batchmean), PyTorch's derivative conventions at the kinks (sign(0) =
// 0 for l1; smooth_l1 / huber: d / beta, d inside [-beta, beta] / [-delta, delta]; hinge and
// margin_ranking: the gradient passes where the hinge's argument is exactly 0, as clamp_min's;
// binary_cross_entropy: w (x - y) / max(x (1 - x), 1e-12); gaussian_nll: the var gradient at the
// clamped v, as F.gaussian_nll_loss's no-grad clamp; kl_div's dtarget at y = 0 is 0 (PyTorch's
// xlogy composite gives NaN there), NaN for y < 0).
// Outputs: dinput; optional dtarget (every op but binary_cross_entropy and hinge_embedding; also
// soft_margin's -x·σ(-y x), which PyTorch does not offer), dinput2 (margin_ranking), dvar
// (gaussian_nll). Workspace: none. Each element written once.
using PointwiseLossBackwardDescriptor = PointwiseLossDescriptor;

struct PointwiseLossBackwardArgs {
  TensorRef input;
  TensorRef input2;
  TensorRef target;
  TensorRef var;
  TensorRef weight;
  TensorRef pos_weight;
  TensorRef dloss;
  TensorMut dinput;
  TensorMut dinput2;
  TensorMut dtarget;
  TensorMut dvar;
};
BARACUDA_DESCRIBE(PointwiseLossBackwardArgs, input, input2, target, var, weight, pos_weight, dloss, dinput, dinput2, dtarget, dvar);

class PointwiseLossBackwardPlan : public PlanBase<PointwiseLossDescriptor> {
 public:
  static Result<PointwiseLossBackwardPlan> select(const PointwiseLossBackwardDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const PointwiseLossBackwardArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const PointwiseLossBackwardArgs& args) const;
};

}  // namespace baracuda
