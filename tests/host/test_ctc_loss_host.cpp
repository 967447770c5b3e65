// Host tier for CtcLossPlan / CtcLossBackwardPlan: the operands of padded, concatenated and
// unbatched targets, the workspace (α rows per sample by direction), and the refusals, each naming
// its field. The kernel's numerics are the device tier's (contract suite over the ctc_loss rows
// of bench/problems/ci/loss.txt against reference/softmax_norm_loss_ref.cpp's ctc_loss_sample).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "baracuda/ops/ctc_loss.hpp"
#include "host/host_test_util.hpp"

using namespace baracuda;
using baracuda::test::expect_error;
using baracuda::test::hopper;

namespace {

CtcLossDescriptor desc(int64_t T, int64_t N, int64_t C, int64_t S) {
  CtcLossDescriptor d;
  d.T = T, d.N = N, d.C = C, d.max_target_length = S;
  return d;
}

std::vector<int64_t> dims(const OperandSpec* o) { return std::vector<int64_t>(o->dims().begin(), o->dims().end()); }

}  // namespace

TEST(CtcLossPlan, OperandsAndWorkspace) {
  auto p = CtcLossPlan::select(desc(50, 4, 20, 10), hopper());
  ASSERT_TRUE(p) << p.status().message();
  const OperandSpecs& o = p->expected_operands();
  EXPECT_EQ(dims(o.find("log_probs")), (std::vector<int64_t>{50, 4, 20}));
  EXPECT_EQ(dims(o.find("targets")), (std::vector<int64_t>{4, 10}));
  EXPECT_EQ(dims(o.find("input_lengths")), (std::vector<int64_t>{4}));
  EXPECT_EQ(o.find("targets")->dtype, DType::i64);
  EXPECT_TRUE(dims(o.find("loss")).empty());  // mean: a scalar
  // forward: 6 int arrays + 2 α rows of 21 per sample, then 4 partials
  EXPECT_GE(p->workspace_size(), size_t{4} * 6 * 21 * 4 + size_t{4} * 2 * 21 * 4 + 4 * 4);
  auto b = CtcLossBackwardPlan::select(desc(50, 4, 20, 10), hopper());
  ASSERT_TRUE(b);
  EXPECT_GE(b->workspace_size(), size_t{4} * 55 * 21 * 4);  // every step's α and 5 scratch rows
  EXPECT_EQ(dims(b->expected_operands().find("dlog_probs")), (std::vector<int64_t>{50, 4, 20}));
  CtcLossDescriptor c = desc(30, 3, 9, 5);
  c.concatenated = true, c.total_target_length = 12, c.reduction = LossReduction::kNone, c.index_dtype = DType::i32;
  auto pc = CtcLossPlan::select(c, hopper());
  ASSERT_TRUE(pc) << pc.status().message();
  EXPECT_EQ(dims(pc->expected_operands().find("targets")), (std::vector<int64_t>{12}));
  EXPECT_EQ(dims(pc->expected_operands().find("loss")), (std::vector<int64_t>{3}));
  CtcLossDescriptor u = desc(30, 1, 9, 5);
  u.batched = false, u.reduction = LossReduction::kNone;
  auto pu = CtcLossPlan::select(u, hopper());
  ASSERT_TRUE(pu) << pu.status().message();
  EXPECT_EQ(dims(pu->expected_operands().find("log_probs")), (std::vector<int64_t>{30, 9}));
  EXPECT_EQ(dims(pu->expected_operands().find("targets")), (std::vector<int64_t>{5}));
  EXPECT_TRUE(dims(pu->expected_operands().find("input_lengths")).empty());
  EXPECT_TRUE(dims(pu->expected_operands().find("loss")).empty());
}

TEST(CtcLossPlan, RefusalsNameTheField) {
  auto refused = [](const CtcLossDescriptor& d, StatusCode code, const char* what) {
    auto p = CtcLossPlan::select(d, hopper());
    ASSERT_FALSE(p) << what;
    expect_error(p.status(), code, what);
  };
  CtcLossDescriptor d = desc(10, 2, 5, 3);
  d.blank = 5;
  refused(d, StatusCode::kInvalidProblem, "blank = 5");
  refused(desc(10, 2, 0, 3), StatusCode::kInvalidProblem, "C = 0");
  refused(desc(-1, 2, 5, 3), StatusCode::kInvalidProblem, "T = -1");
  d = desc(10, 2, 5, 3);
  d.batched = false;
  refused(d, StatusCode::kInvalidProblem, "N = 2 unbatched");
  d = desc(10, 2, 5, 3);
  d.index_dtype = DType::f32;
  refused(d, StatusCode::kUnsupported, "index_dtype");
  d = desc(10, 2, 5, 3);
  d.reduction = LossReduction::kBatchMean;
  refused(d, StatusCode::kInvalidProblem, "batchmean");
  d = desc(10, 2, 5, 3);
  d.total_target_length = 4;
  refused(d, StatusCode::kInvalidProblem, "total_target_length");
  refused(desc(10, 2, 5, int64_t{1} << 40), StatusCode::kUnsupported, "max_target_length");
  // repro (fuzzer under UBSan): T = INT64_MAX with N = 0 (an empty log_probs) made 2T overflow
  auto huge = CtcLossBackwardPlan::select(desc(INT64_MAX, 0, 5, 3), hopper());
  ASSERT_FALSE(huge);
  expect_error(huge.status(), StatusCode::kInvalidProblem, "workspace");
  // the backward's α of every step overflows the workspace's size: refused, not wrapped
  auto b = CtcLossBackwardPlan::select(desc(int64_t{1} << 40, 1 << 20, 2, (1 << 29)), hopper());
  ASSERT_FALSE(b);
}
