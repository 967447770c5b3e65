// Device tier for the elementwise engine and reduce-to-shape: every op x dtype against the
// float64 reference (special values included) over contiguous, misaligned, strided, permuted,
// broadcast, scalar-operand and in-place layouts; every derivative (with broadcast reductions);
// every cast pair; poisoned outputs; bitwise reruns; graph capture; > 2^31 elements.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>

#include "baracuda/baracuda.hpp"
#include "baracuda/ops/elementwise.hpp"
#include "baracuda/ops/reduce_to_shape.hpp"
#include "device/device_harness.hpp"
#include "elementwise_ref.hpp"
#include "ops/elementwise/ew_params.hpp"

using namespace baracuda;
using namespace baracuda::test;

namespace {

// An op's family: its group in elementwise_ops.hpp (unary math, special functions, activations
// and gated, binary, comparison / logic / bitwise, ternary), casts apart.
const char* op_family(EwOp op) {
  if (op == EwOp::to) return "cast";
  switch (op) {
#define FAMILY_OF(name, arity, kind, grad, group) \
  case EwOp::name: return #group;
    BARACUDA_EW_OPS(FAMILY_OF)
#undef FAMILY_OF
  }
  return "?";
}

struct Worst {
  double ratio = 0;  // max |err| / tol
  std::string at;
};
struct Stats {
  int64_t cases = 0, elements = 0, exact = 0, nonfinite = 0;
  Worst worst;
  std::map<std::string, Worst> family;  // the same per op family
  // One element's error err against its tolerance tol (op on dtype dt); err > tol fails the
  // caller's check, so tol 0 (exact results) counts only exact elements.
  void record(EwOp op, DType dt, double err, double tol) {
    Worst& fam = family[op_family(op)];
    if (err == 0) {
      exact++;
      return;
    }
    if (tol <= 0) return;
    const double r = err / tol;
    auto up = [&](Worst& w) {
      if (r > w.ratio) w.ratio = r, w.at = std::string(ew_op_name(op)) + " " + std::string(dtype_name(dt));
    };
    up(worst);
    up(fam);
  }
};
std::map<std::string, Stats> g_stats;  // per "fwd"/"bwd"/"cast"/"reduce"

void print_stats(const char* tag, const char* what) {
  const Stats& s = g_stats[tag];
  std::printf("[elementwise %s] %lld cases, %lld %s (%lld exact, %lld non-finite), worst %.3f of tolerance (%s)\n", tag,
              static_cast<long long>(s.cases), static_cast<long long>(s.elements), what, static_cast<long long>(s.exact),
              static_cast<long long>(s.nonfinite), s.worst.ratio, s.worst.at.c_str());
  for (const auto& [fam, w] : s.family) {
    if (w.ratio > 0) std::printf("[elementwise %s]   family %-10s worst %.3f of tolerance (%s)\n", tag, fam.c_str(), w.ratio, w.at.c_str());
    else std::printf("[elementwise %s]   family %-10s every element exact\n", tag, fam.c_str());
  }
}

bool int_compute(const ElementwiseDescriptor& d, const ElementwisePlan& p) {
  return p.precision_guarantee().math == DType::i64;
}

// Integers drawn small (so shifts, pow and division are exercised), with a few extremes.
void fill_operand(StridedBuffer& b, std::mt19937_64& rng, EwOp op, int k) {
  fill_random(b, rng, true);
  const int64_t n = b.numel();
  if (is_integral(b.dtype)) {
    std::uniform_int_distribution<int> u(-20, 20);
    for (int64_t f = 0; f < n; ++f) {
      int64_t v = u(rng);
      if (b.dtype == DType::u8 && v < 0) v = -v;
      if (rng() % 31 == 0) v = static_cast<int64_t>(rng());
      b.set_bits(f, static_cast<uint64_t>(v));
    }
  }
  (void)op;
  (void)k;
}

std::vector<int64_t> strides_of(const TensorLayout& t) { return std::vector<int64_t>(t.stride, t.stride + t.rank); }

// Flat row-major index of `out` coordinates mapped into an operand of shape `s` (right-aligned, broadcast).
int64_t map_index(const std::vector<int64_t>& out_shape, int64_t f, const std::vector<int64_t>& s) {
  const int r = static_cast<int>(out_shape.size()), off = r - static_cast<int>(s.size());
  int64_t idx = 0, mul = 1;
  for (int a = r - 1; a >= 0; --a) {
    const int64_t c = f % out_shape[a];
    f /= out_shape[a];
    if (a >= off) {
      const int64_t e = s[a - off];
      idx += (e == 1 ? 0 : c) * mul;
      mul *= e;
    }
  }
  return idx;
}

struct OperandSpec {
  bool scalar = false;
  Scalar value;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  Layout layout = Layout::kContiguous;
  bool every_pattern = false;  // element f holds bit pattern f (a 16-bit operand of 65536 elements: all of them)
};

// The descriptor of a test case: PyTorch's default parameters, then the case's own.
ElementwiseDescriptor describe(EwOp op, const std::vector<OperandSpec>& specs, const std::vector<Scalar>& params,
                               std::optional<DType> out_dtype) {
  ElementwiseDescriptor d;
  d.op = op;
  ew_default_params(op, d.param);
  for (size_t k = 0; k < params.size(); ++k) d.param[k] = params[k];
  d.num_operands = static_cast<int>(specs.size());
  for (size_t k = 0; k < specs.size(); ++k)
    d.operand[k] = specs[k].scalar ? EwOperand::scalar(specs[k].value) : EwOperand::tensor(specs[k].dtype, specs[k].shape);
  d.out_dtype = out_dtype;
  return d;
}

// Runs one forward case and compares every element; returns false on a failure (reported).
void fwd_case(EwOp op, std::vector<OperandSpec> specs, uint64_t seed, std::vector<Scalar> params = {},
              std::optional<DType> out_dtype = {}, bool inplace = false, bool sat = false) {
  ElementwiseDescriptor d = describe(op, specs, params, out_dtype);
  d.saturate_fp8 = sat;
  auto plan = ElementwisePlan::select(d);
  ASSERT_TRUE(plan.ok()) << ew_op_name(op) << ": " << plan.status().to_string();
  int orank = 0;
  int64_t oshape[kMaxRank];
  ASSERT_TRUE(ew_broadcast_shape(d, &orank, oshape).ok());
  std::vector<int64_t> out_shape(oshape, oshape + orank);
  std::mt19937_64 rng(seed);
  std::vector<StridedBuffer> bufs(specs.size());
  ElementwiseArgs args;
  for (size_t k = 0; k < specs.size(); ++k) {
    if (specs[k].scalar) continue;
    bufs[k] = StridedBuffer(specs[k].dtype, specs[k].shape, specs[k].layout);
    fill_operand(bufs[k], rng, op, static_cast<int>(k));
    if (specs[k].every_pattern)
      for (int64_t f = 0; f < bufs[k].numel(); ++f) bufs[k].set_bits(f, static_cast<uint64_t>(f));
    if (op == EwOp::where && k == 0) for (int64_t f = 0; f < bufs[k].numel(); ++f) bufs[k].set_bits(f, rng() & 1);
    bufs[k].upload();
    args.in[k] = bufs[k].ref();
  }
  const DType odt = plan->out_dtype();
  StridedBuffer out_buf;
  std::vector<uint64_t> in0_copy;
  if (inplace) {
    ASSERT_EQ(specs[0].dtype, odt);
    ASSERT_EQ(specs[0].shape, out_shape);
    for (int64_t f = 0; f < bufs[0].numel(); ++f) in0_copy.push_back(bufs[0].get_bits(f));
    args.out = bufs[0].mut();
  } else {
    out_buf = StridedBuffer(odt, out_shape, Layout::kContiguous);
    out_buf.fill_storage(0xFF);
    out_buf.upload();
    args.out = out_buf.mut();
  }
  const Status st = plan->run(nullptr, {}, args);
  ASSERT_TRUE(st.ok()) << st.to_string();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  StridedBuffer& ob = inplace ? bufs[0] : out_buf;
  ob.download();
  auto pk = ew::kernel_params("test", d, plan->out_dtype(), int_compute(d, *plan));
  ASSERT_TRUE(pk.ok());
  std::array<int64_t, 4> pint{};
  // the library's rule (fill_scalars): integer parameters exact, the others truncated
  for (int k = 0; k < 4; ++k)
    pint[k] = ew::kernel_int_param(d, *pk, k);
  const bool imath = int_compute(d, *plan);
  // bitwise ops on bool results are the logical ops (True ^ ~ -> False), as in PyTorch
  EwOp rop = op;
  if (odt == DType::boolean) {
    if (op == EwOp::bitwise_not) rop = EwOp::logical_not;
    if (op == EwOp::bitwise_and) rop = EwOp::logical_and;
    if (op == EwOp::bitwise_or) rop = EwOp::logical_or;
    if (op == EwOp::bitwise_xor) rop = EwOp::logical_xor;
  }
  const DType cdt = plan->precision_guarantee().math;
  Stats& S = g_stats["fwd"];
  S.cases++;
  const int64_t n = ob.numel();
  int64_t nonzero = 0;
  double lit[3] = {};  // PyTorch's reading of each scalar operand
  for (size_t k = 0; k < specs.size(); ++k)
    if (specs[k].scalar) lit[k] = ew::kernel_literal(d, static_cast<int>(k));
  for (int64_t f = 0; f < n; ++f) {
    double x[3] = {};
    int64_t xi[3] = {};
    for (size_t k = 0; k < specs.size(); ++k) {
      if (specs[k].scalar) {
        x[k] = lit[k];
        xi[k] = specs[k].value.is_int() ? specs[k].value.i : static_cast<int64_t>(specs[k].value.f);
        continue;
      }
      const int64_t fi = map_index(out_shape, f, specs[k].shape);
      const uint64_t bits = inplace && k == 0 ? in0_copy[fi] : bufs[k].get_bits(fi);
      x[k] = bits_to_double(specs[k].dtype, bits);
      xi[k] = is_integral(specs[k].dtype) ? static_cast<int64_t>(bits_to_double(specs[k].dtype, bits)) : static_cast<int64_t>(x[k]);
      if (specs[k].dtype == DType::i64) xi[k] = static_cast<int64_t>(bits);
      if (specs[k].dtype == DType::boolean) xi[k] = (bits & 0xff) != 0;
    }
    // The kernel converts every operand to f32 first. Rounded by the reference's store_as, not an
    // inline (double)(float) pair: g++ 12 -O3 dropped that rounding for x[0] and x[1] here, so
    // a large i32 operand of sin was compared unrounded (repro: sin, i32 in, f32 out, seed 1259,
    // x = -2077495270: kernel sin(-2077495296) = 0.6304, reference sin(-2077495270) = -0.1841).
    if (!imath && cdt == DType::f32)
      for (int k = 0; k < 3; ++k) x[k] = ref::store_as(DType::f32, x[k], false);
    double want;
    const uint64_t gb = ob.get_bits(f);
    const double got = bits_to_double(odt, gb);
    if (imath && !is_floating(odt)) {
      const int64_t wi = ref::store_int(odt, ref::ew_forward_int(rop, xi, pint.data()));
      int64_t gi = odt == DType::i64 ? static_cast<int64_t>(gb) : static_cast<int64_t>(got);
      if (odt == DType::boolean) gi = (gb & 0xff) != 0;
      S.elements++;
      S.record(op, odt, 0, 0);  // exact (checked below)
      nonzero += wi != 0;
      if (gi != wi) {
        ADD_FAILURE() << "repro: " << ew_op_name(op) << " out " << dtype_name(odt) << " shape " << shape_str(out_shape) << " seed " << seed
                      << " elem " << f << " x=(" << xi[0] << ", " << xi[1] << ", " << xi[2] << ") got " << gi << " want " << wi;
        return;
      }
      continue;
    }
    if (imath) want = static_cast<double>(ref::ew_forward_int(rop, xi, pint.data()));
    else want = ref::ew_forward_at(op, x, pk->data(), cdt);
    want = ref::store_as(odt, want, sat);
    S.elements++;
    nonzero += want != 0;
    if (std::isnan(want) || std::isinf(want)) {
      S.nonfinite++;
      const bool ok = std::isnan(want) ? std::isnan(got) : got == want;
      if (!ok) {
        ADD_FAILURE() << "repro: " << ew_op_name(op) << " out " << dtype_name(odt) << " shape " << shape_str(out_shape) << " seed " << seed
                      << " elem " << f << " x=(" << x[0] << ", " << x[1] << ", " << x[2] << ") got " << got << " want " << want;
        return;
      }
      continue;
    }
    const double tol = (odt == DType::boolean || !is_floating(odt)) ? 0.0 : ref::ew_tolerance(odt, ref::ew_tolerance_k(op), want);
    const double err = std::fabs(got - want);
    S.record(op, odt, err, tol);
    if (!(err <= tol)) {
      ADD_FAILURE() << "repro: " << ew_op_name(op) << " out " << dtype_name(odt) << " shape " << shape_str(out_shape) << " seed " << seed
                    << " elem " << f << " x=(" << x[0] << ", " << x[1] << ", " << x[2] << ") got " << got << " want " << want
                    << " tol " << tol;
      return;
    }
  }
  (void)nonzero;
}


std::vector<DType> dtypes_for(EwOp op) {
  const EwKind k = ew_op_kind(op);
  std::vector<DType> v;
  if (ew_kind_has_floats(k)) v = {DType::f32, DType::f16, DType::bf16, DType::f64};
  if (ew_kind_has_ints(k) && k != EwKind::kCast) {
    v.insert(v.end(), {DType::i32, DType::i64, DType::u8, DType::i8, DType::i16});
    if (k == EwKind::kNumBool || k == EwKind::kBitwise || k == EwKind::kCompare || k == EwKind::kPredicate || k == EwKind::kLogical)
      v.push_back(DType::boolean);
  }
  if (k == EwKind::kFloat) v.push_back(DType::i32);  // int -> f32 promotion path
  return v;
}

OperandSpec T(DType dt, std::vector<int64_t> shape, Layout l = Layout::kContiguous) {
  OperandSpec s;
  s.dtype = dt;
  s.shape = std::move(shape);
  s.layout = l;
  return s;
}
OperandSpec S(Scalar v) {
  OperandSpec s;
  s.scalar = true;
  s.value = v;
  return s;
}

// The operand dtypes of op for data dtype dt (masks and conditions are bool).
DType operand_dtype(EwOp op, int k, DType dt) {
  if (op == EwOp::where && k == 0) return DType::boolean;
  if (op == EwOp::masked_fill && k == 1) return DType::boolean;
  return dt;
}

std::vector<Scalar> params_for(EwOp op, DType dt) {
  switch (op) {
    case EwOp::threshold: return {0.25, -1.5};
    case EwOp::clamp: return is_integral(dt) ? std::vector<Scalar>{Scalar(int64_t{-5}), Scalar(int64_t{7})} : std::vector<Scalar>{-0.5, 1.25};
    case EwOp::round: return {Scalar(int64_t{0})};
    case EwOp::add: case EwOp::sub: case EwOp::rsub: return is_integral(dt) || dt == DType::boolean ? std::vector<Scalar>{Scalar(int64_t{1})} : std::vector<Scalar>{0.5};
    case EwOp::lerp_scalar: return {0.3};
    case EwOp::masked_fill: return {is_integral(dt) ? Scalar(int64_t{3}) : Scalar(2.5)};
    case EwOp::addcmul: case EwOp::addcdiv: return {is_integral(dt) ? Scalar(int64_t{2}) : Scalar(0.7)};
    case EwOp::leaky_relu: return {0.2};
    case EwOp::elu: return {1.3, 1.1, 0.9};
    case EwOp::nan_to_num: return {1.5, std::numeric_limits<double>::quiet_NaN(), -7.0};
    case EwOp::logit: return {0.05};
    case EwOp::polygamma: return {Scalar(int64_t{2})};
    default: return {};
  }
}

TEST(ElementwiseDevice, EveryOpEveryDtypeEveryLayout) {
  BARACUDA_REQUIRE_GPU();
  uint64_t seed = 1;
  for (int o = 0; o < kNumEwOps; ++o) {
    const EwOp op = static_cast<EwOp>(o);
    if (op == EwOp::to) continue;  // casts: their own test
    const int ar = ew_op_arity(op);
    for (DType dt : dtypes_for(op)) {
      auto ps = params_for(op, dt);
      auto mk = [&](std::vector<int64_t> shape, Layout l, int k) { return T(operand_dtype(op, k, dt), shape, l); };
      std::vector<std::vector<OperandSpec>> cases;
      // contiguous with a row tail; misaligned; strided; permuted
      for (Layout l : {Layout::kContiguous, Layout::kOffset1, Layout::kStep2, Layout::kPermuted}) {
        std::vector<OperandSpec> c;
        for (int k = 0; k < ar; ++k) c.push_back(mk({37, 129}, k == 1 && l == Layout::kStep2 ? Layout::kContiguous : l, k));
        cases.push_back(c);
      }
      // broadcast: [a, 1] x [b] x [1, b]
      {
        std::vector<OperandSpec> c;
        const std::vector<int64_t> shp[3] = {{45, 1}, {67}, {1, 67}};
        for (int k = 0; k < ar; ++k) c.push_back(mk(ar == 1 ? std::vector<int64_t>{3, 45, 67} : shp[k], Layout::kContiguous, k));
        cases.push_back(c);
        // row-broadcast bias on the rows path: [rows, cols] with [cols]
        std::vector<OperandSpec> c2;
        for (int k = 0; k < ar; ++k) c2.push_back(mk(k == 0 ? std::vector<int64_t>{64, 256} : std::vector<int64_t>{256}, Layout::kContiguous, k));
        cases.push_back(c2);
        // long rows on the flat kernel's 2-D grid (operand 0 broadcast over the rows, row stride
        // 0), with a partial block at the end of every row
        std::vector<OperandSpec> c3;
        for (int k = 0; k < ar; ++k) c3.push_back(mk({6, 2304}, k == 0 ? Layout::kBroadcast : Layout::kContiguous, k));
        cases.push_back(c3);
      }
      // transposed operands on the tile kernels (2-byte storage: element pairs), with edge tiles
      // both ways: every operand column-major; operand 0 column-major with the others broadcast
      // along either axis ([cols]: stride 0 along the rows, [rows, 1]: along the columns)
      {
        std::vector<OperandSpec> c, c2;
        const std::vector<int64_t> shp[3] = {{66, 130}, {130}, {66, 1}};
        for (int k = 0; k < ar; ++k) {
          c.push_back(mk({66, 130}, Layout::kPermuted, k));
          c2.push_back(mk(shp[k], k == 0 ? Layout::kPermuted : Layout::kContiguous, k));
        }
        cases.push_back(c);
        if (ar > 1) cases.push_back(c2);
      }
      // a scalar operand (the last operand, unless it is a mask/condition)
      if (ar >= 2 && op != EwOp::masked_fill) {
        std::vector<OperandSpec> c;
        for (int k = 0; k < ar - 1; ++k) c.push_back(mk({999}, Layout::kContiguous, k));
        const bool ib = is_integral(dt) || dt == DType::boolean;
        c.push_back(S(dt == DType::boolean ? Scalar(true) : (ib ? Scalar(int64_t{3}) : Scalar(1.75))));
        cases.push_back(c);
      }
      // rank 0 and empty
      {
        std::vector<OperandSpec> c, e;
        for (int k = 0; k < ar; ++k) c.push_back(mk({}, Layout::kContiguous, k)), e.push_back(mk({0, 5}, Layout::kContiguous, k));
        cases.push_back(c);
        cases.push_back(e);
      }
      for (auto& c : cases) {
        fwd_case(op, c, seed++, ps);
        if (HasFatalFailure() || HasFailure()) return;
      }
      // in-place: out aliases operand 0 (same dtype/shape as the result)
      {
        ElementwiseDescriptor d;
        d.op = op;
        d.num_operands = ar;
        for (int k = 0; k < ar; ++k) d.operand[k] = EwOperand::tensor(operand_dtype(op, k, dt), {33, 40});
        auto r = ew_result_dtype(d);
        if (r.ok() && *r == operand_dtype(op, 0, dt)) {
          std::vector<OperandSpec> c;
          for (int k = 0; k < ar; ++k) c.push_back(mk({33, 40}, Layout::kContiguous, k));
          fwd_case(op, c, seed++, ps, std::nullopt, true);
          if (HasFailure()) return;
          // into a column-major operand 0 (the tile kernels' staged output), the others contiguous
          std::vector<OperandSpec> t;
          for (int k = 0; k < ar; ++k) t.push_back(mk({66, 130}, k == 0 ? Layout::kPermuted : Layout::kContiguous, k));
          fwd_case(op, t, seed++, ps, std::nullopt, true);
          if (HasFailure()) return;
        }
      }
    }
  }
  print_stats("fwd", "elements");
}

// Special functions over their whole domains (the matrix above draws from [-2, 2]): igamma and
// igammac with a, x log-uniform in [1e-3, 1e4], with large a next to x = a (Temme's branch above
// 1e3 in float and 1e7 in double), and i0e / i1e over [-1000, 1000] (Hankel's series past 80 /
// 700). Compared with the float64 reference at the operands' rounded values, op_k tolerance.
TEST(ElementwiseDevice, SpecialFunctionsOverWideDomains) {
  BARACUDA_REQUIRE_GPU();
  std::mt19937_64 rng(4242);
  std::uniform_real_distribution<double> lg(-3.0, 4.0), big(3.0, 8.0), rel(-3e-3, 3e-3), bes(-1000.0, 1000.0);
  const int64_t n = 4096;
  for (EwOp op : {EwOp::igamma, EwOp::igammac, EwOp::i0e, EwOp::i1e}) {
    const int ar = ew_op_arity(op);
    for (DType dt : {DType::f32, DType::f64, DType::bf16, DType::f16}) {
      std::vector<StridedBuffer> in;
      for (int k = 0; k < ar; ++k) in.emplace_back(dt, std::vector<int64_t>{n}, Layout::kContiguous);
      for (int64_t i = 0; i < n; ++i) {
        if (ar == 1) {
          in[0].set_bits(i, double_to_bits(dt, bes(rng)));
          continue;
        }
        double a = std::pow(10.0, lg(rng)), x = std::pow(10.0, lg(rng));
        if (i % 4 == 0) {  // large a, x within a few standard deviations of a
          a = std::pow(10.0, dt == DType::f16 ? 4.0 : big(rng));
          x = a * (1.0 + rel(rng));
        }
        in[0].set_bits(i, double_to_bits(dt, a));
        in[1].set_bits(i, double_to_bits(dt, x));
      }
      ElementwiseDescriptor d;
      d.op = op;
      d.num_operands = ar;
      ElementwiseArgs args;
      for (int k = 0; k < ar; ++k) {
        in[k].upload();
        d.operand[k] = EwOperand::tensor(dt, {n});
        args.in[k] = in[k].ref();
      }
      auto plan = ElementwisePlan::select(d);
      ASSERT_TRUE(plan.ok()) << plan.status().to_string();
      StridedBuffer out(dt, {n}, Layout::kContiguous);
      out.fill_storage(0xFF);
      out.upload();
      args.out = out.mut();
      ASSERT_TRUE(plan->run(nullptr, {}, args).ok());
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      out.download();
      const DType cdt = plan->precision_guarantee().math;
      Stats& S = g_stats["wide"];
      S.cases++;
      const double p0[4] = {};
      for (int64_t i = 0; i < n; ++i) {
        double x[3] = {};
        for (int k = 0; k < ar; ++k) x[k] = bits_to_double(dt, in[k].get_bits(i));
        const double want = ref::store_as(dt, ref::ew_forward(op, x, p0));
        const double got = bits_to_double(dt, out.get_bits(i));
        S.elements++;
        if (std::isnan(want) || std::isinf(want)) {
          S.nonfinite++;
          ASSERT_TRUE(std::isnan(want) ? std::isnan(got) : got == want) << ew_op_name(op) << " " << dtype_name(dt) << " x=(" << x[0] << ", " << x[1] << ")";
          continue;
        }
        const double err = std::fabs(got - want), tol = ref::ew_tolerance(dt, ref::ew_tolerance_k(op), want);
        S.record(op, dt, err, tol);
        ASSERT_LE(err, tol) << "repro: " << ew_op_name(op) << " " << dtype_name(dt) << " (math " << dtype_name(cdt) << ") x=(" << x[0]
                            << ", " << x[1] << ") got " << got << " want " << want;
      }
    }
  }
  print_stats("wide", "elements");
}

// FrexpPlan: mantissa and exponent from one pass, bit-exact against the host's frexp, over
// every float dtype, strided / permuted / in-place views, special values and subnormals.
TEST(ElementwiseDevice, FrexpBothResults) {
  BARACUDA_REQUIRE_GPU();
  std::mt19937_64 rng(515);
  std::uniform_real_distribution<double> lg(-40.0, 40.0);
  int64_t checked = 0;
  for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::f64}) {
    for (Layout l : {Layout::kContiguous, Layout::kStep2, Layout::kPermuted, Layout::kOffset1}) {
      for (bool inplace : {false, true}) {
        if (inplace && l != Layout::kContiguous) continue;
        const std::vector<int64_t> shape{37, 129};
        StridedBuffer x(dt, shape, l);
        const int64_t n = x.numel();
        for (int64_t f = 0; f < n; ++f) {
          const double v = (rng() & 1 ? -1.0 : 1.0) * std::exp2(lg(rng));
          x.set_bits(f, double_to_bits(dt, v));
        }
        const double sp[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0, -0.5, 3.0, 1e-45, 6e-8, 1e-40, 5e-324};
        for (int i = 0; i < 12; ++i) x.set_bits(i * 7, double_to_bits(dt, sp[i]));
        std::vector<double> xv = logical_values(x);
        x.upload();
        auto plan = FrexpPlan::select(ElementwiseDescriptor::make(EwOp::frexp, {EwOperand::tensor(dt, shape)}));
        ASSERT_TRUE(plan.ok()) << plan.status().to_string();
        StridedBuffer m = poisoned_buffer(dt, shape, l == Layout::kPermuted ? Layout::kContiguous : l, 0xA5, nullptr);
        StridedBuffer e = poisoned_buffer(DType::i32, shape, Layout::kPermuted, 0xA5, nullptr);
        FrexpArgs a;
        a.in = x.ref();
        a.mantissa = inplace ? x.mut() : m.mut();
        a.exponent = e.mut();
        const Status st = plan->run(nullptr, {}, a);
        ASSERT_TRUE(st.ok()) << st.to_string();
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        const std::string repro = std::string("frexp ") + std::string(dtype_name(dt)) + " " + layout_name(l) + (inplace ? " in-place" : "");
        StridedBuffer& mb = inplace ? x : m;
        if (!inplace) ASSERT_TRUE(download_and_check_gaps("mantissa", repro, m, 0xA5));
        else x.download();
        ASSERT_TRUE(download_and_check_gaps("exponent", repro, e, 0xA5));
        for (int64_t f = 0; f < n; ++f) {
          int we = 0;
          const double wm = std::isfinite(xv[f]) ? std::frexp(xv[f], &we) : xv[f];
          const double gm = bits_to_double(dt, mb.get_bits(f));
          const int ge = static_cast<int32_t>(e.get_bits(f));
          const bool ok = (std::isnan(wm) ? std::isnan(gm) : (gm == wm && std::signbit(gm) == std::signbit(wm))) && ge == we;
          ASSERT_TRUE(ok) << repro << " elem " << f << " x=" << xv[f] << " got (" << gm << ", " << ge << ") want (" << wm << ", " << we << ")";
          ++checked;
        }
      }
    }
  }
  std::printf("[elementwise frexp] %lld (mantissa, exponent) pairs exact\n", static_cast<long long>(checked));
}

