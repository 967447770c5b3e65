// Host tier: pad descriptor validation, select() without a GPU, can_implement error paths
// (each checked by code and message), and the host-side geometry (coalescing, 2^31 boundary).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <unordered_set>

#include "baracuda/baracuda.hpp"
#include "host/host_test_util.hpp"
#include "ops/pad/pad_geometry.hpp"

using namespace baracuda;
using baracuda::test::expect_error;
using baracuda::test::hopper;

namespace {

PadDescriptor make(DType dt, std::initializer_list<int64_t> shape, std::initializer_list<int64_t> pads,
                   PadMode mode = PadMode::kConstant, Scalar value = 0.0) {
  auto d = PadDescriptor::torch_style(dt, shape, pads, mode, value);
  EXPECT_TRUE(d.ok()) << d.status().to_string();
  return *d;
}

// f(mode, n, m, lo) for every mode and one axis of n <= 7 with pads from cropping to maximal
// that the backward accepts (e.g. not reflect with a pad >= n).
template <class F>
void for_each_small_axis(F&& f) {
  for (PadMode mode : {PadMode::kConstant, PadMode::kReflect, PadMode::kReplicate, PadMode::kCircular})
    for (int64_t n = 1; n <= 7; ++n)
      for (int64_t lo = -n; lo <= n; ++lo)
        for (int64_t hi = -n; hi <= n; ++hi) {
          auto d = PadDescriptor::torch_style(DType::f32, std::vector<int64_t>{n}, std::vector<int64_t>{lo, hi}, mode);
          if (d.ok() && PadBackwardPlan::select(*d, hopper()).ok()) f(mode, n, n + lo + hi, lo);
        }
}

template <class R>
void expect_select_error(const R& r, StatusCode code, const std::string& needle) {
  ASSERT_FALSE(r.ok());
  expect_error(r.status(), code, needle);
}

}  // namespace

TEST(PadPlan, SelectWithoutGpuForExplicitArch) {
  for (PadMode mode : {PadMode::kConstant, PadMode::kReflect, PadMode::kReplicate, PadMode::kCircular}) {
    auto d = make(DType::bf16, {16, 512, 16384}, {3, 3}, mode);
    auto fwd = PadPlan::select(d, hopper());
    ASSERT_TRUE(fwd.ok()) << fwd.status().to_string();
    EXPECT_EQ(fwd->workspace_size(), 0u);
    EXPECT_EQ(fwd->sku().name(), std::string("pad.") + std::string(enum_name(mode)) + ".fwd.bf16.bespoke.sm90.flat-warprows");
    EXPECT_TRUE(fwd->precision_guarantee().bit_exact);
    EXPECT_EQ(fwd->precision_guarantee().determinism, Determinism::kRunToRun);
    auto bwd = PadBackwardPlan::select(d, hopper());
    ASSERT_TRUE(bwd.ok()) << bwd.status().to_string();
    EXPECT_EQ(bwd->precision_guarantee().accumulator, DType::f32);
    EXPECT_EQ(bwd->precision_guarantee().bit_exact, mode == PadMode::kConstant);
    EXPECT_EQ(bwd->sku().name(), std::string("pad.") + std::string(enum_name(mode)) + ".bwd.bf16.bespoke.sm90.flat-warprows");
  }
  auto d64 = make(DType::f64, {4, 4}, {1, 1}, PadMode::kReflect);
  EXPECT_EQ(PadBackwardPlan::select(d64, hopper())->precision_guarantee().accumulator, DType::f64);
  // determinism required: satisfied (gather form)
  PlanPreference det = hopper();
  det.determinism = Determinism::kRunToRun;
  EXPECT_TRUE(PadBackwardPlan::select(d64, det).ok());
}

TEST(PadPlan, SelectRejectsArchitecturesNotBuilt) {
  PlanPreference p;
  p.target_arch = 80;
  auto r = PadPlan::select(make(DType::f32, {4}, {1, 1}), p);
  expect_select_error(r, StatusCode::kUnsupported, "pad: target sm_80 has no code in this build");
  p.target_arch = 0;  // ask the device: there is none on a CI machine, so the reason says so
  auto cur = PadPlan::select(make(DType::f32, {4}, {1, 1}), p);
  if (!cur.ok()) EXPECT_NE(cur.status().message().find("target_arch"), std::string::npos) << cur.status().message();
}

TEST(PadPlan, SelectRejectsForcedForeignBackend) {
  PlanPreference p = hopper();
  p.forced_backend = Backend::kCuDNN;
  expect_select_error(PadPlan::select(make(DType::f32, {4}, {1, 1}), p), StatusCode::kUnsupported,
                      "forced backend cudnn has no pad implementation");
}

