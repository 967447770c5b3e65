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

// The tolerance rule of the elementwise comparisons (device tests and the contract suite):
// ew_tolerance_k(op) units of the compute type's epsilon (f64 results: 16·eps64) plus one ulp of
// a 16-bit result, times 1 + |ref|.
double ew_tolerance_k(EwOp op);
double ew_tolerance(DType out, double k, double ref);
// Ops whose result is defined by the precision itself (floor division and remainder jump at
// integers, nextafter steps one ulp): ew_forward_at evaluates them in the kernel's precision
// (f32 unless compute_out is f64), the others in double.
bool ew_discontinuous(EwOp op);
double ew_forward_at(EwOp op, const double* x, const double* p, DType compute_out);
// The relative error a derivative inherits from x² rounded before 1 - x² (asin, acos, atanh,
// acosh), per unit roundoff.
double ew_backward_conditioning(EwOp op, double x);

}  // namespace baracuda::ref