TEST(ElementwiseDevice, MixedDtypesPromoteOnTheFly) {
  BARACUDA_REQUIRE_GPU();
  fwd_case(EwOp::add, {T(DType::bf16, {50, 70}), T(DType::f32, {70})}, 901, {1.0});
  fwd_case(EwOp::mul, {T(DType::f16, {50, 70}), T(DType::bf16, {50, 70})}, 902);
  fwd_case(EwOp::exp, {T(DType::i32, {1000})}, 903);
  fwd_case(EwOp::lt, {T(DType::u8, {300}), T(DType::i8, {300})}, 904);
  fwd_case(EwOp::add, {T(DType::i32, {300}), S(2.5)}, 905);
  fwd_case(EwOp::where, {T(DType::boolean, {40, 1}), T(DType::f32, {40, 30}), T(DType::bf16, {30})}, 906);
  fwd_case(EwOp::mul, {T(DType::f32, {64, 64}), T(DType::f64, {})}, 907);  // zero-dim f64 does not upgrade f32
  fwd_case(EwOp::add, {T(DType::bf16, {64, 64}), T(DType::bf16, {64, 64})}, 908, {1.0}, DType::f32);  // out_dtype cast
  fwd_case(EwOp::float_power, {T(DType::f32, {500}), T(DType::i32, {500})}, 909);
  // integer / bool data against a fractional scalar compares in f32 (repro: eq(i32 0, 0.5) was
  // True, the typed rows kernel reading the scalar as the integer 0)
  for (EwOp op : {EwOp::eq, EwOp::ne, EwOp::lt, EwOp::le, EwOp::gt, EwOp::ge, EwOp::logical_and, EwOp::isclose}) {
    fwd_case(op, {T(DType::i32, {999}), S(0.5)}, 910);
    fwd_case(op, {T(DType::boolean, {999}), S(0.5)}, 911);
    fwd_case(op, {T(DType::i8, {64, 40}), S(-1.5)}, 912);
  }
}

