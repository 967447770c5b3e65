// Host tier for GatherPlan / ScatterPlan / NonzeroPlan: the factories and operands, the algorithm choice
// (atomic / sort against determinism and reduce), the workspace of the sorted pass, the
// refusals (each naming its field) and run() on empty views touching nothing. The data
// movement is the device tier's (contract suite over bench/problems/ci/copy.txt against
// harness/ref_gather_scatter.cpp, tests/device/test_gather_scatter_device.cpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "baracuda/core/any_plan.hpp"
#include "baracuda/ops/gather_scatter.hpp"
#include "baracuda/ops/nonzero.hpp"
#include "host/host_test_util.hpp"

using namespace baracuda;
using baracuda::test::expect_refused;
using baracuda::test::hopper;

TEST(GatherScatterPlan, FactoriesAndOperands) {
  const int64_t in[] = {5, 7, 3}, idx[] = {5, 9, 3};
  auto g = GatherPlan::select(GatherDescriptor::gather(DType::bf16, DType::i32, in, idx, 1), hopper());
  ASSERT_TRUE(g) << g.status().message();
  EXPECT_TRUE(g->precision_guarantee().bit_exact);
  EXPECT_EQ(g->expected_operands().find("index")->rank, 3);
  EXPECT_EQ(g->sku().op, "gather");
  auto s = GatherPlan::select(GatherDescriptor::index_select(DType::f32, DType::i64, in, 0, 11), hopper());
  ASSERT_TRUE(s) << s.status().message();
  EXPECT_EQ(s->expected_operands().find("index")->rank, 1);
  EXPECT_EQ(s->expected_operands().find("index")->shape[0], 11);
  EXPECT_EQ(s->expected_operands().find("out")->shape[0], 11);
  EXPECT_EQ(s->sku().op, "index_select");

  const int64_t self[] = {32, 64};
  auto add = ScatterPlan::select(ScatterDescriptor::index(DType::bf16, DType::i64, self, 0, 100), hopper());
  ASSERT_TRUE(add) << add.status().message();
  EXPECT_EQ(add->sku().variant, "atomic");
  EXPECT_EQ(add->workspace_size(), 0u);
  EXPECT_EQ(add->precision_guarantee().determinism, Determinism::kAny);
  EXPECT_EQ(add->expected_operands().find("src")->shape[0], 100);
  PlanPreference det = hopper();
  det.determinism = Determinism::kRunToRun;
  auto sorted = ScatterPlan::select(ScatterDescriptor::index(DType::bf16, DType::i64, self, 0, 100), det);
  ASSERT_TRUE(sorted) << sorted.status().message();
  EXPECT_EQ(sorted->sku().variant, "sort");
  EXPECT_GT(sorted->workspace_size(), 4u * 100 * 4);  // keys and positions twice, plus CUB's
  EXPECT_EQ(sorted->precision_guarantee().determinism, Determinism::kRunToRun);
  EXPECT_EQ(sorted->precision_guarantee().accumulator, DType::f32);
  // amax and integer sums are deterministic atomically: no sort needed
  ScatterDescriptor mx = ScatterDescriptor::scatter(DType::f32, DType::i64, self, self, 1, ScatterReduce::kAmax);
  EXPECT_EQ(ScatterPlan::select(mx, det)->sku().variant, "atomic");
  ScatterDescriptor isum = ScatterDescriptor::scatter(DType::i32, DType::i64, self, self, 1, ScatterReduce::kSum);
  EXPECT_EQ(ScatterPlan::select(isum, det)->sku().variant, "atomic");
  // mean always sorts
  ScatterDescriptor mean = ScatterDescriptor::scatter(DType::f32, DType::i64, self, self, 1, ScatterReduce::kMean);
  EXPECT_EQ(ScatterPlan::select(mean, hopper())->sku().variant, "sort");
  // the value form has no src
  ScatterDescriptor fill = ScatterDescriptor::index(DType::f8e4m3, DType::i32, self, 1, 3, ScatterReduce::kNone);
  fill.src_is_value = true;
  auto f = ScatterPlan::select(fill, hopper());
  ASSERT_TRUE(f) << f.status().message();
  EXPECT_EQ(f->expected_operands().find("src"), nullptr);
}

