// Host tier for CrossEntropyPlan / CrossEntropyBackwardPlan: the operands select() expects for
// each form (class index or probability target, nll_loss, reductions, optional lse /
// total_weight), the workspace of mean / sum, the sku's path, and the refusals, each naming its
// field. The kernels' numerics are the device tier's (contract suite over
// bench/problems/ci/loss.txt against reference/softmax_norm_loss_ref.cpp's class_loss_row).
#include <gtest/gtest.h>

#include <vector>

#include "baracuda/ops/fused_linear_cross_entropy.hpp"
#include "baracuda/ops/loss.hpp"
#include "baracuda/ops/row_loss.hpp"
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
  pr.target_kind = LossTarget::kProbability;
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
  d.target_kind = LossTarget::kProbability;
  refused(d, StatusCode::kInvalidProblem, "nll_loss");
  d = desc(DType::f32, {int64_t{1} << 40, int64_t{1} << 30});
  refused(d, StatusCode::kInvalidProblem, "2^58");
  d = desc(DType::f32, {});
  refused(d, StatusCode::kInvalidProblem, "rank");
  // an empty batch is fine (mean: NaN, sum: 0); so is zero classes with no sample
  EXPECT_TRUE(CrossEntropyPlan::select(desc(DType::f32, {0, 10}), hopper()));
  EXPECT_TRUE(CrossEntropyPlan::select(desc(DType::f32, {0, 0}), hopper()));
}

TEST(PointwiseLossPlan, OperandsPerOpAndRefusals) {
  PointwiseLossDescriptor d;
  d.op = PointwiseLossKind::kMarginRanking;
  d.rank = 2;
  d.shape[0] = 8, d.shape[1] = 3;
  auto p = PointwiseLossPlan::select(d, hopper());
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_NE(p->expected_operands().find("input2"), nullptr);
  EXPECT_TRUE(dims(p->expected_operands().find("loss")).empty());
  EXPECT_GT(p->workspace_size(), 0u);
  auto b = PointwiseLossBackwardPlan::select(d, hopper());
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->expected_operands().find("dinput2")->optional);
  EXPECT_TRUE(b->expected_operands().find("dtarget")->optional);
  EXPECT_EQ(b->expected_operands().find("dvar"), nullptr);
  // gaussian_nll reads var and gives dvar; binary_cross_entropy has no dtarget
  d.op = PointwiseLossKind::kGaussianNll;
  d.reduction = LossReduction::kNone;
  auto g = PointwiseLossBackwardPlan::select(d, hopper());
  ASSERT_TRUE(g);
  EXPECT_NE(g->expected_operands().find("var"), nullptr);
  EXPECT_NE(g->expected_operands().find("dvar"), nullptr);
  EXPECT_EQ(dims(g->expected_operands().find("dloss")), (std::vector<int64_t>{8, 3}));
  d.op = PointwiseLossKind::kBce;
  d.weight = true;
  auto bce = PointwiseLossBackwardPlan::select(d, hopper());
  ASSERT_TRUE(bce);
  EXPECT_EQ(bce->expected_operands().find("dtarget"), nullptr);
  EXPECT_NE(bce->expected_operands().find("weight"), nullptr);
  // an option of another op is refused by name
  auto refused = [](const PointwiseLossDescriptor& r, const std::string& needle) {
    auto q = PointwiseLossPlan::select(r, hopper());
    ASSERT_FALSE(q) << needle;
    expect_error(q.status(), StatusCode::kInvalidProblem, needle);
  };
  PointwiseLossDescriptor m;
  m.rank = 1, m.shape[0] = 4;
  m.beta = 0.5;
  refused(m, "beta");
  m.beta.reset();
  m.pos_weight = true;
  refused(m, "pos_weight");
  m.pos_weight = false;
  m.reduction = LossReduction::kBatchMean;
  refused(m, "batchmean");
  m.op = PointwiseLossKind::kKlDiv;
  EXPECT_TRUE(PointwiseLossPlan::select(m, hopper()));
  m.op = PointwiseLossKind::kHuber;
  m.reduction = LossReduction::kMean;
  m.delta = 0;
  refused(m, "delta");
  m.op = PointwiseLossKind::kSmoothL1;
  m.delta.reset();
  m.beta = -1;
  refused(m, "beta");
  // cross_entropy refuses batchmean
  CrossEntropyDescriptor ce = desc(DType::f32, {4, 10});
  ce.reduction = LossReduction::kBatchMean;
  auto r = CrossEntropyPlan::select(ce, hopper());
  ASSERT_FALSE(r);
  expect_error(r.status(), StatusCode::kInvalidProblem, "batchmean");
}

