// Host tier for ReducePlan: the float64 reference on hand-computed cases (PyTorch's tie, NaN,
// empty and correction rules, docs/notes/torch-reductions.md), and select()'s result types,
// axis validation and refusals by code and message.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <limits>
#include <random>
#include <vector>

#include "baracuda/ops/reduce.hpp"
#include "host/host_test_util.hpp"
#include "reduce_ref.hpp"

using namespace baracuda;
using baracuda::test::expect_error;
using baracuda::test::hopper;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN(), kInf = std::numeric_limits<double>::infinity();

ReduceDescriptor desc(ReduceKind op, DType dt, std::vector<int64_t> shape, std::vector<int> dims = {}, bool keepdim = false) {
  ReduceDescriptor d;
  d.op = op;
  d.dtype = dt;
  d.rank = static_cast<int>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) d.shape[i] = shape[i];
  d.num_dims = static_cast<int>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) d.dims[i] = dims[i];
  d.keepdim = keepdim;
  return d;
}

ref::ReduceResult one(ReduceKind op, std::vector<double> xs, double p = 2, double correction = 1) {
  ReduceDescriptor d = desc(op, DType::f64, {static_cast<int64_t>(xs.size())});
  d.p = p;
  d.correction = correction;
  return ref::reduce_one(d, xs);
}

}  // namespace

TEST(ReduceReference, TiesAndNaNTakeTheFirstIndex) {
  EXPECT_EQ(one(ReduceKind::kArgmax, {1, 3, 3, 2}).index, 1);
  EXPECT_EQ(one(ReduceKind::kArgmin, {2, 1, 5, 1}).index, 1);
  const auto r = one(ReduceKind::kArgmax, {1, kNaN, 7, kNaN});
  EXPECT_EQ(r.index, 1);
  EXPECT_TRUE(std::isnan(r.value));
  EXPECT_EQ(one(ReduceKind::kArgmin, {1, 0, kNaN}).index, 2);  // NaN is the extreme for argmin too
  EXPECT_TRUE(std::isnan(one(ReduceKind::kAmax, {1, kNaN, 2}).value));
}

TEST(ReduceReference, EmptyAndSpecialValues) {
  EXPECT_EQ(one(ReduceKind::kSum, {}).value, 0);
  EXPECT_EQ(one(ReduceKind::kProd, {}).value, 1);
  EXPECT_TRUE(std::isnan(one(ReduceKind::kMean, {}).value));
  EXPECT_EQ(one(ReduceKind::kAll, {}).value, 1);
  EXPECT_EQ(one(ReduceKind::kAny, {}).value, 0);
  EXPECT_EQ(one(ReduceKind::kLogSumExp, {}).value, -kInf);
  EXPECT_EQ(one(ReduceKind::kLogSumExp, {-kInf, -kInf}).value, -kInf);
  EXPECT_EQ(one(ReduceKind::kLogSumExp, {1, kInf}).value, kInf);
  EXPECT_TRUE(std::isnan(one(ReduceKind::kLogSumExp, {1, kNaN, kInf}).value));
  EXPECT_NEAR(one(ReduceKind::kLogSumExp, {0, 0}).value, std::log(2.0), 1e-15);
  EXPECT_EQ(one(ReduceKind::kNanSum, {1, kNaN, 2}).value, 3);
  EXPECT_EQ(one(ReduceKind::kNanMean, {1, kNaN, 2}).value, 1.5);
  EXPECT_TRUE(std::isnan(one(ReduceKind::kNanMean, {kNaN}).value));
  EXPECT_EQ(one(ReduceKind::kCountNonzero, {0, kNaN, -0.0, 2}).value, 2);  // NaN counts, -0 does not
}

TEST(ReduceReference, NormsByP) {
  EXPECT_EQ(one(ReduceKind::kNorm, {3, -4}).value, 5);
  EXPECT_EQ(one(ReduceKind::kNorm, {3, -4}, 1).value, 7);
  EXPECT_EQ(one(ReduceKind::kNorm, {3, 0, -4}, 0).value, 2);
  EXPECT_EQ(one(ReduceKind::kNorm, {3, -4}, kInf).value, 4);
  EXPECT_EQ(one(ReduceKind::kNorm, {3, -4}, -kInf).value, 3);
  EXPECT_NEAR(one(ReduceKind::kNorm, {1, 2}, 3).value, std::cbrt(9.0), 1e-15);
  EXPECT_EQ(one(ReduceKind::kNorm, {0, 2}, -1).value, 0);  // a zero dominates a negative p
}

