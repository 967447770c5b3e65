// Host tier for ChannelNormPlan / ChannelNormBackwardPlan (batch / group / instance norm):
// select()'s operands, roles and shapes per op, the refusals naming their field, and the float64
// reference (reference/softmax_norm_loss_ref.cpp's channel_norm) against hand-computed cases,
// PyTorch's running-stat update and central finite differences of every gradient. The kernels'
// numerics are the device tier's (contract suite over bench/problems/ci/channel_norm.txt).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "baracuda/ops/channel_norm.hpp"
#include "host/host_test_util.hpp"
#include "softmax_norm_loss_ref.hpp"

using namespace baracuda;
using baracuda::test::expect_error;
using baracuda::test::hopper;

namespace {

ChannelNormDescriptor desc(ChannelNormKind op, DType dt, std::vector<int64_t> shape) {
  ChannelNormDescriptor d;
  d.op = op;
  d.dtype = dt;
  d.rank = static_cast<int>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) d.shape[i] = shape[i];
  return d;
}

template <class R>
void refused(const R& r, StatusCode code, const std::string& needle) {
  ASSERT_FALSE(r);
  expect_error(r.status(), code, needle);
}
constexpr StatusCode kBad = StatusCode::kInvalidProblem, kUns = StatusCode::kUnsupported;

std::vector<int64_t> dims(const OperandSpec* s) { return {s->shape, s->shape + s->rank}; }

}  // namespace

