// baracuda/ops/elementwise.hpp — every pointwise op (torch.* / torch.nn.functional / jax.lax
// elementwise), forward and backward, through one engine.
//
// Math: out[i] = f(in0[i], in1[i], in2[i]; param) for the op f listed in elementwise_ops.hpp,
//   over the broadcast of the operand shapes (numpy/PyTorch rules: shapes right-aligned, an
//   extent of 1 stretches). Backward: grad_in_k = sum over the broadcast of g * df/din_k,
//   reduced to operand k's shape (ReduceToShapePlan) when operand k was broadcast.
// Shapes: rank 0..8 per operand; out has the broadcast shape. An operand may be a Scalar (a
//   Python number in PyTorch terms): it broadcasts and takes part in type promotion as a wrapped
//   number; rank-0 tensors take part as zero-dim tensors (PyTorch's three priority tiers).
// Dtypes: PyTorch's result type (ew_result_dtype; EwKind per op). f16/bf16 are computed in f32,
//   f32 in f32, f64 in f64, integers and bool in i64 then narrowed (which reproduces PyTorch's
//   wrap-around, shift and overflow results). Mixed input dtypes are allowed (converted on load).
//   out_dtype may differ from the result type when PyTorch's can_cast allows it (no float ->
//   integral, no numeric -> bool): the result is computed in the result type, then cast.
//   Backward: floating dtypes (f32, f16, bf16, f64) only.
// Numerics: the scalar functions match PyTorch's CUDA kernels' formulas (NaN/signed zero rules,
//   integer division by zero gives -1 in every width [PyTorch's CUDA i8/i16/i32 result], the
//   Python-style floor division/remainder, half-to-even round, lerp's two-branch formula, no
//   FMA contraction where PyTorch computes a separate multiply and add; nextafter steps one ulp
//   of the result's own format, bf16 and f16 included). f32 math uses CUDA's full-precision
//   functions (no fast-math). Scalar operands are read as PyTorch's CUDA kernels read a Python
//   number: as f32 (f64 for f64 data), except that remainder, fmod, pow, copysign, xlogy,
//   xlog1py, the comparisons, where, and a scalar dividend of div round it to bf16 / f16 first
//   when that is the common dtype (ew_common_dtype), as do threshold, hardshrink and softshrink
//   with their parameters; division by a scalar (div, div_trunc) multiplies by its reciprocal,
//   formed in double and rounded to the compute type, as PyTorch does.
//   Backward: each gradient is computed in the compute type from the unrounded derivative and
//   rounded once; a broadcast operand's gradient is summed unrounded (f32, f64 for f64 and
//   float_power) and rounded once. PyTorch's composite formulas round every intermediate to
//   bf16 / f16 and each element before the sum, so they can be a few ulps off and give ±inf or
//   NaN where an intermediate overflows although the gradient is representable (pow and
//   float_power in f16): there this op returns the finite, correctly rounded gradient, not
//   PyTorch's special value; where the exact gradient overflows the dtype or is NaN / ±inf, the
//   results agree (python/tests/test_gpu_parity.py checks both on PyTorch's OpInfo samples).
// Strides: any, per operand (0 = broadcast, negative allowed for inputs); out must not
//   self-overlap. Paths: contiguous (flat, 16-byte accesses when every operand is aligned),
//   row-vectorized (strided rows, per-row and literal operands), 2-D tiles (transposed
//   operands), and general strided (any layout, mixed dtypes). Index math is 32-bit inside a
//   launch; problems whose offsets exceed 2^31 are split into several launches on the host.
// Determinism: forward and backward are bitwise run-to-run deterministic (no atomics; the
//   broadcast reductions use fixed-order partials).
// Workspace: forward none; backward: a full-size f32/f64 buffer per broadcast operand plus the
//   reduction's workspace (workspace_size()).
// Aliasing: out may alias an input exactly (same data, same strides): in-place. Any other
//   overlap between out and an input is an error. Backward: grad_in_k may alias grad_out
//   exactly when operand k is not broadcast; when its gradient is grad_out itself
//   (grad_is_grad_out(k)), that alias costs nothing: run() writes nothing for it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/promotion.hpp"
#include "baracuda/core/scalar.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/elementwise_ops.hpp"

