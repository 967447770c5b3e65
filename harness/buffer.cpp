#include "harness/buffer.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "baracuda/core/half_bits.hpp"

namespace baracuda::harness {

namespace {
void print_failure(const std::string& what) { std::fprintf(stderr, "harness: %s\n", what.c_str()); }
FailureHook g_hook = &print_failure;
}  // namespace

FailureHook set_failure_hook(FailureHook hook) {
  FailureHook old = g_hook;
  g_hook = hook ? hook : &print_failure;
  return old;
}
void report_failure(const std::string& what) { g_hook(what); }

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::kContiguous: return "contiguous";
    case Layout::kOffset1: return "offset1";
    case Layout::kOffset3: return "offset3";
    case Layout::kStep2: return "step2";
    case Layout::kPaddedRows: return "padded_rows";
    case Layout::kPermuted: return "permuted";
    case Layout::kNegativeLast: return "negative_last";
    case Layout::kBroadcast: return "broadcast";
    case Layout::kTransposed: return "transposed";
  }
  return "?";
}

StridedBuffer::StridedBuffer(DType dt, std::vector<int64_t> shp, Layout layout, bool host_mirror) : dtype(dt), shape(std::move(shp)) {
  const int r = static_cast<int>(shape.size());
  stride.assign(r, 0);
  int64_t lead = 0;
  if (layout == Layout::kOffset1) lead = 1;
  if (layout == Layout::kOffset3) lead = 3;
  if (layout == Layout::kTransposed && r >= 2) {
    std::vector<int> order(r);  // memory order, outermost first: batch axes, then r-1, then r-2
    for (int d = 0; d < r - 2; ++d) order[d] = d;
    order[r - 2] = r - 1;
    order[r - 1] = r - 2;
    int64_t s = 1;
    for (int i = r - 1; i >= 0; --i) {
      stride[order[i]] = s;
      s *= std::max<int64_t>(shape[order[i]], 1);
    }
  } else if (layout == Layout::kPermuted) {
    int64_t s = 1;
    for (int d = 0; d < r; ++d) {
      stride[d] = s;
      s *= std::max<int64_t>(shape[d], 1);
    }
  } else {
    int64_t s = 1;
    for (int d = r - 1; d >= 0; --d) {
      int64_t ext = std::max<int64_t>(shape[d], 1);
      if (d == r - 1 && layout == Layout::kStep2) s = 2;
      stride[d] = s;
      if (d == r - 1 && layout == Layout::kPaddedRows) ext += 3;
      s *= ext;
    }
    if (layout == Layout::kNegativeLast && r > 0) stride[r - 1] = -stride[r - 1];
    if (layout == Layout::kBroadcast)
      for (int d = 0; d < r; ++d)
        if (shape[d] > 1) {
          stride[d] = 0;
          break;
        }
  }
  int64_t lo = 0, hi = 0;
  bool empty = false;
  for (int d = 0; d < r; ++d) {
    if (shape[d] == 0) empty = true;
    const int64_t span = stride[d] * (std::max<int64_t>(shape[d], 1) - 1);
    (span < 0 ? lo : hi) += span;
  }
  base = lead - lo;
  storage_elems = empty ? lead : lead + (hi - lo) + 1;
  if (layout == Layout::kPaddedRows && !empty) storage_elems += 3;  // the last row's padding too
  if (host_mirror) host.assign(static_cast<size_t>(storage_elems) * elem(), 0);
  if (storage_elems > 0) {
    if (cudaMalloc(&dev, static_cast<size_t>(storage_elems) * elem()) != cudaSuccess) {
      dev = nullptr;
      report_failure("cudaMalloc of " + std::to_string(storage_elems * static_cast<int64_t>(elem())) + " bytes failed");
    }
  }
}

