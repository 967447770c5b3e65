// Device tier for RoPE: forward and backward of every dtype x pairing x layout x scaling /
// cache / positions form against the float64 reference, over contiguous, misaligned,
// padded-row, head-major (permuted) and in-place views with poisoned outputs and canary gaps;
// special values; out-of-range cache rows; 20 bitwise reruns; graph capture; > 2^31 elements.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "baracuda/baracuda.hpp"
#include "device/device_harness.hpp"
#include "rope_ref.hpp"

using namespace baracuda;
using namespace baracuda::test;

namespace {

constexpr uint8_t kPoison = 0xFF;  // NaN in every float dtype

struct Stats {
  int64_t cases = 0, elements = 0, exact = 0, nonfinite = 0;
  double worst = 0;
  std::string worst_at;
};
Stats g_stats[2];  // fwd, bwd

enum class View { kContiguous, kOffset1, kPaddedRows, kHeadMajor, kInPlace };
const char* view_name(View v) {
  switch (v) {
    case View::kContiguous: return "contiguous";
    case View::kOffset1: return "offset1";
    case View::kPaddedRows: return "padded_rows";
    case View::kHeadMajor: return "head_major";
    case View::kInPlace: return "in_place";
  }
  return "?";
}

// One operand: a buffer plus the view the plan sees (possibly with permuted leading axes).
struct Operand {
  StridedBuffer buf;
  TensorLayout view;  // logical [B, ?, ?, D] in the descriptor's layout
  void* ptr() const { return buf.view_ptr(); }
  TensorRef ref() const { TensorRef r; static_cast<TensorLayout&>(r) = view; r.data = ptr(); return r; }
  TensorMut mut() const { TensorMut r; static_cast<TensorLayout&>(r) = view; r.data = ptr(); return r; }
  int64_t storage_of(int64_t flat) const {  // storage element of logical row-major element `flat`
    int64_t off = buf.base;
    for (int d = view.rank - 1; d >= 0; --d) {
      off += (flat % view.shape[d]) * view.stride[d];
      flat /= view.shape[d];
    }
    return off;
  }
  double get(int64_t flat) const {
    uint64_t bits = 0;
    std::memcpy(&bits, buf.host.data() + storage_of(flat) * buf.elem(), buf.elem());
    return bits_to_double(buf.dtype, bits);
  }
  uint64_t raw(int64_t flat) const {
    uint64_t bits = 0;
    std::memcpy(&bits, buf.host.data() + storage_of(flat) * buf.elem(), buf.elem());
    return bits;
  }
};

Operand make_operand(DType dt, const std::vector<int64_t>& shape, View v) {
  Operand o;
  if (v == View::kHeadMajor) {  // memory holds axes 1 and 2 swapped
    std::vector<int64_t> mem = {shape[0], shape[2], shape[1], shape[3]};
    o.buf = StridedBuffer(dt, mem, Layout::kContiguous);
    o.view = TensorLayout::make(dt, shape);
    o.view.stride[0] = o.buf.stride[0];
    o.view.stride[1] = o.buf.stride[2];
    o.view.stride[2] = o.buf.stride[1];
    o.view.stride[3] = 1;
    return o;
  }
  const Layout l = v == View::kOffset1 ? Layout::kOffset1 : v == View::kPaddedRows ? Layout::kPaddedRows : Layout::kContiguous;
  o.buf = StridedBuffer(dt, shape, l);
  o.view = TensorLayout::make(dt, shape, o.buf.stride);
  return o;
}

struct Config {
  int64_t B, S, Hq, Hk, D, R;
};

// Sizes: single element rows, odd pair counts, D - R not a vector multiple, many tokens per
// block, more than one block, empty.
const Config kConfigs[] = {
    {1, 1, 1, 0, 2, 0},   {2, 3, 3, 1, 8, 0},    {1, 33, 2, 2, 128, 64}, {2, 17, 4, 0, 96, 96},
    {1, 7, 5, 3, 6, 4},   {3, 31, 1, 1, 256, 128}, {1, 0, 2, 1, 8, 0},   {2, 129, 8, 2, 64, 0},
    {1, 5, 2, 1, 80, 20}, {1, 2, 1, 1, 1026, 1024},
};

// Which angles: 0 computed, 1 linear, 2 yarn, 3 llama3, 4 cache in f32, 5 cache in the data dtype.
void apply_angles(RopeDescriptor& d, int kind) {
  d.base = kind == 3 ? 500000.0 : 10000.0;
  switch (kind) {
    case 1: d.scaling = RopeScaling::kLinear; d.scale.factor = 4; break;
    case 2: d.scaling = RopeScaling::kYaRN; d.scale.factor = 8; d.scale.original_max_position = 4096; break;
    case 3: d.scaling = RopeScaling::kLlama3; d.scale.factor = 8; d.scale.original_max_position = 8192; break;
    case 4: case 5: d.cos_sin_cache = true; d.cache_dtype = kind == 4 ? DType::f32 : d.dtype; d.cache_rows = 300; break;
    default: break;
  }
}

double k_of(DType t) { return t == DType::f16 || t == DType::bf16 ? 1.0 : 8.0; }
double eps_of(DType t) { return t == DType::f64 ? 2.220446049250313e-16 : dtype_eps(t); }

// Runs one case (forward or backward) and compares every element; returns false on failure.
bool run_case(DType dt, RopePairing pr, RopeLayout lay, const Config& c, int angles, int pos_form, View vq, View vk,
              bool backward, bool specials, uint64_t seed) {
  RopeDescriptor d;
  d.dtype = dt;
  d.layout = lay;
  d.pairing = pr;
  d.batch = c.B;
  d.seq = c.S;
  d.heads_q = c.Hq;
  d.heads_k = c.Hk;
  d.head_dim = c.D;
  d.rotary_dim = c.R;
  apply_angles(d, angles);
  const int64_t R = d.rot_dim();
  if (R / 2 > kRopeMaxComputedPairs && !d.cos_sin_cache) return true;  // covered by the cache forms
  // positions: 0 none (offset), 1 [S] i32, 2 [B, S] i64
  d.positions_rank = pos_form;
  d.positions_dtype = pos_form == 1 ? DType::i32 : DType::i64;
  if (pos_form == 0) d.position_offset = d.cos_sin_cache ? 5 : 123456;
  std::mt19937_64 rng(seed);
  char repro[512];
  std::snprintf(repro, sizeof repro, "rope %s %s %s %s B%lld S%lld Hq%lld Hk%lld D%lld R%lld angles %d pos %d q:%s k:%s seed %llu",
                backward ? "bwd" : "fwd", std::string(dtype_name(dt)).c_str(), std::string(enum_name(pr)).c_str(),
                lay == RopeLayout::kBHSD ? "BHSD" : "BSHD", (long long)c.B, (long long)c.S, (long long)c.Hq, (long long)c.Hk,
                (long long)c.D, (long long)R, angles, pos_form, view_name(vq), view_name(vk), (unsigned long long)seed);
  const int nt = c.Hk > 0 ? 2 : 1;
  const View views[2] = {vq, vk};
  Operand in[2], out_own[2];
  Operand* out[2] = {};
  for (int x = 0; x < nt; ++x) {
    const int64_t H = x == 0 ? c.Hq : c.Hk;
    const std::vector<int64_t> shape = lay == RopeLayout::kBHSD ? std::vector<int64_t>{c.B, H, c.S, c.D}
                                                                : std::vector<int64_t>{c.B, c.S, H, c.D};
    const View v = views[x] == View::kInPlace ? View::kContiguous : views[x];
    in[x] = make_operand(dt, shape, v);
    in[x].buf.fill_storage(kPoison);
    fill_random(in[x].buf, rng, specials);
    in[x].buf.upload();
    if (views[x] == View::kInPlace) {
      out[x] = &in[x];
    } else {
      out_own[x] = make_operand(dt, shape, views[x]);
      out_own[x].buf.fill_storage(kPoison);
      out_own[x].buf.upload();
      out[x] = &out_own[x];
    }
  }
  // positions and cache
  StridedBuffer posb, cosb, sinb;
  std::vector<int64_t> pos_host;
  const int64_t pmax = d.cos_sin_cache ? d.cache_rows : 1000000;
  if (pos_form > 0) {
    posb = StridedBuffer(d.positions_dtype, pos_form == 1 ? std::vector<int64_t>{c.S} : std::vector<int64_t>{c.B, c.S},
                         Layout::kContiguous);
    for (int64_t i = 0; i < posb.numel(); ++i) {
      int64_t p = static_cast<int64_t>(rng() % static_cast<uint64_t>(pmax));
      if (rng() % 16 == 0) p = d.cos_sin_cache ? (rng() % 2 ? -1 : pmax) : -p;  // out of the cache / negative
      pos_host.push_back(p);
      posb.set_bits(i, static_cast<uint64_t>(p));
    }
    posb.upload();
  }
  std::vector<double> cos_h, sin_h;
  if (d.cos_sin_cache) {
    const std::vector<int64_t> cs{d.cache_rows, R / 2};
    cosb = StridedBuffer(d.cache_dtype, cs, Layout::kPaddedRows);
    sinb = StridedBuffer(d.cache_dtype, cs, Layout::kOffset1);
    fill_random(cosb, rng, false);
    fill_random(sinb, rng, false);
    cosb.upload();
    sinb.upload();
    for (int64_t i = 0; i < cosb.numel(); ++i) {
      cos_h.push_back(bits_to_double(d.cache_dtype, cosb.get_bits(i)));
      sin_h.push_back(bits_to_double(d.cache_dtype, sinb.get_bits(i)));
    }
  }
  const TensorRef pos_ref = pos_form > 0 ? posb.ref() : TensorRef{};
  const TensorRef cos_ref = d.cos_sin_cache ? cosb.ref() : TensorRef{};
  const TensorRef sin_ref = d.cos_sin_cache ? sinb.ref() : TensorRef{};
  const TensorRef none_in{};
  const TensorMut none_out{};
  Status st;
  if (!backward) {
    auto plan = RopePlan::select(d);
    EXPECT_TRUE(plan.ok()) << repro << ": " << plan.status().to_string();
    if (!plan.ok()) return false;
    RopeArgs a{in[0].ref(), out[0]->mut(), nt == 2 ? in[1].ref() : none_in, nt == 2 ? out[1]->mut() : none_out,
               pos_ref, cos_ref, sin_ref};
    st = plan->run(nullptr, {}, a);
  } else {
    auto plan = RopeBackwardPlan::select(d);
    EXPECT_TRUE(plan.ok()) << repro << ": " << plan.status().to_string();
    if (!plan.ok()) return false;
    RopeBackwardArgs a{in[0].ref(), out[0]->mut(), nt == 2 ? in[1].ref() : none_in, nt == 2 ? out[1]->mut() : none_out,
                       pos_ref, cos_ref, sin_ref};
    st = plan->run(nullptr, {}, a);
  }
  EXPECT_TRUE(st.ok()) << repro << ": " << st.to_string();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << repro;
  if (!st.ok()) return false;
  const std::vector<int64_t> pos = ref::rope_positions(d, pos_host);
  double m = 2;  // cache values are in [-2, 2]
  std::vector<double> w;
  if (!d.cos_sin_cache) ref::rope_frequencies(d, &w, &m);
  Stats& S = g_stats[backward ? 1 : 0];
  bool ok = true;
  for (int x = 0; x < nt; ++x) {
    const int64_t H = x == 0 ? c.Hq : c.Hk, n = in[x].view.numel();
    std::vector<double> xin(static_cast<size_t>(n));
    for (int64_t f = 0; f < n; ++f) xin[static_cast<size_t>(f)] = in[x].get(f);
    EXPECT_TRUE(n == 0 || std::any_of(xin.begin(), xin.end(), [](double v) { return v != 0; })) << repro;
    const auto want = ref::rope_apply(d, H, xin, pos, cos_h, sin_h, backward);
    Operand& o = *out[x];
    o.buf.download();
    int64_t first_gap = -1;
    if (views[x] != View::kInPlace && !o.buf.gaps_hold(kPoison, &first_gap)) {
      ADD_FAILURE() << repro << ": side " << x << " wrote outside the view at storage element " << first_gap;
      ok = false;
    }
    const double eps = eps_of(dt), k = k_of(dt), atol = dt == DType::f16 ? 3e-8 : 0;
    for (int64_t f = 0; f < n && ok; ++f) {
      const int64_t i = f % c.D;
      const double got = o.get(f), ref = want[static_cast<size_t>(f)];
      ++S.elements;
      if (i >= R) {  // pass-through: bit-exact
        const bool same = o.raw(f) == in[x].raw(f);
        if (!same) {
          ADD_FAILURE() << repro << ": side " << x << " pass-through element " << f << " got " << got << " want " << ref;
          ok = false;
        }
        ++S.exact;
        continue;
      }
      const int64_t half = R / 2;
      const int64_t partner = pr == RopePairing::kHalf ? (i < half ? i + half : i - half) : (i ^ 1);
      const double scale = (std::fabs(xin[static_cast<size_t>(f)]) + std::fabs(xin[static_cast<size_t>(f - i + partner)])) * m;
      if (std::isnan(ref) || std::isinf(ref) || std::isnan(got) || std::isinf(got)) {
        ++S.nonfinite;
        const bool match = (std::isnan(ref) && std::isnan(got)) || (got == ref);
        // a non-finite input may meet an angle whose cos or sin rounds to the other sign of 0:
        // only the class (NaN vs inf) is then required, as the f32 composite would give either
        if (!match && !(std::isinf(ref) && std::isinf(got))) {
          ADD_FAILURE() << repro << ": side " << x << " element " << f << " got " << got << " want " << ref;
          ok = false;
        }
        continue;
      }
      // θ = p·ω is formed in float64 from a frequency that may differ from the reference's by
      // an ulp: allow that angle error (|θ|·4·2^-53) on top of the output rounding
      double theta = 0;
      if (!d.cos_sin_cache) {
        const int64_t row = f / c.D;
        const int64_t b = lay == RopeLayout::kBSHD ? row / H / c.S : row / c.S / H;
        const int64_t s = lay == RopeLayout::kBSHD ? (row / H) % c.S : row % c.S;
        const int64_t pair = pr == RopePairing::kHalf ? (i < half ? i : i - half) : i / 2;
        theta = std::fabs(static_cast<double>(pos[static_cast<size_t>(b * c.S + s)]) * w[static_cast<size_t>(pair)]);
      }
      const double tol = atol + (k * eps + 4 * theta * 2.220446049250313e-16) * scale, err = std::fabs(got - ref);
      if (tol > 0 && err / tol > S.worst) {
        S.worst = err / tol;
        S.worst_at = repro;
      }
      if (err > tol) {
        ADD_FAILURE() << repro << ": side " << x << " element " << f << " got " << got << " want " << ref << " |err| " << err
                      << " tol " << tol;
        ok = false;
      }
    }
  }
  ++S.cases;
  return ok;
}

void print_stats() {
  for (int b = 0; b < 2; ++b) {
    const Stats& s = g_stats[b];
    std::printf("[rope %s] %lld cases, %lld elements (%lld exact pass-through, %lld non-finite), worst %.3f of tolerance (%s)\n",
                b ? "bwd" : "fwd", (long long)s.cases, (long long)s.elements, (long long)s.exact, (long long)s.nonfinite,
                s.worst, s.worst_at.c_str());
  }
}

}  // namespace

