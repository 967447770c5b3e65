// Host tier for TrianglePlan (tril / triu): the factories, operands (out may be the input), the
// refusals naming their field, and run() on an empty output touching nothing. The values are the
// device tier's (contract suite over bench/problems/ci/copy.txt against harness/ref_copy.cpp).
#include <gtest/gtest.h>

#include <cstdint>

#include "baracuda/core/any_plan.hpp"
#include "baracuda/ops/triangle.hpp"
#include "host/host_test_util.hpp"

using namespace baracuda;
using baracuda::test::expect_refused;
using baracuda::test::hopper;

TEST(TrianglePlan, FactoriesAndOperands) {
  const int64_t shape[] = {3, 40, 64};
  auto lo = TrianglePlan::select(TriangleDescriptor::tril(DType::bf16, shape, -3), hopper());
  ASSERT_TRUE(lo) << lo.status().message();
  EXPECT_EQ(lo->sku().op, "tril");
  EXPECT_TRUE(lo->precision_guarantee().bit_exact);
  auto up = TrianglePlan::select(TriangleDescriptor::triu(DType::f8e4m3, shape, INT64_MAX), hopper());
  ASSERT_TRUE(up) << up.status().message();
  EXPECT_EQ(up->sku().op, "triu");
  EXPECT_EQ(up->workspace_size(), 0u);
}

TEST(TrianglePlan, RefusalsNameTheField) {
  expect_refused("triangle", "dtype=f32 rank=1 shape=5", StatusCode::kInvalidProblem, "rank = 1 must be in [2, 8]");
  expect_refused("triangle", "dtype=f32 rank=2 shape=5,-1", StatusCode::kInvalidProblem, "shape[1] = -1 must be >= 0");
  expect_refused("triangle", "dtype=f32 rank=2147483647", StatusCode::kInvalidProblem, "rank = 2147483647");
}

TEST(TrianglePlan, EmptyOutputRunsNothing) {
  auto p = AnyPlan::select("triangle", "dtype=f32 rank=3 shape=1099511627776,0,4", hopper());
  ASSERT_TRUE(p) << p.status().message();
  const int64_t shape[] = {int64_t{1} << 40, 0, 4}, strides[] = {0, 4, 1};
  const NamedView views[] = {{"input", TensorMut::make(nullptr, DType::f32, shape, strides)},
                             {"out", TensorMut::make(nullptr, DType::f32, shape, strides)}};
  const Status s = p->run(nullptr, {}, views);
  EXPECT_TRUE(s.ok()) << s.to_string();
}
