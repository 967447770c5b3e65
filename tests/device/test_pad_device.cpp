// Device tier for pad: the testing.md matrix (every dtype, ranks 1-8, edge sizes, strided /
// permuted / offset / negative / broadcast views, poisoned outputs, canaries in the gaps),
// forward bit-exact against the reference's source map, backward against the float64
// reference; 20 bitwise reruns; CUDA-graph capture and replay; > 2^31 elements.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "baracuda/baracuda.hpp"
#include "device/device_harness.hpp"
#include "ops/pad/pad_geometry.hpp"
#include "pad_ref.hpp"

using namespace baracuda;
using namespace baracuda::test;

namespace {

constexpr uint8_t kPoison = 0xFF;

struct Stats {
  int64_t cases = 0, elements = 0, exact = 0;
  double worst_fraction_of_tol = 0;  // backward: max |err| / tol over the non-exact elements
};
Stats g_fwd, g_bwd;

bool detail_fits(const TensorLayout& t) { return baracuda::detail::pad_fits_index32(t); }

const DType kFwdTypes[] = {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i8,
                           DType::u8,  DType::i16, DType::i32,  DType::i64, DType::boolean};
const DType kBwdTypes[] = {DType::f32, DType::f16, DType::bf16, DType::f64};
const PadMode kModes[] = {PadMode::kConstant, PadMode::kReflect, PadMode::kReplicate, PadMode::kCircular};

Scalar fill_for(DType t) {
  if (t == DType::boolean) return Scalar(true);
  if (is_integral(t)) return Scalar(int64_t{-7});
  return Scalar(3.25);
}

// A random valid padding of one axis of extent n for `mode` (or no padding).
void random_pads(PadMode mode, int64_t n, std::mt19937_64& rng, int64_t* lo, int64_t* hi) {
  auto pick = [&](int64_t a, int64_t b) { return a > b ? a : std::uniform_int_distribution<int64_t>(a, b)(rng); };
  *lo = *hi = 0;
  if (rng() % 3 == 0) return;  // unpadded axis
  for (int tries = 0; tries < 20; ++tries) {
    switch (mode) {
      case PadMode::kConstant: *lo = pick(-n, 5); *hi = pick(-n, 5); break;
      case PadMode::kReflect: if (n < 2) return; *lo = pick(-(n - 1), std::min<int64_t>(n - 1, 6)); *hi = pick(-(n - 1), std::min<int64_t>(n - 1, 6)); break;
      case PadMode::kReplicate: if (n < 1) return; *lo = pick(-(n - 1), 9); *hi = pick(-(n - 1), 9); break;
      case PadMode::kCircular: *lo = pick(-n, n); *hi = pick(-n, n); break;
    }
    const int64_t out = n + *lo + *hi;
    const bool needs_one = mode == PadMode::kReflect || mode == PadMode::kReplicate;
    if (out >= (needs_one ? 1 : 0) && out <= n + 12) return;
  }
  *lo = *hi = 0;
}

struct Problem {
  PadDescriptor d;
  std::vector<int64_t> in, out;
};

Problem make_problem(DType dt, PadMode mode, const std::vector<int64_t>& in, std::mt19937_64& rng,
                     const std::vector<std::pair<int64_t, int64_t>>& fixed_pads = {}) {
  Problem p;
  p.d.dtype = dt;
  p.d.mode = mode;
  p.d.rank = static_cast<int>(in.size());
  p.d.value = mode == PadMode::kConstant ? fill_for(dt) : Scalar(0.0);
  p.in = in;
  for (int a = 0; a < p.d.rank; ++a) {
    p.d.in_shape[a] = in[a];
    if (!fixed_pads.empty()) {
      p.d.pad_low[a] = fixed_pads[a].first;
      p.d.pad_high[a] = fixed_pads[a].second;
    } else {
      random_pads(mode, in[a], rng, &p.d.pad_low[a], &p.d.pad_high[a]);
    }
    p.out.push_back(p.d.out_dim(a));
  }
  return p;
}

std::string repro(const char* dir, const Problem& p, Layout lx, Layout ly, uint64_t seed) {
  std::string s = std::string("pad ") + dir + " mode=" + std::string(enum_name(p.d.mode)) +
                  " dtype=" + std::string(dtype_name(p.d.dtype)) + " in=" + shape_str(p.in) + " pads=";
  for (int a = 0; a < p.d.rank; ++a) s += "(" + std::to_string(p.d.pad_low[a]) + "," + std::to_string(p.d.pad_high[a]) + ")";
  return s + " x_layout=" + layout_name(lx) + " y_layout=" + layout_name(ly) + " seed=" + std::to_string(seed);
}

// Runs one forward case; returns false (with a failure recorded) on mismatch.
void check_forward(const Problem& p, Layout lx, Layout ly, uint64_t seed) {
  std::mt19937_64 rng(seed);
  StridedBuffer x(p.d.dtype, p.in, lx), y(p.d.dtype, p.out, ly);
  fill_random(x, rng, /*specials=*/true);
  x.upload();
  y.fill_storage(kPoison);
  y.upload();
  PlanPreference pref;
  auto plan = PadPlan::select(p.d, pref);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string() << "\n" << repro("fwd", p, lx, ly, seed);
  Status s = plan->run(nullptr, {}, {x.ref(), y.mut()});
  ASSERT_TRUE(s.ok()) << s.to_string() << "\n" << repro("fwd", p, lx, ly, seed);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << repro("fwd", p, lx, ly, seed);
  y.download();
  const std::vector<int64_t> map = ref::pad_source_map(p.d);
  const uint64_t fill = double_to_bits(p.d.dtype, p.d.value.as_double());
  int64_t fills = 0;
  for (int64_t f = 0; f < static_cast<int64_t>(map.size()); ++f) {
    const uint64_t want = map[f] < 0 ? fill : x.get_bits(map[f]);
    fills += map[f] < 0;
    const uint64_t got = y.get_bits(f);
    ASSERT_EQ(got, want) << "first bad output index " << f << " (source " << map[f] << ")\n"
                         << repro("fwd", p, lx, ly, seed);
  }
  int64_t bad = -1;
  ASSERT_TRUE(y.gaps_hold(kPoison, &bad)) << "wrote outside the view at storage element " << bad << "\n"
                                         << repro("fwd", p, lx, ly, seed);
  ++g_fwd.cases;
  g_fwd.elements += static_cast<int64_t>(map.size());
  g_fwd.exact += static_cast<int64_t>(map.size());
}

void check_backward(const Problem& p, Layout ldy, Layout ldx, uint64_t seed, bool specials) {
  std::mt19937_64 rng(seed);
  StridedBuffer dy(p.d.dtype, p.out, ldy), dx(p.d.dtype, p.in, ldx);
  fill_random(dy, rng, specials);
  dy.upload();
  dx.fill_storage(kPoison);
  dx.upload();
  auto plan = PadBackwardPlan::select(p.d, PlanPreference{});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  Status s = plan->run(nullptr, {}, {dy.ref(), dx.mut()});
  ASSERT_TRUE(s.ok()) << s.to_string() << "\n" << repro("bwd", p, ldy, ldx, seed);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << repro("bwd", p, ldy, ldx, seed);
  dx.download();
  const int64_t nout = dy.numel(), nin = dx.numel();
  std::vector<double> dyv(nout), ones(nout, 1.0);
  for (int64_t f = 0; f < nout; ++f) dyv[f] = bits_to_double(p.d.dtype, dy.get_bits(f));
  const std::vector<double> want = ref::pad_backward(p.d, dyv);
  const std::vector<double> count = ref::pad_backward(p.d, ones);
  std::vector<double> absdy(nout);
  for (int64_t f = 0; f < nout; ++f) absdy[f] = std::isfinite(dyv[f]) ? std::abs(dyv[f]) : 0.0;
  const std::vector<double> sum_abs = ref::pad_backward(p.d, absdy);
  const double eps_out = dtype_eps(p.d.dtype);
  const double eps_acc = p.d.dtype == DType::f64 ? dtype_eps(DType::f64) : dtype_eps(DType::f32);
  for (int64_t f = 0; f < nin; ++f) {
    const uint64_t gb = dx.get_bits(f);
    const double got = bits_to_double(p.d.dtype, gb);
    const double ref = bits_to_double(p.d.dtype, double_to_bits(p.d.dtype, want[f]));  // rounded to dtype
    if (std::isnan(want[f])) {
      ASSERT_TRUE(std::isnan(got)) << "index " << f << " want NaN got " << got << "\n" << repro("bwd", p, ldy, ldx, seed);
      continue;
    }
    ASSERT_FALSE(std::isnan(got)) << "index " << f << " (poison left or NaN) want " << ref << "\n"
                                  << repro("bwd", p, ldy, ldx, seed);
    if (std::isinf(ref) || count[f] <= 1) {
      ASSERT_EQ(got, ref) << "index " << f << " (count " << count[f] << ")\n" << repro("bwd", p, ldy, ldx, seed);
      ++g_bwd.exact;
      continue;
    }
    // recursive f32 (f64) summation of `count` terms (|error| <= (count-1) eps sum|terms|,
    // Higham's bound), then one rounding to the dtype (half an ulp, eps_out |ref| covers it)
    const double tol = eps_out * std::abs(ref) + (count[f] - 1) * eps_acc * sum_abs[f];
    const double err = std::abs(got - ref);
    ASSERT_LE(err, tol) << "index " << f << " got " << got << " want " << ref << " (count " << count[f] << ")\n"
                        << repro("bwd", p, ldy, ldx, seed);
    if (tol > 0) g_bwd.worst_fraction_of_tol = std::max(g_bwd.worst_fraction_of_tol, err / tol);
    if (err == 0) ++g_bwd.exact;
  }
  int64_t bad = -1;
  ASSERT_TRUE(dx.gaps_hold(kPoison, &bad)) << "wrote outside dx at storage element " << bad << "\n"
                                          << repro("bwd", p, ldy, ldx, seed);
  ++g_bwd.cases;
  g_bwd.elements += nin;
}

// Shapes of the matrix: sizes from testing.md's set, tile residues, multi-tile rows.
std::vector<std::vector<int64_t>> matrix_shapes() {
  return {{1},          {7},          {33},          {129},         {5000},          {0, 5},
          {1, 1},       {2, 3},       {31, 32},      {3, 128},      {127, 33},       {2, 4099},
          {3, 7, 31},   {2, 1, 129},  {4, 3, 2, 7},  {2, 3, 33, 5}, {1, 2, 3, 2, 3}, {2, 2, 2, 2, 2, 2, 2, 2},
          {3, 1, 2, 1, 2, 1, 2, 3}, {300, 257}, {64, 2, 70}, {0}};
}

const std::pair<Layout, Layout> kLayoutPairs[] = {
    {Layout::kContiguous, Layout::kContiguous}, {Layout::kOffset1, Layout::kOffset3},
    {Layout::kStep2, Layout::kPaddedRows},       {Layout::kPermuted, Layout::kContiguous},
    {Layout::kNegativeLast, Layout::kPermuted},  {Layout::kBroadcast, Layout::kStep2},
};

class PadDevice : public ::testing::Test {
 protected:
  void SetUp() override { BARACUDA_REQUIRE_GPU(); }
};

}  // namespace

