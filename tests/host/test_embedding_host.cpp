// Host tier for embedding / embedding_bag: the float64 reference on hand cases (PyTorch's max
// tie-breaking, padding, empty bags, out-of-range indices), its backward against finite
// differences, and the plans' select / sku / workspace / descriptor and argument errors.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "baracuda/baracuda.hpp"
#include "embedding_ref.hpp"
#include "host/host_test_util.hpp"

using namespace baracuda;
using baracuda::test::expect_error;
using baracuda::test::hopper;
using baracuda::test::uniform_values;

namespace {

}  // namespace

TEST(EmbeddingReference, ForwardGathersAndZeroesOutOfRange) {
  const ref::EmbShape s{3, 2, -1};
  const std::vector<double> w{1, 2, 3, 4, 5, 6};
  std::vector<double> out;
  EXPECT_EQ(ref::embedding_forward(s, w, {2, 0, 3, -1, 2}, &out), 2);
  EXPECT_EQ(out, (std::vector<double>{5, 6, 1, 2, 0, 0, 0, 0, 5, 6}));
}

TEST(EmbeddingReference, BackwardPaddingAndFrequencyScale) {
  const ref::EmbShape s{4, 1, 1};
  const std::vector<int64_t> idx{0, 2, 2, 1, 7, 2};
  const std::vector<double> dout{1, 2, 3, 4, 5, 6};
  std::vector<double> dw;
  ref::embedding_backward(s, idx, dout, false, &dw);
  EXPECT_EQ(dw, (std::vector<double>{1, 0, 11, 0}));  // padding row 1 and index 7 give nothing
  ref::embedding_backward(s, idx, dout, true, &dw);
  EXPECT_DOUBLE_EQ(dw[2], 11.0 / 3.0);
}

TEST(EmbeddingReference, BagMaxBreaksTiesLikePyTorch) {
  // rows: 0 -> [1, 5], 1 -> [3, 5], 2 -> [3, NaN], 3 -> [-1, -1]
  const double nan = std::nan("");
  const ref::EmbShape s{4, 2, 3};
  const std::vector<double> w{1, 5, 3, 5, 3, nan, -1, -1};
  const std::vector<int64_t> idx{0, 1, 2, /*bag 1*/ 2, 0, /*bag 2*/ 3, /*bag 3: empty*/ /*bag 4*/ 3, 3};
  std::vector<int64_t> lo, hi, mi;
  ref::bag_ranges_from_offsets({0, 3, 5, 6, 6}, 5, 8, false, &lo, &hi);
  EXPECT_EQ(hi, (std::vector<int64_t>{3, 5, 6, 6, 8}));
  std::vector<double> out;
  ref::embedding_bag_forward(s, ref::BagMode::kMax, w, idx, lo, hi, {}, &out, &mi);
  // bag 0: col 0: 1, 3 (wins), 3 (tie: keeps row 1); col 1: 5 (row 0), 5 tie keeps row 0, NaN not greater
  EXPECT_EQ(out[0], 3);
  EXPECT_EQ(mi[0], 1);
  EXPECT_EQ(out[1], 5);
  EXPECT_EQ(mi[1], 0);
  // bag 1: NaN first wins column 1 and is never replaced
  EXPECT_TRUE(std::isnan(out[3]));
  EXPECT_EQ(mi[3], 2);
  EXPECT_EQ(mi[2], 2);  // 3 > 1
  // bag 2: only the padding row -> empty; bag 3 empty; bag 4 all padding
  for (int b : {2, 3, 4}) {
    EXPECT_EQ(out[static_cast<size_t>(2 * b)], 0);
    EXPECT_EQ(mi[static_cast<size_t>(2 * b)], -1);
  }
}

TEST(EmbeddingReference, BagMeanSkipsPaddingAndInvalid) {
  const ref::EmbShape s{3, 1, 0};
  const std::vector<double> w{100, 2, 4};
  std::vector<double> out;
  std::vector<int64_t> mi;
  EXPECT_EQ(ref::embedding_bag_forward(s, ref::BagMode::kMean, w, {0, 1, 2, 9}, {0}, {4}, {}, &out, &mi), 1);
  EXPECT_DOUBLE_EQ(out[0], 3.0);
}