TEST(PadPlan, DescriptorValidation) {
  auto P = hopper();
  expect_select_error(PadPlan::select(make(DType::c64, {4}, {1, 1}), P), StatusCode::kUnsupported,
                      "pad: dtype c64 is not supported (supported: f32, f16, bf16, f64, i8, u8, i16, i32, i64, bool)");
  expect_select_error(PadBackwardPlan::select(make(DType::i32, {4}, {1, 1}), P), StatusCode::kUnsupported,
                      "pad_backward: dtype i32 is not supported (supported: f32, f16, bf16, f64)");
  expect_select_error(PadPlan::select(make(DType::f32, {4}, {4, 0}, PadMode::kReflect), P), StatusCode::kInvalidProblem,
                      "reflect padding (4, 0) of axis 0 must be < in_shape[0] = 4 on both sides");
  expect_select_error(PadPlan::select(make(DType::f32, {4}, {0, 5}, PadMode::kCircular), P), StatusCode::kInvalidProblem,
                      "wraps around more than once");
  EXPECT_TRUE(PadPlan::select(make(DType::f32, {4}, {4, 4}, PadMode::kCircular), P).ok());
  expect_select_error(PadPlan::select(make(DType::f32, {0, 3}, {1, 1, 1, 0}, PadMode::kReplicate), P),
                      StatusCode::kInvalidProblem, "replicate padding of axis 0 needs in_shape[0] >= 1");
  expect_select_error(PadPlan::select(make(DType::f32, {3}, {-2, -1}, PadMode::kReplicate), P),
                      StatusCode::kInvalidProblem, "gives output size 0; it must be >= 1");
  expect_select_error(PadPlan::select(make(DType::f32, {3}, {-2, -2}), P), StatusCode::kInvalidProblem,
                      "gives a negative output size -1");
  EXPECT_TRUE(PadPlan::select(make(DType::f32, {3}, {-2, -1}), P).ok());  // empty result allowed
  expect_select_error(PadPlan::select(make(DType::f32, {3}, {-4, 5}), P), StatusCode::kInvalidProblem,
                      "pad_low[0] = -4 crops more than in_shape[0] = 3");
  expect_select_error(PadPlan::select(make(DType::f32, {3}, {5, -4}), P), StatusCode::kInvalidProblem,
                      "pad_high[0] = -4 crops more than in_shape[0] = 3");
  expect_select_error(PadPlan::select(make(DType::f32, {3}, {1, 1}, PadMode::kReflect, 2.0), P),
                      StatusCode::kInvalidProblem, "only meaningful in constant mode");
  expect_select_error(PadPlan::select(make(DType::i8, {3}, {1, 1}, PadMode::kConstant, 300), P),
                      StatusCode::kInvalidProblem, "value = 300 overflows");
  expect_select_error(PadPlan::select(make(DType::i32, {3}, {1, 1}, PadMode::kConstant, 1e10), P),
                      StatusCode::kInvalidProblem, "cannot be converted");
  expect_select_error(PadPlan::select(make(DType::i32, {3}, {1, 1}, PadMode::kConstant, NAN), P),
                      StatusCode::kInvalidProblem, "cannot be converted");
  PadDescriptor bad_rank;
  bad_rank.rank = 0;
  expect_select_error(PadPlan::select(bad_rank, P), StatusCode::kInvalidProblem, "rank = 0 must be in [1, 8]");
  PadDescriptor neg = make(DType::f32, {3, 3}, {1, 1});
  neg.in_shape[0] = -3;
  expect_select_error(PadPlan::select(neg, P), StatusCode::kInvalidProblem, "in_shape[0] = -3 must be >= 0");
  PadDescriptor ovf = make(DType::f32, {3}, {1, 1});
  ovf.pad_high[0] = INT64_MAX;
  expect_select_error(PadPlan::select(ovf, P), StatusCode::kInvalidProblem, "output size overflows int64");
  PadDescriptor huge = make(DType::u8, {1 << 30, 1 << 30, 1 << 30}, {1, 1});
  expect_select_error(PadPlan::select(huge, P), StatusCode::kInvalidProblem, "more than 2^63 elements");
  PadDescriptor bad_mode = make(DType::f32, {3}, {1, 1});
  bad_mode.mode = static_cast<PadMode>(9);
  expect_select_error(PadPlan::select(bad_mode, P), StatusCode::kInvalidProblem, "mode = 9 is not a PadMode");
  // torch_style argument errors
  expect_error(PadDescriptor::torch_style(DType::f32, {3, 3}, {1, 1, 1}).status(), StatusCode::kInvalidProblem,
               "pad length must be even but is 3");
  expect_error(PadDescriptor::torch_style(DType::f32, {3}, {1, 1, 1, 1}).status(), StatusCode::kInvalidProblem,
               "pad length 4 is more than twice the rank 1");
}

TEST(PadPlan, FillConversionFollowsPyTorch) {
  auto P = hopper();
  // integer fills truncate toward zero; bool: nonzero -> true; u8 wraps within [-255, 255]
  EXPECT_TRUE(PadPlan::select(make(DType::i32, {3}, {1, 1}, PadMode::kConstant, 1.5), P).ok());
  EXPECT_TRUE(PadPlan::select(make(DType::boolean, {3}, {1, 1}, PadMode::kConstant, 0.5), P).ok());
  EXPECT_TRUE(PadPlan::select(make(DType::u8, {3}, {1, 1}, PadMode::kConstant, -1), P).ok());
  EXPECT_TRUE(PadPlan::select(make(DType::i64, {3}, {1, 1}, PadMode::kConstant, INT64_MIN), P).ok());
}

TEST(PadPlan, DescriptorIsHashable) {
  auto a = make(DType::bf16, {2, 3}, {1, 1}, PadMode::kReflect);
  auto b = a;
  EXPECT_EQ(a, b);
  EXPECT_EQ(std::hash<PadDescriptor>{}(a), std::hash<PadDescriptor>{}(b));
  b.pad_high[1] = 2;
  EXPECT_NE(a, b);
  std::unordered_set<PadDescriptor> set{a, b, a};
  EXPECT_EQ(set.size(), 2u);
}