TEST_F(PadDevice, ForwardMatrixBitExact) {
  uint64_t seed = 1000;
  for (DType dt : kFwdTypes)
    for (PadMode mode : kModes)
      for (const auto& shape : matrix_shapes())
        for (const auto& [lx, ly] : kLayoutPairs) {
          ++seed;
          if (matrix_case_skipped(seed)) continue;
          std::mt19937_64 rng(seed);
          Problem p = make_problem(dt, mode, shape, rng);
          if (!PadPlan::select(p.d).ok()) continue;  // e.g. reflect on an axis of 1 got no pads
          check_forward(p, lx, ly, seed);
          if (HasFatalFailure()) return;
        }
  std::printf("[pad fwd] %lld cases, %lld elements compared, all bit-exact\n", (long long)g_fwd.cases,
              (long long)g_fwd.elements);
}

TEST_F(PadDevice, BackwardMatrixAgainstFloat64Reference) {
  uint64_t seed = 50000;
  for (DType dt : kBwdTypes)
    for (PadMode mode : kModes)
      for (const auto& shape : matrix_shapes())
        for (const auto& [ldy, ldx] : kLayoutPairs) {
          ++seed;
          if (matrix_case_skipped(seed)) continue;
          std::mt19937_64 rng(seed);
          Problem p = make_problem(dt, mode, shape, rng);
          if (ldx == Layout::kBroadcast) continue;  // dx is written: no broadcast output
          check_backward(p, ldy, ldx, seed, /*specials=*/seed % 4 == 0);
          if (HasFatalFailure()) return;
        }
  std::printf("[pad bwd] %lld cases, %lld elements, %lld exact, worst error = %.3f of tolerance\n",
              (long long)g_bwd.cases, (long long)g_bwd.elements, (long long)g_bwd.exact, g_bwd.worst_fraction_of_tol);
}

