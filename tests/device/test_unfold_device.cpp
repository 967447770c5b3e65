// Device tier of unfold_backward beyond the contract suite (every CI problem over three views,
// bitwise reruns, graph replay): the gradient views autograd actually hands over (a stride-0
// expanded scalar, a transposed / negative-stride grad_out, a strided grad_input) against the
// float64 reference, and more than 2^31 elements (the 64-bit coordinate path). Also cat's type
// promotion into a slice of a larger buffer, the converted inputs in mixed layouts.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "baracuda/ops/cat.hpp"
#include "baracuda/ops/unfold.hpp"
#include "device/device_harness.hpp"
#include "unfold_ref.hpp"

using namespace baracuda;
using namespace baracuda::test;

namespace {

// grad_out given by a function of its row-major index f over the unfolded shape, held in a
// storage with the view's strides (offset past any negative stride).
double value_at(int64_t f) { return static_cast<double>((f * 37) % 101) / 64.0 - 0.75; }

}  // namespace

TEST(UnfoldDevice, AutogradGradientViews) {
  BARACUDA_REQUIRE_GPU();
  // input [5, 23, 3], unfold(1, 6, 4) -> grad_out [5, 5, 3, 6]
  const int64_t shape[] = {5, 23, 3};
  const auto d = UnfoldBackwardDescriptor::make(DType::f32, shape, 1, 6, 4);
  auto p = UnfoldBackwardPlan::select(d);
  ASSERT_TRUE(p) << p.status().to_string();
  const std::vector<int64_t> gs = ref::unfold_shape(d);  // [5, 5, 3, 6]
  const int64_t gn = gs[0] * gs[1] * gs[2] * gs[3], xn = 5 * 23 * 3;
  struct View {
    const char* what;
    std::vector<int64_t> go_strides;  // grad_out's, in elements
    int64_t go_offset, go_storage;
    bool scalar;                      // every element the same (an expanded scalar)
  };
  const std::vector<View> views = {
      {"expanded scalar (stride 0)", {0, 0, 0, 0}, 0, 1, true},
      {"window axis reversed", {90, 18, 6, -1}, 5, gn, false},
      {"axes transposed", {1, 5, 25, 75}, 0, gn, false},
  };
  for (const View& v : views) {
    std::vector<float> storage(static_cast<size_t>(v.go_storage));
    std::vector<double> logical(static_cast<size_t>(gn));
    for (int64_t f = 0; f < gn; ++f) {
      int64_t r = f, o = v.go_offset;
      for (int a = 3; a >= 0; --a) o += (r % gs[static_cast<size_t>(a)]) * v.go_strides[static_cast<size_t>(a)], r /= gs[static_cast<size_t>(a)];
      const double x = v.scalar ? 0.625 : value_at(f);
      storage[static_cast<size_t>(o)] = static_cast<float>(x);
      logical[static_cast<size_t>(f)] = x;
    }
    float* go = to_device(storage);
    // grad_input: every other float of a [5, 23, 3] region (stride 2 on the last axis), gaps poisoned
    std::vector<float> out(static_cast<size_t>(2 * xn), -7.0f);
    float* gi = to_device(out);
    const UnfoldBackwardArgs a{TensorRef::make(go + v.go_offset, DType::f32, gs, v.go_strides),
                               TensorMut::make(gi, DType::f32, shape, std::vector<int64_t>{138, 6, 2})};
    ASSERT_TRUE(p->run(nullptr, {}, a).ok()) << v.what;
    out = download(gi, out.size());
    const std::vector<double> want = ref::unfold_backward(d, logical);
    for (int64_t f = 0; f < xn; ++f) {
      ASSERT_NEAR(out[static_cast<size_t>(2 * f)], want[static_cast<size_t>(f)], 1e-5) << v.what << " element " << f;
      ASSERT_EQ(out[static_cast<size_t>(2 * f + 1)], -7.0f) << v.what << ": gap after element " << f << " written";
    }
    cudaFree(go);
    cudaFree(gi);
  }
}

