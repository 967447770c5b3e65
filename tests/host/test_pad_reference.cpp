// Host tier: the float64 pad reference against hand-computed cases, the adjoint identity
// <pad(x), dy> = <x, pad_backward(dy)> for every mode, and central finite differences.
#include <gtest/gtest.h>

#include <random>

#include "pad_ref.hpp"

using namespace baracuda;

namespace {

PadDescriptor desc1d(PadMode mode, int64_t n, int64_t lo, int64_t hi, double value = 0) {
  return *PadDescriptor::torch_style(DType::f64, {n}, {lo, hi}, mode, value);
}

std::vector<double> iota1(int64_t n) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>(i + 1);
  return v;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace

TEST(PadReference, HandComputed1D) {
  const auto x = iota1(4);  // [1 2 3 4]
  EXPECT_EQ(ref::pad_forward(desc1d(PadMode::kReflect, 4, 2, 1), x), (std::vector<double>{3, 2, 1, 2, 3, 4, 3}));
  EXPECT_EQ(ref::pad_forward(desc1d(PadMode::kReplicate, 4, 2, 1), x), (std::vector<double>{1, 1, 1, 2, 3, 4, 4}));
  EXPECT_EQ(ref::pad_forward(desc1d(PadMode::kCircular, 4, 2, 1), x), (std::vector<double>{3, 4, 1, 2, 3, 4, 1}));
  EXPECT_EQ(ref::pad_forward(desc1d(PadMode::kCircular, 4, 4, 4), x),
            (std::vector<double>{1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4}));
  EXPECT_EQ(ref::pad_forward(desc1d(PadMode::kConstant, 4, 2, 1, 9), x), (std::vector<double>{9, 9, 1, 2, 3, 4, 9}));
  EXPECT_EQ(ref::pad_forward(desc1d(PadMode::kConstant, 4, -1, 1, 9), x), (std::vector<double>{2, 3, 4, 9}));
  EXPECT_EQ(ref::pad_forward(desc1d(PadMode::kConstant, 4, -4, 2, 7), x), (std::vector<double>{7, 7}));
  EXPECT_EQ(ref::pad_forward(desc1d(PadMode::kReflect, 4, 3, 3), x),
            (std::vector<double>{4, 3, 2, 1, 2, 3, 4, 3, 2, 1}));
  EXPECT_EQ(ref::pad_forward(desc1d(PadMode::kReflect, 4, -1, 2), x), (std::vector<double>{2, 3, 4, 3, 2}));
  EXPECT_EQ(ref::pad_forward(desc1d(PadMode::kReplicate, 4, -2, 1), x), (std::vector<double>{3, 4, 4}));
  // backward: each input collects the cells that came from it
  const std::vector<double> ones(7, 1.0);
  EXPECT_EQ(ref::pad_backward(desc1d(PadMode::kReflect, 4, 2, 1), ones), (std::vector<double>{1, 2, 3, 1}));
  EXPECT_EQ(ref::pad_backward(desc1d(PadMode::kReplicate, 4, 2, 1), ones), (std::vector<double>{3, 1, 1, 2}));
  EXPECT_EQ(ref::pad_backward(desc1d(PadMode::kCircular, 4, 2, 1), ones), (std::vector<double>{2, 1, 2, 2}));
  EXPECT_EQ(ref::pad_backward(desc1d(PadMode::kConstant, 4, 2, 1), ones), (std::vector<double>{1, 1, 1, 1}));
}

TEST(PadReference, HandComputed2D) {
  // x = [[1 2 3], [4 5 6]], reflect (1, 1) on the last axis, replicate is not mixed: one mode
  auto d = *PadDescriptor::torch_style(DType::f64, {2, 3}, {1, 1, 1, 0}, PadMode::kReflect);
  const std::vector<double> x{1, 2, 3, 4, 5, 6};
  EXPECT_EQ(ref::out_shape(d), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(ref::pad_forward(d, x), (std::vector<double>{5, 4, 5, 6, 5, 2, 1, 2, 3, 2, 5, 4, 5, 6, 5}));
  auto c = *PadDescriptor::torch_style(DType::f64, {2, 3}, {0, 1, 1, 0}, PadMode::kConstant, -1.0);
  EXPECT_EQ(ref::pad_forward(c, x), (std::vector<double>{-1, -1, -1, -1, 1, 2, 3, -1, 4, 5, 6, -1}));
}

TEST(PadReference, AdjointIdentityEveryMode) {
  std::mt19937_64 rng(1234);
  std::uniform_real_distribution<double> u(-1, 1);
  struct Case {
    PadMode mode;
    std::vector<int64_t> shape, pads;
  };
  const std::vector<Case> cases = {
      {PadMode::kConstant, {5}, {2, 3}},           {PadMode::kConstant, {3, 4, 5}, {-1, 2, 0, 0, 1, -2}},
      {PadMode::kReflect, {7}, {6, 6}},            {PadMode::kReflect, {2, 3, 4, 5}, {3, 4, 2, 1, 1, 2}},
      {PadMode::kReflect, {6, 5}, {-2, 3, 4, -1}}, {PadMode::kReplicate, {4}, {9, 11}},
      {PadMode::kReplicate, {3, 2, 5}, {3, 1, 0, 4, 2, 2}}, {PadMode::kReplicate, {5, 5}, {-2, 3, 2, -3}},
      {PadMode::kCircular, {6}, {6, 6}},           {PadMode::kCircular, {2, 3, 4}, {4, 1, 3, 3, 0, 2}},
      {PadMode::kCircular, {5, 4}, {-3, 2, 2, -1}}, {PadMode::kReflect, {1, 1, 3, 1, 2, 1, 2, 3}, {1, 1, 0, 0, 0, 0, 1, 1}},
  };
  for (const auto& c : cases) {
    auto d = PadDescriptor::torch_style(DType::f64, c.shape, c.pads, c.mode);
    ASSERT_TRUE(d.ok());
    const int64_t nin = ref::numel(d->in_shape, d->rank);
    const auto os = ref::out_shape(*d);
    const int64_t nout = ref::numel(os.data(), d->rank);
    std::vector<double> x(nin), dy(nout);
    for (auto& v : x) v = u(rng);
    for (auto& v : dy) v = u(rng);
    ASSERT_GT(dot(x, x), 0.0);
    const double lhs = dot(ref::pad_forward(*d, x), dy);
    const double rhs = dot(x, ref::pad_backward(*d, dy));
    EXPECT_NEAR(lhs, rhs, 1e-12 * (1 + std::abs(lhs))) << enum_name(c.mode);
  }
}

TEST(PadReference, BackwardMatchesCentralFiniteDifferences) {
  // L(x) = <pad(x), w>; dL/dx = pad_backward(w). Pad is linear, so the difference is exact up
  // to rounding — the check guards the reference's indexing, not its arithmetic.
  std::mt19937_64 rng(99);
  std::uniform_real_distribution<double> u(-1, 1);
  for (PadMode mode : {PadMode::kConstant, PadMode::kReflect, PadMode::kReplicate, PadMode::kCircular}) {
    auto d = *PadDescriptor::torch_style(DType::f64, {3, 4, 5}, {2, 3, 3, 1}, mode);
    const int64_t nin = ref::numel(d.in_shape, d.rank);
    const auto os = ref::out_shape(d);
    std::vector<double> x(nin), w(ref::numel(os.data(), d.rank));
    for (auto& v : x) v = u(rng);
    for (auto& v : w) v = u(rng);
    const auto grad = ref::pad_backward(d, w);
    const double eps = 1e-6;
    for (int64_t i = 0; i < nin; ++i) {
      auto xp = x, xm = x;
      xp[i] += eps;
      xm[i] -= eps;
      const double fd = (dot(ref::pad_forward(d, xp), w) - dot(ref::pad_forward(d, xm), w)) / (2 * eps);
      EXPECT_NEAR(grad[i], fd, 1e-5 + 1e-3 * std::abs(fd)) << enum_name(mode) << " i=" << i;
    }
  }
}