TEST_F(PadDevice, EdgeGeometries) {
  std::mt19937_64 rng(1);
  // every axis padded, maximal pads per mode, rank 8; one-column and one-row outputs; crops
  const std::vector<std::tuple<PadMode, std::vector<int64_t>, std::vector<std::pair<int64_t, int64_t>>>> cases = {
      {PadMode::kReflect, {3, 3, 3, 3, 3, 3, 3, 3}, {{2, 2}, {1, 2}, {2, 1}, {0, 2}, {2, 0}, {1, 1}, {2, 2}, {-1, 2}}},
      {PadMode::kCircular, {2, 3, 2, 3, 2, 3, 2, 3}, {{2, 2}, {3, 3}, {1, 0}, {0, 3}, {2, -1}, {1, 1}, {-2, 2}, {3, 3}}},
      {PadMode::kReplicate, {2, 2, 2, 2, 2, 2, 2, 2}, {{3, 1}, {1, 3}, {0, 0}, {2, 2}, {1, 0}, {0, 1}, {-1, 2}, {4, 4}}},
      {PadMode::kConstant, {4, 4, 4, 4, 1, 1, 1, 1}, {{-2, 1}, {1, -3}, {0, 0}, {-4, 2}, {1, 1}, {0, 2}, {3, 0}, {-1, 1}}},
      {PadMode::kReplicate, {1, 1}, {{0, 0}, {40, 70}}},
      {PadMode::kReflect, {1000, 2}, {{999, 999}, {1, 1}}},
      {PadMode::kCircular, {1, 70000}, {{0, 0}, {70000, 70000}}},
      {PadMode::kConstant, {3, 1}, {{-3, 0}, {2, 2}}},  // forward: all fill; backward: dx all zero
      // repro: a row axis of 1 replicate-padded (2, 2) gives its row 5 preimage rows; the flat
      // backward (at most 4) once took it and summed only 4
      {PadMode::kReplicate, {1, 40}, {{2, 2}, {0, 0}}},
      // multi-cell columns of the backward: wide pads on long rows, edge rows with several
      // preimage rows, columns of up to 21 cells (replicate), cells at the row's other end
      // (circular), a cropped side beside a padded one
      {PadMode::kReflect, {6, 9, 300}, {{0, 0}, {2, 3}, {7, 5}}},
      {PadMode::kReplicate, {4, 5, 257}, {{0, 0}, {1, 2}, {9, 20}}},
      {PadMode::kCircular, {3, 4, 130}, {{0, 0}, {2, 2}, {8, 8}}},
      {PadMode::kReflect, {2, 3, 1000}, {{0, 0}, {0, 0}, {-3, 12}}},
  };
  uint64_t seed = 9000;
  for (const auto& [mode, shape, pads] : cases)
    for (DType dt : kBwdTypes) {
      Problem p = make_problem(dt, mode, shape, rng, pads);
      ASSERT_TRUE(PadPlan::select(p.d).ok()) << PadPlan::select(p.d).status().to_string();
      check_forward(p, Layout::kContiguous, Layout::kContiguous, ++seed);
      check_backward(p, Layout::kContiguous, Layout::kContiguous, ++seed, false);
      check_forward(p, Layout::kPermuted, Layout::kStep2, ++seed);
      check_backward(p, Layout::kStep2, Layout::kPermuted, ++seed, true);
      if (HasFatalFailure()) return;
    }
}