TEST(PadPlan, CanImplementErrorPaths) {
  auto d = make(DType::f32, {2, 3}, {1, 2, 0, 1});  // out [3, 6]
  auto plan = PadPlan::select(d, hopper());
  ASSERT_TRUE(plan.ok());
  alignas(16) static float xb[64], yb[64];
  auto x = TensorRef::of(xb, {2, 3});
  auto y = TensorMut::of(yb, {3, 6});
  EXPECT_TRUE(plan->can_implement({x, y}).ok());
  expect_error(plan->can_implement({TensorRef::of(xb, {3, 2}), y}), StatusCode::kInvalidProblem,
               "pad: x shape [3, 2] does not match the expected [2, 3]");
  expect_error(plan->can_implement({x, TensorMut::of(yb, {3, 5})}), StatusCode::kInvalidProblem,
               "pad: y shape [3, 5] does not match the expected [3, 6]");
  expect_error(plan->can_implement({TensorRef::make(xb, DType::f64, {2, 3}), y}), StatusCode::kInvalidProblem,
               "pad: x dtype f64 does not match the descriptor's f32");
  expect_error(plan->can_implement({TensorRef::of<float>(nullptr, {2, 3}), y}), StatusCode::kInvalidProblem,
               "pad: x data is null with 6 elements");
  expect_error(plan->can_implement({TensorRef::make(reinterpret_cast<const char*>(xb) + 2, DType::f32, {2, 3}), y}),
               StatusCode::kMisalignedOperand, "is not aligned to its 4-byte element");
  expect_error(plan->can_implement({x, TensorMut::of(yb, {3, 6}, {0, 1})}), StatusCode::kInvalidProblem,
               "pad: y has internally overlapping strides");
  expect_error(plan->can_implement({TensorRef::of(yb + 4, {2, 3}), y}), StatusCode::kInvalidProblem,
               "pad: y overlaps x");
  expect_error(plan->can_implement({TensorRef::of(xb, {2, 3, 1, 1, 1, 1, 1, 1, 1}), y}), StatusCode::kInvalidProblem,
               "pad: x rank = -1 must be in [0, 8]");
  expect_error(plan->can_implement({TensorRef::of(xb, {2, 3}, {INT64_MAX / 2, 1}), y}), StatusCode::kInvalidProblem,
               "address more than 2^63 bytes");
  // strided, broadcast (stride 0) and negative-stride inputs are fine; null is fine when empty
  EXPECT_TRUE(plan->can_implement({TensorRef::of(xb, {2, 3}, {0, 1}), y}).ok());
  EXPECT_TRUE(plan->can_implement({TensorRef::of(xb + 5, {2, 3}, {-3, -1}), y}).ok());
  auto e = PadPlan::select(make(DType::f32, {0, 3}, {1, 1}), hopper());
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->can_implement({TensorRef::of<float>(nullptr, {0, 3}), TensorMut::of<float>(nullptr, {0, 5})}).ok());
  // workspace: none needed, so a null workspace is accepted by contract
  EXPECT_EQ(plan->workspace_size(), 0u);

  auto bplan = PadBackwardPlan::select(d, hopper());
  ASSERT_TRUE(bplan.ok());
  EXPECT_TRUE(bplan->can_implement({TensorRef::of(yb, {3, 6}, {0, 0}), TensorMut::of(xb, {2, 3})}).ok());
  expect_error(bplan->can_implement({TensorRef::of(yb, {3, 6}), TensorMut::of(xb, {2, 3}, {1, 0})}),
               StatusCode::kInvalidProblem, "pad_backward: dx has internally overlapping strides");
  expect_error(bplan->can_implement({TensorRef::of(yb, {3, 6}), TensorMut::of(yb + 2, {2, 3})}),
               StatusCode::kInvalidProblem, "pad_backward: dx overlaps dy");
}

TEST(PadGeometry, CoalescesUnpaddedContiguousAxes) {
  // [16, 512, 16384] reflect (3, 3) on the last axis: rows merge into one axis of 8192
  auto d = make(DType::bf16, {16, 512, 16384}, {3, 3}, PadMode::kReflect);
  static uint16_t dummy[1];
  auto x = TensorRef::make(dummy, DType::bf16, {16, 512, 16384});
  auto y = TensorMut::make(dummy, DType::bf16, {16, 512, 16390});
  detail::PadGeometry g;
  ASSERT_TRUE(detail::pad_build_geometry("pad", d, x, y, false, &g).ok());
  EXPECT_EQ(g.rank, 2);
  EXPECT_EQ(g.n[0], 8192);
  EXPECT_EQ(g.m[1], 16390);
  EXPECT_EQ(g.rows, 8192);
  // core: columns [3, 16387) copy the source; (16384 - 7) / 8 aligned chunks fit any phase
  EXPECT_EQ(g.core_lo, 3);
  EXPECT_EQ(g.core_chunks, 2047);
  EXPECT_GE(g.chunks_per_tile * g.tiles_c, g.core_chunks);
  EXPECT_EQ(g.tiles_c, 8);  // 4 KB pieces of the 32 KB rows
  EXPECT_EQ(g.rows_per_warp, 4);
  EXPECT_EQ(g.blocks, (8192 / 4 / 8) * g.tiles_c);
  // 2D pad 1 on the last two axes: [2048, 256, 256] after merging the leading pair
  auto d2 = make(DType::f32, {32, 64, 256, 256}, {1, 1, 1, 1}, PadMode::kReplicate);
  auto x2 = TensorRef::make(dummy, DType::f32, {32, 64, 256, 256});
  auto y2 = TensorMut::make(dummy, DType::f32, {32, 64, 258, 258});
  ASSERT_TRUE(detail::pad_build_geometry("pad", d2, x2, y2, false, &g).ok());
  EXPECT_EQ(g.rank, 3);
  EXPECT_EQ(g.n[0], 2048);
  EXPECT_EQ(g.core_lo, 1);
  EXPECT_EQ(g.core_chunks, (256 - 3) / 4);
  EXPECT_EQ(g.tiles_c, 1);  // short rows: one warp takes whole rows
  EXPECT_EQ(g.rows_per_warp, 16);
  // a transposed destination makes its unit-stride axis the column axis
  auto yt = TensorMut::make(dummy, DType::f32, {6, 4}, {1, 6});
  auto dt = make(DType::f32, {4, 4}, {0, 0, 1, 1});
  ASSERT_TRUE(detail::pad_build_geometry("pad", dt, TensorRef::make(dummy, DType::f32, {4, 4}), yt, false, &g).ok());
  EXPECT_EQ(g.rank, 2);
  EXPECT_EQ(g.m[1], 6);
  EXPECT_EQ(g.ys[1], 1);
}