TEST(EmbeddingReference, BackwardMatchesFiniteDifferences) {
  std::mt19937_64 rng(7);
  const int64_t V = 6, D = 3;
  const ref::EmbShape s{V, D, 4};
  const std::vector<int64_t> idx{1, 3, 3, 4, 0, 5, 3, 1, 8, 2};
  std::vector<int64_t> lo, hi;
  ref::bag_ranges_from_offsets({0, 4, 4, 7}, 4, 10, false, &lo, &hi);
  const std::vector<double> w = uniform_values(static_cast<size_t>(V * D), rng), psw = uniform_values(idx.size(), rng);
  const std::vector<double> dout = uniform_values(static_cast<size_t>(4 * D), rng);
  const double h = 1e-6;
  for (ref::BagMode mode : {ref::BagMode::kSum, ref::BagMode::kMean, ref::BagMode::kMax}) {
    const std::vector<double> p = mode == ref::BagMode::kSum ? psw : std::vector<double>{};
    auto loss = [&](const std::vector<double>& ww, const std::vector<double>& pp) {
      std::vector<double> out;
      std::vector<int64_t> mi;
      ref::embedding_bag_forward(s, mode, ww, idx, lo, hi, pp, &out, &mi);
      double l = 0;
      for (size_t i = 0; i < out.size(); ++i) l += out[i] * dout[i];
      return l;
    };
    std::vector<double> out, dw, dp;
    std::vector<int64_t> mi;
    ref::embedding_bag_forward(s, mode, w, idx, lo, hi, p, &out, &mi);
    ref::embedding_bag_backward(s, mode, w, idx, lo, hi, p, mi, dout, false, &dw, mode == ref::BagMode::kSum ? &dp : nullptr);
    for (size_t i = 0; i < w.size(); ++i) {
      std::vector<double> wp = w, wm = w;
      wp[i] += h, wm[i] -= h;
      EXPECT_NEAR(dw[i], (loss(wp, p) - loss(wm, p)) / (2 * h), 1e-7) << "mode " << int(mode) << " weight " << i;
    }
    if (mode == ref::BagMode::kSum)
      for (size_t i = 0; i < p.size(); ++i) {
        std::vector<double> pp = p, pm = p;
        pp[i] += h, pm[i] -= h;
        EXPECT_NEAR(dp[i], (loss(w, pp) - loss(w, pm)) / (2 * h), 1e-7) << "psw " << i;
      }
  }
  // plain embedding: the forward is a gather, its gradient a scatter-add
  std::vector<double> out, dw;
  const std::vector<double> g = uniform_values(idx.size() * D, rng);
  ref::embedding_forward(s, w, idx, &out);
  ref::embedding_backward(s, idx, g, false, &dw);
  for (size_t i = 0; i < w.size(); ++i) {
    std::vector<double> wp = w, wm = w;
    wp[i] += h, wm[i] -= h;
    std::vector<double> op, om;
    ref::embedding_forward(s, wp, idx, &op);
    ref::embedding_forward(s, wm, idx, &om);
    double fd = 0;
    for (size_t k = 0; k < op.size(); ++k) fd += (op[k] - om[k]) * g[k] / (2 * h);
    const bool padding_row = static_cast<int64_t>(i) / D == s.padding;
    EXPECT_NEAR(dw[i], padding_row ? 0.0 : fd, 1e-7) << "embedding weight " << i;
  }
}

// ---------------------------------------------------------------- plans