// Runs one backward case (defined below) and compares every gradient element.
void bwd_case(EwOp op, std::vector<OperandSpec> specs, uint64_t seed, std::vector<Scalar> params, std::optional<DType> out_dtype = {});

// Scalar operands as PyTorch's CUDA kernels read a Python number (ew::kernel_literal): rounded
// to bf16 / f16 in remainder, fmod, pow, copysign, xlogy, the comparisons and a scalar dividend;
// f32 in add, mul, clamp ...; a scalar divisor becomes a multiply by its reciprocal; pow's
// special exponents (0.5 sqrt, -0.5 rsqrt, -1, 2, 3, -2) take PyTorch's paths. Every bf16
// and f16 bit pattern against scalars those formats do not hold, on either side; the reference
// gets the same reading of the scalar, so this checks that the kernels apply the rule.
TEST(ElementwiseDevice, ScalarOperandsReadAsPyTorch) {
  BARACUDA_REQUIRE_GPU();
  // one-operand plan on x (host mirror uploaded), result downloaded into o's host mirror
  auto run_on = [](const ElementwisePlan& plan, StridedBuffer& x, StridedBuffer& o) {
    x.upload();
    o.upload();
    ElementwiseArgs a;
    a.in[0] = x.ref();
    a.out = o.mut();
    ASSERT_TRUE(plan.run(nullptr, {}, a).ok());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    o.download();
  };
  uint64_t seed = 7001;
  auto every = [](DType dt) {
    OperandSpec s = T(dt, {65536});
    s.every_pattern = true;
    return s;
  };
  for (DType dt : {DType::bf16, DType::f16})
    for (double v : {0.1, 0.3, 1.0 / 3.0, 2.001, -2.7182818, 0.5, -0.5, -1.0, 3.0, -2.0})
      for (EwOp op : {EwOp::remainder, EwOp::fmod, EwOp::pow, EwOp::copysign, EwOp::xlogy, EwOp::xlog1py, EwOp::eq, EwOp::ne,
                      EwOp::lt, EwOp::le, EwOp::gt, EwOp::ge, EwOp::div, EwOp::div_trunc, EwOp::div_floor, EwOp::add, EwOp::mul}) {
        fwd_case(op, {every(dt), S(v)}, seed++, params_for(op, dt));
        if (HasFailure()) return;
        if (op == EwOp::xlogy || op == EwOp::xlog1py || op == EwOp::pow || op == EwOp::div || op == EwOp::remainder) {
          fwd_case(op, {S(v), every(dt)}, seed++, params_for(op, dt));
          if (HasFailure()) return;
        }
      }
  // derivatives with a scalar operand: div by a scalar multiplies by the reciprocal; pow, xlogy
  // and xlog1py read the scalar unrounded (PyTorch's derivative formulas take it as a double)
  for (DType dt : {DType::bf16, DType::f16, DType::f32})
    for (double v : {0.1, 1.001, 2.001, 0.5, 3.0})
      for (EwOp op : {EwOp::div, EwOp::pow, EwOp::xlogy, EwOp::xlog1py}) {
        bwd_case(op, {T(dt, {999}), S(v)}, seed++, {});
        if (HasFailure()) return;
        if (op != EwOp::div) {
          bwd_case(op, {S(v), T(dt, {999})}, seed++, {});
          if (HasFailure()) return;
        }
      }
  for (DType dt : {DType::bf16, DType::f16})
    for (EwOp op : {EwOp::threshold, EwOp::hardshrink, EwOp::softshrink})
      for (double v : {0.1, 0.3, 1.0 / 3.0}) {
        fwd_case(op, {every(dt)}, seed++, op == EwOp::threshold ? std::vector<Scalar>{v, v / 3} : std::vector<Scalar>{v});
        if (HasFailure()) return;
      }

  // Two results pinned to PyTorch's (read from its CUDA kernels): with x = bf16(0.1) =
  // 0.10009765625, (x == 0.1) is True because 0.1 is rounded to bf16 first; and f32 x / 3.0 is
  // x * float(1 / 3.0), which is not the correctly rounded quotient for every x.
  {
    auto plan = ElementwisePlan::select(ElementwiseDescriptor::make(EwOp::eq, {EwOperand::tensor(DType::bf16, {1}), EwOperand::scalar(0.1)}));
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    StridedBuffer x(DType::bf16, {1}, Layout::kContiguous), o(DType::boolean, {1}, Layout::kContiguous);
    x.set_bits(0, 0x3DCD);
    o.fill_storage(0);
    run_on(*plan, x, o);
    EXPECT_EQ(o.get_bits(0) & 0xff, 1u) << "bf16(0.1) == 0.1 must be True, as in PyTorch";
  }
  {
    const int64_t n = 1 << 16;
    auto plan = ElementwisePlan::select(ElementwiseDescriptor::make(EwOp::div, {EwOperand::tensor(DType::f32, {n}), EwOperand::scalar(3.0)}));
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    StridedBuffer x(DType::f32, {n}, Layout::kContiguous), o(DType::f32, {n}, Layout::kContiguous);
    const float inv = static_cast<float>(1.0 / 3.0);
    int64_t differ = 0;  // elements where the reciprocal product is not the quotient
    for (int64_t i = 0; i < n; ++i) {
      const float xv = 1.0f + static_cast<float>(i) * 0x1p-16f;
      x.set_bits(i, std::bit_cast<uint32_t>(xv));
      differ += (xv * inv) != (xv / 3.0f);
    }
    ASSERT_GT(differ, 0) << "the test needs inputs where x * (1/3) and x / 3 differ";
    run_on(*plan, x, o);
    for (int64_t i = 0; i < n; ++i) {
      const float xv = std::bit_cast<float>(static_cast<uint32_t>(x.get_bits(i)));
      const float want = xv * inv;
      const float got = std::bit_cast<float>(static_cast<uint32_t>(o.get_bits(i)));
      ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want)) << "repro: div f32 x=" << xv << " / 3.0 (element " << i << ")";
    }
    std::printf("[elementwise scalars] x / 3.0 on %lld f32 values: reciprocal product bitwise (%lld differ from the quotient)\n",
                static_cast<long long>(n), static_cast<long long>(differ));
  }
}

