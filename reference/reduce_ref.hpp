// Float64 host reference of ReducePlan (baracuda/ops/reduce.hpp), written from PyTorch's
// definitions (docs/notes/torch-reductions.md), independently of the kernels: each output from
// the plain list of its reduced elements in row-major order. No CUDA.
#pragma once

#include <cstdint>
#include <vector>

#include "baracuda/ops/reduce.hpp"

namespace baracuda::ref {

struct ReduceResult {
  double value = 0;   // y (the float64 answer, before rounding to y's dtype)
  int64_t index = 0;  // argmax / argmin / max / min
  double mag = 0;     // the size of the terms, for the tolerance (sum of |terms| and the like)
  double value2 = 0;  // var_mean / std_mean: the mean; aminmax: the max (value: the min)
  double mag2 = 0;
};

// op over xs (one output's reduced elements in row-major order); integer x exactly (i64).
ReduceResult reduce_one(const ReduceDescriptor& d, const std::vector<double>& xs);

// d(op)/dx_i · dy for one output's elements xs (reduce.hpp's backward formulas), given its
// forward value y and index (max / min); mag: per element, the size of the terms (tolerance).
// var_mean / std_mean / aminmax: y2 the second result (aminmax's max), dy2 its gradient.
std::vector<double> reduce_backward_one(const ReduceDescriptor& d, const std::vector<double>& xs, double y, double dy,
                                        int64_t index, std::vector<double>* mag = nullptr, double y2 = 0, double dy2 = 0);

// The reduced axes of d (num_dims = 0: all), normalized.
std::vector<bool> reduced_axes(const ReduceDescriptor& d);

}  // namespace baracuda::ref