TEST(PadGeometry, BackwardCoreAlignmentAndSingleInterval) {
  // backward of [32, 64, 256, 256] bf16 reflect pad 1: dx rows are 512 bytes, so every row
  // starts at the destination's 16-byte phase and the core is exact (all 32 chunks)
  auto d = make(DType::bf16, {32, 64, 256, 256}, {1, 1, 1, 1}, PadMode::kReflect);
  alignas(16) static uint16_t buf[64];
  auto dx = TensorRef::make(buf, DType::bf16, {32, 64, 256, 256});
  auto dy = TensorRef::make(buf, DType::bf16, {32, 64, 258, 258});
  detail::PadGeometry g;
  ASSERT_TRUE(detail::pad_build_geometry("pad_backward", d, dx, dy, true, &g, buf).ok());
  EXPECT_EQ(g.core_lo, 0);  // every column's identity cell c + 1 exists
  EXPECT_EQ(g.core_a, 0);
  EXPECT_EQ(g.core_chunks, 32);
  EXPECT_EQ(g.single_lo, 2);  // columns 1 and 254 also take a mirrored cell
  EXPECT_EQ(g.single_hi, 254);
  // a destination 2 elements past a 16-byte boundary: the first aligned column is 6
  ASSERT_TRUE(detail::pad_build_geometry("pad_backward", d, dx, dy, true, &g, buf + 2).ok());
  EXPECT_EQ(g.core_a, 6);
  EXPECT_EQ(g.core_chunks, (256 - 6) / 8);
  // no pointer (or rows of differing phase): each row finds its own start, conservative count
  ASSERT_TRUE(detail::pad_build_geometry("pad_backward", d, dx, dy, true, &g).ok());
  EXPECT_EQ(g.core_a, -1);
  EXPECT_EQ(g.core_chunks, (256 - 7) / 8);
  auto d3 = make(DType::bf16, {4, 250}, {3, 3}, PadMode::kReplicate);  // 500-byte rows
  ASSERT_TRUE(detail::pad_build_geometry("pad_backward", d3, TensorRef::make(buf, DType::bf16, {4, 250}),
                                         TensorRef::make(buf, DType::bf16, {4, 256}), true, &g, buf)
                  .ok());
  EXPECT_EQ(g.core_a, -1);
  EXPECT_EQ(g.single_lo, 1);  // replicate: the first and last columns collect the pad cells
  EXPECT_EQ(g.single_hi, 249);
}

// The flat backward's per-axis cell rule against the definition: along one axis, x's cells
// are every padded coordinate o whose source is x, in increasing order (low range, identity,
// high range), for every mode and small sizes with pads from cropping to maximal.
TEST(PadGeometry, ColumnCellRuleListsEveryPreimageInOrder) {
  int checked = 0;
  for_each_small_axis([&](PadMode mode, int64_t n, int64_t m, int64_t lo) {
    const detail::PadColCells cc = detail::pad_col_cells(mode, n, m, lo);
    for (int64_t x = 0; x < n; ++x) {
      std::vector<int64_t> want, got;
      for (int64_t o = 0; o < m; ++o) {
        int64_t i = o - lo;  // the source of o (PyTorch's rules)
        if (mode == PadMode::kReflect) i = i < 0 ? -i : (i >= n ? 2 * (n - 1) - i : i);
        if (mode == PadMode::kReplicate) i = std::clamp<int64_t>(i, 0, n - 1);
        if (mode == PadMode::kCircular) i = i < 0 ? i + n : (i >= n ? i - n : i);
        if (i == x) want.push_back(o);
      }
      if (static_cast<uint64_t>(x - cc.l0) < static_cast<uint64_t>(cc.lw))
        for (int64_t t = 0; t < cc.llen; ++t) got.push_back(cc.pl * x + cc.ql + t);
      if (x + cc.lo >= 0 && x + cc.lo < cc.m) got.push_back(x + cc.lo);
      if (static_cast<uint64_t>(x - cc.h0) < static_cast<uint64_t>(cc.hw))
        for (int64_t t = 0; t < cc.hlen; ++t) got.push_back(cc.ph * x + cc.qh + t);
      ASSERT_EQ(got, want) << enum_name(mode) << " n=" << n << " m=" << m << " lo=" << lo << " x=" << x;
      ++checked;
    }
  });
  EXPECT_GT(checked, 1000);
}

// Repro: replicate (2, 2) on a row axis of 1 gives that row 5 preimage rows; the flat backward
// sets up at most 4, so it must not take this geometry (it once did and summed 4).
TEST(PadGeometry, FlatBackwardRefusesRowsWithMoreThanFourPreimageRows) {
  alignas(16) static float buf[64];
  detail::PadGeometry g;
  auto d = make(DType::f32, {1, 40}, {0, 0, 2, 2}, PadMode::kReplicate);
  ASSERT_TRUE(detail::pad_build_geometry("pad_backward", d, TensorRef::make(buf, DType::f32, {1, 40}),
                                         TensorRef::make(buf, DType::f32, {5, 40}), true, &g, buf)
                  .ok());
  detail::pad_plan_flat(&g, 4, buf, /*backward=*/true);
  EXPECT_EQ(g.flat_words, 0);
  auto d2 = make(DType::f32, {2, 40}, {0, 0, 2, 1}, PadMode::kReplicate);  // 3 + 1 rows at most: flat
  ASSERT_TRUE(detail::pad_build_geometry("pad_backward", d2, TensorRef::make(buf, DType::f32, {2, 40}),
                                         TensorRef::make(buf, DType::f32, {5, 40}), true, &g, buf)
                  .ok());
  detail::pad_plan_flat(&g, 4, buf, /*backward=*/true);
  EXPECT_GT(g.flat_words, 0);
}

