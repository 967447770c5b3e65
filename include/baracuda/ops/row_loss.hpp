// baracuda/ops/row_loss.hpp — the losses that reduce a sample's row before the batch:
// F.multilabel_soft_margin_loss, F.cosine_embedding_loss and F.triplet_margin_loss, forward and
// backward (PyTorch's definitions, defaults and argument names).
//
// Shapes: every row operand [N, D] (N samples of D features or classes) or [D] (one sample), any
//   strides; cosine_embedding's target one value per sample ([N] or []); multilabel's weight [D].
//   loss: reduction none [N] (or [] for one sample), else a scalar.
// Math, per sample (x = input / input1 / anchor, x2 = input2 / positive, x3 = negative):
//   multilabel_soft_margin  l = 1/D · Σ_c w_c · (y_c · softplus(-x_c) + (1 - y_c) · softplus(x_c))
//                           (= -(y log σ(x) + (1 - y) log σ(-x)) weighted, averaged over classes)
//   cosine_embedding        cos = Σ x x2 / sqrt((Σ x² + 1e-12) (Σ x2² + 1e-12));
//                           l = 1 - cos (y = 1), max(0, cos - margin) (y = -1), 0 (any other y)
//   triplet_margin          d(a, b) = ||a - b + eps||_p (F.pairwise_distance); d_an = d(x, x3), or
//                           min(d(x, x3), d(x2, x3)) with swap; l = max(0, margin + d(x, x2) - d_an)
//   reduction: none l, sum Σ l, mean Σ l / N.
// Defaults: margin 0 (cosine_embedding) / 1 (triplet_margin); p 2, eps 1e-6, swap false.
// Backward: dinput (every row input), dtarget (multilabel: -w_c x_c / D · g; optional), from dloss;
//   PyTorch's conventions at the kinks: clamp_min's gradient passes at 0, min's splits ties in
//   half, the p-norm's gradient is 0 at a zero difference.
// Dtypes: every operand `dtype` (f32, f16, bf16, f64; cosine's target too: ±1 as floats); math
//   and accumulation f32 (f64).
// Layout: rows of unit stride: a warp per sample (D ≤ 1024) or a block of 256; otherwise a thread
//   per sample. Determinism: bitwise run-to-run (fixed-order sums; mean / sum: rows::block_sum of
//   the per-sample losses). Workspace: mean / sum: N accumulators. Aliasing: none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/loss.hpp"

namespace baracuda {

BARACUDA_ENUM(RowLossKind, uint8_t, (kMultilabelSoftMargin, "multilabel_soft_margin"), (kCosineEmbedding, "cosine_embedding"),
              (kTripletMargin, "triplet_margin"));

struct RowLossDescriptor {
  RowLossKind op = RowLossKind::kMultilabelSoftMargin;
  DType dtype = DType::f32;
  int rank = 2;  // 1 ([D]) or 2 ([N, D])
  int64_t shape[2] = {};
  LossReduction reduction = LossReduction::kMean;
  bool weight = false;            // multilabel_soft_margin: class weights [D]
  std::optional<double> margin;   // cosine_embedding (0), triplet_margin (1)
  double p = 2.0;                 // triplet_margin: > 0, finite
  double eps = 1e-6;              // triplet_margin
  bool swap = false;              // triplet_margin

  bool operator==(const RowLossDescriptor&) const = default;
};
BARACUDA_DESCRIBE(RowLossDescriptor, op, dtype, rank, shape, reduction, weight, margin, p, eps, swap);

// Operands by op: multilabel_soft_margin (input, target, weight), cosine_embedding (input1,
// input2, target), triplet_margin (anchor, positive, negative).
struct RowLossArgs {
  TensorRef input, input1, input2, anchor, positive, negative;
  TensorRef target;
  TensorRef weight;
  TensorMut loss;
};
BARACUDA_DESCRIBE(RowLossArgs, input, input1, input2, anchor, positive, negative, target, weight, loss);

class RowLossPlan : public PlanBase<RowLossDescriptor> {
 public:
  static Result<RowLossPlan> select(const RowLossDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const RowLossArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const RowLossArgs& args) const;
};

using RowLossBackwardDescriptor = RowLossDescriptor;

// The gradient of every row input (d + its name) and multilabel's optional dtarget.
struct RowLossBackwardArgs {
  TensorRef input, input1, input2, anchor, positive, negative;
  TensorRef target;
  TensorRef weight;
  TensorRef dloss;
  TensorMut dinput, dinput1, dinput2, danchor, dpositive, dnegative;
  TensorMut dtarget;
};
BARACUDA_DESCRIBE(RowLossBackwardArgs, input, input1, input2, anchor, positive, negative, target, weight, dloss, dinput, dinput1, dinput2,
                  danchor, dpositive, dnegative, dtarget);

class RowLossBackwardPlan : public PlanBase<RowLossDescriptor> {
 public:
  static Result<RowLossBackwardPlan> select(const RowLossBackwardDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const RowLossBackwardArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const RowLossBackwardArgs& args) const;
};

}  // namespace baracuda
