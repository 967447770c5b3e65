// baracuda/ops/rope.hpp — rotary position embedding (RoPE) of q and k, and its backward.
//
// Math. Each (b, s, h) row x[0, head_dim) is rotated on its first rotary_dim elements, taken as
// rotary_dim/2 pairs (x1, x2); the rest of the row passes through unchanged:
//   pairing kHalf        (LLaMA / GPT-NeoX "rotate_half"): pair f = (x[f], x[f + rotary_dim/2])
//   pairing kInterleaved (GPT-J, Meta's reference):       pair f = (x[2f], x[2f + 1])
//   y1 = x1·cos θ − x2·sin θ,   y2 = x2·cos θ + x1·sin θ,   θ = p(b, s) · ω_f
// i.e. PyTorch's x·cos + rotate_half(x)·sin. Frequencies (rope_frequencies() returns them):
//   ω_f = base^(−2f / rotary_dim) for f in [0, rotary_dim/2), then per scaling:
//   kLinear: ω_f / factor (position interpolation);
//   kYaRN:   HF/vLLM YaRN — ramp between ω_f (extrapolation) and ω_f/factor (interpolation)
//            over the dims [floor(d(beta_fast)), ceil(d(beta_slow))] where
//            d(r) = rotary_dim·ln(original_max_position / (2πr)) / (2 ln base), clamped to
//            [0, rotary_dim−1]; cos and sin are multiplied by attention_factor
//            (0 means the default 0.1·ln(factor) + 1, or 1 when factor <= 1);
//   kLlama3: Llama-3.1 — wavelength λ = 2π/ω; λ > L/low_freq_factor: ω/factor;
//            λ < L/high_freq_factor: ω; otherwise (1−a)·ω/factor + a·ω with
//            a = (L/λ − low_freq_factor)/(high_freq_factor − low_freq_factor), L = original_max_position.
// Positions p(b, s): `positions` [S] or [B, S] (i32 or i64, any strides), or, when absent,
// position_offset + s. Angles are either computed (θ in float64 and reduced mod 2π, then
// cos/sin in f32 — f64 for f64 data — so the angle is exact to ~1e-16·|θ| even at long
// positions, more accurate than the f32 composite) or read from a caller-given cache
// cos/sin [cache_rows, rotary_dim/2] (any float dtype, any strides) at row p(b, s). A cache
// row outside [0, cache_rows) is never read: that row's rotated elements become NaN.
// Backward: dx = rotation by −θ of dy (the transpose), the same kernel with sin negated.
//
// Shapes: q [B, Hq, S, D] (layout kBHSD) or [B, S, Hq, D] (kBSHD); k the same with Hk heads
// (GQA: Hk may differ from Hq); heads_k = 0 means no k. rotary_dim even, 2 <= rotary_dim <= D
// (0 in the descriptor means D). Computed angles allow rotary_dim <= 2·kRopeMaxComputedPairs.
// Strides: any on every axis but the last, which must be 1. q and k are rotated in one launch.
// Dtypes: f32, f16, bf16, f64 data (q, k and outputs share it); math in f32 (f64 for f64),
//   each output rounded once. Accumulator: none (two products per element).
// Determinism: bitwise run-to-run deterministic (no atomics, no reductions).
// Workspace: none.
// Aliasing: exact in-place (out.data == in.data with identical strides) is supported for q and
//   for k; any other overlap between an output and any operand is an error. In place, the
//   pass-through part of the row keeps its values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

BARACUDA_ENUM(RopeLayout, uint8_t, (kBHSD, "bhsd"), (kBSHD, "bshd"));
BARACUDA_ENUM(RopePairing, uint8_t, (kHalf, "half"), (kInterleaved, "interleaved"));
BARACUDA_ENUM(RopeScaling, uint8_t, (kNone, "none"), (kLinear, "linear"), (kYaRN, "yarn"), (kLlama3, "llama3"));

inline constexpr int kRopeMaxComputedPairs = 256;  // rotary_dim <= 512 with computed angles

struct RopeScalingParams {
  double factor = 1.0;                  // kLinear, kYaRN, kLlama3 (> 0)
  int64_t original_max_position = 0;    // kYaRN, kLlama3 (> 0)
  double beta_fast = 32.0, beta_slow = 1.0;  // kYaRN
  double attention_factor = 0.0;        // kYaRN: 0 = 0.1·ln(factor) + 1 (1 when factor <= 1)
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  // kLlama3 (high > low)
  bool operator==(const RopeScalingParams&) const = default;
};
BARACUDA_DESCRIBE(RopeScalingParams, factor, original_max_position, beta_fast, beta_slow, attention_factor, low_freq_factor,
                  high_freq_factor);

