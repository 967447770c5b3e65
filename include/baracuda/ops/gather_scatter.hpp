// baracuda/ops/gather_scatter.hpp — indexed reads and writes along one axis.
//
//   GatherPlan  (row gather):  torch.gather, take_along_dim, take (flattened views),
//               index_select; jnp.take_along_axis, jnp.take, lax.gather of one axis.
//   ScatterPlan (row scatter): torch.scatter (src or value), scatter_add, scatter_reduce, put
//               (flattened views), index_add, index_copy, index_fill, index_reduce;
//               x.at[idx].set / add / multiply / min / max, lax.scatter of one axis.
//
// Two index forms (IndexForm):
//   elements  the index has the iteration shape S (rank = the data's rank): element s of the
//             index names the coordinate along dim of one element (gather / scatter).
//   slices    the index is 1-D [S[dim]]: entry i names a whole slice along dim (index_select /
//             index_add ...); S is the data's shape with S[dim] = the number of indices.
//   Below, idx(s) is the index entry of iteration coordinate s (elements: index[s]; slices:
//   index[s[dim]]) and s|j is s with its coordinate along dim replaced by j.
//
// Math:
//   gather:   out[s] = input[s|idx(s)]                                   s over S (out = [S])
//   scatter:  out = self, then for every s of S in row-major order, t = s|idx(s):
//               none  out[t] = src[s]            (value form: the value)
//               sum   out[t] += alpha · src[s]
//               prod  out[t] *= src[s]     amax / amin  out[t] = max / min(out[t], src[s])
//               mean  out[t] = (self[t]·include_self + Σ src) / (count + include_self)
//             With include_self = false a target that receives terms starts from the
//             reduction's identity (none / sum / mean: 0) instead of self; targets that receive
//             none keep self. amax / amin propagate NaN (as torch.amax). Integer mean divides
//             with floor (PyTorch's rule); integer sums and products wrap in the dtype.
// Shapes: rank 0..8 (0-d: one element, dim 0 or −1); dim in [−rank, rank) (negative from the
//   end). gather: input [I]; elements: S[a] <= I[a] for a != dim (PyTorch's rule: the index
//   may be smaller than the input except along dim); slices: S[a] = I[a] for a != dim; out [S].
//   scatter: self / out [T]; elements: S[a] <= T[a] for a != dim; slices: S[a] = T[a] for
//   a != dim; src [S] (PyTorch's larger src: pass the view narrowed to S). Empty S: out = self.
// Index values: index_dtype i32 or i64; j is valid in [0, n) (n the extent along dim), and in
//   [−n, n) with wrap_negative (j < 0 means j + n: take / put / advanced indexing's rule).
//   Out-of-range indices are never dereferenced. bounds = check (PyTorch's contract: an error):
//   gather writes fill_value there, scatter drops the term; with count_invalid the number of
//   such entries is added to `invalid_count` (an i64 on the device the caller zeroes) so the
//   error can be raised without a synchronizing assertion. bounds = clamp (JAX's "clip"): j
//   clamped into [0, n − 1] (n = 0: every entry is out of range). JAX's "fill" / "drop" modes
//   are check with fill_value (e.g. NaN) and no counter.
// Strides: any for every input (0, negative; a broadcast index is a stride-0 view), out any
//   non-self-overlapping view. Axes that nest on every operand merge; a trailing run that is
//   contiguous in the data operands and constant in the index (slices form, or a broadcast
//   index) moves in 16-byte pieces where aligned, else element by element.
// Dtypes: gather and scatter none (copy / set / fill): every real dtype, bit-exact. sum, prod,
//   mean, amax, amin: f32 f16 bf16 f64 i8 u8 i16 i32 i64. Accumulator of the sort path: f32 for
//   16-bit floats, f64 for f64, int64 (wrapped to the dtype once) for integers; each target
//   rounded once. The atomic path adds in the dtype (16-bit floats round at every add, as
//   PyTorch's atomics do). alpha (sum only) and value convert as PyTorch's Scalar arguments.
// Algorithms (ScatterPlan; sku().variant):
//   "sort"    CUB radix sort of (target key, position) pairs (stable), then every target's terms
//             combined in position order by one thread per (target, column piece): bitwise
//             run-to-run deterministic; duplicates under none: the last position wins (as
//             PyTorch's deterministic mode). Workspace: keys and positions twice (4 or 8 bytes
//             each per position: 8 once a key or position passes 2^31) plus CUB's scratch.
//   "atomic"  one pass of atomics (vector atomics for float sums of 16-byte pieces; compare-and-
//             swap for prod / amax / amin and 1–2-byte integers); no workspace. Float sums and
//             products, and none with duplicate targets, vary run to run; integer sum / prod and
//             amax / amin do not. mean always sorts.
//   algo = auto: atomic unless PlanPreference::determinism = run_to_run asks for a
//   deterministic result the atomic pass cannot give (then sort); sort / atomic force one (an
//   error where it cannot serve the problem).
// Determinism: gather bitwise; scatter as above (precision_guarantee() says which).
// Aliasing: scatter's out may be self itself (the in-place form: index_add_, scatter_); else
//   out must not overlap any input. gather's out must not overlap its inputs.
// Backward (no rows; Python's autograd composes them):
//   gather:  dinput = scatter sum of dout into zeros (index_select: index_add into zeros).
//   scatter none: dself = dout with the targets set to 0 (a scatter of value 0),
//            dsrc = gather(dout). sum: dself = dout, dsrc = alpha · gather(dout).
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/scalar.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

