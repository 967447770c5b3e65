// baracuda/ops/pad.hpp — N-d padding (torch.nn.functional.pad) and its backward.
//
// Math (per axis d, output coordinate o in [0, out[d]), out[d] = in[d] + lo[d] + hi[d],
// i = o - lo[d]):
//   constant   y = x[i] if 0 <= i < in[d], else value      (negative lo/hi crop)
//   reflect    i < 0 -> -i;  i >= n -> 2(n-1) - i           (edge not repeated; needs lo, hi < n)
//   replicate  clamp(i, 0, n-1)
//   circular   i mod n                                      (needs lo, hi <= n: wraps at most once)
// Modes combine across axes independently (the output index maps axis by axis).
// Backward: dx[x] = sum of dy over every output cell whose source is x, computed as a gather
// (each dx element reads its preimages in a fixed order): no atomics, run-to-run deterministic.
//
// Shapes: rank 1..8; any subset of axes padded (pad 0 elsewhere) — a superset of PyTorch, which
// pads only the last 1-3 axes in the non-constant modes. Validity follows PyTorch:
//   every mode: lo, hi >= -in[d] (a crop removes at most the whole axis), out[d] >= 0;
//   reflect:    lo < in[d] and hi < in[d] on padded axes, in[d] >= 1 and out[d] >= 1;
//   replicate:  in[d] >= 1 and out[d] >= 1 on padded axes;
//   circular:   lo <= in[d] and hi <= in[d].
// Strides: arbitrary (element strides, may be 0 or negative for x; y must not self-overlap);
//   no alignment beyond the element size is needed (16-byte accesses are used only where
//   the addresses allow them).
// Dtypes: forward f32 f16 bf16 f64 i8 u8 i16 i32 i64 bool (bit-exact data movement);
//   backward f32 f16 bf16 f64, accumulating in f32 (f64 for f64), rounded once to the dtype.
// Fill value (constant mode): converted as PyTorch's fill_ does — via float for f16/bf16,
//   truncation toward zero for integers (out of range is an error), nonzero -> true for bool.
// Determinism: forward and backward are bitwise run-to-run deterministic.
// Workspace: none (workspace_size() == 0).
// Aliasing: y must not overlap x (dx must not overlap dy); no in-place form.
// Index math: 32-bit when every operand's element count and element offsets stay below
//   2^31 - 2^16, else 64-bit (both compiled). Limit: a row may have at most 2^30 elements
//   outside its copied core (padding/cropping), else run() reports Unsupported.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/scalar.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

BARACUDA_ENUM(PadMode, uint8_t, (kConstant, "constant"), (kReflect, "reflect"), (kReplicate, "replicate"),
              (kCircular, "circular"));

struct PadDescriptor {
  DType dtype = DType::f32;
  PadMode mode = PadMode::kConstant;
  int rank = 0;
  int64_t in_shape[kMaxRank] = {};
  int64_t pad_low[kMaxRank] = {};   // cells added before index 0 of axis d (negative crops)
  int64_t pad_high[kMaxRank] = {};  // cells added after the last index of axis d
  Scalar value = 0.0;               // fill for constant mode; must be 0 for the other modes

  // PyTorch's convention: `pads` lists (low, high) pairs starting from the LAST axis,
  // e.g. {left, right, top, bottom} pads axes rank-1 and rank-2. Fewer pairs than axes leave
  // the leading axes unpadded. Fails on an odd count, more than 2*rank values or rank > 8;
  // everything else is checked by select().
  static Result<PadDescriptor> torch_style(DType dtype, std::span<const int64_t> in_shape,
                                           std::span<const int64_t> pads,
                                           PadMode mode = PadMode::kConstant, Scalar value = 0.0);
  static Result<PadDescriptor> torch_style(DType dtype, std::initializer_list<int64_t> in_shape,
                                           std::initializer_list<int64_t> pads,
                                           PadMode mode = PadMode::kConstant, Scalar value = 0.0) {
    return torch_style(dtype, std::span<const int64_t>(in_shape.begin(), in_shape.size()),
                       std::span<const int64_t>(pads.begin(), pads.size()), mode, value);
  }

  // out_shape[d] = in_shape[d] + pad_low[d] + pad_high[d] (meaningful once valid).
  int64_t out_dim(int d) const { return in_shape[d] + pad_low[d] + pad_high[d]; }
  std::span<const int64_t> in_span() const { return {in_shape, static_cast<size_t>(rank < 0 ? 0 : rank)}; }

  bool operator==(const PadDescriptor&) const = default;
};
BARACUDA_DESCRIBE(PadDescriptor, dtype, mode, rank, in_shape, pad_low, pad_high, value);

// Forward: y = pad(x).
struct PadArgs {
  TensorRef x;  // shape in_shape
  TensorMut y;  // shape out_shape
};
BARACUDA_DESCRIBE(PadArgs, x, y);

// Backward of the forward problem described by the same PadDescriptor: dx = pad_backward(dy).
using PadBackwardDescriptor = PadDescriptor;
struct PadBackwardArgs {
  TensorRef dy;  // shape out_shape
  TensorMut dx;  // shape in_shape (fully written)
};
BARACUDA_DESCRIBE(PadBackwardArgs, dy, dx);

class PadPlan : public PlanBase<PadDescriptor> {
 public:
  static Result<PadPlan> select(const PadDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const PadArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const PadArgs& args) const;

 private:
  uint64_t fill_bits_ = 0;  // value converted to dtype, as raw bits
};

class PadBackwardPlan : public PlanBase<PadBackwardDescriptor> {
 public:
  static Result<PadBackwardPlan> select(const PadBackwardDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const PadBackwardArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const PadBackwardArgs& args) const;
};

}  // namespace baracuda