TEST(GatherScatterPlan, WideKeysPast32Bits) {
  // 2^33 targets: 64-bit keys (the workspace doubles per position)
  const int64_t self[] = {int64_t{1} << 33}, idx[] = {1000};
  PlanPreference det = hopper();
  det.determinism = Determinism::kRunToRun;
  auto narrow = ScatterPlan::select(ScatterDescriptor::scatter(DType::f32, DType::i64, idx, idx, 0, ScatterReduce::kSum), det);
  auto wide = ScatterPlan::select(ScatterDescriptor::scatter(DType::f32, DType::i64, self, idx, 0, ScatterReduce::kSum), det);
  ASSERT_TRUE(narrow && wide);
  EXPECT_GT(wide->workspace_size(), narrow->workspace_size());
}

TEST(GatherScatterPlan, RefusalsNameTheField) {
  const StatusCode bad = StatusCode::kInvalidProblem, unsup = StatusCode::kUnsupported;
  expect_refused("gather", "dtype=f32 index_dtype=i64 rank=2 input_shape=3,4 index_shape=3,4 dim=2", bad, "dim = 2 is out of range [-2, 1]");
  expect_refused("gather", "dtype=f32 index_dtype=i64 rank=2 input_shape=3,4 index_shape=4,9 dim=1", bad,
                 "index_shape[0] = 4 must be <= input_shape[0] = 3");
  expect_refused("gather", "dtype=f32 index_dtype=i64 form=slices rank=2 input_shape=3,4 index_shape=2,9 dim=1", bad,
                 "index_shape[0] = 2 must equal input_shape[0] = 3");
  expect_refused("gather", "dtype=f32 index_dtype=f32 rank=1 input_shape=3 index_shape=3", unsup, "index_dtype f32 is not supported");
  expect_refused("gather", "dtype=f32 index_dtype=i64 rank=1 input_shape=3 index_shape=-1", bad, "index_shape[0] = -1 must be >= 0");
  expect_refused("gather", "dtype=f32 index_dtype=i64 form=slices rank=0", bad, "slices form needs rank >= 1");
  expect_refused("gather", "dtype=i8 index_dtype=i64 rank=1 input_shape=3 index_shape=3 fill_value=300", bad, "fill_value = 300 overflows i8");
  // repro (a fuzzer's rank): refused before any per-axis table is indexed by it
  expect_refused("gather", "dtype=f32 index_dtype=i64 rank=2147483647 dim=0", bad, "rank = 2147483647");
  expect_refused("scatter", "dtype=f32 index_dtype=i64 rank=-5 dim=0", bad, "rank = -5");
  expect_refused("scatter", "dtype=bool index_dtype=i64 rank=1 self_shape=3 index_shape=3 reduce=sum", unsup,
                 "dtype bool is not supported (supported: f32, f16, bf16, f64, i8, u8, i16, i32, i64) with reduce sum");
  expect_refused("scatter", "dtype=f32 index_dtype=i64 rank=1 self_shape=3 index_shape=3 include_self=false", bad,
                 "include_self = false needs a reduction");
  expect_refused("scatter", "dtype=f32 index_dtype=i64 rank=1 self_shape=3 index_shape=3 reduce=prod alpha=2", bad,
                 "alpha = 2 applies to reduce sum only");
  expect_refused("scatter", "dtype=i32 index_dtype=i64 rank=1 self_shape=3 index_shape=3 reduce=sum alpha=0.5", bad,
                 "alpha = 0.5 must be an integer");
  expect_refused("scatter", "dtype=f32 index_dtype=i64 rank=1 self_shape=3 index_shape=3 reduce=mean algo=atomic", unsup, "mean sorts");
  expect_refused("scatter", "dtype=i8 index_dtype=i64 rank=1 self_shape=3 index_shape=3 src_is_value=true value=300", bad, "value");
  expect_refused("scatter", "dtype=f32 index_dtype=i64 rank=2 self_shape=3,4 index_shape=3,4 dim=-3", bad, "dim = -3 is out of range");
  expect_refused("scatter", "dtype=f32 index_dtype=i64 rank=1 self_shape=4611686018427387904 index_shape=1", bad, "more than 2^58");
}

