// ScanPlan's kernels for integer storage (i8 / u8 / i16 / i32 / i64 / bool, an i64 accumulator): cumsum,
// cumprod, cummax, cummin; and the launcher lookup.
#include "ops/reduce/scan_engine.cuh"

namespace baracuda::scan {

ScanLaunchFn find_scan_float(DType in, int kind, bool f64);  // scan_float.cu

ScanLaunchFn find_scan(DType in, int kind, bool f64) {
  if (is_floating(in)) return find_scan_float(in, kind, f64);
  ScanLaunchFn fn = nullptr;
  red::dispatch_reduce_storage<false>(in, [&]<class T>() {
    switch (kind) {
      case kCumsum: fn = scan_pick<T, false, kCumsum>(); break;
      case kCumprod: fn = scan_pick<T, false, kCumprod>(); break;
      case kCummax: fn = scan_pick<T, false, kCummax>(); break;
      case kCummin: fn = scan_pick<T, false, kCummin>(); break;
      default: break;
    }
  });
  return fn;
}

size_t scan_acc_bytes(DType in, int kind, bool f64) {
  if (kind == kCummax || kind == kCummin) return 16;  // {C v; int64_t i} for every C
  return !is_floating(in) || f64 || in == DType::f64 ? 8 : 4;
}

}  // namespace baracuda::scan
