// Host tier: the float64 softmax / norm / loss row references (reference/softmax_norm_loss_ref)
// against hand-computed cases, PyTorch's special values, and every backward against central
// finite differences of its forward.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "softmax_norm_loss_ref.hpp"

using namespace baracuda;

namespace {

std::vector<double> random_row(std::mt19937_64& rng, size_t n, double lo = -3, double hi = 3) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (double& e : v) e = u(rng);
  return v;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// d/dx_i of f(x) by central differences, for every i.
std::vector<double> numeric_grad(const std::function<double(const std::vector<double>&)>& f, std::vector<double> x, double h = 1e-6) {
  std::vector<double> g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double x0 = x[i];
    x[i] = x0 + h;
    const double fp = f(x);
    x[i] = x0 - h;
    const double fm = f(x);
    x[i] = x0;
    g[i] = (fp - fm) / (2 * h);
  }
  return g;
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

}  // namespace

TEST(SoftmaxNormLossReference, SoftmaxHandComputedAndSpecials) {
  const auto y = ref::softmax_row({0.0, std::log(3.0)}, false);  // e^0 : e^log3 = 1 : 3
  EXPECT_NEAR(y[0], 0.25, 1e-15);
  EXPECT_NEAR(y[1], 0.75, 1e-15);
  const auto ly = ref::softmax_row({0.0, std::log(3.0)}, true);
  EXPECT_NEAR(ly[0], std::log(0.25), 1e-15);
  // shift invariance: large inputs do not overflow
  const auto big = ref::softmax_row({1000.0, 1000.0 + std::log(3.0)}, false);
  EXPECT_NEAR(big[1], 0.75, 1e-12);
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  // a masked element (-inf) gets 0; a fully masked row is NaN everywhere (PyTorch); NaN spreads
  EXPECT_EQ(ref::softmax_row({-inf, 0.0}, false)[0], 0.0);
  for (double v : ref::softmax_row({-inf, -inf}, false)) EXPECT_TRUE(std::isnan(v));
  for (double v : ref::softmax_row({1.0, nan, 2.0}, true)) EXPECT_TRUE(std::isnan(v));
  for (double v : ref::softmax_row({1.0, inf}, false)) EXPECT_TRUE(std::isnan(v));
}

TEST(SoftmaxNormLossReference, SoftmaxBackwardMatchesFiniteDifferences) {
  std::mt19937_64 rng(7);
  for (bool log : {false, true}) {
    const auto x = random_row(rng, 9), dy = random_row(rng, 9);
    const auto y = ref::softmax_row(x, log);
    const auto dx = ref::softmax_backward_row(y, dy, log);
    const auto num = numeric_grad([&](const std::vector<double>& v) { return dot(ref::softmax_row(v, log), dy); }, x);
    expect_near_all(dx, num, 1e-8);
  }
}

