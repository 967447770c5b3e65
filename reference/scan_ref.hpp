// Float64 host reference of ScanPlan / ScanBackwardPlan (baracuda/ops/scan.hpp): textbook
// definitions over one line at a time, each output from the plain list of the elements it
// covers (no running state shared between outputs). No CUDA.
#pragma once

#include <cstdint>
#include <vector>

#include "baracuda/ops/scan.hpp"

namespace baracuda::ref {

struct ScanLine {
  std::vector<double> value;   // y per element (element order along the axis), before rounding
  std::vector<int64_t> index;  // cummax / cummin
  std::vector<double> mag;     // the size of the terms, for the tolerance
};

// The scan of one line xs (element order); integer x exactly (i64, wrapping).
ScanLine scan_line(const ScanDescriptor& d, const std::vector<double>& xs);

// dx of one line (element order) from xs (cumprod, logcumsumexp), dy and the forward's indices
// (cummax / cummin); mag: the size of the terms per element.
std::vector<double> scan_backward_line(const ScanDescriptor& d, const std::vector<double>& xs, const std::vector<double>& dy,
                                       const std::vector<int64_t>& indices, std::vector<double>* mag = nullptr);

}  // namespace baracuda::ref
