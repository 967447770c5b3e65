// Kernel instantiations of the elementwise ops of group "activation" (elementwise_ops.hpp).
#define EW_GROUP_activation BARACUDA_EW_DEFINE
#include "ops/elementwise/ew_inst_group.cuh"
