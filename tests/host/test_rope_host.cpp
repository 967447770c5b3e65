// Host tier for RoPE: the float64 reference against hand-computed rotations, the library's
// frequency table against the reference's for every scaling rule (and published Llama-3.1 /
// YaRN values), the adjoint identity and central finite differences of the backward, and every
// validation path of select() / can_implement() by code and message.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>
#include <vector>

#include "baracuda/ops/rope.hpp"
#include "host/host_test_util.hpp"
#include "rope_ref.hpp"

using namespace baracuda;
using baracuda::test::expect_error;
using baracuda::test::hopper;

namespace {

RopeDescriptor small(RopePairing pairing, int64_t D = 4, int64_t R = 0) {
  RopeDescriptor d;
  d.dtype = DType::f32;
  d.pairing = pairing;
  d.batch = 2;
  d.seq = 3;
  d.heads_q = 2;
  d.head_dim = D;
  d.rotary_dim = R;
  return d;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Every scaling rule, and a cache, in both pairings and with partial rotary.
std::vector<RopeDescriptor> variety() {
  std::vector<RopeDescriptor> v;
  for (RopePairing pr : {RopePairing::kHalf, RopePairing::kInterleaved})
    for (int sc = 0; sc < 5; ++sc)
      for (int64_t R : {int64_t{0}, int64_t{4}}) {
        RopeDescriptor d = small(pr, 8, R);
        d.layout = sc % 2 ? RopeLayout::kBHSD : RopeLayout::kBSHD;
        d.base = 50.0;
        if (sc == 1) { d.scaling = RopeScaling::kLinear; d.scale.factor = 4; }
        if (sc == 2) { d.scaling = RopeScaling::kYaRN; d.scale.factor = 8; d.scale.original_max_position = 64; }
        if (sc == 3) { d.scaling = RopeScaling::kLlama3; d.scale.factor = 8; d.scale.original_max_position = 40; }
        if (sc == 4) { d.cos_sin_cache = true; d.cache_rows = 5; d.positions_rank = 2; }
        if (sc == 0) d.position_offset = 7;
        v.push_back(d);
      }
  return v;
}

std::vector<double> cache_of(const RopeDescriptor& d, uint64_t seed) {
  return d.cos_sin_cache ? test::uniform_values(static_cast<size_t>(d.cache_rows * d.rot_dim() / 2), seed) : std::vector<double>{};
}

std::vector<int64_t> positions_of(const RopeDescriptor& d) {
  std::vector<int64_t> p(static_cast<size_t>(d.batch * d.seq));
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<int64_t>((i * 3) % static_cast<size_t>(std::max<int64_t>(d.cache_rows, 1)));
  return ref::rope_positions(d, p);
}

}  // namespace

TEST(RopeReference, HandComputedHalfAndInterleaved) {
  // D = 4, base 10000: ω = (1, 0.01); token at position 1 (offset 1, s = 0)
  for (RopePairing pr : {RopePairing::kHalf, RopePairing::kInterleaved}) {
    RopeDescriptor d = small(pr);
    d.batch = 1;
    d.seq = 1;
    d.heads_q = 1;
    d.position_offset = 1;
    const std::vector<double> x{1, 2, 3, 4};
    const auto y = ref::rope_apply(d, 1, x, ref::rope_positions(d, {}), {}, {}, false);
    // half pairs (x0, x2) at θ=1 and (x1, x3) at θ=0.01; interleaved pairs (x0, x1), (x2, x3)
    const int a1 = 0, a2 = pr == RopePairing::kHalf ? 2 : 1, b1 = pr == RopePairing::kHalf ? 1 : 2, b2 = 3;
    EXPECT_NEAR(y[a1], x[a1] * std::cos(1.0) - x[a2] * std::sin(1.0), 1e-15);
    EXPECT_NEAR(y[a2], x[a2] * std::cos(1.0) + x[a1] * std::sin(1.0), 1e-15);
    EXPECT_NEAR(y[b1], x[b1] * std::cos(0.01) - x[b2] * std::sin(0.01), 1e-15);
    EXPECT_NEAR(y[b2], x[b2] * std::cos(0.01) + x[b1] * std::sin(0.01), 1e-15);
    // position 0 is the identity
    d.position_offset = 0;
    EXPECT_EQ(ref::rope_apply(d, 1, x, ref::rope_positions(d, {}), {}, {}, false), x);
  }
}

TEST(RopeReference, RotationKeepsPairNormsAndPassThrough) {
  RopeDescriptor d = small(RopePairing::kHalf, 10, 6);
  d.position_offset = 1000;
  const auto x = test::uniform_values(static_cast<size_t>(2 * 3 * 2 * 10), 1);
  const auto y = ref::rope_apply(d, 2, x, ref::rope_positions(d, {}), {}, {}, false);
  for (size_t row = 0; row < x.size() / 10; ++row) {
    const double* a = x.data() + row * 10;
    const double* b = y.data() + row * 10;
    for (int i = 0; i < 3; ++i)
      EXPECT_NEAR(std::hypot(a[i], a[i + 3]), std::hypot(b[i], b[i + 3]), 1e-14);
    for (int i = 6; i < 10; ++i) EXPECT_EQ(a[i], b[i]);
  }
}

TEST(RopeReference, AdjointIdentityAndFiniteDifferences) {
  int n = 0;
  for (const RopeDescriptor& d : variety()) {
    const size_t sz = static_cast<size_t>(d.batch * d.seq * d.heads_q * d.head_dim);
    const auto x = test::uniform_values(sz, 10 + n), dy = test::uniform_values(sz, 20 + n);
    const auto cos = cache_of(d, 30 + n), sin = cache_of(d, 40 + n);
    const auto pos = positions_of(d);
    const auto y = ref::rope_apply(d, d.heads_q, x, pos, cos, sin, false);
    const auto dx = ref::rope_apply(d, d.heads_q, dy, pos, cos, sin, true);
    EXPECT_NEAR(dot(y, dy), dot(x, dx), 1e-12) << "descriptor " << n;
    // central differences of L(x) = <rope(x), dy>
    const double eps = 1e-6;
    for (size_t i = 0; i < sz; i += 7) {
      auto xp = x, xm = x;
      xp[i] += eps;
      xm[i] -= eps;
      const double fd = (dot(ref::rope_apply(d, d.heads_q, xp, pos, cos, sin, false), dy) -
                         dot(ref::rope_apply(d, d.heads_q, xm, pos, cos, sin, false), dy)) / (2 * eps);
      EXPECT_NEAR(fd, dx[i], 1e-5 + 1e-3 * std::abs(dx[i])) << "descriptor " << n << " element " << i;
    }
    ++n;
  }
}

TEST(RopeFrequencies, LibraryMatchesReferenceForEveryScaling) {
  for (const RopeDescriptor& d0 : variety()) {
    if (d0.cos_sin_cache) continue;
    for (double base : {50.0, 10000.0, 500000.0}) {
      RopeDescriptor d = d0;
      d.base = base;
      d.head_dim = 128;
      d.rotary_dim = 128;
      d.scale.original_max_position = d.scaling == RopeScaling::kNone || d.scaling == RopeScaling::kLinear ? 0 : 8192;
      std::vector<double> want;
      double want_m = 0, got_m = 0;
      ref::rope_frequencies(d, &want, &want_m);
      std::vector<double> got(want.size());
      ASSERT_TRUE(rope_frequencies(d, got.data(), &got_m).ok());
      EXPECT_NEAR(got_m, want_m, 1e-15);
      for (size_t f = 0; f < want.size(); ++f) EXPECT_NEAR(got[f], want[f], 1e-15 * want[f]) << "f " << f;
    }
  }
}

TEST(RopeFrequencies, PublishedValues) {
  // Llama-3.1: base 5e5, dim 128, factor 8, low 1, high 4, original 8192. High frequencies
  // (wavelength < 2048) are kept, low ones (wavelength > 8192) divided by 8.
  RopeDescriptor d = small(RopePairing::kHalf, 128);
  d.base = 500000;
  d.scaling = RopeScaling::kLlama3;
  d.scale.factor = 8;
  d.scale.original_max_position = 8192;
  std::vector<double> w(64);
  double m = 0;
  ASSERT_TRUE(rope_frequencies(d, w.data(), &m).ok());
  EXPECT_EQ(m, 1.0);
  EXPECT_EQ(w[0], 1.0);
  const double w63 = std::pow(500000.0, -126.0 / 128.0);
  EXPECT_NEAR(w[63], w63 / 8, 1e-18);
  for (int f = 0; f < 64; ++f) {
    const double wl = 2 * std::numbers::pi * std::pow(500000.0, 2.0 * f / 128.0);
    const double base_w = std::pow(500000.0, -2.0 * f / 128.0);
    if (wl < 2048) EXPECT_NEAR(w[f], base_w, 1e-16 * base_w);
    if (wl > 8192) EXPECT_NEAR(w[f], base_w / 8, 1e-16 * base_w);
  }
  // YaRN factor 4 (Qwen2.5 style): attention factor 0.1 ln 4 + 1; the fastest dims extrapolate,
  // the slowest interpolate
  d.scaling = RopeScaling::kYaRN;
  d.base = 1000000;
  d.scale.factor = 4;
  d.scale.original_max_position = 32768;
  ASSERT_TRUE(rope_frequencies(d, w.data(), &m).ok());
  EXPECT_NEAR(m, 0.1 * std::log(4.0) + 1, 1e-15);
  EXPECT_EQ(w[0], 1.0);
  EXPECT_NEAR(w[63], std::pow(1e6, -126.0 / 128.0) / 4, 1e-20);
  d.scale.attention_factor = 0.5;
  ASSERT_TRUE(rope_frequencies(d, w.data(), &m).ok());
  EXPECT_EQ(m, 0.5);
}

TEST(RopePlanHost, SelectWithoutGpuAndSku) {
  RopeDescriptor d = small(RopePairing::kInterleaved, 128);
  d.dtype = DType::bf16;
  d.heads_k = 1;
  auto p = RopePlan::select(d, hopper());
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->sku().name(), "rope.interleaved.fwd.bf16.bespoke.sm90.tokenblock");
  EXPECT_EQ(p->workspace_size(), 0u);
  EXPECT_EQ(p->precision_guarantee().math, DType::f32);
  auto b = RopeBackwardPlan::select(d, hopper());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->sku().name(), "rope.interleaved.bwd.bf16.bespoke.sm90.tokenblock");
  d.dtype = DType::f64;
  EXPECT_EQ(RopePlan::select(d, hopper())->precision_guarantee().accumulator, DType::f64);
  EXPECT_EQ(std::hash<RopeDescriptor>{}(d), hash_fields(d));
}