// Repro (before 2026-11-28): CrossEntropyPlan selected with weight = false, run with args.weight
// set, bound the unchecked weight in the kernel. A view no operand of the descriptor names is now
// refused by check_args for every plan, naming the field.
TEST(CrossEntropyPlan, UndeclaredOperandIsRefused) {
  auto p = CrossEntropyPlan::select(desc(DType::f32, {4, 10}), hopper());
  ASSERT_TRUE(p);
  alignas(16) float buf[64] = {};
  alignas(16) int64_t t[4] = {};
  CrossEntropyArgs a;
  a.input = TensorRef::make(buf, DType::f32, {4, 10});
  a.target = TensorRef::make(t, DType::i64, {4});
  a.loss = TensorMut::make(buf + 48, DType::f32, std::vector<int64_t>{});
  EXPECT_TRUE(p->can_implement(a).ok()) << p->can_implement(a).to_string();
  a.weight = TensorRef::make(buf, DType::f32, {10});
  expect_error(p->can_implement(a), StatusCode::kInvalidProblem, "weight");
  // and a probability target refuses a non-negative ignore_index, as PyTorch
  CrossEntropyDescriptor pr = desc(DType::f32, {4, 10});
  pr.target_kind = LossTarget::kProbability;
  pr.ignore_index = 0;
  auto r = CrossEntropyPlan::select(pr, hopper());
  ASSERT_FALSE(r);
  expect_error(r.status(), StatusCode::kInvalidProblem, "ignore_index");
}

// ---------------------------------------------------------------- fused linear cross entropy

namespace {

FusedLinearCrossEntropyDescriptor flce(DType dt, int64_t S, int64_t H, int64_t V) {
  FusedLinearCrossEntropyDescriptor d;
  const int64_t x[2] = {S, H}, w[2] = {V, H};
  d.input = TensorLayout::make(dt, x);
  d.weight = TensorLayout::make(dt, w);
  return d;
}

}  // namespace

// The LM-head shape: 1024-token chunks (256 MiB of bf16 logits), the workspace that holds them,
// contiguous 16-byte-aligned gradients; loss only declares no gradient; a caller's chunk.
TEST(FusedLinearCrossEntropyPlan, ChunkWorkspaceAndOperands) {
  FusedLinearCrossEntropyDescriptor d = flce(DType::bf16, 8192, 4096, 128256);
  d.bias = true;
  auto p = FusedLinearCrossEntropyPlan::select(d, hopper());
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_EQ(p->chunk_tokens(), 1024);
  EXPECT_GE(p->workspace_size(), size_t{1024} * 128256 * 2);
  EXPECT_LT(p->workspace_size(), size_t{1024} * 128256 * 2 + (size_t{200} << 20));  // the logits chunk, not [S, V]
  const OperandSpecs& o = p->expected_operands();
  EXPECT_EQ(dims(o.find("dweight")), (std::vector<int64_t>{128256, 4096}));
  EXPECT_TRUE(o.find("dweight")->fixed_strides);
  EXPECT_EQ(o.find("dinput")->alignment, 16);
  EXPECT_EQ(dims(o.find("dbias")), (std::vector<int64_t>{128256}));
  EXPECT_TRUE(dims(o.find("loss")).empty());
  EXPECT_EQ(o.find("lse")->dtype, DType::f32);
  EXPECT_EQ(p->sku().variant, "chunk1024");
  d.compute_grad = false;
  auto l = FusedLinearCrossEntropyPlan::select(d, hopper());
  ASSERT_TRUE(l);
  EXPECT_EQ(l->expected_operands().find("dinput"), nullptr);
  d = flce(DType::f32, 100, 64, 1000);
  d.chunk_tokens = 32;
  EXPECT_EQ(FusedLinearCrossEntropyPlan::select(d, hopper())->chunk_tokens(), 32);
  d.chunk_tokens = 4096;  // at most the tokens
  EXPECT_EQ(FusedLinearCrossEntropyPlan::select(d, hopper())->chunk_tokens(), 100);
  PlanPreference small = hopper();
  small.max_workspace_bytes = size_t{64} << 20;  // the chosen chunk shrinks to the budget
  auto s = FusedLinearCrossEntropyPlan::select(flce(DType::bf16, 8192, 4096, 128256), small);
  ASSERT_TRUE(s) << s.status().message();
  EXPECT_LE(s->workspace_size(), small.max_workspace_bytes);
  EXPECT_EQ(FusedLinearCrossEntropyBackwardPlan::select(flce(DType::bf16, 8, 16, 32), hopper())->expected_operands().find("dinput")->role,
            OperandRole::kInOut);
}

