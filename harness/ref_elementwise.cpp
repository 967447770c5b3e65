// Reference adapters of the elementwise rows and reduce_to_shape: every element from the float64
// scalar functions (reference/elementwise_ref.hpp) with the operands read as the kernels read them
// (f32 compute: each operand rounded to f32; scalars as PyTorch's CUDA kernels read a Python
// number; integer math in int64, narrowed on store), the elementwise tolerance rule
// (ew_tolerance: the op's k ulp of the compute type plus an ulp of a 16-bit result) as `extra`.
#include <array>
#include <cmath>

#include "baracuda/ops/elementwise.hpp"
#include "baracuda/ops/reduce_to_shape.hpp"
#include "elementwise_ref.hpp"
#include "harness/op_case.hpp"
#include "harness/ref_common.hpp"
#include "core/arith.hpp"
#include "ops/elementwise/ew_params.hpp"

namespace baracuda::harness {

namespace {

constexpr const char* kIn[] = {"in[0]", "in[1]", "in[2]"};
constexpr const char* kGrad[] = {"grad_in[0]", "grad_in[1]", "grad_in[2]"};

std::span<const int64_t> shape_of(const EwOperand& o) { return {o.shape, static_cast<size_t>(o.rank)}; }

struct OutShape {
  int rank = 0;
  int64_t s[kMaxRank] = {};
  std::span<const int64_t> span() const { return {s, static_cast<size_t>(rank)}; }
};
OutShape out_shape(const ElementwiseDescriptor& d) {
  OutShape o;
  (void)ew_broadcast_shape(d, &o.rank, o.s);
  return o;
}

// Operand j at output element f (scalars: lit[j]).
double operand_at(RefCall& c, const ElementwiseDescriptor& d, const OutShape& os, int j, int64_t f, const double* lit) {
  if (d.operand[j].is_scalar) return lit[j];
  const std::vector<double>& v = c[kIn[j]].in;
  return v[static_cast<size_t>(broadcast_index(os.span(), f, shape_of(d.operand[j])))];
}

// Where a bool operand (where's condition, masked_fill's mask) would get random values of another
// dtype's range, 0 / 1.
void ew_fill(RefCall& c) {
  const ElementwiseDescriptor& d = c.desc<ElementwiseDescriptor>();
  for (int k = 0; k < d.num_operands; ++k) {
    RefOperand* r = c.find(kIn[k]);
    if (!r) continue;
    // --data=positive: [0.25, 2] (the benchmarks' domain: the log / sqrt family on its domain)
    if (c.data() == "positive") r->lo = 0.25, r->hi = 2;
  }
}

Status ew_forward(RefCall& c) {
  const ElementwiseDescriptor& d = c.desc<ElementwiseDescriptor>();
  const ElementwisePlan& plan = *c.plan().plan<ElementwisePlan>();
  const DType odt = plan.out_dtype();
  const DType cdt = plan.precision_guarantee().math;
  const bool imath = cdt == DType::i64;
  auto pk = ew::kernel_params("reference", d, odt, imath);
  if (!pk) return pk.status();
  std::array<int64_t, 4> pint{};
  for (int k = 0; k < 4; ++k) pint[k] = ew::kernel_int_param(d, *pk, k);
  EwOp rop = d.op;  // bitwise ops on bool results are the logical ops, as in PyTorch
  if (odt == DType::boolean) {
    if (d.op == EwOp::bitwise_not) rop = EwOp::logical_not;
    if (d.op == EwOp::bitwise_and) rop = EwOp::logical_and;
    if (d.op == EwOp::bitwise_or) rop = EwOp::logical_or;
    if (d.op == EwOp::bitwise_xor) rop = EwOp::logical_xor;
  }
  double lit[3] = {};
  int64_t lit_i[3] = {};
  for (int k = 0; k < d.num_operands; ++k)
    if (d.operand[k].is_scalar) {
      lit[k] = ew::kernel_literal(d, k);
      lit_i[k] = d.operand[k].value.is_int() ? d.operand[k].value.i : static_cast<int64_t>(d.operand[k].value.f);
    }
  const OutShape os = out_shape(d);
  const int64_t n = numel_of(os.span());
  RefOperand& out = c["out"];
  out.want.resize(static_cast<size_t>(n));
  out.mag.assign(static_cast<size_t>(n), 0.0);
  out.extra.assign(static_cast<size_t>(n), 0.0);
  const double k = ref::ew_tolerance_k(d.op);
  for (int64_t f = 0; f < n; ++f) {
    double x[3] = {};
    int64_t xi[3] = {};
    for (int j = 0; j < d.num_operands; ++j) {
      x[j] = operand_at(c, d, os, j, f, lit);
      xi[j] = d.operand[j].is_scalar ? lit_i[j] : static_cast<int64_t>(x[j]);
      if (!imath && cdt == DType::f32) x[j] = ref::store_as(DType::f32, x[j]);
    }
    double want;
    if (imath) {
      const int64_t wi = ref::ew_forward_int(rop, xi, pint.data());
      want = is_floating(odt) ? ref::store_as(odt, static_cast<double>(wi)) : static_cast<double>(ref::store_int(odt, wi));
    } else {
      want = ref::store_as(odt, ref::ew_forward_at(d.op, x, pk->data(), cdt), d.saturate_fp8);
    }
    out.want[static_cast<size_t>(f)] = want;
    if (is_floating(odt) && !imath) out.extra[static_cast<size_t>(f)] = ref::ew_tolerance(odt, k, want);
  }
  out.exact = !is_floating(odt) || d.op == EwOp::to;
  return {};
}

Status ew_backward(RefCall& c) {
  const ElementwiseDescriptor& d = c.desc<ElementwiseDescriptor>();
  const ElementwiseBackwardPlan& plan = *c.plan().plan<ElementwiseBackwardPlan>();
  const DType cdt = plan.precision_guarantee().math;
  auto res = ew_result_dtype(d);
  if (!res) return res.status();
  auto pk = ew::kernel_params("reference", d, d.out_dtype.value_or(*res), false);
  if (!pk) return pk.status();
  double lit[3] = {};
  for (int j = 0; j < d.num_operands; ++j)
    if (d.operand[j].is_scalar) lit[j] = ew::kernel_literal(d, j, true);
  const OutShape os = out_shape(d);
  const int64_t on = numel_of(os.span());
  const std::vector<double>& g = c["grad_out"].in;
  const double ue = cdt == DType::f64 ? 2.220446049250313e-16 : 1.1920929e-7;
  for (int k = 0; k < d.num_operands; ++k) {
    RefOperand* gk = c.find(kGrad[k]);
    if (!gk) continue;
    const DType kd = d.operand[k].dtype;
    const int64_t n = numel_of(shape_of(d.operand[k]));
    std::vector<double> want(static_cast<size_t>(n), 0.0), mag(static_cast<size_t>(n), 0.0), cond(static_cast<size_t>(n), 0.0);
    const bool reduced = n < on;
    for (int64_t f = 0; f < on; ++f) {
      double x[3] = {};
      for (int j = 0; j < d.num_operands; ++j) {
        x[j] = operand_at(c, d, os, j, f, lit);
        if (cdt == DType::f32) x[j] = ref::store_as(DType::f32, x[j]);
      }
      double dx[3];
      ref::ew_backward(d.op, x, g[static_cast<size_t>(f)], pk->data(), dx);
      const size_t t = static_cast<size_t>(broadcast_index(os.span(), f, shape_of(d.operand[k])));
      // a broadcast operand's per-element gradients are rounded to its dtype before the sum, as
      // PyTorch's autograd does
      want[t] += reduced ? ref::store_as(kd, dx[k]) : dx[k];
      mag[t] += std::fabs(dx[k]);
      cond[t] += ref::ew_backward_conditioning(d.op, x[0]) * std::fabs(dx[k]);
    }
    gk->want.resize(static_cast<size_t>(n));
    gk->mag.assign(static_cast<size_t>(n), 0.0);
    gk->extra.resize(static_cast<size_t>(n));
    for (size_t t = 0; t < want.size(); ++t) {
      gk->want[t] = ref::store_as(kd, want[t]);
      gk->extra[t] = ref::ew_tolerance(kd, ref::ew_tolerance_k(d.op) * 2, 0) * (1.0 + mag[t]) + ue * cond[t];
    }
  }
  return {};
}

Status frexp(RefCall& c) {
  const std::vector<double>& x = c["in"].in;
  RefOperand& m = c["mantissa"];
  RefOperand& e = c["exponent"];
  m.want.resize(x.size());
  e.want.resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    int ex = 0;
    const bool special = x[i] == 0 || std::isinf(x[i]) || std::isnan(x[i]);
    m.want[i] = special ? x[i] : std::frexp(x[i], &ex);
    e.want[i] = special ? 0 : ex;
  }
  m.exact = e.exact = true;
  return {};
}

Status reduce(RefCall& c) {
  const ReduceToShapeDescriptor& d = c.desc<ReduceToShapeDescriptor>();
  const std::span<const int64_t> in(d.in_shape, static_cast<size_t>(d.in_rank)), out(d.out_shape, static_cast<size_t>(d.out_rank));
  const std::vector<double>& x = c["x"].in;
  const int64_t n = numel_of(in), m = numel_of(out);
  const bool ints = !is_floating(d.in_dtype);
  std::vector<double> acc(static_cast<size_t>(m)), mag(static_cast<size_t>(m), 0.0);
  std::vector<int64_t> iacc(static_cast<size_t>(m));
  std::vector<bool> seen(static_cast<size_t>(m), false);
  const double id = d.op == ReduceOp::kProd ? 1.0 : 0.0;
  std::fill(acc.begin(), acc.end(), id);
  std::fill(iacc.begin(), iacc.end(), static_cast<int64_t>(id));
  for (int64_t f = 0; f < n; ++f) {
    const size_t j = static_cast<size_t>(broadcast_index(in, f, out));
    const double v = x[static_cast<size_t>(f)];
    const int64_t vi = static_cast<int64_t>(v);
    switch (d.op) {
      case ReduceOp::kSum: acc[j] += v, iacc[j] = wadd(iacc[j], vi); break;
      case ReduceOp::kProd: acc[j] *= v, iacc[j] = wmul(iacc[j], vi); break;
      case ReduceOp::kMax:
        if (!seen[j] || std::isnan(v) || (!std::isnan(acc[j]) && v > acc[j])) acc[j] = v;
        if (!seen[j] || vi > iacc[j]) iacc[j] = vi;
        break;
      case ReduceOp::kMin:
        if (!seen[j] || std::isnan(v) || (!std::isnan(acc[j]) && v < acc[j])) acc[j] = v;
        if (!seen[j] || vi < iacc[j]) iacc[j] = vi;
        break;
    }
    seen[j] = true;
    mag[j] += std::fabs(v);
  }
  RefOperand& y = c["y"];
  y.want.resize(static_cast<size_t>(m));
  for (size_t j = 0; j < acc.size(); ++j)
    y.want[j] = ints ? (is_floating(d.out_dtype) ? ref::store_as(d.out_dtype, static_cast<double>(iacc[j]))
                                                : static_cast<double>(ref::store_int(d.out_dtype, iacc[j])))
                     : ref::store_as(d.out_dtype, acc[j]);
  if (d.op == ReduceOp::kSum) y.mag = std::move(mag);
  if (d.op == ReduceOp::kProd)  // each factor's rounding: count · |product|
    for (size_t j = 0; j < acc.size(); ++j) y.mag.push_back(std::fabs(acc[j]) * static_cast<double>(std::max<int64_t>(1, n / std::max<int64_t>(m, 1))));
  y.exact = ints || d.op == ReduceOp::kMax || d.op == ReduceOp::kMin;
  return {};
}

// grad_out, the operands the derivative reads, and the gradients written: a gradient that is
// grad_out itself (ElementwiseBackwardPlan::grad_is_grad_out) bound to grad_out is not written,
// as PyTorch's autograd passes grad_out on (all of them: 0 bytes, no pass at all).
Cost ew_backward_cost(const AnyPlan& p, const CaseOptions& opt) {
  const ElementwiseBackwardPlan& plan = *p.plan<ElementwiseBackwardPlan>();
  double written = 0, read = 0;
  for (const OperandSpec& s : p.operands()) {
    const double bytes = static_cast<double>(s.numel()) * static_cast<double>(dtype_size(s.dtype));
    if (!s.writes()) {
      read += s.optional ? 0 : bytes;  // optional inputs: unread by the derivative
      continue;
    }
    const auto a = opt.alias.find(std::string(s.name));
    if (!(a != opt.alias.end() && a->second == "grad_out" && plan.grad_is_grad_out(s.element))) written += bytes;
  }
  return {written > 0 ? read + written : 0.0, 0};
}

}  // namespace

OpRef ref_elementwise() { return {&ew_fill, &ew_forward, nullptr}; }
OpRef ref_elementwise_backward() { return {&ew_fill, &ew_backward, &ew_backward_cost}; }
OpRef ref_frexp() { return {nullptr, &frexp, nullptr}; }
OpRef ref_reduce_to_shape() { return {nullptr, &reduce, nullptr}; }

}  // namespace baracuda::harness
