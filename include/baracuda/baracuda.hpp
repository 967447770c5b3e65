// baracuda — CUDA ML primitives behind one Plan API. Umbrella header: the core vocabulary and
// every op family of the op table (ops/ops.def).
#pragma once

#include "baracuda/core/any_plan.hpp"
#include "baracuda/core/describe.hpp"
#include "baracuda/core/dlpack.hpp"
#include "baracuda/core/dtype.hpp"
#include "baracuda/core/half_bits.hpp"
#include "baracuda/core/operands.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/scalar.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"
#define BARACUDA_OPS_HEADERS
#include "baracuda/ops/ops.def"
#undef BARACUDA_OPS_HEADERS
