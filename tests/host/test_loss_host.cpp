// Host tier for CrossEntropyPlan / CrossEntropyBackwardPlan: the operands select() expects for
// each form (class index or probability target, nll_loss, reductions, optional lse /
// total_weight), the workspace of mean / sum, the sku's path, and the refusals, each naming its
// field. The kernels' numerics are the device tier's (contract suite over
// bench/problems/ci/loss.txt against reference/softmax_norm_loss_ref.cpp's class_loss_row).
#include <gtest/gtest.h>

#include <vector>

#include "baracuda/ops/loss.hpp"
#include "host/host_test_util.hpp"

using namespace baracuda;
using baracuda::test::expect_error;
using baracuda::test::hopper;

namespace {

CrossEntropyDescriptor desc(DType dt, std::vector<int64_t> shape) {
  CrossEntropyDescriptor d;
  d.dtype = dt;
  d.rank = static_cast<int>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) d.shape[i] = shape[i];
  return d;
}

std::vector<int64_t> dims(const OperandSpec* o) { return std::vector<int64_t>(o->dims().begin(), o->dims().end()); }

}  // namespace

TEST(CrossEntropyPlan, OperandsWorkspaceAndPaths) {
  CrossEntropyDescriptor d = desc(DType::bf16, {8, 5, 3, 4});  // [N, C, d1, d2]: 96 samples
  d.weight = true;
  auto p = CrossEntropyPlan::select(d, hopper());
  ASSERT_TRUE(p) << p.status().message();
  const OperandSpecs& o = p->expected_operands();
  EXPECT_EQ(dims(o.find("target")), (std::vector<int64_t>{8, 3, 4}));
  EXPECT_EQ(o.find("target")->dtype, DType::i64);
  EXPECT_EQ(dims(o.find("weight")), (std::vector<int64_t>{5}));
  EXPECT_TRUE(dims(o.find("loss")).empty());  // reduction mean: a scalar
  EXPECT_EQ(o.find("lse")->dtype, DType::f32);
  EXPECT_TRUE(o.find("lse")->optional);
  EXPECT_TRUE(o.find("total_weight")->optional);
  EXPECT_GE(p->workspace_size(), size_t{96} * 2 * 4);
  EXPECT_EQ(p->sku().variant, "columns");  // the class axis is strided
  // reduction none: per-sample loss, no workspace, no total_weight; [N, C] rows take a warp or block
  d = desc(DType::f32, {64, 1000});
  d.reduction = LossReduction::kNone;
  auto n = CrossEntropyPlan::select(d, hopper());
  ASSERT_TRUE(n);
  EXPECT_EQ(dims(n->expected_operands().find("loss")), (std::vector<int64_t>{64}));
  EXPECT_EQ(n->expected_operands().find("total_weight"), nullptr);
  EXPECT_EQ(n->workspace_size(), 0u);
  EXPECT_EQ(n->sku().variant, "warp_rows");
  d.shape[1] = 128256;
  EXPECT_EQ(CrossEntropyPlan::select(d, hopper())->sku().variant, "block_rows");
  // a probability target has the input's shape and dtype; a [C] input is one sample
  CrossEntropyDescriptor pr = desc(DType::f16, {10});
  pr.target = LossTarget::kProbability;
  auto pp = CrossEntropyPlan::select(pr, hopper());
  ASSERT_TRUE(pp);
  EXPECT_EQ(dims(pp->expected_operands().find("target")), (std::vector<int64_t>{10}));
  EXPECT_EQ(pp->expected_operands().find("target")->dtype, DType::f16);
  EXPECT_TRUE(dims(pp->expected_operands().find("lse")).empty());
  // nll_loss: no lse; its backward reads no input
  CrossEntropyDescriptor nl = desc(DType::f32, {16, 10});
  nl.op = ClassLossKind::kNllLoss;
  nl.index_dtype = DType::i32;
  auto np = CrossEntropyPlan::select(nl, hopper());
  ASSERT_TRUE(np);
  EXPECT_EQ(np->expected_operands().find("lse"), nullptr);
  auto nb = CrossEntropyBackwardPlan::select(nl, hopper());
  ASSERT_TRUE(nb);
  EXPECT_EQ(nb->expected_operands().find("input"), nullptr);
  EXPECT_NE(nb->expected_operands().find("total_weight"), nullptr);
  EXPECT_TRUE(dims(nb->expected_operands().find("dloss")).empty());
  // the backward of cross_entropy reads lse; sum needs no total_weight
  CrossEntropyDescriptor sb = desc(DType::bf16, {4, 100});
  sb.reduction = LossReduction::kSum;
  auto b = CrossEntropyBackwardPlan::select(sb, hopper());
  ASSERT_TRUE(b);
  EXPECT_NE(b->expected_operands().find("lse"), nullptr);
  EXPECT_EQ(b->expected_operands().find("total_weight"), nullptr);
  EXPECT_EQ(b->workspace_size(), 0u);
}

TEST(CrossEntropyPlan, RefusalsNameTheField) {
  auto refused = [](const CrossEntropyDescriptor& d, StatusCode code, const std::string& needle) {
    auto r = CrossEntropyPlan::select(d, hopper());
    ASSERT_FALSE(r) << needle;
    expect_error(r.status(), code, needle);
  };
  CrossEntropyDescriptor d = desc(DType::f32, {4, 10});
  d.label_smoothing = 1.5;
  refused(d, StatusCode::kInvalidProblem, "label_smoothing");
  d = desc(DType::f32, {4, 10});
  d.z_loss = -1;
  refused(d, StatusCode::kInvalidProblem, "z_loss");
  d = desc(DType::i32, {4, 10});
  refused(d, StatusCode::kUnsupported, "dtype");
  d = desc(DType::f32, {4, 10});
  d.index_dtype = DType::f32;
  refused(d, StatusCode::kUnsupported, "index_dtype");
  d = desc(DType::f32, {4, 0});
  refused(d, StatusCode::kInvalidProblem, "classes");
  d = desc(DType::f32, {4, 10});
  d.op = ClassLossKind::kNllLoss;
  d.label_smoothing = 0.1;
  refused(d, StatusCode::kInvalidProblem, "nll_loss");
  d.label_smoothing = 0;
  d.target = LossTarget::kProbability;
  refused(d, StatusCode::kInvalidProblem, "nll_loss");
  d = desc(DType::f32, {int64_t{1} << 40, int64_t{1} << 30});
  refused(d, StatusCode::kInvalidProblem, "2^58");
  d = desc(DType::f32, {});
  refused(d, StatusCode::kInvalidProblem, "rank");
  // an empty batch is fine (mean: NaN, sum: 0); so is zero classes with no sample
  EXPECT_TRUE(CrossEntropyPlan::select(desc(DType::f32, {0, 10}), hopper()));
  EXPECT_TRUE(CrossEntropyPlan::select(desc(DType::f32, {0, 0}), hopper()));
}
