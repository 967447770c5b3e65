// Kernel instantiations of the elementwise ops of group "ternary" (elementwise_ops.hpp).
#include "baracuda/ops/elementwise_ops.hpp"
#include "ops/elementwise/ew_kernels.cuh"

#define EW_GROUP_unary BARACUDA_EW_SKIP
#define EW_GROUP_special BARACUDA_EW_SKIP
#define EW_GROUP_activation BARACUDA_EW_SKIP
#define EW_GROUP_binary BARACUDA_EW_SKIP
#define EW_GROUP_logic BARACUDA_EW_SKIP
#define EW_GROUP_ternary BARACUDA_EW_DEFINE
#define EW_SELECT(name, arity, kind, grad, group) EW_GROUP_##group(name, arity, kind, grad)
BARACUDA_EW_OPS(EW_SELECT)
