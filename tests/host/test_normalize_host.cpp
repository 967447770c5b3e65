// Host tier for NormalizePlan / NormalizeBackwardPlan: the operands of normalize and weight_norm
// (g and norm with 1 on every axis but dim, norm in the accumulator's dtype), the path each
// contiguous layout takes, and the refusals, each naming its field. The kernels' numerics are the
// device tier's (contract suite over bench/problems/ci/normalize.txt against
// reference/softmax_norm_loss_ref.cpp's normalize_line / weight_norm_line).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "baracuda/ops/normalize.hpp"
#include "host/host_test_util.hpp"

using namespace baracuda;
using baracuda::test::expect_error;
using baracuda::test::hopper;

namespace {

NormalizeDescriptor desc(NormalizeKind op, DType dt, std::vector<int64_t> shape, int dim) {
  NormalizeDescriptor d;
  d.op = op;
  d.dtype = dt;
  d.rank = static_cast<int>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) d.shape[i] = shape[i];
  d.dim = dim;
  return d;
}

std::vector<int64_t> dims(const OperandSpec* o) { return std::vector<int64_t>(o->dims().begin(), o->dims().end()); }

}  // namespace

TEST(NormalizePlan, OperandsAndPaths) {
  auto p = NormalizePlan::select(desc(NormalizeKind::kNormalize, DType::bf16, {8, 4096}, -1), hopper());
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_EQ(p->sku().variant, "block_rows");
  EXPECT_EQ(p->expected_operands().find("g"), nullptr);
  EXPECT_EQ(p->workspace_size(), 0u);
  EXPECT_EQ(NormalizePlan::select(desc(NormalizeKind::kNormalize, DType::f32, {8, 100}, 1), hopper())->sku().variant, "warp_rows");
  EXPECT_EQ(NormalizePlan::select(desc(NormalizeKind::kNormalize, DType::f32, {8, 100}, 0), hopper())->sku().variant, "columns");
  auto w = NormalizePlan::select(desc(NormalizeKind::kWeightNorm, DType::f16, {64, 8, 3, 3}, 0), hopper());
  ASSERT_TRUE(w) << w.status().message();
  EXPECT_EQ(dims(w->expected_operands().find("g")), (std::vector<int64_t>{64, 1, 1, 1}));
  EXPECT_EQ(w->expected_operands().find("norm")->dtype, DType::f32);
  EXPECT_EQ(w->sku().variant, "warp_rows");  // 72 elements per line, unit stride
  auto wl = NormalizeBackwardPlan::select(desc(NormalizeKind::kWeightNorm, DType::f32, {300, 24}, 1), hopper());
  ASSERT_TRUE(wl);
  EXPECT_EQ(wl->sku().variant, "column_blocks");  // 300 elements per strided line: 32 threads each
  EXPECT_EQ(dims(wl->expected_operands().find("norm")), (std::vector<int64_t>{1, 24}));
  EXPECT_TRUE(wl->expected_operands().find("dg")->optional);
}

TEST(NormalizePlan, RefusalsNameTheField) {
  auto refused = [](const NormalizeDescriptor& d, StatusCode code, const char* what) {
    auto p = NormalizePlan::select(d, hopper());
    ASSERT_FALSE(p) << what;
    expect_error(p.status(), code, what);
  };
  refused(desc(NormalizeKind::kNormalize, DType::f32, {4, 5}, 2), StatusCode::kInvalidProblem, "dim = 2");
  NormalizeDescriptor d = desc(NormalizeKind::kNormalize, DType::f32, {4, 5}, 1);
  d.p = 0;
  refused(d, StatusCode::kUnsupported, "p = 0");
  d.p = NAN;
  refused(d, StatusCode::kUnsupported, "p = nan");
  d = desc(NormalizeKind::kNormalize, DType::f32, {4, 5}, 1);
  d.eps = -1;
  refused(d, StatusCode::kInvalidProblem, "eps");
  refused(desc(NormalizeKind::kWeightNorm, DType::f32, {4, 5, 6}, 1), StatusCode::kUnsupported, "only the first or the last axis");
  d = desc(NormalizeKind::kWeightNorm, DType::f32, {4, 5}, 0);
  d.p = 3;
  refused(d, StatusCode::kInvalidProblem, "p = 3");
  refused(desc(NormalizeKind::kWeightNorm, DType::f32, {4, 0}, 0), StatusCode::kInvalidProblem, "no element");
  refused(desc(NormalizeKind::kNormalize, DType::i32, {4, 5}, 1), StatusCode::kUnsupported, "dtype");
  // an empty input selects (nothing to write)
  EXPECT_TRUE(NormalizePlan::select(desc(NormalizeKind::kNormalize, DType::f32, {0, 5}, 1), hopper()));
}
