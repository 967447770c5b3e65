// Access-pattern ceilings measured beside the copy ceiling: how fast this GPU reads rows of a
// given size at uniformly random places of a large table (the embedding gathers' pattern).
#include <cuda_runtime.h>

#include <cstdint>

#include "bench_ceilings.hpp"
#include "timing.hpp"

namespace baracuda::bench {
namespace {

constexpr int kThreads = 256;
constexpr int kInFlight = 8;  // 16-byte loads in flight per thread

__device__ __forceinline__ uint32_t mix32(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return static_cast<uint32_t>(x >> 32);
}

// Item i reads vector i % vpr of row hash(i / vpr) mod V: vpr consecutive threads read one row.
__global__ void __launch_bounds__(kThreads) random_rows_kernel(const uint4* table, uint32_t V, int vpr, int64_t items,
                                                               unsigned* sink) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  uint32_t acc = 0;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; base < items; base += stride * kInFlight) {
    uint4 v[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int64_t i = base + u * stride;
      v[u] = make_uint4(0, 0, 0, 0);
      if (i < items) {
        const int64_t item_row = i / vpr;
        const uint64_t row = (static_cast<uint64_t>(mix32(static_cast<uint64_t>(item_row))) * V) >> 32;
        v[u] = table[row * vpr + (i - item_row * vpr)];
      }
    }
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (acc == 0x9e3779b9u) atomicAdd(sink, 1u);  // keeps the loads; practically never taken
}

}  // namespace

double measure_random_row_read_tbps(const void* table, int64_t V, int row_bytes, int64_t rows) {
  DeviceBuffer sink(sizeof(unsigned));
  const int vpr = row_bytes / 16;
  const int64_t items = rows * vpr;
  int sms = 0;
  BENCH_CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const unsigned grid = static_cast<unsigned>(sms) * 8;  // 8 blocks of 256 per SM: 2048 threads
  const double us = median_us(
      [&] {
        random_rows_kernel<<<grid, kThreads>>>(static_cast<const uint4*>(table), static_cast<uint32_t>(V), vpr, items,
                                               static_cast<unsigned*>(sink.p));
        BENCH_CUDA_OK(cudaGetLastError());
      },
      3, 20);
  return static_cast<double>(rows) * row_bytes / (us * 1e-6) / 1e12;
}

}  // namespace baracuda::bench