TEST(ElementwiseDevice, EveryCastPair) {
  BARACUDA_REQUIRE_GPU();
  const DType all[] = {DType::f32, DType::f16, DType::bf16, DType::f64, DType::f8e4m3, DType::f8e5m2, DType::i8,
                       DType::u8, DType::i16, DType::i32, DType::i64, DType::boolean};
  uint64_t seed = 5000;
  for (DType from : all)
    for (DType to : all)
      for (Layout l : {Layout::kContiguous, Layout::kStep2}) {
        fwd_case(EwOp::to, {T(from, {33, 65}, l)}, seed++, {}, to);
        if (HasFailure()) return;
        if (to == DType::f8e4m3 || to == DType::f8e5m2) fwd_case(EwOp::to, {T(from, {33, 65}, l)}, seed++, {}, to, false, true);
        if (HasFailure()) return;
      }
  print_stats("fwd", "elements, casts included");
}

// fp8 overflow and rounding at the top of the range, as PyTorch (repro values from the probe).
TEST(ElementwiseDevice, Fp8OverflowAsPyTorch) {
  BARACUDA_REQUIRE_GPU();
  const std::vector<float> v = {460.f, 464.f, 465.f, 500.f, -500.f, INFINITY, -INFINITY, NAN, 448.f, 57344.f,
                                59392.f, 61439.f, 61440.f, -1e6f, 1e-9f, -0.f, 0.3f, 240.f};
  const int64_t n = static_cast<int64_t>(v.size());
  for (DType to : {DType::f8e4m3, DType::f8e5m2})
    for (bool sat : {false, true}) {
      ElementwiseDescriptor d = ElementwiseDescriptor::make(EwOp::to, {EwOperand::tensor(DType::f32, {n})});
      d.out_dtype = to;
      d.saturate_fp8 = sat;
      auto plan = ElementwisePlan::select(d);
      ASSERT_TRUE(plan.ok());
      StridedBuffer x(DType::f32, {n}, Layout::kContiguous), y(to, {n}, Layout::kContiguous);
      for (int64_t i = 0; i < n; ++i) x.set_bits(i, std::bit_cast<uint32_t>(v[i]));
      x.upload();
      ASSERT_TRUE(plan->run(nullptr, {}, {{x.ref()}, y.mut()}).ok());
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      y.download();
      for (int64_t i = 0; i < n; ++i) {
        const double got = bits_to_double(to, y.get_bits(i)), want = ref::store_as(to, v[i], sat);
        if (std::isnan(want)) EXPECT_TRUE(std::isnan(got)) << dtype_name(to) << " sat " << sat << " of " << v[i] << ": got " << got;
        else EXPECT_EQ(got, want) << dtype_name(to) << " sat " << sat << " of " << v[i];
      }
    }
}