TEST(EmbeddingPlanHost, SelectSkuWorkspace) {
  EmbeddingDescriptor d;
  d.dtype = DType::bf16, d.num_embeddings = 1000, d.embedding_dim = 64, d.num_indices = 4096;
  auto f = EmbeddingPlan::select(d, hopper());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->sku().name(), "embedding.fwd.bf16.bespoke.sm90.gather");
  EXPECT_TRUE(f->precision_guarantee().bit_exact);
  PlanPreference det = hopper();
  det.determinism = Determinism::kRunToRun;
  auto bs = EmbeddingBackwardPlan::select(d, det);
  auto ba = EmbeddingBackwardPlan::select(d, hopper());
  ASSERT_TRUE(bs.ok() && ba.ok());
  EXPECT_EQ(bs->sku().variant, "sort");
  EXPECT_EQ(ba->sku().variant, "scatter");
  EXPECT_EQ(bs->precision_guarantee().determinism, Determinism::kRunToRun);
  EXPECT_EQ(ba->precision_guarantee().determinism, Determinism::kAny);
  EXPECT_EQ(bs->precision_guarantee().accumulator, DType::f32);
  EXPECT_GE(bs->workspace_size(), 4u * 1001 * 2 + 16u * 4096);
  EXPECT_EQ(bs->workspace_size(), ba->workspace_size());
  d.num_indices = 8192;
  EXPECT_GT(EmbeddingBackwardPlan::select(d, det)->workspace_size(), bs->workspace_size());
  PlanPreference tight = det;
  tight.max_workspace_bytes = 1024;
  expect_error(EmbeddingBackwardPlan::select(d, tight).status(), StatusCode::kUnsupported, "workspace");

  EmbeddingBagDescriptor b;
  b.num_embeddings = 100, b.embedding_dim = 16, b.num_bags = 8, b.num_indices = 40, b.mode = EmbeddingBagMode::kMax;
  auto bm = EmbeddingBagBackwardPlan::select(b, hopper());
  ASSERT_TRUE(bm.ok());
  EXPECT_EQ(bm->sku().name(), "embedding_bag.max.bwd.f32.bespoke.sm90.sort");  // max always sorts
  EXPECT_EQ(bm->precision_guarantee().determinism, Determinism::kRunToRun);
  b.mode = EmbeddingBagMode::kMean;
  EXPECT_EQ(EmbeddingBagBackwardPlan::select(b, hopper())->sku().variant, "scatter");
  EXPECT_EQ(EmbeddingBagPlan::select(b, hopper())->sku().name(), "embedding_bag.mean.fwd.f32.bespoke.sm90.bags");
}

// backward_algo: kAuto scatters under kSortFromIndices index occurrences and sorts from there
// (the [10M, 128] bag benchmark's 2^21 ids sorted faster); kSort / kScatter force a path;
// scatter is refused with kRunToRun and in max mode.
TEST(EmbeddingPlanHost, BackwardAlgoChoice) {
  EmbeddingBagDescriptor b;
  b.dtype = DType::bf16, b.num_embeddings = 10'000'000, b.embedding_dim = 128, b.num_bags = 65536, b.bag_size = 32;
  EXPECT_GE(b.indices_count(), kSortFromIndices);
  EXPECT_EQ(EmbeddingBagBackwardPlan::select(b, hopper())->sku().variant, "sort");
  EXPECT_EQ(EmbeddingBagBackwardPlan::select(b, hopper())->precision_guarantee().determinism, Determinism::kRunToRun);
  b.num_bags = kSortFromIndices / 32 - 1;
  EXPECT_EQ(EmbeddingBagBackwardPlan::select(b, hopper())->sku().variant, "scatter");
  b.backward_algo = EmbeddingBackwardAlgo::kSort;
  EXPECT_EQ(EmbeddingBagBackwardPlan::select(b, hopper())->sku().variant, "sort");
  b.num_bags = 65536;
  b.backward_algo = EmbeddingBackwardAlgo::kScatter;
  EXPECT_EQ(EmbeddingBagBackwardPlan::select(b, hopper())->sku().variant, "scatter");
  EXPECT_EQ(EmbeddingBagBackwardPlan::select(b, hopper())->precision_guarantee().determinism, Determinism::kAny);
  EmbeddingBagDescriptor b_auto = b;
  b_auto.backward_algo = EmbeddingBackwardAlgo::kAuto;
  EXPECT_NE(hash_fields(b), hash_fields(b_auto));
  EXPECT_FALSE(b == b_auto);
  PlanPreference det = hopper();
  det.determinism = Determinism::kRunToRun;
  expect_error(EmbeddingBagBackwardPlan::select(b, det).status(), StatusCode::kUnsupported,
               "backward_algo = scatter is not run-to-run deterministic");
  b.mode = EmbeddingBagMode::kMax;
  expect_error(EmbeddingBagBackwardPlan::select(b, hopper()).status(), StatusCode::kUnsupported,
               "not available in max mode");
  EXPECT_TRUE(EmbeddingBagPlan::select(b, hopper()).ok());  // the forward ignores it

  EmbeddingDescriptor e;
  e.num_embeddings = 128256, e.embedding_dim = 4096, e.num_indices = 32768;
  EXPECT_EQ(EmbeddingBackwardPlan::select(e, hopper())->sku().variant, "scatter");
  e.num_indices = kSortFromIndices;
  EXPECT_EQ(EmbeddingBackwardPlan::select(e, hopper())->sku().variant, "sort");
  e.backward_algo = EmbeddingBackwardAlgo::kScatter;
  EXPECT_EQ(EmbeddingBackwardPlan::select(e, hopper())->sku().variant, "scatter");
  expect_error(EmbeddingBackwardPlan::select(e, det).status(), StatusCode::kUnsupported, "backward_algo = scatter");
  e.backward_algo = static_cast<EmbeddingBackwardAlgo>(7);
  expect_error(EmbeddingBackwardPlan::select(e, hopper()).status(), StatusCode::kInvalidProblem,
               "backward_algo = 7 is not a EmbeddingBackwardAlgo");
}

