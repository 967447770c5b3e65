// Kernel instantiations of the elementwise ops of group "unary" (elementwise_ops.hpp).
#include "ops/elementwise/ew_ops_unary.hpp"

#define EW_GROUP_unary BARACUDA_EW_DEFINE
#include "ops/elementwise/ew_inst_group.cuh"

namespace baracuda::ew {
EwKernels ew_frexp_kernels(DType ri, EwCompute c) {
  EwKernels k;
  dispatch_storage<true, false>(ri, [&]<class T>() {
    set_rows<FrexpBoth, T, T, -1>(k);
  });
  k.rows_in = k.rows_out = ri;
  k.rows_out1 = DType::i32;
  if (c == EwCompute::kF32) k.strided = &launch_strided<FrexpBoth, float>;
  if (c == EwCompute::kF64) k.strided = &launch_strided<FrexpBoth, double>;
  return k;
}
}  // namespace baracuda::ew