BARACUDA_ENUM(IndexForm, uint8_t, (kElements, "elements"), (kSlices, "slices"));
BARACUDA_ENUM(IndexBounds, uint8_t, (kCheck, "check"), (kClamp, "clamp"));
BARACUDA_ENUM(ScatterReduce, uint8_t, (kNone, "none"), (kSum, "sum"), (kProd, "prod"), (kMean, "mean"), (kAmax, "amax"),
              (kAmin, "amin"));
BARACUDA_ENUM(ScatterAlgo, uint8_t, (kAuto, "auto"), (kSort, "sort"), (kAtomic, "atomic"));

struct GatherDescriptor {
  DType dtype = DType::f32;
  DType index_dtype = DType::i64;
  IndexForm form = IndexForm::kElements;
  int rank = 0;
  int64_t input_shape[kMaxRank] = {};
  int64_t index_shape[kMaxRank] = {};  // S: out's shape (slices: input's with S[dim] = the index count)
  int dim = 0;
  IndexBounds bounds = IndexBounds::kCheck;
  bool wrap_negative = false;
  Scalar fill_value = 0.0;     // check: what an out-of-range entry gathers
  bool count_invalid = false;  // args.invalid_count receives the out-of-range count

  // torch.gather(input, dim, index) with index of shape `index_shape`.
  static GatherDescriptor gather(DType dtype, DType index_dtype, std::span<const int64_t> input_shape,
                                 std::span<const int64_t> index_shape, int dim);
  // torch.index_select(input, dim, index) with a 1-D index of n entries.
  static GatherDescriptor index_select(DType dtype, DType index_dtype, std::span<const int64_t> input_shape, int dim, int64_t n);
  bool operator==(const GatherDescriptor&) const = default;
};
BARACUDA_DESCRIBE(GatherDescriptor, dtype, index_dtype, form, rank, input_shape, index_shape, dim, bounds, wrap_negative, fill_value,
                  count_invalid);

struct GatherArgs {
  TensorRef input;
  TensorRef index;          // elements: [S]; slices: [S[dim]]
  TensorMut out;            // [S]
  TensorMut invalid_count;  // when count_invalid: i64, one element (added to)
};
BARACUDA_DESCRIBE(GatherArgs, input, index, out, invalid_count);

struct ScatterDescriptor {
  DType dtype = DType::f32;
  DType index_dtype = DType::i64;
  IndexForm form = IndexForm::kElements;
  int rank = 0;
  int64_t self_shape[kMaxRank] = {};   // T: self's and out's shape
  int64_t index_shape[kMaxRank] = {};  // S: src's shape (slices: self's with S[dim] = the index count)
  int dim = 0;
  ScatterReduce reduce = ScatterReduce::kNone;
  bool include_self = true;
  bool src_is_value = false;  // scatter(value=) / index_fill: `value` replaces src (no src operand)
  Scalar value = 0.0;
  Scalar alpha = 1;           // sum: src scaled by alpha (index_add's)
  IndexBounds bounds = IndexBounds::kCheck;
  bool wrap_negative = false;
  bool count_invalid = false;
  ScatterAlgo algo = ScatterAlgo::kAuto;

  // torch.scatter / scatter_add / scatter_reduce(self, dim, index, src) with index of shape `index_shape`.
  static ScatterDescriptor scatter(DType dtype, DType index_dtype, std::span<const int64_t> self_shape,
                                   std::span<const int64_t> index_shape, int dim, ScatterReduce reduce = ScatterReduce::kNone);
  // torch.index_add / index_copy / index_reduce(self, dim, index, source) with a 1-D index of n entries.
  static ScatterDescriptor index(DType dtype, DType index_dtype, std::span<const int64_t> self_shape, int dim, int64_t n,
                                 ScatterReduce reduce = ScatterReduce::kSum);
  bool operator==(const ScatterDescriptor&) const = default;
};
BARACUDA_DESCRIBE(ScatterDescriptor, dtype, index_dtype, form, rank, self_shape, index_shape, dim, reduce, include_self,
                  src_is_value, value, alpha, bounds, wrap_negative, count_invalid, algo);

struct ScatterArgs {
  TensorRef self;           // [T]
  TensorRef index;          // elements: [S]; slices: [S[dim]]
  TensorRef src;            // [S]; absent with src_is_value
  TensorMut out;            // [T]; may be self itself
  TensorMut invalid_count;  // when count_invalid
};
BARACUDA_DESCRIBE(ScatterArgs, self, index, src, out, invalid_count);

class CopyPlan;

class GatherPlan : public PlanBase<GatherDescriptor> {
 public:
  static Result<GatherPlan> select(const GatherDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const GatherArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const GatherArgs& args) const;

 private:
  uint64_t fill_bits_ = 0;
};

class ScatterPlan : public PlanBase<ScatterDescriptor> {
 public:
  static Result<ScatterPlan> select(const ScatterDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const ScatterArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const ScatterArgs& args) const;

 private:
  bool sorted_ = false;
  bool wide_ = false;         // 64-bit keys and positions
  bool has_alpha_ = false;
  int key_bits_ = 1;
  uint64_t value_bits_ = 0;   // src_is_value: the value in dtype
  uint64_t alpha_bits_ = 0;   // sum: alpha in the compute type (double or int64 bits)
  std::shared_ptr<const CopyPlan> copy_;  // self -> out when they differ
};

}  // namespace baracuda
