// baracuda/ops/channel_norm.hpp — the normalizations whose statistics run over sets of channels
// and positions of x = [N, C, *spatial]: F.batch_norm (aten.native_batch_norm), F.group_norm
// (aten.native_group_norm), F.instance_norm; and their backward (dx, dweight, dbias).
//
// Math (S = the product of the spatial extents; a cell is one (n, c): S elements):
//   batch_norm     statistics per channel c over its N cells (M = N·S elements)
//   group_norm     statistics per (n, g) over the C / groups cells of group g (M = C / groups · S)
//   instance_norm  statistics per cell (n, c) (M = S)
//   mean = Σx / M, var = Σ(x - mean)² / M (biased), rstd = 1 / sqrt(var + eps),
//   y = (x - mean) · rstd · w[c] + b[c] (w, b optional: 1 and 0).
//   training = false (batch_norm / instance_norm with running stats: eval): mean = running_mean[c],
//   rstd = 1 / sqrt(running_var[c] + eps).
//   training with running stats: running_mean = (1 - momentum) · running_mean + momentum · mean,
//   running_var likewise with the unbiased var · M / (M - 1) (instance_norm: averaged over the
//   batch first, as PyTorch's); M = 1 is refused (PyTorch: "Expected more than 1 value per
//   channel when training").
// Shapes: x, y [N, C, *spatial] (rank 2..8; spatial may be empty); weight, bias, running_mean,
//   running_var [C]; mean, rstd: batch_norm [C], group_norm [N, groups], instance_norm [N, C].
//   Every view any strides as long as each one's spatial axes merge into one (NCHW: stride 1;
//   channels_last / NHWC: stride C); N and C any strides.
// Dtypes: x, y f32, f16, bf16, f64; weight, bias, running stats (param_dtype) x's dtype or f32
//   for an f16 / bf16 x (PyTorch's mixed batch_norm); mean, rstd f32 (f64 for f64).
// Accumulation: f32 (f64): each cell's elements in chunks, a chunk's (mean, M2) from sums shifted
//   by its first element, chunks and cells merged (Chan's update) in a fixed order.
// Layout: a warp per chunk of a cell where the spatial axis is unit-stride and S >= 32, else a
//   thread per chunk with adjacent channels on adjacent threads (channels_last; [N, C]), then y
//   element by element in x's storage order.
// Determinism: bitwise run-to-run (fixed orders; no atomics).
// Workspace: the chunks' partials (2 accumulators each) and a per-cell table (3 accumulators).
// Aliasing: none; running_mean / running_var are updated in place (in-out operands).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

BARACUDA_ENUM(ChannelNormKind, uint8_t, (kBatchNorm, "batch_norm"), (kGroupNorm, "group_norm"), (kInstanceNorm, "instance_norm"));

struct ChannelNormDescriptor {
  ChannelNormKind op = ChannelNormKind::kBatchNorm;
  DType dtype = DType::f32;          // x, y
  std::optional<DType> param_dtype;  // weight, bias, running stats; unset: x's dtype
  int rank = 0;
  int64_t shape[kMaxRank] = {};  // [N, C, *spatial]
  int64_t groups = 1;            // group_norm: C % groups == 0
  bool weight = true;
  bool bias = true;
  bool running_stats = false;  // batch_norm / instance_norm: running_mean, running_var operands
  bool training = true;        // batch statistics (false: the running stats; needs running_stats)
  double momentum = 0.1;
  double eps = 1e-5;

  bool operator==(const ChannelNormDescriptor&) const = default;
};
BARACUDA_DESCRIBE(ChannelNormDescriptor, op, dtype, param_dtype, rank, shape, groups, weight, bias, running_stats, training,
                  momentum, eps);

struct ChannelNormArgs {
  TensorRef x;
  TensorRef weight;        // with `weight`
  TensorRef bias;          // with `bias`
  TensorMut running_mean;  // with `running_stats`: read (eval) or updated (training)
  TensorMut running_var;
  TensorMut y;
  TensorMut mean;  // the statistics used (eval: running_mean)
  TensorMut rstd;
};
BARACUDA_DESCRIBE(ChannelNormArgs, x, weight, bias, running_mean, running_var, y, mean, rstd);

class ChannelNormPlan : public PlanBase<ChannelNormDescriptor> {
 public:
  static Result<ChannelNormPlan> select(const ChannelNormDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const ChannelNormArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const ChannelNormArgs& args) const;

 private:
  DType param_ = DType::f32, stat_ = DType::f32;
};

// ---------------------------------------------------------------- backward
// From x, the forward's mean / rstd, weight and dy (xhat = (x - mean) · rstd, g = dy · w[c], sums
// over a statistic's M elements):
//   training  dx = rstd · (g - Σg / M - xhat · Σ(g · xhat) / M)
//   eval      dx = g · rstd (the running stats are constants)
//   dweight[c] = Σ_{n, s} dy · xhat, dbias[c] = Σ_{n, s} dy.
// Operands: x, weight (with `weight`), mean, rstd, dy -> dx (x's dtype), dweight, dbias
// (param_dtype; with `weight` / `bias`). Accumulation: f32 (f64), per chunk then per cell, cells
// merged in a fixed order: bitwise run-to-run. Workspace: as the forward's.
using ChannelNormBackwardDescriptor = ChannelNormDescriptor;

struct ChannelNormBackwardArgs {
  TensorRef x;
  TensorRef weight;
  TensorRef mean;
  TensorRef rstd;
  TensorRef dy;
  TensorMut dx;
  TensorMut dweight;
  TensorMut dbias;
};
BARACUDA_DESCRIBE(ChannelNormBackwardArgs, x, weight, mean, rstd, dy, dx, dweight, dbias);

class ChannelNormBackwardPlan : public PlanBase<ChannelNormDescriptor> {
 public:
  static Result<ChannelNormBackwardPlan> select(const ChannelNormBackwardDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const ChannelNormBackwardArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const ChannelNormBackwardArgs& args) const;

 private:
  DType param_ = DType::f32, stat_ = DType::f32;
};

}  // namespace baracuda