// The pairs forward takes 2-byte rows of 2 to 8 segments of 32 words plus at most 4 words, with
// aligned x rows and y, padding cells only in the first and last segment; anything else is left
// to the flat kernel.
TEST(PadGeometry, PairsForwardAdmitsAlignedTwoByteRowsOfTwoToEightSegments) {
  alignas(16) static uint16_t buf[64];
  detail::PadGeometry g;
  auto plan = [&](std::vector<int64_t> in, std::vector<int64_t> pads, PadMode mode, int x_off = 0, int y_off = 0,
                  std::vector<int64_t> x_strides = {}) {
    const auto d = *PadDescriptor::torch_style(DType::bf16, in, pads, mode);
    std::vector<int64_t> out(in.size());
    for (size_t a = 0; a < in.size(); ++a) out[a] = d.out_dim(static_cast<int>(a));
    auto x = TensorRef::make(buf + x_off, DType::bf16, std::span<const int64_t>(in), std::span<const int64_t>(x_strides));
    auto y = TensorMut::make(buf + y_off, DType::bf16, std::span<const int64_t>(out));
    EXPECT_TRUE(detail::pad_build_geometry("pad", d, x, y, false, &g, y.data).ok());
    detail::pad_plan_pairs(&g, y.data, x.data);
    return g.pr;
  };
  // the benchmark's rows: 258 elements = 4 segments + 1 word, odd low pad
  detail::PadPairs pr = plan({32, 64, 256, 256}, {1, 1, 1, 1}, PadMode::kReflect);
  EXPECT_EQ(pr.nseg, 4);
  EXPECT_EQ(pr.words, 129);
  EXPECT_EQ(pr.shift, 1);
  EXPECT_EQ(pr.rw, 4);
  EXPECT_EQ(pr.rows, 2048 * 258);
  EXPECT_EQ(pr.tasks, 2048 * 258 / 4);
  EXPECT_EQ(pr.blocks, 2048 * 258 / 4 / 8);
  // 8 segments + 2 words, even low pad: 2 rows per warp
  pr = plan({16, 16, 512, 512}, {2, 2, 2, 2}, PadMode::kConstant);
  EXPECT_EQ(pr.nseg, 8);
  EXPECT_EQ(pr.shift, 0);
  EXPECT_EQ(pr.rw, 2);
  // a cropped low side (shift 1, the row's first word from its own columns)
  pr = plan({3, 254}, {-1, 3}, PadMode::kConstant);
  EXPECT_EQ(pr.nseg, 4);
  EXPECT_EQ(pr.shift, 1);
  // refused: y or x off 4-byte alignment, rows of one segment, a tail of 27 words, an odd x row
  // stride, padding reaching the second segment
  EXPECT_EQ(plan({32, 64, 256, 256}, {1, 1, 1, 1}, PadMode::kReflect, 0, 1).blocks, 0);
  EXPECT_EQ(plan({32, 64, 256, 256}, {1, 1, 1, 1}, PadMode::kReflect, 1, 0).blocks, 0);
  EXPECT_EQ(plan({4, 100}, {1, 1}, PadMode::kReflect).blocks, 0);
  EXPECT_EQ(plan({4, 300}, {4, 6}, PadMode::kReflect).blocks, 0);
  EXPECT_EQ(plan({4, 255}, {1, 2}, PadMode::kReflect).blocks, 0);
  EXPECT_EQ(plan({4, 256}, {1, 1}, PadMode::kReflect, 0, 0, {257, 1}).blocks, 0);
  EXPECT_EQ(plan({3, 200}, {70, 58}, PadMode::kReflect).blocks, 0);
  EXPECT_GT(plan({3, 200}, {40, 16}, PadMode::kReflect).blocks, 0);  // cells in lanes 0-19 of segment 0
  // repro: rows of one source column (two segments: no middle one to check) once passed, and
  // every lane's 4-byte word load would have left x; an empty x (all fill rows) is refused too
  EXPECT_EQ(plan({3, 1}, {100, 27}, PadMode::kConstant).blocks, 0);
  EXPECT_EQ(plan({0, 256}, {1, 1, 2, 2}, PadMode::kConstant).blocks, 0);
  EXPECT_GT(plan({3, 2}, {100, 26}, PadMode::kConstant).blocks, 0);
}

// pad_single_interval is the columns whose only cell is the identity (checked against the cell
// rule for every mode, n <= 7, pads from cropping to maximal): exactly, but for reflect's two
// end columns, which it may leave out. Repro: reflect with no padding once excluded columns 0
// and n - 1, so an unpadded column axis looked multi-cell.
TEST(PadGeometry, SingleIntervalIsTheIdentityOnlyColumns) {
  int checked = 0;
  for_each_small_axis([&](PadMode mode, int64_t n, int64_t m, int64_t lo) {
    const int64_t hi = m - n - lo;
    const detail::PadColCells cc = detail::pad_col_cells(mode, n, m, lo);
    int64_t x0 = 0, x1 = 0;
    detail::pad_single_interval(mode, n, m, lo, &x0, &x1);
    for (int64_t x = 0; x < n; ++x) {
      const bool low = static_cast<uint64_t>(x - cc.l0) < static_cast<uint64_t>(cc.lw) && cc.llen > 0;
      const bool high = static_cast<uint64_t>(x - cc.h0) < static_cast<uint64_t>(cc.hw) && cc.hlen > 0;
      const bool id = x + lo >= 0 && x + lo < m;
      const bool single = id && !low && !high, in = x >= x0 && x < x1;
      // reflect's ends x = 0 and n - 1 have no mirror, but lie outside a padded side's
      // mirrored columns: the interval leaves them out (conservative); exact elsewhere
      if (mode == PadMode::kReflect && (x == 0 || x == n - 1) && (lo > 0 || hi > 0)) {
        EXPECT_TRUE(!in || single) << "n=" << n << " pads (" << lo << ", " << hi << ") x=" << x;
      } else {
        EXPECT_EQ(in, single) << enum_name(mode) << " n=" << n << " pads (" << lo << ", " << hi << ") x=" << x;
      }
      ++checked;
    }
  });
  EXPECT_GT(checked, 1000);
}