// The staged kernels (only the last two axes padded; the forward's for 2-byte rows wider than a
// tile):
// row tiles and column pieces, edge tiles that stage their padding and ones whose padding is
// too long to stage (cells then read from dy), far cells of circular, misaligned and
// padded-row views. Every case is also run with dx strided (another kernel): every path sums
// each element's cells in one order, so the two results must agree bit for bit.
TEST_F(PadDevice, StagedTilesAndPathAgreement) {
  std::mt19937_64 rng(3);
  const std::vector<std::tuple<PadMode, std::vector<int64_t>, std::vector<std::pair<int64_t, int64_t>>>> cases = {
      {PadMode::kReflect, {3, 2, 70, 3000}, {{0, 0}, {0, 0}, {3, 4}, {5, 2}}},
      {PadMode::kCircular, {2, 5, 41, 4099}, {{0, 0}, {0, 0}, {2, 3}, {7, 1}}},
      {PadMode::kReplicate, {4, 3, 33, 65}, {{0, 0}, {0, 0}, {9, 12}, {70, 3}}},
      {PadMode::kReflect, {5, 200, 256}, {{0, 0}, {1, 1}, {1, 1}}},
      {PadMode::kCircular, {6, 31, 16}, {{0, 0}, {31, 31}, {16, 16}}},
      {PadMode::kReplicate, {9, 20000}, {{0, 0}, {3, 3}}},
      {PadMode::kReflect, {2, 3, 9, 40000}, {{0, 0}, {0, 0}, {0, 0}, {100, 3}}},
  };
  const std::pair<Layout, Layout> layouts[] = {{Layout::kContiguous, Layout::kContiguous},
                                               {Layout::kOffset1, Layout::kOffset3},
                                               {Layout::kPaddedRows, Layout::kPaddedRows},
                                               {Layout::kOffset3, Layout::kPaddedRows}};
  uint64_t seed = 77000;
  for (const auto& [mode, shape, pads] : cases)
    for (DType dt : kBwdTypes) {
      Problem p = make_problem(dt, mode, shape, rng, pads);
      for (const auto& [ldy, ldx] : layouts) {
        ++seed;
        check_backward(p, ldy, ldx, seed, seed % 2 == 0);
        check_forward(p, ldx, ldy, ++seed);
        if (HasFatalFailure()) return;
      }
      // bit-for-bit agreement of the staged and the strided-dx kernels on one dy
      StridedBuffer dy(dt, p.out, Layout::kContiguous), dx_a(dt, p.in, Layout::kContiguous), dx_b(dt, p.in, Layout::kStep2);
      fill_random(dy, rng, false);
      dy.upload();
      auto plan = PadBackwardPlan::select(p.d);
      ASSERT_TRUE(plan.ok());
      ASSERT_TRUE(plan->run(nullptr, {}, {dy.ref(), dx_a.mut()}).ok());
      ASSERT_TRUE(plan->run(nullptr, {}, {dy.ref(), dx_b.mut()}).ok());
      BARACUDA_CUDA_OK(cudaDeviceSynchronize());
      dx_a.download();
      dx_b.download();
      for (int64_t f = 0; f < dx_a.numel(); ++f)
        ASSERT_EQ(dx_a.get_bits(f), dx_b.get_bits(f)) << "element " << f << "\n" << repro("bwd", p, Layout::kContiguous, Layout::kStep2, seed);
    }
}

