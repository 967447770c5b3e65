// Device tier of cat beyond the contract suite (every CI problem over three views, bitwise
// reruns, graph replay): inputs of mixed layouts in one call (transposed, negative and zero
// strides, an unaligned offset) written into a slice of a larger buffer (a KV cache) with its
// gaps untouched; hundreds of inputs (several launches, 16-byte and element rows); more than
// 2^31 elements on the element-row path.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "baracuda/ops/cat.hpp"
#include "device/device_harness.hpp"

using namespace baracuda;
using namespace baracuda::test;

namespace {

// An input: its storage (values = distinct integers) and the view's strides / offset.
struct Input {
  std::vector<int64_t> shape, strides;
  int64_t offset = 0;
  std::vector<float> storage;
  float* dev = nullptr;
  float at(const std::vector<int64_t>& idx) const {
    int64_t o = offset;
    for (size_t a = 0; a < idx.size(); ++a) o += idx[a] * strides[a];
    return storage[static_cast<size_t>(o)];
  }
};

Input make_input(std::vector<int64_t> shape, std::vector<int64_t> strides, int64_t offset, int64_t storage, float base) {
  Input in{std::move(shape), std::move(strides), offset, std::vector<float>(static_cast<size_t>(storage)), nullptr};
  for (size_t i = 0; i < in.storage.size(); ++i) in.storage[i] = base + static_cast<float>(i);
  in.dev = to_device(in.storage);
  return in;
}

// Runs cat of `ins` along dim into a [rows, cols_total] slice (row stride ld) of a poisoned
// buffer and checks every element and every gap.
void check_cat(std::vector<Input>& ins, int dim, int64_t ld_pad) {
  const int rank = static_cast<int>(ins[0].shape.size());
  std::vector<int64_t> shape = ins[0].shape, sizes;
  shape[static_cast<size_t>(dim)] = 0;
  for (const Input& in : ins) sizes.push_back(in.shape[static_cast<size_t>(dim)]), shape[static_cast<size_t>(dim)] += sizes.back();
  // out: contiguous but the first axis's stride padded by ld_pad elements (a slice of a cache)
  std::vector<int64_t> ostr(static_cast<size_t>(rank), 1);
  for (int a = rank - 2; a >= 0; --a) ostr[static_cast<size_t>(a)] = ostr[static_cast<size_t>(a) + 1] * shape[static_cast<size_t>(a) + 1];
  if (rank > 1) ostr[0] += ld_pad;
  const int64_t storage = ostr[0] * shape[0] + 7;
  std::vector<float> host(static_cast<size_t>(storage), -1.0f);
  float* out = to_device(host);
  auto p = CatPlan::select(CatDescriptor::cat(DType::f32, shape, dim, sizes));
  ASSERT_TRUE(p) << p.status().to_string();
  std::vector<TensorRef> views;
  for (const Input& in : ins) views.push_back(TensorRef::make(in.dev + in.offset, DType::f32, in.shape, in.strides));
  CatArgs a{views, TensorMut::make(out, DType::f32, shape, ostr)};
  ASSERT_TRUE(p->run(nullptr, {}, a).ok());
  BARACUDA_CUDA_OK(cudaMemcpy(host.data(), out, host.size() * 4, cudaMemcpyDeviceToHost));
  std::vector<char> written(host.size(), 0);
  std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
  int64_t numel = 1;
  for (int64_t n : shape) numel *= n;
  for (int64_t f = 0; f < numel; ++f) {
    int64_t r = f, o = 0;
    for (int ax = rank - 1; ax >= 0; --ax) {
      idx[static_cast<size_t>(ax)] = r % shape[static_cast<size_t>(ax)], r /= shape[static_cast<size_t>(ax)];
      o += idx[static_cast<size_t>(ax)] * ostr[static_cast<size_t>(ax)];
    }
    size_t i = 0;
    std::vector<int64_t> local = idx;
    while (local[static_cast<size_t>(dim)] >= sizes[i]) local[static_cast<size_t>(dim)] -= sizes[i++];
    const float want = ins[i].at(local);
    if (host[static_cast<size_t>(o)] != want) {
      ADD_FAILURE() << "element " << f << " (input " << i << "): got " << host[static_cast<size_t>(o)] << ", want " << want;
      break;
    }
    written[static_cast<size_t>(o)] = 1;
  }
  for (size_t k = 0; k < host.size(); ++k)
    if (!written[k] && host[k] != -1.0f) {
      ADD_FAILURE() << "gap " << k << " of the output buffer was written";
      break;
    }
  cudaFree(out);
  for (Input& in : ins) cudaFree(in.dev);
}

}  // namespace