TEST(SoftmaxNormLossReference, MaskedSoftmaxRowsAndGradients) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  // keep mask: removed entries are -inf (a NaN under them dropped, as masked_fill), kept ones as softmax
  ref::LineMask keep;
  keep.kind = ref::MaskKind::kKeep;
  keep.values = {1, 0, 1};
  const auto y = ref::masked_softmax_row({0.0, nan, std::log(3.0)}, keep, false);
  EXPECT_NEAR(y[0], 0.25, 1e-15);
  EXPECT_EQ(y[1], 0.0);
  EXPECT_NEAR(y[2], 0.75, 1e-15);
  // causal: line q = 1 with diagonal 0 keeps entries 0 and 1; diagonal -2 keeps none: NaN, or
  // with zero_rows 0 (log: -inf)
  ref::LineMask causal;
  causal.causal = true;
  causal.q = 1;
  const auto c = ref::masked_softmax_row({0.0, 0.0, 5.0}, causal, false);
  EXPECT_NEAR(c[0], 0.5, 1e-15);
  EXPECT_EQ(c[2], 0.0);
  causal.diagonal = -2;
  for (double v : ref::masked_softmax_row({1.0, 2.0, 3.0}, causal, false)) EXPECT_TRUE(std::isnan(v));
  causal.zero_rows = true;
  for (double v : ref::masked_softmax_row({1.0, 2.0, 3.0}, causal, true)) EXPECT_EQ(v, -inf);
  causal.diagonal = INT64_MAX;  // q + diagonal past int64: nothing removed
  EXPECT_FALSE(causal.removed(2));
  // additive: x + mask
  ref::LineMask add;
  add.kind = ref::MaskKind::kAdd;
  add.values = {std::log(3.0), 0.0};
  EXPECT_NEAR(ref::masked_softmax_row({0.0, 0.0}, add, false)[0], 0.75, 1e-15);
  // gradients: finite differences of the masked forward (softmax; log_softmax's removed entries
  // are -inf, their differences undefined), zero where removed
  std::mt19937_64 rng(11);
  ref::LineMask m;
  m.kind = ref::MaskKind::kKeep;
  m.values = {1, 0, 1, 1, 0, 1, 1, 1, 0};
  m.causal = true;
  m.q = 3;
  m.diagonal = 3;
  const auto x = random_row(rng, 9), dy = random_row(rng, 9);
  const auto dx = ref::masked_softmax_backward_row(ref::masked_softmax_row(x, m, false), dy, m, false);
  const auto num = numeric_grad([&](const std::vector<double>& v) { return dot(ref::masked_softmax_row(v, m, false), dy); }, x);
  expect_near_all(dx, num, 1e-8);
  EXPECT_EQ(dx[7], 0.0);  // past q + diagonal
  // log_softmax: the kept entries' gradient by differences, removed ones 0. PyTorch's formula
  // dx = dy - p·Σdy sums dy over every entry: a removed entry's y is -inf - lse, whose derivative
  // is -p (its dy weighs lse), so the differenced function is Σ_kept dy·y - lse·Σ_removed dy.
  const auto ly = ref::masked_softmax_row(x, m, true);
  const auto ldx = ref::masked_softmax_backward_row(ly, dy, m, true);
  for (size_t i = 0; i < x.size(); ++i) {
    if (m.removed(i)) {
      EXPECT_EQ(ldx[i], 0.0) << i;
      continue;
    }
    auto f = [&](double h) {
      std::vector<double> v = x;
      v[i] += h;
      const auto r = ref::masked_softmax_row(v, m, true);
      double s = 0, lse = 0, removed_dy = 0;
      for (size_t k = 0; k < r.size(); ++k) {
        if (m.removed(k)) removed_dy += dy[k];
        else s += r[k] * dy[k], lse = v[k] - r[k];
      }
      return s - lse * removed_dy;
    };
    double want = (f(1e-6) - f(-1e-6)) / 2e-6;
    EXPECT_NEAR(ldx[i], want, 1e-7) << i;
  }
}

TEST(SoftmaxNormLossReference, LayerNormForwardAndBackward) {
  // a constant row normalizes to 0: y = b
  const auto c = ref::layer_norm_row({2.0, 2.0, 2.0}, {}, {0.5, -1.0, 3.0}, 1e-5);
  expect_near_all(c.y, {0.5, -1.0, 3.0}, 1e-12);
  EXPECT_NEAR(c.rstd, 1 / std::sqrt(1e-5), 1e-6);
  // [1, 3]: mean 2, biased variance 1
  const auto h = ref::layer_norm_row({1.0, 3.0}, {}, {}, 0.0);
  expect_near_all(h.y, {-1.0, 1.0}, 1e-15);
  std::mt19937_64 rng(11);
  const size_t n = 12;
  const auto x = random_row(rng, n), w = random_row(rng, n, 0.5, 2), b = random_row(rng, n), dy = random_row(rng, n);
  const double eps = 1e-3;
  const auto f = ref::layer_norm_row(x, w, b, eps);
  std::vector<double> dw(n, 0.0), db(n, 0.0);
  const auto dx = ref::layer_norm_backward_row(x, w, dy, f.mean, f.rstd, &dw, &db);
  expect_near_all(dx, numeric_grad([&](const std::vector<double>& v) { return dot(ref::layer_norm_row(v, w, b, eps).y, dy); }, x), 1e-7);
  expect_near_all(dw, numeric_grad([&](const std::vector<double>& v) { return dot(ref::layer_norm_row(x, v, b, eps).y, dy); }, w), 1e-7);
  expect_near_all(db, numeric_grad([&](const std::vector<double>& v) { return dot(ref::layer_norm_row(x, w, v, eps).y, dy); }, b), 1e-7);
}