// ------------------------------------------------------------------ backward
void bwd_case(EwOp op, std::vector<OperandSpec> specs, uint64_t seed, std::vector<Scalar> params, std::optional<DType> out_dtype) {
  const ElementwiseDescriptor d = describe(op, specs, params, out_dtype);
  auto plan = ElementwiseBackwardPlan::select(d);
  ASSERT_TRUE(plan.ok()) << ew_op_name(op) << ": " << plan.status().to_string();
  auto fplan = ElementwisePlan::select(d);
  ASSERT_TRUE(fplan.ok());
  int orank = 0;
  int64_t oshape[kMaxRank];
  ASSERT_TRUE(ew_broadcast_shape(d, &orank, oshape).ok());
  std::vector<int64_t> out_shape(oshape, oshape + orank);
  std::mt19937_64 rng(seed);
  std::vector<StridedBuffer> in(specs.size()), gin(specs.size());
  ElementwiseBackwardArgs a;
  const unsigned gm = ew_op_grad_mask(op);
  for (size_t k = 0; k < specs.size(); ++k) {
    if (specs[k].scalar) continue;
    in[k] = StridedBuffer(specs[k].dtype, specs[k].shape, specs[k].layout);
    fill_random(in[k], rng, false);
    if (op == EwOp::where && k == 0) for (int64_t f = 0; f < in[k].numel(); ++f) in[k].set_bits(f, rng() & 1);
    if (op == EwOp::masked_fill && k == 1) for (int64_t f = 0; f < in[k].numel(); ++f) in[k].set_bits(f, rng() & 1);
    in[k].upload();
    a.in[k] = in[k].ref();
    if (gm >> k & 1u) {
      gin[k] = StridedBuffer(specs[k].dtype, specs[k].shape, Layout::kContiguous);
      gin[k].fill_storage(0xFF);
      gin[k].upload();
      a.grad_in[k] = gin[k].mut();
    }
  }
  StridedBuffer g(fplan->out_dtype(), out_shape, Layout::kContiguous);
  fill_random(g, rng, false);
  g.upload();
  a.grad_out = g.ref();
  void* ws = nullptr;
  if (plan->workspace_size()) ASSERT_EQ(cudaMalloc(&ws, plan->workspace_size()), cudaSuccess);
  const Status st = plan->run(nullptr, Workspace{ws, plan->workspace_size()}, a);
  ASSERT_TRUE(st.ok()) << st.to_string();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  if (ws) cudaFree(ws);
  auto pk = ew::kernel_params("test", d, fplan->out_dtype(), false);
  ASSERT_TRUE(pk.ok());
  int64_t on = 1;
  for (int64_t e : out_shape) on *= e;
  Stats& Sx = g_stats["bwd"];
  Sx.cases++;
  double lit[3] = {};  // the scalar operands as the derivative reads them
  for (size_t j = 0; j < specs.size(); ++j)
    if (specs[j].scalar) lit[j] = ew::kernel_literal(d, static_cast<int>(j), true);
  for (size_t k = 0; k < specs.size(); ++k) {
    if (specs[k].scalar || !(gm >> k & 1u)) continue;
    gin[k].download();
    const int64_t n = gin[k].numel();
    std::vector<double> want(n, 0.0), mag(n, 0.0), cond(n, 0.0);
    for (int64_t f = 0; f < on; ++f) {
      double x[3] = {};
      for (size_t j = 0; j < specs.size(); ++j)
        x[j] = specs[j].scalar ? lit[j] : bits_to_double(specs[j].dtype, in[j].get_bits(map_index(out_shape, f, specs[j].shape)));
      if (plan->precision_guarantee().math == DType::f32)
        for (int j = 0; j < 3; ++j) x[j] = static_cast<float>(x[j]);
      double dx[3];
      ref::ew_backward(op, x, bits_to_double(g.dtype, g.get_bits(f)), pk->data(), dx);
      const int64_t t = map_index(out_shape, f, specs[k].shape);
      // a broadcast operand's gradient is the unrounded sum, rounded once (elementwise.hpp's
      // backward numerics; PyTorch rounds each element first, which can turn a representable
      // sum into inf / NaN: repro d div / d b, f16, b broadcast, seed 71081)
      want[t] += dx[k];
      mag[t] += std::fabs(dx[k]);
      cond[t] += ref::ew_backward_conditioning(op, x[0]) * std::fabs(dx[k]);
    }
    // twice the compute type's unit roundoff, for the conditioning term
    const double ue = plan->precision_guarantee().math == DType::f64 ? 2.220446049250313e-16 : 1.1920929e-7;
    for (int64_t t = 0; t < n; ++t) {
      const double got = bits_to_double(specs[k].dtype, gin[k].get_bits(t));
      const double w = ref::store_as(specs[k].dtype, want[t]);
      Sx.elements++;
      if (std::isnan(w) || std::isinf(w)) {
        Sx.nonfinite++;
        if (std::isnan(w) ? !std::isnan(got) : got != w) {
          ADD_FAILURE() << "repro: d" << ew_op_name(op) << "/dx" << k << " " << dtype_name(specs[k].dtype) << " seed " << seed << " elem " << t
                        << " got " << got << " want " << w;
          return;
        }
        continue;
      }
      const double tol = ref::ew_tolerance(specs[k].dtype, ref::ew_tolerance_k(op) * 2, 0) * (1.0 + mag[t]) + ue * cond[t];
      const double err = std::fabs(got - w);
      Sx.record(op, specs[k].dtype, err, tol);
      if (!(err <= tol)) {
        ADD_FAILURE() << "repro: d" << ew_op_name(op) << "/dx" << k << " " << dtype_name(specs[k].dtype) << " shape " << shape_str(specs[k].shape)
                      << " seed " << seed << " elem " << t << " got " << got << " want " << w << " tol " << tol;
        return;
      }
    }
  }
}

