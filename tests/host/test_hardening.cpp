// Hostile input is normal input: each defect a hostile caller found, as a one-line repro that
// must give a clear Status (never a crash, a wrap, a write or undefined behaviour). The host tier
// runs these again under ASan + UBSan (scripts/test.sh), where UB aborts the test.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "core/checked_math.hpp"
#include "core/validate.hpp"

using namespace baracuda;

namespace {

PlanPreference hopper() {
  PlanPreference p;
  p.target_arch = 90;
  return p;
}

// The status is an error of `code` whose message contains `what`.
void expect_error(const Status& s, StatusCode code, const std::string& what) {
  EXPECT_FALSE(s.ok()) << "accepted; expected: " << what;
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_NE(s.message().find(what), std::string::npos) << "message: " << s.message() << "\nexpected to contain: " << what;
}

void expect_refused(std::string_view op, std::string_view problem, const std::string& what) {
  auto p = AnyPlan::select(op, problem, hopper());
  ASSERT_FALSE(p.ok()) << op << " " << problem << " was selected";
  EXPECT_NE(p.status().message().find(what), std::string::npos) << p.status().to_string() << "\nexpected to contain: " << what;
}

// A fake device address (never dereferenced on the host: the views are only checked).
void* dev(uintptr_t a) { return reinterpret_cast<void*>(a); }

}  // namespace

// 1. elementwise abs on DType(77); `to` into DType(77): refused at select, naming the field.
TEST(Hardening, OutOfRangeDtypesRefusedAtSelect) {
  const DType bad = static_cast<DType>(77);
  auto p = ElementwisePlan::select(ElementwiseDescriptor::make(EwOp::abs, {EwOperand::tensor(bad, {4})}), hopper());
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("dtype"), std::string::npos) << p.status().to_string();
  ElementwiseDescriptor to = ElementwiseDescriptor::make(EwOp::to, {EwOperand::tensor(DType::f32, {4})});
  to.out_dtype = bad;
  auto q = ElementwisePlan::select(to, hopper());
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("out_dtype"), std::string::npos) << q.status().to_string();
  // a selected plan given a view of DType(77): refused, no division by its size 0
  auto ok = ElementwisePlan::select(ElementwiseDescriptor::make(EwOp::abs, {EwOperand::tensor(DType::f32, {4})}), hopper());
  ASSERT_TRUE(ok.ok());
  ElementwiseArgs a;
  a.in[0] = TensorRef::make(dev(0x10000), DType::f32, {4});
  a.out = TensorMut::make(dev(0x20000), DType::f32, {4});
  a.out.dtype = bad;
  expect_error(ok->can_implement(a), StatusCode::kInvalidProblem, "out");
  // every enum of the preference is range-checked too
  PlanPreference pref = hopper();
  pref.determinism = static_cast<Determinism>(7);
  expect_error(ElementwisePlan::select(ElementwiseDescriptor::make(EwOp::abs, {EwOperand::tensor(DType::f32, {4})}), pref).status(),
               StatusCode::kInvalidProblem, "determinism");
  pref = hopper();
  pref.forced_backend = static_cast<Backend>(99);
  expect_error(PadPlan::select(PadDescriptor{}, pref).status(), StatusCode::kInvalidProblem, "forced_backend");
}

// 2. DLPack: null shape with ndim 2; byte_offset that wraps the pointer; a raw device_type 999.
TEST(Hardening, DlpackProducerErrors) {
  std::vector<int64_t> shape = {2, 3};
  DLTensor t{};
  t.data = dev(0x100000);
  t.device = {kDLCUDA, 0};
  t.ndim = 2;
  t.dtype = {kDLFloat, 32, 1};
  t.shape = nullptr;
  expect_error(from_dlpack(t).status(), StatusCode::kInvalidProblem, "shape");
  t.shape = shape.data();
  t.byte_offset = ~uint64_t{0} - 15;  // 2^64 - 16: the pointer would wrap below the base
  expect_error(from_dlpack(t).status(), StatusCode::kInvalidProblem, "byte_offset");
  t.byte_offset = 0;
  const int32_t raw = 999;  // what a C producer may send: not one of DLDeviceType's values
  std::memcpy(&t.device.device_type, &raw, sizeof raw);
  expect_error(from_dlpack(t).status(), StatusCode::kUnsupported, "device_type 999");
}

