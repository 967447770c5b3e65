// Host tier for LocalResponseNormPlan / LocalResponseNormBackwardPlan: the operands, the walk order
// each layout gets, and the refusals, each naming its field. The kernels' numerics are the device
// tier's (contract suite over bench/problems/ci/local_response_norm.txt against
// reference/softmax_norm_loss_ref.cpp's local_response_norm_line).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "baracuda/ops/local_response_norm.hpp"
#include "host/host_test_util.hpp"

using namespace baracuda;
using baracuda::test::expect_error;
using baracuda::test::hopper;

namespace {

LocalResponseNormDescriptor desc(DType dt, std::vector<int64_t> shape, int64_t size = 5) {
  LocalResponseNormDescriptor d;
  d.dtype = dt;
  d.rank = static_cast<int>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) d.shape[i] = shape[i];
  d.size = size;
  return d;
}

}  // namespace

TEST(LocalResponseNormPlan, OperandsAndDefaults) {
  auto p = LocalResponseNormPlan::select(desc(DType::bf16, {2, 16, 8, 8}), hopper());
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_EQ(p->workspace_size(), 0u);
  EXPECT_NE(p->expected_operands().find("input"), nullptr);
  EXPECT_NE(p->expected_operands().find("output"), nullptr);
  const LocalResponseNormDescriptor d;
  EXPECT_EQ(d.alpha, 1e-4);  // PyTorch's defaults
  EXPECT_EQ(d.beta, 0.75);
  EXPECT_EQ(d.k, 1.0);
  auto b = LocalResponseNormBackwardPlan::select(desc(DType::f64, {2, 3, 4}), hopper());
  ASSERT_TRUE(b) << b.status().message();
  EXPECT_NE(b->expected_operands().find("doutput"), nullptr);
  EXPECT_NE(b->expected_operands().find("dinput"), nullptr);
}

TEST(LocalResponseNormPlan, RefusalsNameTheField) {
  auto refused = [](const LocalResponseNormDescriptor& d, StatusCode code, const char* what) {
    auto p = LocalResponseNormPlan::select(d, hopper());
    ASSERT_FALSE(p) << what;
    expect_error(p.status(), code, what);
  };
  refused(desc(DType::f32, {4, 5}), StatusCode::kInvalidProblem, "rank = 2");
  refused(desc(DType::f32, {4, 5, 6}, 0), StatusCode::kInvalidProblem, "size = 0");
  refused(desc(DType::i32, {4, 5, 6}), StatusCode::kUnsupported, "dtype");
  LocalResponseNormDescriptor d = desc(DType::f32, {4, 5, 6});
  d.alpha = NAN;
  refused(d, StatusCode::kInvalidProblem, "alpha");
  d = desc(DType::f32, {4, 5, 6});
  d.beta = INFINITY;
  refused(d, StatusCode::kInvalidProblem, "beta");
  d = desc(DType::f32, {4, 5, 6});
  d.k = NAN;
  refused(d, StatusCode::kInvalidProblem, "k = nan");
  // an empty input selects (nothing to write), even with huge spatial extents
  EXPECT_TRUE(LocalResponseNormPlan::select(desc(DType::f32, {0, 1, INT64_MAX, 4}), hopper()));
}

TEST(LocalResponseNormPlan, UnmergeableSpatialAxesAreRefused) {
  auto p = LocalResponseNormPlan::select(desc(DType::f32, {2, 3, 4, 5}), hopper());
  ASSERT_TRUE(p);
  std::vector<float> x(2 * 3 * 4 * 5 * 2), y(x.size());
  LocalResponseNormArgs a;
  // spatial axes transposed (strides 1, 4 for extents 4, 5): not one run
  a.input = TensorRef::make(x.data(), DType::f32, {2, 3, 4, 5}, {60, 20, 1, 4});
  a.output = TensorMut::make(y.data(), DType::f32, {2, 3, 4, 5});
  const Status s = p->run(nullptr, {}, a);
  ASSERT_FALSE(s.ok());
  expect_error(s, StatusCode::kUnsupported, "input's spatial axes");
}
