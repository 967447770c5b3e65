// Elementwise plans: op metadata, PyTorch's type promotion, descriptor validation, parameter
// preparation, and the forward/backward plans on top of the engine (ew_iter.cpp).
#include "baracuda/ops/elementwise.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "baracuda/ops/reduce_to_shape.hpp"
#include "core/plan_kit.hpp"
#include "core/validate.hpp"
#include "core/workspace.hpp"
#include "ops/elementwise/ew_geometry.hpp"
#include "ops/elementwise/ew_iter.hpp"
#include "ops/elementwise/ew_params.hpp"

namespace baracuda {

namespace ew {
#define BARACUDA_X(name, arity, kind, grad, group) EwKernels ew_kernels_##name(bool, DType, DType, EwCompute);
BARACUDA_EW_OPS(BARACUDA_X)
#undef BARACUDA_X

EwKernels ew_find_kernels(int op, bool backward, DType ri, DType ro, EwCompute c) {
  switch (static_cast<EwOp>(op)) {
#define BARACUDA_X(name, arity, kind, grad, group) \
  case EwOp::name: return ew_kernels_##name(backward, ri, ro, c);
    BARACUDA_EW_OPS(BARACUDA_X)
#undef BARACUDA_X
  }
  return {};
}
}  // namespace ew

namespace {

struct OpInfo {
  std::string_view name;
  int arity;
  EwKind kind;
  unsigned grad;
};
constexpr OpInfo kOps[] = {
#define BARACUDA_X(name, arity, kind, grad, group) {#name, arity, EwKind::kind, grad},
    BARACUDA_EW_OPS(BARACUDA_X)
#undef BARACUDA_X
};
const OpInfo* info(EwOp op) {
  const int i = static_cast<int>(op);
  return i >= 0 && i < kNumEwOps ? &kOps[i] : nullptr;
}

constexpr std::string_view kFwd = "elementwise";
constexpr std::string_view kBwd = "elementwise_backward";

bool is_float_t(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::f64; }
bool is_int_t(DType t) { return is_integral(t); }
bool is_exotic(DType t) { return t == DType::f8e4m3 || t == DType::f8e5m2 || is_complex(t); }

std::string operand_desc(const EwOperand& o) {
  return o.is_scalar ? std::string("scalar") : cat(dtype_name(o.dtype), " tensor");
}

// PyTorch's result_type over a subset of the operands (bit k of `which`; core/promotion.hpp).
Result<DType> promote_operands(std::string_view opn, const ElementwiseDescriptor& d, unsigned which) {
  PromotionOperand ops[kEwMaxOperands];
  int n = 0;
  for (int k = 0; k < d.num_operands; ++k) {
    if (!(which >> k & 1u)) continue;
    const EwOperand& o = d.operand[k];
    if (!o.is_scalar && is_exotic(o.dtype))
      return error(StatusCode::kUnsupported, opn, ": operand ", k, " dtype ", dtype_name(o.dtype),
                   " takes part in no type promotion (only `to` accepts fp8 and complex is not supported)");
    ops[n++] = o.is_scalar ? PromotionOperand{scalar_dtype(o.value), PromotionTier::kScalar}
                           : PromotionOperand{o.dtype, o.rank == 0 ? PromotionTier::kZeroDim : PromotionTier::kTensor};
  }
  auto r = result_type(std::span<const PromotionOperand>(ops, static_cast<size_t>(n)));
  if (!r) return error(StatusCode::kUnsupported, opn, ": operand dtypes do not promote");
  return *r;
}

// Result type and compute ("common") type of a validated descriptor.
struct Typing {
  DType result;
  DType common;  // what the kernel computes in (before the bool result of comparisons)
};

Result<Typing> typing(std::string_view opn, const ElementwiseDescriptor& d) {
  const OpInfo* oi = info(d.op);
  const std::string_view name = oi->name;
  const unsigned all = (1u << d.num_operands) - 1;
  auto need_bool = [&](int k) -> Status {
    const EwOperand& o = d.operand[k];
    if (o.is_scalar ? !o.value.is_bool() : o.dtype != DType::boolean)
      return error(StatusCode::kInvalidProblem, opn, ": ", name, " operand ", k, " must be a bool tensor (it is ",
                   operand_desc(o), ")");
    return {};
  };
  switch (oi->kind) {
    case EwKind::kCast: {
      if (!d.out_dtype) return error(StatusCode::kInvalidProblem, opn, ": to needs out_dtype");
      const EwOperand& o = d.operand[0];
      if (o.is_scalar) return error(StatusCode::kInvalidProblem, opn, ": to needs a tensor operand");
      if (is_complex(o.dtype) || is_complex(*d.out_dtype))
        return error(StatusCode::kUnsupported, opn, ": complex casts are not supported");
      return Typing{*d.out_dtype, o.dtype};
    }
    case EwKind::kSelect: {
      if (Status s = need_bool(0); !s.ok()) return s;
      auto r = promote_operands(opn, d, 6u);
      if (!r) return r.status();
      return Typing{*r, *r};
    }
    case EwKind::kMasked: {
      if (Status s = need_bool(1); !s.ok()) return s;
      if (d.operand[0].is_scalar) return error(StatusCode::kInvalidProblem, opn, ": masked_fill operand 0 must be a tensor");
      if (is_exotic(d.operand[0].dtype)) return error(StatusCode::kUnsupported, opn, ": masked_fill of ", dtype_name(d.operand[0].dtype));
      return Typing{d.operand[0].dtype, d.operand[0].dtype};
    }
    default: break;
  }
  auto pr = promote_operands(opn, d, all);
  if (!pr) return pr.status();
  DType r = *pr;
  auto reject = [&](std::string_view what) {
    return error(StatusCode::kUnsupported, opn, ": ", name, " is not defined for ", dtype_name(r), " (", what, ")");
  };
  switch (oi->kind) {
    case EwKind::kFloat:
      if (!is_float_t(r)) r = DType::f32;
      return Typing{r, r};
    case EwKind::kFloatOnly:
      if (!is_float_t(r)) return reject("floating dtypes only");
      return Typing{r, r};
    case EwKind::kNum:
      if (r == DType::boolean) return reject("numeric dtypes only, not bool");
      return Typing{r, r};
    case EwKind::kNumBool: return Typing{r, r};
    case EwKind::kNumBoolToInt:
      if (r == DType::boolean) r = DType::i64;
      return Typing{r, r};
    case EwKind::kBitwise:
      if (is_float_t(r)) return reject("integer and bool dtypes only");
      return Typing{r, r};
    case EwKind::kInt:
      if (!is_int_t(r)) return reject("integer dtypes only");
      return Typing{r, r};
    case EwKind::kCompare:
    case EwKind::kPredicate:
    case EwKind::kLogical: return Typing{DType::boolean, r};
    case EwKind::kFloatPower: return Typing{DType::f64, DType::f64};
    default: return error(StatusCode::kInternal, opn, ": unhandled kind");
  }
}

ew::EwCompute compute_of(DType common) {
  if (common == DType::f64) return ew::EwCompute::kF64;
  if (is_float_t(common) || common == DType::f8e4m3 || common == DType::f8e5m2) return ew::EwCompute::kF32;
  return ew::EwCompute::kI64;
}

// Bitwise ops on bool are the logical ops (their i64 form would not give bool results).
EwOp kernel_op(EwOp op, DType result) {
  if (result != DType::boolean) return op;
  switch (op) {
    case EwOp::bitwise_not: return EwOp::logical_not;
    case EwOp::bitwise_and: return EwOp::logical_and;
    case EwOp::bitwise_or: return EwOp::logical_or;
    case EwOp::bitwise_xor: return EwOp::logical_xor;
    default: return op;
  }
}

void fill_scalars(const std::array<double, 4>& p, const ElementwiseDescriptor& d, int literal_shift, ew::EwScalars* s) {
  for (int k = 0; k < 4; ++k) {
    s->d[k] = p[k];
    s->f[k] = static_cast<float>(p[k]);
    // integer parameters keep their exact value
    s->i[k] = ew::kernel_int_param(d, p, k);
  }
  for (int k = 0; k < d.num_operands; ++k) {
    const EwOperand& o = d.operand[k];
    if (!o.is_scalar) continue;
    const int slot = ew::kLiteralSlot + k + literal_shift;
    const double v = ew::kernel_literal(d, k, literal_shift != 0);  // PyTorch's reading of the scalar (ew_params.hpp)
    s->d[slot] = v;
    s->f[slot] = static_cast<float>(v);
    s->i[slot] = o.value.is_int() ? o.value.i : saturating_float_to_int(o.value.f);  // NaN 0, out of range saturated
  }
}

Status validate(std::string_view opn, const ElementwiseDescriptor& d) {
  const OpInfo* oi = info(d.op);
  if (!oi) return error(StatusCode::kInvalidProblem, opn, ": op = ", static_cast<int>(d.op), " is not an EwOp");
  if (d.num_operands != oi->arity)
    return error(StatusCode::kInvalidProblem, opn, ": ", oi->name, " takes ", oi->arity, " operands (num_operands = ", d.num_operands, ")");
  bool any_tensor = false;
  for (int k = 0; k < d.num_operands; ++k) {
    const EwOperand& o = d.operand[k];
    if (o.is_scalar) continue;
    any_tensor = true;
    if (o.rank < 0 || o.rank > kMaxRank)
      return error(StatusCode::kInvalidProblem, opn, ": operand ", k, " rank = ", o.rank, " must be in [0, ", kMaxRank, "]");
    for (int a = 0; a < o.rank; ++a)
      if (o.shape[a] < 0) return error(StatusCode::kInvalidProblem, opn, ": operand ", k, " shape[", a, "] = ", o.shape[a], " must be >= 0");
  }
  if (!any_tensor) return error(StatusCode::kInvalidProblem, opn, ": ", oi->name, " needs at least one tensor operand");
  int r = 0;
  int64_t shape[kMaxRank];
  return ew_broadcast_shape(d, &r, shape);
}

std::span<const int64_t> span_of(const EwOperand& o) { return {o.shape, static_cast<size_t>(o.rank)}; }

// Strides of view t aligned to the iteration shape (rank r, right-aligned; 0 where broadcast).
void aligned_strides(const TensorLayout& t, int r, const int64_t* shape, int64_t* out) {
  const int off = r - t.rank;
  for (int a = 0; a < r; ++a) {
    const int s = a - off;
    out[a] = (s < 0 || t.shape[s] == 1) && shape[a] != 1 ? 0 : (s < 0 ? 0 : t.stride[s]);
  }
}

bool same_shape(const EwOperand& o, int r, const int64_t* shape) {
  return o.rank == r && std::equal(o.shape, o.shape + r, shape);
}

// out is in itself (same data, same strides): the in-place form.
bool aliases_exactly(const TensorMut& out, const TensorRef& in) { return out.data == in.data && out.identical(in); }

// Operands (bit k) whose values an op's derivative reads; the others are not loaded by the
// backward kernel. Default: all.
unsigned bwd_reads(EwOp op) {
  switch (op) {
    case EwOp::add: case EwOp::sub: case EwOp::rsub: case EwOp::neg: case EwOp::frac: case EwOp::to:
    case EwOp::deg2rad: case EwOp::rad2deg: case EwOp::lerp_scalar: case EwOp::sign: case EwOp::ceil:
    case EwOp::floor: case EwOp::round: case EwOp::trunc: case EwOp::div_trunc: case EwOp::div_floor:
      return 0;
    case EwOp::where: return 1u;
    case EwOp::masked_fill: return 2u;
    case EwOp::addcmul: case EwOp::addcdiv: return 6u;
    case EwOp::fma: return 3u;
    default: return 7u;
  }
}

// d out / d operand k when it is a constant (out is linear in operand k with that factor):
// add / sub / rsub (alpha), a cast, the added term of addcmul / addcdiv / fma. A broadcast
// operand's gradient is then reduce(grad_out) * factor, with no elementwise pass; a factor of
// 1 on an operand of grad_out's shape and dtype makes its gradient grad_out itself.
std::optional<double> constant_partial(const ElementwiseDescriptor& d, int k) {
  const double alpha = d.param[0].as_double();
  switch (d.op) {
    case EwOp::add: return k == 0 ? 1.0 : alpha;
    case EwOp::sub: return k == 0 ? 1.0 : -alpha;
    case EwOp::rsub: return k == 0 ? -alpha : 1.0;
    case EwOp::to: case EwOp::frac: return 1.0;
    case EwOp::addcmul: case EwOp::addcdiv: if (k == 0) return 1.0; break;
    case EwOp::fma: if (k == 2) return 1.0; break;
    default: break;
  }
  return std::nullopt;
}

struct Resolved {
  EwOp kop;
  DType result, out, common;
  ew::EwCompute compute;
  ew::EwKernels k;
  ew::EwScalars s;
  int mask_operand = -1;
};

}  // namespace

namespace detail {
struct EwResolved {
  Resolved r;
  int out_rank = 0;
  int64_t out_shape[kMaxRank] = {};
  // backward: per operand, whether its gradient goes through workspace + reduction
  bool reduce[kEwMaxOperands] = {};
  // linear ops (d/dk = factor * g): the broadcast operand's gradient is reduce(g) * factor,
  // without the elementwise pass
  bool direct[kEwMaxOperands] = {};
  double factor[kEwMaxOperands] = {};
  // gradient k is grad_out element for element (ElementwiseBackwardPlan::grad_is_grad_out)
  bool pass_through[kEwMaxOperands] = {};
  std::optional<ElementwisePlan> scaler[kEwMaxOperands];
  size_t ws_offset[kEwMaxOperands] = {};
  std::optional<ReduceToShapePlan> reducer[kEwMaxOperands];
  size_t reduce_ws_offset = 0;
};
}  // namespace detail

// ------------------------------------------------------------------ public metadata
int ew_op_arity(EwOp op) { return info(op) ? info(op)->arity : 0; }
EwKind ew_op_kind(EwOp op) { return info(op) ? info(op)->kind : EwKind::kFloat; }
unsigned ew_op_grad_mask(EwOp op) { return info(op) ? info(op)->grad : 0; }

EwOperand EwOperand::tensor(DType dtype, std::span<const int64_t> shape) {
  EwOperand o;
  o.dtype = dtype;
  o.rank = shape.size() > static_cast<size_t>(kMaxRank) ? -1 : static_cast<int>(shape.size());
  if (o.rank > 0) std::copy(shape.begin(), shape.end(), o.shape);
  return o;
}

void ew_default_params(EwOp op, Scalar out[kEwMaxParams]) {
  for (int k = 0; k < kEwMaxParams; ++k) out[k] = Scalar(0.0);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  switch (op) {
    case EwOp::round: out[0] = Scalar(int64_t{0}); break;
    case EwOp::polygamma: out[0] = Scalar(int64_t{1}); break;
    case EwOp::nan_to_num: out[0] = 0.0; out[1] = nan; out[2] = nan; break;
    case EwOp::logit: out[0] = -1.0; break;
    case EwOp::clamp: out[0] = nan; out[1] = nan; break;
    case EwOp::leaky_relu: out[0] = 0.01; break;
    case EwOp::rrelu: out[0] = 1.0 / 8.0; out[1] = 1.0 / 3.0; break;
    case EwOp::elu: out[0] = 1.0; out[1] = 1.0; out[2] = 1.0; break;
    case EwOp::celu: out[0] = 1.0; break;
    case EwOp::hardtanh: out[0] = -1.0; out[1] = 1.0; break;
    case EwOp::hardshrink: case EwOp::softshrink: out[0] = 0.5; break;
    case EwOp::softplus: out[0] = 1.0; out[1] = 20.0; break;
    case EwOp::add: case EwOp::sub: case EwOp::rsub: out[0] = Scalar(int64_t{1}); break;
    case EwOp::lerp_scalar: out[0] = 0.5; break;
    case EwOp::isclose: out[0] = 1e-5; out[1] = 1e-8; out[2] = 0.0; break;
    case EwOp::addcmul: case EwOp::addcdiv: out[0] = Scalar(int64_t{1}); break;
    default: break;
  }
}

ElementwiseDescriptor ElementwiseDescriptor::make(EwOp op, std::span<const EwOperand> operands, std::span<const Scalar> params) {
  ElementwiseDescriptor d;
  d.op = op;
  ew_default_params(op, d.param);
  int k = 0;
  for (const EwOperand& o : operands)
    if (k < kEwMaxOperands) d.operand[k++] = o;
  d.num_operands = static_cast<int>(std::min<size_t>(operands.size(), 1024));
  k = 0;
  for (const Scalar& s : params)
    if (k < kEwMaxParams) d.param[k++] = s;
  return d;
}

void describe_put(std::string& out, const EwOperand& o) {
  if (o.is_scalar) return describe_put(out, o.value);
  describe_put(out, TensorLayout::make(o.dtype, std::span<const int64_t>(o.shape, static_cast<size_t>(std::clamp(o.rank, 0, kMaxRank)))));
}

std::string describe_get(std::string_view s, EwOperand* o) {
  if (s.find('[') != std::string_view::npos) {
    TensorLayout t;
    std::string why = describe_get(s, &t);
    if (!why.empty() || !t.is_contiguous()) return "a tensor dtype[shape] (no strides) or a scalar number";
    *o = EwOperand::tensor(t);
    return {};
  }
  Scalar v;
  if (std::string why = describe_get(s, &v); !why.empty()) return "a tensor dtype[shape] or a scalar number";
  *o = EwOperand::scalar(v);
  return {};
}

void describe_hash(HashMix& h, const EwOperand& o) {
  h.word(o.is_scalar);
  if (o.is_scalar) return describe_hash(h, o.value);
  h.word(static_cast<uint64_t>(o.dtype));
  h.word(static_cast<uint64_t>(o.rank));
  for (int a = 0; a < std::clamp(o.rank, 0, kMaxRank); ++a) h.word(static_cast<uint64_t>(o.shape[a]));
}

bool describe_check_enums(const EwOperand& o) { return o.is_scalar || enum_valid(o.dtype); }

void describe_complete(ElementwiseDescriptor& d, uint64_t given) {
  if (!(given >> field_index<ElementwiseDescriptor>("num_operands") & 1u)) d.num_operands = ew_op_arity(d.op);
  if (!(given >> field_index<ElementwiseDescriptor>("param") & 1u)) ew_default_params(d.op, d.param);
}

Result<DType> ew_result_dtype(const ElementwiseDescriptor& desc) {
  if (Status s = validate(kFwd, desc); !s.ok()) return s;
  auto t = typing(kFwd, desc);
  if (!t) return t.status();
  return t->result;
}

Result<DType> ew_common_dtype(const ElementwiseDescriptor& desc) {
  if (Status s = validate(kFwd, desc); !s.ok()) return s;
  auto t = typing(kFwd, desc);
  if (!t) return t.status();
  return t->common;
}

Status ew_broadcast_shape(const ElementwiseDescriptor& d, int* rank, int64_t shape[kMaxRank]) {
  int r = 0;
  for (int k = 0; k < d.num_operands; ++k)
    if (!d.operand[k].is_scalar) r = std::max(r, d.operand[k].rank);
  for (int a = 0; a < r; ++a) shape[a] = 1;
  for (int k = 0; k < d.num_operands; ++k) {
    const EwOperand& o = d.operand[k];
    if (o.is_scalar) continue;
    const int off = r - o.rank;
    for (int a = 0; a < o.rank; ++a) {
      int64_t& s = shape[a + off];
      const int64_t e = o.shape[a];
      if (e == s || e == 1) continue;
      if (s == 1) {
        s = e;
        continue;
      }
      return error(StatusCode::kInvalidProblem, "elementwise: operand shapes do not broadcast: operand ", k, " extent ", e,
                   " against ", s, " at output axis ", a + off);
    }
  }
  *rank = r;
  return {};
}

Status split_halves(const TensorRef& x, int dim, TensorRef* a, TensorRef* b) {
  if (dim < 0) dim += x.rank;
  if (dim < 0 || dim >= x.rank) return error(StatusCode::kInvalidProblem, "split_halves: dim ", dim, " out of range for rank ", x.rank);
  if (x.shape[dim] % 2 != 0) return error(StatusCode::kInvalidProblem, "split_halves: extent ", x.shape[dim], " of dim ", dim, " is odd");
  *a = x;
  *b = x;
  a->shape[dim] = b->shape[dim] = x.shape[dim] / 2;
  b->data = x.data ? static_cast<const char*>(x.data) + x.stride[dim] * (x.shape[dim] / 2) * static_cast<int64_t>(dtype_size(x.dtype)) : nullptr;
  return {};
}
Status split_halves(const TensorMut& x, int dim, TensorMut* a, TensorMut* b) {
  TensorRef ra, rb;
  if (Status s = split_halves(x.as_ref(), dim, &ra, &rb); !s.ok()) return s;
  static_cast<TensorLayout&>(*a) = ra;
  static_cast<TensorLayout&>(*b) = rb;
  a->data = const_cast<void*>(ra.data);
  b->data = const_cast<void*>(rb.data);
  return {};
}

// ------------------------------------------------------------------ shared select
namespace {

// Field names for messages, without building strings on the success path.
constexpr const char* kInName[] = {"in[0]", "in[1]", "in[2]"};
constexpr const char* kGradName[] = {"grad_in[0]", "grad_in[1]", "grad_in[2]"};

Result<Resolved> resolve(std::string_view opn, const ElementwiseDescriptor& d, const PlanPreference& pref,
                         bool backward, KernelSku* sku, int* out_rank, int64_t* out_shape) {
  if (Status s = begin_select(opn, d, pref, sku); !s.ok()) return s;
  if (Status s = validate(opn, d); !s.ok()) return s;
  if (Status s = ew_broadcast_shape(d, out_rank, out_shape); !s.ok()) return s;
  auto t = typing(opn, d);
  if (!t) return t.status();
  const OpInfo* oi = info(d.op);
  Resolved r;
  r.result = t->result;
  r.common = t->common;
  r.out = d.out_dtype.value_or(t->result);
  if (oi->kind != EwKind::kCast && r.out != r.result && !can_cast(r.result, r.out))
    return error(StatusCode::kInvalidProblem, opn, ": result dtype ", dtype_name(r.result), " of ", oi->name,
                 " cannot be cast to out_dtype ", dtype_name(r.out));
  if (is_complex(r.out)) return error(StatusCode::kUnsupported, opn, ": complex outputs are not supported");
  r.kop = kernel_op(d.op, r.result);
  r.compute = compute_of(r.common);
  if (oi->kind == EwKind::kCast) r.compute = is_float_t(r.common) || r.common == DType::f8e4m3 || r.common == DType::f8e5m2 ? ew::EwCompute::kF64 : ew::EwCompute::kI64;
  r.mask_operand = oi->kind == EwKind::kSelect ? 0 : (oi->kind == EwKind::kMasked ? 1 : -1);
  auto kp = ew::kernel_params(opn, d, r.result, compute_of(r.common) == ew::EwCompute::kI64);
  if (!kp) return kp.status();
  fill_scalars(*kp, d, backward ? 1 : 0, &r.s);

  if (backward) {
    if (oi->grad == 0) return error(StatusCode::kUnsupported, opn, ": ", oi->name, " is not differentiable (no backward)");
    if (!is_float_t(r.out) || !is_float_t(r.result))
      return error(StatusCode::kUnsupported, opn, ": backward needs a floating result (", oi->name, " gives ", dtype_name(r.result), ")");
    r.compute = (r.common == DType::f64 || r.out == DType::f64) ? ew::EwCompute::kF64 : ew::EwCompute::kF32;
    for (int k = 0; k < d.num_operands; ++k) {
      const EwOperand& o = d.operand[k];
      if (!(d.needs_grad >> k & 1u) || !(oi->grad >> k & 1u) || o.is_scalar) continue;
      if (!is_float_t(o.dtype))
        return error(StatusCode::kUnsupported, opn, ": gradient of operand ", k, " (", dtype_name(o.dtype),
                     ") requested; only floating operands have one (clear bit ", k, " of needs_grad)");
      if (o.dtype == DType::f64) r.compute = ew::EwCompute::kF64;
    }
  }
  // rows path only when every tensor operand (the mask aside) shares one dtype
  DType ri = DType::c128;
  bool uniform = true;
  auto take = [&](DType t) {
    if (ri == DType::c128) ri = t;
    else if (ri != t) uniform = false;
  };
  if (backward) take(r.out);
  for (int k = 0; k < d.num_operands; ++k)
    if (!d.operand[k].is_scalar && k != r.mask_operand) take(d.operand[k].dtype);
  DType ro = r.out;
  if (backward) {
    for (int k = 0; k < d.num_operands; ++k)
      if (!d.operand[k].is_scalar && k != r.mask_operand && d.operand[k].dtype != ri) uniform = false;
    ro = ri;
  }
  if (!uniform) ri = DType::c128;
  // The rows / flat / tile kernels compute in their storage type's compute type; a comparison of
  // integer (or bool) data with a fractional scalar computes in f32 (eq(i32 x, 0.5)): strided.
  // Repro: eq(i32 0, 0.5) gave True (the scalar read as the integer 0).
  if (!backward && ri != DType::c128 && ew_kind_bool_result(oi->kind) && compute_of(ri) != r.compute) ri = DType::c128;
  r.k = ew::ew_find_kernels(static_cast<int>(r.kop), backward, ri, ro, r.compute);
  r.k.rows_in = ri;
  r.k.rows_out = ro;
  if (!r.k.strided)
    return error(StatusCode::kInternal, opn, ": no ", backward ? "backward" : "forward", " kernel for ", oi->name,
                 " computing in ", r.compute == ew::EwCompute::kF64 ? "f64" : r.compute == ew::EwCompute::kF32 ? "f32" : "i64");
  sku->op = cat("ew.", oi->name);
  sku->direction = backward ? Direction::kBackward : Direction::kForward;
  sku->dtype = r.out;
  sku->variant = r.k.rows ? cat("rows", r.k.rows_vec, "+strided") : "strided";
  return r;
}

PrecisionGuarantee guarantee(const Resolved& r) {
  PrecisionGuarantee g;
  const DType c = r.compute == ew::EwCompute::kF64 ? DType::f64 : r.compute == ew::EwCompute::kF32 ? DType::f32 : DType::i64;
  g.accumulator = c;
  g.math = c;
  g.bit_exact = r.kop == EwOp::to;
  g.determinism = Determinism::kRunToRun;
  return g;
}

void fill_operand(const ElementwiseDescriptor& d, int k, const TensorRef& t, int r, const int64_t* shape, ew::IterOperand* io) {
  const EwOperand& o = d.operand[k];
  if (o.is_scalar) {
    io->literal = true;
    io->dtype = DType::f32;
    return;
  }
  io->data = t.data;
  io->dtype = o.dtype;
  aligned_strides(t, r, shape, io->stride);
}

// An iteration over the plan's output shape with ni inputs and no outputs (views filled by the caller).
ew::Iter iter_over(const detail::EwResolved& r, int ni, int no) {
  ew::Iter it;
  it.rank = r.out_rank;
  std::copy(r.out_shape, r.out_shape + it.rank, it.size);
  it.ni = ni;
  it.no = no;
  return it;
}

// resolve() into the fresh shared EwResolved every elementwise plan holds.
Result<std::shared_ptr<detail::EwResolved>> resolve_shared(std::string_view opn, const ElementwiseDescriptor& d,
                                                           const PlanPreference& pref, bool backward, KernelSku* sku) {
  auto res = std::make_shared<detail::EwResolved>();
  auto r = resolve(opn, d, pref, backward, sku, &res->out_rank, res->out_shape);
  if (!r) return r.status();
  res->r = *r;
  // the broadcast result (and a backward's per-element gradients, 8 bytes an element at most)
  // must be addressable before anything multiplies its extents
  int64_t n = 0, bytes = 0;
  if (!checked_product(res->out_shape, res->out_rank, &n) || !checked_mul(n, 8, &bytes))
    return error(StatusCode::kInvalidProblem, opn, ": the broadcast shape ",
                 shape_string(std::span<const int64_t>(res->out_shape, res->out_rank)), " has more than 2^63 bytes");
  return res;
}

}  // namespace

// ------------------------------------------------------------------ ElementwisePlan
Result<ElementwisePlan> ElementwisePlan::select(const ElementwiseDescriptor& desc, const PlanPreference& pref) {
  ElementwisePlan p;
  auto rs = resolve_shared(kFwd, desc, pref, false, &p.sku_);
  if (!rs) return rs.status();
  const std::shared_ptr<detail::EwResolved> res = *rs;
  p.r_ = res;
  p.desc_ = desc;
  p.out_dtype_ = res->r.out;
  p.guarantee_ = guarantee(res->r);
  for (int k = 0; k < desc.num_operands; ++k)
    if (!desc.operand[k].is_scalar) p.operands_.input(kInName[k], desc.operand[k].dtype, span_of(desc.operand[k]));
  p.operands_.output("out", res->r.out, std::span<const int64_t>(res->out_shape, res->out_rank));
  for (int k = 0; k < desc.num_operands; ++k)  // in place on an operand of out's shape and dtype
    if (!desc.operand[k].is_scalar && same_shape(desc.operand[k], res->out_rank, res->out_shape) && desc.operand[k].dtype == res->r.out)
      p.operands_.may_alias("out", kInName[k]);
  if (Status s = resolve_operands<ElementwiseArgs>(kFwd, p.operands_); !s.ok()) return s;
  return p;
}

Status ElementwisePlan::can_implement(const ElementwiseArgs& a) const {
  return check_plan_args(kFwd, selected(), operands_, a);
}

Status ElementwisePlan::run(cudaStream_t stream, Workspace, const ElementwiseArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  ew::Iter it = iter_over(*r_, desc_.num_operands, 1);
  for (int k = 0; k < it.ni; ++k) fill_operand(desc_, k, a.in[k], it.rank, it.size, &it.in[k]);
  it.out[0].data = a.out.data;
  it.out[0].dtype = out_dtype_;
  aligned_strides(a.out, it.rank, it.size, it.out[0].stride);
  it.out_on[0] = true;
  it.mask_operand = r_->r.mask_operand;
  return ew::run_iter(kFwd, it, r_->r.k, r_->r.s, desc_.saturate_fp8, stream);
}

// ------------------------------------------------------------------ FrexpPlan
namespace {
constexpr std::string_view kFrexp = "frexp";
}

Result<FrexpPlan> FrexpPlan::select(const ElementwiseDescriptor& desc, const PlanPreference& pref) {
  if (desc.op != EwOp::frexp)
    return error(StatusCode::kInvalidProblem, kFrexp, ": descriptor op is ", ew_op_name(desc.op), ", not frexp");
  if (desc.out_dtype) return error(StatusCode::kInvalidProblem, kFrexp, ": out_dtype must be unset (mantissa has the input's dtype)");
  FrexpPlan p;
  auto rs = resolve_shared(kFrexp, desc, pref, false, &p.sku_);
  if (!rs) return rs.status();
  const std::shared_ptr<detail::EwResolved> res = *rs;
  p.r_ = res;
  res->r.k = ew::ew_frexp_kernels(desc.operand[0].dtype, res->r.compute);
  if (!res->r.k.strided) return error(StatusCode::kInternal, kFrexp, ": no kernel");
  p.sku_.op = "ew.frexp2";
  p.sku_.variant = res->r.k.rows ? cat("rows", res->r.k.rows_vec, "+strided") : "strided";
  p.desc_ = desc;
  p.guarantee_ = guarantee(res->r);
  p.guarantee_.bit_exact = true;
  const std::span<const int64_t> os(res->out_shape, res->out_rank);
  if (!desc.operand[0].is_scalar) p.operands_.input("in", desc.operand[0].dtype, span_of(desc.operand[0]));
  p.operands_.output("mantissa", res->r.out, os);
  p.operands_.output("exponent", DType::i32, os);
  p.operands_.may_alias("mantissa", "in");
  if (Status s = resolve_operands<FrexpArgs>(kFrexp, p.operands_); !s.ok()) return s;
  return p;
}

Status FrexpPlan::can_implement(const FrexpArgs& a) const { return check_plan_args(kFrexp, selected(), operands_, a); }

Status FrexpPlan::run(cudaStream_t stream, Workspace, const FrexpArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  ew::Iter it = iter_over(*r_, 1, 2);
  fill_operand(desc_, 0, a.in, it.rank, it.size, &it.in[0]);
  const TensorMut* outs[2] = {&a.mantissa, &a.exponent};
  for (int o = 0; o < 2; ++o) {
    it.out[o].data = outs[o]->data;
    it.out[o].dtype = outs[o]->dtype;
    aligned_strides(*outs[o], it.rank, it.size, it.out[o].stride);
    it.out_on[o] = true;
  }
  return ew::run_iter(kFrexp, it, r_->r.k, r_->r.s, false, stream);
}

// ------------------------------------------------------------------ ElementwiseBackwardPlan
Result<ElementwiseBackwardPlan> ElementwiseBackwardPlan::select(const ElementwiseDescriptor& desc, const PlanPreference& pref) {
  ElementwiseBackwardPlan p;
  auto rs = resolve_shared(kBwd, desc, pref, true, &p.sku_);
  if (!rs) return rs.status();
  const std::shared_ptr<detail::EwResolved> res = *rs;
  p.r_ = res;
  p.desc_ = desc;
  const unsigned gm = ew_op_grad_mask(desc.op);
  int64_t out_numel = 1;
  for (int a = 0; a < res->out_rank; ++a) out_numel *= res->out_shape[a];
  size_t off = 0, reduce_ws = 0;
  for (int k = 0; k < desc.num_operands; ++k) {
    const EwOperand& o = desc.operand[k];
    if (o.is_scalar || !(gm >> k & 1u)) continue;
    const std::optional<double> cp = constant_partial(desc, k);
    const bool full = same_shape(o, res->out_rank, res->out_shape);
    res->pass_through[k] = full && cp == 1.0 && o.dtype == res->r.out;
    if (full || !(desc.needs_grad >> k & 1u)) continue;
    res->reduce[k] = true;
    res->direct[k] = cp.has_value();
    const double f = cp.value_or(0.0);
    res->factor[k] = f;
    // The per-element gradient goes to the workspace in the accumulator's type (f32; f64 for
    // f64) and is rounded to the operand's dtype once, after the sum. PyTorch's autograd rounds
    // each element to the 16-bit type first: that lost up to a few ulps against the float64
    // gradient, and turned a representable sum into inf or NaN where single elements overflowed
    // (pow / float_power in f16; python/tests/test_gpu_parity.py).
    const DType src = res->direct[k] ? res->r.out : acc_of(o.dtype);
    if (!res->direct[k]) {
      res->ws_offset[k] = off;
      off += (static_cast<size_t>(out_numel) * dtype_size(src) + 255) / 256 * 256;
    } else if (f != 1.0) {
      auto sp = ElementwisePlan::select(ElementwiseDescriptor::make(EwOp::mul, {EwOperand::tensor(o.dtype, span_of(o)), EwOperand::scalar(f)}), pref);
      if (!sp) return sp.status();
      res->scaler[k] = *sp;
    }
    auto rp = ReduceToShapePlan::select(
        ReduceToShapeDescriptor::make(ReduceOp::kSum, src, std::span<const int64_t>(res->out_shape, res->out_rank), o.dtype, span_of(o)),
        pref);
    if (!rp) return rp.status();
    reduce_ws = std::max(reduce_ws, rp->workspace_size());
    res->reducer[k] = *rp;
  }
  res->reduce_ws_offset = off;
  p.workspace_ = off + reduce_ws;
  if (Status s = check_workspace_budget(kBwd, p.workspace_, pref.max_workspace_bytes); !s.ok()) return s;
  p.guarantee_ = guarantee(res->r);
  // operands: grad_out, the forward operands the derivative reads, the gradients written
  const std::span<const int64_t> os(res->out_shape, res->out_rank);
  OperandSpecs& ops = p.operands_;
  ops.input("grad_out", res->r.out, os);
  for (int k = 0; k < desc.num_operands; ++k)  // an operand the derivative does not read may be left empty
    if (!desc.operand[k].is_scalar)
      ops.input(kInName[k], desc.operand[k].dtype, span_of(desc.operand[k])).optional = !(p.operands_read() >> k & 1u);
  for (int k = 0; k < desc.num_operands; ++k) {
    const EwOperand& o = desc.operand[k];
    if (o.is_scalar || !(desc.needs_grad >> k & 1u) || !(gm >> k & 1u)) continue;
    ops.output(kGradName[k], o.dtype, span_of(o));
    // exactly in place on grad_out (not for a broadcast operand, reduced after the pass) or on
    // an operand of its shape and dtype
    if (!res->reduce[k] && o.dtype == res->r.out) ops.may_alias(kGradName[k], "grad_out");
    for (int j = 0; j < desc.num_operands; ++j)
      if ((p.operands_read() >> j & 1u) && desc.operand[j].dtype == o.dtype && desc.operand[j].rank == o.rank &&
          std::equal(o.shape, o.shape + o.rank, desc.operand[j].shape))
        ops.may_alias(kGradName[k], kInName[j]);
  }
  if (Status s = resolve_operands<ElementwiseBackwardArgs>(kBwd, ops); !s.ok()) return s;
  return p;
}

bool ElementwiseBackwardPlan::grad_is_grad_out(int k) const { return r_ && k >= 0 && k < kEwMaxOperands && r_->pass_through[k]; }

namespace {
// Gradient k is grad_out and grad_in[k] is grad_out: nothing to write for it.
bool left_in_place(const detail::EwResolved& r, const ElementwiseBackwardArgs& a, int k) {
  return r.pass_through[k] && aliases_exactly(a.grad_in[k], a.grad_out);
}
}  // namespace

unsigned ElementwiseBackwardPlan::operands_read() const {
  unsigned m = 0;
  for (int k = 0; k < desc_.num_operands; ++k)
    if (!desc_.operand[k].is_scalar && (bwd_reads(desc_.op) >> k & 1u)) m |= 1u << k;
  return m;
}

Status ElementwiseBackwardPlan::can_implement(const ElementwiseBackwardArgs& a) const {
  if (!selected()) return check_plan_args(kBwd, false, operands_, a);
  // A gradient that is grad_out and is passed aliasing grad_out is not written: it is left out
  // of the check, so two of them may alias grad_out and each other.
  BoundView v[1 + 2 * kEwMaxOperands];
  for (size_t i = 0; i < operands_.size(); ++i) {
    const OperandSpec& o = operands_[i];
    v[i] = bound_view(a, o.field, o.element);
    v[i].skip = o.writes() && left_in_place(*r_, a, o.element);
  }
  return check_operands(kBwd, operands_, std::span<const BoundView>(v, operands_.size()));
}

Status ElementwiseBackwardPlan::run(cudaStream_t stream, Workspace ws, const ElementwiseBackwardArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (Status s = check_workspace(kBwd, ws, workspace_); !s.ok()) return s;
  const unsigned gm = ew_op_grad_mask(desc_.op);
  ew::Iter it = iter_over(*r_, desc_.num_operands + 1, desc_.num_operands);
  it.in[0].data = a.grad_out.data;
  it.in[0].dtype = r_->r.out;
  aligned_strides(a.grad_out, it.rank, it.size, it.in[0].stride);
  const unsigned reads = bwd_reads(desc_.op);
  for (int k = 0; k < desc_.num_operands; ++k) {
    if (reads >> k & 1u) fill_operand(desc_, k, a.in[k], it.rank, it.size, &it.in[k + 1]);
    else it.in[k + 1].literal = true;  // value unused by the derivative: not loaded
  }
  it.mask_operand = r_->r.mask_operand < 0 ? -1 : r_->r.mask_operand + 1;
  for (int k = 0; k < desc_.num_operands; ++k) {
    const EwOperand& o = desc_.operand[k];
    if (o.is_scalar || !(desc_.needs_grad >> k & 1u) || !(gm >> k & 1u)) continue;
    if (r_->direct[k] || left_in_place(*r_, a, k)) continue;
    it.out_on[k] = true;
    if (r_->reduce[k]) {
      it.out[k].data = static_cast<char*>(ws.ptr) + r_->ws_offset[k];
      it.out[k].dtype = acc_of(o.dtype);  // summed unrounded (select)
      TensorLayout full = TensorLayout::make(acc_of(o.dtype), std::span<const int64_t>(it.size, it.rank));
      std::copy(full.stride, full.stride + it.rank, it.out[k].stride);
    } else {
      it.out[k].data = a.grad_in[k].data;
      it.out[k].dtype = o.dtype;
      aligned_strides(a.grad_in[k], it.rank, it.size, it.out[k].stride);
    }
  }
  // One broadcast operand of a non-linear op: its gradient summed inside the elementwise pass
  // when the layout allows (ew::try_bcast), the partials where its full-size gradient would go.
  int fused = -1, n_reduced = 0;
  for (int k = 0; k < desc_.num_operands; ++k)
    if (it.out_on[k] && r_->reduce[k]) fused = k, ++n_reduced;
  if (n_reduced == 1) {
    ew::Iter f = it;
    f.out[fused].data = a.grad_in[fused].data;
    aligned_strides(a.grad_in[fused], f.rank, f.size, f.out[fused].stride);
    Status st;
    size_t full = dtype_size(acc_of(desc_.operand[fused].dtype));  // the bytes select() set aside for it
    for (int d = 0; d < it.rank; ++d) full *= static_cast<size_t>(it.size[d]);
    if (ew::try_bcast(kBwd, f, fused, r_->r.k, r_->r.s, const_cast<void*>(it.out[fused].data), full, stream, &st)) return st;
  }
  bool any_out = false;
  for (int k = 0; k < it.no; ++k) any_out |= it.out_on[k];
  if (any_out)
    if (Status s = ew::run_iter(kBwd, it, r_->r.k, r_->r.s, false, stream); !s.ok()) return s;
  for (int k = 0; k < desc_.num_operands; ++k) {
    if (!r_->reduce[k] || !r_->reducer[k]) continue;
    if (desc_.operand[k].is_scalar || !(desc_.needs_grad >> k & 1u) || !(gm >> k & 1u)) continue;
    ReduceToShapeArgs ra;
    ra.x = r_->direct[k] ? a.grad_out
                         : TensorRef::make(it.out[k].data, acc_of(desc_.operand[k].dtype), std::span<const int64_t>(it.size, it.rank));
    ra.y = a.grad_in[k];
    Workspace rws{static_cast<char*>(ws.ptr) + r_->reduce_ws_offset, ws.bytes - r_->reduce_ws_offset};
    if (Status s = r_->reducer[k]->run(stream, rws, ra); !s.ok()) return s;
    if (r_->scaler[k]) {
      ElementwiseArgs sa;
      sa.in[0] = a.grad_in[k].as_ref();
      sa.out = a.grad_in[k];
      if (Status s = r_->scaler[k]->run(stream, {}, sa); !s.ok()) return s;
    }
  }
  return {};
}

}  // namespace baracuda
