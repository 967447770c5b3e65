// Float64 host reference of pad forward and backward. Written from the definitions in
// baracuda/ops/pad.hpp, independently of the kernels: the forward maps each output cell to its
// source by the textbook rule; the backward scatters dy into dx through the same map (the
// kernels gather instead). Contiguous row-major arrays; no CUDA.
#pragma once

#include <cstdint>
#include <vector>

#include "baracuda/ops/pad.hpp"

namespace baracuda::ref {

// Source coordinate of padded coordinate `o` along one axis, or -1 for the constant fill.
int64_t pad_source_index(PadMode mode, int64_t n, int64_t lo, int64_t o);

// Flat source index (row-major over in_shape) of every output cell, -1 where the fill is used.
std::vector<int64_t> pad_source_map(const PadDescriptor& d);

// y = pad(x); x has numel(in_shape) elements, y gets numel(out_shape).
std::vector<double> pad_forward(const PadDescriptor& d, const std::vector<double>& x);

// dx = pad_backward(dy) (the adjoint of the forward with the fill treated as 0).
std::vector<double> pad_backward(const PadDescriptor& d, const std::vector<double>& dy);

int64_t numel(const int64_t* shape, int rank);
std::vector<int64_t> out_shape(const PadDescriptor& d);

}  // namespace baracuda::ref
