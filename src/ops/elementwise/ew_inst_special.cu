// Kernel instantiations of the elementwise ops of group "special" (elementwise_ops.hpp).
#include "ops/elementwise/ew_ops_special.hpp"

#define EW_GROUP_special BARACUDA_EW_DEFINE
// Compute-bound ops gain nothing from the 64 x 64 2-byte tile kernel, which inlines the op 16
// times per thread: with it this unit took 456 s on one core (the build's critical path).
#define BARACUDA_EW_TILE16 0
// Their broadcast backward keeps the two-pass form (no bcast_bwd_kernel per op and dtype).
#define BARACUDA_EW_BCAST 0
#include "ops/elementwise/ew_inst_group.cuh"