namespace baracuda {

inline constexpr int kEwMaxOperands = 3;
inline constexpr int kEwMaxParams = 4;

template <>
struct EnumTraits<EwOp> {
  static constexpr std::string_view kTypeName = "EwOp";
  static constexpr EnumEntry<EwOp> kEntries[] = {
#define BARACUDA_X(name, arity, kind, grad, group) {EwOp::name, #name},
      BARACUDA_EW_OPS(BARACUDA_X)
#undef BARACUDA_X
  };
};

inline std::string_view ew_op_name(EwOp op) { return enum_name(op); }
int ew_op_arity(EwOp op);
EwKind ew_op_kind(EwOp op);
// Bit i set: differentiable in operand i.
unsigned ew_op_grad_mask(EwOp op);
inline bool ew_parse_op(std::string_view name, EwOp* out) { return enum_parse(name, out); }

// One operand of an elementwise op: a tensor (dtype + shape) or a Scalar.
struct EwOperand {
  bool is_scalar = false;
  Scalar value;  // when is_scalar
  DType dtype = DType::f32;
  int rank = 0;
  int64_t shape[kMaxRank] = {};

  static EwOperand tensor(DType dtype, std::span<const int64_t> shape);
  static EwOperand tensor(DType dtype, std::initializer_list<int64_t> shape) {
    return tensor(dtype, std::span<const int64_t>(shape.begin(), shape.size()));
  }
  static EwOperand tensor(const TensorLayout& l) { return tensor(l.dtype, std::span<const int64_t>(l.shape, l.rank < 0 ? 0 : l.rank)); }
  static EwOperand scalar(Scalar v) {
    EwOperand o;
    o.is_scalar = true;
    o.value = v;
    return o;
  }
  bool operator==(const EwOperand&) const = default;
};
// Problem-line form: a tensor as "bf16[4096,4096]", a scalar as its number ("2", "0.5", "true").
void describe_put(std::string& out, const EwOperand& o);
std::string describe_get(std::string_view s, EwOperand* o);
void describe_hash(HashMix& h, const EwOperand& o);
bool describe_check_enums(const EwOperand& o);  // a tensor operand's dtype is a DType

struct ElementwiseDescriptor {
  EwOp op = EwOp::add;
  int num_operands = 0;  // must equal ew_op_arity(op)
  EwOperand operand[kEwMaxOperands];
  Scalar param[kEwMaxParams];     // op parameters (elementwise_ops.hpp); make() fills defaults
  std::optional<DType> out_dtype;  // nullopt: PyTorch's result type. Required for EwOp::to
  bool saturate_fp8 = false;       // casts to fp8 clamp to the finite range (else PyTorch: NaN/inf)
  // Backward only: bit k set = run() writes operand k's gradient (only differentiable operands).
  unsigned needs_grad = 0x7;

  // The descriptor with PyTorch's default parameters for op; num_operands set from the list
  // (at most kEwMaxOperands operands and kEwMaxParams parameters are kept; select() checks the
  // count against the op's arity). The span form takes operand lists built at run time.
  static ElementwiseDescriptor make(EwOp op, std::span<const EwOperand> operands, std::span<const Scalar> params = {});
  static ElementwiseDescriptor make(EwOp op, std::initializer_list<EwOperand> operands,
                                    std::initializer_list<Scalar> params = {}) {
    return make(op, std::span<const EwOperand>(operands.begin(), operands.size()),
                std::span<const Scalar>(params.begin(), params.size()));
  }

