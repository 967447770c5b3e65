#include "device/device_harness.hpp"

#include <cstdlib>

#include "harness/op_case.hpp"

namespace baracuda::test {

namespace {
// Buffer failures inside a test (an allocation or copy that fails) fail that test.
void gtest_failure(const std::string& what) { ADD_FAILURE() << what; }
const FailureHook g_installed = set_failure_hook(&gtest_failure);
}  // namespace

const std::string& gpu_unavailable_reason() {
  static const std::string reason = [] {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      cudaGetLastError();
      return std::string("cudaGetDeviceCount: ") + cudaGetErrorName(e);
    }
    if (n == 0) return std::string("no CUDA devices");
    return std::string();
  }();
  return reason;
}

bool enough_memory(size_t bytes) {
  size_t free_b = 0, total_b = 0;
  cudaMemGetInfo(&free_b, &total_b);
  return free_b > bytes + (size_t{1} << 30);
}

bool matrix_case_skipped(uint64_t seed) {
  static const uint64_t stride = [] {
    const char* v = std::getenv("BARACUDA_TEST_CASE_STRIDE");
    const long long k = v ? std::atoll(v) : 1;
    return static_cast<uint64_t>(k > 1 ? k : 1);
  }();
  return seed % stride != 0;
}

bool download_and_check_gaps(const char* what, const std::string& repro, StridedBuffer& got, uint8_t poison) {
  got.download();
  int64_t gap = -1;
  if (got.gaps_hold(poison, &gap)) return true;
  ADD_FAILURE() << repro << ": " << what << " wrote outside its view at storage element " << gap;
  return false;
}

bool within_tolerance(const char* what, const std::string& repro, const std::vector<double>& got,
                      const std::vector<double>& want, const std::vector<double>& mag, DType out, DType acc,
                      ErrorStats& S) {
  const Comparison c = compare_values(got, want, mag, {}, out, acc, false);
  S.elements += c.elements;
  if (c.worst > S.worst) S.worst = c.worst, S.worst_at = repro + " " + what;
  if (c.ok()) return true;
  ADD_FAILURE() << repro << ": " << what << "[" << c.bad.index << "] got " << c.bad.got << " want " << c.bad.want << " |err| "
                << c.bad.err << " tol " << c.bad.tol;
  return false;
}

}  // namespace baracuda::test
