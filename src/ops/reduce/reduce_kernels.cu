// Reduce-to-shape kernels: fixed-order (deterministic) sum / prod / max / min, the engine's
// one-field policies (reduce_policies.cuh over reduce_engine.cuh: the same kernels as ReducePlan).
#include "ops/reduce/reduce_policies.cuh"

namespace baracuda::red {

namespace {

template <class T, bool F64>
ReduceLaunchFn pick(int op) {
  switch (op) {  // ReduceOp: sum, prod, max, min
    case 0: return engine_pick<T, F64, kSum>();
    case 1: return engine_pick<T, F64, kProd>();
    case 2: return engine_pick<T, F64, kAmax>();
    default: return engine_pick<T, F64, kAmin>();
  }
}

}  // namespace

ReduceLaunchFn reduce_find_kernel(DType in, int op, bool f64_acc) {
  ReduceLaunchFn fn = nullptr;
  dispatch_storage<true, true, true>(in, [&]<class T>() {
    if constexpr (std::is_same_v<T, double>) fn = pick<T, true>(op);
    else if constexpr (std::is_integral_v<T>) fn = pick<T, false>(op);
    else fn = f64_acc ? pick<T, true>(op) : pick<T, false>(op);
  });
  return fn;
}

}  // namespace baracuda::red
