// baracuda/ops/embedding.hpp — embedding lookup and embedding_bag (sum / mean / max pooling of
// looked-up rows), forward and backward.
//
// Math. weight is a table [V, D] (V = num_embeddings, D = embedding_dim).
//   Embedding:      out[p, :] = weight[idx[p], :]                     p over the N indices
//   Embedding bag:  bag b holds the positions P_b (below); the valid positions of a bag are
//                   those whose index is in [0, V) and is not padding_idx.
//     sum:  out[b, :] = Σ_{p valid in P_b} s_p · weight[idx[p], :]    (s_p = per_sample_weights[p], or 1)
//     mean: out[b, :] = (Σ_{p valid in P_b} weight[idx[p], :]) / n_b  (n_b = number of valid positions)
//     max:  out[b, d] = max over valid p of weight[idx[p], d]; max_indices[b, d] = the winning idx.
//           PyTorch's rule, exactly: the first valid position is taken, a later one replaces the
//           current maximum only when strictly greater (ties keep the earliest position; a NaN
//           wins only when it comes first).
//     A bag with no valid position gives zeros (and max_indices −1).
//   Bags: either a fixed-size 2-D index tensor [B, bag_size] (bag b = row b), or 1-D indices [N]
//   with offsets (PyTorch's form): bag b = [offsets[b], end_b), end_b = offsets[b+1], or N for
//   the last bag unless include_last_offset (then offsets has B+1 entries). Offsets are clamped
//   to [0, N]; a bag whose end is below its start is empty. Offsets must be non-decreasing (as in
//   PyTorch); others never cause an out-of-bounds access but their bags' results are unspecified.
// Backward (dweight [V, D], every row written; no memset needed by the caller):
//   dweight[r, :] = c_r · Σ_{p valid, idx[p] = r} g_p,  c_r = 1/count(r) with scale_grad_by_freq
//   (count over all valid positions), else 1; dweight[padding_idx] = 0.
//     embedding: g_p = dout[p];  sum: g_p = s_p · dout[bag(p)];  mean: g_p = dout[bag(p)] / n_bag(p);
//     max: dweight[r, d] = Σ_b dout[b, d] over the bags whose max_indices[b, d] = r (once per bag,
//          however often r occurs in it); scale_grad_by_freq is not allowed with max (as PyTorch).
//   d(per_sample_weights)[p] = Σ_d dout[bag(p), d] · weight[idx[p], d] for valid p, else 0.
//
// Shapes: weight / dweight [V, D] (V < 2^31 − 1; offsets into every operand are 64-bit); embedding indices of any shape S (numel N = num_indices),
//   out / dout [S..., D]; bag indices [N] or [B, bag_size], offsets [B] or [B+1],
//   per_sample_weights / d(per_sample_weights) like the indices, out / dout / max_indices [B, D].
//   Any strides on every operand (16-byte-aligned rows with unit stride on D take the vector
//   kernels; other views run the same kernels with scalar accesses).
// Dtypes: weight, out, dout, dweight, per_sample_weights share `dtype` (f32, f16, bf16, f64);
//   indices, offsets and max_indices share `index_dtype` (i32 or i64).
// Accumulator: f32 (f64 for f64) in every sum of both directions; each output rounded once.
// Out-of-range indices (< 0 or >= V): never dereferenced. They are treated as absent: an
//   embedding output row of zeros, skipped by a bag (not counted by mean), no gradient. With
//   count_invalid, run() adds the number of such index occurrences it saw to `invalid_count`
//   (an i64 scalar on the device the caller zeroes), so a caller can check for them without a
//   synchronizing assertion.
// Determinism: forward bitwise deterministic (each bag summed in position order).
//   Backward: two implementations behind one plan.
//     "sort": CUB radix sort of (index, position) pairs, then each row is summed in position
//       order — bitwise run-to-run deterministic.
//     "scatter" (sum / mean / embedding): the same pipeline with the sort replaced by an atomic
//       counting scatter, so a row's terms are added in an order that varies run to run.
//   Which one (descriptor's backward_algo): sort when PlanPreference::determinism is kRunToRun,
//   for max mode, or when asked (kSort); scatter when asked (kScatter; an error with kRunToRun or
//   max mode); kAuto picks scatter under kSortFromIndices index occurrences, sort from there
//   (H200: at 32768 ids scatter was 5-9 % faster, at 2^21 sort 6-9 %; docs/perf/embedding.md).
//   Both: a row with more than 64 terms is summed as fixed 64-term partials, folded 16 at a time
//   and added in order (no float atomics anywhere).
// Workspace: forward none; backward workspace_size() (fixed at select()) holds per-row counts
//   and starts (and the zero fill's chunk ticket), the rows with terms, keys and positions (two
//   of each), each position's bag (offsets form), per-bag counts (mean), heavy-row partials and
//   CUB's scratch — about 8·V + 4·min(N, V) + 20·N + 4·B +
//   2·(N/64 + 1)·D·acc bytes, plus a bound of about 8·N bytes + 80 KB for CUB (its actual need
//   is checked against the bound at run()).
// Aliasing: outputs must not overlap any input or each other.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

