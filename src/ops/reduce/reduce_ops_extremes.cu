// ReducePlan's kernels: amax, amin, argmax, argmin, max / min with indices (reduce_policies.cuh over reduce_engine.cuh).
#include "ops/reduce/reduce_policies.cuh"

namespace baracuda::red {

// Float storage: every kind of the group; integer storage (u8, i32, i64, bool): those PyTorch takes.
ReduceLaunchFn find_extremes(DType in, int kind) {
  return find_kind(in, kind, Kinds<kAmax, kAmin, kArgmax, kArgmin, kMax, kMin, kAminmax>{},
                   Kinds<kAmax, kAmin, kArgmax, kArgmin, kMax, kMin, kAminmax>{});
}

}  // namespace baracuda::red