// The flat forward of short rows of 1- and 2-byte elements (words of 2 or 4 bytes, unit-stride
// source columns, one shuffle per word for the row's source offset or its absence): source views
// off every alignment (offset 1 and 3 elements, odd element counts), y at a 16-byte boundary and
// one element past it, rows whose source rows follow each other (only an outer axis padded) and
// rows that do not, fill rows, every mode's edge columns, a cropped side.
TEST_F(PadDevice, FlatForwardShortRowsAnyAlignment) {
  const DType types[] = {DType::bf16, DType::f16, DType::i16, DType::u8, DType::i8, DType::boolean};
  const std::vector<std::pair<std::vector<int64_t>, std::vector<std::pair<int64_t, int64_t>>>> cases = {
      {{5, 40}, {{0, 0}, {1, 3}}},               // 44 columns
      {{7, 33}, {{1, 2}, {2, 1}}},               // 36 columns, odd element count
      {{3, 4, 61}, {{0, 0}, {1, 1}, {3, 0}}},    // 64 columns
      {{2, 9, 100}, {{0, 0}, {2, 2}, {2, 2}}},   // 104 columns
      {{2, 9, 100}, {{0, 0}, {2, 1}, {0, 0}}},   // unpadded columns: consecutive source rows
      {{3, 5, 255}, {{1, 0}, {0, 2}, {0, 1}}},   // 256 columns, odd element count
      {{4, 32, 256}, {{0, 0}, {1, 1}, {1, 1}}},  // the benchmark's 258-column row
      {{6, 70}, {{1, 1}, {-3, 5}}},              // 72 columns, the left 3 cropped
  };
  const Layout x_layouts[] = {Layout::kContiguous, Layout::kOffset1, Layout::kOffset3};
  std::mt19937_64 rng(11);
  uint64_t seed = 88000;
  for (DType dt : types)
    for (PadMode mode : kModes)
      for (const auto& [shape, pads] : cases)
        for (Layout lx : x_layouts)
          for (Layout ly : {Layout::kContiguous, Layout::kOffset1}) {
            Problem p = make_problem(dt, mode, shape, rng, pads);
            check_forward(p, lx, ly, ++seed);
            if (HasFatalFailure()) return;
          }
}