TEST(ChannelNormPlan, OperandsPerOp) {
  ChannelNormDescriptor d = desc(ChannelNormKind::kBatchNorm, DType::bf16, {8, 16, 4, 4});
  d.param_dtype = DType::f32;
  d.running_stats = true;
  auto p = ChannelNormPlan::select(d, hopper());
  ASSERT_TRUE(p) << p.status().message();
  const OperandSpecs& o = p->expected_operands();
  EXPECT_EQ(o.find("running_mean")->role, OperandRole::kInOut);
  EXPECT_EQ(o.find("running_var")->dtype, DType::f32);
  EXPECT_EQ(dims(o.find("mean")), (std::vector<int64_t>{16}));
  EXPECT_EQ(o.find("rstd")->dtype, DType::f32);
  EXPECT_EQ(o.find("y")->dtype, DType::bf16);
  d.training = false;  // eval: the running stats are only read
  EXPECT_EQ(ChannelNormPlan::select(d, hopper())->expected_operands().find("running_var")->role, OperandRole::kIn);
  d = desc(ChannelNormKind::kGroupNorm, DType::f32, {2, 12, 5});
  d.groups = 3;
  d.bias = false;
  auto g = ChannelNormPlan::select(d, hopper());
  ASSERT_TRUE(g) << g.status().message();
  EXPECT_EQ(dims(g->expected_operands().find("rstd")), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(g->expected_operands().find("bias"), nullptr);
  EXPECT_GT(g->workspace_size(), 0u);
  auto gb = ChannelNormBackwardPlan::select(d, hopper());
  ASSERT_TRUE(gb);
  EXPECT_NE(gb->expected_operands().find("dweight"), nullptr);
  EXPECT_EQ(gb->expected_operands().find("dbias"), nullptr);
  d = desc(ChannelNormKind::kInstanceNorm, DType::f64, {3, 5, 17});
  auto i = ChannelNormPlan::select(d, hopper());
  ASSERT_TRUE(i);
  EXPECT_EQ(dims(i->expected_operands().find("mean")), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(i->expected_operands().find("mean")->dtype, DType::f64);
}

TEST(ChannelNormPlan, RefusalsNameTheField) {
  auto fwd = [](const ChannelNormDescriptor& d) { return ChannelNormPlan::select(d, hopper()); };
  refused(fwd(desc(ChannelNormKind::kBatchNorm, DType::f32, {4})), kBad, "rank");
  refused(fwd(desc(ChannelNormKind::kBatchNorm, DType::i32, {4, 5})), kUns, "dtype i32");
  ChannelNormDescriptor d = desc(ChannelNormKind::kGroupNorm, DType::f32, {2, 12, 5});
  d.groups = 5;
  refused(fwd(d), kBad, "groups = 5");
  d.groups = 0;
  refused(fwd(d), kBad, "groups = 0");
  d.groups = 3;
  d.running_stats = true;
  refused(fwd(d), kBad, "running stats");
  d = desc(ChannelNormKind::kBatchNorm, DType::f32, {4, 5});
  d.training = false;
  refused(fwd(d), kBad, "running_stats");
  d = desc(ChannelNormKind::kBatchNorm, DType::f32, {1, 5});  // one value per channel
  d.running_stats = true;
  refused(fwd(d), kBad, "more than 1 value per channel");
  d = desc(ChannelNormKind::kBatchNorm, DType::f16, {4, 5});
  d.param_dtype = DType::bf16;
  refused(fwd(d), kUns, "param_dtype bf16");
  d = desc(ChannelNormKind::kBatchNorm, DType::f32, {4, 5});
  d.eps = -1;
  refused(fwd(d), kBad, "eps");
  d = desc(ChannelNormKind::kBatchNorm, DType::f32, {4, 5, 0});
  refused(fwd(d), kBad, "no element");
  // an empty x (C = 0) whose spatial extents overflow S (UBSan under the fuzzer: 4 · INT64_MAX)
  refused(fwd(desc(ChannelNormKind::kBatchNorm, DType::f32, {5, 0, INT64_MAX, 4})), kBad, "exceed int64");
  refused(fwd(desc(ChannelNormKind::kGroupNorm, DType::f32, {0, int64_t{1} << 40, int64_t{1} << 40})), kBad, "shape");
}

TEST(ChannelNormReference, HandComputedAndRunningStats) {
  // batch_norm over [2, 1, 2]: the channel's values {1, 3, 5, 7}: mean 4, var 5
  const std::vector<double> x = {1, 3, 5, 7};
  const ref::ChannelNormOut o = ref::channel_norm(ref::ChannelStats::kBatch, x, 2, 1, 2, 1, {2.0}, {0.5}, {1.0}, {1.0}, true, 0.1, 0.0);
  EXPECT_DOUBLE_EQ(o.mean[0], 4.0);
  EXPECT_NEAR(o.rstd[0], 1 / std::sqrt(5.0), 1e-15);
  EXPECT_NEAR(o.y[0], (1 - 4) / std::sqrt(5.0) * 2 + 0.5, 1e-14);
  EXPECT_NEAR(o.running_mean[0], 0.9 * 1 + 0.1 * 4, 1e-15);
  EXPECT_NEAR(o.running_var[0], 0.9 * 1 + 0.1 * 20.0 / 3, 1e-15);  // unbiased: 20 / 3
  // instance_norm: running stats averaged over the batch of per-instance statistics
  const ref::ChannelNormOut in = ref::channel_norm(ref::ChannelStats::kInstance, x, 2, 1, 2, 1, {}, {}, {0.0}, {0.0}, true, 1.0, 0.0);
  EXPECT_DOUBLE_EQ(in.running_mean[0], (2.0 + 6.0) / 2);
  EXPECT_DOUBLE_EQ(in.running_var[0], 2.0);  // each instance's unbiased var of {a, a + 2}
  // eval: the running stats
  const ref::ChannelNormOut ev = ref::channel_norm(ref::ChannelStats::kBatch, x, 2, 1, 2, 1, {}, {}, {4.0}, {4.0}, false, 0.1, 0.0);
  EXPECT_DOUBLE_EQ(ev.y[3], 1.5);
}

TEST(ChannelNormReference, GradientsMatchFiniteDifferences) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-2, 2);
  const int64_t N = 2, C = 4, S = 3;
  for (ref::ChannelStats kind : {ref::ChannelStats::kBatch, ref::ChannelStats::kGroup, ref::ChannelStats::kInstance})
    for (bool training : {true, false}) {
      if (!training && kind == ref::ChannelStats::kGroup) continue;
      const int64_t G = kind == ref::ChannelStats::kGroup ? 2 : 1;
      std::vector<double> x(static_cast<size_t>(N * C * S)), dy(x.size()), w(4), b(4), rm(4), rv(4);
      for (double& v : x) v = u(rng);
      for (double& v : dy) v = u(rng);
      for (double& v : w) v = u(rng);
      for (double& v : b) v = u(rng);
      for (double& v : rm) v = u(rng);
      for (double& v : rv) v = 1 + std::fabs(u(rng));
      auto loss = [&](const std::vector<double>& xx, const std::vector<double>& ww, const std::vector<double>& bb) {
        const auto o = ref::channel_norm(kind, xx, N, C, S, G, ww, bb, training ? std::vector<double>{} : rm,
                                         training ? std::vector<double>{} : rv, training, 0.1, 1e-5);
        double s = 0;
        for (size_t i = 0; i < dy.size(); ++i) s += o.y[i] * dy[i];
        return s;
      };
      const auto o = ref::channel_norm(kind, x, N, C, S, G, w, b, training ? std::vector<double>{} : rm, training ? std::vector<double>{} : rv,
                                       training, 0.1, 1e-5);
      const auto g = ref::channel_norm_backward(kind, x, N, C, S, G, w, o.mean, o.rstd, dy, training);
      const double h = 1e-6;
      for (size_t i = 0; i < x.size(); ++i) {
        auto xp = x, xm = x;
        xp[i] += h, xm[i] -= h;
        EXPECT_NEAR(g.dx[i], (loss(xp, w, b) - loss(xm, w, b)) / (2 * h), 1e-6) << "dx " << i << " kind " << static_cast<int>(kind);
      }
      for (size_t k = 0; k < w.size(); ++k) {
        auto wp = w, wm = w, bp = b, bm = b;
        wp[k] += h, wm[k] -= h, bp[k] += h, bm[k] -= h;
        EXPECT_NEAR(g.dw[k], (loss(x, wp, b) - loss(x, wm, b)) / (2 * h), 1e-6) << "dw " << k;
        EXPECT_NEAR(g.db[k], (loss(x, w, bp) - loss(x, w, bm)) / (2 * h), 1e-6) << "db " << k;
      }
    }
}
