// Host tier for CatPlan: the factories, the operands "inputs[i]", the sizes list as text, the
// refusals (each naming its field), and run() on an empty output touching nothing. The kernel's
// data movement is the device tier's (contract suite over bench/problems/ci/copy.txt, every
// element exact, and tests/device/test_cat_device.cpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "baracuda/core/any_plan.hpp"
#include "baracuda/ops/cat.hpp"
#include "host/host_test_util.hpp"

using namespace baracuda;
using baracuda::test::expect_error;
using baracuda::test::expect_refused;
using baracuda::test::hopper;

TEST(CatPlan, FactoriesAndOperands) {
  const int64_t shape[] = {4, 0, 64};
  const int64_t sizes[] = {8, 0, 24};
  const CatDescriptor d = CatDescriptor::cat(DType::bf16, shape, -2, sizes);
  EXPECT_EQ(d.shape[1], 32);
  EXPECT_EQ(d.begin(2), 8);
  auto p = CatPlan::select(d, hopper());
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_EQ(p->workspace_size(), 0u);
  EXPECT_TRUE(p->precision_guarantee().bit_exact);
  const OperandSpec* in2 = p->expected_operands().find("inputs[2]");
  ASSERT_NE(in2, nullptr);
  EXPECT_EQ(in2->shape[1], 24);
  EXPECT_EQ(p->expected_operands().find("inputs[1]")->shape[1], 0);
  EXPECT_EQ(p->expected_operands().find("out")->shape[1], 32);

  const int64_t in_shape[] = {3, 5};
  const CatDescriptor s = CatDescriptor::make_stack(DType::f32, in_shape, -1, 4);  // -> [3, 5, 4]
  EXPECT_EQ(s.rank, 3);
  EXPECT_EQ(s.shape[2], 4);
  EXPECT_EQ(s.sizes.size(), 4u);
  auto q = CatPlan::select(s, hopper());
  ASSERT_TRUE(q) << q.status().message();
  const OperandSpec* in3 = q->expected_operands().find("inputs[3]");
  ASSERT_NE(in3, nullptr);
  EXPECT_EQ(in3->rank, 2);
  EXPECT_EQ(in3->shape[1], 5);
}

TEST(CatPlan, SizesAsText) {
  auto p = AnyPlan::select("cat", "dtype=i64 rank=2 shape=7,3 dim=0 sizes=2,0,5", hopper());
  ASSERT_TRUE(p) << p.status().message();
  const CatDescriptor* d = p->descriptor<CatDescriptor>();
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->sizes, (IntList{2, 0, 5}));
  EXPECT_NE(to_string(*d).find("sizes=2,0,5"), std::string::npos) << to_string(*d);
  CatDescriptor back;
  ASSERT_TRUE(from_string(to_string(*d), &back).ok());
  EXPECT_EQ(back, *d);
  EXPECT_EQ(hash_fields(back), hash_fields(*d));
  EXPECT_FALSE(AnyPlan::select("cat", "dtype=f32 rank=1 shape=3 sizes=1,,2", hopper()));
  EXPECT_FALSE(AnyPlan::select("cat", "dtype=f32 rank=1 shape=3 sizes=1,x", hopper()));
}

TEST(CatPlan, RefusalsNameTheField) {
  expect_refused("cat", "dtype=f32 rank=0 sizes=1", StatusCode::kInvalidProblem, "rank = 0");
  expect_refused("cat", "dtype=f32 rank=2 shape=3,4 dim=2 sizes=3", StatusCode::kInvalidProblem, "dim = 2 is out of range [-2, 1]");
  expect_refused("cat", "dtype=f32 rank=2 shape=3,4 dim=-3 sizes=3", StatusCode::kInvalidProblem, "dim = -3");
  expect_refused("cat", "dtype=f32 rank=2 shape=3,4 dim=0", StatusCode::kInvalidProblem, "sizes is empty");
  expect_refused("cat", "dtype=f32 rank=2 shape=3,4 dim=0 sizes=4,-1", StatusCode::kInvalidProblem, "sizes[1] = -1 must be >= 0");
  expect_refused("cat", "dtype=f32 rank=2 shape=3,4 dim=0 sizes=1,1", StatusCode::kInvalidProblem, "shape[0] = 3 must equal the sum of sizes (2)");
  expect_refused("cat", "dtype=f32 rank=2 shape=2,4 dim=0 sizes=1,1,0 stack=true", StatusCode::kInvalidProblem, "sizes[2] = 0 must be 1");
  expect_refused("cat", "dtype=f32 rank=2 shape=3,4 dim=0 sizes=9223372036854775807,9223372036854775807", StatusCode::kInvalidProblem,
          "the sizes sum past 2^63");
  expect_refused("cat", "dtype=f32 rank=2 shape=4611686018427387904,4 dim=0 sizes=4611686018427387904", StatusCode::kInvalidProblem,
          "more than 2^58 elements");
}

// An empty output whose other extents multiply past 2^63 is a valid problem with nothing to do:
// run() must not form the product of the extents before and after dim.
TEST(CatPlan, EmptyOutputWithHugeExtents) {
  auto p = AnyPlan::select("cat", "dtype=f32 rank=3 shape=9223372036854775807,0,4 dim=1 sizes=0,0", hopper());
  ASSERT_TRUE(p) << p.status().message();
  std::vector<NamedView> views;
  const int64_t strides[] = {0, 4, 1};  // (contiguous strides would address past 2^63 bytes: refused by the view check)
  for (const OperandSpec& o : p->operands()) views.push_back({o.name, TensorMut::make(nullptr, o.dtype, o.dims(), strides)});
  const Status s = p->run(nullptr, {}, views);
  EXPECT_TRUE(s.ok()) << s.to_string();
}