  bool operator==(const ElementwiseDescriptor&) const = default;
};
BARACUDA_DESCRIBE(ElementwiseDescriptor, op, num_operands, operand, param, out_dtype, saturate_fp8, needs_grad);
// from_string: num_operands defaults to op's arity and param to op's defaults when not given.
void describe_complete(ElementwiseDescriptor& d, uint64_t given);

// PyTorch's default parameters of op (p0..p3), e.g. leaky_relu {0.01}, softplus {1, 20}.
void ew_default_params(EwOp op, Scalar out[kEwMaxParams]);

// The result dtype PyTorch gives op on these operands (dimensioned tensors > zero-dim tensors >
// wrapped scalars, combined by category); errors name the operand and the rule.
Result<DType> ew_result_dtype(const ElementwiseDescriptor& desc);
// The dtype op's operands are promoted to before the math (PyTorch's common dtype): the result
// dtype, except for comparisons (result bool) and casts (the input's dtype). bf16 / f16 data is
// computed in f32, but where PyTorch's kernels read a Scalar operand or parameter as the data's
// own type, it is rounded to this dtype first (see Numerics above).
Result<DType> ew_common_dtype(const ElementwiseDescriptor& desc);
// The broadcast output shape; error when the operand shapes do not broadcast.
Status ew_broadcast_shape(const ElementwiseDescriptor& desc, int* rank, int64_t shape[kMaxRank]);

struct ElementwiseArgs {
  TensorRef in[kEwMaxOperands];  // in[k] ignored for scalar operands
  TensorMut out;                 // broadcast shape, dtype out_dtype (or the result type)
};
BARACUDA_DESCRIBE(ElementwiseArgs, in, out);

struct ElementwiseBackwardArgs {
  TensorRef grad_out;                     // broadcast shape, dtype of the forward output
  TensorRef in[kEwMaxOperands];           // the forward operands (scalars ignored; empty allowed
                                          // for those outside the plan's operands_read())
  TensorMut grad_in[kEwMaxOperands];      // operand k's shape and dtype, for k in needs_grad
};
BARACUDA_DESCRIBE(ElementwiseBackwardArgs, grad_out, in, grad_in);

namespace detail {
struct EwResolved;  // dtypes, compute type and launchers fixed at select (src/ops/elementwise)
}

class ElementwisePlan : public PlanBase<ElementwiseDescriptor> {
 public:
  static Result<ElementwisePlan> select(const ElementwiseDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const ElementwiseArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const ElementwiseArgs& args) const;
  DType out_dtype() const { return out_dtype_; }

 private:
  DType out_dtype_ = DType::f32;
  std::shared_ptr<const detail::EwResolved> r_;  // immutable after select; copies share it
};

class ElementwiseBackwardPlan : public PlanBase<ElementwiseDescriptor> {
 public:
  static Result<ElementwiseBackwardPlan> select(const ElementwiseDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const ElementwiseBackwardArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const ElementwiseBackwardArgs& args) const;
  // True when operand k's gradient is grad_out itself: d out / d operand k is exactly 1 (add,
  // sub's minuend, rsub's second operand, add with alpha 1 in both, frac, a same-dtype cast,
  // the added term of addcmul / addcdiv / fma) and the operand has grad_out's shape and dtype.
  // As PyTorch's autograd does, a caller can then use grad_out as that gradient with no kernel:
  // either leave bit k out of needs_grad, or pass grad_in[k] aliasing grad_out exactly, which
  // run() leaves as it is (two such gradients may then alias grad_out and each other).
  bool grad_is_grad_out(int k) const;
  // Bit k set: run() reads forward operand k (its derivative uses the value). The others need
  // not be kept for the backward — in[k] may be left empty (data nullptr) — as PyTorch's
  // autograd saves nothing for add / sub / neg / rounding, only the condition for where, the
  // mask for masked_fill, and not the added term of addcmul / addcdiv / fma.
  unsigned operands_read() const;

 private:
  std::shared_ptr<const detail::EwResolved> r_;  // immutable after select; copies share it
};

// frexp (torch.frexp) with both results from one pass: x = mantissa * 2^exponent,
//   |mantissa| in [0.5, 1); +-0, +-inf and NaN give themselves as mantissa and exponent 0.
// Descriptor: ElementwiseDescriptor::make(EwOp::frexp, {x}) with a floating x (f32, f16, bf16,
//   f64); out_dtype must be unset. Computed in f32 (f64 for f64); bit-exact (no rounding occurs).
// Args: mantissa has x's dtype and shape, exponent is i32 with x's shape; any strides (general
//   strided path). mantissa may alias x exactly; no other overlap. Workspace: none.
// Backward: ElementwiseBackwardPlan of EwOp::frexp (d mantissa / dx = 2^-exponent).
struct FrexpArgs {
  TensorRef in;
  TensorMut mantissa;
  TensorMut exponent;
};
BARACUDA_DESCRIBE(FrexpArgs, in, mantissa, exponent);

class FrexpPlan : public PlanBase<ElementwiseDescriptor> {
 public:
  static Result<FrexpPlan> select(const ElementwiseDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const FrexpArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const FrexpArgs& args) const;

 private:
  std::shared_ptr<const detail::EwResolved> r_;
};

// The two halves of axis `dim` of x (the value/gate split of GLU-style ops): a = x[..., :n/2],
// b = x[..., n/2:] as views (no copy). Fails when the extent is odd.
Status split_halves(const TensorRef& x, int dim, TensorRef* a, TensorRef* b);
Status split_halves(const TensorMut& x, int dim, TensorMut* a, TensorMut* b);

}  // namespace baracuda
