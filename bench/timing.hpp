// Timing and device-memory helpers shared by the benchmark families: one CUDA-check macro,
// CUDA-event medians, an owning device buffer, and the --filter test.
#pragma once

#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define BENCH_CUDA_OK(expr)                                                                              \
  do {                                                                                                   \
    cudaError_t e_ = (expr);                                                                             \
    if (e_ != cudaSuccess) {                                                                             \
      std::fprintf(stderr, "%s failed: %s (%s:%d)\n", #expr, cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(2);                                                                                      \
    }                                                                                                    \
  } while (0)

namespace baracuda::bench {

// --filter: a case runs when the filter is empty or one of its '|'-separated parts occurs in the
// case's label ("pow f32 contiguous|erfc f32"); a part starting with '^' must begin the label
// ("^exp bf16" is exp alone, not logaddexp).
inline bool filter_skips(const std::string& filter, const std::string& label) {
  if (filter.empty()) return false;
  for (size_t b = 0;;) {
    const size_t e = filter.find('|', b);
    const std::string part = filter.substr(b, e == std::string::npos ? std::string::npos : e - b);
    const bool anchored = !part.empty() && part[0] == '^';
    const size_t at = label.find(anchored ? part.substr(1) : part);
    if (!part.empty() && at != std::string::npos && (!anchored || at == 0)) return false;
    if (e == std::string::npos) return true;
    b = e + 1;
  }
}

// BARACUDA_BENCH_PROFILE set: every timed fn also runs once alone between cudaProfilerStart and
// cudaProfilerStop (after its warm-ups), so `ncu --profile-from-start off` profiles each timed call
// once, in the order the benchmark prints them.
inline bool profile_one_call() {
  static const bool on = std::getenv("BARACUDA_BENCH_PROFILE") != nullptr;
  return on;
}

// Median time in ms of `reps` runs of fn on `stream`, each bracketed by CUDA events (after `warm`
// warm-ups).
template <class F>
double median_ms(F&& fn, int warm, int reps, cudaStream_t stream = nullptr) {
  for (int i = 0; i < warm; ++i) fn();
  if (profile_one_call()) {
    BENCH_CUDA_OK(cudaDeviceSynchronize());
    BENCH_CUDA_OK(cudaProfilerStart());
    fn();
    BENCH_CUDA_OK(cudaDeviceSynchronize());
    BENCH_CUDA_OK(cudaProfilerStop());
  }
  cudaEvent_t a, b;
  BENCH_CUDA_OK(cudaEventCreate(&a));
  BENCH_CUDA_OK(cudaEventCreate(&b));
  std::vector<float> t(reps);
  for (int i = 0; i < reps; ++i) {
    BENCH_CUDA_OK(cudaEventRecord(a, stream));
    fn();
    BENCH_CUDA_OK(cudaEventRecord(b, stream));
    BENCH_CUDA_OK(cudaEventSynchronize(b));
    BENCH_CUDA_OK(cudaEventElapsedTime(&t[i], a, b));
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[reps / 2];
}

// Device time per call in us: `calls` calls of fn(stream) captured into one CUDA graph, the
// median of `reps` replays (median_ms on the capture stream, one warm-up) divided by `calls`.
// Host work of the calls (checks, launches) is outside the replay, so this is what the GPU
// spends, gaps between the captured kernels included (performance.md §2.3: small shapes also
// under graph replay).
template <class F>
double median_graph_us(F&& fn, int calls, int reps) {
  cudaStream_t s;
  BENCH_CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  BENCH_CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < calls; ++i) fn(s);
  BENCH_CUDA_OK(cudaStreamEndCapture(s, &g));
  BENCH_CUDA_OK(cudaGraphInstantiate(&ge, g, 0));
  const double ms = median_ms([&] { BENCH_CUDA_OK(cudaGraphLaunch(ge, s)); }, 1, reps, s);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
  return 1000.0 * ms / calls;
}

// Host time in us of one call of fn (its checks and launches, not its device time): the median
// of `reps` batches of `calls` back-to-back calls, each batch timed by the host clock and ended by
// a synchronization outside the timing (performance.md §2.3: run()'s host overhead on its own).
template <class F>
double median_host_us(F&& fn, int calls, int reps) {
  std::vector<double> t(reps);
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int c = 0; c < calls; ++c) fn();
    const auto t1 = std::chrono::steady_clock::now();
    BENCH_CUDA_OK(cudaDeviceSynchronize());
    t[i] = std::chrono::duration<double, std::micro>(t1 - t0).count() / calls;
  }
  std::sort(t.begin(), t.end());
  return t[reps / 2];
}

template <class F>
double median_us(F&& fn, int warm, int reps) {
  return 1000.0 * median_ms(std::forward<F>(fn), warm, reps);
}

// Owning device allocation (at least 256 bytes, so an empty buffer is still a valid pointer).
struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(size_t n) { BENCH_CUDA_OK(cudaMalloc(&p, std::max<size_t>(n, 256))); }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

// Eager time (us, CUDA events around one call, as the benchmarks time ours) of a device-to-device
// copy of `bytes` (so 2 x bytes moved).
inline double copy_us(size_t bytes, int warm = 3, int reps = 20) {
  DeviceBuffer a(bytes), b(bytes);
  BENCH_CUDA_OK(cudaMemset(a.p, 0x5a, bytes));
  return median_us([&] { BENCH_CUDA_OK(cudaMemcpyAsync(b.p, a.p, bytes, cudaMemcpyDeviceToDevice)); }, warm, reps);
}

// The copy-bandwidth ceiling: bytes read + written by a large device-to-device copy (TB/s).
inline double measure_copy_tbps() {
  const size_t bytes = size_t{2} << 30;
  return 2.0 * bytes / (copy_us(bytes) * 1e-6) / 1e12;
}

}  // namespace baracuda::bench