TEST(EmbeddingPlanHost, DescriptorErrors) {
  auto emb = [](auto f) {
    EmbeddingDescriptor d;
    d.num_embeddings = 10, d.embedding_dim = 4, d.num_indices = 5;
    f(d);
    return EmbeddingBackwardPlan::select(d, hopper()).status();
  };
  expect_error(emb([](auto& d) { d.dtype = DType::i32; }), StatusCode::kUnsupported, "dtype i32");
  expect_error(emb([](auto& d) { d.index_dtype = DType::u8; }), StatusCode::kUnsupported, "index_dtype");
  expect_error(emb([](auto& d) { d.padding_idx = 10; }), StatusCode::kInvalidProblem, "padding_idx = 10");
  expect_error(emb([](auto& d) { d.padding_idx = -11; }), StatusCode::kInvalidProblem, "padding_idx = -11");
  EXPECT_TRUE(emb([](auto& d) { d.padding_idx = -10; }).ok());
  expect_error(emb([](auto& d) { d.num_indices = -1; }), StatusCode::kInvalidProblem, "num_indices");
  expect_error(emb([](auto& d) { d.num_indices = int64_t{1} << 31; }), StatusCode::kUnsupported, "2^31");
  expect_error(emb([](auto& d) { d.embedding_dim = -1; }), StatusCode::kInvalidProblem, "embedding_dim");
  PlanPreference cub = hopper();
  cub.forced_backend = Backend::kCuDNN;
  EmbeddingDescriptor d0;
  expect_error(EmbeddingPlan::select(d0, cub).status(), StatusCode::kUnsupported, "forced backend");

  auto bag = [](auto f) {
    EmbeddingBagDescriptor d;
    d.num_embeddings = 10, d.embedding_dim = 4, d.num_bags = 3, d.num_indices = 9;
    f(d);
    return EmbeddingBagBackwardPlan::select(d, hopper()).status();
  };
  expect_error(bag([](auto& d) { d.mode = EmbeddingBagMode::kMean, d.per_sample_weights = true; }),
               StatusCode::kInvalidProblem, "only allowed with mode sum");
  expect_error(bag([](auto& d) { d.per_sample_weights_grad = true; }), StatusCode::kInvalidProblem, "needs per_sample_weights");
  expect_error(bag([](auto& d) { d.mode = EmbeddingBagMode::kMax, d.scale_grad_by_freq = true; }),
               StatusCode::kInvalidProblem, "scale_grad_by_freq");
  expect_error(bag([](auto& d) { d.bag_size = 3, d.include_last_offset = true; }), StatusCode::kInvalidProblem,
               "include_last_offset");
  expect_error(bag([](auto& d) { d.num_bags = -1; }), StatusCode::kInvalidProblem, "num_bags");
  expect_error(bag([](auto& d) { d.mode = static_cast<EmbeddingBagMode>(7); }), StatusCode::kInvalidProblem, "mode");
}

