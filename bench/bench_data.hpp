// Benchmark inputs shared by the bandwidth families (rope, conv1d): uniform random bf16 or f32
// data uploaded to the device, and element reads from host copies.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/half_bits.hpp"
#include "timing.hpp"

namespace baracuda::bench {

// Element at p of a bf16 or f32 array, as double.
inline double bf16_or_f32_at(DType dt, const uint8_t* p) {
  if (dt == DType::f32) {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  uint16_t b;
  std::memcpy(&b, p, 2);
  return bf16_bits_to_float(b);
}

// n values uniform in [lo, hi) rounded to dt (bf16 or f32), uploaded to dev; returns the host copy.
inline std::vector<uint8_t> fill_uniform(void* dev, DType dt, int64_t n, uint64_t seed, float lo = -2.f,
                                         float hi = 2.f) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  const size_t es = dtype_size(dt);
  std::vector<uint8_t> h(static_cast<size_t>(n) * es);
  for (int64_t i = 0; i < n; ++i) {
    const float v = u(rng);
    if (dt == DType::f32) std::memcpy(&h[i * es], &v, 4);
    else {
      const uint16_t b = float_to_bf16_bits(v);
      std::memcpy(&h[i * es], &b, 2);
    }
  }
  BENCH_CUDA_OK(cudaMemcpy(dev, h.data(), h.size(), cudaMemcpyHostToDevice));
  return h;
}

}  // namespace baracuda::bench