TEST(SoftmaxNormLossReference, RmsNormForwardAndBackward) {
  const auto r = ref::rms_norm_row({3.0, 4.0}, {}, 0.0);  // rms = sqrt(12.5)
  expect_near_all(r.y, {3 / std::sqrt(12.5), 4 / std::sqrt(12.5)}, 1e-15);
  std::mt19937_64 rng(13);
  const size_t n = 10;
  const auto x = random_row(rng, n), w = random_row(rng, n, 0.5, 2), dy = random_row(rng, n);
  const double eps = 1e-4;
  const auto f = ref::rms_norm_row(x, w, eps);
  std::vector<double> dw(n, 0.0);
  const auto dx = ref::rms_norm_backward_row(x, w, dy, f.rstd, &dw);
  expect_near_all(dx, numeric_grad([&](const std::vector<double>& v) { return dot(ref::rms_norm_row(v, w, eps).y, dy); }, x), 1e-7);
  expect_near_all(dw, numeric_grad([&](const std::vector<double>& v) { return dot(ref::rms_norm_row(x, v, eps).y, dy); }, w), 1e-7);
}

TEST(SoftmaxNormLossReference, CrossEntropyDefinitionsAndSpecials) {
  const std::vector<std::vector<double>> logits = {{1.0, 2.0, 0.5}, {0.0, -1.0, 3.0}, {2.0, 2.0, 2.0}};
  const std::vector<int64_t> target = {1, 2, 0};
  // no weight, no smoothing: the mean of -log_softmax[t]
  double want = 0;
  for (size_t r = 0; r < 3; ++r) want -= ref::softmax_row(logits[r], true)[static_cast<size_t>(target[r])];
  EXPECT_NEAR(ref::cross_entropy(logits, target, {}, std::nullopt, 0.0, 1).loss[0], want / 3, 1e-15);
  EXPECT_NEAR(ref::cross_entropy(logits, target, {}, std::nullopt, 0.0, 2).loss[0], want, 1e-15);
  // a uniform row has loss log(C) whatever the smoothing
  EXPECT_NEAR(ref::cross_entropy({logits[2]}, {0}, {}, std::nullopt, 0.3, 0).loss[0], std::log(3.0), 1e-15);
  // an ignored row: 0 under none, left out of the mean's divisor; every row ignored: NaN mean
  const auto none = ref::cross_entropy(logits, {1, -100, 0}, {}, -100, 0.0, 0);
  EXPECT_EQ(none.loss[1], 0.0);
  EXPECT_NEAR(ref::cross_entropy(logits, {1, -100, 0}, {}, -100, 0.0, 1).loss[0], (none.loss[0] + none.loss[2]) / 2, 1e-15);
  EXPECT_TRUE(std::isnan(ref::cross_entropy(logits, {-100, -100, -100}, {}, -100, 0.0, 1).loss[0]));
  // class weights: the mean divides by the kept rows' target weights
  const std::vector<double> w = {0.5, 2.0, 1.5};
  const auto wn = ref::cross_entropy(logits, target, w, std::nullopt, 0.0, 0);
  EXPECT_NEAR(ref::cross_entropy(logits, target, w, std::nullopt, 0.0, 1).loss[0], (wn.loss[0] + wn.loss[1] + wn.loss[2]) / (2.0 + 1.5 + 0.5),
              1e-15);
}

TEST(SoftmaxNormLossReference, CrossEntropyBackwardMatchesFiniteDifferences) {
  std::mt19937_64 rng(17);
  const size_t rows = 4, classes = 6;
  std::vector<std::vector<double>> logits(rows);
  for (auto& r : logits) r = random_row(rng, classes);
  const std::vector<int64_t> target = {3, -1, 0, 5};
  const std::vector<double> w = random_row(rng, classes, 0.2, 2);
  for (int reduction : {0, 1, 2})
    for (double s : {0.0, 0.2}) {
      const std::vector<double> dloss = reduction == 0 ? random_row(rng, rows) : std::vector<double>{0.7};
      const auto dx = ref::cross_entropy_backward(logits, target, w, -1, s, reduction, dloss);
      for (size_t r = 0; r < rows; ++r) {
        auto f = [&](const std::vector<double>& v) {
          auto l = logits;
          l[r] = v;
          return dot(ref::cross_entropy(l, target, w, -1, s, reduction).loss, dloss);
        };
        expect_near_all(dx[r], numeric_grad(f, logits[r]), 1e-7);
      }
    }
}

