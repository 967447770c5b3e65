// ReducePlan's kernels: sum, nansum, mean, prod, all, any, count_nonzero (reduce_policies.cuh over reduce_engine.cuh).
#include "ops/reduce/reduce_policies.cuh"

namespace baracuda::red {

// Float storage: every kind of the group; integer storage (u8, i32, i64, bool): those PyTorch takes.
ReduceLaunchFn find_sums(DType in, int kind) {
  ReduceLaunchFn fn = nullptr;
  dispatch_storage<true, true>(in, [&]<class T>() {
    constexpr bool kF64 = std::is_same_v<T, double>;
    if constexpr (std::is_integral_v<T>) {
      switch (kind) {
        case kSum: fn = engine_pick<T, false, kSum>(); break;
        case kNanSum: fn = engine_pick<T, false, kNanSum>(); break;
        case kProd: fn = engine_pick<T, false, kProd>(); break;
        case kAll: fn = engine_pick<T, false, kAll>(); break;
        case kAny: fn = engine_pick<T, false, kAny>(); break;
        case kCountNonzero: fn = engine_pick<T, false, kCountNonzero>(); break;
        default: break;
      }
    } else {
      switch (kind) {
        case kSum: fn = engine_pick<T, kF64, kSum>(); break;
        case kNanSum: fn = engine_pick<T, kF64, kNanSum>(); break;
        case kMean: fn = engine_pick<T, kF64, kMean>(); break;
        case kProd: fn = engine_pick<T, kF64, kProd>(); break;
        case kAll: fn = engine_pick<T, kF64, kAll>(); break;
        case kAny: fn = engine_pick<T, kF64, kAny>(); break;
        case kCountNonzero: fn = engine_pick<T, kF64, kCountNonzero>(); break;
        default: break;
      }
    }
  });
  return fn;
}

}  // namespace baracuda::red
