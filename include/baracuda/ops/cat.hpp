// baracuda/ops/cat.hpp — torch.cat / torch.stack (jnp.concatenate / jnp.stack): N inputs joined
// along one axis in one launch.
//
// Math: cat: out.narrow(dim, begin_i, sizes[i]) = inputs[i], begin_i = Σ_{j<i} sizes[j].
//   stack: out.select(dim, i) = inputs[i] (a cat of the inputs unsqueezed at dim).
// Shapes: out [shape] (rank 1..8); cat: inputs[i] = shape with shape[dim] replaced by sizes[i];
//   stack: every input = shape without axis dim, sizes all 1 (one per input), shape[dim] = N.
//   dim in [-rank, rank) (negative counts from the end, as PyTorch; for stack the output's rank).
//   sizes[i] may be 0 (an input with nothing along dim); N >= 1. PyTorch's legacy skip of 1-D
//   empty inputs of another shape is not taken: every input has the output's other extents.
// Strides: any for every input (mixed layouts, 0, negative), any non-self-overlapping out (a
//   slice of a larger buffer: a KV cache). When every view's axes before dim merge into one
//   strided run and its axes from dim on are contiguous, rows are copied in 16-byte pieces
//   where aligned (else element by element); otherwise a strided element walk.
// Dtypes: every real dtype (f32 f16 bf16 f64 f8e4m3 f8e5m2 i8 u8 i16 i32 i64 bool). `dtype` is
//   out's; in_dtypes (empty: every input is `dtype`) gives each input's, with PyTorch's rule:
//   their result_type (promote_types over the inputs) must cast to `dtype` (torch.can_cast: no
//   float -> integer or bool, no number -> bool). Inputs of out's dtype move bit-exactly; the
//   others are converted by PyTorch's cast (the copy row's `to`) straight into their slice.
// Launches: one per kMaxCatInputsPerLaunch (128) inputs of out's dtype (the 2, 8, 64-input cases
//   are one launch), plus one strided copy per converted input.
// Determinism: bitwise. Workspace: none. Aliasing: out must not overlap any input (inputs may
//   overlap each other, or be the same tensor several times).
// Backward (no row): dinputs[i] = dout.narrow(dim, begin_i, sizes[i]) (stack: dout.select(dim, i))
//   are views of dout, no kernel (a converted input's: that view cast to its dtype, the copy
//   row); CatDescriptor::begin(i) gives begin_i.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

class CopyPlan;

inline constexpr int kMaxCatInputsPerLaunch = 128;

struct CatDescriptor {
  DType dtype = DType::f32;
  int rank = 0;                   // the output's rank
  int64_t shape[kMaxRank] = {};   // the output's shape (shape[dim] = Σ sizes)
  int dim = 0;                    // the joined axis of the output, in [-rank, rank)
  IntList sizes;                  // each input's extent along dim, in order (N entries)
  bool stack = false;             // the inputs lack axis dim (sizes all 1)
  DTypeVec in_dtypes;             // each input's dtype (N entries), or empty: all `dtype`

  // cat of inputs whose extents along dim are `sizes` and whose other extents are `shape`'s
  // (shape[dim] is set to Σ sizes; dim as PyTorch's, negative from the end).
  static CatDescriptor cat(DType dtype, std::span<const int64_t> shape, int dim, std::span<const int64_t> sizes);
  // stack of n inputs of shape `in_shape` along a new axis dim (in [-(rank + 1), rank]).
  static CatDescriptor make_stack(DType dtype, std::span<const int64_t> in_shape, int dim, int64_t n);
  // torch.cat's type promotion: in_dtypes set to `inputs`, dtype to their result_type (left
  // unchanged, and select() then refuses, when they do not promote).
  CatDescriptor& promoted(std::span<const DType> inputs);
  // Input i's dtype.
  DType in_dtype(size_t i) const { return in_dtypes.empty() ? dtype : in_dtypes[i]; }
  // The first index along dim of input i in the output (the Σ of the sizes before it).
  int64_t begin(size_t i) const;
  bool operator==(const CatDescriptor&) const = default;
};
BARACUDA_DESCRIBE(CatDescriptor, dtype, rank, shape, dim, sizes, stack, in_dtypes);

struct CatArgs {
  std::span<const TensorRef> inputs;  // N views ("inputs[i]")
  TensorMut out;
};
BARACUDA_DESCRIBE(CatArgs, inputs, out);

class CatPlan : public PlanBase<CatDescriptor> {
 public:
  static Result<CatPlan> select(const CatDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const CatArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const CatArgs& args) const;

 private:
  struct Converted {
    size_t input = 0;  // the input's index
    std::shared_ptr<const CopyPlan> copy;
  };
  std::vector<Converted> converted_;  // the inputs of another dtype than out's
};

}  // namespace baracuda
