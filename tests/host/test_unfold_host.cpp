// Host tier for UnfoldBackwardPlan and its float64 reference: the reference against hand-computed
// windows, the adjoint identity <unfold(x), g> = <x, unfold_backward(g)> and central finite
// differences; the plan's operands (grad_out's shape), its refusals naming the field, and run()
// on an empty grad_input touching nothing. The kernel's values are the device tier's (contract
// suite over bench/problems/ci/copy.txt against harness/ref_copy.cpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "baracuda/core/any_plan.hpp"
#include "baracuda/ops/unfold.hpp"
#include "host/host_test_util.hpp"
#include "unfold_ref.hpp"

using namespace baracuda;
using baracuda::test::expect_refused;
using baracuda::test::hopper;

namespace {

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace

TEST(UnfoldReference, HandComputedWindows) {
  // x = [0 .. 6], unfold(0, 3, 2): windows [0 1 2] [2 3 4] [4 5 6]
  const auto d = UnfoldBackwardDescriptor::make(DType::f64, std::vector<int64_t>{7}, 0, 3, 2);
  EXPECT_EQ(d.windows(), 3);
  EXPECT_EQ(ref::unfold_forward(d, {0, 1, 2, 3, 4, 5, 6}), (std::vector<double>{0, 1, 2, 2, 3, 4, 4, 5, 6}));
  // all-ones gradient: each element counts its windows
  EXPECT_EQ(ref::unfold_backward(d, std::vector<double>(9, 1.0)), (std::vector<double>{1, 1, 2, 1, 2, 1, 1}));
  // [2, 5] along dim 1, size 2 step 3: windows [0 1] [3 4]; element 2 in none
  const auto g = UnfoldBackwardDescriptor::make(DType::f64, std::vector<int64_t>{2, 5}, -1, 2, 3);
  EXPECT_EQ(g.windows(), 2);
  EXPECT_EQ(ref::unfold_backward(g, {1, 2, 3, 4, 5, 6, 7, 8}), (std::vector<double>{1, 2, 0, 3, 4, 5, 6, 0, 7, 8}));
  EXPECT_EQ(ref::unfold_shape(g), (std::vector<int64_t>{2, 2, 2}));
}

TEST(UnfoldReference, AdjointIdentityAndFiniteDifferences) {
  std::mt19937_64 rng(7);
  struct Case {
    std::vector<int64_t> shape;
    int dim;
    int64_t size, step;
  };
  const std::vector<Case> cases = {{{13}, 0, 4, 3}, {{3, 11, 2}, 1, 5, 2}, {{2, 3, 9}, -1, 9, 1}, {{4, 10}, 0, 1, 3}, {{6, 5}, 1, 0, 2}};
  for (const Case& c : cases) {
    const auto d = UnfoldBackwardDescriptor::make(DType::f64, c.shape, c.dim, c.size, c.step);
    const auto us = ref::unfold_shape(d);
    int64_t nin = 1, nout = 1;
    for (int64_t e : c.shape) nin *= e;
    for (int64_t e : us) nout *= e;
    const std::vector<double> x = test::uniform_values(static_cast<size_t>(nin), rng);
    const std::vector<double> w = test::uniform_values(static_cast<size_t>(nout), rng);
    const std::vector<double> grad = ref::unfold_backward(d, w);
    const double lhs = dot(ref::unfold_forward(d, x), w), rhs = dot(x, grad);
    EXPECT_NEAR(lhs, rhs, 1e-12 * (1 + std::abs(lhs))) << "dim " << c.dim;
    // L(x) = <unfold(x), w>: linear, so central differences are exact up to rounding
    const double eps = 1e-6;
    for (int64_t i = 0; i < nin; ++i) {
      auto xp = x, xm = x;
      xp[static_cast<size_t>(i)] += eps;
      xm[static_cast<size_t>(i)] -= eps;
      const double fd = (dot(ref::unfold_forward(d, xp), w) - dot(ref::unfold_forward(d, xm), w)) / (2 * eps);
      EXPECT_NEAR(grad[static_cast<size_t>(i)], fd, 1e-6 + 1e-6 * std::abs(fd)) << "dim " << c.dim << " i=" << i;
    }
  }
}

TEST(UnfoldBackwardPlan, OperandsAndGuarantee) {
  const int64_t shape[] = {4, 33, 6};
  auto p = UnfoldBackwardPlan::select(UnfoldBackwardDescriptor::make(DType::bf16, shape, 1, 7, 3), hopper());
  ASSERT_TRUE(p) << p.status().message();
  const OperandSpec* go = p->expected_operands().find("grad_out");
  ASSERT_NE(go, nullptr);
  EXPECT_EQ(go->rank, 4);
  EXPECT_EQ(go->shape[1], 9);  // (33 − 7) / 3 + 1
  EXPECT_EQ(go->shape[3], 7);
  EXPECT_EQ(p->expected_operands().find("grad_input")->shape[1], 33);
  EXPECT_EQ(p->precision_guarantee().accumulator, DType::f32);
  EXPECT_EQ(p->workspace_size(), 0u);
  EXPECT_EQ(p->sku().direction, Direction::kBackward);
  EXPECT_EQ(p->sku().variant, "gather");  // overlapping windows sum
  // disjoint windows: a copy (bit-exact), after a zero fill when windows leave gaps
  const int64_t row[] = {8, 4096};
  auto tiled = UnfoldBackwardPlan::select(UnfoldBackwardDescriptor::make(DType::bf16, row, 1, 4, 4), hopper());
  ASSERT_TRUE(tiled) << tiled.status().message();
  EXPECT_EQ(tiled->sku().variant, "copy");
  EXPECT_TRUE(tiled->precision_guarantee().bit_exact);
  auto gapped = UnfoldBackwardPlan::select(UnfoldBackwardDescriptor::make(DType::f32, row, 1, 4, 5), hopper());
  ASSERT_TRUE(gapped) << gapped.status().message();
  EXPECT_EQ(gapped->sku().variant, "fill+copy");
  auto tail = UnfoldBackwardPlan::select(UnfoldBackwardDescriptor::make(DType::f32, row, 1, 3, 3), hopper());  // 4096 = 3·1365 + 1
  ASSERT_TRUE(tail) << tail.status().message();
  EXPECT_EQ(tail->sku().variant, "fill+copy");
}

TEST(UnfoldBackwardPlan, RefusalsNameTheField) {
  expect_refused("unfold_backward", "dtype=i32 rank=1 shape=5", StatusCode::kUnsupported, "dtype i32 is not supported");
  expect_refused("unfold_backward", "dtype=f32 rank=0", StatusCode::kInvalidProblem, "rank = 0 must be in [1, 7]");
  expect_refused("unfold_backward", "dtype=f32 rank=8 shape=1,1,1,1,1,1,1,1", StatusCode::kInvalidProblem, "rank = 8");
  expect_refused("unfold_backward", "dtype=f32 rank=2 shape=3,-4", StatusCode::kInvalidProblem, "shape[1] = -4 must be >= 0");
  expect_refused("unfold_backward", "dtype=f32 rank=2 shape=3,4 dim=2", StatusCode::kInvalidProblem, "dim = 2 is out of range [-2, 1]");
  expect_refused("unfold_backward", "dtype=f32 rank=2 shape=3,4 dim=1 size=5", StatusCode::kInvalidProblem,
                 "size = 5 must be in [0, shape[1] = 4]");
  expect_refused("unfold_backward", "dtype=f32 rank=2 shape=3,4 size=-1", StatusCode::kInvalidProblem, "size = -1");
  expect_refused("unfold_backward", "dtype=f32 rank=2 shape=3,4 step=0", StatusCode::kInvalidProblem, "step = 0 must be >= 1");
  // a valid input whose unfolded view (W · size elements) cannot be addressed
  expect_refused("unfold_backward", "dtype=f32 rank=1 shape=1099511627776 size=549755813888", StatusCode::kInvalidProblem,
                 "grad_out (549755813889 windows of 549755813888)");
}

TEST(UnfoldBackwardPlan, EmptyGradInputRunsNothing) {
  auto p = AnyPlan::select("unfold_backward", "dtype=f32 rank=3 shape=1099511627776,0,7 dim=2 size=2", hopper());
  ASSERT_TRUE(p) << p.status().message();
  std::vector<NamedView> views;
  const int64_t strides[] = {0, 0, 0, 0};
  for (const OperandSpec& o : p->operands())
    views.push_back({o.name, TensorMut::make(nullptr, o.dtype, o.dims(), std::span<const int64_t>(strides, static_cast<size_t>(o.rank)))});
  const Status s = p->run(nullptr, {}, views);
  EXPECT_TRUE(s.ok()) << s.to_string();
}