// 4. An empty problem launches nothing: bilinear with batch 0 (out.data may be null), conv1d with
// seq 0. Without a GPU a launch would fail, so an OK here proves nothing was launched.
TEST(Hardening, EmptyProblemsLaunchNothing) {
  auto b = AnyPlan::select("bilinear", "x1=f32[0,3] x2=f32[0,5] weight=f32[7,3,5] out=f32[0,7]", hopper());
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  int n = 0;
  const bool gpu = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  (void)cudaGetLastError();
  if (!gpu) {
    const NamedView v[] = {{"x1", TensorMut::make(nullptr, DType::f32, {0, 3})},
                           {"x2", TensorMut::make(nullptr, DType::f32, {0, 5})},
                           {"weight", TensorMut::make(dev(0x100000), DType::f32, {7, 3, 5})},
                           {"out", TensorMut::make(nullptr, DType::f32, {0, 7})}};
    EXPECT_TRUE(b->run(nullptr, {}, v).ok()) << b->run(nullptr, {}, v).to_string();
  }
  auto c = AnyPlan::select("causal_conv1d", "dtype=f32 batch=2 channels=8 seq=0 width=4", hopper());
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  if (!gpu) {
    const NamedView v[] = {{"x", TensorMut::make(nullptr, DType::f32, {2, 8, 0})},
                           {"weight", TensorMut::make(dev(0x100000), DType::f32, {8, 4})},
                           {"y", TensorMut::make(nullptr, DType::f32, {2, 8, 0})}};
    EXPECT_TRUE(c->run(nullptr, {}, v).ok()) << c->run(nullptr, {}, v).to_string();
  }
}

// 5. inner(a [3, 4], b [2, 5, 4], out [3, 2, 5] strides [20, 10, 1]): out cannot fold b's leading
// dims into one N; b strides [48, 8, 1] cannot fold either. Both refused, saying so.
TEST(Hardening, GemmInnerFoldRefused) {
  const TensorLayout a = TensorLayout::make(DType::f32, std::vector<int64_t>{3, 4});
  const TensorLayout b = TensorLayout::make(DType::f32, std::vector<int64_t>{2, 5, 4});
  const TensorLayout out = TensorLayout::make(DType::f32, std::vector<int64_t>{3, 2, 5}, std::vector<int64_t>{20, 10, 1});
  expect_error(GemmPlan::select(GemmDescriptor::inner(a, b, out), hopper()).status(), StatusCode::kInvalidProblem, "fold");
  const TensorLayout b2 = TensorLayout::make(DType::f32, std::vector<int64_t>{2, 5, 4}, std::vector<int64_t>{48, 8, 1});
  const TensorLayout out2 = TensorLayout::make(DType::f32, std::vector<int64_t>{3, 2, 5});
  auto s = GemmPlan::select(GemmDescriptor::inner(a, b2, out2), hopper()).status();
  expect_error(s, StatusCode::kInvalidProblem, "b's leading dims must fold");
}