TEST(UnfoldDevice, BeyondTwoToThe31) {
  BARACUDA_REQUIRE_GPU();
  // bf16 [2^31 + 6], unfold(0, 4, 2): W = 2^30 + 2 windows, grad_out all 0x3F3F (0.74609375):
  // grad_input[l] = 0.74609375 · (windows covering l): 1 at both ends, 2 inside
  const int64_t len = (int64_t{1} << 31) + 6, w = (len - 4) / 2 + 1;
  if (!enough_memory(static_cast<size_t>(2 * (len + 4 * w)))) GTEST_SKIP() << "needs ~13 GB of device memory";
  uint16_t *go = nullptr, *gi = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&go), static_cast<size_t>(8 * w)));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&gi), static_cast<size_t>(2 * len)));
  BARACUDA_CUDA_OK(cudaMemset(go, 0x3F, static_cast<size_t>(8 * w)));
  BARACUDA_CUDA_OK(cudaMemset(gi, 0xFF, static_cast<size_t>(2 * len)));
  const int64_t shape[] = {len};
  auto p = UnfoldBackwardPlan::select(UnfoldBackwardDescriptor::make(DType::bf16, shape, 0, 4, 2));
  ASSERT_TRUE(p) << p.status().to_string();
  ASSERT_TRUE(p->run(nullptr, {}, {TensorRef::make(go, DType::bf16, {w, 4}), TensorMut::make(gi, DType::bf16, {len})}).ok());
  BARACUDA_CUDA_OK(cudaDeviceSynchronize());
  const uint16_t one = 0x3F3F, two = 0x3FBF;  // 0.74609375, 1.4921875
  auto at = [&](int64_t i) {
    uint16_t v = 0;
    EXPECT_EQ(cudaMemcpy(&v, gi + i, 2, cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  };
  EXPECT_EQ(at(0), one);
  EXPECT_EQ(at(1), one);
  EXPECT_EQ(at(2), two);
  EXPECT_EQ(at((int64_t{1} << 31) - 1), two);
  EXPECT_EQ(at(int64_t{1} << 31), two);
  EXPECT_EQ(at(len - 3), two);
  EXPECT_EQ(at(len - 2), one);
  EXPECT_EQ(at(len - 1), one);
  const std::vector<uint16_t> tail = download(gi + (len - 5000), 4997);
  for (size_t i = 0; i < tail.size(); ++i)
    if (tail[i] != two) {
      ADD_FAILURE() << "element " << len - 5000 + static_cast<int64_t>(i) << ": got 0x" << std::hex << tail[i];
      break;
    }
  cudaFree(go);
  cudaFree(gi);
}

TEST(CatDevice, PromotedInputsIntoACacheSlice) {
  BARACUDA_REQUIRE_GPU();
  // cat([bf16 [3, 4] transposed view, i32 [3, 2] negative column stride, f32 [3, 5]], dim 1)
  // -> f32 [3, 11] rows of a [3, 16] buffer; the f32 input rides the kernel, the others a cast
  std::vector<uint16_t> a_store(12);
  for (int i = 0; i < 12; ++i) {
    const float f = static_cast<float>(i) * 0.5f - 2.25f;  // exact in bf16
    uint32_t bits = 0;
    std::memcpy(&bits, &f, 4);
    a_store[static_cast<size_t>(i)] = static_cast<uint16_t>(bits >> 16);
  }
  const std::vector<int32_t> b_store = {1, -2, 3, -4, 16777217, -6};  // 2^24 + 1 rounds to 2^24 in f32
  std::vector<float> c_store(15);
  for (int i = 0; i < 15; ++i) c_store[static_cast<size_t>(i)] = 100.0f + static_cast<float>(i);
  uint16_t* a = to_device(a_store);
  int32_t* b = to_device(b_store);
  float* c = to_device(c_store);
  std::vector<float> host(48, -1.0f);
  float* out = to_device(host);
  const int64_t shape[] = {3, 0};
  const int64_t sizes[] = {4, 2, 5};
  const DType dts[] = {DType::bf16, DType::i32, DType::f32};
  CatDescriptor d = CatDescriptor::cat(DType::f32, shape, 1, sizes);
  d.promoted(dts);
  ASSERT_EQ(d.dtype, DType::f32);
  auto p = CatPlan::select(d);
  ASSERT_TRUE(p) << p.status().to_string();
  const TensorRef ins[] = {TensorRef::make(a, DType::bf16, std::vector<int64_t>{3, 4}, std::vector<int64_t>{1, 3}),
                           TensorRef::make(b + 1, DType::i32, std::vector<int64_t>{3, 2}, std::vector<int64_t>{2, -1}),
                           TensorRef::make(c, DType::f32, {3, 5})};
  ASSERT_TRUE(p->run(nullptr, {}, {ins, TensorMut::make(out, DType::f32, std::vector<int64_t>{3, 11}, std::vector<int64_t>{16, 1})}).ok());
  host = download(out, host.size());
  for (int r = 0; r < 3; ++r) {
    for (int j = 0; j < 16; ++j) {
      float want = -1.0f;
      if (j < 4) want = static_cast<float>(r + 3 * j) * 0.5f - 2.25f;            // a[r][j] = store[r + 3j]
      else if (j < 6) want = static_cast<float>(b_store[static_cast<size_t>(1 + 2 * r - (j - 4))]);
      else if (j < 11) want = c_store[static_cast<size_t>(5 * r + j - 6)];
      EXPECT_EQ(host[static_cast<size_t>(16 * r + j)], want) << "row " << r << " col " << j;
    }
  }
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  cudaFree(out);
}