TEST(CatDevice, MixedLayoutsIntoACacheSlice) {
  BARACUDA_REQUIRE_GPU();
  // [6, n_i, 40] along dim 1: contiguous, transposed (axes 1, 2 swapped), negative stride on
  // axis 1, zero stride (a broadcast) on axis 0, offset by one element (unaligned), contiguous.
  std::vector<Input> ins;
  ins.push_back(make_input({6, 5, 40}, {200, 40, 1}, 0, 1200, 0));
  ins.push_back(make_input({6, 3, 40}, {120, 1, 3}, 0, 720, 1e4f));
  ins.push_back(make_input({6, 4, 40}, {160, -40, 1}, 120, 960, 2e4f));
  ins.push_back(make_input({6, 2, 40}, {0, 40, 1}, 0, 80, 3e4f));
  ins.push_back(make_input({6, 7, 40}, {280, 40, 1}, 1, 1681, 4e4f));
  ins.push_back(make_input({6, 8, 40}, {320, 40, 1}, 0, 1920, 5e4f));
  check_cat(ins, 1, 64);
  // the same inputs but only row-form ones (16-byte rows, and the offset one's element rows)
  std::vector<Input> rows;
  rows.push_back(make_input({6, 5, 40}, {200, 40, 1}, 0, 1200, 0));
  rows.push_back(make_input({6, 7, 40}, {280, 40, 1}, 1, 1681, 4e4f));
  rows.push_back(make_input({6, 8, 40}, {320, 40, 1}, 0, 1920, 5e4f));
  check_cat(rows, 1, 64);
  // along the last axis (short rows: 3, 5 and 8 elements)
  std::vector<Input> last;
  last.push_back(make_input({33, 3}, {3, 1}, 0, 99, 0));
  last.push_back(make_input({33, 5}, {5, 1}, 0, 165, 1e4f));
  last.push_back(make_input({33, 8}, {8, 1}, 0, 264, 2e4f));
  check_cat(last, 1, 4);
}

TEST(CatDevice, HundredsOfInputs) {
  BARACUDA_REQUIRE_GPU();
  // 300 inputs (three launches), sizes 0..12 along dim 0 of [*, 36] (16-byte rows) and dim 1 of
  // [17, *] (element rows)
  std::vector<Input> a, b;
  for (int i = 0; i < 300; ++i) {
    const int64_t n = i % 13;
    a.push_back(make_input({n, 36}, {36, 1}, 0, std::max<int64_t>(n * 36, 1), static_cast<float>(i) * 1000));
    b.push_back(make_input({17, n}, {n, 1}, 0, std::max<int64_t>(17 * n, 1), static_cast<float>(i) * 1000));
  }
  check_cat(a, 0, 0);
  check_cat(b, 1, 0);
}

TEST(CatDevice, BeyondTwoToThe31) {
  BARACUDA_REQUIRE_GPU();
  // u8 [2^31 + 1] ++ [100]: element rows (2^31 + 1 is no multiple of 16) past the 32-bit divide
  const int64_t n0 = (int64_t{1} << 31) + 1, n1 = 100;
  if (!enough_memory(static_cast<size_t>(2 * (n0 + n1)))) GTEST_SKIP() << "needs ~5 GB of device memory";
  uint8_t *x0 = nullptr, *x1 = nullptr, *y = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&x0), static_cast<size_t>(n0)));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&x1), static_cast<size_t>(n1)));
  BARACUDA_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&y), static_cast<size_t>(n0 + n1)));
  BARACUDA_CUDA_OK(cudaMemset(x0, 7, static_cast<size_t>(n0)));
  BARACUDA_CUDA_OK(cudaMemset(x0 + n0 - 1, 9, 1));
  BARACUDA_CUDA_OK(cudaMemset(x1, 3, static_cast<size_t>(n1)));
  BARACUDA_CUDA_OK(cudaMemset(y, 0, static_cast<size_t>(n0 + n1)));
  const int64_t shape[] = {n0 + n1}, sizes[] = {n0, n1};
  auto p = CatPlan::select(CatDescriptor::cat(DType::u8, shape, 0, sizes));
  ASSERT_TRUE(p) << p.status().to_string();
  const TensorRef ins[] = {TensorRef::make(x0, DType::u8, {n0}), TensorRef::make(x1, DType::u8, {n1})};
  ASSERT_TRUE(p->run(nullptr, {}, {ins, TensorMut::make(y, DType::u8, {n0 + n1})}).ok());
  BARACUDA_CUDA_OK(cudaDeviceSynchronize());
  auto at = [&](int64_t i) {
    uint8_t v = 0;
    EXPECT_EQ(cudaMemcpy(&v, y + i, 1, cudaMemcpyDeviceToHost), cudaSuccess);
    return static_cast<int>(v);
  };
  EXPECT_EQ(at(0), 7);
  EXPECT_EQ(at((int64_t{1} << 31) - 1), 7);
  EXPECT_EQ(at(n0 - 1), 9);
  EXPECT_EQ(at(n0), 3);
  EXPECT_EQ(at(n0 + n1 - 1), 3);
  std::vector<uint8_t> tail(4096);
  BARACUDA_CUDA_OK(cudaMemcpy(tail.data(), y + (n0 - 4000), tail.size(), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < tail.size(); ++i) {
    const int64_t f = n0 - 4000 + static_cast<int64_t>(i);
    const int want = f < n0 - 1 ? 7 : f == n0 - 1 ? 9 : f < n0 + n1 ? 3 : -1;
    if (want >= 0 && tail[i] != want) {
      ADD_FAILURE() << "element " << f << ": got " << int(tail[i]) << ", want " << want;
      break;
    }
  }
  cudaFree(x0), cudaFree(x1), cudaFree(y);
}