// The backward's implementation (see Determinism above).
BARACUDA_ENUM(EmbeddingBackwardAlgo, uint8_t, (kAuto, "auto"), (kSort, "sort"), (kScatter, "scatter"));
// kAuto's switch from scatter to sort: this many index occurrences (N) or more.
inline constexpr int64_t kSortFromIndices = int64_t{1} << 18;

struct EmbeddingArgs;
struct EmbeddingDescriptor {
  DType dtype = DType::f32;         // weight, out, dout, dweight
  DType index_dtype = DType::i64;   // i32 or i64
  int64_t num_embeddings = 0;       // V
  int64_t embedding_dim = 0;        // D
  int64_t num_indices = 0;          // N = numel of the indices (any shape)
  std::optional<int64_t> padding_idx;  // in [−V, V) (negative counts from the end); backward only
  bool scale_grad_by_freq = false;     // backward only
  bool count_invalid = false;          // args.invalid_count receives the out-of-range count
  EmbeddingBackwardAlgo backward_algo = EmbeddingBackwardAlgo::kAuto;  // backward only

  bool operator==(const EmbeddingDescriptor&) const = default;

  // The descriptor a.weight and a.indices describe (dtype, index_dtype, num_embeddings,
  // embedding_dim, num_indices; count_invalid when a.invalid_count is given); the backward-only
  // fields keep their defaults. Fails when weight is not rank 2.
  static Result<EmbeddingDescriptor> from_args(const EmbeddingArgs& a);
};
BARACUDA_DESCRIBE(EmbeddingDescriptor, dtype, index_dtype, num_embeddings, embedding_dim, num_indices, padding_idx,
                  scale_grad_by_freq, count_invalid, backward_algo);

struct EmbeddingArgs {
  TensorRef weight;         // [V, D]
  TensorRef indices;        // any shape S, numel N
  TensorMut out;            // [S..., D]
  TensorMut invalid_count;  // when count_invalid: i64, numel 1
};
BARACUDA_DESCRIBE(EmbeddingArgs, weight, indices, out, invalid_count);

using EmbeddingBackwardDescriptor = EmbeddingDescriptor;
struct EmbeddingBackwardArgs {
  TensorRef indices;        // any shape S
  TensorRef dout;           // [S..., D]
  TensorMut dweight;        // [V, D], fully written
  TensorMut invalid_count;  // when count_invalid
};
BARACUDA_DESCRIBE(EmbeddingBackwardArgs, indices, dout, dweight, invalid_count);

BARACUDA_ENUM(EmbeddingBagMode, uint8_t, (kSum, "sum"), (kMean, "mean"), (kMax, "max"));

struct EmbeddingBagArgs;
// Defaults as torch.nn.functional.embedding_bag (mode "mean", PyTorch's default dtype).
struct EmbeddingBagDescriptor {
  DType dtype = DType::f32;
  DType index_dtype = DType::i64;
  int64_t num_embeddings = 0;  // V
  int64_t embedding_dim = 0;   // D
  EmbeddingBagMode mode = EmbeddingBagMode::kMean;
  int64_t num_bags = 0;        // B
  // > 0: 2-D indices [B, bag_size] (no offsets). 0: 1-D indices [num_indices] with offsets.
  int64_t bag_size = 0;
  int64_t num_indices = 0;     // N of the 1-D form (ignored for 2-D: B·bag_size)
  bool include_last_offset = false;   // offsets [B+1] (else [B])
  bool per_sample_weights = false;    // sum mode only
  std::optional<int64_t> padding_idx;
  bool scale_grad_by_freq = false;    // backward, sum and mean
  bool per_sample_weights_grad = false;  // backward returns d(per_sample_weights)
  bool count_invalid = false;
  EmbeddingBackwardAlgo backward_algo = EmbeddingBackwardAlgo::kAuto;  // backward only

