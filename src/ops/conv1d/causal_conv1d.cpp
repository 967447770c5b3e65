// Causal conv1d plans: descriptor validation, view checks, the run-time choice of kernel
// (time / chan, vector or scalar accesses) and the parameter blocks (conv1d_geometry.hpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <utility>

#include "baracuda/ops/causal_conv1d.hpp"
#include "core/arch.hpp"
#include "core/checked_math.hpp"
#include "core/cuda_check.hpp"
#include "core/dispatch.hpp"
#include "core/plan_kit.hpp"
#include "core/validate.hpp"
#include "core/workspace.hpp"
#include "ops/conv1d/conv1d_geometry.hpp"

namespace baracuda {

namespace {

constexpr std::string_view kFwd = "causal_conv1d", kBwd = "causal_conv1d_backward", kUpd = "causal_conv1d_update";

using detail::ConvKernel;

// What every direction checks: enums, preference, dtypes, sizes, width.
template <class Desc>
Status check_common(std::string_view op, const Desc& d, const PlanPreference& pref, KernelSku* sku) {
  if (Status s = begin_select(op, d, pref, sku); !s.ok()) return s;
  if (Status s = check_dtype(op, "dtype", d.dtype, FloatDTypes{}); !s.ok()) return s;
  if (Status s = check_dtype(op, "weight_dtype", d.weight_dtype, FloatDTypes{}); !s.ok()) return s;
  if (d.batch < 0 || d.channels < 0 || d.seq < 0)
    return error(StatusCode::kInvalidProblem, op, ": batch, channels and seq must be >= 0 (got ", d.batch, ", ", d.channels,
                 ", ", d.seq, ")");
  if (d.width < 2 || d.width > kCausalConv1dMaxWidth)
    return error(StatusCode::kUnsupported, op, ": width = ", d.width, " is not in [2, ", kCausalConv1dMaxWidth, "]");
  if (d.channels > 0 && d.batch > INT64_MAX / d.channels)
    return error(StatusCode::kInvalidProblem, op, ": batch * channels overflows int64");
  sku->dtype = d.dtype;
  return {};
}

// (b, c, t) element strides of a [B, C, L] / [B, L, C] view; 0 on extent-1 axes.
void bct_strides(Conv1dLayout layout, const TensorLayout& t, int64_t* s) {
  const int ax_c = layout == Conv1dLayout::kBCL ? 1 : 2, ax_t = layout == Conv1dLayout::kBCL ? 2 : 1;
  s[0] = t.shape[0] > 1 ? t.stride[0] : 0;
  s[1] = t.shape[ax_c] > 1 ? t.stride[ax_c] : 0;
  s[2] = t.shape[ax_t] > 1 ? t.stride[ax_t] : 0;
}
void strides3(const TensorLayout& t, int64_t* s) {
  for (int d = 0; d < 3; ++d) s[d] = t.shape[d] > 1 ? t.stride[d] : 0;
}

void data_shape(Conv1dLayout layout, int64_t B, int64_t C, int64_t L, int64_t* s) {
  s[0] = B;
  s[1] = layout == Conv1dLayout::kBCL ? C : L;
  s[2] = layout == Conv1dLayout::kBCL ? L : C;
}

// Whether NE-element vectors along axis `ax` (0 b, 1 c, 2 t) fit every strided operand.
bool vec_fits(int ne, int ax, int64_t extent, size_t es, std::initializer_list<std::pair<const void*, const int64_t*>> ops) {
  if (ne == 1) return true;
  if (extent % ne != 0) return false;
  for (auto [ptr, st] : ops) {
    if (reinterpret_cast<uintptr_t>(ptr) % (ne * es) != 0) return false;
    for (int d = 0; d < 3; ++d)
      if (d == ax ? (st[d] != 1 && extent > 1) : st[d] % ne != 0) return false;
  }
  return true;
}

// Partial rows per batch row the backward may need: the most any of its kernels writes (the chan
// kernel at its shorter warps, the time kernel at its shortest tasks, f64).
int64_t parts_per_batch(int64_t L) {
  constexpr int64_t span = std::min(4 * detail::kChanStepsBwdShort, detail::conv_time_task_bytes(8, true) / 8);
  return std::max<int64_t>(1, ceil_div(L, span));  // L may be INT64_MAX when batch or channels is 0
}

// Fills the geometry for the kernel chosen by the operands' strides; returns the launcher.
// `big` are the [B, C, L]-indexed operands as (data, (b, c, t) strides).
struct Choice {
  ConvKernel kernel;
  bool vec;
};
Choice choose_kernel(DType dt, int kw, bool backward, int64_t C, int64_t L,
                     std::initializer_list<std::pair<const void*, const int64_t*>> big) {
  const size_t es = dtype_size(dt);
  bool time_unit = true, chan_unit = true;
  for (auto [ptr, st] : big) {
    (void)ptr;
    time_unit = time_unit && (st[2] == 1 || L <= 1);
    chan_unit = chan_unit && (st[1] == 1 || C <= 1);
  }
  if (chan_unit && !time_unit) {
    const int ne = detail::conv_chan_ne(static_cast<int>(es), kw, backward);
    return {ConvKernel::kChan, vec_fits(ne, 1, C, es, big)};
  }
  const int ne = detail::conv_time_ne(static_cast<int>(es));
  return {ConvKernel::kTime, time_unit && vec_fits(ne, 2, L, es, big)};
}

// Time backward with rows no longer than a task (segs = 1): how many batch rows of one channel a
// task takes (task_rows), and whether it takes all B of them and writes dweight / dbias itself
// (direct: no partial rows, no reduction kernel).
//   - Direct where that is the same grid (B = 1), or where the task-per-channel grid fills its
//     last wave of warps to at least 90 % and the problem is small (at most 512 MB of x, dy and
//     dx): the reduction kernel and its launch gap cost ~4 us, a grid of one task per channel
//     ~2.5 % of the main kernel (no dynamic balance between SMs). H200 bf16 channel-first, % of
//     copy: [8, 4096, 2048] (2048 channels, 0.97 of a wave) 78.7-78.9 direct against
//     76.5-76.8 at two rows per task with partials; [4, 8192, 4096] (768 MB) 83.9-84.0 direct
//     against 84.1-84.3.
//   - Otherwise up to warp_steps / L rows per task while the grid keeps two waves of warps
//     (one staging pipeline through the rows: [8, 4096, 2048] 75.4-76.3 % at one row, 76.5-76.8
//     at two), with a partial row per (batch row, channel) as before.
void time_backward_rows(detail::Conv1dParams& p, size_t es) {
  const int64_t wave = int64_t{current_device_sm_count()} * detail::kTimeBlocksPerSm * (detail::kConvThreads / 32);
  const double waves = static_cast<double>(p.C) / static_cast<double>(wave);
  const bool full_last_wave = waves >= 0.9 * std::ceil(waves);
  const bool small = 3.0 * static_cast<double>(p.B * p.C * p.L) * static_cast<double>(es) <= 512.0 * (1 << 20);
  int64_t r = p.B;
  if (p.B > 1 && !(full_last_wave && small)) {
    r = std::min(p.B, std::max<int64_t>(1, p.warp_steps / p.L));
    while (r > 1 && p.C * ((p.B + r - 1) / r) < 2 * wave) r /= 2;
  }
  p.direct = r == p.B;
  p.task_rows = r;
  p.row_groups = (p.B + r - 1) / r;
  p.tasks = p.C * p.row_groups;
}

void set_geometry(detail::Conv1dParams& p, ConvKernel k, bool vec, DType dt, int kw, bool backward) {
  if (k == ConvKernel::kTime) {
    const int es = static_cast<int>(dtype_size(dt));
    p.warp_steps = detail::conv_time_task_bytes(es, backward) / es;
    p.segs = std::max<int64_t>(1, (p.L + p.warp_steps - 1) / p.warp_steps);
    p.tasks = p.B * p.C * p.segs;
    if (backward && p.segs == 1 && p.L > 0) time_backward_rows(p, dtype_size(dt));
  } else {
    const int ne = vec ? detail::conv_chan_ne(static_cast<int>(dtype_size(dt)), kw, backward) : 1;
    p.cblocks = (p.C + 32 * ne - 1) / (32 * ne);
    auto blocks = [&](int64_t steps) { return p.B * p.cblocks * std::max<int64_t>(1, (p.L + 4 * steps - 1) / (4 * steps)); };
    p.warp_steps = dtype_size(dt) == 2 ? detail::kChanStepsFwd16 : detail::kChanStepsFwd;
    if (backward) {
      const int64_t two_waves = 2 * int64_t{current_device_sm_count()} * detail::kChanBwdBlocksPerSm;
      const bool short_fills = blocks(detail::kChanStepsBwdShort) >= two_waves;
      const bool long_fills = blocks(detail::kChanStepsBwdLong) >= two_waves;
      p.warp_steps = short_fills && !long_fills ? detail::kChanStepsBwdShort : detail::kChanStepsBwdLong;
    }
    p.segs = std::max<int64_t>(1, (p.L + 4 * p.warp_steps - 1) / (4 * p.warp_steps));
    p.tasks = p.B * p.segs * p.cblocks;
  }
}

// Validation, architecture, sku, guarantee and operands shared by the forward and backward select().
template <class Plan>
Status select_main(std::string_view op, const CausalConv1dDescriptor& d, const PlanPreference& pref, bool backward,
                   KernelSku* sku, PrecisionGuarantee* guarantee, OperandSpecs* ops) {
  if (Status s = check_common(op, d, pref, sku); !s.ok()) return s;
  sku->op = d.activation == Conv1dActivation::kSiLU ? "causal_conv1d.silu" : "causal_conv1d";
  sku->direction = backward ? Direction::kBackward : Direction::kForward;
  sku->variant = d.layout == Conv1dLayout::kBCL ? (backward ? "time.partials" : "time") : (backward ? "chan.partials" : "chan");
  *guarantee = float_guarantee(d.dtype);
  const int64_t B = d.batch, C = d.channels, W = d.width;
  int64_t xs[3];
  data_shape(d.layout, B, C, d.seq, xs);
  ops->input("x", d.dtype, xs);
  if (backward) ops->input("dy", d.dtype, xs);
  ops->input("weight", d.weight_dtype, {C, W});
  if (d.has_bias) ops->input("bias", d.weight_dtype, {C});
  if (d.initial_states) ops->input("initial_states", d.dtype, {B, C, W - 1});
  if (backward && d.final_states) ops->input("dfinal_states", d.dtype, {B, C, W - 1});
  if (backward) {
    ops->output("dx", d.dtype, xs);
    ops->output("dweight", d.weight_dtype, {C, W});
    if (d.has_bias) ops->output("dbias", d.weight_dtype, {C});
    if (d.initial_states) ops->output("dinitial_states", d.dtype, {B, C, W - 1});
    return resolve_operands<CausalConv1dBackwardArgs>(op, *ops);
  }
  ops->output("y", d.dtype, xs);
  if (d.final_states) ops->output("final_states", d.dtype, {B, C, W - 1});
  return resolve_operands<CausalConv1dArgs>(op, *ops);
}

// The parameters both directions share: sizes, x, the [B, C, L]-indexed output, weight,
// bias and initial states.
detail::Conv1dParams main_params(const CausalConv1dDescriptor& d, const TensorRef& x, const TensorRef& w,
                                 const TensorRef& bias, const TensorRef& s0, const TensorLayout& out, void* out_data) {
  detail::Conv1dParams p;
  p.B = d.batch;
  p.C = d.channels;
  p.L = d.seq;
  p.W = d.width;
  p.silu = d.activation == Conv1dActivation::kSiLU;
  p.x = x.data;
  bct_strides(d.layout, x, p.xs);
  p.out = out_data;
  bct_strides(d.layout, out, p.outs);
  p.w = w.data;
  p.ws[0] = w.stride[0];
  p.ws[1] = w.stride[1];
  p.wdt = static_cast<int>(d.weight_dtype);
  if (d.has_bias) {
    p.bias = bias.data;
    p.bs = bias.stride[0];
  }
  if (d.initial_states) {
    p.s0 = s0.data;
    strides3(s0, p.s0s);
  }
  return p;
}

// Chooses the kernel from the big operands' strides (x, the output, dy in the backward), fills
// the geometry and launches.
Status launch_main(std::string_view op, const CausalConv1dDescriptor& d, bool backward, detail::Conv1dParams& p,
                   cudaStream_t stream) {
  const int kw = detail::conv_kw(d.width);
  const Choice ch = backward ? choose_kernel(d.dtype, kw, true, p.C, p.L, {{p.x, p.xs}, {p.dy, p.dys}, {p.out, p.outs}})
                             : choose_kernel(d.dtype, kw, false, p.C, p.L, {{p.x, p.xs}, {p.out, p.outs}});
  set_geometry(p, ch.kernel, ch.vec, d.dtype, kw, backward);
  if (p.tasks >= (int64_t{1} << 31))
    return error(StatusCode::kUnsupported, op, ": problem needs ", p.tasks, " blocks (more than 2^31 - 1)");
  const detail::Conv1dLaunchFn fn = backward ? detail::conv1d_bwd_launcher(d.dtype, ch.kernel, ch.vec, d.width)
                                             : detail::conv1d_fwd_launcher(d.dtype, ch.kernel, ch.vec, d.width);
  if (fn == nullptr) return error(StatusCode::kInternal, op, ": no kernel for ", dtype_name(d.dtype));
  return cuda_status(fn(p, stream), op);
}

}  // namespace

// ---------------------------------------------------------------- forward

Result<CausalConv1dPlan> CausalConv1dPlan::select(const CausalConv1dDescriptor& d, const PlanPreference& pref) {
  CausalConv1dPlan plan;
  plan.desc_ = d;
  if (Status s = select_main<CausalConv1dPlan>(kFwd, d, pref, false, &plan.sku_, &plan.guarantee_, &plan.operands_); !s.ok())
    return s;
  return plan;
}

Status CausalConv1dPlan::can_implement(const CausalConv1dArgs& a) const {
  return check_plan_args(kFwd, selected(), operands_, a);
}

Status CausalConv1dPlan::run(cudaStream_t stream, Workspace, const CausalConv1dArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  const CausalConv1dDescriptor& d = desc_;
  // nothing to write: no rows, or no steps and no final states (which an empty sequence still sets)
  if (d.batch * d.channels == 0 || (d.seq == 0 && !d.final_states)) return {};
  detail::Conv1dParams p = main_params(d, a.x, a.weight, a.bias, a.initial_states, a.y, a.y.data);
  if (d.final_states) {
    p.sfin = a.final_states.data;
    strides3(a.final_states, p.sfins);
  }
  return launch_main(kFwd, d, /*backward=*/false, p, stream);
}

// ---------------------------------------------------------------- backward

Result<CausalConv1dBackwardPlan> CausalConv1dBackwardPlan::select(const CausalConv1dBackwardDescriptor& d,
                                                                  const PlanPreference& pref) {
  CausalConv1dBackwardPlan plan;
  plan.desc_ = d;
  if (Status s = select_main<CausalConv1dBackwardPlan>(kBwd, d, pref, true, &plan.sku_, &plan.guarantee_, &plan.operands_);
      !s.ok())
    return s;
  // partial rows of dweight / dbias (B * parts * C * (W + 1) accumulator words): the most any form writes
  WorkspaceLayout w;
  int64_t words = 0;
  if (!checked_mul(d.batch, parts_per_batch(d.seq), &words) || !checked_mul(words, d.channels, &words) ||
      !checked_mul(words, d.width + 1, &words) || !checked_mul(words, static_cast<int64_t>(dtype_size(acc_of(d.dtype))), &words))
    return error(StatusCode::kInvalidProblem, kBwd, ": partial-row workspace (batch * ceil(seq / span) * channels * (width + 1)"
                 " accumulator words) exceeds 2^63 bytes");
  w.take(static_cast<size_t>(words));
  plan.workspace_ = w.total();
  if (Status s = check_workspace_budget(kBwd, plan.workspace_, pref.max_workspace_bytes); !s.ok()) return s;
  return plan;
}

Status CausalConv1dBackwardPlan::can_implement(const CausalConv1dBackwardArgs& a) const {
  return check_plan_args(kBwd, selected(), operands_, a);
}

Status CausalConv1dBackwardPlan::run(cudaStream_t stream, Workspace ws, const CausalConv1dBackwardArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  const CausalConv1dDescriptor& d = desc_;
  if (Status s = check_workspace(kBwd, ws, workspace_); !s.ok()) return s;
  if (d.channels == 0) return {};
  detail::Conv1dReduceParams r;
  r.C = d.channels;
  r.W = d.width;
  r.dw = a.dweight.data;
  r.dws[0] = a.dweight.stride[0];
  r.dws[1] = a.dweight.stride[1];
  r.wdt = static_cast<int>(d.weight_dtype);
  if (d.has_bias) {
    r.db = a.dbias.data;
    r.dbs = a.dbias.stride[0];
  }
  r.partial = ws.ptr;
  if (d.batch > 0) {  // B = 0: no partial rows, the reduction writes zeros
    detail::Conv1dParams p = main_params(d, a.x, a.weight, a.bias, a.initial_states, a.dx, a.dx.data);
    p.dy = a.dy.data;
    bct_strides(d.layout, a.dy, p.dys);
    if (d.initial_states) {
      p.ds0 = a.dinitial_states.data;
      strides3(a.dinitial_states, p.ds0s);
    }
    if (d.final_states) {
      p.dsfin = a.dfinal_states.data;
      strides3(a.dfinal_states, p.dsfins);
    }
    p.partial = ws.ptr;
    p.dw = r.dw;
    p.dws[0] = r.dws[0];
    p.dws[1] = r.dws[1];
    p.db = r.db;
    p.dbs = r.dbs;
    if (Status s = launch_main(kBwd, d, /*backward=*/true, p, stream); !s.ok()) return s;
    if (p.direct) return {};  // the main kernel wrote dweight / dbias
    r.parts = p.B * p.segs;
  }
  return cuda_status(detail::conv1d_reduce_launch(d.dtype, r, stream), kBwd);
}

// ---------------------------------------------------------------- update

Result<CausalConv1dUpdatePlan> CausalConv1dUpdatePlan::select(const CausalConv1dUpdateDescriptor& d,
                                                              const PlanPreference& pref) {
  CausalConv1dUpdatePlan plan;
  if (Status s = check_common(kUpd, d, pref, &plan.sku_); !s.ok()) return s;
  auto bad = [&](auto... parts) { return error(StatusCode::kInvalidProblem, kUpd, ": ", parts...); };
  if (d.seq < 1) return bad("seq = ", d.seq, " new tokens must be >= 1");
  if (d.state_len != 0 && d.state_len < d.width - 1)
    return bad("state_len = ", d.state_len, " must be >= width - 1 = ", d.width - 1, " (0: width - 1)");
  if (d.state_batch < 0) return bad("state_batch = ", d.state_batch, " must be >= 0 (0: batch)");
  if (!d.state_indices && d.state_rows() != d.batch)
    return bad("state_batch = ", d.state_batch, " must equal batch = ", d.batch, " without state_indices");
  plan.desc_ = d;
  plan.sku_.op = d.activation == Conv1dActivation::kSiLU ? "causal_conv1d_update.silu" : "causal_conv1d_update";
  plan.sku_.variant = d.circular ? "thread.circular" : "thread.shift";
  plan.guarantee_ = float_guarantee(d.dtype);
  const int64_t B = d.batch, C = d.channels;
  int64_t xs[3];
  data_shape(d.layout, B, C, d.seq, xs);
  OperandSpecs& ops = plan.operands_;
  ops.input("x", d.dtype, xs);
  ops.input("weight", d.weight_dtype, {C, d.width});
  if (d.has_bias) ops.input("bias", d.weight_dtype, {C});
  if (d.circular) ops.input("cache_seqlens", DType::i32, {B});
  if (d.state_indices) ops.input("state_indices", DType::i32, {B});
  ops.add("conv_state", OperandRole::kInOut, d.dtype, {d.state_rows(), C, d.state_length()});
  ops.output("y", d.dtype, xs);
  if (Status s = resolve_operands<CausalConv1dUpdateArgs>(kUpd, ops); !s.ok()) return s;
  return plan;
}

Status CausalConv1dUpdatePlan::can_implement(const CausalConv1dUpdateArgs& a) const {
  return check_plan_args(kUpd, selected(), operands_, a);
}

Status CausalConv1dUpdatePlan::run(cudaStream_t stream, Workspace, const CausalConv1dUpdateArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  const CausalConv1dUpdateDescriptor& d = desc_;
  detail::Conv1dUpdateParams p;
  p.B = d.batch;
  p.C = d.channels;
  p.n = d.seq;
  p.S = d.state_length();
  p.state_rows = d.state_rows();
  p.W = d.width;
  p.silu = d.activation == Conv1dActivation::kSiLU;
  if (p.B * p.C == 0) return {};
  if ((p.B * p.C + detail::kConvThreads - 1) / detail::kConvThreads >= (int64_t{1} << 31))
    return error(StatusCode::kUnsupported, kUpd, ": batch * channels = ", p.B * p.C, " needs more than 2^31 - 1 blocks");
  p.x = a.x.data;
  bct_strides(d.layout, a.x, p.xs);
  p.y = a.y.data;
  bct_strides(d.layout, a.y, p.ys);
  p.state = a.conv_state.data;
  strides3(a.conv_state, p.ss);
  p.w = a.weight.data;
  p.ws[0] = a.weight.stride[0];
  p.ws[1] = a.weight.stride[1];
  p.wdt = static_cast<int>(d.weight_dtype);
  if (d.has_bias) {
    p.bias = a.bias.data;
    p.bs = a.bias.stride[0];
  }
  if (d.circular) {
    p.seqlens = static_cast<const int32_t*>(a.cache_seqlens.data);
    p.seqlens_s = a.cache_seqlens.stride[0];
  }
  if (d.state_indices) {
    p.indices = static_cast<const int32_t*>(a.state_indices.data);
    p.indices_s = a.state_indices.stride[0];
  }
  return cuda_status(detail::conv1d_update_launcher(d.dtype, d.width)(p, stream), kUpd);
}

}  // namespace baracuda