TEST(RopeDevice, EveryDtypePairingLayoutAngleForm) {
  BARACUDA_REQUIRE_GPU();
  uint64_t seed = 1;
  int failures = 0;
  const View kViews[] = {View::kContiguous, View::kOffset1, View::kPaddedRows, View::kHeadMajor, View::kInPlace};
  for (bool backward : {false, true})
    for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::f64})
      for (RopePairing pr : {RopePairing::kHalf, RopePairing::kInterleaved})
        for (RopeLayout lay : {RopeLayout::kBSHD, RopeLayout::kBHSD})
          for (const Config& c : kConfigs)
            for (int angles = 0; angles < 6; ++angles) {
              const int pos_form = static_cast<int>(seed % 3);
              const View vq = kViews[seed % 5], vk = kViews[(seed / 5 + 2) % 5];
              const bool specials = seed % 7 == 0;
              if (!run_case(dt, pr, lay, c, angles, pos_form, vq, vk, backward, specials, seed)) ++failures;
              ++seed;
              if (failures > 5) FAIL() << "stopping after 5 failing cases";
            }
  print_stats();
}

TEST(RopeDevice, AllViewPairsOnOneShape) {
  BARACUDA_REQUIRE_GPU();
  const View kViews[] = {View::kContiguous, View::kOffset1, View::kPaddedRows, View::kHeadMajor, View::kInPlace};
  uint64_t seed = 100000;
  for (View vq : kViews)
    for (View vk : kViews)
      for (DType dt : {DType::bf16, DType::f32})
        EXPECT_TRUE(run_case(dt, RopePairing::kHalf, RopeLayout::kBSHD, {2, 9, 4, 2, 128, 96}, 0, 2, vq, vk, seed % 2, false, seed++));
}