// Geometry of contiguous x / y (bf16 for 2-byte elements, else f32) at a 16-byte aligned
// address, for the planners' tests: backward (dst = dx, src = dy) or forward (dst = y).
namespace {
alignas(16) float g_geom_buf[64];
detail::PadGeometry test_geometry(const PadDescriptor& d, std::initializer_list<int64_t> x_shape,
                                  std::initializer_list<int64_t> y_shape, int elem, bool backward) {
  detail::PadGeometry g;
  const DType dt = elem == 2 ? DType::bf16 : elem == 1 ? DType::u8 : DType::f32;
  EXPECT_TRUE(detail::pad_build_geometry(backward ? "pad_backward" : "pad", d, TensorRef::make(g_geom_buf, dt, x_shape),
                                         TensorRef::make(g_geom_buf, dt, y_shape), backward, &g, g_geom_buf)
                  .ok());
  return g;
}
}  // namespace

// The segment backward takes unit-stride rows whose columns have one cell each (a constant or
// unpadded column axis), with at most 4 preimage rows per row; its lane group covers the row's
// 16-byte chunks (up to 32) and a warp's tasks stay within 32 rows.
TEST(PadGeometry, SegmentBackwardPlanning) {
  auto plan = [](const PadDescriptor& d, std::initializer_list<int64_t> dx_shape, std::initializer_list<int64_t> dy_shape,
                 int elem) {
    detail::PadGeometry g = test_geometry(d, dx_shape, dy_shape, elem, /*backward=*/true);
    detail::pad_plan_segments(&g, elem, g_geom_buf, g_geom_buf);
    return g;
  };
  // constant 2-D, bf16 rows of 256 = 32 chunks: one 32-lane task per row
  auto g = plan(make(DType::bf16, {8, 256, 256}, {1, 1, 1, 1}), {8, 256, 256}, {8, 258, 258}, 2);
  EXPECT_EQ(g.seg_group_log2, 5);
  EXPECT_EQ(g.seg_per_row.d, 1u);
  EXPECT_EQ(g.seg_tasks, 8 * 256);
  EXPECT_GT(g.seg_tpw, 0);
  EXPECT_LE(g.seg_tpw, 32);
  // f32 rows of 4096 = 1024 chunks: 32 segments of 32 chunks; rows of 40 = 10 chunks: 16 lanes
  g = plan(make(DType::f32, {64, 4096}, {2, 3}), {64, 4096}, {64, 4101}, 4);
  EXPECT_EQ(g.seg_per_row.d, 32u);
  EXPECT_LE((g.seg_tpw - 1) / 32 + 2, 32);
  g = plan(make(DType::f32, {64, 40}, {0, 0, 1, 1}), {64, 40}, {66, 40}, 4);
  EXPECT_EQ(g.seg_group_log2, 4);
  EXPECT_EQ(g.seg_tasks, 64);
  // reflect on the row axis only: one cell per column, edge rows with two preimage rows
  g = plan(make(DType::f32, {64, 40}, {0, 0, 2, 2}, PadMode::kReflect), {64, 40}, {68, 40}, 4);
  EXPECT_GT(g.seg_tasks, 0);
  // reflect / replicate / circular columns have several cells: the flat kernel's
  for (PadMode m : {PadMode::kReflect, PadMode::kReplicate, PadMode::kCircular}) {
    g = plan(make(DType::f32, {64, 40}, {1, 1}, m), {64, 40}, {64, 42}, 4);
    EXPECT_EQ(g.seg_tasks, 0) << enum_name(m);
  }
  // 5 preimage rows (replicate (2, 2) of a row axis of 1) or rows under 4 chunks: not taken
  g = plan(make(DType::f32, {1, 40}, {0, 0, 2, 2}, PadMode::kReplicate), {1, 40}, {5, 40}, 4);
  EXPECT_EQ(g.seg_tasks, 0);
  g = plan(make(DType::f32, {64, 12}, {0, 0, 1, 1}), {64, 12}, {66, 12}, 4);
  EXPECT_EQ(g.seg_tasks, 0);
}

