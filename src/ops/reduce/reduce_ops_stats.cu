// ReducePlan's kernels: nanmean, logsumexp, var, std, the norms (reduce_policies.cuh over reduce_engine.cuh).
#include "ops/reduce/reduce_policies.cuh"

namespace baracuda::red {

// Float storage: every kind of the group; integer storage (u8, i32, i64, bool): those PyTorch takes.
ReduceLaunchFn find_stats(DType in, int kind) {
  ReduceLaunchFn fn = nullptr;
  dispatch_storage<true, true>(in, [&]<class T>() {
    constexpr bool kF64 = std::is_same_v<T, double>;
    if constexpr (std::is_integral_v<T>) {
      switch (kind) {
        case kLogSumExp: fn = engine_pick<T, false, kLogSumExp>(); break;
        default: break;
      }
    } else {
      switch (kind) {
        case kNanMean: fn = engine_pick<T, kF64, kNanMean>(); break;
        case kLogSumExp: fn = engine_pick<T, kF64, kLogSumExp>(); break;
        case kVar: fn = engine_pick<T, kF64, kVar>(); break;
        case kStd: fn = engine_pick<T, kF64, kStd>(); break;
        case kNorm0: fn = engine_pick<T, kF64, kNorm0>(); break;
        case kNorm1: fn = engine_pick<T, kF64, kNorm1>(); break;
        case kNorm2: fn = engine_pick<T, kF64, kNorm2>(); break;
        case kNormInf: fn = engine_pick<T, kF64, kNormInf>(); break;
        case kNormNegInf: fn = engine_pick<T, kF64, kNormNegInf>(); break;
        case kNormP: fn = engine_pick<T, kF64, kNormP>(); break;
        default: break;
      }
    }
  });
  return fn;
}

}  // namespace baracuda::red
