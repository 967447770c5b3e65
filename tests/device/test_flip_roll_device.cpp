// Device tier of flip / roll beyond the contract suite (every CI problem over three views,
// bitwise reruns, graph replay): a negative-stride input and a padded output slice on every path
// (16-byte runs, reversed 16-byte pieces, elements, the flattened roll's strided walk), and more
// than 2^31 elements.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "baracuda/ops/flip_roll.hpp"
#include "device/device_harness.hpp"

using namespace baracuda;
using namespace baracuda::test;

namespace {

// x [R, C] f32 holding r·1000 + c, read through `in_strides` at `in_off`; out into a [R, C] slice
// with row stride ld (poisoned gaps); want(r, c) gives the expected source (r', c').
template <class Plan, class Desc, class Want>
void check(const Desc& d, int64_t R, int64_t C, std::vector<int64_t> in_strides, int64_t in_off, int64_t ld, Want want) {
  std::vector<float> src(static_cast<size_t>(R * C + 2 * C + 8), -3.0f);
  std::vector<float> logical(static_cast<size_t>(R * C));
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) {
      const float v = static_cast<float>(r * 1000 + c);
      src[static_cast<size_t>(in_off + r * in_strides[0] + c * in_strides[1])] = v;
      logical[static_cast<size_t>(r * C + c)] = v;
    }
  float* x = to_device(src);
  std::vector<float> host(static_cast<size_t>(R * ld), -7.0f);
  float* y = to_device(host);
  auto p = Plan::select(d);
  ASSERT_TRUE(p) << p.status().to_string();
  const std::vector<int64_t> shape = {R, C}, out_strides = {ld, 1};
  FlipRollArgs a{TensorRef::make(x + in_off, DType::f32, shape, in_strides), TensorMut::make(y, DType::f32, shape, out_strides)};
  ASSERT_TRUE(p->run(nullptr, {}, a).ok());
  BARACUDA_CUDA_OK(cudaMemcpy(host.data(), y, host.size() * 4, cudaMemcpyDeviceToHost));
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < ld; ++c) {
      const float got = host[static_cast<size_t>(r * ld + c)];
      if (c >= C) {
        ASSERT_EQ(got, -7.0f) << "gap (" << r << ", " << c << ") written";
        continue;
      }
      int64_t sr = 0, sc = 0;
      want(r, c, &sr, &sc);
      ASSERT_EQ(got, logical[static_cast<size_t>(sr * C + sc)]) << "(" << r << ", " << c << ")";
    }
  cudaFree(x), cudaFree(y);
}

}  // namespace

TEST(FlipRollDevice, StridedInputsAndPaddedOutputs) {
  BARACUDA_REQUIRE_GPU();
  const int64_t R = 13, C = 64;
  const std::vector<int64_t> shape = {R, C}, d0 = {0}, d1 = {1}, d01 = {0, 1};
  const std::vector<int64_t> contiguous = {C, 1}, negative_rows = {-C, 1}, transposed = {1, R};
  const int64_t neg_off = (R - 1) * C;
  for (int layout = 0; layout < 3; ++layout) {
    const std::vector<int64_t>& st = layout == 0 ? contiguous : layout == 1 ? negative_rows : transposed;
    const int64_t off = layout == 1 ? neg_off : 0;
    // negative_rows reads logical row r from storage row R-1-r: check() stores logical values there
    check<FlipPlan>(FlipDescriptor::make(DType::f32, shape, d1), R, C, st, off, C + 4,
                    [&](int64_t r, int64_t c, int64_t* sr, int64_t* sc) { *sr = r, *sc = C - 1 - c; });
    check<FlipPlan>(FlipDescriptor::make(DType::f32, shape, d01), R, C, st, off, C + 8,
                    [&](int64_t r, int64_t c, int64_t* sr, int64_t* sc) { *sr = R - 1 - r, *sc = C - 1 - c; });
    const std::vector<int64_t> s1 = {-20}, s2 = {5, 9};
    check<RollPlan>(RollDescriptor::make(DType::f32, shape, s1, d1), R, C, st, off, C + 4,
                    [&](int64_t r, int64_t c, int64_t* sr, int64_t* sc) { *sr = r, *sc = (c + 20) % C; });
    check<RollPlan>(RollDescriptor::make(DType::f32, shape, s2, d01), R, C, st, off, C,
                    [&](int64_t r, int64_t c, int64_t* sr, int64_t* sc) { *sr = (r - 5 + R) % R, *sc = (c - 9 + C) % C; });
    const std::vector<int64_t> flat = {70};  // the flattened roll: strided walk unless both are contiguous
    check<RollPlan>(RollDescriptor::make(DType::f32, shape, flat), R, C, st, off, layout == 0 ? C : C + 4,
                    [&](int64_t r, int64_t c, int64_t* sr, int64_t* sc) {
                      const int64_t g = ((r * C + c - 70) % (R * C) + R * C) % (R * C);
                      *sr = g / C, *sc = g % C;
                    });
  }
}

