// Host tier for NormPlan / NormBackwardPlan: the operands select() expects (optional weight,
// bias, residual, dh; mean only for layer_norm), PyTorch's eps defaults, the dweight / dbias
// partials' workspace, and the refusals, each naming its field. The kernels' numerics are the
// device tier's (contract suite over bench/problems/ci/norm.txt against the float64 rows of
// reference/softmax_norm_loss_ref.cpp).
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "baracuda/ops/norm.hpp"
#include "host/host_test_util.hpp"

using namespace baracuda;
using baracuda::test::expect_error;
using baracuda::test::hopper;

namespace {

NormDescriptor desc(NormKind op, DType dt, std::vector<int64_t> shape, int norm_dims = 1) {
  NormDescriptor d;
  d.op = op;
  d.dtype = dt;
  d.rank = static_cast<int>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) d.shape[i] = shape[i];
  d.norm_dims = norm_dims;
  d.bias = op == NormKind::kLayerNorm;
  return d;
}

template <class R>
void refused(const R& r, StatusCode code, const std::string& needle) {
  ASSERT_FALSE(r);
  expect_error(r.status(), code, needle);
}

}  // namespace

TEST(NormPlan, OperandsEpsAndWorkspace) {
  NormDescriptor d = desc(NormKind::kLayerNorm, DType::bf16, {8, 16, 4096});
  d.residual = true;
  d.param_dtype = DType::f32;
  auto p = NormPlan::select(d, hopper());
  ASSERT_TRUE(p) << p.status().message();
  const OperandSpecs& o = p->expected_operands();
  EXPECT_EQ(o.find("weight")->dtype, DType::f32);
  EXPECT_EQ(o.find("weight")->dims().size(), 1u);
  EXPECT_EQ(o.find("h")->dtype, DType::bf16);
  EXPECT_EQ(o.find("mean")->dtype, DType::f32);
  const std::span<const int64_t> md = o.find("mean")->dims();
  EXPECT_EQ(std::vector<int64_t>(md.begin(), md.end()), (std::vector<int64_t>{8, 16, 1}));  // PyTorch's keepdim shape
  EXPECT_EQ(p->workspace_size(), 0u);
  EXPECT_DOUBLE_EQ(norm_eps(d), 1e-5);
  // rms_norm: no mean, no bias; eps=None is the dtype's machine epsilon
  NormDescriptor r = desc(NormKind::kRmsNorm, DType::bf16, {32, 4096});
  auto rp = NormPlan::select(r, hopper());
  ASSERT_TRUE(rp);
  EXPECT_EQ(rp->expected_operands().find("mean"), nullptr);
  EXPECT_EQ(rp->expected_operands().find("bias"), nullptr);
  EXPECT_DOUBLE_EQ(norm_eps(r), 0.0078125);
  r.dtype = DType::f32;
  EXPECT_DOUBLE_EQ(norm_eps(r), 1.1920928955078125e-07);
  r.eps = 1e-6;
  EXPECT_DOUBLE_EQ(norm_eps(r), 1e-6);
  // the backward: dweight / dbias partials of min(rows, 264) row groups, f32, 2 x N each
  auto b = NormBackwardPlan::select(desc(NormKind::kLayerNorm, DType::bf16, {1000, 512}), hopper());
  ASSERT_TRUE(b);
  EXPECT_GE(b->workspace_size(), size_t{264} * 2 * 512 * 4);
  EXPECT_NE(b->expected_operands().find("dbias"), nullptr);
  NormDescriptor nw = desc(NormKind::kLayerNorm, DType::f32, {1000, 512});
  nw.weight = nw.bias = false;
  auto bn = NormBackwardPlan::select(nw, hopper());
  ASSERT_TRUE(bn);
  EXPECT_EQ(bn->workspace_size(), 0u);
  EXPECT_EQ(bn->expected_operands().find("dweight"), nullptr);
  NormDescriptor res = desc(NormKind::kRmsNorm, DType::f16, {4, 64});
  res.residual = true;
  auto br = NormBackwardPlan::select(res, hopper());
  ASSERT_TRUE(br);
  EXPECT_TRUE(br->expected_operands().find("dh")->optional);
  // several normalized axes; an empty batch
  EXPECT_TRUE(NormPlan::select(desc(NormKind::kLayerNorm, DType::f64, {5, 7, 30}, 2), hopper()));
  EXPECT_TRUE(NormBackwardPlan::select(desc(NormKind::kRmsNorm, DType::f32, {0, 64}), hopper()));
}

TEST(NormPlan, RefusalsNameTheField) {
  constexpr StatusCode kBad = StatusCode::kInvalidProblem, kUns = StatusCode::kUnsupported;
  auto fwd = [](const NormDescriptor& d) { return NormPlan::select(d, hopper()); };
  auto bwd = [](const NormDescriptor& d) { return NormBackwardPlan::select(d, hopper()); };
  refused(fwd(desc(NormKind::kLayerNorm, DType::f32, {4, 5}, 3)), kBad, "norm_dims = 3");
  refused(fwd(desc(NormKind::kLayerNorm, DType::f32, {4, 5}, 0)), kBad, "norm_dims = 0");
  refused(fwd(desc(NormKind::kLayerNorm, DType::f32, {})), kBad, "rank = 0");
  refused(fwd(desc(NormKind::kLayerNorm, DType::i32, {4, 5})), kUns, "dtype i32");
  refused(fwd(desc(NormKind::kLayerNorm, DType::f32, {4, -5})), kBad, "shape[1]");
  refused(bwd(desc(NormKind::kLayerNorm, DType::f32, {4, 0})), kBad, "no element");
  NormDescriptor d = desc(NormKind::kRmsNorm, DType::f32, {4, 5});
  d.bias = true;
  refused(fwd(d), kBad, "rms_norm has no bias");
  d = desc(NormKind::kLayerNorm, DType::f32, {4, 5});
  d.param_dtype = DType::bf16;
  refused(fwd(d), kUns, "param_dtype bf16");
  d = desc(NormKind::kLayerNorm, DType::f32, {4, 5});
  d.eps = -1.0;
  refused(bwd(d), kBad, "eps = -1");
  d.eps = std::numeric_limits<double>::infinity();
  refused(fwd(d), kBad, "eps = inf");
  d = desc(NormKind::kLayerNorm, DType::f32, {int64_t{1} << 40, int64_t{1} << 30});
  refused(fwd(d), kBad, "2^58");
}
