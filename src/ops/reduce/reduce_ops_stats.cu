// ReducePlan's kernels: nanmean, logsumexp, var, std, the norms (reduce_policies.cuh over reduce_engine.cuh).
#include "ops/reduce/reduce_policies.cuh"

namespace baracuda::red {

// Float storage: every kind of the group; integer storage (u8, i32, i64, bool): those PyTorch takes.
ReduceLaunchFn find_stats(DType in, int kind) {
  return find_kind(in, kind, Kinds<kNanMean, kLogSumExp, kVar, kStd, kVarMean, kStdMean, kNorm0, kNorm1, kNorm2, kNormInf, kNormNegInf, kNormP>{}, Kinds<kLogSumExp>{});
}

}  // namespace baracuda::red
