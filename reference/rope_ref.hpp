// Float64 host reference of rotary position embedding, written from the definitions in
// baracuda/ops/rope.hpp (HF transformers' rotate_half form and Meta's interleaved form, the
// HF/vLLM YaRN and Llama-3.1 frequency rules), independently of the kernels. Tensors are
// contiguous row-major in the descriptor's layout ([B, H, S, D] or [B, S, H, D]); no CUDA.
#pragma once

#include <cstdint>
#include <vector>

#include "baracuda/ops/rope.hpp"

namespace baracuda::ref {

// The rotary_dim/2 scaled frequencies and the factor cos/sin carry (YaRN's attention factor).
void rope_frequencies(const RopeDescriptor& d, std::vector<double>* inv_freq, double* mscale);

// p(b, s) for every token b*S + s: position_offset + s without a positions tensor, else the
// tensor's value ([S] broadcast over b, or [B, S]); `positions` row-major.
std::vector<int64_t> rope_positions(const RopeDescriptor& d, const std::vector<int64_t>& positions);

// Forward (backward = false) or backward (the transpose: rotation by −θ) of one tensor with
// `heads` heads. cos/sin: the cache [cache_rows, rotary_dim/2] row-major when d.cos_sin_cache
// (a row outside the cache gives NaN in the rotated part), else ignored.
std::vector<double> rope_apply(const RopeDescriptor& d, int64_t heads, const std::vector<double>& x,
                               const std::vector<int64_t>& pos, const std::vector<double>& cos,
                               const std::vector<double>& sin, bool backward);

}  // namespace baracuda::ref
