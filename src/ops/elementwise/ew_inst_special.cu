// Kernel instantiations of the elementwise ops of group "special" (elementwise_ops.hpp).
#define EW_GROUP_special BARACUDA_EW_DEFINE
#include "ops/elementwise/ew_inst_group.cuh"
