// Float64 reference of the elementwise ops: the scalar functions of ew_ops.hpp evaluated in
// double (floating ops) or int64 (integer ops) with the host C library's math, plus the
// conversions the library applies when storing (PyTorch's float->int and float->fp8 rules).
#pragma once

#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/ops/elementwise.hpp"

namespace baracuda::ref {

// p: the kernel-form parameters (ew::kernel_params). x: the op's operands.
double ew_forward(EwOp op, const double* x, const double* p);
int64_t ew_forward_int(EwOp op, const int64_t* x, const int64_t* p);
// The same formula in f32 (for ops whose integer-valued results jump: floor division,
// remainder; their f32 steps are IEEE-exact, so this reproduces an f32 computation).
float ew_forward_f32(EwOp op, const float* x, const float* p);
// dx[k] = g * d op / d x_k (every operand; zero where not differentiable).
void ew_backward(EwOp op, const double* x, double g, const double* p, double* dx);

// The value a double becomes when stored as dtype t by the library (round-to-nearest-even for
// floats through f32 for the 16/8-bit formats, PyTorch's saturating/wrapping integer rules).
double store_as(DType t, double v, bool sat_fp8 = false);
int64_t store_int(DType t, int64_t v);  // integer results narrowed (wrap-around)

}  // namespace baracuda::ref
