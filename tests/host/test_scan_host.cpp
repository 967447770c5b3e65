// Host tier for ScanPlan / ScanBackwardPlan: the float64 reference on hand-computed cases
// (PyTorch's cummax tie and NaN rules, reverse and exclusive forms, integer wrap-around), the
// backward reference against central finite differences, select()'s result types, refusals and
// segment workspace.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "baracuda/ops/scan.hpp"
#include "host/host_test_util.hpp"
#include "scan_ref.hpp"

using namespace baracuda;
using baracuda::test::expect_error;
using baracuda::test::hopper;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN(), kInf = std::numeric_limits<double>::infinity();

ScanDescriptor desc(ScanKind op, DType dt, std::vector<int64_t> shape, int dim = -1, bool reverse = false, bool exclusive = false) {
  ScanDescriptor d;
  d.op = op;
  d.dtype = dt;
  d.rank = static_cast<int>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) d.shape[i] = shape[i];
  d.dim = dim;
  d.reverse = reverse;
  d.exclusive = exclusive;
  return d;
}

ref::ScanLine line(ScanKind op, std::vector<double> xs, bool reverse = false, bool exclusive = false, DType dt = DType::f64) {
  return ref::scan_line(desc(op, dt, {static_cast<int64_t>(xs.size())}, 0, reverse, exclusive), xs);
}

}  // namespace

TEST(ScanReference, SumsProductsAndTheirForms) {
  EXPECT_EQ(line(ScanKind::kCumsum, {1, 2, 3}).value, (std::vector<double>{1, 3, 6}));
  EXPECT_EQ(line(ScanKind::kCumsum, {1, 2, 3}, true).value, (std::vector<double>{6, 5, 3}));
  EXPECT_EQ(line(ScanKind::kCumsum, {1, 2, 3}, false, true).value, (std::vector<double>{0, 1, 3}));
  EXPECT_EQ(line(ScanKind::kCumsum, {1, 2, 3}, true, true).value, (std::vector<double>{5, 3, 0}));
  EXPECT_EQ(line(ScanKind::kCumprod, {2, 3, 4}, false, true).value, (std::vector<double>{1, 2, 6}));
  // integers wrap as int64 does: 2^62 * 4 = 0
  const ref::ScanLine w = line(ScanKind::kCumprod, {4611686018427387904.0, 4}, false, false, DType::i64);
  EXPECT_EQ(w.value[1], 0.0);
}

TEST(ScanReference, CummaxTakesTheLastTieAndTheLastNaN) {
  const ref::ScanLine m = line(ScanKind::kCummax, {1, 3, 3, 2});
  EXPECT_EQ(m.value, (std::vector<double>{1, 3, 3, 3}));
  EXPECT_EQ(m.index, (std::vector<int64_t>{0, 1, 2, 2}));
  const ref::ScanLine n = line(ScanKind::kCummax, {1, kNaN, 5, kNaN, 2});
  EXPECT_EQ(n.index, (std::vector<int64_t>{0, 1, 1, 3, 3}));
  EXPECT_TRUE(std::isnan(n.value[2]));
  const ref::ScanLine r = line(ScanKind::kCummin, {2, 1, 1, 3}, true);  // from the end: 3, 1 (3rd), 1 (2nd), 1
  EXPECT_EQ(r.index, (std::vector<int64_t>{1, 1, 2, 3}));
}

TEST(ScanReference, LogCumSumExpSpecialValues) {
  const ref::ScanLine a = line(ScanKind::kLogCumSumExp, {-kInf, -kInf, 0});
  EXPECT_EQ(a.value[0], -kInf);
  EXPECT_EQ(a.value[1], -kInf);
  EXPECT_DOUBLE_EQ(a.value[2], 0.0);
  const ref::ScanLine b = line(ScanKind::kLogCumSumExp, {1, kInf, 2, kNaN});
  EXPECT_DOUBLE_EQ(b.value[0], 1.0);
  EXPECT_EQ(b.value[1], kInf);
  EXPECT_EQ(b.value[2], kInf);
  EXPECT_TRUE(std::isnan(b.value[3]));
  EXPECT_NEAR(line(ScanKind::kLogCumSumExp, {0, 0}).value[1], std::log(2.0), 1e-15);
  EXPECT_EQ(line(ScanKind::kLogCumSumExp, {0, 0}, false, true).value[0], -kInf);
}

// The backward reference against central finite differences of the forward's, for every
// differentiable op in all four forms (x in [0.5, 2]: distinct values, so cummax is smooth).
TEST(ScanReference, BackwardMatchesFiniteDifferences) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0.5, 2.0);
  for (ScanKind op : {ScanKind::kCumsum, ScanKind::kCumprod, ScanKind::kLogCumSumExp, ScanKind::kCummax, ScanKind::kCummin})
    for (bool reverse : {false, true})
      for (bool exclusive : {false, true}) {
        if (exclusive && (op == ScanKind::kCummax || op == ScanKind::kCummin)) continue;
        const ScanDescriptor d = desc(op, DType::f64, {7}, 0, reverse, exclusive);
        std::vector<double> xs(7), dy(7);
        for (double& v : xs) v = u(rng);
        for (double& v : dy) v = u(rng) - 1.2;
        const ref::ScanLine fwd = ref::scan_line(d, xs);
        const std::vector<double> dx = ref::scan_backward_line(d, xs, dy, fwd.index);
        for (size_t i = 0; i < xs.size(); ++i) {
          const double h = 1e-6;
          std::vector<double> a = xs, b = xs;
          a[i] += h;
          b[i] -= h;
          const std::vector<double> ya = ref::scan_line(d, a).value, yb = ref::scan_line(d, b).value;
          double fd = 0;
          for (size_t j = 0; j < xs.size(); ++j)
            if (ya[j] != yb[j]) fd += dy[j] * (ya[j] - yb[j]) / (2 * h);  // (exclusive's first output: -inf, constant)
          EXPECT_NEAR(dx[i], fd, 1e-6 * std::max(1.0, std::fabs(fd)))
              << enum_name(op) << " reverse " << reverse << " exclusive " << exclusive << " element " << i;
        }
      }
}