struct RopeArgs;

struct RopeDescriptor {
  DType dtype = DType::bf16;
  RopeLayout layout = RopeLayout::kBSHD;
  RopePairing pairing = RopePairing::kHalf;
  int64_t batch = 1, seq = 0, heads_q = 0, heads_k = 0, head_dim = 0;
  int64_t rotary_dim = 0;  // 0: head_dim
  double base = 10000.0;
  RopeScaling scaling = RopeScaling::kNone;
  RopeScalingParams scale{};
  // positions: 0 = none (position_offset + s), 1 = tensor [S], 2 = tensor [B, S]
  int positions_rank = 0;
  DType positions_dtype = DType::i64;  // i32 or i64
  int64_t position_offset = 0;         // used only when positions_rank == 0
  // angles from a caller cache cos/sin [cache_rows, rotary_dim/2] instead of computed
  bool cos_sin_cache = false;
  DType cache_dtype = DType::f32;
  int64_t cache_rows = 0;

  int64_t rot_dim() const { return rotary_dim == 0 ? head_dim : rotary_dim; }
  bool operator==(const RopeDescriptor&) const = default;

  // The descriptor the views of `a` describe: dtype, batch, seq, heads_q, heads_k (0 when a.k
  // is empty), head_dim from q / k in `layout`; positions_rank / positions_dtype from
  // a.positions (none when empty); cos_sin_cache / cache_dtype / cache_rows from a.cos (none
  // when empty). The rest (pairing, rotary_dim, base, scaling, position_offset) keeps its
  // default for the caller to set. Fails when q is not rank 4 (shapes are checked by select()
  // and can_implement()).
  static Result<RopeDescriptor> from_args(const RopeArgs& a, RopeLayout layout);
};
BARACUDA_DESCRIBE(RopeDescriptor, dtype, layout, pairing, batch, seq, heads_q, heads_k, head_dim, rotary_dim, base, scaling,
                  scale, positions_rank, positions_dtype, position_offset, cos_sin_cache, cache_dtype, cache_rows);

// Forward: q_out = rope(q), k_out = rope(k) (k fields ignored when heads_k == 0).
struct RopeArgs {
  TensorRef q;
  TensorMut q_out;
  TensorRef k;
  TensorMut k_out;
  TensorRef positions;  // when positions_rank > 0
  TensorRef cos, sin;   // when cos_sin_cache
};
BARACUDA_DESCRIBE(RopeArgs, q, q_out, k, k_out, positions, cos, sin);

// Backward of the forward with the same descriptor: dq = rope_backward(dq_out), same for k.
using RopeBackwardDescriptor = RopeDescriptor;
struct RopeBackwardArgs {
  TensorRef dq_out;  // gradient of q_out
  TensorMut dq;      // gradient of q (may be dq_out's memory: in place)
  TensorRef dk_out;
  TensorMut dk;
  TensorRef positions;
  TensorRef cos, sin;
};
BARACUDA_DESCRIBE(RopeBackwardArgs, dq_out, dq, dk_out, dk, positions, cos, sin);

// The rotary_dim/2 frequencies ω_f after scaling, and the factor cos/sin are multiplied by
// (YaRN's attention factor, else 1), in float64 — what a caller needs to build its own cache.
// `inv_freq` must hold rot_dim()/2 values. Fails on a descriptor select() would reject.
Status rope_frequencies(const RopeDescriptor& d, double* inv_freq, double* attention_factor);

// What both directions share (the backward is the same rotation by −θ).
class RopePlanBase : public PlanBase<RopeDescriptor> {
 protected:
  // in/out: [0] = q side, [1] = k side (ignored when heads_k == 0)
  Status select_impl(const RopeDescriptor& desc, const PlanPreference& pref, bool backward);
  Status check(const TensorRef (&in)[2], const TensorMut (&out)[2]) const;
  Status launch(cudaStream_t stream, const TensorRef (&in)[2], const TensorMut (&out)[2], const TensorRef& positions,
                const TensorRef& cos, const TensorRef& sin) const;
  bool backward_ = false;
  double attention_factor_ = 1.0;
  double inv_freq_[kRopeMaxComputedPairs] = {};
};

class RopePlan : public RopePlanBase {
 public:
  static Result<RopePlan> select(const RopeDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const RopeArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const RopeArgs& args) const;
};

class RopeBackwardPlan : public RopePlanBase {
 public:
  static Result<RopeBackwardPlan> select(const RopeBackwardDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const RopeBackwardArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const RopeBackwardArgs& args) const;
};

}  // namespace baracuda
