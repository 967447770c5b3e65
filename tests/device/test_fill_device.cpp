// Device tier of fill beyond the contract suite (every CI problem over three views, bitwise
// reruns, graph replay): strided outputs (a transposed eye, a negative-stride arange) leaving
// their gaps alone, an unaligned contiguous slice (head, 16-byte body, tail), and more than 2^31
// elements (full u8, linspace f32 with both ends exact).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "baracuda/ops/fill.hpp"
#include "device/device_harness.hpp"

using namespace baracuda;
using namespace baracuda::test;

TEST(FillDevice, StridedAndUnalignedViews) {
  BARACUDA_REQUIRE_GPU();
  // eye(3, 5) into a transposed [3, 5] view of a [5, 3 + 1 pad] buffer
  std::vector<float> host(5 * 4, -7.0f);
  float* buf = to_device(host);
  auto e = FillPlan::select(FillDescriptor::eye(DType::f32, 3, 5));
  ASSERT_TRUE(e) << e.status().to_string();
  ASSERT_TRUE(e->run(nullptr, {}, {TensorMut::make(buf, DType::f32, {3, 5}, {1, 4})}).ok());
  BARACUDA_CUDA_OK(cudaMemcpy(host.data(), buf, host.size() * 4, cudaMemcpyDeviceToHost));
  for (int c = 0; c < 5; ++c)
    for (int k = 0; k < 4; ++k) {
      const float want = k == 3 ? -7.0f : (k == c ? 1.0f : 0.0f);  // element (r = k, c) at c * 4 + k
      EXPECT_EQ(host[static_cast<size_t>(c * 4 + k)], want) << "c " << c << " k " << k;
    }
  // arange(0, 10) as i32 into a negative-stride view: out[i] at buf[9 - i]
  std::vector<int32_t> ih(12, -1);
  int32_t* ib = to_device(ih);
  auto a = FillDescriptor::arange(DType::i32, int64_t{0}, int64_t{10});
  ASSERT_TRUE(a);
  auto ap = FillPlan::select(*a);
  ASSERT_TRUE(ap) << ap.status().to_string();
  ASSERT_TRUE(ap->run(nullptr, {}, {TensorMut::make(ib + 9, DType::i32, {10}, {-1})}).ok());
  BARACUDA_CUDA_OK(cudaMemcpy(ih.data(), ib, ih.size() * 4, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 10; ++i) EXPECT_EQ(ih[static_cast<size_t>(9 - i)], i);
  EXPECT_EQ(ih[10], -1);
  // full bf16 of 3 + 8·5 + 3 elements starting 3 elements past a 16-byte boundary
  std::vector<uint16_t> bh(64, 0xFFFF);
  uint16_t* bb = to_device(bh);
  const int64_t n = 46;
  auto f = FillPlan::select(FillDescriptor::full(DType::bf16, std::vector<int64_t>{n}, -2.0));
  ASSERT_TRUE(f) << f.status().to_string();
  ASSERT_TRUE(f->run(nullptr, {}, {TensorMut::make(bb + 5, DType::bf16, {n})}).ok());
  BARACUDA_CUDA_OK(cudaMemcpy(bh.data(), bb, bh.size() * 2, cudaMemcpyDeviceToHost));
  for (int64_t i = 0; i < 64; ++i) EXPECT_EQ(bh[static_cast<size_t>(i)], (i >= 5 && i < 5 + n) ? 0xC000 : 0xFFFF) << i;
  cudaFree(buf), cudaFree(ib), cudaFree(bb);
}

TEST(FillDevice, BeyondTwoToThe31) {
  BARACUDA_REQUIRE_GPU();
  const int64_t n = (int64_t{1} << 31) + 3;
  if (!enough_memory(static_cast<size_t>(n) * 4)) GTEST_SKIP() << "needs ~10 GB of device memory";
  float* y = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&y), static_cast<size_t>(n) * 4));
  auto l = FillPlan::select(FillDescriptor::linspace(DType::f32, -1.0, 3.0, n));
  ASSERT_TRUE(l) << l.status().to_string();
  ASSERT_TRUE(l->run(nullptr, {}, {TensorMut::make(y, DType::f32, {n})}).ok());
  auto at = [&](int64_t i) {
    float v = 0;
    EXPECT_EQ(cudaMemcpy(&v, y + i, 4, cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  };
  EXPECT_EQ(at(0), -1.0f);
  EXPECT_EQ(at(n - 1), 3.0f);  // the symmetric form ends exactly at end
  EXPECT_NEAR(at(n / 2), 1.0f, 1e-6f);
  EXPECT_NEAR(at(n - 2), 3.0f - 4.0f / static_cast<float>(n - 1), 1e-6f);
  // full u8 over the same bytes: 4n elements
  auto f = FillPlan::select(FillDescriptor::full(DType::u8, std::vector<int64_t>{4 * n}, int64_t{201}));
  ASSERT_TRUE(f) << f.status().to_string();
  ASSERT_TRUE(f->run(nullptr, {}, {TensorMut::make(y, DType::u8, {4 * n})}).ok());
  uint8_t last[4] = {};
  BARACUDA_CUDA_OK(cudaMemcpy(last, reinterpret_cast<uint8_t*>(y) + 4 * n - 4, 4, cudaMemcpyDeviceToHost));
  for (uint8_t b : last) EXPECT_EQ(b, 201);
  cudaFree(y);
}
