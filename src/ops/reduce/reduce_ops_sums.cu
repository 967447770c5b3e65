// ReducePlan's kernels: sum, nansum, mean, prod, all, any, count_nonzero (reduce_policies.cuh over reduce_engine.cuh).
#include "ops/reduce/reduce_policies.cuh"

namespace baracuda::red {

// Float storage: every kind of the group; integer storage (u8, i32, i64, bool): those PyTorch takes.
ReduceLaunchFn find_sums(DType in, int kind) {
  return find_kind(in, kind, Kinds<kSum, kNanSum, kMean, kProd, kAll, kAny, kCountNonzero>{}, Kinds<kSum, kNanSum, kProd, kAll, kAny, kCountNonzero>{});
}

}  // namespace baracuda::red