TEST(ElementwiseDevice, EveryDerivativeEveryFloatDtype) {
  BARACUDA_REQUIRE_GPU();
  uint64_t seed = 70000;
  for (int o = 0; o < kNumEwOps; ++o) {
    const EwOp op = static_cast<EwOp>(o);
    if (ew_op_grad_mask(op) == 0) continue;
    const int ar = ew_op_arity(op);
    for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::f64}) {
      if (op == EwOp::to) {  // the cast's backward casts the gradient back
        bwd_case(op, {T(dt, {41, 77})}, seed++, {}, dt == DType::f32 ? DType::bf16 : DType::f32);
        bwd_case(op, {T(dt, {41, 1})}, seed++, {}, dt);
        continue;
      }
      auto ps = params_for(op, dt);
      auto mk = [&](std::vector<int64_t> shape, Layout l, int k) { return T(operand_dtype(op, k, dt), shape, l); };
      std::vector<OperandSpec> c1, c2;
      for (int k = 0; k < ar; ++k) c1.push_back(mk({41, 77}, k == 0 ? Layout::kPermuted : Layout::kStep2, k));
      bwd_case(op, c1, seed++, ps);
      if (HasFailure()) return;
      // column-major operands on the tile kernels (2-byte pairs), edge tiles both ways
      std::vector<OperandSpec> c3;
      for (int k = 0; k < ar; ++k) c3.push_back(mk({66, 130}, Layout::kPermuted, k));
      bwd_case(op, c3, seed++, ps);
      if (HasFailure()) return;
      // broadcast operands: gradients reduced to [41, 1], [77] ...
      const std::vector<int64_t> shp[3] = {{41, 1}, {77}, {41, 77}};
      for (int k = 0; k < ar; ++k) c2.push_back(mk(ar == 1 ? std::vector<int64_t>{41, 77} : shp[k], Layout::kContiguous, k));
      bwd_case(op, c2, seed++, ps);
      if (HasFailure()) return;
    }
  }
  print_stats("bwd", "gradient elements");
}

// One broadcast operand whose gradient the elementwise pass sums itself (ew::plan_bcast, pinned
// by the host test ElementwiseBcast.*): a [N] operand (row mode: column sums over 67 or 111
// rows in blocks of 32, the last part-full, two column blocks, the second part-full) and a
// [M, 1] one (col mode: the same blocks, one shared sum per row and thread), every differentiable operand of every op
// with two or three operands, f32 / f16 / bf16 (the fused kernels) and f64 (two-pass form).
// Rows of 1095 elements are not 16-byte aligned: those take the two-pass form. The compute-
// bound group (zeta, igamma, xlogy ...) keeps the two-pass form and is checked alike.
TEST(ElementwiseDevice, BroadcastGradientSummedInThePass) {
  BARACUDA_REQUIRE_GPU();
  uint64_t seed = 90000;
  for (int o = 0; o < kNumEwOps; ++o) {
    const EwOp op = static_cast<EwOp>(o);
    const unsigned gm = ew_op_grad_mask(op);
    const int ar = ew_op_arity(op);
    if (gm == 0 || ar < 2) continue;
    for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::f64}) {
      const auto ps = params_for(op, dt);
      for (int k = 0; k < ar; ++k) {
        if (!(gm >> k & 1u)) continue;
        const std::vector<std::vector<int64_t>> full = {{67, 1096}, {67, 1096}, {3, 37, 1096}, {3, 37, 1096}, {67, 1095}};
        const std::vector<std::vector<int64_t>> red = {{1096}, {67, 1}, {1, 1, 1096}, {3, 37, 1}, {1095}};
        for (size_t c = 0; c < full.size(); ++c) {
          if (dt == DType::f64 && c != 0) continue;
          std::vector<OperandSpec> specs;
          for (int j = 0; j < ar; ++j) specs.push_back(T(operand_dtype(op, j, dt), j == k ? red[c] : full[c]));
          bwd_case(op, specs, seed++, ps);
          if (HasFailure()) return;
        }
      }
    }
  }
  // 1250 blocks of rows in either mode
  for (DType dt : {DType::f32, DType::bf16}) {
    bwd_case(EwOp::mul, {T(dt, {40000, 1096}), T(dt, {1096})}, seed++, {});
    bwd_case(EwOp::prelu, {T(dt, {40000, 1096}), T(dt, {40000, 1})}, seed++, {});
    bwd_case(EwOp::mul, {T(dt, {1}), T(dt, {4096, 257})}, seed++, {});  // one element: one sum over all
    if (HasFailure()) return;
  }
  print_stats("bwd", "gradient elements");
}