// q of 2^31 + 2^20 elements rotated in place; sampled tokens checked against the reference.
TEST(RopeDevice, BeyondTwoToThe31InPlace) {
  BARACUDA_REQUIRE_GPU();
  RopeDescriptor d;
  d.dtype = DType::bf16;
  d.batch = 1;
  d.seq = (int64_t{1} << 20) + 512;
  d.heads_q = 16;
  d.head_dim = 128;
  const int64_t row = d.heads_q * d.head_dim, n = d.seq * row;
  ASSERT_GT(n, int64_t{1} << 31);
  void* q = nullptr;
  if (cudaMalloc(&q, static_cast<size_t>(n) * 2) != cudaSuccess) GTEST_SKIP() << "cannot allocate " << n * 2 << " bytes";
  // the pattern: token t holds block[(t % 977) * row + j]
  std::mt19937_64 rng(5);
  std::vector<uint16_t> block(static_cast<size_t>(977 * row));
  for (auto& v : block) v = static_cast<uint16_t>(double_to_bits(DType::bf16, std::uniform_real_distribution<double>(-2, 2)(rng)));
  for (int64_t t = 0; t < d.seq; t += 977) {
    const int64_t cnt = std::min<int64_t>(977, d.seq - t);
    BARACUDA_CUDA_OK(cudaMemcpy(static_cast<uint16_t*>(q) + t * row, block.data(), static_cast<size_t>(cnt * row) * 2,
                                cudaMemcpyHostToDevice));
  }
  auto plan = RopePlan::select(d);
  ASSERT_TRUE(plan.ok());
  const TensorRef qr = TensorRef::make(q, DType::bf16, {1, d.seq, 16, 128});
  const TensorMut qm = TensorMut::make(q, DType::bf16, {1, d.seq, 16, 128});
  ASSERT_TRUE(plan->run(nullptr, {}, RopeArgs{qr, qm, {}, {}, {}, {}, {}}).ok());
  BARACUDA_CUDA_OK(cudaDeviceSynchronize());
  int64_t checked = 0;
  double worst = 0;
  for (int64_t t : {int64_t{0}, int64_t{1}, d.seq / 2, (int64_t{1} << 31) / row, (int64_t{1} << 31) / row + 1, d.seq - 1}) {
    std::vector<uint16_t> got(static_cast<size_t>(row));
    BARACUDA_CUDA_OK(cudaMemcpy(got.data(), static_cast<uint16_t*>(q) + t * row, static_cast<size_t>(row) * 2, cudaMemcpyDeviceToHost));
    RopeDescriptor one = d;
    one.seq = 1;
    one.position_offset = t;
    std::vector<double> x(static_cast<size_t>(row));
    for (int64_t j = 0; j < row; ++j) x[static_cast<size_t>(j)] = bits_to_double(DType::bf16, block[static_cast<size_t>((t % 977) * row + j)]);
    const auto want = ref::rope_apply(one, 16, x, ref::rope_positions(one, {}), {}, {}, false);
    for (int64_t j = 0; j < row; ++j) {
      const int64_t i = j % 128, partner = i < 64 ? j + 64 : j - 64;
      const double tol = dtype_eps(DType::bf16) * (std::fabs(x[static_cast<size_t>(j)]) + std::fabs(x[static_cast<size_t>(partner)]));
      const double err = std::fabs(bits_to_double(DType::bf16, got[static_cast<size_t>(j)]) - want[static_cast<size_t>(j)]);
      worst = std::max(worst, err / tol);
      ASSERT_LE(err, tol) << "token " << t << " element " << j;
      ++checked;
    }
  }
  cudaFree(q);
  std::printf("[rope large] %lld elements in place, %lld sampled elements checked, worst %.3f of tolerance\n",
              static_cast<long long>(n), static_cast<long long>(checked), worst);
}
