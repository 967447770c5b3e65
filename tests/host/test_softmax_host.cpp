// Host tier for SoftmaxPlan / SoftmaxBackwardPlan: select()'s operands and result types, the
// path the shape implies (sku variant), and the refusals (rank, shape, dim, dtype, out_dtype),
// each naming its field. The kernels' numerics are the device tier's (contract suite over
// bench/problems/ci/softmax.txt against reference/softmax_norm_loss_ref.cpp).
#include <gtest/gtest.h>

#include <vector>

#include "baracuda/ops/softmax.hpp"
#include "host/host_test_util.hpp"

using namespace baracuda;
using baracuda::test::expect_error;
using baracuda::test::hopper;

namespace {

SoftmaxDescriptor desc(SoftmaxKind op, DType dt, std::vector<int64_t> shape, int dim = -1) {
  SoftmaxDescriptor d;
  d.op = op;
  d.dtype = dt;
  d.rank = static_cast<int>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) d.shape[i] = shape[i];
  d.dim = dim;
  return d;
}

template <class R>
void refused(const R& r, StatusCode code, const std::string& needle) {
  ASSERT_FALSE(r);
  expect_error(r.status(), code, needle);
}
constexpr StatusCode kBad = StatusCode::kInvalidProblem, kUns = StatusCode::kUnsupported;

}  // namespace

TEST(SoftmaxPlan, OperandsAndPaths) {
  auto p = SoftmaxPlan::select(desc(SoftmaxKind::kSoftmax, DType::bf16, {32768, 1024}), hopper());
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_EQ(p->expected_operands().find("x")->dtype, DType::bf16);
  EXPECT_EQ(p->expected_operands().find("y")->dtype, DType::bf16);
  EXPECT_EQ(p->workspace_size(), 0u);
  EXPECT_EQ(p->sku().variant, "warp_rows");  // 2 KB lines
  auto big = SoftmaxPlan::select(desc(SoftmaxKind::kLogSoftmax, DType::f32, {64, 131072}), hopper());
  ASSERT_TRUE(big);
  EXPECT_EQ(big->sku().variant, "cluster_rows");  // 512 KB lines: a cluster of 8 blocks
  auto huge = SoftmaxPlan::select(desc(SoftmaxKind::kSoftmax, DType::f32, {2, 1 << 20}), hopper());
  ASSERT_TRUE(huge);
  EXPECT_EQ(huge->sku().variant, "cluster_rows_unstaged");  // 4 MB lines: read twice
  auto col = SoftmaxPlan::select(desc(SoftmaxKind::kSoftmin, DType::f16, {300, 7}, 0), hopper());
  ASSERT_TRUE(col);
  EXPECT_EQ(col->sku().variant, "columns");
  // the half-to-float forms: forward f16 -> f32; backward reads f32 y / dy and writes f16 dx
  SoftmaxDescriptor h = desc(SoftmaxKind::kSoftmax, DType::f16, {8, 100});
  h.out_dtype = DType::f32;
  auto hf = SoftmaxPlan::select(h, hopper());
  ASSERT_TRUE(hf);
  EXPECT_EQ(hf->expected_operands().find("y")->dtype, DType::f32);
  auto hb = SoftmaxBackwardPlan::select(h, hopper());
  ASSERT_TRUE(hb);
  EXPECT_EQ(hb->expected_operands().find("y")->dtype, DType::f32);
  EXPECT_EQ(hb->expected_operands().find("dy")->dtype, DType::f32);
  EXPECT_EQ(hb->expected_operands().find("dx")->dtype, DType::f16);
  EXPECT_EQ(hb->expected_operands().find("x"), nullptr);  // the backward reads y, not x
  // rank 0 (a line of one) and empty shapes select
  EXPECT_TRUE(SoftmaxPlan::select(desc(SoftmaxKind::kSoftmax, DType::f64, {}, 0), hopper()));
  EXPECT_TRUE(SoftmaxBackwardPlan::select(desc(SoftmaxKind::kSoftmax, DType::f32, {0, 5}), hopper()));
}