// 6. Size and pointer arithmetic on caller values: every one refused with a Status, no UB.
TEST(Hardening, OverflowingViewsRefused) {
  // strides near INT64_MIN / extents near 2^63: overlap and internal-overlap checks
  TensorLayout t = TensorLayout::make(DType::f32, std::vector<int64_t>{2, 2}, std::vector<int64_t>{INT64_MIN, 1});
  EXPECT_FALSE(check_layout("t", "x", t).ok());
  EXPECT_FALSE(check_no_internal_overlap("t", "x", t).ok());
  TensorLayout big = TensorLayout::make(DType::u8, std::vector<int64_t>{INT64_MAX / 2, 3}, std::vector<int64_t>{1, 1});
  EXPECT_FALSE(check_layout("t", "x", big).ok());
  (void)ranges_overlap(big, dev(0x1000), big, dev(0x2000));  // must not overflow
  // TensorLayout with rank 9 hashed / compared: no read past shape[8]
  TensorLayout r9 = TensorLayout::make(DType::f32, std::vector<int64_t>{4});
  r9.rank = 9;
  (void)r9.hash();
  (void)r9.identical(r9);
  EXPECT_EQ(r9.numel(), 0);  // an invalid rank has no elements (and fails check_layout)
  // pad run with x strides [INT64_MIN, 1]
  auto pad = PadPlan::select(*PadDescriptor::torch_style(DType::f32, {4, 5}, {1, 1}, PadMode::kReflect), hopper());
  ASSERT_TRUE(pad.ok());
  PadArgs pa{TensorRef::make(dev(0x10000), DType::f32, {4, 5}, {INT64_MIN, 1}), TensorMut::make(dev(0x20000), DType::f32, {4, 7})};
  EXPECT_FALSE(pad->can_implement(pa).ok());
}

TEST(Hardening, ImpossibleDescriptorsRefusedAtSelect) {
  expect_refused("reduce_to_shape", "op=sum in_dtype=f32 out_dtype=f32 in_rank=2 in_shape=1099511627776,1099511627776 out_rank=2 out_shape=1,1",
                 "2^63");
  expect_refused("elementwise", "op=mul operand=f32[1099511627776,1],f32[1,1099511627776]", "2^63");
  expect_refused("elementwise_backward", "op=mul operand=f32[1099511627776,1],f32[1,1099511627776]", "2^63");
  expect_refused("rope", "dtype=f32 batch=1 seq=2 heads_q=2147483648 heads_k=2147483648 head_dim=2147483648 cos_sin_cache=true "
                         "cache_rows=4 rotary_dim=2", "must be < 2^31");
  expect_refused("causal_conv1d_backward", "dtype=f32 batch=1099511627776 channels=2 seq=1099511627776 width=4", "2^63");
  expect_refused("causal_conv1d", "dtype=f32 batch=1073741824 channels=1073741824 seq=1073741824 width=4", "2^63");
  // nothing to compute, but the backward's partial-row count ceil(seq / span) overflowed in
  // `seq + span - 1` (CI's fuzz run, d98f537; UBSan)
  EXPECT_TRUE(AnyPlan::select("causal_conv1d_backward", "dtype=f32 batch=0 channels=2 seq=9223372036854775807 width=4", hopper()));
  // representable (2^60 elements, 2^62 bytes): select may accept them, but nothing on the way may
  // overflow (the sanitizer build aborts on it)
  for (auto [op, problem] : {std::pair<const char*, const char*>{"bilinear", "x1=f32[1073741824,1] x2=f32[1073741824,1073741824] "
                                                                             "weight=f32[1,1,1073741824] out=f32[1073741824,1]"},
                             {"gemm", "a=f32[1073741824,1073741824]{-1073741824,1} b=f32[1073741824,1073741824] "
                                      "out=f32[1073741824,1073741824]"}})
    (void)AnyPlan::select(op, problem, hopper());
  expect_refused("embedding", "dtype=f32 num_embeddings=1073741824 embedding_dim=1099511627776 num_indices=4", "2^63");
  expect_refused("embedding_bag", "dtype=f32 num_embeddings=8 embedding_dim=4 num_bags=9223372036854775807 num_indices=4 "
                                  "include_last_offset=true", "num_bags");
  // outer with b stride 2^40: the descriptor factory keeps it a view, select refuses the extent
  const TensorLayout a = TensorLayout::make(DType::f32, std::vector<int64_t>{1 << 20});
  const TensorLayout b = TensorLayout::make(DType::f32, std::vector<int64_t>{1 << 24}, std::vector<int64_t>{int64_t{1} << 40});
  const TensorLayout out = TensorLayout::make(DType::f32, std::vector<int64_t>{1 << 20, 1 << 24});
  EXPECT_FALSE(GemmPlan::select(GemmDescriptor::outer(a, b, out), hopper()).ok());
}