TEST(RopePlanHost, DescriptorErrors) {
  auto sel = [](const RopeDescriptor& d) { return RopePlan::select(d, hopper()).status(); };
  RopeDescriptor d = small(RopePairing::kHalf, 8);
  auto with = [&](auto f) { RopeDescriptor e = d; f(e); return sel(e); };
  expect_error(with([](auto& e) { e.dtype = DType::i32; }), StatusCode::kUnsupported, "dtype i32 is not supported");
  expect_error(with([](auto& e) { e.heads_q = 0; }), StatusCode::kInvalidProblem, "heads_q = 0 must be >= 1");
  expect_error(with([](auto& e) { e.heads_k = -1; }), StatusCode::kInvalidProblem, "heads_k = -1");
  expect_error(with([](auto& e) { e.seq = -2; }), StatusCode::kInvalidProblem, "seq = -2");
  expect_error(with([](auto& e) { e.batch = -1; }), StatusCode::kInvalidProblem, "batch = -1");
  expect_error(with([](auto& e) { e.head_dim = 1; }), StatusCode::kInvalidProblem, "head_dim = 1");
  expect_error(with([](auto& e) { e.rotary_dim = 5; }), StatusCode::kInvalidProblem, "rotary_dim = 5 must be even");
  expect_error(with([](auto& e) { e.rotary_dim = 10; }), StatusCode::kInvalidProblem, "rotary_dim = 10");
  expect_error(with([](auto& e) { e.head_dim = 1024; }), StatusCode::kUnsupported, "pass a cos/sin cache");
  expect_error(with([](auto& e) { e.base = -1; }), StatusCode::kInvalidProblem, "base = -1");
  expect_error(with([](auto& e) { e.positions_rank = 3; }), StatusCode::kInvalidProblem, "positions_rank = 3");
  expect_error(with([](auto& e) { e.positions_rank = 1; e.positions_dtype = DType::f32; }), StatusCode::kUnsupported,
               "positions_dtype f32 is not supported (supported: i32, i64)");
  expect_error(with([](auto& e) { e.positions_rank = 1; e.position_offset = 3; }), StatusCode::kInvalidProblem,
               "only used without a positions tensor");
  expect_error(with([](auto& e) { e.scaling = RopeScaling::kLinear; e.scale.factor = 0; }), StatusCode::kInvalidProblem,
               "scale.factor = 0");
  expect_error(with([](auto& e) { e.scaling = RopeScaling::kYaRN; e.scale.factor = 4; }), StatusCode::kInvalidProblem,
               "original_max_position = 0 must be > 0 for yarn");
  expect_error(with([](auto& e) { e.scaling = RopeScaling::kLlama3; e.scale.factor = 8; e.scale.original_max_position = 8192; e.scale.high_freq_factor = 0.5; }),
               StatusCode::kInvalidProblem, "0 < low < high");
  expect_error(with([](auto& e) { e.cos_sin_cache = true; e.scaling = RopeScaling::kLinear; e.scale.factor = 2; }),
               StatusCode::kInvalidProblem, "a cos/sin cache carries its own");
  expect_error(with([](auto& e) { e.cos_sin_cache = true; e.cache_dtype = DType::i8; }), StatusCode::kUnsupported,
               "cache_dtype i8");
  expect_error(with([](auto& e) { e.cos_sin_cache = true; e.cache_rows = -1; }), StatusCode::kInvalidProblem,
               "cache_rows = -1");
  expect_error(with([](auto& e) { e.heads_q = int64_t{1} << 30; }), StatusCode::kInvalidProblem, "must be < 2^31");
  PlanPreference cudnn = hopper();
  cudnn.forced_backend = Backend::kCuDNN;
  expect_error(RopePlan::select(d, cudnn).status(), StatusCode::kUnsupported, "no rope implementation");
  PlanPreference old = hopper();
  old.target_arch = 70;
  expect_error(RopePlan::select(d, old).status(), StatusCode::kUnsupported, "sm_70");
  std::vector<double> w(4);
  double m;
  RopeDescriptor c = d;
  c.cos_sin_cache = true;
  expect_error(rope_frequencies(c, w.data(), &m), StatusCode::kInvalidProblem, "has no frequencies");
}

