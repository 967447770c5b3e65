// ScanPlan's kernels for float storage (f32 / f16 / bf16 / f64): every kind; cumsum / cumprod
// also into an f64 accumulator for an f64 result.
#include "ops/reduce/scan_engine.cuh"

namespace baracuda::scan {

ScanLaunchFn find_scan_float(DType in, int kind, bool f64) {
  ScanLaunchFn fn = nullptr;
  dispatch_storage<true, false>(in, [&]<class T>() {
    switch (kind) {
      case kCumsum: fn = f64 ? scan_pick<T, true, kCumsum>() : scan_pick<T, false, kCumsum>(); break;
      case kCumprod: fn = f64 ? scan_pick<T, true, kCumprod>() : scan_pick<T, false, kCumprod>(); break;
      case kCummax: fn = scan_pick<T, false, kCummax>(); break;
      case kCummin: fn = scan_pick<T, false, kCummin>(); break;
      case kLogCumSumExp: fn = scan_pick<T, false, kLogCumSumExp>(); break;
      default: break;
    }
  });
  return fn;
}

}  // namespace baracuda::scan