TEST(ScanPlan, ResultTypesFollowPyTorch) {
  auto out = [](ScanDescriptor d) {
    auto p = ScanPlan::select(d, hopper());
    EXPECT_TRUE(p) << p.status().to_string();
    return p ? p->expected_operands().find("y")->dtype : DType::f32;
  };
  EXPECT_EQ(out(desc(ScanKind::kCumsum, DType::i32, {4, 5})), DType::i64);
  EXPECT_EQ(out(desc(ScanKind::kCumsum, DType::boolean, {4, 5})), DType::i64);
  EXPECT_EQ(out(desc(ScanKind::kCumprod, DType::u8, {4, 5})), DType::i64);
  EXPECT_EQ(out(desc(ScanKind::kCumsum, DType::bf16, {4, 5})), DType::bf16);
  EXPECT_EQ(out(desc(ScanKind::kCummax, DType::i32, {4, 5})), DType::i32);
  ScanDescriptor f = desc(ScanKind::kCumsum, DType::bf16, {4, 5});
  f.out_dtype = DType::f32;
  EXPECT_EQ(out(f), DType::f32);
  auto mx = ScanPlan::select(desc(ScanKind::kCummax, DType::f32, {4, 5}), hopper());
  ASSERT_TRUE(mx);
  EXPECT_EQ(mx->expected_operands().find("indices")->dtype, DType::i64);
  EXPECT_TRUE(mx->precision_guarantee().bit_exact);
  ScanDescriptor nv = desc(ScanKind::kCummax, DType::f32, {4, 5});
  nv.indices = false;  // jax.lax.cummax: the values only
  auto mv = ScanPlan::select(nv, hopper());
  ASSERT_TRUE(mv);
  EXPECT_FALSE(mv->expected_operands().find("indices"));
  EXPECT_TRUE(ScanPlan::select(desc(ScanKind::kCumsum, DType::f32, {}, 0), hopper()));  // a scalar: a line of one
}

TEST(ScanPlan, RefusalsNameTheField) {
  expect_error(ScanPlan::select(desc(ScanKind::kCumsum, DType::f32, {4, 5}, 2), hopper()).status(), StatusCode::kInvalidProblem, "dim = 2");
  expect_error(ScanPlan::select(desc(ScanKind::kCumsum, DType::f32, {4, -5}, 1), hopper()).status(), StatusCode::kInvalidProblem,
               "shape[1]");
  expect_error(ScanPlan::select(desc(ScanKind::kCummax, DType::f32, {4, 5}, 1, false, true), hopper()).status(),
               StatusCode::kInvalidProblem, "exclusive");
  expect_error(ScanPlan::select(desc(ScanKind::kLogCumSumExp, DType::i32, {4, 5}), hopper()).status(), StatusCode::kUnsupported,
               "logcumsumexp");
  ScanDescriptor bad = desc(ScanKind::kCumsum, DType::i32, {4, 5});
  bad.out_dtype = DType::f32;
  expect_error(ScanPlan::select(bad, hopper()).status(), StatusCode::kUnsupported, "i64");
  expect_error(ScanBackwardPlan::select(desc(ScanKind::kCumsum, DType::i32, {4, 5}), hopper()).status(), StatusCode::kUnsupported,
               "floating x");
  ScanDescriptor noix = desc(ScanKind::kCummin, DType::f32, {4, 5});
  noix.indices = false;
  expect_error(ScanBackwardPlan::select(noix, hopper()).status(), StatusCode::kInvalidProblem, "indices");
}

TEST(ScanPlan, LongLinesReserveSegmentTotals) {
  auto few = ScanPlan::select(desc(ScanKind::kCumsum, DType::f32, {8, 1 << 20}), hopper());
  ASSERT_TRUE(few);
  EXPECT_GE(few->workspace_size(), 8u * 32 * 4);  // 8 lines cut into segments: their f32 totals
  EXPECT_EQ(few->precision_guarantee().determinism, Determinism::kRunToRun);
  auto bwd = ScanBackwardPlan::select(desc(ScanKind::kCumsum, DType::f32, {8, 1 << 20}), hopper());
  ASSERT_TRUE(bwd);
  EXPECT_EQ(bwd->workspace_size(), few->workspace_size());
  EXPECT_FALSE(bwd->expected_operands().find("x"));  // cumsum's gradient reads dy only
  auto prod = ScanBackwardPlan::select(desc(ScanKind::kCumprod, DType::bf16, {8, 100}), hopper());
  ASSERT_TRUE(prod);
  EXPECT_TRUE(prod->expected_operands().find("x") && prod->expected_operands().find("y"));
}