// The per-sample rows beyond cross_entropy's: the probability target, nll_loss and the z-loss,
// each backward against finite differences of its forward; out-of-range targets give NaN.
TEST(SoftmaxNormLossReference, ClassLossRowsProbabilityNllZLoss) {
  std::mt19937_64 rng(23);
  const size_t C = 7;
  const auto x = random_row(rng, C), w = random_row(rng, C, 0.3, 2), prob = random_row(rng, C, 0.0, 1.0);
  const double g = 0.8;
  struct Form {
    int64_t t;
    std::vector<double> prob;
    double s, z;
    bool nll;
  };
  for (const Form& f : {Form{2, {}, 0.0, 0.0, false}, Form{4, {}, 0.15, 0.01, false}, Form{0, prob, 0.0, 0.0, false},
                        Form{0, prob, 0.25, 0.02, false}, Form{5, {}, 0.0, 0.0, true}}) {
    for (const std::vector<double>& wv : {std::vector<double>{}, w}) {
      const auto dx = ref::class_loss_backward_row(x, f.t, f.prob, wv, -100, f.s, f.z, f.nll, g);
      auto loss = [&](const std::vector<double>& v) { return g * ref::class_loss_row(v, f.t, f.prob, wv, -100, f.s, f.z, f.nll).loss; };
      expect_near_all(dx, numeric_grad(loss, x), 1e-7);
    }
  }
  // nll_loss is -w[t] · x[t]; the probability target with one-hot probabilities is the index form
  EXPECT_NEAR(ref::class_loss_row(x, 3, {}, w, std::nullopt, 0, 0, true).loss, -w[3] * x[3], 1e-15);
  std::vector<double> onehot(C, 0.0);
  onehot[3] = 1;
  EXPECT_NEAR(ref::class_loss_row(x, 0, onehot, {}, std::nullopt, 0.1, 0, false).loss, ref::class_loss_row(x, 3, {}, {}, std::nullopt, 0.1, 0, false).loss,
              1e-14);
  // the z-loss adds z · lse²
  const auto r = ref::class_loss_row(x, 3, {}, {}, std::nullopt, 0, 0.5, false);
  EXPECT_NEAR(r.loss - ref::class_loss_row(x, 3, {}, {}, std::nullopt, 0, 0, false).loss, 0.5 * r.lse * r.lse, 1e-14);
  // a target outside [0, C) that is not ignore_index: NaN, weight 0; ignore_index: 0, weight 0
  EXPECT_TRUE(std::isnan(ref::class_loss_row(x, static_cast<int64_t>(C), {}, {}, -100, 0, 0, false).loss));
  EXPECT_EQ(ref::class_loss_row(x, -100, {}, w, -100, 0.2, 0.1, false).loss, 0.0);
  EXPECT_EQ(ref::class_loss_row(x, -100, {}, w, -100, 0.2, 0.1, false).weight, 0.0);
}