TEST(ReduceReference, VarianceCorrection) {
  EXPECT_NEAR(one(ReduceKind::kVar, {1, 2, 3, 4}).value, 5.0 / 3.0, 1e-15);
  EXPECT_NEAR(one(ReduceKind::kVar, {1, 2, 3, 4}, 2, 0).value, 1.25, 1e-15);
  EXPECT_NEAR(one(ReduceKind::kStd, {1, 2, 3, 4}, 2, 0).value, std::sqrt(1.25), 1e-15);
  EXPECT_EQ(one(ReduceKind::kVar, {1, 2}, 2, 2).value, kInf);   // N - correction = 0, spread: inf
  EXPECT_TRUE(std::isnan(one(ReduceKind::kVar, {5}).value));    // N = 1, no spread: NaN
  EXPECT_TRUE(std::isnan(one(ReduceKind::kVar, {}).value));
}

TEST(ReducePlan, ResultTypesFollowPyTorch) {
  auto out = [](ReduceDescriptor d) {
    auto p = ReducePlan::select(d, hopper());
    EXPECT_TRUE(p) << p.status().to_string();
    const OperandSpec* y = p->expected_operands().find("y");
    return y ? y->dtype : p->expected_operands().find("indices")->dtype;
  };
  EXPECT_EQ(out(desc(ReduceKind::kSum, DType::i32, {4, 5})), DType::i64);
  EXPECT_EQ(out(desc(ReduceKind::kSum, DType::bf16, {4, 5})), DType::bf16);
  EXPECT_EQ(out(desc(ReduceKind::kAll, DType::u8, {4, 5})), DType::u8);
  EXPECT_EQ(out(desc(ReduceKind::kAny, DType::f32, {4, 5})), DType::boolean);
  EXPECT_EQ(out(desc(ReduceKind::kCountNonzero, DType::f16, {4, 5})), DType::i64);
  EXPECT_EQ(out(desc(ReduceKind::kArgmax, DType::bf16, {4, 5}, {1})), DType::i64);
  EXPECT_EQ(out(desc(ReduceKind::kLogSumExp, DType::i64, {4, 5})), DType::f32);
  ReduceDescriptor m = desc(ReduceKind::kMean, DType::f16, {4, 5});
  m.out_dtype = DType::f32;
  EXPECT_EQ(out(m), DType::f32);
  // shapes: keepdim keeps the reduced axes as 1; max / min also write the indices
  auto p = ReducePlan::select(desc(ReduceKind::kMax, DType::f32, {3, 4, 5}, {1}, true), hopper());
  ASSERT_TRUE(p);
  const OperandSpec* y = p->expected_operands().find("y");
  const OperandSpec* ix = p->expected_operands().find("indices");
  ASSERT_TRUE(y && ix);
  EXPECT_EQ(y->rank, 3);
  EXPECT_EQ(y->shape[1], 1);
  EXPECT_EQ(ix->dtype, DType::i64);
  auto q = ReducePlan::select(desc(ReduceKind::kSum, DType::f32, {3, 4, 5}, {0, -1}), hopper());
  ASSERT_TRUE(q);
  EXPECT_EQ(q->expected_operands().find("y")->rank, 1);
  EXPECT_EQ(q->expected_operands().find("y")->shape[0], 4);
}

TEST(ReducePlan, RefusalsNameTheField) {
  // one-line repros of each rule
  expect_error(ReducePlan::select(desc(ReduceKind::kAmax, DType::f32, {0, 5}, {0}), hopper()).status(), StatusCode::kInvalidProblem,
               "Expected reduction dim 0 to have non-zero size");
  expect_error(ReducePlan::select(desc(ReduceKind::kArgmax, DType::f32, {4, 0}), hopper()).status(), StatusCode::kInvalidProblem, "non-zero size");
  ReduceDescriptor ninf = desc(ReduceKind::kNorm, DType::f32, {0});
  ninf.p = -kInf;
  expect_error(ReducePlan::select(ninf, hopper()).status(), StatusCode::kInvalidProblem, "non-zero size");
  EXPECT_TRUE(ReducePlan::select(desc(ReduceKind::kNorm, DType::f32, {0}), hopper()));  // p = 2: 0
  expect_error(ReducePlan::select(desc(ReduceKind::kSum, DType::f32, {4, 5}, {2}), hopper()).status(), StatusCode::kInvalidProblem, "dims[0] = 2");
  expect_error(ReducePlan::select(desc(ReduceKind::kSum, DType::f32, {4, 5}, {1, -1}), hopper()).status(), StatusCode::kInvalidProblem, "twice");
  expect_error(ReducePlan::select(desc(ReduceKind::kMean, DType::i32, {4, 5}), hopper()).status(), StatusCode::kUnsupported, "floating x");
  expect_error(ReducePlan::select(desc(ReduceKind::kVar, DType::u8, {4, 5}), hopper()).status(), StatusCode::kUnsupported, "var");
  ReduceDescriptor amax_into = desc(ReduceKind::kAmax, DType::f32, {4, 5});
  amax_into.out_dtype = DType::f64;
  expect_error(ReducePlan::select(amax_into, hopper()).status(), StatusCode::kInvalidProblem, "x's dtype");
  ReduceDescriptor nan_p = desc(ReduceKind::kNorm, DType::f32, {4});
  nan_p.p = kNaN;
  expect_error(ReducePlan::select(nan_p, hopper()).status(), StatusCode::kInvalidProblem, "p is NaN");
  ReduceDescriptor bad_dims = desc(ReduceKind::kSum, DType::f32, {4});
  bad_dims.num_dims = 3;
  expect_error(ReducePlan::select(bad_dims, hopper()).status(), StatusCode::kInvalidProblem, "num_dims = 3");
}