TEST(EmbeddingPlanHost, ArgumentErrors) {
  alignas(256) static char buf[1 << 16];
  auto ref_of = [](void* p, DType t, std::vector<int64_t> shape) {
    TensorRef r;
    r.data = p, r.dtype = t, r.rank = static_cast<int>(shape.size());
    int64_t st = 1;
    for (int a = r.rank - 1; a >= 0; --a) r.shape[a] = shape[static_cast<size_t>(a)], r.stride[a] = st, st *= shape[static_cast<size_t>(a)];
    return r;
  };
  auto mut_of = [&](void* p, DType t, std::vector<int64_t> shape) {
    TensorRef r = ref_of(p, t, std::move(shape));
    TensorMut m;
    static_cast<TensorLayout&>(m) = r;
    m.data = p;
    return m;
  };
  EmbeddingDescriptor d;
  d.dtype = DType::f32, d.num_embeddings = 10, d.embedding_dim = 4, d.num_indices = 6;
  auto plan = EmbeddingPlan::select(d, hopper());
  ASSERT_TRUE(plan.ok());
  EmbeddingArgs a;
  a.weight = ref_of(buf, DType::f32, {10, 4});
  a.indices = ref_of(buf + 4096, DType::i64, {2, 3});
  a.out = mut_of(buf + 8192, DType::f32, {2, 3, 4});
  EXPECT_TRUE(plan->can_implement(a).ok()) << plan->can_implement(a).to_string();
  EmbeddingArgs b = a;
  b.indices = ref_of(buf + 4096, DType::i64, {7});
  expect_error(plan->can_implement(b), StatusCode::kInvalidProblem, "the descriptor says 6");
  b = a;
  b.out = mut_of(buf + 8192, DType::f32, {6, 4});
  expect_error(plan->can_implement(b), StatusCode::kInvalidProblem, "out");
  b = a;
  b.indices.dtype = DType::i32;
  expect_error(plan->can_implement(b), StatusCode::kInvalidProblem, "indices");
  b = a;
  b.out = mut_of(buf + 4096 + 8, DType::f32, {2, 3, 4});
  expect_error(plan->can_implement(b), StatusCode::kInvalidProblem, "overlaps");
  d.count_invalid = true;
  auto counted = EmbeddingPlan::select(d, hopper());
  expect_error(counted->can_implement(a), StatusCode::kInvalidProblem, "invalid_count");

  EmbeddingBagDescriptor g;
  g.dtype = DType::f32, g.num_embeddings = 10, g.embedding_dim = 4, g.num_bags = 3, g.num_indices = 8;
  g.mode = EmbeddingBagMode::kMax;
  auto bp = EmbeddingBagPlan::select(g, hopper());
  ASSERT_TRUE(bp.ok());
  EmbeddingBagArgs ba;
  ba.weight = ref_of(buf, DType::f32, {10, 4});
  ba.indices = ref_of(buf + 4096, DType::i64, {8});
  ba.offsets = ref_of(buf + 5120, DType::i64, {3});
  ba.out = mut_of(buf + 8192, DType::f32, {3, 4});
  ba.max_indices = mut_of(buf + 12288, DType::i64, {3, 4});
  EXPECT_TRUE(bp->can_implement(ba).ok()) << bp->can_implement(ba).to_string();
  EmbeddingBagArgs bb = ba;
  bb.offsets = ref_of(buf + 5120, DType::i64, {4});
  expect_error(bp->can_implement(bb), StatusCode::kInvalidProblem, "offsets");
  bb = ba;
  bb.max_indices = mut_of(buf + 12288, DType::i32, {3, 4});
  expect_error(bp->can_implement(bb), StatusCode::kInvalidProblem, "max_indices");
}