// Every element-wise loss's derivatives against finite differences of its value, away from the
// kinks; hand values at a few points (PyTorch's).
TEST(SoftmaxNormLossReference, PointwiseLossGradientsMatchFiniteDifferences) {
  using ref::PwLoss;
  struct Case {
    PwLoss op;
    ref::PwElem e;
    ref::PwOptions o;
  };
  auto opt = [](PwLoss op) {
    ref::PwOptions o;
    o.op = op;
    o.margin = op == PwLoss::hinge_embedding ? 1.0 : 0.0;
    o.eps = op == PwLoss::poisson_nll ? 1e-8 : 1e-6;
    return o;
  };
  std::vector<Case> cases;
  for (PwLoss op : {PwLoss::mse, PwLoss::l1, PwLoss::smooth_l1, PwLoss::huber, PwLoss::soft_margin, PwLoss::hinge_embedding,
                    PwLoss::margin_ranking})
    for (double x : {-1.7, -0.3, 0.45, 2.2})
      cases.push_back({op, {x, 0.6, op >= PwLoss::soft_margin ? -1.0 : 0.7, 1, 1, 1}, opt(op)});
  cases.push_back({PwLoss::bce, {0.3, 0, 0.8, 1, 1.5, 1}, opt(PwLoss::bce)});
  cases.push_back({PwLoss::bce_with_logits, {-1.2, 0, 0.35, 1, 0.7, 2.5}, opt(PwLoss::bce_with_logits)});
  cases.push_back({PwLoss::bce_with_logits, {2.5, 0, 0.9, 1, 1, 1}, opt(PwLoss::bce_with_logits)});
  cases.push_back({PwLoss::kl_div, {-0.8, 0, 0.4, 1, 1, 1}, opt(PwLoss::kl_div)});
  ref::PwOptions lt = opt(PwLoss::kl_div);
  lt.log_target = true;
  cases.push_back({PwLoss::kl_div, {-0.8, 0, -1.1, 1, 1, 1}, lt});
  cases.push_back({PwLoss::poisson_nll, {0.6, 0, 2.5, 1, 1, 1}, opt(PwLoss::poisson_nll)});
  ref::PwOptions pf = opt(PwLoss::poisson_nll);
  pf.log_input = false, pf.full = true;
  cases.push_back({PwLoss::poisson_nll, {1.4, 0, 3.0, 1, 1, 1}, pf});
  ref::PwOptions gf = opt(PwLoss::gaussian_nll);
  gf.full = true;
  cases.push_back({PwLoss::gaussian_nll, {0.9, 0, -0.4, 0.7, 1, 1}, gf});
  for (const Case& c : cases) {
    const ref::PwGrad g = ref::pointwise_loss_grad(c.o, c.e);
    auto fd = [&](double ref::PwElem::*m) {
      ref::PwElem a = c.e, b = c.e;
      a.*m += 1e-6, b.*m -= 1e-6;
      return (ref::pointwise_loss(c.o, a) - ref::pointwise_loss(c.o, b)) / 2e-6;
    };
    const std::string what = std::to_string(static_cast<int>(c.op)) + " x=" + std::to_string(c.e.x);
    EXPECT_NEAR(g.dx, fd(&ref::PwElem::x), 1e-6) << what;
    if (c.op == PwLoss::margin_ranking) EXPECT_NEAR(g.dx2, fd(&ref::PwElem::x2), 1e-6) << what;
    if (c.op != PwLoss::bce && c.op != PwLoss::hinge_embedding) EXPECT_NEAR(g.dy, fd(&ref::PwElem::y), 1e-6) << what;
    if (c.op == PwLoss::gaussian_nll) EXPECT_NEAR(g.dv, fd(&ref::PwElem::v), 1e-6) << what;
  }
  // hand values: huber outside delta, smooth_l1 inside beta, bce's log clamp at -100, kl_div's 0 · log 0
  ref::PwOptions h = opt(PwLoss::huber);
  EXPECT_DOUBLE_EQ(ref::pointwise_loss(h, {3.0, 0, 0.5, 1, 1, 1}), 1.0 * (2.5 - 0.5));
  ref::PwOptions s = opt(PwLoss::smooth_l1);
  s.beta = 2;
  EXPECT_DOUBLE_EQ(ref::pointwise_loss(s, {1.0, 0, 0.0, 1, 1, 1}), 0.25);
  EXPECT_DOUBLE_EQ(ref::pointwise_loss(opt(PwLoss::bce), {0.0, 0, 1.0, 1, 1, 1}), 100.0);
  EXPECT_DOUBLE_EQ(ref::pointwise_loss(opt(PwLoss::kl_div), {-5.0, 0, 0.0, 1, 1, 1}), 0.0);
  EXPECT_EQ(ref::pointwise_loss_grad(opt(PwLoss::l1), {0.5, 0, 0.5, 1, 1, 1}).dx, 0.0);  // sign(0) = 0
}