// The pairs forward (2-byte rows of 2-8 segments of 32 words + at most 4): odd and even low
// pads, a cropped low side (the row's first word then comes from its own columns), padding
// cells across 20 lanes of the first segment and 8 of the last, fill rows from padded outer
// axes, row counts that leave a warp's last task part-full, tails of 0-4 words. The misaligned
// x / y layouts and the padding that reaches a middle segment take the flat kernel (same
// answers required); which kernel a geometry gets is checked on the host
// (PadGeometry.PairsForwardAdmitsAlignedTwoByteRowsOfTwoToEightSegments).
TEST_F(PadDevice, PairsForwardRows) {
  const DType types[] = {DType::bf16, DType::f16, DType::i16};
  const std::vector<std::pair<std::vector<int64_t>, std::vector<std::pair<int64_t, int64_t>>>> cases = {
      {{4, 33, 256}, {{0, 0}, {1, 1}, {1, 1}}},           // 258: 4 segments + 1, shift 1, 140 rows
      {{3, 5, 128}, {{0, 0}, {2, 2}, {0, 0}}},            // 128: 2 segments, unpadded columns
      {{2, 7, 512}, {{0, 0}, {1, 2}, {3, 5}}},            // 520: 8 segments + 4, shift 1
      {{5, 254}, {{1, 1}, {-1, 3}}},                      // 256 with the first column cropped
      {{5, 318}, {{0, 3}, {2, 4}}},                       // 324: 5 segments + 2, shift 0
      {{2, 3, 4, 190}, {{0, 0}, {1, 1}, {2, 0}, {1, 1}}}, // 192: 3 segments, two padded row axes
      {{3, 200}, {{1, 0}, {40, 16}}},                     // 256: cells in 20 lanes of segment 0
      {{3, 200}, {{0, 1}, {70, 58}}},                     // cells into segment 1: flat
  };
  const std::pair<Layout, Layout> layouts[] = {{Layout::kContiguous, Layout::kContiguous},
                                               {Layout::kOffset1, Layout::kContiguous},
                                               {Layout::kContiguous, Layout::kOffset1},
                                               {Layout::kPaddedRows, Layout::kContiguous}};
  std::mt19937_64 rng(12);
  uint64_t seed = 89000;
  for (DType dt : types)
    for (PadMode mode : kModes)
      for (const auto& [shape, pads] : cases)
        for (const auto& [lx, ly] : layouts) {
          Problem p = make_problem(dt, mode, shape, rng, pads);
          if (!PadPlan::select(p.d).ok()) continue;  // reflect: a pad as long as its axis
          check_forward(p, lx, ly, ++seed);
          if (HasFatalFailure()) return;
        }
}

TEST_F(PadDevice, LargeForwardOver2Pow31Elements) {
  // u8 x [32769, 65536] -> reflect (1, 1) -> y [32769, 65538]: 2,147,614,722 elements (> 2^31)
  const int64_t R = 32769, C = 65536, CO = C + 2;
  auto d = *PadDescriptor::torch_style(DType::u8, {R, C}, {1, 1}, PadMode::kReflect);
  auto plan = PadPlan::select(d);
  ASSERT_TRUE(plan.ok());
  std::vector<uint8_t> hx(static_cast<size_t>(R * C));
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) hx[r * C + c] = static_cast<uint8_t>(r * 131 + c * 7 + (r >> 5));
  void *dx = nullptr, *dy = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(&dx, hx.size()));
  BARACUDA_CUDA_OK(cudaMalloc(&dy, static_cast<size_t>(R * CO)));
  BARACUDA_CUDA_OK(cudaMemcpy(dx, hx.data(), hx.size(), cudaMemcpyHostToDevice));
  BARACUDA_CUDA_OK(cudaMemset(dy, kPoison, static_cast<size_t>(R * CO)));
  Status s = plan->run(nullptr, {}, {TensorRef::make(dx, DType::u8, {R, C}), TensorMut::make(dy, DType::u8, {R, CO})});
  ASSERT_TRUE(s.ok()) << s.to_string();
  BARACUDA_CUDA_OK(cudaDeviceSynchronize());
  std::vector<uint8_t> hy(static_cast<size_t>(R * CO));
  BARACUDA_CUDA_OK(cudaMemcpy(hy.data(), dy, hy.size(), cudaMemcpyDeviceToHost));
  cudaFree(dx);
  cudaFree(dy);
  int64_t bad = 0;
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < CO; ++c) {
      const int64_t src = c == 0 ? 1 : (c == CO - 1 ? C - 2 : c - 1);
      if (hy[r * CO + c] != hx[r * C + src] && bad++ == 0)
        ADD_FAILURE() << "first bad element (" << r << ", " << c << ")";
    }
  EXPECT_EQ(bad, 0);
}