// The staged kernels take unit-stride columns with only the last two coalesced axes padded,
// no cropping; tiles of ~8 KB of dx (whole rows, or 4 KB pieces of long rows), padding staged
// with the edge tiles only when short, and a shared-memory budget under 48 KB.
// The forward of bf16 [32, 64, 256, 256] pad 1 (the benchmark's 2-D row, 258 columns) goes to
// the flat kernel with 4-byte words (258 is even; the staged forward declines it); a y that is
// only 2-byte aligned takes 2-byte words. Rows of 2048 columns or more go to neither (the row
// kernel's 16-byte copy); 1-byte rows of 44 columns take 4-byte words.
TEST(PadGeometry, FlatForwardWordsForShortRows) {
  auto d = make(DType::bf16, {32, 64, 256, 256}, {1, 1, 1, 1}, PadMode::kReflect);
  detail::PadGeometry g = test_geometry(d, {32, 64, 256, 256}, {32, 64, 258, 258}, 2, /*backward=*/false);
  detail::pad_plan_staged(&g, 2, g_geom_buf, g_geom_buf, /*backward=*/false);
  EXPECT_EQ(g.st.tiles, 0);
  detail::pad_plan_flat(&g, 2, g_geom_buf, /*backward=*/false);
  EXPECT_EQ(g.flat_epw, 2);
  EXPECT_EQ(g.flat_words, int64_t{32} * 64 * 258 * 258 / 2);
  detail::pad_plan_flat(&g, 2, reinterpret_cast<char*>(g_geom_buf) + 2, /*backward=*/false);
  EXPECT_EQ(g.flat_epw, 1);
  auto wide = make(DType::bf16, {16, 512, 16384}, {3, 3}, PadMode::kReflect);
  g = test_geometry(wide, {16, 512, 16384}, {16, 512, 16390}, 2, /*backward=*/false);
  detail::pad_plan_flat(&g, 2, g_geom_buf, /*backward=*/false);
  EXPECT_EQ(g.flat_words, 0);
  auto u8 = make(DType::u8, {64, 40}, {1, 3});
  g = test_geometry(u8, {64, 40}, {64, 44}, 1, /*backward=*/false);
  detail::pad_plan_flat(&g, 1, g_geom_buf, /*backward=*/false);
  EXPECT_EQ(g.flat_epw, 4);
  EXPECT_EQ(g.flat_words, 64 * 44 / 4);
}

TEST(PadGeometry, StagedPlanning) {
  float* buf = g_geom_buf;
  auto plan = [](const PadDescriptor& d, std::initializer_list<int64_t> dx_shape, std::initializer_list<int64_t> dy_shape,
                 int elem) {
    detail::PadGeometry g = test_geometry(d, dx_shape, dy_shape, elem, /*backward=*/true);
    detail::pad_plan_staged(&g, elem, g_geom_buf, g_geom_buf, /*backward=*/true);
    return g;
  };
  // bf16 [32, 64, 256, 256] reflect pad 1: rows of 512 B, 16-row tiles, both pads staged
  auto g = plan(make(DType::bf16, {32, 64, 256, 256}, {1, 1, 1, 1}, PadMode::kReflect), {32, 64, 256, 256},
                {32, 64, 258, 258}, 2);
  EXPECT_EQ(g.st.Wc, 256);
  EXPECT_EQ(g.st.T, 16);
  EXPECT_EQ(g.st.tiles, int64_t{32} * 64 * 16);
  EXPECT_EQ(g.st.ext_lo_h + g.st.ext_hi_h + g.st.ext_lo_w + g.st.ext_hi_w, 4);
  EXPECT_EQ(g.st.blk_out.d, 32u);  // aligned rows: exactly 512 / 16 blocks
  EXPECT_EQ(g.st.pitch % 16, 0);
  EXPECT_LE(g.st.smem, 48 * 1024);
  EXPECT_EQ(g.st.s_lo_w, 2);
  EXPECT_EQ(g.st.s_hi_w, 254);
  // bf16 [16, 512, 16384] pad 3: 4 KB pieces (2048 columns), 2 rows per tile
  g = plan(make(DType::bf16, {16, 512, 16384}, {3, 3}, PadMode::kCircular), {16, 512, 16384}, {16, 512, 16390}, 2);
  EXPECT_EQ(g.st.Wc, 2048);
  EXPECT_EQ(g.st.T, 2);
  EXPECT_EQ(g.st.H, 16 * 512);
  EXPECT_EQ(g.st.tiles, int64_t{16} * 512 / 2 * 8);
  // constant mode without cropping: a shifted copy, no element with more than one cell
  g = plan(make(DType::f32, {8, 100, 100}, {2, 2, 2, 2}), {8, 100, 100}, {8, 104, 104}, 4);
  EXPECT_GT(g.st.tiles, 0);
  EXPECT_EQ(g.st.s_lo_w, 0);
  EXPECT_EQ(g.st.s_hi_w, 100);
  // long pads are not staged with the edge tiles (their cells are read from dy)
  g = plan(make(DType::f32, {4, 100, 300}, {70, 3, 20, 5}, PadMode::kReplicate), {4, 100, 300}, {4, 125, 373}, 4);
  EXPECT_GT(g.st.tiles, 0);
  EXPECT_EQ(g.st.ext_lo_w, 0);
  EXPECT_EQ(g.st.ext_hi_w, 1);
  EXPECT_EQ(g.st.ext_lo_h, 0);
  EXPECT_EQ(g.st.ext_hi_h, 1);
  // narrow rows: the tile's rows are capped by shared memory
  g = plan(make(DType::f32, {4096, 3}, {1, 1, 1, 1}, PadMode::kReflect), {4096, 3}, {4098, 5}, 4);
  EXPECT_GT(g.st.tiles, 0);
  EXPECT_LE(g.st.smem, 48 * 1024);
  // the forward's tiles cover y: bf16 rows of 16390 in 9 equal pieces (16-byte multiples)
  auto plan_fwd = [](const PadDescriptor& d, std::initializer_list<int64_t> x_shape, std::initializer_list<int64_t> y_shape,
                     int elem) {
    detail::PadGeometry gf = test_geometry(d, x_shape, y_shape, elem, /*backward=*/false);
    detail::pad_plan_staged(&gf, elem, g_geom_buf, g_geom_buf, /*backward=*/false);
    return gf;
  };
  g = plan_fwd(make(DType::bf16, {16, 512, 16384}, {3, 3}, PadMode::kReflect), {16, 512, 16384}, {16, 512, 16390}, 2);
  EXPECT_EQ(g.st.Wc, 1824);
  EXPECT_EQ(g.st.tiles_c.d, 9u);
  EXPECT_EQ(g.st.T, 2);
  // f32 rows, and 2-byte rows that fit a tile, stay with the flat forward (measured faster)
  g = plan_fwd(make(DType::f32, {16, 512, 16384}, {3, 3}, PadMode::kReflect), {16, 512, 16384}, {16, 512, 16390}, 4);
  EXPECT_EQ(g.st.tiles, 0);
  g = plan_fwd(make(DType::bf16, {8, 256, 256}, {1, 1, 1, 1}, PadMode::kReflect), {8, 256, 256}, {8, 258, 258}, 2);
  EXPECT_EQ(g.st.tiles, 0);
  // not taken: cropping, a padded third axis, strided columns
  g = plan(make(DType::f32, {8, 100, 100}, {-1, 2}), {8, 100, 100}, {8, 100, 101}, 4);
  EXPECT_EQ(g.st.tiles, 0);
  g = plan(make(DType::f32, {8, 100, 100}, {1, 1, 1, 1, 1, 1}, PadMode::kReflect), {8, 100, 100}, {10, 102, 102}, 4);
  EXPECT_EQ(g.st.tiles, 0);
  {
    detail::PadGeometry gs;
    const auto d = make(DType::f32, {8, 32}, {1, 1}, PadMode::kReflect);
    EXPECT_TRUE(detail::pad_build_geometry("pad_backward", d, TensorRef::make(buf, DType::f32, {8, 32}, {64, 2}),
                                           TensorRef::make(buf, DType::f32, {8, 34}), true, &gs, buf)
                    .ok());
    detail::pad_plan_staged(&gs, 4, buf, buf, /*backward=*/true);
    EXPECT_EQ(gs.st.tiles, 0);
  }
}

