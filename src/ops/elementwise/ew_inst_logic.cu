// Kernel instantiations of the elementwise ops of group "logic" (elementwise_ops.hpp).
#include "ops/elementwise/ew_ops_logic.hpp"

#define EW_GROUP_logic BARACUDA_EW_DEFINE
#include "ops/elementwise/ew_inst_group.cuh"
