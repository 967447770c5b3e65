// Host tier: the core vocabulary (dtype table, views, Status/Result, DLPack, half bits, SKU).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/core/cuda_types.hpp"
#include "core/dispatch.hpp"
#include "core/fast_div.hpp"
#include "core/validate.hpp"

using namespace baracuda;

// FastDiv (src/core/fast_div.hpp): the kernels' division by a host-fixed divisor, exact for
// every numerator below 2^31. Repro: FastDiv(3).div(2147483647) must be 715827882.
TEST(FastDiv, MatchesIntegerDivisionBelowTwoToThe31) {
  std::mt19937_64 rng(7);
  std::vector<uint32_t> divisors = {1, 2, 3, 5, 7, 10, 255, 256, 257, 258, 1000, 16390, 65535, 65536, 65537,
                                    (1u << 30) - 1, 1u << 30, (1u << 30) + 1, (1u << 31) - 1, 1u << 31};
  for (int i = 0; i < 200; ++i) divisors.push_back(static_cast<uint32_t>(rng() % (1u << 31)) + 1);
  for (uint32_t d : divisors) {
    const baracuda::detail::FastDiv f(d);
    std::vector<uint32_t> ns = {0, 1, d - 1, d, (1u << 31) - 1, (1u << 31) - 2};
    if (d < (1u << 30)) ns.insert(ns.end(), {d + 1, 2 * d - 1, 2 * d, 2 * d + 1});
    for (uint32_t q : {3u, 1000u, 65536u}) {
      const uint64_t m = uint64_t{q} * d;
      if (m < (1u << 31)) ns.insert(ns.end(), {static_cast<uint32_t>(m - 1), static_cast<uint32_t>(m)});
    }
    for (int j = 0; j < 2000; ++j) ns.push_back(static_cast<uint32_t>(rng() % (1u << 31)));
    for (uint32_t n : ns) {
      if (n >= (1u << 31)) continue;
      ASSERT_EQ(f.div(n), n / d) << "n = " << n << ", d = " << d;
    }
  }
  EXPECT_EQ(baracuda::detail::FastDiv(3).div(2147483647u), 715827882u);
}

TEST(DType, TableIsConsistent) {
  EXPECT_EQ(kNumDTypes, 14);
  for (int i = 0; i < kNumDTypes; ++i) {
    const DType t = static_cast<DType>(i);
    DType back;
    ASSERT_TRUE(parse_dtype(dtype_name(t), &back)) << dtype_name(t);
    EXPECT_EQ(back, t);
    EXPECT_GT(dtype_size(t), 0u);
  }
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_EQ(dtype_size(DType::c128), 16u);
  EXPECT_TRUE(is_floating(DType::f8e4m3));
  EXPECT_TRUE(is_integral(DType::u8));
  EXPECT_FALSE(is_integral(DType::boolean));
  DType dummy;
  EXPECT_FALSE(parse_dtype("float", &dummy));
  EXPECT_EQ(dtype_of<__half>, DType::f16);
  EXPECT_EQ(dtype_of<int64_t>, DType::i64);
}

TEST(DType, DispatchVisitsExactlyTheListedType) {
  int calls = 0;
  size_t size = 0;
  EXPECT_TRUE(dispatch_dtype<StorageTypes>(DType::bf16, FloatDTypes{}, [&]<class T>() { ++calls; size = sizeof(T); }));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(size, 2u);
  EXPECT_FALSE(dispatch_dtype<StorageTypes>(DType::i32, FloatDTypes{}, [&]<class T>() { ++calls; }));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(FloatDTypes::names(), "f32, f16, bf16, f64");
}