TEST(FusedLinearCrossEntropyPlan, RefusalsNameTheField) {
  auto refused = [](const FusedLinearCrossEntropyDescriptor& d, StatusCode code, const char* what) {
    auto p = FusedLinearCrossEntropyPlan::select(d, hopper());
    ASSERT_FALSE(p) << what;
    expect_error(p.status(), code, what);
  };
  FusedLinearCrossEntropyDescriptor d = flce(DType::bf16, 16, 32, 100);
  d.reduction = LossReduction::kNone;
  refused(d, StatusCode::kUnsupported, "reduction none");
  d = flce(DType::bf16, 16, 32, 100);
  d.weight.dtype = DType::f32;
  refused(d, StatusCode::kInvalidProblem, "weight.dtype");
  d = flce(DType::bf16, 16, 32, 100);
  d.weight.shape[1] = 31;
  refused(d, StatusCode::kInvalidProblem, "weight.shape[1]");
  d = flce(DType::i32, 16, 32, 100);
  refused(d, StatusCode::kUnsupported, "input.dtype");
  d = flce(DType::f32, 16, 32, 100);
  d.chunk_tokens = -1;
  refused(d, StatusCode::kInvalidProblem, "chunk_tokens");
  d = flce(DType::f32, 16, 32, 0);
  refused(d, StatusCode::kInvalidProblem, "weight.shape[0]");
  d = flce(DType::f32, 16, 32, 100);
  d.label_smoothing = 1.5;
  refused(d, StatusCode::kInvalidProblem, "label_smoothing");
  d = flce(DType::f32, 16, 32, 100);
  d.input.rank = 3;
  refused(d, StatusCode::kInvalidProblem, "input must be");
  d = flce(DType::f32, 16, 32, 100);
  d.chunk_tokens = INT64_MAX / 2;  // chunk · V · 4 bytes past int64 (the chunk is capped at S first)
  EXPECT_TRUE(FusedLinearCrossEntropyPlan::select(d, hopper()));
  d = flce(DType::f32, 16, 32, 100);
  d.compute_grad = false;
  auto b = FusedLinearCrossEntropyBackwardPlan::select(d, hopper());
  ASSERT_FALSE(b);
  expect_error(b.status(), StatusCode::kInvalidProblem, "compute_grad");
}

// ---------------------------------------------------------------- row losses

TEST(RowLossPlan, OperandsByOpAndRefusals) {
  RowLossDescriptor d;
  d.op = RowLossKind::kTripletMargin;
  d.shape[0] = 8, d.shape[1] = 64;
  auto p = RowLossPlan::select(d, hopper());
  ASSERT_TRUE(p) << p.status().message();
  const OperandSpecs& o = p->expected_operands();
  EXPECT_NE(o.find("anchor"), nullptr);
  EXPECT_NE(o.find("negative"), nullptr);
  EXPECT_EQ(o.find("target"), nullptr);
  EXPECT_GE(p->workspace_size(), size_t{8} * 4);
  auto b = RowLossBackwardPlan::select(d, hopper());
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->expected_operands().find("dpositive")->optional);
  d.op = RowLossKind::kCosineEmbedding;
  d.reduction = LossReduction::kNone;
  auto c = RowLossPlan::select(d, hopper());
  ASSERT_TRUE(c);
  EXPECT_EQ(dims(c->expected_operands().find("target")), (std::vector<int64_t>{8}));
  EXPECT_EQ(dims(c->expected_operands().find("loss")), (std::vector<int64_t>{8}));
  EXPECT_EQ(c->workspace_size(), 0u);
  d.op = RowLossKind::kMultilabelSoftMargin;
  d.weight = true;
  d.shape[1] = 5000;
  auto m = RowLossPlan::select(d, hopper());
  ASSERT_TRUE(m);
  EXPECT_EQ(dims(m->expected_operands().find("weight")), (std::vector<int64_t>{5000}));
  EXPECT_EQ(m->sku().variant, "block_rows");
  auto refused = [](const RowLossDescriptor& r, StatusCode code, const char* what) {
    auto q = RowLossPlan::select(r, hopper());
    ASSERT_FALSE(q) << what;
    expect_error(q.status(), code, what);
  };
  RowLossDescriptor r;
  r.shape[0] = 4, r.shape[1] = 3;
  r.op = RowLossKind::kCosineEmbedding;
  r.weight = true;
  refused(r, StatusCode::kInvalidProblem, "weight is multilabel_soft_margin's");
  r.weight = false;
  r.rank = 3;
  refused(r, StatusCode::kInvalidProblem, "rank = 3");
  r.rank = 2;
  r.op = RowLossKind::kTripletMargin;
  r.p = INFINITY;
  refused(r, StatusCode::kUnsupported, "p = inf");
  r.p = 2;
  r.reduction = LossReduction::kBatchMean;
  refused(r, StatusCode::kInvalidProblem, "batchmean");
}