  int64_t indices_count() const { return bag_size > 0 ? num_bags * bag_size : num_indices; }
  bool operator==(const EmbeddingBagDescriptor&) const = default;

  // The descriptor the views of `a` describe for `mode`: dtype, index_dtype, num_embeddings,
  // embedding_dim from weight; the 2-D form (bag_size) from 2-D indices, else num_indices and
  // num_bags = offsets' extent minus include_last_offset; per_sample_weights and count_invalid
  // from whether those views are given. Backward-only fields keep their defaults.
  static Result<EmbeddingBagDescriptor> from_args(const EmbeddingBagArgs& a, EmbeddingBagMode mode,
                                                   bool include_last_offset = false);
};
BARACUDA_DESCRIBE(EmbeddingBagDescriptor, dtype, index_dtype, num_embeddings, embedding_dim, mode, num_bags, bag_size,
                  num_indices, include_last_offset, per_sample_weights, padding_idx, scale_grad_by_freq,
                  per_sample_weights_grad, count_invalid, backward_algo);

struct EmbeddingBagArgs {
  TensorRef weight;              // [V, D]
  TensorRef indices;             // [N] or [B, bag_size]
  TensorRef offsets;             // 1-D form: [B] or [B+1]
  TensorRef per_sample_weights;  // when per_sample_weights: shaped like indices
  TensorMut out;                 // [B, D]
  TensorMut max_indices;         // max mode: [B, D], index_dtype
  TensorMut invalid_count;       // when count_invalid
};
BARACUDA_DESCRIBE(EmbeddingBagArgs, weight, indices, offsets, per_sample_weights, out, max_indices, invalid_count);

using EmbeddingBagBackwardDescriptor = EmbeddingBagDescriptor;
struct EmbeddingBagBackwardArgs {
  TensorRef indices;
  TensorRef offsets;
  TensorRef per_sample_weights;   // when per_sample_weights
  TensorRef max_indices;          // max mode: the forward's max_indices
  TensorRef weight;               // when per_sample_weights_grad
  TensorRef dout;                 // [B, D]
  TensorMut dweight;              // [V, D], fully written
  TensorMut dper_sample_weights;  // when per_sample_weights_grad: shaped like indices
  TensorMut invalid_count;        // when count_invalid
};
BARACUDA_DESCRIBE(EmbeddingBagBackwardArgs, indices, offsets, per_sample_weights, max_indices, weight, dout, dweight,
                  dper_sample_weights, invalid_count);

class EmbeddingPlan : public PlanBase<EmbeddingDescriptor> {
 public:
  static Result<EmbeddingPlan> select(const EmbeddingDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const EmbeddingArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const EmbeddingArgs& args) const;
};

class EmbeddingBackwardPlan : public PlanBase<EmbeddingBackwardDescriptor> {
 public:
  static Result<EmbeddingBackwardPlan> select(const EmbeddingBackwardDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const EmbeddingBackwardArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const EmbeddingBackwardArgs& args) const;

 private:
  bool sorted_ = true;
};

class EmbeddingBagPlan : public PlanBase<EmbeddingBagDescriptor> {
 public:
  static Result<EmbeddingBagPlan> select(const EmbeddingBagDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const EmbeddingBagArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const EmbeddingBagArgs& args) const;
};

class EmbeddingBagBackwardPlan : public PlanBase<EmbeddingBagBackwardDescriptor> {
 public:
  static Result<EmbeddingBagBackwardPlan> select(const EmbeddingBagBackwardDescriptor& desc,
                                                 const PlanPreference& pref = {});
  Status can_implement(const EmbeddingBagBackwardArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const EmbeddingBagBackwardArgs& args) const;

 private:
  bool sorted_ = true;
};

}  // namespace baracuda