TEST_F(PadDevice, LargeElementOffsetUses64BitPath) {
  // few elements, rows 2^31 + 7 elements apart: both directions must take 64-bit index math
  std::mt19937_64 rng(3);
  const int64_t big = (int64_t{1} << 31) + 7;
  const int64_t W = 300;
  for (PadMode mode : kModes) {
    Problem p = make_problem(DType::bf16, mode, {2, W}, rng, {{1, 1}, {3, 2}});
    StridedBuffer small_y(DType::bf16, p.out, Layout::kContiguous);
    void* xd = nullptr;
    BARACUDA_CUDA_OK(cudaMalloc(&xd, static_cast<size_t>((big + W) * 2)));
    uint16_t* xr = static_cast<uint16_t*>(xd);
    std::vector<uint16_t> rows(2 * W);
    std::vector<double> xv(2 * W);
    for (int64_t i = 0; i < 2 * W; ++i) {
      rows[i] = float_to_bf16_bits(static_cast<float>(i % 97) * 0.25f - 7.0f);
      xv[i] = bf16_bits_to_float(rows[i]);
    }
    BARACUDA_CUDA_OK(cudaMemcpy(xr, rows.data(), W * 2, cudaMemcpyHostToDevice));
    BARACUDA_CUDA_OK(cudaMemcpy(xr + big, rows.data() + W, W * 2, cudaMemcpyHostToDevice));
    const TensorLayout far = TensorLayout::make(DType::bf16, std::vector<int64_t>{2, W}, std::vector<int64_t>{big, 1});
    auto fwd = PadPlan::select(p.d);
    ASSERT_TRUE(fwd.ok());
    TensorRef xv_ref = TensorRef::make(xd, DType::bf16, {2, W}, {big, 1});
    ASSERT_FALSE(detail_fits(far));
    ASSERT_TRUE(fwd->run(nullptr, {}, {xv_ref, small_y.mut()}).ok());
    BARACUDA_CUDA_OK(cudaDeviceSynchronize());
    small_y.download();
    const auto want = ref::pad_forward(p.d, xv);
    for (size_t f = 0; f < want.size(); ++f)
      ASSERT_EQ(bits_to_double(DType::bf16, small_y.get_bits(static_cast<int64_t>(f))), want[f]) << f;
    // backward writes into the far-apart rows
    BARACUDA_CUDA_OK(cudaMemset(xr, 0xFF, W * 2));
    BARACUDA_CUDA_OK(cudaMemset(xr + big, 0xFF, W * 2));
    auto bwd = PadBackwardPlan::select(p.d);
    ASSERT_TRUE(bwd->run(nullptr, {}, {small_y.ref(), TensorMut::make(xd, DType::bf16, {2, W}, {big, 1})}).ok());
    BARACUDA_CUDA_OK(cudaDeviceSynchronize());
    const auto gwant = ref::pad_backward(p.d, want);
    BARACUDA_CUDA_OK(cudaMemcpy(rows.data(), xr, W * 2, cudaMemcpyDeviceToHost));
    BARACUDA_CUDA_OK(cudaMemcpy(rows.data() + W, xr + big, W * 2, cudaMemcpyDeviceToHost));
    for (int64_t i = 0; i < 2 * W; ++i)
      ASSERT_NEAR(bf16_bits_to_float(rows[i]), gwant[i], 8e-3 * std::abs(gwant[i]) + 1e-6) << enum_name(mode) << " " << i;
    cudaFree(xd);
  }
}
