// Float64 host reference of Tensor.unfold and its backward, from the definitions in
// baracuda/ops/unfold.hpp and independently of the kernel: the forward copies each window
// (out[..., w, ..., k] = x[..., w·step + k, ...]); the backward scatters each window's gradient
// back onto x (the kernel gathers instead). Contiguous row-major arrays; no CUDA.
#pragma once

#include <cstdint>
#include <vector>

#include "baracuda/ops/unfold.hpp"

namespace baracuda::ref {

// The unfolded view's shape: the input's with shape[dim] = W, then [size].
std::vector<int64_t> unfold_shape(const UnfoldBackwardDescriptor& d);

// out = x.unfold(dim, size, step), materialised row-major.
std::vector<double> unfold_forward(const UnfoldBackwardDescriptor& d, const std::vector<double>& x);

// dx = the adjoint of unfold_forward applied to dout.
std::vector<double> unfold_backward(const UnfoldBackwardDescriptor& d, const std::vector<double>& dout);

}  // namespace baracuda::ref
