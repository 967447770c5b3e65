// Kernel instantiations of the elementwise ops of group "unary" (elementwise_ops.hpp).
#define EW_GROUP_unary BARACUDA_EW_DEFINE
#include "ops/elementwise/ew_inst_group.cuh"
