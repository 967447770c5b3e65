// baracuda/ops/causal_conv1d.hpp — causal depthwise 1-D convolution (Mamba's conv1d), its
// backward, and the decode-step update with a rolling state.
//
// Math. Per batch b and channel c, with the extended row xe = [s0[b,c,0..W−2], x[b,c,0..L−1]]
// (s0 = initial_states, zeros when absent):
//   z[b,c,t] = Σ_{k<W} w[c,k] · xe[t + k] + bias[c],     y = act(z),   t in [0, L)
// i.e. y[t] uses x[t−(W−1) .. t]: PyTorch's F.conv1d(x, w[:,None,:], bias, padding=W−1,
// groups=C)[..., :L] followed by act (kNone or kSiLU, z·σ(z)). final_states[b,c,j] = xe[L + j]
// for j < W−1 (the last W−1 inputs, reaching into s0 when L < W−1): pass them as the next
// chunk's initial_states and a long sequence can be processed in pieces with identical results.
// Backward: dz = dy·act'(z) (z recomputed), dxe[i] = Σ_k w[k]·dz[i−k] (+ dfinal_states[i−L] for
// i >= L), dx = dxe[W−1 ..], d(initial_states) = dxe[0 .. W−2], dw[c,k] = Σ_{b,t} dz·xe[t+k],
// dbias[c] = Σ_{b,t} dz.
// Update (decode): conv_state [Bs, C, S] (S >= W−1) holds each row's recent inputs. For
// n = seq new tokens x[b,c,0..n−1]: y[b,c,i] = act(Σ_k w[c,k]·u[i + k] + bias[c]) with u =
// [last W−1 state entries before the new tokens, x[b,c,:]]; then the state takes the new tokens:
//   shift mode:    conv_state ← last S entries of [conv_state, x]            (oldest first)
//   circular mode: x[i] is written at slot (cache_seqlens[b] + i) mod S; the entries before
//                  the new tokens are read at slots (cache_seqlens[b] − j) mod S, j = 1..W−1.
// With state_indices, batch row b uses state row state_indices[b]; an index outside
// [0, state_batch) marks a padding row: its y is zeros and no state row is touched.
//
// Shapes: x, y, dy, dx [B, C, L] (layout kBCL, channel-first) or [B, L, C] (kBLC, channel-last);
// weight / dweight [C, W]; bias / dbias [C]; initial / final states and their gradients
// [B, C, W−1]. W in [2, 8]. Any strides on every operand (the fast kernels want unit stride on
// the time axis (kernel "time") or the channel axis (kernel "chan"), 16-byte aligned rows;
// other views run the same kernels with scalar accesses).
// Dtypes: x, y, states and their gradients share `dtype` (f32, f16, bf16, f64); weight, bias and
//   their gradients share `weight_dtype` (any of those four; e.g. f32 weights with bf16 data).
// Accumulator: f32 (f64 when dtype is f64); every output rounded once.
// Determinism: bitwise run-to-run deterministic in every direction. The backward's dweight and
//   dbias are fixed-order sums (no atomics): a task adds its steps lane by lane and across the
//   warp by a fixed butterfly. A channel-first task that holds every batch row of its channel
//   writes dweight / dbias itself; otherwise each task (time kernel: whole rows, or 16 KB / 8 KB
//   of one; channel kernel: a block of 4 warps) writes a partial row and a second kernel adds
//   the partials in index order. Which form runs depends on the shape and the device's SM count:
//   the bits may differ between GPU models, never between runs on one.
// Workspace: forward and update none; backward workspace_size() = B·ceil(L/1024)·C·(W+1)
//   accumulator words (4 bytes; 8 for f64), fixed at select() (the most any form writes; the
//   direct form writes none of it).
// Aliasing: no output may overlap any input or another output (the update's conv_state is
//   read and written in place by design and must not overlap anything else).
// Out-of-range: cache_seqlens are taken mod S (negative values wrap); state_indices outside
//   [0, state_batch) mark padding rows (see above). No index is ever dereferenced unchecked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

BARACUDA_ENUM(Conv1dLayout, uint8_t, (kBCL, "bcl"), (kBLC, "blc"));
BARACUDA_ENUM(Conv1dActivation, uint8_t, (kNone, "none"), (kSiLU, "silu"));

inline constexpr int kCausalConv1dMaxWidth = 8;

