// baracuda/ops/nonzero.hpp — the mask-compaction ops: torch.nonzero / argwhere / where(cond) /
// nonzero_static, masked_select, masked_scatter (jnp.nonzero(size=, fill_value=), jnp.argwhere,
// x[mask], x.at[mask].set(source)). Row `nonzero` (one plan, MaskOp picks the op).
//
// Math (positions i over `shape` in row-major order; flag(i) = mask[i] != 0 — for nonzero the
// input itself; −0.0 is zero, NaN is not, as PyTorch's `!= 0`):
//   k(i) = the number of flagged positions before i (their rank); count = Σ flag.
//   nonzero:        out[k(i), :] = the coordinates of i, for flagged i with k(i) < max_count;
//                   rows [count, max_count) = fill_value (nonzero_static's padding).
//   masked_select:  out[k(i)] = input[i], for flagged i with k(i) < max_count; out[count ..
//                   max_count) = 0 (all-zero bits).
//   masked_scatter: out[i] = flag(i) and k(i) < source_numel ? source[k(i)] : input[i].
//   `count` (i64, one element, written) receives Σ flag — the true count even when it passes
//   max_count (then the output holds the first max_count) or source_numel (PyTorch's error
//   "number of elements of source < number of ones in mask": the caller checks count).
// Two-phase and graph-capturable: the output has a fixed upper bound (max_count rows, −1: numel);
//   PyTorch's data-dependent result is the caller's second step (Python's bt.nonzero counts with
//   max_count = 0, then selects exactly `count` rows: one host synchronization, as PyTorch's).
// Shapes: rank 0..8, at most 2^43 positions (2^31 tiles of 4096; a stride-0 view can ask for
//   more); input and mask [shape] (a broadcast mask: a stride-0 view); nonzero out
//   [max_count, rank]; masked_select out [max_count]; masked_scatter source [source_numel]
//   (PyTorch's source of any shape: its flattened view), out [shape].
// Strides: any for every input, any non-overlapping out (masked_scatter's may be the input itself:
//   the in-place masked_scatter_). Dtypes: nonzero: every real dtype; masked_*: data every real
//   dtype (bit-exact), mask bool (or any real dtype, tested != 0). Determinism: bitwise (the ranks
//   are a scan; no atomics). Workspace: 16 bytes per 4096-element tile + CUB's scan scratch.
// Backward (no row; Python's autograd): masked_select: dinput = masked_scatter of dout into
//   zeros; masked_scatter: dinput = dout with the flagged positions zeroed, dsource[k] = dout at
//   the k-th flagged position (a masked_select, zero past count).
#pragma once

#include <cstdint>
#include <span>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

BARACUDA_ENUM(MaskOp, uint8_t, (kNonzero, "nonzero"), (kMaskedSelect, "masked_select"), (kMaskedScatter, "masked_scatter"));

struct NonzeroDescriptor {
  MaskOp op = MaskOp::kNonzero;
  DType dtype = DType::f32;            // nonzero: the input's; masked_*: the data's
  DType mask_dtype = DType::boolean;   // masked_*: the mask's
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  int64_t max_count = -1;     // nonzero / masked_select: the output's rows (−1: numel)
  int64_t fill_value = -1;    // nonzero: rows past the count
  int64_t source_numel = -1;  // masked_scatter: the source's elements (−1: numel)

  static NonzeroDescriptor nonzero(DType dtype, std::span<const int64_t> shape, int64_t max_count = -1);
  static NonzeroDescriptor masked_select(DType dtype, std::span<const int64_t> shape, int64_t max_count = -1);
  static NonzeroDescriptor masked_scatter(DType dtype, std::span<const int64_t> shape, int64_t source_numel = -1);
  int64_t numel() const;  // of shape (0 when invalid)
  bool operator==(const NonzeroDescriptor&) const = default;
};
BARACUDA_DESCRIBE(NonzeroDescriptor, op, dtype, mask_dtype, rank, shape, max_count, fill_value, source_numel);

struct NonzeroArgs {
  TensorRef input;   // [shape]
  TensorRef mask;    // masked_*: [shape]
  TensorRef source;  // masked_scatter: [source_numel]
  TensorMut out;     // nonzero [max_count, rank]; masked_select [max_count]; masked_scatter [shape]
  TensorMut count;   // i64, one element
};
BARACUDA_DESCRIBE(NonzeroArgs, input, mask, source, out, count);

class NonzeroPlan : public PlanBase<NonzeroDescriptor> {
 public:
  static Result<NonzeroPlan> select(const NonzeroDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const NonzeroArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const NonzeroArgs& args) const;

 private:
  uint64_t flag_bits_ = 0;  // the bits of a flag element that make it nonzero (a float's sign excluded)
  size_t cub_bytes_ = 0;
};

}  // namespace baracuda
