// RoPE plans: descriptor validation, frequency table, argument checks, and the run-time choice
// of vector width and tokens per block (rope_geometry.hpp).
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cmath>
#include <numbers>

#include "baracuda/ops/rope.hpp"
#include "core/checked_math.hpp"
#include "core/cuda_check.hpp"
#include "core/dispatch.hpp"
#include "core/plan_kit.hpp"
#include "core/validate.hpp"
#include "ops/rope/rope_geometry.hpp"

namespace baracuda {

namespace {

constexpr std::string_view kOp = "rope";
constexpr std::string_view kOpBwd = "rope_backward";

std::string_view op_name(bool backward) { return backward ? kOpBwd : kOp; }

Status validate_descriptor(std::string_view op, const RopeDescriptor& d) {
  auto bad = [&](auto... parts) { return error(StatusCode::kInvalidProblem, op, ": ", parts...); };
  if (Status s = check_enums(op, d); !s.ok()) return s;
  if (Status s = check_dtype(op, "dtype", d.dtype, FloatDTypes{}); !s.ok()) return s;
  if (d.batch < 0) return bad("batch = ", d.batch, " must be >= 0");
  if (d.seq < 0) return bad("seq = ", d.seq, " must be >= 0");
  if (d.heads_q < 1) return bad("heads_q = ", d.heads_q, " must be >= 1");
  if (d.heads_k < 0) return bad("heads_k = ", d.heads_k, " must be >= 0 (0: no k)");
  if (d.head_dim < 2) return bad("head_dim = ", d.head_dim, " must be >= 2");
  const int64_t R = d.rot_dim();
  if (R < 2 || R > d.head_dim || R % 2 != 0)
    return bad("rotary_dim = ", R, " must be even and in [2, head_dim = ", d.head_dim, "]");
  int64_t bs = 0, heads = 0, row = 0;
  if (!checked_mul(d.batch, d.seq, &bs)) return bad("batch * seq overflows int64");
  if (!checked_add(d.heads_q, d.heads_k, &heads) || !checked_mul(heads, d.head_dim, &row) || row >= (int64_t{1} << 31))
    return bad("(heads_q + heads_k) * head_dim must be < 2^31 (heads_q = ", d.heads_q, ", heads_k = ", d.heads_k,
               ", head_dim = ", d.head_dim, ")");
  if (d.positions_rank < 0 || d.positions_rank > 2)
    return bad("positions_rank = ", d.positions_rank, " must be 0 (none), 1 ([S]) or 2 ([B, S])");
  if (d.positions_rank > 0)
    if (Status s = check_dtype(op, "positions_dtype", d.positions_dtype, DTypeList<DType::i32, DType::i64>{}); !s.ok()) return s;
  if (d.positions_rank > 0 && d.position_offset != 0)
    return bad("position_offset = ", d.position_offset, " is only used without a positions tensor");
  if (d.cos_sin_cache) {
    if (Status s = check_dtype(op, "cache_dtype", d.cache_dtype, FloatDTypes{}); !s.ok()) return s;
    if (d.cache_rows < 0) return bad("cache_rows = ", d.cache_rows, " must be >= 0");
    if (d.scaling != RopeScaling::kNone)
      return bad("scaling ", enum_name(d.scaling), " applies to computed angles; a cos/sin cache carries its own");
    return {};
  }
  if (R / 2 > kRopeMaxComputedPairs)
    return error(StatusCode::kUnsupported, op, ": rotary_dim = ", R, " exceeds ", 2 * kRopeMaxComputedPairs,
                 " with computed angles (pass a cos/sin cache)");
  if (!(std::isfinite(d.base) && d.base > 0)) return bad("base = ", d.base, " must be finite and > 0");
  const RopeScalingParams& sp = d.scale;
  if (d.scaling != RopeScaling::kNone && !(std::isfinite(sp.factor) && sp.factor > 0))
    return bad("scale.factor = ", sp.factor, " must be finite and > 0");
  if ((d.scaling == RopeScaling::kYaRN || d.scaling == RopeScaling::kLlama3) && sp.original_max_position <= 0)
    return bad("scale.original_max_position = ", sp.original_max_position, " must be > 0 for ", enum_name(d.scaling));
  if (d.scaling == RopeScaling::kYaRN) {
    if (d.base == 1.0) return bad("base = 1 leaves YaRN's correction range undefined");
    if (!(sp.beta_fast > 0 && sp.beta_slow > 0 && std::isfinite(sp.beta_fast) && std::isfinite(sp.beta_slow)))
      return bad("scale.beta_fast = ", sp.beta_fast, " and scale.beta_slow = ", sp.beta_slow, " must be finite and > 0");
    if (!(std::isfinite(sp.attention_factor) && sp.attention_factor >= 0))
      return bad("scale.attention_factor = ", sp.attention_factor, " must be finite and >= 0 (0: default)");
  }
  if (d.scaling == RopeScaling::kLlama3 &&
      !(sp.low_freq_factor > 0 && sp.high_freq_factor > sp.low_freq_factor && std::isfinite(sp.high_freq_factor)))
    return bad("scale.low_freq_factor = ", sp.low_freq_factor, " and scale.high_freq_factor = ", sp.high_freq_factor,
               " must satisfy 0 < low < high");
  return {};
}

// Expected shape of a q-side (heads = Hq) or k-side view.
void view_shape(const RopeDescriptor& d, int64_t heads, int64_t* s) {
  s[0] = d.batch;
  s[1] = d.layout == RopeLayout::kBHSD ? heads : d.seq;
  s[2] = d.layout == RopeLayout::kBHSD ? d.seq : heads;
  s[3] = d.head_dim;
}

// Element strides of (b, s, h) of a checked view; 0 for an extent-1 axis (index always 0).
void bsh_strides(const RopeDescriptor& d, const TensorLayout& t, int64_t* sb, int64_t* ss, int64_t* sh) {
  const int ax_s = d.layout == RopeLayout::kBHSD ? 2 : 1, ax_h = d.layout == RopeLayout::kBHSD ? 1 : 2;
  *sb = t.shape[0] > 1 ? t.stride[0] : 0;
  *ss = t.shape[ax_s] > 1 ? t.stride[ax_s] : 0;
  *sh = t.shape[ax_h] > 1 ? t.stride[ax_h] : 0;
}

bool exact_alias(const TensorLayout& a, const void* ap, const TensorLayout& b, const void* bp) {
  return ap == bp && a.identical(b);
}

// The operands of either direction: q side, k side (heads_k > 0), positions, cache; then outputs.
OperandSpecs rope_operands(const RopeDescriptor& d, bool backward) {
  const char* in_name[2] = {backward ? "dq_out" : "q", backward ? "dk_out" : "k"};
  const char* out_name[2] = {backward ? "dq" : "q_out", backward ? "dk" : "k_out"};
  const int nt = d.heads_k > 0 ? 2 : 1;
  int64_t shape[2][4];
  OperandSpecs s;
  for (int x = 0; x < nt; ++x) {
    view_shape(d, x == 0 ? d.heads_q : d.heads_k, shape[x]);
    s.input(in_name[x], d.dtype, shape[x]);
  }
  if (d.positions_rank > 0) {
    const int64_t ps[2] = {d.positions_rank == 2 ? d.batch : d.seq, d.seq};
    s.input("positions", d.positions_dtype, std::span<const int64_t>(ps + (d.positions_rank == 2 ? 0 : 1), d.positions_rank));
  }
  if (d.cos_sin_cache) {
    s.input("cos", d.cache_dtype, {d.cache_rows, d.rot_dim() / 2});
    s.input("sin", d.cache_dtype, {d.cache_rows, d.rot_dim() / 2});
  }
  for (int x = 0; x < nt; ++x) {
    s.output(out_name[x], d.dtype, shape[x]);
    s.may_alias(out_name[x], in_name[x]);
  }
  return s;
}

}  // namespace

Result<RopeDescriptor> RopeDescriptor::from_args(const RopeArgs& a, RopeLayout layout) {
  if (a.q.rank != 4) return error(StatusCode::kInvalidProblem, kOp, ": q has rank ", a.q.rank, "; it must be 4");
  const bool bhsd = layout == RopeLayout::kBHSD;
  RopeDescriptor d;
  d.dtype = a.q.dtype;
  d.layout = layout;
  d.batch = a.q.shape[0];
  d.seq = a.q.shape[bhsd ? 2 : 1];
  d.heads_q = a.q.shape[bhsd ? 1 : 2];
  d.head_dim = a.q.shape[3];
  d.heads_k = a.k.rank == 4 && a.k.numel() > 0 ? a.k.shape[bhsd ? 1 : 2] : 0;
  if (a.positions.rank > 0) {
    d.positions_rank = a.positions.rank;
    d.positions_dtype = a.positions.dtype;
  }
  if (a.cos.rank > 0) {
    d.cos_sin_cache = true;
    d.cache_dtype = a.cos.dtype;
    d.cache_rows = a.cos.shape[0];
  }
  return d;
}

Status rope_frequencies(const RopeDescriptor& d, double* inv_freq, double* attention_factor) {
  if (Status s = validate_descriptor(kOp, d); !s.ok()) return s;
  if (d.cos_sin_cache) return error(StatusCode::kInvalidProblem, kOp, ": a descriptor with a cos/sin cache has no frequencies");
  const int64_t R = d.rot_dim(), n = R / 2;
  const RopeScalingParams& sp = d.scale;
  const double L = static_cast<double>(sp.original_max_position), two_pi = 2 * std::numbers::pi;
  // YaRN's ramp over the dims [lo, hi]: 0 keeps ω (extrapolation), 1 takes ω / factor
  double lo = 0, hi = 0;
  if (d.scaling == RopeScaling::kYaRN) {
    auto corr_dim = [&](double rot) { return R * std::log(L / (rot * two_pi)) / (2 * std::log(d.base)); };
    lo = std::max(std::floor(corr_dim(sp.beta_fast)), 0.0);
    hi = std::min(std::ceil(corr_dim(sp.beta_slow)), static_cast<double>(R - 1));
    if (lo == hi) hi += 0.001;
  }
  for (int64_t f = 0; f < n; ++f) {
    const double w = std::pow(d.base, -static_cast<double>(2 * f) / static_cast<double>(R));
    double v = w;
    switch (d.scaling) {
      case RopeScaling::kNone: break;
      case RopeScaling::kLinear: v = w / sp.factor; break;
      case RopeScaling::kYaRN: {
        const double ramp = std::clamp((static_cast<double>(f) - lo) / (hi - lo), 0.0, 1.0);
        v = (w / sp.factor) * ramp + w * (1 - ramp);
        break;
      }
      case RopeScaling::kLlama3: {
        const double wavelen = two_pi / w;
        if (wavelen > L / sp.low_freq_factor) v = w / sp.factor;
        else if (wavelen >= L / sp.high_freq_factor) {
          const double a = (L / wavelen - sp.low_freq_factor) / (sp.high_freq_factor - sp.low_freq_factor);
          v = (1 - a) * w / sp.factor + a * w;
        }
        break;
      }
    }
    inv_freq[f] = v;
  }
  double m = 1.0;
  if (d.scaling == RopeScaling::kYaRN)
    m = sp.attention_factor > 0 ? sp.attention_factor : (sp.factor <= 1 ? 1.0 : 0.1 * std::log(sp.factor) + 1.0);
  *attention_factor = m;
  return {};
}

// ---------------------------------------------------------------- shared by both directions

Status RopePlanBase::select_impl(const RopeDescriptor& d, const PlanPreference& pref, bool backward) {
  const std::string_view op = op_name(backward);
  if (Status s = begin_select(op, d, pref, &sku_); !s.ok()) return s;
  if (Status s = validate_descriptor(op, d); !s.ok()) return s;
  if (!d.cos_sin_cache) {
    if (Status s = rope_frequencies(d, inv_freq_, &attention_factor_); !s.ok()) return s;
  }
  for (int np = 1; np <= detail::rope_max_np(d.dtype); np *= 2)
    if (!detail::rope_launcher(d.dtype, d.pairing, np))
      return error(StatusCode::kInternal, op, ": no kernel for ", dtype_name(d.dtype), " np ", np);
  desc_ = d;
  backward_ = backward;
  sku_.op = cat("rope.", enum_name(d.pairing));
  sku_.direction = backward ? Direction::kBackward : Direction::kForward;
  sku_.dtype = d.dtype;
  sku_.variant = d.cos_sin_cache ? "tokenblock.cache" : "tokenblock";
  guarantee_ = float_guarantee(d.dtype);
  operands_ = rope_operands(d, backward);
  return backward ? resolve_operands<RopeBackwardArgs>(op, operands_) : resolve_operands<RopeArgs>(op, operands_);
}

// What the generic operand check leaves to rope: unit stride along head_dim.
Status RopePlanBase::check(const TensorRef (&in)[2], const TensorMut (&out)[2]) const {
  const std::string_view op = op_name(backward_);
  const char* in_name[2] = {backward_ ? "dq_out" : "q", backward_ ? "dk_out" : "k"};
  const char* out_name[2] = {backward_ ? "dq" : "q_out", backward_ ? "dk" : "k_out"};
  for (int x = 0; x < (desc_.heads_k > 0 ? 2 : 1); ++x)
    if (in[x].stride[3] != 1 || out[x].stride[3] != 1)
      return error(StatusCode::kInvalidProblem, op, ": ", in[x].stride[3] != 1 ? in_name[x] : out_name[x],
                   " must have unit stride on its last (head_dim) axis, not ",
                   in[x].stride[3] != 1 ? in[x].stride[3] : out[x].stride[3]);
  return {};
}

Status RopePlanBase::launch(cudaStream_t stream, const TensorRef (&in)[2], const TensorMut (&out)[2],
                            const TensorRef& positions, const TensorRef& cos, const TensorRef& sin) const {
  const RopeDescriptor& d = desc_;
  const std::string_view op = op_name(backward_);
  const int64_t tokens = d.batch * d.seq;
  if (tokens == 0) return {};
  detail::RopeParams p;
  const int nt = d.heads_k > 0 ? 2 : 1;
  bool all_in_place = true;
  for (int x = 0; x < nt; ++x) {
    p.in[x] = in[x].data;
    p.out[x] = out[x].data;
    bsh_strides(d, in[x], &p.in_sb[x], &p.in_ss[x], &p.in_sh[x]);
    bsh_strides(d, out[x], &p.out_sb[x], &p.out_ss[x], &p.out_sh[x]);
    all_in_place = all_in_place && exact_alias(out[x], out[x].data, in[x], in[x].data);
  }
  const int R = static_cast<int>(d.rot_dim()), D = static_cast<int>(d.head_dim), R2 = R / 2;
  const bool pass = R < D && !all_in_place;
  // widest NP every address, stride and split point allows
  const size_t es = dtype_size(d.dtype);
  int np = detail::rope_max_np(d.dtype);
  auto fits = [&](int v) {
    if (R2 % v != 0 || (pass && (D - R) % v != 0)) return false;
    for (int x = 0; x < nt; ++x) {
      if (reinterpret_cast<uintptr_t>(p.in[x]) % (v * es) != 0 || reinterpret_cast<uintptr_t>(p.out[x]) % (v * es) != 0)
        return false;
      for (int64_t st : {p.in_sb[x], p.in_ss[x], p.in_sh[x], p.out_sb[x], p.out_ss[x], p.out_sh[x]})
        if (st % v != 0) return false;
    }
    return true;
  };
  while (np > 1 && !fits(np)) np /= 2;
  p.seq = d.seq;
  p.tokens = tokens;
  p.heads_q = static_cast<int>(d.heads_q);
  p.heads = static_cast<int>(d.heads_q + (nt == 2 ? d.heads_k : 0));
  p.half_rot = R2;
  p.rot = R;
  p.head_dim = D;
  p.chunks_rot = R2 / np;
  p.chunks_pass = pass ? (D - R + 2 * np - 1) / (2 * np) : 0;
  // lanes per token: enough for its items, a power of two up to a warp
  const int64_t per_tok = int64_t{p.heads} * (p.chunks_rot + p.chunks_pass);
  int lanes = 1;
  while (lanes < 32 && lanes < per_tok) lanes *= 2;
  p.group_lanes = lanes;
  if ((tokens + detail::kRopeAsyncThreads / lanes - 1) / (detail::kRopeAsyncThreads / lanes) >= (int64_t{1} << 31))
    return error(StatusCode::kUnsupported, op, ": ", tokens, " tokens need more than 2^31 - 1 blocks");
  p.pos_rank = d.positions_rank;
  p.pos_offset = d.position_offset;
  if (d.positions_rank > 0) {
    p.pos = positions.data;
    p.pos_i64 = d.positions_dtype == DType::i64;
    p.pos_ss = positions.stride[positions.rank - 1];
    p.pos_sb = d.positions_rank == 2 ? positions.stride[0] : 0;
  }
  if (d.cos_sin_cache) {
    p.cos = cos.data;
    p.sin = sin.data;
    p.cache_dtype = static_cast<int>(d.cache_dtype);
    p.cache_rows = d.cache_rows;
    p.cos_sr = cos.stride[0];
    p.cos_sf = cos.stride[1];
    p.sin_sr = sin.stride[0];
    p.sin_sf = sin.stride[1];
  } else {
    std::copy(inv_freq_, inv_freq_ + R2, p.inv_freq);
    p.mscale = attention_factor_;
  }
  p.sign = backward_ ? -1.0 : 1.0;
  const detail::RopeLaunchFn fn = detail::rope_launcher(d.dtype, d.pairing, np);
  return cuda_status(fn(p, stream), op);
}

// ---------------------------------------------------------------- the two plans

Result<RopePlan> RopePlan::select(const RopeDescriptor& desc, const PlanPreference& pref) {
  RopePlan plan;
  if (Status s = plan.select_impl(desc, pref, /*backward=*/false); !s.ok()) return s;
  return plan;
}

Status RopePlan::can_implement(const RopeArgs& a) const {
  if (Status s = check_plan_args(kOp, selected(), operands_, a); !s.ok()) return s;
  return check({a.q, a.k}, {a.q_out, a.k_out});
}

Status RopePlan::run(cudaStream_t stream, Workspace, const RopeArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  return launch(stream, {a.q, a.k}, {a.q_out, a.k_out}, a.positions, a.cos, a.sin);
}

Result<RopeBackwardPlan> RopeBackwardPlan::select(const RopeBackwardDescriptor& desc, const PlanPreference& pref) {
  RopeBackwardPlan plan;
  if (Status s = plan.select_impl(desc, pref, /*backward=*/true); !s.ok()) return s;
  return plan;
}

Status RopeBackwardPlan::can_implement(const RopeBackwardArgs& a) const {
  if (Status s = check_plan_args(kOpBwd, selected(), operands_, a); !s.ok()) return s;
  return check({a.dq_out, a.dk_out}, {a.dq, a.dk});
}

Status RopeBackwardPlan::run(cudaStream_t stream, Workspace, const RopeBackwardArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  return launch(stream, {a.dq_out, a.dk_out}, {a.dq, a.dk}, a.positions, a.cos, a.sin);
}

}  // namespace baracuda
