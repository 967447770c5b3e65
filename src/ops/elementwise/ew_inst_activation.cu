// Kernel instantiations of the elementwise ops of group "activation" (elementwise_ops.hpp).
#include "ops/elementwise/ew_ops_activation.hpp"

#define EW_GROUP_activation BARACUDA_EW_DEFINE
#include "ops/elementwise/ew_inst_group.cuh"
