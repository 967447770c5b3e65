// Kernel instantiations of the elementwise ops of group "ternary" (elementwise_ops.hpp).
#include "ops/elementwise/ew_ops_ternary.hpp"

#define EW_GROUP_ternary BARACUDA_EW_DEFINE
#include "ops/elementwise/ew_inst_group.cuh"