TEST(ReducePlan, SplitReductionsReserveTheirPartials) {
  // an all-reduce of 2^28 elements splits over many warps: partials in the workspace
  auto all = ReducePlan::select(desc(ReduceKind::kSum, DType::f32, {int64_t{1} << 28}), hopper());
  ASSERT_TRUE(all);
  EXPECT_GT(all->workspace_size(), 0u);
  // the partials hold the policy's tree type: var's f32 (n, mean, m2) triple is 12 bytes, an
  // f32 sum's partial an f64 (8), an amax's an f32 (4)
  auto sum = ReducePlan::select(desc(ReduceKind::kSum, DType::bf16, {64, 65536}, {1}), hopper());
  auto var = ReducePlan::select(desc(ReduceKind::kVar, DType::bf16, {64, 65536}, {1}), hopper());
  auto amax = ReducePlan::select(desc(ReduceKind::kAmax, DType::bf16, {64, 65536}, {1}), hopper());
  ASSERT_TRUE(sum && var && amax);
  EXPECT_GT(sum->workspace_size(), 0u);
  EXPECT_EQ(var->workspace_size() * 2, 3 * sum->workspace_size());
  EXPECT_EQ(amax->workspace_size() * 2, sum->workspace_size());
  EXPECT_EQ(var->precision_guarantee().determinism, Determinism::kRunToRun);
}

// The backward reference against central finite differences of the forward reference, for every
// differentiable op it covers (x in [0.5, 2]: away from norm's and std's zeros).
TEST(ReduceReference, BackwardMatchesFiniteDifferences) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0.5, 2.0);
  struct Case {
    ReduceKind op;
    double p, correction;
  };
  for (const Case& k : {Case{ReduceKind::kSum, 2, 1}, Case{ReduceKind::kNanSum, 2, 1}, Case{ReduceKind::kMean, 2, 1},
                        Case{ReduceKind::kLogSumExp, 2, 1}, Case{ReduceKind::kNorm, 1, 1}, Case{ReduceKind::kNorm, 2, 1},
                        Case{ReduceKind::kNorm, 3.5, 1}, Case{ReduceKind::kVar, 2, 1}, Case{ReduceKind::kVar, 2, 0},
                        Case{ReduceKind::kStd, 2, 1}, Case{ReduceKind::kMax, 2, 1}, Case{ReduceKind::kMin, 2, 1},
                        Case{ReduceKind::kProd, 2, 1}, Case{ReduceKind::kAmax, 2, 1}, Case{ReduceKind::kAmin, 2, 1},
                        Case{ReduceKind::kNorm, kInf, 1}, Case{ReduceKind::kNorm, -kInf, 1}, Case{ReduceKind::kNanMean, 2, 1},
                        Case{ReduceKind::kVarMean, 2, 1}, Case{ReduceKind::kStdMean, 2, 0}, Case{ReduceKind::kAminmax, 2, 1}}) {
    ReduceDescriptor d = desc(k.op, DType::f64, {7});
    d.p = k.p;
    d.correction = k.correction;
    std::vector<double> xs(7);
    for (double& v : xs) v = u(rng);
    const ref::ReduceResult fwd = ref::reduce_one(d, xs);
    const double dy = 0.75, dy2 = -1.25;  // dy2: the second result's gradient (var_mean, std_mean, aminmax)
    const std::vector<double> dx = ref::reduce_backward_one(d, xs, fwd.value, dy, fwd.index, nullptr, fwd.value2, dy2);
    for (size_t i = 0; i < xs.size(); ++i) {
      const double h = 1e-6;
      std::vector<double> a = xs, b = xs;
      a[i] += h;
      b[i] -= h;
      const ref::ReduceResult ra = ref::reduce_one(d, a), rb = ref::reduce_one(d, b);
      const bool pair = k.op == ReduceKind::kVarMean || k.op == ReduceKind::kStdMean || k.op == ReduceKind::kAminmax;
      const double fd = dy * (ra.value - rb.value) / (2 * h) + (pair ? dy2 * (ra.value2 - rb.value2) / (2 * h) : 0.0);
      EXPECT_NEAR(dx[i], fd, 1e-6 * std::max(1.0, std::fabs(fd))) << enum_name(k.op) << " p " << k.p << " element " << i;
    }
  }
}