// 7. Float -> integer conversions of values an integer cannot hold: defined (PyTorch's result),
// never UB (-fsanitize=float-cast-overflow in the sanitizer build).
TEST(Hardening, FloatToIntegerConversionsAreDefined) {
  // add(i32 tensor, NaN scalar) promotes to f32 as in PyTorch (a float scalar with an int tensor)
  auto nan_add = ElementwisePlan::select(
      ElementwiseDescriptor::make(EwOp::add, {EwOperand::tensor(DType::i32, {4}), EwOperand::scalar(std::nan(""))}), hopper());
  ASSERT_TRUE(nan_add.ok()) << nan_add.status().to_string();
  EXPECT_EQ(nan_add->out_dtype(), DType::f32);
  // mul(i32 tensor, 1e30 as an integer-typed op parameter path) and clamp bounds +-1e300 on i32
  auto big_mul = ElementwisePlan::select(
      ElementwiseDescriptor::make(EwOp::mul, {EwOperand::tensor(DType::i32, {4}), EwOperand::scalar(1e30)}), hopper());
  EXPECT_TRUE(big_mul.ok()) << big_mul.status().to_string();
  ElementwiseDescriptor cl = ElementwiseDescriptor::make(EwOp::clamp, {EwOperand::tensor(DType::i32, {4})}, {Scalar(-1e300), Scalar(1e300)});
  auto clamp = ElementwisePlan::select(cl, hopper());
  EXPECT_TRUE(clamp.ok() || clamp.status().code() == StatusCode::kInvalidProblem) << clamp.status().to_string();
  // the checked conversion itself
  int64_t v = 0;
  EXPECT_FALSE(checked_float_to_int(1e300, &v));
  EXPECT_FALSE(checked_float_to_int(std::nan(""), &v));
  EXPECT_FALSE(checked_float_to_int(9.3e18, &v));
  EXPECT_TRUE(checked_float_to_int(-9.2e18, &v));
  EXPECT_TRUE(checked_float_to_int(3.75, &v));
  EXPECT_EQ(v, 3);
}

// 8. Overlap messages name the operands.
TEST(Hardening, OverlapMessagesNameTheOperands) {
  auto g = AnyPlan::select("gemm_backward", "a=f32[8,4] b=f32[4,6] out=f32[8,6]", hopper());
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  const NamedView v[] = {{"a", TensorMut::make(dev(0x10000), DType::f32, {8, 4})},
                         {"b", TensorMut::make(dev(0x20000), DType::f32, {4, 6})},
                         {"d_out", TensorMut::make(dev(0x30000), DType::f32, {8, 6})},
                         {"da", TensorMut::make(dev(0x10000 + 16), DType::f32, {8, 4})},
                         {"db", TensorMut::make(dev(0x50000), DType::f32, {4, 6})}};
  const Status s = g->can_implement(v);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("da overlaps a"), std::string::npos) << s.to_string();
  auto bl = AnyPlan::select("bilinear", "x1=f32[8,3] x2=f32[8,5] weight=f32[7,3,5] out=f32[8,7]", hopper());
  ASSERT_TRUE(bl.ok());
  const NamedView w[] = {{"x1", TensorMut::make(dev(0x10000), DType::f32, {8, 3})},
                         {"x2", TensorMut::make(dev(0x20000), DType::f32, {8, 5})},
                         {"weight", TensorMut::make(dev(0x30000), DType::f32, {7, 3, 5})},
                         {"out", TensorMut::make(dev(0x20000 + 16), DType::f32, {8, 7})}};
  const Status t = bl->can_implement(w);
  EXPECT_FALSE(t.ok());
  EXPECT_NE(t.message().find("out overlaps x2"), std::string::npos) << t.to_string();
}