// The fused linear cross entropy's gradients (input, weight, bias) against central differences
// of its loss, for mean (a token ignored) and sum with class weights, label smoothing and z-loss;
// its loss against the plain sum of class_loss_row over the logits.
TEST(SoftmaxNormLossReference, FusedLinearCrossEntropyMatchesFiniteDifferences) {
  std::mt19937_64 rng(23);
  const int64_t S = 4, H = 3, V = 5;
  const std::vector<double> x = random_row(rng, S * H, -1, 1), W = random_row(rng, V * H, -1, 1), b = random_row(rng, V, -1, 1);
  const std::vector<double> cw = random_row(rng, V, 0.3, 2), t = {2, -100, 0, 4};
  for (bool mean : {true, false}) {
    const double s = mean ? 0.1 : 0.0, z = mean ? 0.0 : 0.01;
    const ref::FlceResult r = ref::fused_linear_cross_entropy(x, W, b, t, cw, S, H, V, -100, s, z, mean);
    double total = 0, wsum = 0;
    for (int64_t i = 0; i < S; ++i) {
      std::vector<double> zi(r.z.begin() + i * V, r.z.begin() + (i + 1) * V);
      const ref::ClassLossRow c = ref::class_loss_row(zi, static_cast<int64_t>(t[static_cast<size_t>(i)]), {}, cw, -100, s, z, false);
      total += c.loss, wsum += c.weight;
    }
    EXPECT_NEAR(r.loss, mean ? total / wsum : total, 1e-12);
    EXPECT_NEAR(r.total_weight, wsum, 1e-12);
    auto loss_of = [&](const std::vector<double>& xv, const std::vector<double>& Wv, const std::vector<double>& bv) {
      return ref::fused_linear_cross_entropy(xv, Wv, bv, t, cw, S, H, V, -100, s, z, mean).loss;
    };
    expect_near_all(r.dx, numeric_grad([&](const std::vector<double>& v) { return loss_of(v, W, b); }, x), 1e-7);
    expect_near_all(r.dW, numeric_grad([&](const std::vector<double>& v) { return loss_of(x, v, b); }, W), 1e-7);
    expect_near_all(r.db, numeric_grad([&](const std::vector<double>& v) { return loss_of(x, W, v); }, b), 1e-7);
  }
}

// F.normalize's line against hand values (p = 2, 1, inf; the eps clamp) and its gradient against
// central differences for p = 2, 1, 3, 0.5 and inf; weight_norm's w, norm, dv and dg likewise.
TEST(SoftmaxNormLossReference, NormalizeAndWeightNormMatchFiniteDifferences) {
  const std::vector<double> x = {3, -4, 0.5, 1.5};
  EXPECT_NEAR(ref::vector_norm({3, -4}, 2.0), 5.0, 1e-15);
  EXPECT_NEAR(ref::vector_norm({3, -4}, 1.0), 7.0, 1e-15);
  EXPECT_EQ(ref::vector_norm({3, -4}, INFINITY), 4.0);
  EXPECT_EQ(ref::normalize_line({3, -4}, 2.0, 1e-12), (std::vector<double>{0.6, -0.8}));
  EXPECT_EQ(ref::normalize_line({0.3, -0.4}, 2.0, 2.0), (std::vector<double>{0.15, -0.2}));  // clamped to eps
  std::mt19937_64 rng(5);
  const std::vector<double> dy = random_row(rng, x.size());
  for (double p : {2.0, 1.0, 3.0, 0.5, static_cast<double>(INFINITY)}) {
    auto f = [&](const std::vector<double>& v) { return dot(ref::normalize_line(v, p, 1e-12), dy); };
    expect_near_all(ref::normalize_line_backward(x, dy, p, 1e-12), numeric_grad(f, x), 1e-6);
  }
  // clamped: the projection term vanishes (dx = dy / eps)
  expect_near_all(ref::normalize_line_backward({0.3, -0.4}, {1, 2}, 2.0, 2.0), {0.5, 1.0}, 1e-15);
  double n = 0, dg = 0;
  const double g = -1.7;
  const std::vector<double> w = ref::weight_norm_line(x, g, &n);
  EXPECT_NEAR(n, ref::vector_norm(x, 2.0), 1e-15);
  EXPECT_NEAR(w[1], -4 * g / n, 1e-15);
  const std::vector<double> dv = ref::weight_norm_line_backward(x, g, n, dy, &dg);
  auto fv = [&](const std::vector<double>& v) {
    double m = 0;
    return dot(ref::weight_norm_line(v, g, &m), dy);
  };
  expect_near_all(dv, numeric_grad(fv, x), 1e-6);
  auto fg = [&](const std::vector<double>& gv) {
    double m = 0;
    return dot(ref::weight_norm_line(x, gv[0], &m), dy);
  };
  EXPECT_NEAR(dg, numeric_grad(fg, {g})[0], 1e-7);
}