TEST(SoftmaxPlan, RefusalsNameTheField) {
  auto fwd = [](const SoftmaxDescriptor& d) { return SoftmaxPlan::select(d, hopper()); };
  auto bwd = [](const SoftmaxDescriptor& d) { return SoftmaxBackwardPlan::select(d, hopper()); };
  refused(fwd(desc(SoftmaxKind::kSoftmax, DType::f32, {4, 5}, 2)), kBad, "dim = 2");
  refused(fwd(desc(SoftmaxKind::kSoftmax, DType::f32, {4, 5}, -3)), kBad, "dim = -3");
  refused(fwd(desc(SoftmaxKind::kSoftmax, DType::f32, {4, -5})), kBad, "shape[1]");
  refused(fwd(desc(SoftmaxKind::kSoftmax, DType::i32, {4, 5})), kUns, "dtype i32");
  refused(fwd(desc(SoftmaxKind::kSoftmax, DType::f32, {int64_t{1} << 40, int64_t{1} << 30})), kBad, "2^58");
  SoftmaxDescriptor d = desc(SoftmaxKind::kSoftmax, DType::f32, {4, 5});
  d.out_dtype = DType::f16;
  refused(fwd(d), kUns, "out_dtype f16");
  refused(bwd(d), kUns, "out_dtype f16");
  d = desc(SoftmaxKind::kSoftmax, DType::f32, {4, 5});
  d.rank = 9;
  refused(fwd(d), kBad, "rank = 9");
  d = desc(SoftmaxKind::kSoftmax, DType::f32, {4, 5});
  d.op = static_cast<SoftmaxKind>(7);
  refused(bwd(d), kBad, "op");
}

TEST(SoftmaxPlan, MasksDeclareTheirOperands) {
  auto fwd = [](const SoftmaxDescriptor& d) { return SoftmaxPlan::select(d, hopper()); };
  auto bwd = [](const SoftmaxDescriptor& d) { return SoftmaxBackwardPlan::select(d, hopper()); };
  SoftmaxDescriptor d = desc(SoftmaxKind::kSoftmax, DType::bf16, {2, 8, 64});
  d.mask_dtype = DType::boolean;
  auto f = fwd(d);
  auto b = bwd(d);
  ASSERT_TRUE(f && b);
  EXPECT_EQ(f->expected_operands().find("mask")->dtype, DType::boolean);
  EXPECT_EQ(b->expected_operands().find("mask")->dtype, DType::boolean);  // dx is 0 where removed
  EXPECT_NE(f->sku().variant.find(".masked"), std::string::npos);
  d.mask_dtype = DType::f32;  // additive: the backward passes the gradient through, reads no mask
  ASSERT_TRUE(fwd(d) && bwd(d));
  EXPECT_EQ(bwd(d)->expected_operands().find("mask"), nullptr);
  EXPECT_EQ(bwd(d)->sku().variant.find(".masked"), std::string::npos);
  d.mask_dtype = DType::bf16;  // x's dtype
  EXPECT_TRUE(fwd(d));
  d.mask_dtype = DType::f16;
  refused(fwd(d), kUns, "mask_dtype f16");
  d.mask_dtype = DType::i32;
  refused(fwd(d), kUns, "mask_dtype i32");
  d.mask_dtype.reset();
  d.causal = true;
  d.diagonal = INT64_MIN;  // every entry removed: allowed (masked_rows decides)
  auto c = fwd(d);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->expected_operands().find("mask"), nullptr);
  d.dim = 0;
  refused(fwd(d), kBad, "causal");
  d = desc(SoftmaxKind::kSoftmax, DType::f32, {64});
  d.causal = true;
  refused(fwd(d), kBad, "rank >= 2");
}
