// Float64 host reference of causal depthwise conv1d, its backward and the decode update,
// written from the definitions in baracuda/ops/causal_conv1d.hpp, independently of the kernels.
// Data tensors are row-major [B, C, L] here whatever the descriptor's layout (callers permute);
// weight [C, W], bias [C] (empty: none), states [B, C, W−1] (empty: none); no CUDA.
#pragma once

#include <cstdint>
#include <vector>

namespace baracuda::ref {

struct Conv1dShape {
  int64_t B = 1, C = 1, L = 0;
  int W = 4;
  bool silu = true;
};

// y [B, C, L] and the final states [B, C, W−1].
void causal_conv1d_forward(const Conv1dShape& s, const std::vector<double>& x, const std::vector<double>& w,
                           const std::vector<double>& bias, const std::vector<double>& s0, std::vector<double>* y,
                           std::vector<double>* final_states);

// dx, dw [C, W], db [C] and ds0 [B, C, W−1] from dy and dfinal (empty: none).
void causal_conv1d_backward(const Conv1dShape& s, const std::vector<double>& x, const std::vector<double>& w,
                            const std::vector<double>& bias, const std::vector<double>& s0,
                            const std::vector<double>& dy, const std::vector<double>& dfinal,
                            std::vector<double>* dx, std::vector<double>* dw, std::vector<double>* db,
                            std::vector<double>* ds0);

// Decode update: x [B, C, n]; state [Bs, C, S] updated in place; seqlens (circular mode) and
// indices may be empty. Returns y [B, C, n].
std::vector<double> causal_conv1d_update(const Conv1dShape& s, int64_t n, int64_t S, const std::vector<double>& x,
                                         const std::vector<double>& w, const std::vector<double>& bias,
                                         std::vector<double>* state, int64_t state_rows,
                                         const std::vector<int32_t>& seqlens, const std::vector<int32_t>& indices);

}  // namespace baracuda::ref
