// baracuda/ops/triangle.hpp — torch.tril / torch.triu (jnp.tril / jnp.triu): the input with the
// elements on one side of a diagonal of the last two axes zeroed.
//
// Math: over the last two axes [rows, cols] of every batch matrix, element (i, j):
//   tril: out = input where j − i <= diagonal, else 0;  triu: out = input where j − i >= diagonal,
//   else 0 (all-zero bits in every dtype; diagonal any int64, as PyTorch's).
// Shapes: input and out [shape], rank 2..8 (the leading axes are batch axes).
// Strides: any for input (0, negative), out any non-self-overlapping view or the input itself
//   (tril_ / triu_ in place). Rows contiguous in both move in 16-byte pieces where aligned; a
//   piece wholly zeroed is not read.
// Dtypes: every real dtype, bit-exact. Determinism: bitwise. Workspace: none.
// Backward (no row): the same op on the gradient (Python's autograd).
#pragma once

#include <cstdint>
#include <span>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

struct TriangleDescriptor {
  DType dtype = DType::f32;
  int rank = 2;
  int64_t shape[kMaxRank] = {};
  int64_t diagonal = 0;
  bool upper = false;  // triu (else tril)

  static TriangleDescriptor tril(DType dtype, std::span<const int64_t> shape, int64_t diagonal = 0);
  static TriangleDescriptor triu(DType dtype, std::span<const int64_t> shape, int64_t diagonal = 0);
  bool operator==(const TriangleDescriptor&) const = default;
};
BARACUDA_DESCRIBE(TriangleDescriptor, dtype, rank, shape, diagonal, upper);

struct TriangleArgs {
  TensorRef input;
  TensorMut out;
};
BARACUDA_DESCRIBE(TriangleArgs, input, out);

class TrianglePlan : public PlanBase<TriangleDescriptor> {
 public:
  static Result<TrianglePlan> select(const TriangleDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const TriangleArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const TriangleArgs& args) const;
};

}  // namespace baracuda
