// Pieces shared by the bandwidth families (rope, conv1d, embedding; shape_json also elementwise):
// uniform random bf16 or f32 data uploaded to the device, element reads from host copies, and
// the timed-row record with its console line and JSON file.
#pragma once

#include <cstdint>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>
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

// "[a, b, c]"
inline std::string shape_json(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// printf into a std::string.
inline std::string strf(const char* fmt, ...) {
  va_list a, b;
  va_start(a, fmt);
  va_copy(b, a);
  const int n = std::vsnprintf(nullptr, 0, fmt, a);
  va_end(a);
  std::string s(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  std::vsnprintf(s.data(), s.size() + 1, fmt, b);
  va_end(b);
  return s;
}

// One timed row of a bandwidth family: the case (with its dtype `dt`), direction, sku, median µs,
// bytes moved and whether the result matched the reference.
template <class Case>
struct BandwidthRec {
  Case c;
  std::string dir, sku;
  double us, bytes;
  bool verified;
  double graph_us = 0;  // device time per call under graph replay (median_graph_us); 0: not measured
  double copy_us = 0;   // eager time of a device-to-device copy moving the same bytes (copy_us); 0: not measured
  double tbps() const { return bytes / (us * 1e-6) / 1e12; }
};

// One console line per record: "<family> <label> <dir> <dtype>  us  TB/s  % of copy  verified",
// then "graph us  % of copy" where graph_us was measured.
template <class Case, class Label>
void print_bandwidth(const char* family, const std::vector<BandwidthRec<Case>>& recs, double ceiling, Label&& label) {
  for (const auto& r : recs) {
    std::printf("%s %-32s %-11s %-4s %9.1f us %6.3f TB/s %5.1f%% of copy  %s", family, label(r.c).c_str(), r.dir.c_str(),
                std::string(dtype_name(r.c.dt)).c_str(), r.us, r.tbps(), 100 * r.tbps() / ceiling,
                r.verified ? "verified" : "VERIFY FAILED");
    if (r.graph_us > 0)
      std::printf("  graph %.1f us %5.1f%% of copy", r.graph_us, 100 * r.bytes / (r.graph_us * 1e-6) / 1e12 / ceiling);
    if (r.copy_us > 0) std::printf("  same-size copy %.1f us (ours %.1f%% of its rate)", r.copy_us, 100 * r.copy_us / r.us);
    std::printf("\n");
  }
}

// {"copy_tbps": ceiling, <header>"records": [{<fields(case)>, "direction", "dtype", "sku", "ours_us",
// "bytes", "achieved", "ceiling", "verified"[, "graph_us"][, "copy_us"]}, ...]}; header is empty or ends
// with ", ".
template <class Case, class Fields>
bool write_bandwidth_json(const std::string& path, double ceiling, const std::string& header,
                          const std::vector<BandwidthRec<Case>>& recs, Fields&& fields) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return false;
  std::fprintf(f, "{\"copy_tbps\": %.4f, %s\"records\": [\n", ceiling, header.c_str());
  for (size_t i = 0; i < recs.size(); ++i) {
    const auto& r = recs[i];
    std::fprintf(f,
                 "{%s, \"direction\": \"%s\", \"dtype\": \"%s\", \"sku\": \"%s\", \"ours_us\": %.3f, \"bytes\": %.0f, "
                 "\"achieved\": %.4f, \"ceiling\": %.4f, \"verified\": %s",
                 fields(r.c).c_str(), r.dir.c_str(), std::string(dtype_name(r.c.dt)).c_str(), r.sku.c_str(), r.us, r.bytes,
                 r.tbps(), ceiling, r.verified ? "true" : "false");
    if (r.graph_us > 0) std::fprintf(f, ", \"graph_us\": %.3f", r.graph_us);
    if (r.copy_us > 0) std::fprintf(f, ", \"copy_us\": %.3f", r.copy_us);
    std::fprintf(f, "}%s\n", i + 1 < recs.size() ? "," : "");
  }
  std::fprintf(f, "]}\n");
  std::fclose(f);
  return true;
}

}  // namespace baracuda::bench