// The fused broadcast backward: bitwise equal over reruns and under graph replay.
TEST(ElementwiseDevice, BroadcastGradientDeterministicAndGraphCapturable) {
  BARACUDA_REQUIRE_GPU();
  for (const std::vector<int64_t>& bshape : {std::vector<int64_t>{2048}, std::vector<int64_t>{300, 1}}) {
    auto d = ElementwiseDescriptor::make(EwOp::mul, {EwOperand::tensor(DType::bf16, {300, 2048}), EwOperand::tensor(DType::bf16, bshape)});
    auto plan = ElementwiseBackwardPlan::select(d);
    ASSERT_TRUE(plan.ok());
    std::mt19937_64 rng(11);
    StridedBuffer g(DType::bf16, {300, 2048}, Layout::kContiguous), a(DType::bf16, {300, 2048}, Layout::kContiguous),
        b(DType::bf16, bshape, Layout::kContiguous), ga(DType::bf16, {300, 2048}, Layout::kContiguous), gb(DType::bf16, bshape, Layout::kContiguous);
    for (StridedBuffer* t : {&g, &a, &b}) {
      fill_random(*t, rng, false);
      t->upload();
    }
    void* ws = nullptr;
    ASSERT_EQ(cudaMalloc(&ws, plan->workspace_size()), cudaSuccess);
    ElementwiseBackwardArgs args;
    args.grad_out = g.ref();
    args.in[0] = a.ref();
    args.in[1] = b.ref();
    args.grad_in[0] = ga.mut();
    args.grad_in[1] = gb.mut();
    cudaStream_t s;
    ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
    auto bits = [&]() {
      gb.download();
      ga.download();
      std::vector<uint64_t> v;
      for (int64_t f = 0; f < gb.numel(); ++f) v.push_back(gb.get_bits(f));
      for (int64_t f = 0; f < ga.numel(); ++f) v.push_back(ga.get_bits(f));
      return v;
    };
    ASSERT_TRUE(plan->run(s, Workspace{ws, plan->workspace_size()}, args).ok());
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    const std::vector<uint64_t> first = bits();
    for (int rep = 0; rep < 5; ++rep) {
      gb.fill_storage(0xFF);
      gb.upload();
      ASSERT_TRUE(plan->run(s, Workspace{ws, plan->workspace_size()}, args).ok());
      ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
      ASSERT_EQ(bits(), first) << "rerun " << rep << " differs, b " << shape_str(bshape);
    }
    cudaGraph_t graph;
    ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    ASSERT_TRUE(plan->run(s, Workspace{ws, plan->workspace_size()}, args).ok());
    ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
    cudaGraphExec_t exec;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    gb.fill_storage(0xFF);
    gb.upload();
    ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    EXPECT_EQ(bits(), first) << "graph replay differs, b " << shape_str(bshape);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(s);
    cudaFree(ws);
  }
}

// Gradients that are grad_out itself (ElementwiseBackwardPlan::grad_is_grad_out: add, sub, rsub,
// frac, a same-dtype cast, the added term of addcmul / addcdiv / fma), passed aliasing grad_out as
// a framework passes PyTorch's pass-through gradients on: run() writes nothing for them, so
// grad_out stays bitwise as it was, and that equals what a separate buffer receives; the other
// gradients are bitwise those of a run into separate buffers; and a problem whose gradients all
// pass through records no kernel under stream capture (add, frac, the cast). The second run
// leaves the operands outside operands_read() empty, as a framework that did not save them.
TEST(ElementwiseDevice, GradientsThatAreGradOutLeftInPlace) {
  BARACUDA_REQUIRE_GPU();
  std::mt19937_64 rng(23);
  const std::vector<int64_t> shp{41, 77};
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  int cases = 0, empty_graphs = 0;
  for (int o = 0; o < kNumEwOps; ++o) {
    const EwOp op = static_cast<EwOp>(o);
    const unsigned gm = ew_op_grad_mask(op);
    const int ar = ew_op_arity(op);
    if (gm == 0) continue;
    for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::f64})
    for (const std::vector<Scalar>& ps : {params_for(op, dt), std::vector<Scalar>{1.0}}) {
      const bool has_alpha = op == EwOp::add || op == EwOp::sub || op == EwOp::rsub;
      if (!has_alpha && ps.size() == 1 && ps[0].as_double() == 1.0) continue;  // alpha 0.5 and 1 only
      std::vector<OperandSpec> specs;
      for (int k = 0; k < ar; ++k) specs.push_back(T(operand_dtype(op, k, dt), shp));
      const ElementwiseDescriptor d = describe(op, specs, ps, op == EwOp::to ? std::optional<DType>(dt) : std::nullopt);
      auto plan = ElementwiseBackwardPlan::select(d);
      ASSERT_TRUE(plan.ok()) << ew_op_name(op) << ": " << plan.status().to_string();
      unsigned pass = 0;
      for (int k = 0; k < ar; ++k) pass |= plan->grad_is_grad_out(k) ? 1u << k : 0u;
      if (pass == 0) continue;
      ++cases;
      std::vector<StridedBuffer> in(ar), sep(ar), own(ar);
      StridedBuffer g(dt, shp, Layout::kContiguous);
      fill_random(g, rng, false);
      g.upload();
      ElementwiseBackwardArgs a, b;
      a.grad_out = b.grad_out = g.ref();
      for (int k = 0; k < ar; ++k) {
        in[k] = StridedBuffer(specs[k].dtype, shp, Layout::kContiguous);
        fill_random(in[k], rng, false);
        in[k].upload();
        a.in[k] = in[k].ref();
        if (plan->operands_read() >> k & 1u) b.in[k] = in[k].ref();  // the others left empty
        if (!(gm >> k & 1u)) continue;
        for (StridedBuffer* t : {&sep[k], &own[k]}) {
          *t = StridedBuffer(specs[k].dtype, shp, Layout::kContiguous);
          t->fill_storage(0xFF);
          t->upload();
        }
        a.grad_in[k] = sep[k].mut();
        b.grad_in[k] = pass >> k & 1u ? g.mut() : own[k].mut();
      }
      ASSERT_EQ(plan->workspace_size(), 0u);
      ASSERT_TRUE(plan->run(s, {}, a).ok());
      cudaGraph_t graph;
      ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
      const Status st = plan->run(s, {}, b);
      ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
      ASSERT_TRUE(st.ok()) << ew_op_name(op) << ": " << st.to_string();
      size_t nodes = 0;
      ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess);
      if (pass == (gm & ((1u << ar) - 1))) {
        EXPECT_EQ(nodes, 0u) << ew_op_name(op) << " " << dtype_name(dt) << ": every gradient is grad_out, yet kernels were recorded";
        empty_graphs += nodes == 0;
      } else {
        EXPECT_GT(nodes, 0u) << ew_op_name(op) << " " << dtype_name(dt);
      }
      cudaGraphExec_t exec;
      ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
      ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
      std::vector<uint64_t> g_before(g.numel());
      for (int64_t f = 0; f < g.numel(); ++f) g_before[f] = g.get_bits(f);
      g.download();
      for (int k = 0; k < ar; ++k) {
        if (!(gm >> k & 1u)) continue;
        sep[k].download();
        StridedBuffer& got = pass >> k & 1u ? g : own[k];
        if (!(pass >> k & 1u)) got.download();
        for (int64_t f = 0; f < g.numel(); ++f) {
          if (pass >> k & 1u) ASSERT_EQ(g.get_bits(f), g_before[f]) << ew_op_name(op) << " " << dtype_name(dt) << ": grad_out changed at " << f;
          ASSERT_EQ(got.get_bits(f), sep[k].get_bits(f)) << ew_op_name(op) << " " << dtype_name(dt) << " d/dx" << k << " at " << f;
        }
      }
    }
  }
  cudaStreamDestroy(s);
  // add, sub, rsub with alpha 0.5 and 1, frac, to, addcmul, addcdiv, fma in 4 dtypes; add with
  // alpha 1, frac and to record nothing
  EXPECT_EQ(cases, 44);
  EXPECT_EQ(empty_graphs, 12);
  std::printf("[ pass-through ] %d op x dtype cases, %d with no kernel recorded\n", cases, empty_graphs);
}