TEST(PadGeometry, IndexWidthAtThe2Pow31Boundary) {
  static uint8_t dummy[1];
  const int64_t lim = (int64_t{1} << 31) - (int64_t{1} << 16);
  EXPECT_TRUE(detail::pad_fits_index32(TensorRef::make(dummy, DType::u8, {lim - 1})));
  EXPECT_FALSE(detail::pad_fits_index32(TensorRef::make(dummy, DType::u8, {lim})));
  EXPECT_FALSE(detail::pad_fits_index32(TensorRef::make(dummy, DType::u8, {int64_t{1} << 31})));
  // Kernels index in elements (the pointer add is 64-bit): few elements but an element offset
  // past 2^31 takes the 64-bit path; a byte extent past 2^31 alone does not need it.
  EXPECT_FALSE(detail::pad_fits_index32(TensorRef::make(dummy, DType::f32, {2, 2}, {int64_t{1} << 31, 1})));
  EXPECT_FALSE(detail::pad_fits_index32(TensorRef::make(dummy, DType::f32, {2}, {-(int64_t{1} << 31)})));
  EXPECT_TRUE(detail::pad_fits_index32(TensorRef::make(dummy, DType::f32, {2, 2}, {int64_t{1} << 30, 1})));
  EXPECT_TRUE(detail::pad_fits_index32(TensorRef::make(dummy, DType::f32, {2, 2}, {1 << 20, 1})));
}

TEST(PadGeometry, FuzzedDescriptorsNeverCrashAndStayInBounds) {
  // Random descriptors through select()/can_implement()/geometry: no crash, no UB (run under
  // ASan/UBSan in the sanitizer build), and every accepted problem's tiling covers the output.
  std::mt19937_64 rng(7);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  int accepted = 0;
  static uint8_t dummy[1];
  for (int it = 0; it < 20000; ++it) {
    PadDescriptor d;
    d.dtype = static_cast<DType>(pick(0, kNumDTypes - 1));
    d.mode = static_cast<PadMode>(pick(0, 4));
    d.rank = static_cast<int>(pick(-1, 9));
    for (int a = 0; a < kMaxRank; ++a) {
      d.in_shape[a] = pick(0, 9) == 0 ? pick(-3, 0) : pick(0, 7);
      d.pad_low[a] = pick(-8, 8);
      d.pad_high[a] = pick(-8, 8);
      if (pick(0, 50) == 0) d.pad_high[a] = INT64_MAX - pick(0, 3);
    }
    auto plan = PadPlan::select(d, hopper());
    if (!plan.ok()) {
      EXPECT_FALSE(plan.status().message().empty());
      continue;
    }
    ++accepted;
    int64_t out[kMaxRank];
    for (int a = 0; a < d.rank; ++a) {
      out[a] = d.out_dim(a);
      ASSERT_GE(out[a], 0);
    }
    auto x = TensorRef::make(dummy, d.dtype, std::span<const int64_t>(d.in_shape, d.rank));
    auto y = TensorMut::make(dummy + 0, d.dtype, std::span<const int64_t>(out, d.rank));
    detail::PadGeometry g;
    Status gs = detail::pad_build_geometry("pad", d, x, y, false, &g);
    if (!gs.ok()) {  // only absurd sizes (~2^63 cells) may be refused, and then by the grid limit
      EXPECT_EQ(gs.code(), StatusCode::kUnsupported);
      EXPECT_TRUE(gs.message().find("grid limit") != std::string::npos ||
                  gs.message().find("exceeds the 2^30 supported") != std::string::npos) << gs.message();
      EXPECT_GT(y.numel(), int64_t{1} << 40);
      continue;
    }
    if (y.numel() > 0) {
      const int64_t vec = detail::pad_chunk_elems(static_cast<int>(dtype_size(d.dtype)));
      EXPECT_GE(g.core_lo, 0);
      EXPECT_LE(g.core_chunks, g.m[g.rank - 1] / vec);
      EXPECT_GE(g.chunks_per_tile * g.tiles_c, g.core_chunks);
      EXPECT_LE(g.chunks_per_tile, 512);
      EXPECT_LE(g.rows_per_warp, 32);
      int64_t prod = g.rows * g.m[g.rank - 1];
      EXPECT_EQ(prod, y.numel());
    }
  }
  EXPECT_GT(accepted, 100);
}