StridedBuffer::StridedBuffer(DType dt, std::vector<int64_t> shp, std::vector<int64_t> strides, int64_t lead, bool host_mirror)
    : dtype(dt), shape(std::move(shp)), stride(std::move(strides)) {
  int64_t lo = 0, hi = 0;
  bool empty = false;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) empty = true;
    const int64_t span = stride[d] * (std::max<int64_t>(shape[d], 1) - 1);
    (span < 0 ? lo : hi) += span;
  }
  base = lead - lo;
  storage_elems = empty ? lead : lead + (hi - lo) + 1;
  if (host_mirror) host.assign(static_cast<size_t>(storage_elems) * elem(), 0);
  if (storage_elems > 0 && cudaMalloc(&dev, static_cast<size_t>(storage_elems) * elem()) != cudaSuccess) {
    dev = nullptr;
    report_failure("cudaMalloc of " + std::to_string(storage_elems * static_cast<int64_t>(elem())) + " bytes failed");
  }
}

StridedBuffer& StridedBuffer::operator=(StridedBuffer&& o) noexcept {
  std::swap(dtype, o.dtype);
  std::swap(shape, o.shape);
  std::swap(stride, o.stride);
  std::swap(base, o.base);
  std::swap(storage_elems, o.storage_elems);
  std::swap(dev, o.dev);
  std::swap(host, o.host);
  return *this;
}

StridedBuffer::~StridedBuffer() {
  if (dev) cudaFree(dev);
}

int64_t StridedBuffer::numel() const {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

TensorRef StridedBuffer::ref() const { return TensorRef::make(dev ? view_ptr() : nullptr, dtype, shape, stride); }
TensorMut StridedBuffer::mut() const { return TensorMut::make(dev ? view_ptr() : nullptr, dtype, shape, stride); }

int64_t StridedBuffer::offset_of(int64_t f) const {
  int64_t off = base;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    off += (f % shape[d]) * stride[d];
    f /= shape[d];
  }
  return off;
}

uint64_t StridedBuffer::get_bits(int64_t f) const {
  uint64_t v = 0;
  std::memcpy(&v, host.data() + offset_of(f) * elem(), elem());
  return v;
}

void StridedBuffer::set_bits(int64_t f, uint64_t bits) {
  std::memcpy(host.data() + offset_of(f) * elem(), &bits, elem());
}

void StridedBuffer::fill_storage(uint8_t byte) { std::fill(host.begin(), host.end(), byte); }

void StridedBuffer::upload() {
  // cudaMemcpy from pageable memory may return before the data lands; tests then launch on
  // non-blocking streams, so wait for the copy to finish.
  if (dev && cudaMemcpy(dev, host.data(), host.size(), cudaMemcpyHostToDevice) != cudaSuccess) report_failure("upload failed");
  if (cudaDeviceSynchronize() != cudaSuccess) report_failure("cudaDeviceSynchronize after an upload failed");
}

void StridedBuffer::download() {
  if (dev && cudaMemcpy(host.data(), dev, host.size(), cudaMemcpyDeviceToHost) != cudaSuccess) report_failure("download failed");
}

bool StridedBuffer::gaps_hold(uint8_t byte, int64_t* first_bad) const {
  std::vector<char> reached(static_cast<size_t>(storage_elems), 0);
  const int64_t n = numel();
  for (int64_t f = 0; f < n; ++f) reached[static_cast<size_t>(offset_of(f))] = 1;
  for (int64_t e = 0; e < storage_elems; ++e) {
    if (reached[static_cast<size_t>(e)]) continue;
    for (size_t b = 0; b < elem(); ++b)
      if (host[static_cast<size_t>(e) * elem() + b] != byte) {
        *first_bad = e;
        return false;
      }
  }
  return true;
}

