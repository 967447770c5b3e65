// Host tier for FlipPlan / RollPlan: the factories, operands, the inverse roll, the refusals
// (each naming its field) and run() on an empty output touching nothing. The data movement is
// the device tier's (contract suite over bench/problems/ci/copy.txt against harness/ref_copy.cpp,
// tests/device/test_flip_roll_device.cpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "baracuda/core/any_plan.hpp"
#include "baracuda/ops/flip_roll.hpp"
#include "host/host_test_util.hpp"

using namespace baracuda;
using baracuda::test::expect_error;
using baracuda::test::expect_refused;
using baracuda::test::hopper;

TEST(FlipRollPlan, FactoriesAndOperands) {
  const int64_t shape[] = {4, 6, 40}, dims[] = {0, -1}, shifts[] = {3, -2};
  auto f = FlipPlan::select(FlipDescriptor::make(DType::bf16, shape, dims), hopper());
  ASSERT_TRUE(f) << f.status().message();
  EXPECT_TRUE(f->precision_guarantee().bit_exact);
  EXPECT_NE(f->expected_operands().find("input"), nullptr);
  EXPECT_NE(f->expected_operands().find("out"), nullptr);
  auto r = RollPlan::select(RollDescriptor::make(DType::f32, shape, shifts, dims), hopper());
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->workspace_size(), 0u);
  const int64_t one[] = {5};
  EXPECT_TRUE(RollPlan::select(RollDescriptor::make(DType::u8, shape, one), hopper()));  // flattened
}

TEST(FlipRollPlan, InverseRollNegatesModTheExtent) {
  const int64_t shape[] = {4, 6, 40}, dims[] = {2, 0}, shifts[] = {INT64_MIN, 5};
  const RollDescriptor inv = RollDescriptor::make(DType::f32, shape, shifts, dims).inverse();
  // INT64_MIN mod 40 = -8 (C's remainder): its negation 8; 5 mod 4 = 1: -1
  EXPECT_EQ(inv.shifts, (IntList{8, -1}));
  const int64_t flat[] = {INT64_MIN};
  EXPECT_EQ(RollDescriptor::make(DType::f32, shape, flat).inverse().shifts, (IntList{-(INT64_MIN % 960)}));
}

TEST(FlipRollPlan, RefusalsNameTheField) {
  expect_refused("flip", "dtype=f32 rank=2 shape=3,4 dims=2", StatusCode::kInvalidProblem, "dims[0] = 2 is out of range [-2, 1]");
  expect_refused("flip", "dtype=f32 rank=2 shape=3,4 dims=0,-2", StatusCode::kInvalidProblem, "dim 0 appears multiple times");
  expect_refused("flip", "dtype=f32 rank=9 dims=0", StatusCode::kInvalidProblem, "rank = 9");
  // repro (the fuzzer): a huge rank must be refused before the dims index a per-axis table by it
  expect_refused("flip", "dtype=bf16 rank=2147483647 shape=8,6,64 dims=-1,0", StatusCode::kInvalidProblem, "rank = 2147483647");
  expect_refused("roll", "dtype=bf16 rank=-2147483648 shifts=1 dims=0", StatusCode::kInvalidProblem, "rank = -2147483648");
  expect_refused("roll", "dtype=f32 rank=2 shape=3,4 shifts=1,2 dims=0", StatusCode::kInvalidProblem, "shifts has 2 entries and dims 1");
  expect_refused("roll", "dtype=f32 rank=2 shape=3,4 shifts=1,2", StatusCode::kInvalidProblem, "one shift with no dims");
  expect_refused("roll", "dtype=f32 rank=2 shape=3,4 dims=0", StatusCode::kInvalidProblem, "shifts has 0 entries");
  expect_refused("roll", "dtype=f32 rank=2 shape=3,4 shifts=1 dims=-3", StatusCode::kInvalidProblem, "dims[0] = -3 is out of range");
  expect_refused("roll", "dtype=f32 rank=2 shape=4611686018427387904,4 shifts=1", StatusCode::kInvalidProblem, "more than 2^58 elements");
}

TEST(FlipRollPlan, EmptyOutputRunsNothing) {
  for (std::string_view op : {"flip", "roll"}) {
    auto p = AnyPlan::select(op, op == "flip" ? "dtype=f32 rank=3 shape=9223372036854775807,0,4 dims=0,2"
                                              : "dtype=f32 rank=3 shape=9223372036854775807,0,4 shifts=-9223372036854775808 dims=0",
                             hopper());
    ASSERT_TRUE(p) << p.status().message();
    const int64_t shape[] = {INT64_MAX, 0, 4}, strides[] = {0, 4, 1};
    const NamedView views[] = {{"input", TensorMut::make(nullptr, DType::f32, shape, strides)},
                               {"out", TensorMut::make(nullptr, DType::f32, shape, strides)}};
    const Status s = p->run(nullptr, {}, views);
    EXPECT_TRUE(s.ok()) << s.to_string();
  }
}
