// Instantiates the kernels of one group of elementwise_ops.hpp. A unit includes its group's op
// structs (ew_ops_<group>.hpp: no other group's), defines EW_GROUP_<its group> as
// BARACUDA_EW_DEFINE, then includes this; every other group is skipped (BARACUDA_EW_SKIP names
// no op_<name>, so the other groups' structs need not be declared).
#pragma once

#include "baracuda/ops/elementwise_ops.hpp"
#include "ops/elementwise/ew_kernels.cuh"

#ifndef EW_GROUP_unary
#define EW_GROUP_unary BARACUDA_EW_SKIP
#endif
#ifndef EW_GROUP_special
#define EW_GROUP_special BARACUDA_EW_SKIP
#endif
#ifndef EW_GROUP_activation
#define EW_GROUP_activation BARACUDA_EW_SKIP
#endif
#ifndef EW_GROUP_binary
#define EW_GROUP_binary BARACUDA_EW_SKIP
#endif
#ifndef EW_GROUP_logic
#define EW_GROUP_logic BARACUDA_EW_SKIP
#endif
#ifndef EW_GROUP_ternary
#define EW_GROUP_ternary BARACUDA_EW_SKIP
#endif
#define EW_SELECT(name, arity, kind, grad, group) EW_GROUP_##group(name, arity, kind, grad)
BARACUDA_EW_OPS(EW_SELECT)
