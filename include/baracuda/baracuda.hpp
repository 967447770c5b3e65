// baracuda — CUDA ML primitives behind one Plan API. Umbrella header.
#pragma once

#include "baracuda/core/dlpack.hpp"
#include "baracuda/core/dtype.hpp"
#include "baracuda/core/half_bits.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/scalar.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/bilinear.hpp"
#include "baracuda/ops/causal_conv1d.hpp"
#include "baracuda/ops/elementwise.hpp"
#include "baracuda/ops/embedding.hpp"
#include "baracuda/ops/gemm.hpp"
#include "baracuda/ops/pad.hpp"
#include "baracuda/ops/reduce_to_shape.hpp"
#include "baracuda/ops/rope.hpp"
