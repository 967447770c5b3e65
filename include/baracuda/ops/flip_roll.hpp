// baracuda/ops/flip_roll.hpp — torch.flip and torch.roll (jnp.flip / jnp.roll): copies whose
// source index is a reflection or a cyclic shift of the destination index on some axes.
//
// Math: flip:  out[..., i_a, ...] = input[..., n_a − 1 − i_a, ...] for every a in dims.
//       roll:  out[..., i_a, ...] = input[..., (i_a − shifts[k]) mod n_a, ...] for dims[k] = a
//              (a dim named twice rolls by the sum of its shifts); dims empty: the input
//              flattened in row-major order, rolled by shifts[0] (one shift), reshaped back.
// Shapes: input and out [shape] (rank 0..8); dims in [−rank, rank) (negative from the end, as
//   PyTorch). flip: each dim at most once (an empty list copies). roll: shifts and dims of one
//   length (or dims empty and one shift); any int64 shift, taken mod the extent.
// Strides: any for input (0, negative), out any non-self-overlapping view. Axes mapped alike
//   on both sides are merged; the trailing identity run (or the last axis when it is the one
//   flipped / rolled) moves in 16-byte pieces where aligned (a flipped piece reverses its
//   elements in registers; a roll by a part of a piece joins two source pieces), else element
//   by element.
// Dtypes: every real dtype, bit-exact. Determinism: bitwise. Workspace: none.
// Aliasing: out must not overlap input (the map reads elements other threads overwrite).
// Backward (no row): flip's is the flip of dout over the same dims; roll's is the roll of dout
//   by the negated shifts (RollDescriptor::inverse()).
#pragma once

#include <cstdint>
#include <span>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

struct FlipDescriptor {
  DType dtype = DType::f32;
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  IntList dims;  // the axes reversed

  static FlipDescriptor make(DType dtype, std::span<const int64_t> shape, std::span<const int64_t> dims);
  bool operator==(const FlipDescriptor&) const = default;
};
BARACUDA_DESCRIBE(FlipDescriptor, dtype, rank, shape, dims);

struct RollDescriptor {
  DType dtype = DType::f32;
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  IntList shifts;  // one per dim (dims empty: one, over the flattened input)
  IntList dims;

  static RollDescriptor make(DType dtype, std::span<const int64_t> shape, std::span<const int64_t> shifts,
                             std::span<const int64_t> dims = {});
  // The roll that undoes this one (the backward): every shift negated.
  RollDescriptor inverse() const;
  bool operator==(const RollDescriptor&) const = default;
};
BARACUDA_DESCRIBE(RollDescriptor, dtype, rank, shape, shifts, dims);

struct FlipRollArgs {
  TensorRef input;
  TensorMut out;
};
BARACUDA_DESCRIBE(FlipRollArgs, input, out);

class FlipPlan : public PlanBase<FlipDescriptor> {
 public:
  static Result<FlipPlan> select(const FlipDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const FlipRollArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const FlipRollArgs& args) const;
};

class RollPlan : public PlanBase<RollDescriptor> {
 public:
  static Result<RollPlan> select(const RollDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const FlipRollArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const FlipRollArgs& args) const;
};

}  // namespace baracuda