TEST(Tensor, NumelContiguityExtent) {
  float buf[1];
  auto t = TensorRef::of(buf, {2, 3, 4});
  EXPECT_EQ(t.rank, 3);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.stride[0], 12);
  int64_t lo, hi;
  ASSERT_TRUE(t.byte_extent(&lo, &hi));
  EXPECT_EQ(lo, 0);
  EXPECT_EQ(hi, 96);
  auto tr = TensorRef::of(buf, {3, 2}, {1, 3});  // a transpose
  EXPECT_FALSE(tr.is_contiguous());
  auto neg = TensorRef::of(buf, {4}, {-2});
  ASSERT_TRUE(neg.byte_extent(&lo, &hi));
  EXPECT_EQ(lo, -24);
  EXPECT_EQ(hi, 4);
  auto scalar = TensorRef::of(buf, {});
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_TRUE(scalar.is_contiguous());
  auto empty = TensorRef::of(buf, {3, 0, 5});
  EXPECT_EQ(empty.numel(), 0);
  ASSERT_TRUE(empty.byte_extent(&lo, &hi));
  EXPECT_EQ(hi, 0);
  auto too_big = TensorRef::of(buf, {1, 1, 1, 1, 1, 1, 1, 1, 1});
  EXPECT_EQ(too_big.rank, -1);
  // 2^31 boundary: extent arithmetic stays exact in int64
  auto big = TensorRef::of(buf, {2, int64_t{1} << 30}, {int64_t{1} << 30, 1});
  ASSERT_TRUE(big.byte_extent(&lo, &hi));
  EXPECT_EQ(hi, int64_t{1} << 33);
  auto overflow = TensorRef::of(buf, {3, 2}, {int64_t{1} << 62, 1});
  EXPECT_FALSE(overflow.byte_extent(&lo, &hi));
}

TEST(Tensor, MutConvertsToRef) {
  double buf[6];
  auto m = TensorMut::of(buf, {2, 3});
  TensorRef r = m;
  EXPECT_EQ(r.data, static_cast<const void*>(buf));
  EXPECT_EQ(r.dtype, DType::f64);
  EXPECT_EQ(r.shape[1], 3);
}

TEST(Validate, LayoutErrorsNameTheField) {
  float buf[4];
  auto t = TensorRef::of(buf, {2, -1});
  Status s = check_layout("op", "x", t);
  EXPECT_EQ(s.code(), StatusCode::kInvalidProblem);
  EXPECT_NE(s.message().find("op: x shape[1] = -1 must be >= 0"), std::string::npos) << s.message();
  auto huge = TensorRef::of(buf, {int64_t{1} << 40, int64_t{1} << 40});
  EXPECT_EQ(huge.numel(), INT64_MAX);  // saturates instead of overflowing
  s = check_layout("op", "x", huge);
  EXPECT_NE(s.message().find("more than 2^63 elements"), std::string::npos) << s.message();
  auto far = TensorRef::of(buf, {2, 2}, {int64_t{1} << 62, 1});
  s = check_layout("op", "x", far);
  EXPECT_NE(s.message().find("address more than 2^63 bytes"), std::string::npos) << s.message();
}

TEST(Validate, InternalOverlap) {
  float buf[64];
  EXPECT_TRUE(check_no_internal_overlap("op", "y", TensorRef::of(buf, {4, 4})).ok());
  EXPECT_TRUE(check_no_internal_overlap("op", "y", TensorRef::of(buf, {4, 4}, {1, 4})).ok());
  EXPECT_TRUE(check_no_internal_overlap("op", "y", TensorRef::of(buf, {4, 4}, {10, 2})).ok());
  Status s = check_no_internal_overlap("op", "y", TensorRef::of(buf, {4, 4}, {0, 1}));
  EXPECT_EQ(s.code(), StatusCode::kInvalidProblem);
  EXPECT_NE(s.message().find("internally overlapping"), std::string::npos);
  EXPECT_FALSE(check_no_internal_overlap("op", "y", TensorRef::of(buf, {4, 4}, {2, 1})).ok());
  EXPECT_TRUE(check_no_internal_overlap("op", "y", TensorRef::of(buf, {4, 1}, {1, 0})).ok());
}

TEST(Status, OkIsCheapAndErrorsCarryText) {
  Status ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_TRUE(ok.message().empty());
  EXPECT_EQ(ok.message().capacity(), std::string().capacity());  // no heap buffer
  Status e(StatusCode::kUnsupported, "pad: dtype c64");
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.to_string(), "Unsupported: pad: dtype c64");
  Result<int> r = 5;
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(*r, 5);
  EXPECT_TRUE(r.status().ok());
  Result<int> bad = Status(StatusCode::kInvalidProblem, "x");
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidProblem);
  Result<int> misuse = Status();  // an OK status is no error: becomes Internal
  EXPECT_EQ(misuse.status().code(), StatusCode::kInternal);
  EXPECT_EQ(cat("a", 1, "b", -2.5, true), "a1b-2.500000true");
}