// The row losses' gradients against central differences of their loss: multilabel (weights; and
// the target's), cosine (targets 1 and -1 past the margin), triplet (p 2, 1, 3; swap); and
// hand values: cosine of parallel rows, a triplet inside its margin.
TEST(SoftmaxNormLossReference, RowLossesMatchFiniteDifferences) {
  std::mt19937_64 rng(11);
  const size_t D = 6;
  const std::vector<double> x = random_row(rng, D, -2, 2), x2 = random_row(rng, D, -2, 2), x3 = random_row(rng, D, -2, 2);
  const std::vector<double> w = random_row(rng, D, 0.3, 2), y01 = {1, 0, 0, 1, 1, 0};
  auto check = [&](const ref::RowLossOptions& o, const std::vector<double>& y, const std::vector<double>& ww) {
    const ref::RowLossGrad g = ref::row_loss_grad(o, x, x2, x3, y, ww, 0.7);
    auto f0 = [&](const std::vector<double>& v) { return 0.7 * ref::row_loss(o, v, x2, x3, y, ww); };
    expect_near_all(g.dx, numeric_grad(f0, x), 1e-6);
    if (o.op >= 1) {
      auto f1 = [&](const std::vector<double>& v) { return 0.7 * ref::row_loss(o, x, v, x3, y, ww); };
      expect_near_all(g.dx2, numeric_grad(f1, x2), 1e-6);
    }
    if (o.op == 2) {
      auto f2 = [&](const std::vector<double>& v) { return 0.7 * ref::row_loss(o, x, x2, v, y, ww); };
      expect_near_all(g.dx3, numeric_grad(f2, x3), 1e-6);
    }
    if (o.op == 0) {
      auto fy = [&](const std::vector<double>& v) { return 0.7 * ref::row_loss(o, x, x2, x3, v, ww); };
      expect_near_all(g.dy, numeric_grad(fy, y), 1e-6);
    }
  };
  ref::RowLossOptions o;
  check(o, y01, w);
  check(o, y01, {});
  o.op = 1;
  check(o, {1}, {});
  o.margin = -0.9;  // cos - margin > 0 for any pair: the -1 branch active
  check(o, {-1}, {});
  o = {};
  o.op = 2, o.margin = 5;  // inside the margin: the hinge active
  for (double p : {2.0, 1.0, 3.0}) {
    o.p = p, o.swap = false;
    check(o, {}, {});
    o.swap = true;
    check(o, {}, {});
  }
  ref::RowLossOptions c;
  c.op = 1;
  EXPECT_NEAR(ref::row_loss(c, {1, 2}, {2, 4}, {}, {1}, {}), 0.0, 1e-12);  // parallel: cos 1
  EXPECT_EQ(ref::row_loss(c, {1, 2}, {2, 4}, {}, {0}, {}), 0.0);           // a target of 0
  ref::RowLossOptions t;
  t.op = 2, t.eps = 0;
  t.margin = 1;
  EXPECT_EQ(ref::row_loss(t, {0, 0}, {3, 4}, {6, 8}, {}, {}), 0.0);                  // max(0, 1 + 5 - 10)
  EXPECT_NEAR(ref::row_loss(t, {0, 0}, {3, 4}, {0, 5.5}, {}, {}), 0.5, 1e-12);       // 1 + 5 - 5.5
}

TEST(SoftmaxNormLossReference, LocalResponseNormByHandAndFiniteDifferences) {
  // size 2: W(c) = [c - 1, c]; k 1, alpha 2, beta 1: d = 1 + (x_{c-1}² + x_c²) = 2, 6, 14
  const std::vector<double> y = ref::local_response_norm_line({1, 2, 3}, 2, 2.0, 1.0, 1.0);
  EXPECT_NEAR(y[0], 0.5, 1e-15);
  EXPECT_NEAR(y[1], 2.0 / 6, 1e-15);
  EXPECT_NEAR(y[2], 3.0 / 14, 1e-15);
  std::mt19937_64 rng(17);
  for (int64_t size : {1, 2, 3, 5, 12}) {
    const std::vector<double> x = random_row(rng, 9), dy = random_row(rng, 9);
    const double alpha = 0.3, beta = 0.75, k = 1.5;
    auto f = [&](const std::vector<double>& v) { return dot(dy, ref::local_response_norm_line(v, size, alpha, beta, k)); };
    expect_near_all(ref::local_response_norm_line_backward(x, dy, size, alpha, beta, k), numeric_grad(f, x), 1e-6);
  }
}