double bits_to_double(DType t, uint64_t bits) {
  switch (t) {
    case DType::f32: return std::bit_cast<float>(static_cast<uint32_t>(bits));
    case DType::f64: return std::bit_cast<double>(bits);
    case DType::f8e4m3:
    case DType::f8e5m2: {
      const bool e4 = t == DType::f8e4m3;
      const int mb = e4 ? 3 : 2, bias = e4 ? 7 : 15;
      const uint32_t v = static_cast<uint32_t>(bits & 0xff), sign = v >> 7, exp = (v >> mb) & (e4 ? 0xf : 0x1f),
                     man = v & ((1u << mb) - 1);
      double mag;
      if (e4 && exp == 0xf && man == 7) mag = NAN;
      else if (!e4 && exp == 0x1f) mag = man ? NAN : INFINITY;
      else if (exp == 0) mag = std::ldexp(static_cast<double>(man), 1 - bias - mb);
      else mag = std::ldexp(static_cast<double>(man | (1u << mb)), static_cast<int>(exp) - bias - mb);
      return sign ? -mag : mag;
    }
    case DType::f16: return f16_bits_to_float(static_cast<uint16_t>(bits));
    case DType::bf16: return bf16_bits_to_float(static_cast<uint16_t>(bits));
    case DType::i8: return static_cast<int8_t>(bits);
    case DType::u8: return static_cast<uint8_t>(bits);
    case DType::i16: return static_cast<int16_t>(bits);
    case DType::i32: return static_cast<int32_t>(bits);
    case DType::i64: return static_cast<double>(static_cast<int64_t>(bits));
    case DType::boolean: return (bits & 0xff) ? 1.0 : 0.0;
    default: return NAN;
  }
}

uint64_t double_to_bits(DType t, double v) {
  switch (t) {
    case DType::f32: return std::bit_cast<uint32_t>(static_cast<float>(v));
    case DType::f64: return std::bit_cast<uint64_t>(v);
    case DType::f16: return float_to_f16_bits(static_cast<float>(v));
    case DType::bf16: return float_to_bf16_bits(static_cast<float>(v));
    case DType::i8: return static_cast<uint8_t>(static_cast<int8_t>(v));
    case DType::u8: return static_cast<uint8_t>(v);
    case DType::i16: return static_cast<uint16_t>(static_cast<int16_t>(v));
    case DType::i32: return static_cast<uint32_t>(static_cast<int32_t>(v));
    case DType::i64: return static_cast<uint64_t>(static_cast<int64_t>(v));
    case DType::boolean: return v != 0.0 ? 1 : 0;
    default: return 0;
  }
}

bool is_nan_bits(DType t, uint64_t bits) { return is_floating(t) && std::isnan(bits_to_double(t, bits)); }

double dtype_eps(DType t) {
  switch (t) {
    case DType::f32: return 1.1920929e-7;
    case DType::f64: return 2.220446049250313e-16;
    case DType::f16: return 9.765625e-4;
    case DType::bf16: return 7.8125e-3;
    default: return 0.0;
  }
}

void fill_random(StridedBuffer& b, std::mt19937_64& rng, bool specials) {
  const int64_t n = b.numel();
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  // A broadcast view maps several logical elements to one address: write each address once.
  for (int64_t f = 0; f < n; ++f) {
    uint64_t bits;
    if (is_floating(b.dtype)) {
      bits = double_to_bits(b.dtype, u(rng));
    } else if (b.dtype == DType::boolean) {
      bits = rng() & 1;
    } else {
      bits = rng();
    }
    b.set_bits(f, bits);
  }
  if (specials && is_floating(b.dtype) && n >= 3) {
    const double sp[] = {0.0, -0.0, INFINITY, -INFINITY, NAN};
    const int64_t at[] = {0, n / 2, n - 1};
    for (int i = 0; i < 3; ++i) b.set_bits(at[i], double_to_bits(b.dtype, sp[(rng() % 5)]));
  }
}

std::string shape_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

double rounding_eps(DType t) { return t == DType::f64 ? 2.220446049250313e-16 : dtype_eps(t); }
double accumulator_eps(DType t) { return t == DType::f64 ? 2.220446049250313e-16 : 1.1920928955078125e-07; }

std::vector<double> logical_values(const StridedBuffer& s) {
  std::vector<double> v(static_cast<size_t>(s.numel()));
  for (int64_t f = 0; f < s.numel(); ++f) v[static_cast<size_t>(f)] = bits_to_double(s.dtype, s.get_bits(f));
  return v;
}

std::vector<double> abs_values(std::vector<double> v) {
  for (double& e : v) e = std::fabs(e);
  return v;
}

StridedBuffer poisoned_buffer(DType dt, std::vector<int64_t> shape, Layout l, uint8_t poison, std::mt19937_64* rng) {
  StridedBuffer b(dt, std::move(shape), l);
  b.fill_storage(poison);
  if (rng != nullptr) fill_random(b, *rng, false);
  b.upload();
  return b;
}

}  // namespace baracuda::harness