TEST(GatherScatterPlan, AtomicRefusedUnderRunToRun) {
  PlanPreference det = hopper();
  det.determinism = Determinism::kRunToRun;
  const int64_t self[] = {8, 8};
  ScatterDescriptor d = ScatterDescriptor::scatter(DType::f32, DType::i64, self, self, 0, ScatterReduce::kSum);
  d.algo = ScatterAlgo::kAtomic;
  auto p = ScatterPlan::select(d, det);
  ASSERT_FALSE(p);
  test::expect_error(p.status(), StatusCode::kUnsupported, "algo = atomic is not run-to-run deterministic for reduce sum of f32");
}

TEST(GatherScatterPlan, EmptyViewsRunNothing) {
  auto g = AnyPlan::select("gather", "dtype=f32 index_dtype=i64 rank=2 input_shape=1099511627776,4 index_shape=0,4 dim=0", hopper());
  ASSERT_TRUE(g) << g.status().message();
  const int64_t in[] = {int64_t{1} << 40, 4}, ins[] = {4, 1}, out[] = {0, 4}, outs[] = {4, 1};
  void* never_read = reinterpret_cast<void*>(uintptr_t{1} << 20);  // a non-empty input: run() must not touch it
  const NamedView gv[] = {{"input", TensorMut::make(never_read, DType::f32, in, ins)},
                          {"index", TensorMut::make(nullptr, DType::i64, out, outs)},
                          {"out", TensorMut::make(nullptr, DType::f32, out, outs)}};
  Status s = g->run(nullptr, {}, gv);
  EXPECT_TRUE(s.ok()) << s.to_string();
  auto sc = AnyPlan::select("scatter", "dtype=f32 index_dtype=i64 rank=2 self_shape=0,4 index_shape=0,4 dim=0 reduce=sum", hopper());
  ASSERT_TRUE(sc) << sc.status().message();
  const NamedView sv[] = {{"self", TensorMut::make(nullptr, DType::f32, out, outs)},
                          {"index", TensorMut::make(nullptr, DType::i64, out, outs)},
                          {"src", TensorMut::make(nullptr, DType::f32, out, outs)},
                          {"out", TensorMut::make(nullptr, DType::f32, out, outs)}};
  s = sc->run(nullptr, {}, sv);
  EXPECT_TRUE(s.ok()) << s.to_string();
}

TEST(NonzeroPlan, OperandsAndRefusals) {
  const int64_t shape[] = {7, 9, 13};
  auto nz = NonzeroPlan::select(NonzeroDescriptor::nonzero(DType::bf16, shape), hopper());
  ASSERT_TRUE(nz) << nz.status().message();
  EXPECT_EQ(nz->expected_operands().find("out")->shape[0], 7 * 9 * 13);  // the upper bound: numel
  EXPECT_EQ(nz->expected_operands().find("out")->shape[1], 3);
  EXPECT_EQ(nz->expected_operands().find("out")->dtype, DType::i64);
  EXPECT_GT(nz->workspace_size(), 0u);
  auto ms = NonzeroPlan::select(NonzeroDescriptor::masked_scatter(DType::f32, shape, 40), hopper());
  ASSERT_TRUE(ms) << ms.status().message();
  EXPECT_EQ(ms->expected_operands().find("source")->shape[0], 40);
  EXPECT_NE(ms->expected_operands().find("mask"), nullptr);
  const StatusCode bad = StatusCode::kInvalidProblem;
  expect_refused("nonzero", "dtype=f32 rank=1 shape=5 max_count=-2", bad, "max_count = -2 must be >= 0");
  expect_refused("nonzero", "op=masked_scatter dtype=f32 rank=1 shape=5 source_numel=-3", bad, "source_numel = -3");
  expect_refused("nonzero", "dtype=f32 rank=9", bad, "rank = 9");
  expect_refused("nonzero", "dtype=f32 rank=2 shape=3,4 max_count=4611686018427387905", bad, "past 2^58");
  // repro: a stride-0 view of 2^50 positions would have wrapped the grid's block count
  expect_refused("nonzero", "dtype=u8 rank=1 shape=1125899906842624 max_count=0", StatusCode::kUnsupported, "more than 2^31 tiles");
}