TEST(HalfBits, RoundToNearestEvenAndSpecials) {
  EXPECT_EQ(float_to_f16_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_f16_bits(-2.0f), 0xc000);
  EXPECT_EQ(float_to_f16_bits(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_f16_bits(65519.0f), 0x7bff);
  EXPECT_EQ(float_to_f16_bits(65520.0f), 0x7c00);  // ties to even -> inf
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.0f, -25)), 0x0000);  // tie to even -> 0
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(float_to_f16_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_f16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie, even stays
  EXPECT_EQ(float_to_f16_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie, rounds up to even
  EXPECT_TRUE(std::isnan(f16_bits_to_float(float_to_f16_bits(NAN))));
  EXPECT_EQ(float_to_f16_bits(INFINITY), 0x7c00);
  EXPECT_EQ(f16_bits_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_bits_to_float(0x3555), 0.333251953125f);
  // every f16 round-trips exactly
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float f = f16_bits_to_float(static_cast<uint16_t>(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_f16_bits(f), b) << b;
  }
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16_bits(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie to even
  EXPECT_EQ(float_to_bf16_bits(std::bit_cast<float>(0x3f818000u)), 0x3f82);
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::max()), 0x7f80);  // overflow to inf
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(float_to_bf16_bits(NAN))));
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float f = bf16_bits_to_float(static_cast<uint16_t>(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_bf16_bits(f), b) << b;
  }
}

TEST(DLPack, RoundTripAndRejections) {
  float buf[24];
  auto t = TensorMut::of(buf, {2, 3, 4}, {1, 2, 6});
  DLTensor d = to_dlpack(t);
  EXPECT_EQ(d.ndim, 3);
  EXPECT_EQ(d.dtype.code, kDLFloat);
  EXPECT_EQ(d.dtype.bits, 32);
  EXPECT_EQ(d.strides[2], 6);
  auto back = from_dlpack_mut(d);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->data, static_cast<void*>(buf));
  EXPECT_EQ(back->stride[1], 2);
  // byte_offset folds into data; null strides mean contiguous
  d.byte_offset = 8;
  d.strides = nullptr;
  auto off = from_dlpack(d);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->data, static_cast<const void*>(buf + 2));
  EXPECT_TRUE(off->is_contiguous());
  d.byte_offset = 2;
  EXPECT_EQ(from_dlpack(d).status().code(), StatusCode::kMisalignedOperand);
  d.byte_offset = 0;
  d.device = {kDLCPU, 0};
  EXPECT_EQ(from_dlpack(d).status().code(), StatusCode::kUnsupported);
  EXPECT_TRUE(from_dlpack(d, /*allow_host=*/true).ok());
  d.device = {kDLCUDA, 0};
  d.dtype.lanes = 4;
  EXPECT_NE(from_dlpack(d).status().message().find("lanes"), std::string::npos);
  d.dtype = {kDLBool, 8, 1};
  EXPECT_EQ(*from_dlpack_dtype(d.dtype), DType::boolean);
  EXPECT_EQ(*from_dlpack_dtype({kDLBfloat, 16, 1}), DType::bf16);
  EXPECT_EQ(*from_dlpack_dtype({kDLFloat8_e4m3fn, 8, 1}), DType::f8e4m3);
  EXPECT_EQ(*from_dlpack_dtype({kDLFloat8_e5m2, 8, 1}), DType::f8e5m2);
  EXPECT_FALSE(from_dlpack_dtype({kDLUInt, 16, 1}).ok());
  d.ndim = 9;
  EXPECT_NE(from_dlpack(d).status().message().find("ndim = 9"), std::string::npos);
  for (int i = 0; i < kNumDTypes; ++i) {
    auto rt = from_dlpack_dtype(to_dlpack_dtype(static_cast<DType>(i)));
    ASSERT_TRUE(rt.ok());
    EXPECT_EQ(*rt, static_cast<DType>(i));
  }
}

TEST(KernelSku, StableName) {
  KernelSku s{"pad.reflect", Direction::kBackward, DType::bf16, Backend::kBespoke, 90, "warprows"};
  EXPECT_EQ(s.name(), "pad.reflect.bwd.bf16.bespoke.sm90.warprows");
}