// PyTorch's rules where the derivative is not smooth: amax splits dy evenly over ties (and is NaN
// when the max is NaN); prod's gradient with one zero is the others' product at the zero, with
// two zeros 0; nanmean skips NaN.
TEST(ReduceReference, BackwardTiesZerosAndNaN) {
  ReduceDescriptor d = desc(ReduceKind::kAmax, DType::f64, {4});
  EXPECT_EQ(ref::reduce_backward_one(d, {1, 3, 3, 2}, 3, 1.0, 0), (std::vector<double>{0, 0.5, 0.5, 0}));
  const std::vector<double> nan_row = ref::reduce_backward_one(d, {1, kNaN, 3, 2}, kNaN, 1.0, 0);
  for (double v : nan_row) EXPECT_TRUE(std::isnan(v));
  d.op = ReduceKind::kProd;
  EXPECT_EQ(ref::reduce_backward_one(d, {2, 0, 3, 4}, 0, 1.0, 0), (std::vector<double>{0, 24, 0, 0}));
  EXPECT_EQ(ref::reduce_backward_one(d, {2, 0, 3, 0}, 0, 1.0, 0), (std::vector<double>{0, 0, 0, 0}));
  d.op = ReduceKind::kNanMean;
  EXPECT_EQ(ref::reduce_backward_one(d, {1, kNaN, 3, 2}, 2, 3.0, 0), (std::vector<double>{1, 0, 1, 1}));
  d.op = ReduceKind::kNorm;
  d.p = kInf;
  EXPECT_EQ(ref::reduce_backward_one(d, {-3, 1, 3, 2}, 3, 1.0, 0), (std::vector<double>{-0.5, 0, 0.5, 0}));
}

TEST(ReduceBackwardPlan, OperandsAndRefusals) {
  auto std_plan = ReduceBackwardPlan::select(desc(ReduceKind::kStd, DType::bf16, {6, 40}, {1}), hopper());
  ASSERT_TRUE(std_plan) << std_plan.status().to_string();
  EXPECT_TRUE(std_plan->expected_operands().find("x") && std_plan->expected_operands().find("y") &&
              std_plan->expected_operands().find("dy") && std_plan->expected_operands().find("dx"));
  EXPECT_GT(std_plan->workspace_size(), 0u);  // the means
  auto sum_plan = ReduceBackwardPlan::select(desc(ReduceKind::kSum, DType::f32, {6, 40}, {1}), hopper());
  ASSERT_TRUE(sum_plan);
  EXPECT_FALSE(sum_plan->expected_operands().find("x"));  // sum's gradient reads dy only
  EXPECT_EQ(sum_plan->workspace_size(), 0u);
  auto max_plan = ReduceBackwardPlan::select(desc(ReduceKind::kMax, DType::f32, {6, 40}, {0}), hopper());
  ASSERT_TRUE(max_plan);
  EXPECT_EQ(max_plan->expected_operands().find("indices")->dtype, DType::i64);
  expect_error(ReduceBackwardPlan::select(desc(ReduceKind::kArgmax, DType::f32, {6, 40}), hopper()).status(),
               StatusCode::kInvalidProblem, "not differentiable");
  auto prod_plan = ReduceBackwardPlan::select(desc(ReduceKind::kProd, DType::f32, {6, 40}, {1}), hopper());
  ASSERT_TRUE(prod_plan) << prod_plan.status().to_string();
  EXPECT_GT(prod_plan->workspace_size(), 0u);  // the nonzeros' product and the zero count
  EXPECT_TRUE(prod_plan->expected_operands().find("x") && prod_plan->expected_operands().find("y"));
  expect_error(ReduceBackwardPlan::select(desc(ReduceKind::kSum, DType::i32, {6, 40}), hopper()).status(), StatusCode::kUnsupported,
               "floating x");
}
