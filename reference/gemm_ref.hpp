// Float64 host reference of the GEMM family (baracuda/ops/gemm.hpp), written from the
// definitions with plain loops: torch.matmul's 1-D and broadcasting rules, alpha/beta/c, bias,
// the activations, summed batch dims, and the backward as explicit sums. Arrays are row-major
// over each operand's logical shape (the descriptor's strides are ignored); no CUDA.
#pragma once

#include <cstdint>
#include <vector>

#include "baracuda/ops/gemm.hpp"

namespace baracuda::ref {

double gemm_activation(GemmActivation act, double z);
double gemm_activation_grad(GemmActivation act, double z);

struct GemmForwardRef {
  std::vector<double> out, preact;
  std::vector<double> bias_grad;  // has_bias_grad: Σ over out's rows
};
// c and bias may be empty when the descriptor has none. With f32_math every sum (sequential
// over k) and the epilogue run in float: the "plain same-precision product" the comparison rule
// measures cuBLASLt against (its error, not its value, is what the tests use). round_product,
// when given, rounds alpha·P before c and bias are added: a GEMM that writes its output dtype,
// followed by a separate addition (PyTorch's unfused composition). aux: the grad epilogue's
// activation input (out-shaped), needed when d.grad_activation is set.
GemmForwardRef gemm_forward(const GemmDescriptor& d, const std::vector<double>& a, const std::vector<double>& b,
                            const std::vector<double>& c, const std::vector<double>& bias, bool f32_math = false,
                            double (*round_product)(double) = nullptr, const std::vector<double>* aux = nullptr);

struct GemmBackwardRef {
  std::vector<double> da, db, dbias, dc;
};
// Gradients of sum(out · d_out) with respect to a, b, bias and c (out-shaped d_out).
GemmBackwardRef gemm_backward(const GemmDescriptor& d, const std::vector<double>& a, const std::vector<double>& b,
                              const std::vector<double>& c, const std::vector<double>& bias,
                              const std::vector<double>& d_out);

// |Σ_k |a_k·b_k|| per output element (the scale a K-length sum's rounding error grows with).
std::vector<double> gemm_abs_product(const GemmDescriptor& d, const std::vector<double>& a, const std::vector<double>& b);

// torch.nn.functional.bilinear (baracuda/ops/bilinear.hpp): x1 [B, I], x2 [B, J], w [O, I, J],
// bias [O] or empty; out [B, O]. Backward: gradients of sum(out · d_out).
std::vector<double> bilinear_forward(int64_t B, int64_t I, int64_t J, int64_t O, const std::vector<double>& x1,
                                     const std::vector<double>& x2, const std::vector<double>& w,
                                     const std::vector<double>& bias);
struct BilinearBackwardRef {
  std::vector<double> dx1, dx2, dw, dbias;
};
BilinearBackwardRef bilinear_backward(int64_t B, int64_t I, int64_t J, int64_t O, const std::vector<double>& x1,
                                      const std::vector<double>& x2, const std::vector<double>& w,
                                      const std::vector<double>& d_out);

}  // namespace baracuda::ref
