// Host tier for the elementwise engine: PyTorch's type promotion (tables taken from PyTorch
// 2.11, docs/notes/torch-pointwise-probe.txt), the float64 reference on PyTorch's special-value
// results, finite-difference checks of every derivative, validation errors, overlap logic.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "baracuda/ops/elementwise.hpp"
#include "baracuda/ops/reduce_to_shape.hpp"
#include "core/validate.hpp"
#include "elementwise_ref.hpp"
#include "host/host_test_util.hpp"
#include "ops/elementwise/ew_iter.hpp"
#include "ops/elementwise/ew_math.hpp"
#include "ops/elementwise/ew_ops_binary.hpp"  // op_pow, op_div_floor (+ P, Fwd from the common header)
#include "ops/elementwise/ew_params.hpp"

namespace baracuda {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNoParams[4] = {};

PlanPreference host_pref() { return baracuda::test::hopper(); }
using baracuda::test::expect_error;

// ------------------------------------------------------------------ promotion
TEST(EwPromotion, MatchesPyTorchTable) {
  // rows/cols: bool u8 i8 i16 i32 i64 f16 bf16 f32 f64 (torch.promote_types, PyTorch 2.11)
  const DType t[] = {DType::boolean, DType::u8, DType::i8, DType::i16, DType::i32, DType::i64, DType::f16, DType::bf16, DType::f32, DType::f64};
  const char* table[10][10] = {
      {"bool", "u8", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"},
      {"u8", "u8", "i16", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"},
      {"i8", "i16", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"},
      {"i16", "i16", "i16", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"},
      {"i32", "i32", "i32", "i32", "i32", "i64", "f16", "bf16", "f32", "f64"},
      {"i64", "i64", "i64", "i64", "i64", "i64", "f16", "bf16", "f32", "f64"},
      {"f16", "f16", "f16", "f16", "f16", "f16", "f16", "f32", "f32", "f64"},
      {"bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "f32", "bf16", "f32", "f64"},
      {"f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f64"},
      {"f64", "f64", "f64", "f64", "f64", "f64", "f64", "f64", "f64", "f64"},
  };
  for (int i = 0; i < 10; ++i)
    for (int j = 0; j < 10; ++j) {
      auto r = promote_types(t[i], t[j]);
      ASSERT_TRUE(r.ok());
      EXPECT_EQ(dtype_name(*r), table[i][j]) << dtype_name(t[i]) << " + " << dtype_name(t[j]);
    }
  EXPECT_FALSE(promote_types(DType::f8e4m3, DType::f32).ok());
}

DType result_of(EwOp op, std::initializer_list<EwOperand> ops) {
  auto r = ew_result_dtype(ElementwiseDescriptor::make(op, ops));
  return r.ok() ? *r : DType::c128;  // c128 marks "error" here
}

TEST(EwPromotion, ScalarsAndZeroDimTensorsAsPyTorch) {
  // t + True, t + 2, t + 2.5, t * f64 zero-dim tensor   (torch 2.11, CUDA)
  struct Row { DType t; DType r[4]; };
  const Row rows[] = {
      {DType::boolean, {DType::boolean, DType::i64, DType::f32, DType::f64}},
      {DType::u8, {DType::u8, DType::u8, DType::f32, DType::f64}},
      {DType::i8, {DType::i8, DType::i8, DType::f32, DType::f64}},
      {DType::i32, {DType::i32, DType::i32, DType::f32, DType::f64}},
      {DType::i64, {DType::i64, DType::i64, DType::f32, DType::f64}},
      {DType::f16, {DType::f16, DType::f16, DType::f16, DType::f16}},
      {DType::bf16, {DType::bf16, DType::bf16, DType::bf16, DType::bf16}},
      {DType::f32, {DType::f32, DType::f32, DType::f32, DType::f32}},
  };
  for (const Row& row : rows) {
    const EwOperand x = EwOperand::tensor(row.t, {3});
    EXPECT_EQ(result_of(EwOp::add, {x, EwOperand::scalar(true)}), row.r[0]) << dtype_name(row.t);
    EXPECT_EQ(result_of(EwOp::add, {x, EwOperand::scalar(2)}), row.r[1]) << dtype_name(row.t);
    EXPECT_EQ(result_of(EwOp::add, {x, EwOperand::scalar(2.5)}), row.r[2]) << dtype_name(row.t);
    EXPECT_EQ(result_of(EwOp::mul, {x, EwOperand::tensor(DType::f64, {})}), row.r[3]) << dtype_name(row.t);
  }
}

TEST(EwPromotion, OpKindsAsPyTorch) {
  const DType c = DType::c128;  // error
  // unary: bool u8 i8 i16 i32 i64 f16 bf16 f32 f64
  const DType all[] = {DType::boolean, DType::u8, DType::i8, DType::i16, DType::i32, DType::i64, DType::f16, DType::bf16, DType::f32, DType::f64};
  struct U { EwOp op; DType r[10]; };
  const U un[] = {
      {EwOp::exp, {DType::f32, DType::f32, DType::f32, DType::f32, DType::f32, DType::f32, DType::f16, DType::bf16, DType::f32, DType::f64}},
      {EwOp::abs, {DType::boolean, DType::u8, DType::i8, DType::i16, DType::i32, DType::i64, DType::f16, DType::bf16, DType::f32, DType::f64}},
      {EwOp::neg, {c, DType::u8, DType::i8, DType::i16, DType::i32, DType::i64, DType::f16, DType::bf16, DType::f32, DType::f64}},
      {EwOp::floor, {c, DType::u8, DType::i8, DType::i16, DType::i32, DType::i64, DType::f16, DType::bf16, DType::f32, DType::f64}},
      {EwOp::relu, {c, DType::u8, DType::i8, DType::i16, DType::i32, DType::i64, DType::f16, DType::bf16, DType::f32, DType::f64}},
      {EwOp::bitwise_not, {DType::boolean, DType::u8, DType::i8, DType::i16, DType::i32, DType::i64, c, c, c, c}},
      {EwOp::square, {DType::i64, DType::u8, DType::i8, DType::i16, DType::i32, DType::i64, DType::f16, DType::bf16, DType::f32, DType::f64}},
      {EwOp::frac, {c, c, c, c, c, c, DType::f16, DType::bf16, DType::f32, DType::f64}},
      {EwOp::isnan, {DType::boolean, DType::boolean, DType::boolean, DType::boolean, DType::boolean, DType::boolean, DType::boolean, DType::boolean, DType::boolean, DType::boolean}},
  };
  for (const U& u : un)
    for (int i = 0; i < 10; ++i)
      EXPECT_EQ(result_of(u.op, {EwOperand::tensor(all[i], {2})}), u.r[i]) << ew_op_name(u.op) << " of " << dtype_name(all[i]);
  // binary on two tensors of: bool u8 i32 f16
  const DType bin_in[] = {DType::boolean, DType::u8, DType::i32, DType::f16};
  struct B { EwOp op; DType r[4]; };
  const B bin[] = {
      {EwOp::add, {DType::boolean, DType::u8, DType::i32, DType::f16}},
      {EwOp::sub, {c, DType::u8, DType::i32, DType::f16}},
      {EwOp::div, {DType::f32, DType::f32, DType::f32, DType::f16}},
      {EwOp::maximum, {DType::boolean, DType::u8, DType::i32, DType::f16}},
      {EwOp::div_floor, {c, DType::u8, DType::i32, DType::f16}},
      {EwOp::pow, {c, DType::u8, DType::i32, DType::f16}},
      {EwOp::atan2, {DType::f32, DType::f32, DType::f32, DType::f16}},
      {EwOp::bitwise_and, {DType::boolean, DType::u8, DType::i32, c}},
      {EwOp::logical_and, {DType::boolean, DType::boolean, DType::boolean, DType::boolean}},
      {EwOp::hypot, {c, c, c, DType::f16}},
      {EwOp::gcd, {c, DType::u8, DType::i32, c}},
      {EwOp::heaviside, {DType::boolean, DType::u8, DType::i32, DType::f16}},
      {EwOp::ldexp, {DType::f32, DType::f32, DType::f32, DType::f16}},
  };
  for (const B& b : bin)
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(result_of(b.op, {EwOperand::tensor(bin_in[i], {2}), EwOperand::tensor(bin_in[i], {2})}), b.r[i])
          << ew_op_name(b.op) << " of " << dtype_name(bin_in[i]);
}

// ------------------------------------------------------------------ reference on special values
double fwd(EwOp op, std::initializer_list<double> x, std::initializer_list<Scalar> params = {}) {
  ElementwiseDescriptor d = ElementwiseDescriptor::make(op, {}, params);
  auto p = ew::kernel_params("test", d, DType::f32, false);
  EXPECT_TRUE(p.ok());
  double xs[3] = {};
  int k = 0;
  for (double v : x) xs[k++] = v;
  return ref::ew_forward(op, xs, p->data());
}
// integer math of op on (a, b) with the parameters kernel_params gives for tensors of dtype t
int64_t ifwd(EwOp op, int64_t a, int64_t b, DType t = DType::i64) {
  const int ar = ew_op_arity(op);
  std::vector<EwOperand> ops(ar, EwOperand::tensor(t, {2}));
  ElementwiseDescriptor d = ElementwiseDescriptor::make(op, {});
  d.num_operands = ar;
  for (int k = 0; k < ar; ++k) d.operand[k] = ops[k];
  auto pk = ew::kernel_params("test", d, t, true);
  EXPECT_TRUE(pk.ok()) << ew_op_name(op);
  int64_t p[4] = {};
  for (int k = 0; k < 4 && pk.ok(); ++k) p[k] = ew::kernel_int_param(d, *pk, k);
  const int64_t x[3] = {a, b, 0};
  return ref::ew_forward_int(op, x, p);
}
void expect_same(double got, double want, const std::string& what) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << ": got " << got << ", want NaN";
    return;
  }
  EXPECT_EQ(got, want) << what;
  EXPECT_EQ(std::signbit(got), std::signbit(want)) << what << " (sign of zero)";
}

TEST(EwReference, PyTorchSpecialValues) {
  // one-line repros: each row is what torch 2.11 on CUDA returns (f32)
  expect_same(fwd(EwOp::sign, {kNaN}), 0.0, "sign(nan)");
  expect_same(fwd(EwOp::sign, {-0.0}), 0.0, "sign(-0)");
  expect_same(fwd(EwOp::relu, {-0.0}), 0.0, "relu(-0)");
  expect_same(fwd(EwOp::relu6, {-0.0}), 0.0, "relu6(-0)");
  expect_same(fwd(EwOp::hardtanh, {-0.0}), -0.0, "hardtanh(-0)");
  expect_same(fwd(EwOp::clamp, {-0.0}, {0.0, 1.0}), 0.0, "clamp(-0, 0, 1)");
  expect_same(fwd(EwOp::round, {2.5}), 2.0, "round(2.5)");
  expect_same(fwd(EwOp::round, {-0.5}), -0.0, "round(-0.5)");
  expect_same(fwd(EwOp::round, {1.25}, {Scalar(int64_t{1})}), 1.2, "round(1.25, decimals=1)");
  expect_same(fwd(EwOp::frac, {kInf}), kNaN, "frac(inf)");
  expect_same(fwd(EwOp::softshrink, {-0.5}), 0.0, "softshrink(-0.5)");
  expect_same(fwd(EwOp::softshrink, {kNaN}), kNaN, "softshrink(nan)");
  expect_same(fwd(EwOp::hardswish, {-3.0}), -0.0, "hardswish(-3)");
  expect_same(fwd(EwOp::mish, {-kInf}), kNaN, "mish(-inf)");
  expect_same(fwd(EwOp::logit, {1.0}), kInf, "logit(1)");
  expect_same(fwd(EwOp::entr, {-1.0}), -kInf, "entr(-1)");
  expect_same(fwd(EwOp::entr, {1.0}), -0.0, "entr(1)");
  expect_same(fwd(EwOp::nan_to_num, {kNaN}), 0.0, "nan_to_num(nan)");
  expect_same(fwd(EwOp::digamma, {0.0}), -kInf, "digamma(0)");
  expect_same(fwd(EwOp::digamma, {-0.0}), kInf, "digamma(-0)");
  expect_same(fwd(EwOp::digamma, {-1.0}), kNaN, "digamma(-1)");
  EXPECT_NEAR(fwd(EwOp::digamma, {1.0}), -0.5772156649015329, 1e-15);
  EXPECT_NEAR(fwd(EwOp::digamma, {-0.5}), 0.03648997397857652, 1e-14);
  EXPECT_NEAR(fwd(EwOp::erfcx, {-1.0}), 5.00898008076228346, 1e-14);
  EXPECT_NEAR(fwd(EwOp::erfcx, {100.0}), 0.005641613782989433, 1e-17);
  EXPECT_NEAR(fwd(EwOp::ndtri, {0.975}), 1.959963984540054, 1e-13);
  EXPECT_NEAR(fwd(EwOp::i0, {1.0}), 1.2660658777520082, 1e-14);
  EXPECT_NEAR(fwd(EwOp::zeta, {2.0, 1.0}), 1.6449340668482264, 1e-15);   // pi^2 / 6
  EXPECT_NEAR(fwd(EwOp::zeta, {3.0, 2.0}), 0.2020569031595943, 1e-15);   // zeta(3) - 1
  EXPECT_NEAR(fwd(EwOp::polygamma, {1.0}, {Scalar(int64_t{1})}), 1.6449340668482264, 1e-13);  // trigamma(1)
  EXPECT_NEAR(fwd(EwOp::polygamma, {1.0}, {Scalar(int64_t{2})}), -2.4041138063191885, 1e-13); // -2 zeta(3)
  EXPECT_NEAR(fwd(EwOp::polygamma, {2.5}, {Scalar(int64_t{3})}), 0.2239058488171264, 1e-12);  // 6 zeta(4, 2.5)
  expect_same(fwd(EwOp::zeta, {0.5, 1.0}), kNaN, "zeta(0.5, 1)");
  expect_same(fwd(EwOp::zeta, {2.0, -1.0}), kInf, "zeta(2, -1)");
  EXPECT_NEAR(fwd(EwOp::i1, {-1.0}), -0.5651591039924851, 1e-14);
  expect_same(fwd(EwOp::div_floor, {kInf, 2.0}), kNaN, "inf // 2");
  expect_same(fwd(EwOp::div_floor, {-2.5, 2.0}), -2.0, "-2.5 // 2");
  expect_same(fwd(EwOp::div_floor, {3.0, -0.0}), -kInf, "3 // -0");
  expect_same(fwd(EwOp::remainder, {-2.5, 2.0}), 1.5, "remainder(-2.5, 2)");
  expect_same(fwd(EwOp::remainder, {1.0, kInf}), 1.0, "remainder(1, inf)");
  expect_same(fwd(EwOp::fmod, {-2.5, 2.0}), -0.5, "fmod(-2.5, 2)");
  expect_same(fwd(EwOp::maximum, {-0.0, 0.0}), 0.0, "maximum(-0, 0)");
  expect_same(fwd(EwOp::minimum, {1.0, -0.0}), -0.0, "minimum(1, -0)");
  expect_same(fwd(EwOp::maximum, {kNaN, 1.0}), kNaN, "maximum(nan, 1)");
  expect_same(fwd(EwOp::fmax, {kNaN, 1.0}), 1.0, "fmax(nan, 1)");
  expect_same(fwd(EwOp::heaviside, {kNaN, 1.0}), 0.0, "heaviside(nan, 1)");
  expect_same(fwd(EwOp::heaviside, {0.0, kNaN}), kNaN, "heaviside(0, nan)");
  expect_same(fwd(EwOp::xlogy, {0.0, 0.0}), 0.0, "xlogy(0, 0)");
  expect_same(fwd(EwOp::xlogy, {kNaN, 1.0}), kNaN, "xlogy(nan, 1)");
  expect_same(fwd(EwOp::logaddexp, {-kInf, kInf}), kInf, "logaddexp(-inf, inf)");
  expect_same(fwd(EwOp::ldexp, {-3.0, -kInf}), -0.0, "ldexp(-3, -inf)");
  expect_same(fwd(EwOp::copysign, {1.0, -0.0}), -1.0, "copysign(1, -0)");
  expect_same(fwd(EwOp::lerp_scalar, {0.1, 5.3}, {0.75}), 5.3 - (5.3 - 0.1) * 0.25, "lerp(0.1, 5.3, 0.75) branch");
  expect_same(fwd(EwOp::isclose, {kNaN, kNaN}, {1e-5, 1e-8, 1.0}), 1.0, "isclose(nan, nan, equal_nan)");
}

// igamma / igammac / their x-derivative and i0e / i1e against values computed with mpmath
// (40 digits: gammainc(a, 0, x, regularized=True), exp(-|x|) besseli(nu, x)), through every
// branch: series, continued fraction, large-a prefactor, Temme's uniform term (a > 1e3 in
// float, 1e7 in double), Hankel's series (|x| > 80 in float, 700 in double).
TEST(EwReference, IncompleteGammaAndScaledBesselAgainstMpmath) {
  struct G { double a, x, p, q, dpdx; };
  const G g[] = {
      {0.5, 0.3, 0.56142197391900014, 0.43857802608099986, 0.76309057876818596},
      {2.0, 1.0, 0.26424111765711536, 0.73575888234288464, 0.36787944117144232},
      {0.001, 0.5, 0.99943993334352925, 0.00056006665647074989, 0.0012129196984382425},
      {5.0, 50.0, 0.99999999999999995, 5.4497019829205293e-17, 5.0227860624060359e-17},
      {100.0, 50.0, 3.2000653245851253e-10, 0.99999999967999347, 3.2606387042954601e-10},
      {100.0, 100.0, 0.51329879827914866, 0.48670120172085134, 0.039860996809147135},
      {1000.0, 1010.0, 0.62767894473699473, 0.37232105526300527, 0.01188451503603511},
      {20000.0, 20100.0, 0.76061670556141765, 0.23938329443858235, 0.0021878328378327906},
      {100000.0, 100300.0, 0.82863631125120765, 0.17136368874879235, 0.00080272398878442456},
      {0.25, 12.0, 0.99999975161153898, 2.4838846101984572e-7, 2.6284468986380603e-7},
      {50.0, 80.0, 0.99986921602340859, 0.00013078397659141034, 5.2935368685313973e-5},
      {1500.0, 1480.0, 0.30499261901585626, 0.69500738098414374, 0.009125233779382117},
      {3e7, 30004000.0, 0.76740426931771612, 0.23259573068228388, 5.5781471506460469e-5},
      // small a, x <= 1.1: Q directly (1 - P gave -6.7e-15 and, in float, 3.1e-6 for the first;
      // found by the ew-parity dump)
      {1.1754943508222875e-38, 9.999999682655225e-21, 1.0, 5.3455001666048062e-37, 1.1754943881259877e-18},
      {1e-20, 1.0000001192092896, 1.0, 2.1938389054087867e-21, 3.6787935346216173e-21},
      {0.01, 0.9, 0.99737365674794885, 0.0026263432520511505, 0.0045384353289090384},
      {0.3, 1e-3, 0.14024245892486737, 0.85975754107513263, 42.040384855288138},
      // 1 / a overflowed in the P series (float: inf; PyTorch 2.11 gives 0): ew-parity dump
      {2.73272538462147e-39, 2.303434554274489e-26, 1.0, 1.597430895850165e-37, 1.1863698838546747e-13},
  };
  // double: relative 1e-13, plus 2e-16 absolute for the complement taken as 1 - (other) (its
  // rounding is relative to 1, not to the small result: the 1e-3 row's Q)
  auto near = [](double got, double want, double rel, double abs) { return std::fabs(got - want) <= rel * std::fabs(want) + abs; };
  for (const G& c : g) {
    const double dx[3] = {c.a, c.x, 0};
    double grad[3];
    EXPECT_PRED4(near, fwd(EwOp::igamma, {c.a, c.x}), c.p, 1e-13, 2e-16) << "igamma(" << c.a << ", " << c.x << ")";
    EXPECT_PRED4(near, fwd(EwOp::igammac, {c.a, c.x}), c.q, 1e-13, 2e-16) << "igammac(" << c.a << ", " << c.x << ")";
    ref::ew_backward(EwOp::igamma, dx, 1.0, kNoParams, grad);
    EXPECT_PRED4(near, grad[1], c.dpdx, 1e-12, 0.0) << "d igamma / dx (" << c.a << ", " << c.x << ")";
    EXPECT_EQ(grad[0], 0.0);
    // float math (f32 / f16 / bf16 results): against the double reference at the float inputs,
    // within the device suite's tolerance (64 eps of f32, relative to 1 + |result|)
    const float af = static_cast<float>(c.a), xf = static_cast<float>(c.x);
    const double pd = ew::m::igamma_pq<double>(af, xf, false), qd = ew::m::igamma_pq<double>(af, xf, true);
    EXPECT_PRED4(near, ew::m::igamma_pq<float>(af, xf, false), pd, 64 * 1.1920929e-7, 64 * 1.1920929e-7) << "f32 igamma(" << c.a << ", " << c.x << ")";
    EXPECT_PRED4(near, ew::m::igamma_pq<float>(af, xf, true), qd, 64 * 1.1920929e-7, 64 * 1.1920929e-7) << "f32 igammac(" << c.a << ", " << c.x << ")";
  }
  // a small Q keeps its relative accuracy in float too (the loop above allows 64 eps absolute)
  for (const G& c : g) {
    if (c.q > 0.01) continue;
    const float af = static_cast<float>(c.a), xf = static_cast<float>(c.x);
    const double qd = ew::m::igamma_pq<double>(af, xf, true);
    EXPECT_PRED4(near, fwd(EwOp::igammac, {c.a, c.x}), c.q, 1e-13, 0.0) << "igammac(" << c.a << ", " << c.x << ") relative";
    EXPECT_PRED4(near, ew::m::igamma_pq<float>(af, xf, true), qd, 64 * 1.1920929e-7, 0.0) << "f32 igammac(" << c.a << ", " << c.x << ") relative";
  }
  // boundaries (PyTorch / SciPy)
  expect_same(fwd(EwOp::igamma, {-1.0, 1.0}), kNaN, "igamma(-1, 1)");
  expect_same(fwd(EwOp::igamma, {0.0, 0.0}), kNaN, "igamma(0, 0)");
  expect_same(fwd(EwOp::igamma, {0.0, 2.0}), 1.0, "igamma(0, 2)");
  expect_same(fwd(EwOp::igammac, {0.0, 2.0}), 0.0, "igammac(0, 2)");
  expect_same(fwd(EwOp::igamma, {3.0, 0.0}), 0.0, "igamma(3, 0)");
  expect_same(fwd(EwOp::igammac, {3.0, 0.0}), 1.0, "igammac(3, 0)");
  expect_same(fwd(EwOp::igamma, {kInf, 5.0}), 0.0, "igamma(inf, 5)");
  expect_same(fwd(EwOp::igamma, {kInf, kInf}), kNaN, "igamma(inf, inf)");
  expect_same(fwd(EwOp::igamma, {3.0, kInf}), 1.0, "igamma(3, inf)");
  expect_same(fwd(EwOp::igammac, {3.0, kInf}), 0.0, "igammac(3, inf)");
  expect_same(fwd(EwOp::igamma, {kNaN, 1.0}), kNaN, "igamma(nan, 1)");
  // d/dx at the boundary: what PyTorch 2.11 returns (scripts/probe/torch_new_special_probe.py)
  const double ba[] = {-1.0, 0.0, 0.0, 3.0, 3.0, kInf, kInf, 3.0, kNaN, 1.0, 0.5, 2.0};
  const double bx[] = {1.0, 0.0, 2.0, 0.0, kInf, 5.0, kInf, kNaN, 1.0, 0.0, 0.0, 0.0};
  const double bg[] = {0.0, kNaN, 0.0, 0.0, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kInf, 0.0};
  for (int i = 0; i < 12; ++i) {
    const double xs[3] = {ba[i], bx[i], 0};
    double gr[3];
    ref::ew_backward(EwOp::igamma, xs, 1.0, kNoParams, gr);
    expect_same(gr[1], bg[i], "d igamma / dx at (" + std::to_string(ba[i]) + ", " + std::to_string(bx[i]) + ")");
  }

  struct B { double x, i0e, i1e; };
  const B b[] = {{0.0, 1.0, 0.0},
                 {1.0, 0.46575960759364044, 0.20791041534970845},
                 {-2.5, 0.27004644161220274, -0.20658464953126655},
                 {10.0, 0.12783333716342861, 0.12126268138445552},
                 {85.0, 0.043335426492424391, 0.043079753484277879},
                 {200.0, 0.028227159949111916, 0.028156503394832918},
                 {1000.0, 0.012617240455891257, 0.012610930256928629}};
  // near the float maximum: 2 pi x overflowed in float and gave 0 (i0e(5.4e37) is 5.42e-20; ew-parity dump)
  EXPECT_PRED4(near, ew::m::bessel_i0e(5.416604082823532e+37f), 5.4205894992478968e-20, 8 * 1.1920929e-7, 0.0);
  EXPECT_PRED4(near, ew::m::bessel_i1e(-3.0e38f), -1 / std::sqrt(2 * 3.14159265358979 * 3.0e38), 8 * 1.1920929e-7, 0.0);
  for (const B& c : b) {
    EXPECT_PRED4(near, fwd(EwOp::i0e, {c.x}), c.i0e, 1e-14, 0.0) << "i0e(" << c.x << ")";
    EXPECT_PRED4(near, fwd(EwOp::i1e, {c.x}), c.i1e, 1e-14, 0.0) << "i1e(" << c.x << ")";
    const float xf = static_cast<float>(c.x);
    EXPECT_PRED4(near, ew::m::bessel_i0e(xf), c.i0e, 8 * 1.1920929e-7, 0.0) << "f32 i0e(" << c.x << ")";
    EXPECT_PRED4(near, ew::m::bessel_i1e(xf), c.i1e, 8 * 1.1920929e-7, 0.0) << "f32 i1e(" << c.x << ")";
  }
  expect_same(fwd(EwOp::i0e, {kInf}), 0.0, "i0e(inf)");
  expect_same(fwd(EwOp::i1e, {-kInf}), -0.0, "i1e(-inf)");
  expect_same(fwd(EwOp::i0e, {kNaN}), kNaN, "i0e(nan)");
}

// frexp: mantissa in [0.5, 1) with the input's sign; 0, inf, NaN pass through with exponent 0.
TEST(EwReference, FrexpMantissaAndExponent) {
  int e = 7;
  EXPECT_EQ(ew::m::frexp(8.0, &e), 0.5);
  EXPECT_EQ(e, 4);
  EXPECT_EQ(ew::m::frexp(-0.375f, &e), -0.75f);
  EXPECT_EQ(e, -1);
  EXPECT_EQ(ew::m::frexp(1e-45f, &e), 0.5f);  // subnormal float
  EXPECT_EQ(e, -148);
  expect_same(ew::m::frexp(-0.0, &e), -0.0, "frexp(-0)");
  EXPECT_EQ(e, 0);
  expect_same(ew::m::frexp(-kInf, &e), -kInf, "frexp(-inf)");
  EXPECT_EQ(e, 0);
  expect_same(ew::m::frexp(kNaN, &e), kNaN, "frexp(nan)");
  EXPECT_EQ(e, 0);
  expect_same(fwd(EwOp::frexp, {-12.0}), -0.75, "frexp(-12).mantissa");
  // d mantissa / dx = 2^-e
  const double x[3] = {-12.0, 0, 0};
  double g[3];
  ref::ew_backward(EwOp::frexp, x, 1.0, kNoParams, g);
  EXPECT_EQ(g[0], 1.0 / 16);
}

TEST(EwScalars, ReadAsPyTorchCudaKernelsReadThem) {
  // PyTorch's CUDA functors of remainder, fmod, pow, copysign, xlogy, xlog1py, the comparisons
  // and where take scalar_t, so a Python scalar meets bf16 / f16 data rounded to that format;
  // add / mul / clamp ... take opmath_t (f32). docs/notes/torch-scalar-operands.md.
  using O = EwOperand;
  auto lit = [](EwOp op, std::initializer_list<EwOperand> ops, int k) { return ew::kernel_literal(ElementwiseDescriptor::make(op, ops), k); };
  const O bf = O::tensor(DType::bf16, {4}), hf = O::tensor(DType::f16, {4}), f32 = O::tensor(DType::f32, {4}), i32 = O::tensor(DType::i32, {4});
  EXPECT_EQ(lit(EwOp::remainder, {bf, O::scalar(0.3)}, 1), 0.30078125);  // torch.remainder(x_bf16, 0.3)
  EXPECT_EQ(lit(EwOp::remainder, {O::scalar(0.3), bf}, 0), 0.30078125);
  EXPECT_EQ(lit(EwOp::eq, {bf, O::scalar(0.1)}, 1), 0.10009765625);
  EXPECT_EQ(lit(EwOp::le, {hf, O::scalar(0.1)}, 1), 0.0999755859375);
  EXPECT_EQ(lit(EwOp::pow, {bf, O::scalar(2.001)}, 1), 2.0);  // x ** 2.001 is x ** 2 in bf16
  EXPECT_EQ(lit(EwOp::add, {bf, O::scalar(0.3)}, 1), 0.3);     // opmath: f32 (rounded later, by the kernel's f32 read)
  EXPECT_EQ(lit(EwOp::mul, {hf, O::scalar(0.1)}, 1), 0.1);
  EXPECT_EQ(lit(EwOp::remainder, {f32, O::scalar(0.3)}, 1), 0.3);  // not a 16-bit common dtype
  EXPECT_EQ(lit(EwOp::remainder, {i32, O::scalar(0.3)}, 1), 0.3);  // int tensor + float scalar: f32
  // a scalar dividend is rounded; a scalar divisor becomes its reciprocal (f32 math: rounded to f32 later)
  EXPECT_EQ(lit(EwOp::div, {O::scalar(0.1), bf}, 0), 0.10009765625);
  EXPECT_EQ(lit(EwOp::div, {bf, O::scalar(0.1)}, 1), 1.0 / 0.1);
  EXPECT_EQ(lit(EwOp::div, {f32, O::scalar(3.0)}, 1), 1.0 / 3.0);
  EXPECT_EQ(lit(EwOp::div_trunc, {f32, O::scalar(3.0)}, 1), static_cast<double>(1.0f / 3.0f));  // trunc: formed in f32
  EXPECT_EQ(lit(EwOp::div_trunc, {i32, O::scalar(int64_t{3})}, 1), 3.0);  // integer math divides
  EXPECT_EQ(lit(EwOp::div_floor, {f32, O::scalar(3.0)}, 1), 3.0);        // floor: a true division (see the notes)
  // derivatives: pow, xlogy, xlog1py take the scalar unrounded (PyTorch's formulas use a double);
  // a scalar dividend stays rounded, a divisor stays a reciprocal
  auto blit = [](EwOp op, std::initializer_list<EwOperand> ops, int k) { return ew::kernel_literal(ElementwiseDescriptor::make(op, ops), k, true); };
  EXPECT_EQ(blit(EwOp::pow, {bf, O::scalar(2.001)}, 1), 2.001);
  EXPECT_EQ(blit(EwOp::pow, {O::scalar(1.001), bf}, 0), 1.001);  // d/dx 1.001 ** x = log(1.001) * result, not 0
  EXPECT_EQ(blit(EwOp::xlogy, {bf, O::scalar(0.3)}, 1), 0.3);
  EXPECT_EQ(blit(EwOp::div, {O::scalar(0.1), bf}, 0), 0.10009765625);
  EXPECT_EQ(blit(EwOp::div, {bf, O::scalar(0.1)}, 1), 1.0 / 0.1);
  EXPECT_EQ(ew::round_to_storage(DType::f16, 65504.5), 65504.0);
  EXPECT_EQ(ew::round_to_storage(DType::bf16, 1.0 / 3.0), 0.333984375);
  EXPECT_EQ(ew::round_to_storage(DType::f32, 0.1), 0.1);  // only the 16-bit formats

  // the division mode flag and the rounded parameters, from kernel_params
  auto params = [](EwOp op, std::initializer_list<EwOperand> ops, std::initializer_list<Scalar> ps, DType result, bool int_math) {
    auto p = ew::kernel_params("test", ElementwiseDescriptor::make(op, ops, ps), result, int_math);
    EXPECT_TRUE(p.ok());
    return p.ok() ? *p : std::array<double, 4>{};
  };
  EXPECT_EQ(params(EwOp::div, {f32, O::scalar(3.0)}, {}, DType::f32, false)[0], 1.0);
  EXPECT_EQ(params(EwOp::div, {f32, f32}, {}, DType::f32, false)[0], 0.0);
  EXPECT_EQ(params(EwOp::div, {O::scalar(3.0), f32}, {}, DType::f32, false)[0], 0.0);
  EXPECT_EQ(params(EwOp::div_trunc, {i32, O::scalar(int64_t{3})}, {}, DType::i32, true)[0], 0.0);
  {
    // floor division: PyTorch keeps the floor in the data's 16-bit format before its +1 snap, and
    // divides by a Python scalar through its f32 reciprocal. torch.div(bf16(-129), 0.3,
    // rounding_mode='floor') = -432 (the exact floor is -430; emulated from PyTorch's kernel).
    const auto pf = params(EwOp::div_floor, {bf, O::scalar(0.3)}, {}, DType::bf16, false);
    EXPECT_EQ(pf[0], 1.0);
    EXPECT_EQ(pf[3], 1.0);
    const float x[3] = {-129.0f, static_cast<float>(lit(EwOp::div_floor, {bf, O::scalar(0.3)}, 1)), 0.f};
    const float p4[4] = {static_cast<float>(pf[0]), static_cast<float>(pf[1]), static_cast<float>(pf[2]), static_cast<float>(pf[3])};
    EXPECT_EQ(ref::store_as(DType::bf16, ref::ew_forward_f32(EwOp::div_floor, x, p4)), -432.0);
    const auto pt = params(EwOp::div_floor, {f32, f32}, {}, DType::f32, false);  // f32 tensors: the exact form
    EXPECT_EQ(pt[0], 0.0);
    EXPECT_EQ(pt[3], 0.0);
    const float pt4[4] = {0, 0, 0, 0};
    const float y[3] = {-129.0f, 0.3f, 0.f};
    EXPECT_EQ(ref::ew_forward_f32(EwOp::div_floor, y, pt4), -430.0f);
    EXPECT_EQ(params(EwOp::div_floor, {i32, O::scalar(int64_t{3})}, {}, DType::i32, true)[0], 0.0);
  }
  const auto th = params(EwOp::threshold, {bf}, {0.1, 0.3}, DType::bf16, false);
  EXPECT_EQ(th[0], 0.10009765625);
  EXPECT_EQ(th[1], 0.30078125);
  EXPECT_EQ(params(EwOp::softshrink, {hf}, {0.1}, DType::f16, false)[0], 0.0999755859375);
  EXPECT_EQ(params(EwOp::hardshrink, {f32}, {0.1}, DType::f32, false)[0], 0.1);
  EXPECT_EQ(params(EwOp::leaky_relu, {bf}, {0.1}, DType::bf16, false)[0], 0.1);  // opmath

  // tensor ** Python scalar: PyTorch's special cases (0, 1, 0.5, -0.5, -1 as given; 2, 3, -2
  // after rounding the exponent to the data's format)
  EXPECT_EQ(params(EwOp::pow, {bf, O::scalar(2.001)}, {}, DType::bf16, false)[0], 6.0);  // rounds to 2: a * a
  EXPECT_EQ(params(EwOp::pow, {f32, O::scalar(2.001)}, {}, DType::f32, false)[0], 0.0);
  EXPECT_EQ(params(EwOp::pow, {f32, O::scalar(2.00000001)}, {}, DType::f32, false)[0], 6.0);  // exp.to<float>() == 2
  EXPECT_EQ(params(EwOp::pow, {i32, O::scalar(3.00000001)}, {}, DType::f32, false)[0], 7.0);   // int data, f32 math
  EXPECT_EQ(params(EwOp::pow, {O::tensor(DType::f64, {4}), O::scalar(2.00000001)}, {}, DType::f64, false)[0], 0.0);
  // float_power(x, s) is pow(x.double(), s): the same special paths, in f64
  const auto pfp = params(EwOp::float_power, {f32, O::scalar(0.5)}, {}, DType::f64, false);
  EXPECT_EQ(pfp[0], 3.0);
  EXPECT_EQ(pfp[1], 0.0);
  EXPECT_EQ(params(EwOp::float_power, {bf, O::scalar(2.001)}, {}, DType::f64, false)[0], 0.0);  // not rounded: f64
  EXPECT_EQ(params(EwOp::pow, {bf, O::scalar(0.5)}, {}, DType::bf16, false)[0], 3.0);
  EXPECT_EQ(params(EwOp::pow, {f32, O::scalar(-0.5)}, {}, DType::f32, false)[0], 4.0);
  EXPECT_EQ(params(EwOp::pow, {bf, O::scalar(int64_t{-1})}, {}, DType::bf16, false)[0], 5.0);
  EXPECT_EQ(params(EwOp::pow, {f32, O::scalar(0.0)}, {}, DType::f32, false)[0], 2.0);
  EXPECT_EQ(params(EwOp::pow, {f32, O::scalar(1.0)}, {}, DType::f32, false)[0], 1.0);
  const auto p3 = params(EwOp::pow, {hf, O::scalar(3.0)}, {}, DType::f16, false);
  EXPECT_EQ(p3[0], 7.0);
  EXPECT_EQ(p3[1], 2.0);  // the square is rounded to f16
  EXPECT_EQ(params(EwOp::pow, {f32, O::scalar(-2.0)}, {}, DType::f32, false)[0], 8.0);
  EXPECT_EQ(params(EwOp::pow, {bf, bf}, {}, DType::bf16, false)[0], 0.0);
  EXPECT_EQ(params(EwOp::pow, {O::scalar(2.0), bf}, {}, DType::bf16, false)[0], 0.0);  // scalar base: pow
  EXPECT_EQ(params(EwOp::pow, {i32, O::scalar(int64_t{2})}, {}, DType::i32, true)[0], 0.0);
  {
    // x ** 0.5 is sqrt: sqrt(-inf) = NaN and sqrt(-0) = -0, where pow gives +inf and +0
    const auto ph = params(EwOp::pow, {f32, O::scalar(0.5)}, {}, DType::f32, false);
    const double xi[3] = {-kInf, 0.5, 0}, xz[3] = {-0.0, 0.5, 0};
    EXPECT_TRUE(std::isnan(ref::ew_forward(EwOp::pow, xi, ph.data())));
    EXPECT_TRUE(std::signbit(ref::ew_forward(EwOp::pow, xz, ph.data())));
    // bf16 x ** 3 rounds the square to bf16 first: find a bf16 x where that changes the result
    int changed = 0;
    const auto pb = params(EwOp::pow, {bf, O::scalar(3.0)}, {}, DType::bf16, false);
    for (uint32_t bits = 0x3F80; bits < 0x4000; ++bits) {
      const double x = bf16_bits_to_float(static_cast<uint16_t>(bits));
      const double xs[3] = {x, 3.0, 0};
      const double twice = ref::store_as(DType::bf16, ref::ew_forward(EwOp::pow, xs, pb.data()));
      const double sq = ew::round_to_storage(DType::bf16, x * x);
      EXPECT_EQ(twice, ew::round_to_storage(DType::bf16, sq * x)) << x;
      changed += twice != ew::round_to_storage(DType::bf16, x * x * x);
    }
    EXPECT_GT(changed, 0);  // the double rounding is visible on [1, 2)
  }

  // the reference with those readings: bf16(0.1) == 0.1 is True, as in PyTorch; threshold(x,
  // 0.1, v) replaces x = bf16(0.1); x / 3 is x * (1 / 3)
  const double x_eq[3] = {0.10009765625, lit(EwOp::eq, {bf, O::scalar(0.1)}, 1), 0};
  EXPECT_EQ(ref::ew_forward(EwOp::eq, x_eq, kNoParams), 1.0);
  const double x_th[3] = {0.10009765625, 0, 0};
  EXPECT_EQ(ref::ew_forward(EwOp::threshold, x_th, th.data()), 0.30078125);
  const auto pd = params(EwOp::div, {f32, O::scalar(3.0)}, {}, DType::f32, false);
  const double x_div[3] = {6.0, lit(EwOp::div, {f32, O::scalar(3.0)}, 1), 0};
  EXPECT_EQ(ref::ew_forward(EwOp::div, x_div, pd.data()), 6.0 * (1.0 / 3.0));
  double g[3];
  ref::ew_backward(EwOp::div, x_div, 1.0, pd.data(), g);
  EXPECT_EQ(g[0], 1.0 / 3.0);  // d(x * r)/dx = r
}

// The f32 kernel math (ew_forward_f32, as the GPU computes bf16 / f16 / f32 data) on 1-element
// operands of dtype dt (slot scalar_slot a Python scalar), stored as the result dtype: values where
// our output differed from PyTorch 2.11's on the H200 (ew-parity dump, 2026-11-23), now PyTorch's.
TEST(EwReference, ArithmeticOrderAsPyTorchKernels) {
  auto run = [](EwOp op, DType dt, std::vector<double> v, std::initializer_list<Scalar> params = {}, int scalar_slot = -1) {
    std::vector<EwOperand> ops;
    for (size_t k = 0; k < v.size(); ++k)
      ops.push_back(static_cast<int>(k) == scalar_slot ? EwOperand::scalar(v[k]) : EwOperand::tensor(dt, {1}));
    ElementwiseDescriptor d = ElementwiseDescriptor::make(op, {}, params);
    d.num_operands = static_cast<int>(ops.size());
    for (size_t k = 0; k < ops.size(); ++k) d.operand[k] = ops[k];
    const DType result = ew_common_dtype(d).value();
    auto pk = ew::kernel_params("test", d, result, false);
    EXPECT_TRUE(pk.ok()) << ew_op_name(op);
    float x[3] = {}, p[4] = {};
    for (int k = 0; k < 4; ++k) p[k] = static_cast<float>((*pk)[k]);
    for (size_t k = 0; k < v.size(); ++k)
      x[k] = static_cast<float>(static_cast<int>(k) == scalar_slot ? ew::kernel_literal(d, static_cast<int>(k)) : ref::store_as(dt, v[k]));
    return ref::store_as(result, ref::ew_forward_f32(op, x, p));
  };
  const DType bf = DType::bf16, hf = DType::f16, f32 = DType::f32;
  // addcmul / addcdiv: a + value * (b * c), a + value * (b / c), contracted (we had (value b) c)
  EXPECT_EQ(run(EwOp::addcmul, f32, {-1.401298464324817e-45, 88.69999694824219, 100.0}, {0.7}), 6209.0);
  EXPECT_EQ(run(EwOp::addcdiv, f32, {0.10000000149011612, -88.69999694824219, -100.0}, {0.7}), 0.7208999395370483);
  EXPECT_EQ(run(EwOp::addcdiv, f32, {88.69999694824219, 100.0, -1.0}, {0.7}), 18.69999885559082);
  EXPECT_EQ(run(EwOp::addcmul, bf, {1.88079096131566e-36, -657129996288.0, 5.633594319404172e+26}, {0.7}), -kInf);  // b c overflows first
  // trunc division of 16-bit data truncates the 16-bit quotient
  EXPECT_EQ(run(EwOp::div_trunc, bf, {0.1, 0.000621795654296875}, {}, 0), 161.0);  // bf16(0.1) / x = 160.98 -> 161
  EXPECT_EQ(run(EwOp::div_trunc, hf, {0.000598907470703125, 3.153085708618164e-05}), 19.0);
  // floor division of 16-bit data: f32 steps, the floor kept in 16 bits
  EXPECT_EQ(run(EwOp::div_floor, bf, {6.91190678283505e-36, 3.783622441709238e-38}), 182.0);
  EXPECT_EQ(run(EwOp::div_floor, bf, {1.3060212435375943e-33, 5.078135595552282e-36}), 256.0);
  EXPECT_EQ(run(EwOp::div_floor, bf, {0.1, 0.00014019012451171875}, {}, 0), 712.0);
  EXPECT_EQ(run(EwOp::div_floor, hf, {0.3, 4.875659942626953e-05}, {}, 0), 6152.0);
  // hardsigmoid / hardswish multiply by 1/6 formed in f32
  EXPECT_EQ(run(EwOp::hardsigmoid, f32, {0.5}), 0.5833333730697632);
  EXPECT_EQ(run(EwOp::hardswish, f32, {0.5}), 0.2916666865348816);
  EXPECT_EQ(fwd(EwOp::hardsigmoid, {0.0}), 0.5000000149011612);  // f64 data as well (PyTorch 2.11)
  // composites: softsign's |x| + 1 and tanhshrink's tanh(x) rounded to the 16-bit format first
  EXPECT_EQ(run(EwOp::softsign, bf, {0.002777099609375}), 0.002777099609375);
  EXPECT_EQ(run(EwOp::softsign, hf, {0.00034546852111816406}), 0.00034546852111816406);
  EXPECT_EQ(run(EwOp::tanhshrink, bf, {0.0003528594970703125}), 0.0);
  // ldexp with a float exponent: 2^b rounded to the exponent's format (f16: 2^32.7 is inf)
  EXPECT_EQ(run(EwOp::ldexp, hf, {1.0728836059570312e-06, 32.71875}), kInf);
  EXPECT_EQ(run(EwOp::ldexp, bf, {7.438675188797288e-39, 1.25}), 1.7632415262334313e-38);
}

TEST(EwReference, ZetaOfLargeNegativeQEndsAndMatchesTheDirectSum) {
  // Repro (ew-parity dump, f64 random bit patterns): zeta(x, q) with q a large negative
  // non-integer summed -q terms one by one, 2^52 steps at most: the kernel never ended. Past
  // 1024 terms the negative ones are summed in closed form; checked against the direct sum.
  for (double x : {2.0, 3.0, 6.0})
    for (double q : {-1500.5, -2000.25, -4096.75}) {
      const double closed = ew::m::zeta(x, q), direct = ew::m::zeta_series(x, q);
      // odd x: the negative and positive terms cancel (zeta(3, -1500.5) ~ 2e-7 from terms near
      // 2^3), so both sums are exact to eps times the largest term, not to eps times the result
      EXPECT_NEAR(closed, direct, 1e-13 * (std::fabs(direct) + std::pow(2.0, x))) << "zeta(" << x << ", " << q << ")";
    }
  EXPECT_EQ(ew::m::zeta(2.0, -100.5), ew::m::zeta_series(2.0, -100.5));  // up to 1024 terms: the direct sum
  EXPECT_TRUE(std::isfinite(ew::m::zeta(2.0, -1e15 - 0.5)));              // returns (it used to run ~1e15 steps)
  EXPECT_TRUE(std::isfinite(ew::m::zeta(4.0f, -8e6f - 0.5f)));
}

TEST(EwReference, IscloseIsPyTorchsComposite) {
  // PyTorch: a == b, or a finite |a - b| <= atol + |rtol * b|, every step its own kernel, so
  // rounded to the data's dtype; integer data tested in f32 with the f32 rtol / atol. Before,
  // integer isclose truncated rtol / atol to 0 (an equality test): isclose(100000, 100001) is
  // True in PyTorch (allowed 1.00001).
  using O = EwOperand;
  auto pk = [](std::initializer_list<EwOperand> ops, bool int_math, std::initializer_list<Scalar> ps = {}) {
    auto p = ew::kernel_params("test", ElementwiseDescriptor::make(EwOp::isclose, ops, ps), DType::boolean, int_math);
    EXPECT_TRUE(p.ok());
    return p.ok() ? *p : std::array<double, 4>{};
  };
  const O i32 = O::tensor(DType::i32, {4});
  const ElementwiseDescriptor di = ElementwiseDescriptor::make(EwOp::isclose, {i32, i32});
  const auto pi = pk({i32, i32}, true);
  int64_t pint[4];
  for (int k = 0; k < 4; ++k) pint[k] = ew::kernel_int_param(di, pi, k);
  const int64_t near[3] = {100000, 100001, 0}, far[3] = {1000, 1001, 0}, big[3] = {16777217, 16777216, 0};
  EXPECT_EQ(ref::ew_forward_int(EwOp::isclose, near, pint), 1);
  EXPECT_EQ(ref::ew_forward_int(EwOp::isclose, far, pint), 0);
  EXPECT_EQ(ref::ew_forward_int(EwOp::isclose, big, pint), 1);  // f32(16777217) == f32(16777216)
  // an integer atol Scalar still reaches the kernel as f32 bits: atol = 1 makes 1000 ~ 1001
  const ElementwiseDescriptor da = ElementwiseDescriptor::make(EwOp::isclose, {i32, i32}, {0.0, Scalar(int64_t{1})});
  const auto pa = pk({i32, i32}, true, {0.0, Scalar(int64_t{1})});
  for (int k = 0; k < 4; ++k) pint[k] = ew::kernel_int_param(da, pa, k);
  EXPECT_EQ(ref::ew_forward_int(EwOp::isclose, far, pint), 1);
  // zero tolerances: equality only, even where f32 cannot tell the values apart
  const ElementwiseDescriptor dz = ElementwiseDescriptor::make(EwOp::isclose, {i32, i32}, {0.0, 0.0});
  const auto pz = pk({i32, i32}, true, {0.0, 0.0});
  for (int k = 0; k < 4; ++k) pint[k] = ew::kernel_int_param(dz, pz, k);
  EXPECT_EQ(ref::ew_forward_int(EwOp::isclose, big, pint), 0);
  // float data: p3 names the format the intermediates are rounded to
  EXPECT_EQ(pk({O::tensor(DType::bf16, {4}), O::tensor(DType::bf16, {4})}, false)[3], 1.0);
  EXPECT_EQ(pk({O::tensor(DType::f16, {4}), O::tensor(DType::f16, {4})}, false)[3], 2.0);
  EXPECT_EQ(pk({O::tensor(DType::f32, {4}), O::tensor(DType::f32, {4})}, false)[3], 0.0);
  // bf16: atol + |rtol * b| is rounded to bf16 (PyTorch's `atol + tensor` is a bf16 add).
  // a = 1 + 2^-7, b = 1, rtol = 0, atol = 2^-7 - 2^-20: on f32 data 2^-7 exceeds atol (not
  // close); on bf16 data the allowed error rounds up to 2^-7 (close).
  const auto pb = pk({O::tensor(DType::bf16, {4}), O::tensor(DType::bf16, {4})}, false, {0.0, 0.0078125 - 0.00000095367431640625});
  const double xb[3] = {1.0078125, 1.0, 0};
  EXPECT_EQ(ref::ew_forward(EwOp::isclose, xb, pb.data()), 1.0);
  const auto pf = pk({O::tensor(DType::f32, {4}), O::tensor(DType::f32, {4})}, false, {0.0, 0.0078125 - 0.00000095367431640625});
  EXPECT_EQ(ref::ew_forward(EwOp::isclose, xb, pf.data()), 0.0);
  // PyTorch's checks
  EXPECT_FALSE(ew::kernel_params("test", ElementwiseDescriptor::make(EwOp::isclose, {i32, i32}, {-1e-5}), DType::boolean, true).ok());
}

TEST(EwReference, NextafterStepsOneUlpOfTheResultFormat) {
  // PyTorch steps a bf16 / f16 by one ulp of that format (c10's nextafter on the 16-bit
  // pattern), not of f32: torch.nextafter(bf16 1, bf16 2) = 1.0078125. Evaluated as the kernel
  // does (f32, kernel_params of the result dtype).
  auto next = [](DType t, double a, double b) {
    auto p = ew::kernel_params("test", ElementwiseDescriptor::make(EwOp::nextafter, {}), t, false);
    EXPECT_TRUE(p.ok());
    const float x[3] = {static_cast<float>(a), static_cast<float>(b), 0.f};
    const float pf[4] = {static_cast<float>((*p)[0]), static_cast<float>((*p)[1]), static_cast<float>((*p)[2]), static_cast<float>((*p)[3])};
    return static_cast<double>(ref::ew_forward_f32(EwOp::nextafter, x, pf));
  };
  struct Case { DType t; double a, b, want; };
  const Case cases[] = {
      {DType::bf16, 1, 2, 1.0078125},
      {DType::bf16, 1, 0, 0.99609375},
      {DType::bf16, -1, -2, -1.0078125},
      {DType::bf16, 0, 1, 9.183549615799121e-41},    // smallest subnormal, 2^-133
      {DType::bf16, -0.0, 0.0, 0.0},                 // zeros: the sign of `to`
      {DType::bf16, 3.3895313892515355e38, kInf, kInf},
      {DType::bf16, 2, 2, 2},
      {DType::bf16, 0.10009765625, 1, 0.1005859375},  // a literal 0.1 reaches the kernel rounded (below)
      {DType::f16, 1, 2, 1.0009765625},
      {DType::f16, 1, 0, 0.99951171875},
      {DType::f16, 0, -1, -5.960464477539063e-08},   // -2^-24
      {DType::f16, 6.103515625e-05, 0, 6.097555160522461e-05},  // smallest normal -> largest subnormal
      {DType::f16, 65504, kInf, kInf},
      {DType::f16, -65504, 0, -65472},
      {DType::f16, 0.1, 1, 0.10003662109375},
      {DType::f32, 1, 2, 1.0000001192092896},
      {DType::bf16, kNaN, 1, kNaN},
      {DType::f16, 1, kNaN, kNaN},
  };
  // a Scalar operand is rounded to the 16-bit format by kernel_literal (the kernel reads the bf16
  // pattern from the f32 bits without rounding)
  EXPECT_EQ(ew::kernel_literal(ElementwiseDescriptor::make(EwOp::nextafter, {EwOperand::tensor(DType::bf16, {2}), EwOperand::scalar(0.1)}), 1),
            0.10009765625);
  for (const Case& c : cases)
    expect_same(next(c.t, c.a, c.b), c.want, std::string("nextafter ") + std::string(dtype_name(c.t)) + " " + std::to_string(c.a) + " -> " + std::to_string(c.b));
}

// The flat kernel (every operand a tensor) evaluates Fwd::apply_dense: pow's and div_floor's
// f_dense drop the branches for a Python-scalar operand (pow's special exponents, div_floor's
// reciprocal). With the parameters of a tensor-tensor call they must give f's result bit for bit.
template <class Op, class C>
void expect_dense_form_is_f(EwOp op, DType t) {
  auto p = ew::kernel_params("test", ElementwiseDescriptor::make(op, {EwOperand::tensor(t, {2}), EwOperand::tensor(t, {2})}), t, false);
  ASSERT_TRUE(p.ok());
  ew::P<C> q;
  for (int k = 0; k < 4; ++k) q.v[k] = static_cast<C>((*p)[k]);
  const std::vector<double> v = std::is_integral_v<C> ? std::vector<double>{0, 1, -1, 2, 3, -2, 7, -7, 40}
                                                       : std::vector<double>{0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, 3.0, -2.0, 0.3,
                                                                             -2.5, 7.0, 1e-30, 1e30, kInf, -kInf, kNaN};
  size_t n = 0;
  for (double a : v)
    for (double b : v) {
      const C in[2] = {static_cast<C>(a), static_cast<C>(b)};
      C general, dense;
      ew::Fwd<Op, 2>::apply(in, &general, q);
      ew::Fwd<Op, 2>::apply_dense(in, &dense, q);
      const bool same = std::memcmp(&general, &dense, sizeof(C)) == 0 || (general != general && dense != dense);
      EXPECT_TRUE(same) << ew_op_name(op) << " " << dtype_name(t) << " (" << a << ", " << b << "): " << general << " vs " << dense;
      ++n;
    }
  EXPECT_EQ(n, v.size() * v.size());
}

TEST(EwReference, DenseFormsAreTheGeneralFormOnTensorOperands) {
  for (DType t : {DType::f32, DType::bf16, DType::f16}) {
    expect_dense_form_is_f<ew::op_pow, float>(EwOp::pow, t);
    expect_dense_form_is_f<ew::op_div_floor, float>(EwOp::div_floor, t);
  }
  expect_dense_form_is_f<ew::op_pow, double>(EwOp::pow, DType::f64);
  expect_dense_form_is_f<ew::op_div_floor, double>(EwOp::div_floor, DType::f64);
  expect_dense_form_is_f<ew::op_pow, int64_t>(EwOp::pow, DType::i64);
  expect_dense_form_is_f<ew::op_div_floor, int64_t>(EwOp::div_floor, DType::i64);
}

TEST(EwReference, IntegerSemanticsAsPyTorch) {
  auto i8 = [](int64_t v) { return ref::store_int(DType::i8, v); };
  // int8 rows of the probe: floor_divide, remainder, fmod, div_trunc, gcd, lcm
  const int64_t a[] = {7, -7, 7, -7, 0, 5, -128, 3, -3}, b[] = {2, 2, -2, -2, 3, 0, -1, 0, 0};
  const int64_t fd[] = {3, -4, -4, 3, 0, -1, -128, -1, -2}, rm[] = {1, 1, -1, -1, 0, -1, 0, -1, -1};
  const int64_t fm[] = {1, -1, 1, -1, 0, -1, 0, -1, -1}, dt[] = {3, -3, -3, 3, 0, -1, -128, -1, -1};
  const int64_t gc[] = {1, 1, 1, 1, 3, 5, 1, 3, 3}, lc[] = {14, 14, 14, 14, 0, 0, -128, 0, 0};
  for (int i = 0; i < 9; ++i) {
    EXPECT_EQ(i8(ifwd(EwOp::div_floor, a[i], b[i])), fd[i]) << a[i] << " // " << b[i];
    EXPECT_EQ(i8(ifwd(EwOp::remainder, a[i], b[i])), rm[i]) << a[i] << " % " << b[i];
    EXPECT_EQ(i8(ifwd(EwOp::fmod, a[i], b[i])), fm[i]) << "fmod " << a[i] << ", " << b[i];
    EXPECT_EQ(i8(ifwd(EwOp::div_trunc, a[i], b[i])), dt[i]) << "trunc div " << a[i] << ", " << b[i];
    EXPECT_EQ(i8(ifwd(EwOp::gcd, a[i], b[i])), gc[i]) << "gcd " << a[i] << ", " << b[i];
    EXPECT_EQ(i8(ifwd(EwOp::lcm, a[i], b[i])), lc[i]) << "lcm " << a[i] << ", " << b[i];
  }
  // gcd (binary, 32-bit when the magnitudes fit) and lcm against std::gcd / std::lcm on random
  // pairs of every magnitude, zeros and signs included
  std::mt19937_64 rng(11);
  for (int i = 0; i < 20000; ++i) {
    const int bits_a = static_cast<int>(rng() % 63), bits_b = static_cast<int>(rng() % 63);
    int64_t x = static_cast<int64_t>(rng() >> (64 - std::max(bits_a, 1))), y = static_cast<int64_t>(rng() >> (64 - std::max(bits_b, 1)));
    if (i % 7 == 0) x = 0;
    if (rng() & 1) x = -x;
    if (rng() & 1) y = -y;
    ASSERT_EQ(ifwd(EwOp::gcd, x, y), std::gcd(x, y)) << "gcd " << x << ", " << y;
    if (std::abs(x) < (int64_t{1} << 31) && std::abs(y) < (int64_t{1} << 31))
      ASSERT_EQ(ifwd(EwOp::lcm, x, y), std::lcm(x, y)) << "lcm " << x << ", " << y;
  }
  // lcm: PyTorch's abs(a / g * b) in int arithmetic (int64 for i64), stored in the data's width:
  // lcm(-12, 917260141) on i32 is 1877780196 in PyTorch (we gave -1877780196: ew-parity dump)
  EXPECT_EQ(ref::store_int(DType::i32, ifwd(EwOp::lcm, -12, 917260141, DType::i32)), 1877780196);
  EXPECT_EQ(ref::store_int(DType::i32, ifwd(EwOp::lcm, 10, 804861703, DType::i32)), 541317562);
  EXPECT_EQ(ref::store_int(DType::i16, ifwd(EwOp::lcm, 300, 7, DType::i16)), 2100);
  EXPECT_EQ(ref::store_int(DType::i16, ifwd(EwOp::lcm, 300, 301, DType::i16)), 24764);   // 90300 wraps to 24764
  EXPECT_EQ(ref::store_int(DType::i16, ifwd(EwOp::lcm, -300, 109, DType::i16)), 32700);  // -32700 in i16, then abs
  EXPECT_EQ(ref::store_int(DType::i16, ifwd(EwOp::lcm, 200, 199, DType::i16)), -25736);  // abs(39800), stored as i16
  EXPECT_EQ(ref::store_int(DType::u8, ifwd(EwOp::lcm, 20, 30, DType::u8)), 60);
  EXPECT_EQ(ref::store_int(DType::u8, ifwd(EwOp::lcm, 20, 33, DType::u8)), 660 % 256);
  // shifts of -3 (int8 and int32 rows of the probe)
  const int64_t amt[] = {0, 1, 7, 8, 9, 31, 32, 63, 64, 70};
  const int64_t shl8[] = {-3, -6, -128, 0, 0, 0, 0, 0, 0, 0}, shl32[] = {-3, -6, -384, -768, -1536, INT32_MIN, 0, 0, 0, 0};
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(i8(ifwd(EwOp::bitwise_left_shift, -3, amt[i])), shl8[i]) << "-3 << " << amt[i];
    EXPECT_EQ(ref::store_int(DType::i32, ifwd(EwOp::bitwise_left_shift, -3, amt[i])), shl32[i]) << "-3 << " << amt[i] << " (i32)";
    EXPECT_EQ(i8(ifwd(EwOp::bitwise_right_shift, -3, amt[i])), i == 0 ? -3 : (i == 1 ? -2 : -1)) << "-3 >> " << amt[i];
  }
  // uint8: pow wraps, neg wraps, 3 // 0 = 255
  EXPECT_EQ(ref::store_int(DType::u8, ifwd(EwOp::pow, 5, 255)), 205);
  EXPECT_EQ(ref::store_int(DType::u8, ifwd(EwOp::div_floor, 3, 0)), 255);
  EXPECT_EQ(i8(ifwd(EwOp::pow, -128, -1)), 0);
  // casts f32 -> ints (probe): 1e10, -1e10, 300.7, -300.7, nan
  EXPECT_EQ(ref::store_as(DType::i8, 1e10), -1);
  EXPECT_EQ(ref::store_as(DType::u8, 1e10), 0);
  EXPECT_EQ(ref::store_as(DType::u8, -300.7), 212);
  EXPECT_EQ(ref::store_as(DType::i32, 1e10), 2147483647);
  EXPECT_EQ(ref::store_as(DType::i64, kNaN), static_cast<double>(INT64_MIN));
  EXPECT_EQ(ref::store_as(DType::i32, kNaN), 0);
  // fp8 (probe): 460 -> 448, 500 -> nan (e4m3); 70000 -> inf (e5m2); saturating: 500 -> 448
  EXPECT_EQ(ref::store_as(DType::f8e4m3, 460.0), 448.0);
  EXPECT_EQ(ref::store_as(DType::f8e4m3, 464.0), 448.0);  // midpoint: to even (448)
  EXPECT_TRUE(std::isnan(ref::store_as(DType::f8e4m3, 465.0)));
  EXPECT_EQ(ref::store_as(DType::f8e5m2, 61439.0), 57344.0);
  EXPECT_EQ(ref::store_as(DType::f8e5m2, 61440.0), kInf);  // midpoint of 57344 and 2^16: to even (overflow)
  EXPECT_TRUE(std::isnan(ref::store_as(DType::f8e4m3, 500.0)));
  EXPECT_EQ(ref::store_as(DType::f8e4m3, 500.0, true), 448.0);
  EXPECT_EQ(ref::store_as(DType::f8e5m2, 60000.0), 57344.0);
  EXPECT_EQ(ref::store_as(DType::f8e5m2, 70000.0), kInf);
}

// ------------------------------------------------------------------ derivatives by finite differences
// Inputs inside each op's smooth domain.
double sample(EwOp op, int k, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-2.0, 2.0), pos(0.2, 3.0), unit(-0.9, 0.9), prob(0.05, 0.95);
  switch (op) {
    case EwOp::log: case EwOp::log2: case EwOp::log10: case EwOp::sqrt: case EwOp::rsqrt: case EwOp::lgamma:
    case EwOp::entr: case EwOp::cbrt: case EwOp::reciprocal: return pos(rng);
    case EwOp::log1p: return pos(rng) - 0.5;
    case EwOp::asin: case EwOp::acos: case EwOp::atanh: case EwOp::erfinv: return unit(rng);
    case EwOp::ndtri: return prob(rng);
    case EwOp::digamma: case EwOp::polygamma: case EwOp::igamma: case EwOp::igammac: return pos(rng);
    case EwOp::acosh: return pos(rng) + 1.1;
    case EwOp::logit: return prob(rng);
    case EwOp::pow: case EwOp::float_power: return k == 0 ? pos(rng) : u(rng);
    case EwOp::xlogy: case EwOp::xlog1py: case EwOp::div: case EwOp::remainder: case EwOp::fmod:
    case EwOp::addcdiv: return k >= 1 ? pos(rng) : u(rng);
    case EwOp::where: case EwOp::masked_fill: return (op == EwOp::where ? k == 0 : k == 1) ? (rng() & 1) : u(rng);
    case EwOp::lerp: return k == 2 ? prob(rng) : u(rng);
    default: return u(rng);
  }
}

TEST(EwReference, EveryDerivativeMatchesCentralDifferences) {
  std::mt19937_64 rng(1234);
  int checked = 0;
  for (int o = 0; o < kNumEwOps; ++o) {
    const EwOp op = static_cast<EwOp>(o);
    const unsigned gm = ew_op_grad_mask(op);
    if (gm == 0) continue;
    ElementwiseDescriptor d = ElementwiseDescriptor::make(op, {});
    if (op == EwOp::lerp_scalar) d.param[0] = 0.3;
    if (op == EwOp::threshold) d.param[0] = 0.25, d.param[1] = -1.5;
    if (op == EwOp::clamp) d.param[0] = -1.0, d.param[1] = 1.0;
    auto pk = ew::kernel_params("test", d, DType::f64, false);
    ASSERT_TRUE(pk.ok()) << ew_op_name(op);
    const double* p = pk->data();
    const int ar = ew_op_arity(op);
    for (int trial = 0; trial < 40; ++trial) {
      double x[3] = {};
      for (int k = 0; k < ar; ++k) x[k] = sample(op, k, rng);
      double dx[3];
      const double g = 0.75;
      ref::ew_backward(op, x, g, p, dx);
      for (int k = 0; k < ar; ++k) {
        if (!(gm >> k & 1u)) continue;
        const double h = 1e-6 * std::max(1.0, std::fabs(x[k]));
        double xp[3] = {x[0], x[1], x[2]}, xm[3] = {x[0], x[1], x[2]};
        xp[k] += h;
        xm[k] -= h;
        const double fp = ref::ew_forward(op, xp, p), fm = ref::ew_forward(op, xm, p), f0 = ref::ew_forward(op, x, p);
        // skip points next to a kink or jump (one-sided slopes disagree)
        const double right = (fp - f0) / h, left = (f0 - fm) / h;
        if (std::fabs(right - left) > 1e-3 * (1.0 + std::fabs(right))) continue;
        const double fd = g * (fp - fm) / (2 * h);
        EXPECT_NEAR(dx[k], fd, 1e-5 + 1e-3 * std::fabs(fd))
            << ew_op_name(op) << " d/dx" << k << " at (" << x[0] << ", " << x[1] << ", " << x[2] << ")";
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 3000);
}

TEST(EwReference, DerivativeRulesAtSpecialPoints) {
  // probe rows: relu'(0) = 0, relu'(nan) = g, hardtanh'(+-1) = 0, clamp'(nan) = 0,
  // maximum tie splits, fmax(nan, 1) -> all to b, atan2 at (0, 0) gives 0
  auto bw = [](EwOp op, std::initializer_list<double> x, int k, std::initializer_list<Scalar> params = {}) {
    ElementwiseDescriptor d = ElementwiseDescriptor::make(op, {}, params);
    auto p = ew::kernel_params("test", d, DType::f32, false);
    double xs[3] = {}, dx[3];
    int i = 0;
    for (double v : x) xs[i++] = v;
    ref::ew_backward(op, xs, 1.0, p->data(), dx);
    return dx[k];
  };
  EXPECT_EQ(bw(EwOp::relu, {0.0}, 0), 0.0);
  EXPECT_EQ(bw(EwOp::relu, {kNaN}, 0), 1.0);
  EXPECT_EQ(bw(EwOp::hardtanh, {1.0}, 0), 0.0);
  EXPECT_EQ(bw(EwOp::hardtanh, {kNaN}, 0), 1.0);
  EXPECT_EQ(bw(EwOp::clamp, {kNaN}, 0, {0.0, 1.0}), 0.0);
  EXPECT_EQ(bw(EwOp::clamp, {1.0}, 0, {0.0, 1.0}), 1.0);
  EXPECT_EQ(bw(EwOp::hardswish, {3.0}, 0), 1.0);
  EXPECT_EQ(bw(EwOp::hardswish, {-3.0}, 0), 0.0);
  EXPECT_EQ(bw(EwOp::leaky_relu, {0.0}, 0), 0.01);
  EXPECT_EQ(bw(EwOp::maximum, {2.0, 2.0}, 0), 0.5);
  EXPECT_EQ(bw(EwOp::maximum, {kNaN, 1.0}, 1), 1.0);
  EXPECT_EQ(bw(EwOp::fmax, {kNaN, 1.0}, 0), 0.0);
  EXPECT_EQ(bw(EwOp::fmax, {kNaN, 1.0}, 1), 1.0);
  EXPECT_EQ(bw(EwOp::atan2, {0.0, 0.0}, 0), 0.0);
  EXPECT_EQ(bw(EwOp::nan_to_num, {kInf}, 0), 0.0);
  EXPECT_EQ(bw(EwOp::pow, {kNaN, 1.0}, 0), 1.0);
  EXPECT_TRUE(std::isnan(bw(EwOp::logit, {-0.5}, 0)));
  EXPECT_EQ(bw(EwOp::xlogy, {0.0, 0.0}, 0), 0.0);
}

// ------------------------------------------------------------------ validation
TEST(EwValidation, ClearErrors) {
  const auto f32 = [](std::initializer_list<int64_t> s) { return EwOperand::tensor(DType::f32, s); };
  expect_error(ElementwisePlan::select(ElementwiseDescriptor::make(EwOp::add, {f32({3}), f32({4})}), host_pref()).status(),
               StatusCode::kInvalidProblem, "do not broadcast");
  ElementwiseDescriptor bad = ElementwiseDescriptor::make(EwOp::add, {f32({3})});
  expect_error(ElementwisePlan::select(bad, host_pref()).status(), StatusCode::kInvalidProblem, "takes 2 operands");
  expect_error(ElementwisePlan::select(ElementwiseDescriptor::make(EwOp::sub, {EwOperand::tensor(DType::boolean, {2}), EwOperand::tensor(DType::boolean, {2})}), host_pref()).status(),
               StatusCode::kUnsupported, "not bool");
  expect_error(ElementwisePlan::select(ElementwiseDescriptor::make(EwOp::silu, {EwOperand::tensor(DType::i32, {2})}), host_pref()).status(),
               StatusCode::kUnsupported, "floating dtypes only");
  expect_error(ElementwisePlan::select(ElementwiseDescriptor::make(EwOp::where, {f32({2}), f32({2}), f32({2})}), host_pref()).status(),
               StatusCode::kInvalidProblem, "must be a bool tensor");
  ElementwiseDescriptor cast_bad = ElementwiseDescriptor::make(EwOp::exp, {f32({2})});
  cast_bad.out_dtype = DType::i32;
  expect_error(ElementwisePlan::select(cast_bad, host_pref()).status(), StatusCode::kInvalidProblem, "cannot be cast");
  expect_error(ElementwisePlan::select(ElementwiseDescriptor::make(EwOp::add, {EwOperand::scalar(1.0), EwOperand::scalar(2.0)}), host_pref()).status(),
               StatusCode::kInvalidProblem, "at least one tensor");
  expect_error(ElementwiseBackwardPlan::select(ElementwiseDescriptor::make(EwOp::eq, {f32({2}), f32({2})}), host_pref()).status(),
               StatusCode::kUnsupported, "not differentiable");
  // ldexp's integer exponent has no gradient (not in its grad mask): fine; mul's does
  EXPECT_TRUE(ElementwiseBackwardPlan::select(ElementwiseDescriptor::make(EwOp::ldexp, {f32({2}), EwOperand::tensor(DType::i32, {2})}), host_pref()).ok());
  expect_error(ElementwiseBackwardPlan::select(ElementwiseDescriptor::make(EwOp::mul, {f32({2}), EwOperand::tensor(DType::i32, {2})}), host_pref()).status(),
               StatusCode::kUnsupported, "only floating operands");
  expect_error(ElementwisePlan::select(ElementwiseDescriptor::make(EwOp::add, {EwOperand::tensor(DType::i32, {2}), EwOperand::tensor(DType::i32, {2})}, {2.5}), host_pref()).status(),
               StatusCode::kInvalidProblem, "alpha must be an integer");
  ElementwiseDescriptor to = ElementwiseDescriptor::make(EwOp::to, {f32({2})});
  expect_error(ElementwisePlan::select(to, host_pref()).status(), StatusCode::kInvalidProblem, "needs out_dtype");
}

TEST(EwValidation, ArgsOverlapAndShapes) {
  auto plan = ElementwisePlan::select(ElementwiseDescriptor::make(EwOp::add, {EwOperand::tensor(DType::f32, {4, 8}), EwOperand::tensor(DType::f32, {8})}), host_pref());
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  alignas(16) static float buf[256];
  ElementwiseArgs a;
  a.in[0] = TensorRef::make(buf, DType::f32, {4, 8});
  a.in[1] = TensorRef::make(buf + 64, DType::f32, {8});
  a.out = TensorMut::make(buf + 128, DType::f32, {4, 8});
  EXPECT_TRUE(plan->can_implement(a).ok());
  a.out = TensorMut::make(buf, DType::f32, {4, 8});  // exact in-place on in[0]
  EXPECT_TRUE(plan->can_implement(a).ok()) << plan->can_implement(a).to_string();
  a.out = TensorMut::make(buf + 1, DType::f32, {4, 8});  // shifted by one element
  expect_error(plan->can_implement(a), StatusCode::kInvalidProblem, "out overlaps in[0] without being exactly in place");
  a.out = TensorMut::make(buf + 128, DType::f32, {4, 7});
  expect_error(plan->can_implement(a), StatusCode::kInvalidProblem, "shape");
  a.out = TensorMut::make(buf + 128, DType::f32, {4, 8}, {0, 1});
  expect_error(plan->can_implement(a), StatusCode::kInvalidProblem, "overlapping");
}

// Which gradients are grad_out itself (PyTorch's autograd passes them through), and the
// aliasing that lets run() skip them: both of add's gradients may alias grad_out (and so each
// other); a gradient that must be written may not overlap another.
TEST(EwValidation, GradientsThatAreGradOut) {
  const auto f32 = [](std::initializer_list<int64_t> s) { return EwOperand::tensor(DType::f32, s); };
  const auto bf = [](std::initializer_list<int64_t> s) { return EwOperand::tensor(DType::bf16, s); };
  struct Case {
    ElementwiseDescriptor d;
    unsigned want;  // bit k: grad_is_grad_out(k)
  };
  ElementwiseDescriptor to_same = ElementwiseDescriptor::make(EwOp::to, {f32({4, 8})}), to_bf16 = to_same;
  to_same.out_dtype = DType::f32;
  to_bf16.out_dtype = DType::bf16;
  ElementwiseDescriptor add_one_grad = ElementwiseDescriptor::make(EwOp::add, {f32({4, 8}), f32({4, 8})});
  add_one_grad.needs_grad = 0x1;  // a property of the op, not of which gradients are asked for
  const Case cases[] = {
      {ElementwiseDescriptor::make(EwOp::add, {f32({4, 8}), f32({4, 8})}), 0x3},
      {ElementwiseDescriptor::make(EwOp::add, {bf({4, 8}), bf({4, 8})}), 0x3},
      {ElementwiseDescriptor::make(EwOp::add, {f32({4, 8}), f32({4, 8})}, {2.0}), 0x1},       // alpha 2: b's is 2 g
      {ElementwiseDescriptor::make(EwOp::add, {f32({4, 8}), f32({8})}), 0x1},                 // b broadcast: a sum
      {ElementwiseDescriptor::make(EwOp::add, {bf({4, 8}), f32({4, 8})}), 0x2},               // g is f32, a bf16
      {ElementwiseDescriptor::make(EwOp::add, {f32({4, 8}), EwOperand::scalar(3.0)}), 0x1},  // a scalar has none
      {ElementwiseDescriptor::make(EwOp::sub, {f32({4, 8}), f32({4, 8})}), 0x1},
      {ElementwiseDescriptor::make(EwOp::rsub, {f32({4, 8}), f32({4, 8})}), 0x2},
      {ElementwiseDescriptor::make(EwOp::frac, {bf({4, 8})}), 0x1},
      {to_same, 0x1},
      {to_bf16, 0x0},
      {ElementwiseDescriptor::make(EwOp::addcmul, {f32({4, 8}), f32({4, 8}), f32({4, 8})}), 0x1},
      {ElementwiseDescriptor::make(EwOp::addcdiv, {f32({4, 8}), f32({4, 8}), f32({4, 8})}, {0.5}), 0x1},
      {ElementwiseDescriptor::make(EwOp::fma, {f32({4, 8}), f32({4, 8}), f32({4, 8})}), 0x4},
      {ElementwiseDescriptor::make(EwOp::mul, {f32({4, 8}), f32({4, 8})}), 0x0},
      {ElementwiseDescriptor::make(EwOp::neg, {f32({4, 8})}), 0x0},
      {add_one_grad, 0x3},
  };
  for (const Case& c : cases) {
    auto plan = ElementwiseBackwardPlan::select(c.d, host_pref());
    ASSERT_TRUE(plan.ok()) << ew_op_name(c.d.op) << ": " << plan.status().to_string();
    for (int k = -1; k <= kEwMaxOperands; ++k)
      EXPECT_EQ(plan->grad_is_grad_out(k), k >= 0 && k < kEwMaxOperands && (c.want >> k & 1u)) << ew_op_name(c.d.op) << " operand " << k;
  }
  alignas(16) static float buf[4 * 32];
  auto add = ElementwiseBackwardPlan::select(ElementwiseDescriptor::make(EwOp::add, {f32({4, 8}), f32({4, 8})}), host_pref());
  ASSERT_TRUE(add.ok());
  ElementwiseBackwardArgs a;
  a.grad_out = TensorRef::make(buf, DType::f32, {4, 8});
  a.in[0] = TensorRef::make(buf + 32, DType::f32, {4, 8});
  a.in[1] = TensorRef::make(buf + 64, DType::f32, {4, 8});
  a.grad_in[0] = TensorMut::make(buf, DType::f32, {4, 8});
  a.grad_in[1] = TensorMut::make(buf, DType::f32, {4, 8});
  EXPECT_TRUE(add->can_implement(a).ok()) << add->can_implement(a).to_string();
  a.grad_in[1] = TensorMut::make(buf, DType::f32, {4, 8}, {1, 4});  // same bytes, other strides: written
  expect_error(add->can_implement(a), StatusCode::kInvalidProblem, "overlaps");
  auto mul = ElementwiseBackwardPlan::select(ElementwiseDescriptor::make(EwOp::mul, {f32({4, 8}), f32({4, 8})}), host_pref());
  ASSERT_TRUE(mul.ok());
  a.grad_in[1] = TensorMut::make(buf, DType::f32, {4, 8});  // mul's gradients are written: may not share
  expect_error(mul->can_implement(a), StatusCode::kInvalidProblem, "grad_in[0] overlaps grad_in[1]");

  // operands the derivative reads; the others may be left empty
  EXPECT_EQ(add->operands_read(), 0u);
  EXPECT_EQ(mul->operands_read(), 3u);
  const std::pair<ElementwiseDescriptor, unsigned> reads[] = {
      {ElementwiseDescriptor::make(EwOp::where, {EwOperand::tensor(DType::boolean, {4, 8}), f32({4, 8}), f32({4, 8})}), 1u},
      {ElementwiseDescriptor::make(EwOp::addcmul, {f32({4, 8}), f32({4, 8}), f32({4, 8})}), 6u},
      {ElementwiseDescriptor::make(EwOp::fma, {f32({4, 8}), f32({4, 8}), f32({4, 8})}), 3u},
      {ElementwiseDescriptor::make(EwOp::mul, {f32({4, 8}), EwOperand::scalar(2.0)}), 1u},  // a scalar is no view
      {ElementwiseDescriptor::make(EwOp::floor, {f32({4, 8})}), 0u},
      {ElementwiseDescriptor::make(EwOp::exp, {f32({4, 8})}), 1u},
  };
  for (const auto& [d, want] : reads) {
    auto plan = ElementwiseBackwardPlan::select(d, host_pref());
    ASSERT_TRUE(plan.ok()) << ew_op_name(d.op);
    EXPECT_EQ(plan->operands_read(), want) << ew_op_name(d.op);
  }
  a.grad_in[1] = TensorMut::make(buf + 96, DType::f32, {4, 8});
  a.in[0] = a.in[1] = TensorRef{};  // add reads neither
  EXPECT_TRUE(add->can_implement(a).ok()) << add->can_implement(a).to_string();
  a.grad_in[0] = TensorMut::make(buf + 32, DType::f32, {4, 8});
  expect_error(mul->can_implement(a), StatusCode::kInvalidProblem, "in[0] is missing");  // mul reads both
  a.in[0] = TensorRef::make(buf + 64, DType::f32, {4, 7});  // given, so checked, read or not
  expect_error(add->can_implement(a), StatusCode::kInvalidProblem, "shape");
}

TEST(EwValidation, FrexpPlan) {
  const auto x = EwOperand::tensor(DType::bf16, {4, 8});
  auto plan = FrexpPlan::select(ElementwiseDescriptor::make(EwOp::frexp, {x}), host_pref());
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_TRUE(plan->precision_guarantee().bit_exact);
  expect_error(FrexpPlan::select(ElementwiseDescriptor::make(EwOp::exp, {x}), host_pref()).status(), StatusCode::kInvalidProblem,
               "not frexp");
  expect_error(FrexpPlan::select(ElementwiseDescriptor::make(EwOp::frexp, {EwOperand::tensor(DType::i32, {3})}), host_pref()).status(),
               StatusCode::kUnsupported, "floating dtypes only");
  expect_error(FrexpPlan::select(ElementwiseDescriptor::make(EwOp::frexp, {EwOperand::scalar(2.0)}), host_pref()).status(),
               StatusCode::kInvalidProblem, "at least one tensor");
  alignas(16) static uint16_t xs[32], ms[64];
  alignas(16) static int32_t es[40];
  FrexpArgs a;
  a.in = TensorRef::make(xs, DType::bf16, {4, 8});
  a.mantissa = TensorMut::make(ms, DType::bf16, {4, 8});
  a.exponent = TensorMut::make(es, DType::i32, {4, 8});
  EXPECT_TRUE(plan->can_implement(a).ok()) << plan->can_implement(a).to_string();
  a.mantissa = TensorMut::make(xs, DType::bf16, {4, 8});  // in place
  EXPECT_TRUE(plan->can_implement(a).ok());
  a.exponent = TensorMut::make(es, DType::f32, {4, 8});
  expect_error(plan->can_implement(a), StatusCode::kInvalidProblem, "exponent");
  a.mantissa = TensorMut::make(ms, DType::bf16, {4, 8});
  a.exponent = TensorMut::make(ms, DType::i32, {4, 8});  // on the mantissa's bytes
  expect_error(plan->can_implement(a), StatusCode::kInvalidProblem, "mantissa overlaps exponent");
}

TEST(EwValidation, SplitHalvesAreDisjointViews) {
  alignas(16) static float buf[64];
  TensorMut x = TensorMut::make(buf, DType::f32, {4, 16}), a, b;
  ASSERT_TRUE(split_halves(x, -1, &a, &b).ok());
  EXPECT_EQ(a.shape[1], 8);
  EXPECT_EQ(static_cast<float*>(b.data) - buf, 8);
  EXPECT_FALSE(views_may_overlap(a, a.data, b, b.data));
  TensorMut c = a;
  c.data = buf + 4;  // shifted by half a row: overlaps a
  EXPECT_TRUE(views_may_overlap(a, a.data, c, c.data));
  EXPECT_FALSE(split_halves(TensorMut::make(buf, DType::f32, {4, 15}), 1, &a, &b).ok());
}

TEST(ReduceToShapeHost, Validation) {
  const int64_t in[] = {4, 5, 6}, ok_out[] = {5, 1}, bad_out[] = {4, 6};
  EXPECT_TRUE(ReduceToShapePlan::select(ReduceToShapeDescriptor::make(ReduceOp::kSum, DType::f32, in, DType::f32, ok_out), host_pref()).ok());
  expect_error(ReduceToShapePlan::select(ReduceToShapeDescriptor::make(ReduceOp::kSum, DType::f32, in, DType::f32, bad_out), host_pref()).status(),
               StatusCode::kInvalidProblem, "must be 1 or in_shape");
  expect_error(ReduceToShapePlan::select(ReduceToShapeDescriptor::make(ReduceOp::kSum, DType::f32, in, DType::i32, ok_out), host_pref()).status(),
               StatusCode::kUnsupported, "cannot reduce into");
}

// ------------------------------------------------------------------ fused broadcast backward
// Which geometries the fused broadcast backward (ew::plan_bcast) takes and how it splits them.
// A mul backward: inputs g, a, b; outputs d a (0) and d b (1, the reduced one).
namespace bcast_test {
int fake_launch(const ew::EwBcast&, cudaStream_t) { return 0; }
alignas(256) char storage[1 << 12];

// shape `out`, a full-size and contiguous, b (and its gradient) with strides `bs` aligned to it
ew::Iter mul_bwd(std::vector<int64_t> out, std::vector<int64_t> bs, DType dt = DType::bf16) {
  ew::Iter it;
  it.rank = static_cast<int>(out.size());
  it.ni = 3;
  it.no = 2;
  std::copy(out.begin(), out.end(), it.size);
  int64_t st = 1;
  for (int d = it.rank - 1; d >= 0; --d) {
    for (ew::IterOperand* o : {&it.in[0], &it.in[1], &it.out[0]}) o->stride[d] = st;
    it.in[2].stride[d] = it.out[1].stride[d] = bs[d];
    st *= out[d];
  }
  for (ew::IterOperand* o : {&it.in[0], &it.in[1], &it.in[2], &it.out[0], &it.out[1]}) {
    o->data = storage;
    o->dtype = dt;
  }
  it.out_on[0] = it.out_on[1] = true;
  return it;
}
ew::EwKernels kernels(DType dt = DType::bf16) {
  ew::EwKernels k;
  k.bcast = &fake_launch;
  k.rows_in = k.rows_out = dt;
  k.bcast_vec = static_cast<int>(16 / dtype_size(dt));
  return k;
}
}  // namespace bcast_test

TEST(ElementwiseBcast, TakesOneRowOrColumnBroadcastOperandOfATwoDimensionalProblem) {
  using namespace bcast_test;
  ew::EwBcast g;
  // bias-like [1, N]: row mode; blocks of 32 rows
  ASSERT_TRUE(ew::plan_bcast(mul_bwd({16384, 16384}, {0, 1}), 1, kernels(), &g));
  EXPECT_EQ(g.col_mode, 0);
  EXPECT_EQ(g.rows, 16384u);
  EXPECT_EQ(g.cols, 16384u);
  EXPECT_EQ(g.grid_x, 16u);  // 128 threads x 8 bf16 per block
  EXPECT_EQ(g.rows_per_block, 32u);
  EXPECT_EQ(g.grid_y, 512u);
  EXPECT_EQ(g.red, 1);
  EXPECT_EQ(ew::bcast_part_bytes(g), size_t{512} * 16384 * 4);
  ASSERT_TRUE(ew::plan_bcast(mul_bwd({16384, 16384}, {0, 1}, DType::f32), 1, kernels(DType::f32), &g));
  EXPECT_EQ(g.grid_x, 32u);
  EXPECT_EQ(g.rows_per_block, 32u);
  ASSERT_TRUE(ew::plan_bcast(mul_bwd({67, 1096}, {0, 1}), 1, kernels(), &g));
  EXPECT_EQ(g.rows_per_block, 32u);
  EXPECT_EQ(g.grid_y, 3u);
  EXPECT_EQ(g.grid_x, 2u);
  ASSERT_TRUE(ew::plan_bcast(mul_bwd({5, 1096}, {0, 1}), 1, kernels(), &g));
  EXPECT_EQ(g.rows_per_block, 5u);
  // more than 65535 x 32 rows: row mode takes more rows per block
  ASSERT_TRUE(ew::plan_bcast(mul_bwd({65535 * 32 + 1, 512}, {0, 1}), 1, kernels(), &g));
  EXPECT_EQ(g.rows_per_block, 33u);
  EXPECT_LE(g.grid_y, 65535u);
  // [B, S, H] with [H] coalesces to [B·S, H]
  ASSERT_TRUE(ew::plan_bcast(mul_bwd({3, 37, 1096}, {0, 0, 1}), 1, kernels(), &g));
  EXPECT_EQ(g.rows, 111u);
  EXPECT_EQ(g.col_mode, 0);
  // [M, 1] and [B, S, 1]: col mode, 32 rows per block, partials [rows, grid_x]
  ASSERT_TRUE(ew::plan_bcast(mul_bwd({3, 37, 1096}, {37, 1, 0}), 1, kernels(), &g));
  EXPECT_EQ(g.col_mode, 1);
  EXPECT_EQ(g.rows, 111u);
  EXPECT_EQ(g.rows_per_block, 32u);
  EXPECT_EQ(g.grid_y, 4u);
  EXPECT_EQ(ew::bcast_part_bytes(g), size_t{111} * 2 * 4);
  // one element: a single col-mode row over everything
  ASSERT_TRUE(ew::plan_bcast(mul_bwd({4096, 257}, {0, 0}), 1, kernels(), &g));
  EXPECT_EQ(g.col_mode, 1);
  EXPECT_EQ(g.rows, 1u);
  EXPECT_EQ(g.cols, 4096u * 257u);
  // refused: a 3-D pattern ([B, 1, H]), rows narrower than half a block (511 bf16 < 512), rows
  // not 16-byte aligned, a strided reduced gradient, an operand that is not broadcast, a
  // reduced output that is not wanted, no kernel
  EXPECT_FALSE(ew::plan_bcast(mul_bwd({4, 5, 1096}, {1096, 0, 1}), 1, kernels(), &g));
  EXPECT_FALSE(ew::plan_bcast(mul_bwd({4096, 511}, {0, 1}), 1, kernels(), &g));
  EXPECT_TRUE(ew::plan_bcast(mul_bwd({4096, 512}, {0, 1}), 1, kernels(), &g));
  EXPECT_FALSE(ew::plan_bcast(mul_bwd({4096, 1095}, {0, 1}), 1, kernels(), &g));
  EXPECT_FALSE(ew::plan_bcast(mul_bwd({4096, 1096}, {0, 2}), 1, kernels(), &g));
  EXPECT_FALSE(ew::plan_bcast(mul_bwd({4096, 1096}, {1096, 1}), 1, kernels(), &g));
  ew::Iter off = mul_bwd({4096, 1096}, {0, 1});
  off.out_on[1] = false;
  EXPECT_FALSE(ew::plan_bcast(off, 1, kernels(), &g));
  ew::EwKernels none = kernels();
  none.bcast = nullptr;
  EXPECT_FALSE(ew::plan_bcast(mul_bwd({4096, 1096}, {0, 1}), 1, none, &g));
  // more than 65535 col-mode row blocks
  EXPECT_FALSE(ew::plan_bcast(mul_bwd({65536 * 32 + 1, 512}, {1, 0}), 1, kernels(), &g));
}

}  // namespace
}  // namespace baracuda
