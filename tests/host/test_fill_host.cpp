// Host tier for FillPlan: the factories (PyTorch's arange length and its errors), the operand,
// the refusals (each naming its field), and run() on an empty output touching nothing. The
// values are the device tier's (contract suite over bench/problems/ci/copy.txt against
// harness/ref_copy.cpp's fill, tests/device/test_fill_device.cpp).
#include <gtest/gtest.h>

#include <cstdint>

#include "baracuda/core/any_plan.hpp"
#include "baracuda/ops/fill.hpp"
#include "host/host_test_util.hpp"

using namespace baracuda;
using baracuda::test::expect_error;
using baracuda::test::expect_refused;
using baracuda::test::hopper;

TEST(FillPlan, ArangeLengthAsPyTorch) {
  auto n = [](DType dt, Scalar s, Scalar e, Scalar st) {
    auto d = FillDescriptor::arange(dt, s, e, st);
    EXPECT_TRUE(d) << d.status().message();
    return d ? d->shape[0] : -1;
  };
  EXPECT_EQ(n(DType::i64, int64_t{0}, int64_t{10}, int64_t{3}), 4);   // 0 3 6 9
  EXPECT_EQ(n(DType::i64, int64_t{10}, int64_t{1}, int64_t{-3}), 3);  // 10 7 4
  EXPECT_EQ(n(DType::i64, int64_t{5}, int64_t{5}, int64_t{1}), 0);
  EXPECT_EQ(n(DType::f32, 0.0, 1.0, 0.1), 10);
  EXPECT_EQ(n(DType::f32, -5.5, 3.2, 0.3), 29);
  EXPECT_EQ(n(DType::i32, int64_t{1}, int64_t{1000}, int64_t{7}), 143);
  EXPECT_EQ(n(DType::i64, int64_t{0}, int64_t{10}, 2.5), 5);  // step truncated to 2 (PyTorch: to<int64_t>)
  expect_error(FillDescriptor::arange(DType::f32, 0.0, 5.0, 0.0).status(), StatusCode::kInvalidProblem, "step must be nonzero");
  expect_error(FillDescriptor::arange(DType::i64, int64_t{0}, int64_t{5}, 0.5).status(), StatusCode::kInvalidProblem, "step must be nonzero");
  expect_error(FillDescriptor::arange(DType::f32, 0.0, 5.0, -1.0).status(), StatusCode::kInvalidProblem, "inconsistent with step sign");
  expect_error(FillDescriptor::arange(DType::f32, 0.0, INFINITY, 1.0).status(), StatusCode::kInvalidProblem, "unsupported range");
  expect_error(FillDescriptor::arange(DType::i64, int64_t{INT64_MIN}, int64_t{INT64_MAX}, int64_t{1}).status(), StatusCode::kInvalidProblem,
               "possible overflow");
  expect_error(FillDescriptor::arange(DType::f32, 0.0, 1e300, 1e-300).status(), StatusCode::kInvalidProblem, "possible overflow");
}

TEST(FillPlan, FactoriesAndOperand) {
  const int64_t shape[] = {3, 4};
  auto p = FillPlan::select(FillDescriptor::full(DType::bf16, shape, 2.5), hopper());
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_EQ(p->workspace_size(), 0u);
  EXPECT_TRUE(p->precision_guarantee().bit_exact);
  ASSERT_NE(p->expected_operands().find("out"), nullptr);
  EXPECT_EQ(p->expected_operands().size(), 1u);
  auto e = FillPlan::select(FillDescriptor::eye(DType::f8e4m3, 3, 5), hopper());
  ASSERT_TRUE(e) << e.status().message();
  EXPECT_EQ(e->expected_operands().find("out")->shape[1], 5);
  auto l = FillPlan::select(FillDescriptor::linspace(DType::f16, 0.1, 1.0, 64), hopper());
  ASSERT_TRUE(l) << l.status().message();
  EXPECT_FALSE(l->precision_guarantee().bit_exact);
  auto g = FillPlan::select(FillDescriptor::logspace(DType::f64, -10.0, 10.0, 129, 3.0), hopper());
  ASSERT_TRUE(g) << g.status().message();
  EXPECT_EQ(g->descriptor().base, 3.0);
}

TEST(FillPlan, RefusalsNameTheField) {
  expect_refused("fill", "dtype=i8 rank=1 shape=4 value=300", StatusCode::kInvalidProblem, "value = 300 overflows i8");
  expect_refused("fill", "dtype=i32 rank=1 shape=4 value=nan", StatusCode::kInvalidProblem, "value = nan cannot be converted to i32");
  expect_refused("fill", "dtype=f8e4m3 rank=1 shape=4 value=1", StatusCode::kUnsupported, "dtype f8e4m3 is not supported");
  expect_refused("fill", "dtype=bool rank=1 shape=4 kind=arange", StatusCode::kUnsupported, "for kind arange");
  expect_refused("fill", "dtype=i32 rank=1 shape=4 kind=logspace", StatusCode::kUnsupported, "for kind logspace");
  expect_refused("fill", "dtype=f32 rank=2 shape=4,4 kind=arange", StatusCode::kInvalidProblem, "rank = 2 must be 1 for kind arange");
  expect_refused("fill", "dtype=f32 rank=1 shape=4 kind=eye", StatusCode::kInvalidProblem, "rank = 1 must be 2 for kind eye");
  expect_refused("fill", "dtype=f32 rank=1 shape=-1 kind=linspace", StatusCode::kInvalidProblem, "shape[0] = -1 must be >= 0");
  expect_refused("fill", "dtype=f32 rank=1 shape=4 kind=arange start=inf", StatusCode::kInvalidProblem, "start = inf must be finite");
  expect_refused("fill", "dtype=f32 rank=1 shape=4 kind=arange step=nan", StatusCode::kInvalidProblem, "step = nan must be finite");
  expect_refused("fill", "dtype=i16 rank=1 shape=4 kind=linspace end=40000", StatusCode::kInvalidProblem, "end = 40000 overflows i16");
  expect_refused("fill", "dtype=i64 rank=1 shape=4 kind=arange start=1e300", StatusCode::kInvalidProblem, "start");
  expect_refused("fill", "dtype=f32 rank=9 value=1", StatusCode::kInvalidProblem, "rank = 9");
  expect_refused("fill", "dtype=f32 rank=2 shape=4611686018427387904,4 value=1", StatusCode::kInvalidProblem, "more than 2^58 elements");
}

TEST(FillPlan, EmptyOutputRunsNothing) {
  auto p = AnyPlan::select("fill", "dtype=f32 rank=3 shape=9223372036854775807,0,4 value=1", hopper());
  ASSERT_TRUE(p) << p.status().message();
  const int64_t shape[] = {INT64_MAX, 0, 4}, strides[] = {0, 4, 1};
  const NamedView views[] = {{"out", TensorMut::make(nullptr, DType::f32, shape, strides)}};
  const Status s = p->run(nullptr, {}, views);
  EXPECT_TRUE(s.ok()) << s.to_string();
}
