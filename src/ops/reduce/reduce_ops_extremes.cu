// ReducePlan's kernels: amax, amin, argmax, argmin, max / min with indices (reduce_policies.cuh over reduce_engine.cuh).
#include "ops/reduce/reduce_policies.cuh"

namespace baracuda::red {

// Float storage: every kind of the group; integer storage (u8, i32, i64, bool): those PyTorch takes.
ReduceLaunchFn find_extremes(DType in, int kind) {
  ReduceLaunchFn fn = nullptr;
  dispatch_storage<true, true>(in, [&]<class T>() {
    constexpr bool kF64 = std::is_same_v<T, double>;
    if constexpr (std::is_integral_v<T>) {
      switch (kind) {
        case kAmax: fn = engine_pick<T, false, kAmax>(); break;
        case kAmin: fn = engine_pick<T, false, kAmin>(); break;
        case kArgmax: fn = engine_pick<T, false, kArgmax>(); break;
        case kArgmin: fn = engine_pick<T, false, kArgmin>(); break;
        case kMax: fn = engine_pick<T, false, kMax>(); break;
        case kMin: fn = engine_pick<T, false, kMin>(); break;
        default: break;
      }
    } else {
      switch (kind) {
        case kAmax: fn = engine_pick<T, kF64, kAmax>(); break;
        case kAmin: fn = engine_pick<T, kF64, kAmin>(); break;
        case kArgmax: fn = engine_pick<T, kF64, kArgmax>(); break;
        case kArgmin: fn = engine_pick<T, kF64, kArgmin>(); break;
        case kMax: fn = engine_pick<T, kF64, kMax>(); break;
        case kMin: fn = engine_pick<T, kF64, kMin>(); break;
        default: break;
      }
    }
  });
  return fn;
}

}  // namespace baracuda::red
