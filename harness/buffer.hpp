// Device buffers for tests and the benchmark (no test framework): exact-size allocations of a
// view's storage with a host mirror, the layouts views are drawn in, poison and gap checks, and
// element <-> double conversion for every dtype. Failures (an allocation or copy that fails)
// are reported through report_failure(), which the test tier turns into a gtest failure.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "baracuda/core/tensor.hpp"

namespace baracuda::harness {

// Where buffer failures go (default: stderr); returns the previous hook.
using FailureHook = void (*)(const std::string& what);
FailureHook set_failure_hook(FailureHook hook);
void report_failure(const std::string& what);

// How a view lays its elements out in its own allocation.
enum class Layout {
  kContiguous,
  kOffset1,      // contiguous, storage offset of 1 element (breaks 4/8/16-byte vector alignment)
  kOffset3,
  kStep2,        // last axis sliced with step 2
  kPaddedRows,   // rows padded by 3 elements
  kPermuted,     // axis order reversed in memory (column-major)
  kNegativeLast, // last axis walked backwards (stride -1)
  kBroadcast,    // inputs only: the first axis of extent > 1 has stride 0
  kTransposed,   // the last two axes swapped in memory (column-major matrices), batch outermost
};
const char* layout_name(Layout l);

// A device allocation of exactly the bytes a view reaches, plus a host mirror of the storage.
struct StridedBuffer {
  DType dtype = DType::f32;
  std::vector<int64_t> shape, stride;
  int64_t base = 0;            // element index of logical element 0 inside the storage
  int64_t storage_elems = 0;
  void* dev = nullptr;         // cudaMalloc'd, storage_elems * elem bytes (nullptr when 0)
  std::vector<uint8_t> host;   // storage mirror

  StridedBuffer() = default;
  // host_mirror = false: no host copy of the storage (large buffers filled on the device;
  // get_bits / set_bits / upload / download are then unavailable).
  StridedBuffer(DType dt, std::vector<int64_t> shape, Layout layout, bool host_mirror = true);
  // Given strides (elements; any signs, 0 allowed) and `lead` extra elements before the view.
  StridedBuffer(DType dt, std::vector<int64_t> shape, std::vector<int64_t> strides, int64_t lead, bool host_mirror = true);
  StridedBuffer(const StridedBuffer&) = delete;
  StridedBuffer& operator=(const StridedBuffer&) = delete;
  StridedBuffer(StridedBuffer&& o) noexcept { *this = std::move(o); }
  StridedBuffer& operator=(StridedBuffer&& o) noexcept;
  ~StridedBuffer();

  int64_t numel() const;
  size_t elem() const { return dtype_size(dtype); }
  void* view_ptr() const { return static_cast<char*>(dev) + base * static_cast<int64_t>(elem()); }
  TensorRef ref() const;
  TensorMut mut() const;
  // storage offset of logical (row-major) element f
  int64_t offset_of(int64_t f) const;
  uint64_t get_bits(int64_t f) const;        // from the host mirror
  void set_bits(int64_t f, uint64_t bits);   // into the host mirror
  void fill_storage(uint8_t byte);           // whole host mirror
  void upload();                             // host mirror -> device
  void download();                           // device -> host mirror
  // every storage element not reachable from the view still holds `byte`
  bool gaps_hold(uint8_t byte, int64_t* first_bad) const;
};

// Element <-> double (through float for f16/bf16; ints exact below 2^53).
double bits_to_double(DType t, uint64_t bits);
uint64_t double_to_bits(DType t, double v);  // round to nearest even; ints truncate
bool is_nan_bits(DType t, uint64_t bits);
double dtype_eps(DType t);

// Random logical values of a view: uniform in [-2, 2] for floats (rounded to the dtype),
// full-range for ints, 0/1 for bool; with `specials`, ±0, ±inf and NaN at the first, middle
// and last element.
void fill_random(StridedBuffer& b, std::mt19937_64& rng, bool specials);

std::string shape_str(const std::vector<int64_t>& v);

// Unit roundoff of a result dtype (f64: 2^-52) and of its accumulator (f32, or f64 for f64).
double rounding_eps(DType t);
double accumulator_eps(DType t);

// The view's logical elements (row-major) as double; |v| elementwise.
std::vector<double> logical_values(const StridedBuffer& s);
std::vector<double> abs_values(std::vector<double> v);

// A buffer whose whole storage holds `poison`, then (rng given) random logical values; uploaded.
StridedBuffer poisoned_buffer(DType dt, std::vector<int64_t> shape, Layout l, uint8_t poison, std::mt19937_64* rng);

}  // namespace baracuda::harness