// Defaults are those of causal_conv1d_fn(x, weight, bias=None, activation=None): channel-first
// x, no bias, no activation, PyTorch's default dtype.
struct CausalConv1dDescriptor {
  DType dtype = DType::f32;         // x, y, states and their gradients
  DType weight_dtype = DType::f32;  // weight, bias, dweight, dbias
  Conv1dLayout layout = Conv1dLayout::kBCL;
  int64_t batch = 1, channels = 0, seq = 0;
  int width = 4;  // W in [2, 8]
  bool has_bias = false;
  Conv1dActivation activation = Conv1dActivation::kNone;
  bool initial_states = false;  // forward input s0; the backward then returns d(s0)
  bool final_states = false;    // forward output; the backward then takes its gradient

  bool operator==(const CausalConv1dDescriptor&) const = default;
};
BARACUDA_DESCRIBE(CausalConv1dDescriptor, dtype, weight_dtype, layout, batch, channels, seq, width, has_bias, activation,
                  initial_states, final_states);

struct CausalConv1dArgs {
  TensorRef x;
  TensorRef weight;
  TensorRef bias;            // when has_bias
  TensorRef initial_states;  // when initial_states
  TensorMut y;
  TensorMut final_states;    // when final_states
};
BARACUDA_DESCRIBE(CausalConv1dArgs, x, weight, bias, initial_states, y, final_states);

using CausalConv1dBackwardDescriptor = CausalConv1dDescriptor;
struct CausalConv1dBackwardArgs {
  TensorRef x;  // the forward's inputs
  TensorRef weight;
  TensorRef bias;
  TensorRef initial_states;
  TensorRef dy;             // gradient of y
  TensorRef dfinal_states;  // when final_states: gradient of final_states
  TensorMut dx;
  TensorMut dweight;
  TensorMut dbias;            // when has_bias
  TensorMut dinitial_states;  // when initial_states
};
BARACUDA_DESCRIBE(CausalConv1dBackwardArgs, x, weight, bias, initial_states, dy, dfinal_states, dx, dweight, dbias,
                  dinitial_states);

// Defaults as causal_conv1d_update(x, conv_state, weight, bias=None, activation=None).
struct CausalConv1dUpdateDescriptor {
  DType dtype = DType::f32;  // x, y, conv_state
  DType weight_dtype = DType::f32;
  Conv1dLayout layout = Conv1dLayout::kBCL;  // of x and y: [B, C, n] or [B, n, C]
  int64_t batch = 1, channels = 0, seq = 1;  // seq = n new tokens per row (>= 1)
  int width = 4;
  int64_t state_len = 0;     // S >= W−1 (0: W−1)
  int64_t state_batch = 0;   // rows of conv_state (0: batch); must equal batch without state_indices
  bool has_bias = false;
  Conv1dActivation activation = Conv1dActivation::kNone;
  bool circular = false;       // circular buffer addressed by cache_seqlens (i32 [B])
  bool state_indices = false;  // i32 [B]: state row of each batch row

  int64_t state_length() const { return state_len == 0 ? width - 1 : state_len; }
  int64_t state_rows() const { return state_batch == 0 ? batch : state_batch; }
  bool operator==(const CausalConv1dUpdateDescriptor&) const = default;
};
BARACUDA_DESCRIBE(CausalConv1dUpdateDescriptor, dtype, weight_dtype, layout, batch, channels, seq, width, state_len,
                  state_batch, has_bias, activation, circular, state_indices);

struct CausalConv1dUpdateArgs {
  TensorRef x;  // [B, C, n] or [B, n, C]
  TensorRef weight;
  TensorRef bias;
  TensorRef cache_seqlens;  // when circular
  TensorRef state_indices;  // when state_indices
  TensorMut conv_state;     // [state_batch, C, S], updated in place
  TensorMut y;
};
BARACUDA_DESCRIBE(CausalConv1dUpdateArgs, x, weight, bias, cache_seqlens, state_indices, conv_state, y);

class CausalConv1dPlan : public PlanBase<CausalConv1dDescriptor> {
 public:
  static Result<CausalConv1dPlan> select(const CausalConv1dDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const CausalConv1dArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const CausalConv1dArgs& args) const;
};

class CausalConv1dBackwardPlan : public PlanBase<CausalConv1dBackwardDescriptor> {
 public:
  static Result<CausalConv1dBackwardPlan> select(const CausalConv1dBackwardDescriptor& desc,
                                                 const PlanPreference& pref = {});
  Status can_implement(const CausalConv1dBackwardArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const CausalConv1dBackwardArgs& args) const;
};

class CausalConv1dUpdatePlan : public PlanBase<CausalConv1dUpdateDescriptor> {
 public:
  static Result<CausalConv1dUpdatePlan> select(const CausalConv1dUpdateDescriptor& desc,
                                               const PlanPreference& pref = {});
  Status can_implement(const CausalConv1dUpdateArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const CausalConv1dUpdateArgs& args) const;
};

}  // namespace baracuda