TEST(FlipRollDevice, BeyondTwoToThe31) {
  BARACUDA_REQUIRE_GPU();
  // u8 [2^31 + 16]: flip (reversed 16-byte pieces) then roll by 5 (elements); the ends checked
  const int64_t n = (int64_t{1} << 31) + 16;
  if (!enough_memory(static_cast<size_t>(2 * n))) GTEST_SKIP() << "needs ~5 GB of device memory";
  uint8_t *x = nullptr, *y = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&x), static_cast<size_t>(n)));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&y), static_cast<size_t>(n)));
  BARACUDA_CUDA_OK(cudaMemset(x, 1, static_cast<size_t>(n)));
  const uint8_t head[4] = {10, 11, 12, 13}, tail[4] = {20, 21, 22, 23};
  BARACUDA_CUDA_OK(cudaMemcpy(x, head, 4, cudaMemcpyHostToDevice));
  BARACUDA_CUDA_OK(cudaMemcpy(x + n - 4, tail, 4, cudaMemcpyHostToDevice));
  const std::vector<int64_t> shape = {n}, d0 = {0}, s5 = {5};
  auto f = FlipPlan::select(FlipDescriptor::make(DType::u8, shape, d0));
  ASSERT_TRUE(f) << f.status().to_string();
  const FlipRollArgs xy{TensorRef::make(x, DType::u8, {n}), TensorMut::make(y, DType::u8, {n})};
  ASSERT_TRUE(f->run(nullptr, {}, xy).ok());
  uint8_t got[4] = {};
  BARACUDA_CUDA_OK(cudaMemcpy(got, y, 4, cudaMemcpyDeviceToHost));
  EXPECT_EQ(got[0], 23);
  EXPECT_EQ(got[3], 20);
  BARACUDA_CUDA_OK(cudaMemcpy(got, y + n - 4, 4, cudaMemcpyDeviceToHost));
  EXPECT_EQ(got[0], 13);
  EXPECT_EQ(got[3], 10);
  auto r = RollPlan::select(RollDescriptor::make(DType::u8, shape, s5, d0));
  ASSERT_TRUE(r) << r.status().to_string();
  ASSERT_TRUE(r->run(nullptr, {}, xy).ok());
  uint8_t g9[9] = {};
  BARACUDA_CUDA_OK(cudaMemcpy(g9, y, 9, cudaMemcpyDeviceToHost));  // y[0..4] = x[n-5..n-1], y[5..8] = x[0..3]
  EXPECT_EQ(g9[1], 20);
  EXPECT_EQ(g9[4], 23);
  EXPECT_EQ(g9[5], 10);
  EXPECT_EQ(g9[8], 13);
  uint8_t last = 0;
  BARACUDA_CUDA_OK(cudaMemcpy(&last, y + n - 1, 1, cudaMemcpyDeviceToHost));
  EXPECT_EQ(last, 1);
  cudaFree(x), cudaFree(y);
}
