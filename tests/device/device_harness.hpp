// Device-tier test harness shared by every op family's GPU tests: GPU detection with a
// visible skip, the CUDA-check macro, and gtest wrappers of the harness library (buffers,
// layouts, poison, element conversion and the tolerance rule: harness/buffer.hpp,
// harness/op_case.hpp), so a failure points at the test that saw it.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "baracuda/core/tensor.hpp"
#include "harness/buffer.hpp"

namespace baracuda::test {

using namespace ::baracuda::harness;  // StridedBuffer, Layout, bits_to_double, fill_random ...

// Empty when a GPU is usable; otherwise why not.
const std::string& gpu_unavailable_reason();

#define BARACUDA_REQUIRE_GPU()                                                              \
  do {                                                                                      \
    if (!::baracuda::test::gpu_unavailable_reason().empty())                                \
      GTEST_SKIP() << "no GPU: " << ::baracuda::test::gpu_unavailable_reason();             \
  } while (0)

#define BARACUDA_CUDA_OK(expr)                                                              \
  do {                                                                                      \
    cudaError_t e_ = (expr);                                                                \
    ASSERT_EQ(e_, cudaSuccess) << #expr << ": " << cudaGetErrorString(e_);                  \
  } while (0)

// Whether the device has `bytes` free with 1 GiB to spare (the > 2^31-element tests skip otherwise).
bool enough_memory(size_t bytes);

inline constexpr float kInf = std::numeric_limits<float>::infinity(), kNaN = std::numeric_limits<float>::quiet_NaN();

// A fresh device copy of h (the caller frees it); a failed CUDA call fails the test.
template <class T>
T* to_device(const std::vector<T>& h) {
  T* d = nullptr;
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&d), h.size() * sizeof(T)), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  return d;
}

// n elements of T copied back from d; a failed copy fails the test.
template <class T>
std::vector<T> download(const T* d, size_t n) {
  std::vector<T> h(n);
  EXPECT_EQ(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}

// Case thinning for slow tools (compute-sanitizer): with BARACUDA_TEST_CASE_STRIDE=k set, a
// matrix test runs only the cases whose seed is a multiple of k. Unset or 1: every case.
bool matrix_case_skipped(uint64_t seed);

// Worst error / tolerance seen by a family's comparisons.
struct ErrorStats {
  int64_t cases = 0, elements = 0;
  double worst = 0;
  std::string worst_at;
};

// Downloads `got` and fails (ADD_FAILURE, false) when a storage element outside the view lost
// its poison.
bool download_and_check_gaps(const char* what, const std::string& repro, StridedBuffer& got, uint8_t poison);

// harness::compare_values with the rule |got − want| <= atol + rounding_eps(out)·|want| +
// 64·accumulator_eps(acc)·mag; the first violation fails the test. Records the worst ratio in S.
bool within_tolerance(const char* what, const std::string& repro, const std::vector<double>& got,
                      const std::vector<double>& want, const std::vector<double>& mag, DType out, DType acc,
                      ErrorStats& S);

}  // namespace baracuda::test