// ------------------------------------------------------------------ reduce-to-shape
TEST(ReduceToShapeDevice, AllOpsShapesAndReruns) {
  BARACUDA_REQUIRE_GPU();
  struct Case { std::vector<int64_t> in, out; Layout l; };
  const Case cases[] = {
      {{300, 257}, {257}, Layout::kContiguous},          // column (bias grad)
      {{300, 257}, {300, 1}, Layout::kContiguous},       // row
      {{7, 9, 11, 13}, {9, 1, 1}, Layout::kPermuted},    // mixed, permuted input
      {{5, 6, 7}, {5, 1, 7}, Layout::kStep2},
      {{1 << 20}, {1}, Layout::kContiguous},             // full reduce, split
      {{64, 100000}, {64, 1}, Layout::kContiguous},      // long rows, split
      {{100000, 3}, {3}, Layout::kContiguous},           // long columns, split
      {{0, 4}, {4}, Layout::kContiguous},                // empty reduction -> identity
      {{3, 4}, {3, 4}, Layout::kStep2},                  // nothing reduced
      {{}, {}, Layout::kContiguous},
      // column mode with 16 bytes of adjacent outputs per thread (col_vec_kernel) ...
      {{300, 2048}, {2048}, Layout::kContiguous},
      {{4000, 64}, {64}, Layout::kContiguous},            // few outputs: many splits
      {{37, 1, 48}, {1, 48}, Layout::kContiguous},         // 37 rows: a 4-row step and a tail
      // ... and the same shapes on the one-element-per-thread kernel: rows not 16-byte aligned,
      // a strided kept axis (the splits are those of the vector form)
      {{300, 2048}, {2048}, Layout::kOffset1},
      {{300, 2048}, {2048}, Layout::kPaddedRows},
      {{300, 2048}, {2048}, Layout::kStep2},
  };
  uint64_t seed = 90000;
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMax, ReduceOp::kMin})
    for (DType dt : {DType::f32, DType::bf16, DType::f64, DType::i32})
      for (const Case& c : cases) {
        const DType odt = dt;
        if ((op == ReduceOp::kMax || op == ReduceOp::kMin) && std::find(c.in.begin(), c.in.end(), int64_t{0}) != c.in.end()) {
          EXPECT_FALSE(ReduceToShapePlan::select(ReduceToShapeDescriptor::make(op, dt, c.in, odt, c.out)).ok());
          continue;
        }
        auto plan = ReduceToShapePlan::select(ReduceToShapeDescriptor::make(op, dt, c.in, odt, c.out));
        ASSERT_TRUE(plan.ok()) << plan.status().to_string();
        std::mt19937_64 rng(seed++);
        StridedBuffer x(dt, c.in, c.l), y(odt, c.out, Layout::kContiguous);
        fill_random(x, rng, false);
        if (op == ReduceOp::kProd && is_floating(dt))  // keep products finite: values near +-1
          for (int64_t f = 0; f < x.numel(); ++f) x.set_bits(f, double_to_bits(dt, (rng() & 1 ? 1.0 : -1.0) * (0.999 + 0.002 * (rng() % 1000) / 1000.0)));
        if (is_integral(dt)) for (int64_t f = 0; f < x.numel(); ++f) x.set_bits(f, static_cast<uint64_t>(static_cast<int64_t>(rng() % 7) - 3));
        x.upload();
        void* ws = nullptr;
        if (plan->workspace_size()) ASSERT_EQ(cudaMalloc(&ws, plan->workspace_size()), cudaSuccess);
        std::vector<uint64_t> first;
        for (int rep = 0; rep < 3; ++rep) {
          y.fill_storage(0xFF);
          y.upload();
          ASSERT_TRUE(plan->run(nullptr, {ws, plan->workspace_size()}, {x.ref(), y.mut()}).ok());
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
          y.download();
          std::vector<uint64_t> bits;
          for (int64_t f = 0; f < y.numel(); ++f) bits.push_back(y.get_bits(f));
          if (rep == 0) first = bits;
          else ASSERT_EQ(bits, first) << "reduce_to_shape not bitwise deterministic";
        }
        if (ws) cudaFree(ws);
        // reference
        std::vector<double> acc(y.numel()), mag(y.numel(), 0.0), cnt(y.numel(), 0.0);
        const double init = op == ReduceOp::kSum ? 0.0 : op == ReduceOp::kProd ? 1.0 : op == ReduceOp::kMax ? -INFINITY : INFINITY;
        std::fill(acc.begin(), acc.end(), init);
        for (int64_t f = 0; f < x.numel(); ++f) {
          const double v = bits_to_double(dt, x.get_bits(f));
          const int64_t t = map_index(c.in, f, c.out);
          if (op == ReduceOp::kSum) acc[t] += v;
          else if (op == ReduceOp::kProd) acc[t] *= v;
          else if (op == ReduceOp::kMax) acc[t] = std::max(acc[t], v);
          else acc[t] = std::min(acc[t], v);
          mag[t] += std::fabs(v);
          cnt[t] += 1;
        }
        for (int64_t t = 0; t < y.numel(); ++t) {
          const double got = bits_to_double(odt, y.get_bits(t));
          double w = acc[t];
          if (is_integral(odt)) w = ref::store_int(odt, static_cast<int64_t>(w));
          else w = ref::store_as(odt, w);
          double tol = 0;
          if (!is_integral(odt) && (op == ReduceOp::kSum || op == ReduceOp::kProd))
            tol = op == ReduceOp::kSum ? (dtype_eps(odt) + 64 * 1.2e-7) * (mag[t] + 1)
                                       // a product of n factors: n roundings, each relative
                                       : (dtype_eps(odt) + cnt[t] * (is_floating(odt) && odt != DType::f64 ? 1.2e-7 : 2.3e-16)) * std::fabs(w);
          if (std::isinf(w)) ASSERT_EQ(got, w);
          else ASSERT_LE(std::fabs(got - w), tol) << "repro: reduce " << enum_name(op) << " " << dtype_name(dt) << " " << shape_str(c.in)
                                                   << " -> " << shape_str(c.out) << " elem " << t << " got " << got << " want " << w;
        }
        g_stats["reduce"].cases++;
      }
  std::printf("[reduce_to_shape] %lld cases (4 ops x 4 dtypes x 16 shapes), 3 bitwise reruns each\n",
              static_cast<long long>(g_stats["reduce"].cases));
}

// numel > 2^31 on the rows path and a strided view whose offsets pass 2^31 (host splitting).
TEST(ElementwiseDevice, BeyondTwoToThe31) {
  BARACUDA_REQUIRE_GPU();
  size_t free_b = 0, total_b = 0;
  cudaMemGetInfo(&free_b, &total_b);
  const int64_t n = (int64_t{1} << 31) + 1;
  if (free_b < static_cast<size_t>(n) * 2 * 2 + (size_t{1} << 30)) GTEST_SKIP() << "needs ~9 GB of device memory";
  uint16_t *x = nullptr, *y = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&x), n * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&y), n * 2), cudaSuccess);
  // x = bf16(1.5) everywhere, except a marked element at the end
  std::vector<uint16_t> h(1 << 20, 0x3FC0);  // 1.5
  for (int64_t off = 0; off < n; off += h.size())
    ASSERT_EQ(cudaMemcpy(x + off, h.data(), std::min<int64_t>(h.size(), n - off) * 2, cudaMemcpyHostToDevice), cudaSuccess);
  const uint16_t last = 0x4040;  // 3.0
  ASSERT_EQ(cudaMemcpy(x + n - 1, &last, 2, cudaMemcpyHostToDevice), cudaSuccess);
  auto plan = ElementwisePlan::select(ElementwiseDescriptor::make(EwOp::neg, {EwOperand::tensor(DType::bf16, {n})}));
  ASSERT_TRUE(plan.ok());
  ASSERT_TRUE(plan->run(nullptr, {}, {{TensorRef::make(x, DType::bf16, {n})}, TensorMut::make(y, DType::bf16, {n})}).ok());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  uint16_t got[2];
  ASSERT_EQ(cudaMemcpy(got, y + n - 2, 4, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(got[0], 0xBFC0);  // -1.5
  EXPECT_EQ(got[1], 0xC040);  // -3.0
  ASSERT_EQ(cudaMemcpy(got, y, 2, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(got[0], 0xBFC0);
  // strided: every second element of x (offsets up to 2^31 elements * 2 bytes), into y's first half
  const int64_t m = n / 2 + 1;
  auto plan2 = ElementwisePlan::select(ElementwiseDescriptor::make(EwOp::mul, {EwOperand::tensor(DType::bf16, {m}), EwOperand::scalar(2.0)}));
  ASSERT_TRUE(plan2.ok());
  ASSERT_TRUE(plan2->run(nullptr, {}, {{TensorRef::make(x, DType::bf16, {m}, {2})}, TensorMut::make(y, DType::bf16, {m})}).ok());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(got, y + m - 1, 2, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(got[0], 0x40C0);  // 2 * x[2(m-1)] = 2 * x[n-1] = 6.0
  cudaFree(x);
  cudaFree(y);
}

}  // namespace