TEST(CatPlan, ArgsChecks) {
  const int64_t shape[] = {2, 3};
  const int64_t sizes[] = {1, 1};
  auto p = CatPlan::select(CatDescriptor::cat(DType::f32, shape, 0, sizes), hopper());
  ASSERT_TRUE(p) << p.status().message();
  alignas(16) static float a[3], b[3], out[6];
  const TensorRef ins[] = {TensorRef::make(a, DType::f32, {1, 3}), TensorRef::make(b, DType::f32, {1, 3})};
  expect_error(p->can_implement({std::span<const TensorRef>(ins, 1), TensorMut::make(out, DType::f32, {2, 3})}),
               StatusCode::kInvalidProblem, "1 inputs given, the descriptor has 2");
  expect_error(p->can_implement({ins, TensorMut::make(a, DType::f32, {2, 3})}), StatusCode::kInvalidProblem, "out overlaps inputs[0]");
  expect_error(p->can_implement({ins, TensorMut::make(out, DType::f32, {3, 2})}), StatusCode::kInvalidProblem, "out");
  EXPECT_TRUE(p->can_implement({ins, TensorMut::make(out, DType::f32, {2, 3})}).ok());
  // the same tensor twice is a valid cat
  const TensorRef twice[] = {ins[0], ins[0]};
  EXPECT_TRUE(p->can_implement({twice, TensorMut::make(out, DType::f32, {2, 3})}).ok());

  // nothing to write: OK before any CUDA call (this machine may have no GPU)
  const int64_t empty_shape[] = {0, 3};
  auto e = CatPlan::select(CatDescriptor::cat(DType::f32, empty_shape, 1, sizes), hopper());
  ASSERT_TRUE(e) << e.status().message();
  const TensorRef none[] = {TensorRef::make(nullptr, DType::f32, {0, 1}), TensorRef::make(nullptr, DType::f32, {0, 1})};
  EXPECT_TRUE(e->run(nullptr, {}, {none, TensorMut::make(nullptr, DType::f32, {0, 2})}).ok());
}

// torch.cat's type promotion: promoted() gives the result_type; in_dtypes round-trips as text;
// each input operand has its own dtype; a result that cannot be cast to out's dtype is refused.
TEST(CatPlan, MixedInputDtypesPromote) {
  const int64_t shape[] = {4, 0};
  const int64_t sizes[] = {2, 3, 1};
  const DType ins[] = {DType::u8, DType::i8, DType::bf16};
  CatDescriptor d = CatDescriptor::cat(DType::f32, shape, 1, sizes);
  d.promoted(ins);
  EXPECT_EQ(d.dtype, DType::bf16);  // (u8, i8) -> i16, (i16, bf16) -> bf16
  EXPECT_EQ(d.in_dtype(0), DType::u8);
  auto p = CatPlan::select(d, hopper());
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_EQ(p->expected_operands().find("inputs[1]")->dtype, DType::i8);
  EXPECT_EQ(p->expected_operands().find("out")->dtype, DType::bf16);
  EXPECT_EQ(p->sku().variant, "rows+walk+convert");
  EXPECT_EQ(CatDescriptor(d).promoted(std::vector<DType>{DType::f16, DType::bf16}).dtype, DType::f32);

  auto t = AnyPlan::select("cat", "dtype=f64 rank=2 shape=3,4 dim=0 sizes=1,2 in_dtypes=f32,i64", hopper());
  ASSERT_TRUE(t) << t.status().message();
  const CatDescriptor* td = t->descriptor<CatDescriptor>();
  EXPECT_EQ(td->in_dtypes, (DTypeVec{DType::f32, DType::i64}));
  EXPECT_NE(to_string(*td).find("in_dtypes=f32,i64"), std::string::npos) << to_string(*td);
  CatDescriptor back;
  ASSERT_TRUE(from_string(to_string(*td), &back).ok());
  EXPECT_EQ(back, *td);
  EXPECT_NE(hash_fields(back), hash_fields(CatDescriptor::cat(DType::f64, std::vector<int64_t>{3, 4}, 0, std::vector<int64_t>{1, 2})));
  EXPECT_FALSE(AnyPlan::select("cat", "dtype=f32 rank=1 shape=3 sizes=1,2 in_dtypes=f32,x", hopper()));

  expect_refused("cat", "dtype=f32 rank=1 shape=3 sizes=1,2 in_dtypes=f32", StatusCode::kInvalidProblem,
                 "in_dtypes has 1 entries, sizes 2");
  expect_refused("cat", "dtype=i32 rank=1 shape=3 sizes=1,2 in_dtypes=i32,f16", StatusCode::kInvalidProblem,
                 "the inputs' result type f16 cannot be cast to dtype = i32");
  expect_refused("cat", "dtype=bool rank=1 shape=3 sizes=1,2 in_dtypes=bool,u8", StatusCode::kInvalidProblem,
                 "result type u8 cannot be cast to dtype = bool");
  expect_refused("cat", "dtype=f32 rank=1 shape=3 sizes=1,2 in_dtypes=f8e4m3,f8e5m2", StatusCode::kUnsupported,
                 "in_dtypes[1] = f8e5m2 does not promote with f8e4m3");
  // a wider out than the result type is PyTorch's cat(out=) too
  EXPECT_TRUE(AnyPlan::select("cat", "dtype=f64 rank=1 shape=3 sizes=1,2 in_dtypes=i8,u8", hopper()));
}