namespace {

// -log of Σ over every path of T labels that collapses (repeats merged, then blanks dropped) to
// the target of Π exp(lp[t][path_t]): the brute force the CTC recursions must equal.
double ctc_brute_force(const std::vector<std::vector<double>>& lp, int64_t T, const std::vector<int64_t>& target, int64_t blank) {
  const int64_t C = static_cast<int64_t>(lp[0].size());
  int64_t paths = 1;
  for (int64_t t = 0; t < T; ++t) paths *= C;
  double p = 0;
  for (int64_t code = 0; code < paths; ++code) {
    std::vector<int64_t> path, out;
    for (int64_t t = 0, r = code; t < T; ++t, r /= C) path.push_back(r % C);
    double lp_sum = 0;
    for (int64_t t = 0; t < T; ++t) {
      lp_sum += lp[static_cast<size_t>(t)][static_cast<size_t>(path[static_cast<size_t>(t)])];
      if (path[static_cast<size_t>(t)] != blank && (t == 0 || path[static_cast<size_t>(t)] != path[static_cast<size_t>(t - 1)]))
        out.push_back(path[static_cast<size_t>(t)]);
    }
    if (out == target) p += std::exp(lp_sum);
  }
  return -std::log(p);
}

}  // namespace

TEST(SoftmaxNormLossReference, CtcLossMatchesBruteForceAndFiniteDifferences) {
  std::mt19937_64 rng(23);
  const int64_t T = 5, C = 3;
  std::vector<std::vector<double>> lp(T);
  for (auto& row : lp) {  // log_softmax of random logits
    row = random_row(rng, C);
    double m = -INFINITY, s = 0;
    for (double v : row) m = std::max(m, v);
    for (double v : row) s += std::exp(v - m);
    for (double& v : row) v -= m + std::log(s);
  }
  struct Case {
    std::vector<int64_t> target;
    int64_t len, blank;
  };
  for (const Case& c : {Case{{1, 2}, 5, 0}, Case{{1, 1}, 5, 0}, Case{{}, 5, 0}, Case{{2}, 3, 0}, Case{{0, 0, 1}, 5, 2}, Case{{1, 2, 1}, 4, 0}}) {
    const ref::CtcSample r = ref::ctc_loss_sample(lp, c.len, c.target, c.blank);
    EXPECT_NEAR(r.nll, ctc_brute_force(lp, c.len, c.target, c.blank), 1e-12);
    // ∂nll / ∂lp[t][c] = grad - exp(lp) for t < len (the log_softmax term PyTorch's formula adds), 0 after
    for (int64_t t = 0; t < T; ++t) {
      auto f = [&](const std::vector<double>& row) {
        auto l = lp;
        l[static_cast<size_t>(t)] = row;
        return ref::ctc_loss_sample(l, c.len, c.target, c.blank).nll;
      };
      std::vector<double> want = numeric_grad(f, lp[static_cast<size_t>(t)]), got = r.grad[static_cast<size_t>(t)];
      for (int64_t k = 0; k < C; ++k)
        if (t < c.len) got[static_cast<size_t>(k)] -= std::exp(lp[static_cast<size_t>(t)][static_cast<size_t>(k)]);
      expect_near_all(got, want, 1e-6);
    }
  }
  // too short for the target (a repeat needs a blank between): no alignment, nll = inf
  EXPECT_EQ(ref::ctc_loss_sample(lp, 1, {1, 1}, 0).nll, INFINITY);
  EXPECT_EQ(ref::ctc_loss_sample(lp, 0, {}, 0).nll, 0.0);
  EXPECT_EQ(ref::ctc_loss_sample(lp, 0, {1}, 0).nll, INFINITY);
}