TEST(RopePlanHost, ArgumentErrors) {
  RopeDescriptor d = small(RopePairing::kHalf, 8);  // q [2, 3, 2, 8] (BSHD)
  d.heads_k = 1;
  d.positions_rank = 2;
  d.positions_dtype = DType::i32;
  auto plan = RopePlan::select(d, hopper());
  ASSERT_TRUE(plan.ok());
  alignas(16) static float buf[4096];
  alignas(16) static int32_t pos[6];
  float* q = buf;
  float* qo = buf + 256;
  float* k = buf + 512;
  float* ko = buf + 768;
  RopeArgs a;
  a.q = TensorRef::of(q, {2, 3, 2, 8});
  a.q_out = TensorMut::of(qo, {2, 3, 2, 8});
  a.k = TensorRef::of(k, {2, 3, 1, 8});
  a.k_out = TensorMut::of(ko, {2, 3, 1, 8});
  a.positions = TensorRef::of(pos, {2, 3});
  EXPECT_TRUE(plan->can_implement(a).ok()) << plan->can_implement(a).to_string();
  // exact in place is accepted for both sides
  RopeArgs ip = a;
  ip.q_out = TensorMut::of(q, {2, 3, 2, 8});
  ip.k_out = TensorMut::of(k, {2, 3, 1, 8});
  EXPECT_TRUE(plan->can_implement(ip).ok()) << plan->can_implement(ip).to_string();
  auto expect_arg = [&](auto f, StatusCode code, const char* needle) {
    RopeArgs e = a;
    f(e);
    expect_error(plan->can_implement(e), code, needle);
  };
  expect_arg([&](auto& e) { e.q = TensorRef::of(q, {2, 3, 3, 8}); }, StatusCode::kInvalidProblem, "q shape [2, 3, 3, 8]");
  expect_arg([&](auto& e) { e.k_out = TensorMut::of(ko, {2, 3, 2, 8}); }, StatusCode::kInvalidProblem, "k_out shape");
  expect_arg([&](auto& e) { e.q = TensorRef::make(q, DType::f64, {2, 3, 2, 8}); }, StatusCode::kInvalidProblem, "q dtype f64");
  expect_arg([&](auto& e) { e.q = TensorRef::of(q, {2, 3, 2, 8}, {96, 32, 16, 2}); }, StatusCode::kInvalidProblem,
             "unit stride on its last");
  expect_arg([&](auto& e) { e.q_out = TensorMut::of(q + 1, {2, 3, 2, 8}); }, StatusCode::kInvalidProblem,
             "q_out overlaps q without being exactly in place");
  expect_arg([&](auto& e) { e.q_out = TensorMut::of(q, {2, 3, 2, 8}, {96, 32, 8, 1}); }, StatusCode::kInvalidProblem,
             "q_out overlaps q");
  expect_arg([&](auto& e) { e.k_out = TensorMut::of(qo + 8, {2, 3, 1, 8}); }, StatusCode::kInvalidProblem, "q_out overlaps k_out");
  expect_arg([&](auto& e) { e.q_out = TensorMut::of(qo, {2, 3, 2, 8}, {0, 16, 8, 1}); }, StatusCode::kInvalidProblem,
             "q_out");
  expect_arg([&](auto& e) { e.q = TensorRef::of<float>(nullptr, {2, 3, 2, 8}); }, StatusCode::kInvalidProblem, "data is null");
  expect_arg([&](auto& e) { e.positions = TensorRef::of(pos, {3}); }, StatusCode::kInvalidProblem, "positions shape [3]");
  expect_arg([&](auto& e) { e.positions = TensorRef::make(pos, DType::i64, {2, 3}); }, StatusCode::kInvalidProblem,
             "positions dtype i64");
  expect_arg([&](auto& e) { e.q_out = TensorMut::of(reinterpret_cast<float*>(pos), {2, 3, 2, 8}); },
             StatusCode::kInvalidProblem, "q_out");
  // a cache of the wrong width
  RopeDescriptor c = d;
  c.cos_sin_cache = true;
  c.cache_rows = 4;
  auto cp = RopePlan::select(c, hopper());
  ASSERT_TRUE(cp.ok());
  RopeArgs ca = a;
  ca.cos = TensorRef::of(buf + 1024, {4, 4});
  ca.sin = TensorRef::of(buf + 1040, {4, 3});
  expect_error(cp->can_implement(ca), StatusCode::kInvalidProblem, "sin shape [4, 3]");
  ca.sin = TensorRef::of(buf + 1040, {4, 4});
  EXPECT_TRUE(cp->can_implement(ca).ok());
  // the backward names its own fields
  auto bp = RopeBackwardPlan::select(d, hopper());
  ASSERT_TRUE(bp.ok());
  RopeBackwardArgs b{a.q, a.q_out, TensorRef::of(k, {2, 3, 2, 8}), a.k_out, a.positions, {}, {}};
  expect_error(bp->can_implement(b), StatusCode::kInvalidProblem, "rope_backward: dk_out shape");
}
