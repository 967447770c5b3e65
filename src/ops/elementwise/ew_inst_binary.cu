// Kernel instantiations of the elementwise ops of group "binary" (elementwise_ops.hpp).
#include "ops/elementwise/ew_ops_binary.hpp"

#define EW_GROUP_binary BARACUDA_EW_DEFINE
#include "ops/elementwise/ew_inst_group.cuh"
