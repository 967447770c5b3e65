// GEMM plans: PyTorch op semantics -> canonical GEMM (GemmCanon) -> GemmCore on cuBLASLt.
#include "baracuda/ops/gemm.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>
#include <optional>

#include <cuda_runtime_api.h>

#include "baracuda/ops/elementwise.hpp"
#include "baracuda/ops/reduce_to_shape.hpp"
#include "core/arch.hpp"
#include "core/checked_math.hpp"
#include "core/cuda_check.hpp"
#include "core/dispatch.hpp"
#include "core/plan_cache.hpp"
#include "core/plan_kit.hpp"
#include "core/workspace.hpp"
#include "core/validate.hpp"
#include "ops/gemm/gemm_core.hpp"

namespace baracuda {

namespace detail {

struct GemmExec {
  GemmCanon canon;  // unsimplified: the pointwise and copy views are built from it
  GemmCore core;
};

struct GemmBackwardExec {
  GemmCanon canon;  // forward problem, unsimplified
  GemmCoreOptions fwd;
  bool has_da = false, has_db = false;
  GemmCore da, db;
  int64_t dz_offset = -1;  // dZ buffer (activation present), out-shaped row-major
  int64_t scratch_offset = 0;
  size_t colsum_ws = 0;
  bool dc_full = false, dc_colsum = false;
  // any other broadcast c: dc = beta * sum of dZ over the broadcast axes (reduce-to-shape)
  std::optional<ReduceToShapePlan> dc_reduce;
  std::optional<ElementwisePlan> dc_scale;  // dc *= beta (beta != 1)
  int64_t bias_stride = 1;
  size_t workspace = 0;
  TensorLayout a_grad, b_grad, bias_grad, c_grad;  // layouts the gradients must have
};

}  // namespace detail

using detail::GemmAxis;
using detail::GemmCanon;
using detail::GemmCore;
using detail::GemmCoreOptions;
using detail::kOpA;
using detail::kOpB;
using detail::kOpC;
using detail::kOpD;
using detail::kOpP;
using detail::check_operand;
using detail::same_layout;

namespace {

// GemmDescriptor::inner's folds that could not be made (kGemmUnfoldable), said plainly.
Status check_folds(std::string_view op, const GemmDescriptor& d) {
  if (d.b.rank == kGemmUnfoldable)
    return error(StatusCode::kInvalidProblem, op, ": b's leading dims must fold into one N axis (inner): their strides do not nest");
  if (d.out.rank == kGemmUnfoldable)
    return error(StatusCode::kInvalidProblem, op, ": out's trailing dims must fold into one N axis (inner): their strides do not nest");
  return {};
}

constexpr std::string_view kOp = "gemm";
constexpr std::string_view kOpBwd = "gemm_backward";

detail::PlanCacheCounters g_cache_counters;
detail::PlanCache<GemmDescriptor, detail::GemmExec> g_fwd_cache(&g_cache_counters);
detail::PlanCache<GemmDescriptor, detail::GemmBackwardExec> g_bwd_cache(&g_cache_counters);

// The device whose cuBLASLt state a plan selected now would hold; -1 (not cached) without one.
int cache_device(int arch) {
  std::string why;
  if (current_device_arch(&why) != arch) return -1;
  int dev = -1;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return dev;
}

bool is_fp8(DType t) { return t == DType::f8e4m3 || t == DType::f8e5m2; }



// What the descriptor means, resolved: the canonical problem and the layouts the args must have.
struct Resolved {
  GemmCanon canon;  // unsimplified
  GemmCoreOptions opt;
  TensorLayout preact;  // out-shaped, contiguous
  int nb = 0;           // product batch axes
  int64_t prod_batch[kMaxRank] = {};
};

Status resolve(std::string_view op, const GemmDescriptor& d, Resolved* r) {
  if (Status s = check_layout(op, "a", d.a); !s.ok()) return s;
  if (Status s = check_layout(op, "b", d.b); !s.ok()) return s;
  if (Status s = check_layout(op, "out", d.out); !s.ok()) return s;
  const bool use_c = d.has_c && d.beta != 0.0;
  if (d.has_c)
    if (Status s = check_layout(op, "c", d.c); !s.ok()) return s;
  if (d.has_bias)
    if (Status s = check_layout(op, "bias", d.bias); !s.ok()) return s;
  if (!d.has_c && d.beta != 0.0)
    return error(StatusCode::kInvalidProblem, op, ": beta = ", d.beta, " but has_c is false (no addend to scale)");
  if (d.a.rank < 1 || d.b.rank < 1)
    return error(StatusCode::kInvalidProblem, op, ": a and b need rank >= 1 (got ", d.a.rank, " and ", d.b.rank, ")");
  if (static_cast<int>(d.activation) > static_cast<int>(GemmActivation::kGeluErf))
    return error(StatusCode::kInvalidProblem, op, ": activation = ", static_cast<int>(d.activation), " is not a GemmActivation");
  if (static_cast<int>(d.epilogue_impl) > static_cast<int>(GemmEpilogueImpl::kSeparate))
    return error(StatusCode::kInvalidProblem, op, ": epilogue_impl = ", static_cast<int>(d.epilogue_impl), " is not a GemmEpilogueImpl");
  if (d.pointer_alignment < 1 || d.pointer_alignment > 256 || !std::has_single_bit(static_cast<unsigned>(d.pointer_alignment)))
    return error(StatusCode::kInvalidProblem, op, ": pointer_alignment = ", d.pointer_alignment, " must be a power of two in [1, 256]");

  // ---- dtypes
  const DType ta = d.a.dtype, tb = d.b.dtype, to = d.out.dtype;
  const bool fp8 = is_fp8(ta) || is_fp8(tb);
  if (fp8) {
    if (!is_fp8(ta) || !is_fp8(tb))
      return error(StatusCode::kUnsupported, op, ": fp8 needs both a and b in fp8 (a ", dtype_name(ta), ", b ", dtype_name(tb), ")");
    if (ta == DType::f8e5m2 && tb == DType::f8e5m2)
      return error(StatusCode::kUnsupported, op, ": f8e5m2 x f8e5m2 is not supported by cuBLASLt (use e4m3 for one side)");
    if (to != DType::bf16 && to != DType::f16 && to != DType::f32)
      return error(StatusCode::kUnsupported, op, ": fp8 out dtype ", dtype_name(to), " is not supported (bf16, f16, f32)");
    if (use_c) return error(StatusCode::kUnsupported, op, ": fp8 GEMM takes no c (beta must be 0)");
    if (d.has_bias && to == DType::f32)
      return error(StatusCode::kUnsupported, op, ": fp8 GEMM with f32 out takes no bias (as torch._scaled_mm)");
    if (d.activation != GemmActivation::kNone || d.save_preactivation)
      return error(StatusCode::kUnsupported, op, ": fp8 GEMM has no activation epilogue");
  } else {
    if (!FloatDTypes::contains(ta))
      return error(StatusCode::kUnsupported, op, ": dtype ", dtype_name(ta), " is not supported (supported: ",
                   FloatDTypes::names(), ", and fp8 pairs)");
    if (tb != ta) return error(StatusCode::kInvalidProblem, op, ": b dtype ", dtype_name(tb), " differs from a dtype ", dtype_name(ta));
    if (to != ta)
      return error(StatusCode::kInvalidProblem, op, ": out dtype ", dtype_name(to), " differs from a dtype ", dtype_name(ta));
  }
  if (d.has_c && d.c.dtype != to)
    return error(StatusCode::kInvalidProblem, op, ": c dtype ", dtype_name(d.c.dtype), " differs from out dtype ", dtype_name(to));
  if (d.has_bias && d.bias.dtype != to)
    return error(StatusCode::kInvalidProblem, op, ": bias dtype ", dtype_name(d.bias.dtype), " differs from out dtype ", dtype_name(to));

  // ---- matrix axes
  const TensorLayout &A = d.a, &B = d.b, &O = d.out;
  const int ra = A.rank, rb = B.rank;
  const int64_t M = ra > 1 ? A.shape[ra - 2] : 1, Ka = A.shape[ra - 1];
  const int64_t a_m = ra > 1 ? A.stride[ra - 2] : 0, a_k = A.stride[ra - 1];
  int64_t Kb, N, b_k, b_n;
  if (rb == 1) {
    Kb = B.shape[0], N = 1, b_k = B.stride[0], b_n = 0;
  } else if (d.transpose_b) {
    N = B.shape[rb - 2], Kb = B.shape[rb - 1], b_n = B.stride[rb - 2], b_k = B.stride[rb - 1];
  } else {
    Kb = B.shape[rb - 2], N = B.shape[rb - 1], b_k = B.stride[rb - 2], b_n = B.stride[rb - 1];
  }
  if (Ka != Kb)
    return error(StatusCode::kInvalidProblem, op, ": a's K = ", Ka, " (a ", shape_string(A), ") does not match b's K = ", Kb,
                 " (b ", shape_string(B), d.transpose_b ? ", transposed" : "", ")");
  const int nba = std::max(0, ra - 2), nbb = std::max(0, rb - 2);
  const int nb = std::max(nba, nbb);
  if (nb > kMaxRank - 2)
    return error(StatusCode::kInvalidProblem, op, ": ", nb, " batch dims exceed ", kMaxRank - 2);
  int64_t prod[kMaxRank];
  for (int i = 0; i < nb; ++i) {
    const int ia = i - (nb - nba), ib = i - (nb - nbb);
    const int64_t ea = ia >= 0 ? A.shape[ia] : 1, eb = ib >= 0 ? B.shape[ib] : 1;
    if (ea != eb && ea != 1 && eb != 1)
      return error(StatusCode::kInvalidProblem, op, ": batch dims of a ", shape_string(A), " and b ", shape_string(B),
                   " do not broadcast (", ea, " vs ", eb, ")");
    prod[i] = ea == 1 ? eb : ea;
  }

  // ---- out shape
  const int nmat = (ra > 1) + (rb > 1);
  const int nbo = O.rank - nmat;
  int64_t want[kMaxRank];
  int nw = 0;
  for (int i = 0; i < nb; ++i) want[nw++] = prod[i];
  if (ra > 1) want[nw++] = M;
  if (rb > 1) want[nw++] = N;
  auto out_mismatch = [&] {
    return error(StatusCode::kInvalidProblem, op, ": out shape ", shape_string(O), " does not match the product's ",
                 shape_string(std::span<const int64_t>(want, nw)),
                 d.sum_batch ? " (with sum_batch, out's batch dims may be 1 or absent)" : "");
  };
  if (nbo < 0 || nbo > nb || (!d.sum_batch && nbo != nb)) return out_mismatch();
  for (int j = 0; j < nbo; ++j) {
    const int64_t e = O.shape[j], p = prod[nb - nbo + j];
    if (e != p && !(d.sum_batch && e == 1)) return out_mismatch();
  }
  if (ra > 1 && O.shape[nbo] != M) return out_mismatch();
  if (rb > 1 && O.shape[O.rank - 1] != N) return out_mismatch();
  if (Status s = check_no_internal_overlap(op, "out", O); !s.ok()) return s;

  // ---- c broadcasts to out
  if (d.has_c) {
    if (d.c.rank > O.rank)
      return error(StatusCode::kInvalidProblem, op, ": c ", shape_string(d.c), " has more dims than out ", shape_string(O));
    for (int j = 0; j < d.c.rank; ++j) {
      const int64_t ce = d.c.shape[j], oe = O.shape[O.rank - d.c.rank + j];
      if (ce != oe && ce != 1)
        return error(StatusCode::kInvalidProblem, op, ": c ", shape_string(d.c), " does not broadcast to out ", shape_string(O));
    }
  }
  auto c_stride_of_out_dim = [&](int od) -> int64_t {
    if (!use_c) return 0;
    const int cj = od - (O.rank - d.c.rank);
    if (cj < 0 || d.c.shape[cj] != O.shape[od]) return 0;
    return O.shape[od] == 1 ? 0 : d.c.stride[cj];
  };
  if (d.has_bias && (d.bias.rank != 1 || d.bias.shape[0] != N))
    return error(StatusCode::kInvalidProblem, op, ": bias shape ", shape_string(d.bias), " must be [", N, "]");
  if (d.save_preactivation && d.activation == GemmActivation::kNone)
    return error(StatusCode::kInvalidProblem, op, ": save_preactivation without an activation (preact would equal out)");
  if (static_cast<int>(d.grad_activation) > static_cast<int>(GemmActivation::kGeluErf))
    return error(StatusCode::kInvalidProblem, op, ": grad_activation = ", static_cast<int>(d.grad_activation),
                 " is not a GemmActivation");
  const bool grad_epi = d.grad_activation != GemmActivation::kNone || d.has_bias_grad;
  if (grad_epi && (d.activation != GemmActivation::kNone || d.has_bias || d.save_preactivation))
    return error(StatusCode::kInvalidProblem, op,
                 ": a backward epilogue (grad_activation / has_bias_grad) excludes activation, bias and save_preactivation");
  if (grad_epi && fp8) return error(StatusCode::kUnsupported, op, ": fp8 GEMM has no backward epilogue");
  if (d.has_bias_grad && (ra < 2 || rb < 2))
    return error(StatusCode::kInvalidProblem, op, ": has_bias_grad needs 2-D a and b (bias_grad is [N], summed over rows)");

  r->preact = O.contiguous();
  const TensorLayout& P = r->preact;

  // ---- canonical axes
  GemmCanon& c = r->canon;
  c = GemmCanon{};
  c.a_dtype = ta, c.b_dtype = tb, c.d_dtype = to;
  c.nb = nb;
  for (int i = 0; i < nb; ++i) {
    GemmAxis& x = c.batch[i];
    x.ext = prod[i];
    const int ia = i - (nb - nba), ib = i - (nb - nbb), io = i - (nb - nbo);
    x.s[kOpA] = ia >= 0 && A.shape[ia] > 1 ? A.stride[ia] : 0;
    x.s[kOpB] = ib >= 0 && B.shape[ib] > 1 ? B.stride[ib] : 0;
    const bool out_has = io >= 0 && O.shape[io] == prod[i] && prod[i] != 1;
    // an empty out axis is marked with a nonzero stride so it is not taken for a summed one
    x.s[kOpD] = out_has ? (prod[i] == 0 && O.stride[io] == 0 ? 1 : O.stride[io]) : 0;
    x.s[kOpC] = out_has ? c_stride_of_out_dim(io) : 0;
    x.s[kOpP] = out_has ? P.stride[io] : 0;
    if (prod[i] == 1) x.s = {};
  }
  const int om = ra > 1 ? nbo : -1, on = rb > 1 ? O.rank - 1 : -1;
  c.m.ext = M;
  c.m.s[kOpA] = M > 1 ? a_m : 0;
  c.m.s[kOpD] = om >= 0 && M > 1 ? O.stride[om] : 0;
  c.m.s[kOpC] = om >= 0 && M > 1 ? c_stride_of_out_dim(om) : 0;
  c.m.s[kOpP] = om >= 0 && M > 1 ? P.stride[om] : 0;
  c.n.ext = N;
  c.n.s[kOpB] = N > 1 ? b_n : 0;
  c.n.s[kOpD] = on >= 0 && N > 1 ? O.stride[on] : 0;
  c.n.s[kOpC] = on >= 0 && N > 1 ? c_stride_of_out_dim(on) : 0;
  c.n.s[kOpP] = on >= 0 && N > 1 ? P.stride[on] : 0;
  c.k.ext = Ka;
  c.k.s[kOpA] = a_k;
  c.k.s[kOpB] = b_k;
  r->nb = nb;
  std::copy(prod, prod + nb, r->prod_batch);

  if (fp8) {
    if (Ka % 16 != 0 || N % 16 != 0)
      return error(StatusCode::kUnsupported, op, ": fp8 needs K and N multiples of 16 (K = ", Ka, ", N = ", N, ")");
  }

  GemmCoreOptions& o = r->opt;
  o.alpha = d.alpha;
  o.beta = use_c ? d.beta : 0.0;
  o.use_c = use_c;
  o.has_bias = d.has_bias;
  o.bias_dtype = to;
  o.act = d.activation;
  o.save_preact = d.save_preactivation;
  o.epilogue = d.epilogue_impl;
  o.pointer_alignment = d.pointer_alignment;
  o.reduced_precision_reduction = d.allow_reduced_precision_reduction;
  o.fp8_fast_accum = d.fp8_fast_accum;
  o.grad_act = d.grad_activation;
  o.bias_grad = d.has_bias_grad;
  o.bias_stride = d.has_bias ? d.bias.stride[0] : 1;
  if (d.has_bias && d.bias.stride[0] != 1 && d.epilogue_impl == GemmEpilogueImpl::kFused && N > 1)
    return error(StatusCode::kUnsupported, op, ": a fused bias needs unit stride (bias stride ", d.bias.stride[0], ")");
  if (d.has_bias && d.bias.stride[0] != 1 && N > 1) o.epilogue = GemmEpilogueImpl::kSeparate;
  return {};
}

// The forward's operands at the layouts the descriptor fixed (alignment: pointer_alignment).
OperandSpecs forward_operands(const GemmDescriptor& d) {
  OperandSpecs s;
  auto add = [&](std::string_view name, OperandRole role, const TensorLayout& l) {
    s.add_layout(name, role, l).alignment = d.pointer_alignment;
  };
  add("a", OperandRole::kIn, d.a);
  add("b", OperandRole::kIn, d.b);
  if (d.has_c && d.beta != 0.0) add("c", OperandRole::kIn, d.c);
  if (d.has_bias) add("bias", OperandRole::kIn, d.bias);
  if (is_fp8(d.a.dtype)) {  // 0-dim f32 scale factors, 16-byte aligned (what the algorithm was chosen for)
    s.input("a_scale", DType::f32, {}).alignment = 16;
    s.input("b_scale", DType::f32, {}).alignment = 16;
  }
  const TensorLayout pre = d.out.contiguous();
  if (d.grad_activation != GemmActivation::kNone) add("aux", OperandRole::kIn, pre);
  add("out", OperandRole::kOut, d.out);
  if (d.has_c && d.beta != 0.0) s.may_alias("out", "c");  // in-place addmm
  if (d.save_preactivation) add("preact", OperandRole::kOut, pre);
  if (d.has_bias_grad) {
    const int64_t n = d.out.rank >= 1 ? d.out.shape[d.out.rank - 1] : 1;
    add("bias_grad", OperandRole::kOut, TensorLayout::make(d.out.dtype, std::span<const int64_t>(&n, 1)));
  }
  return s;
}

// The backward's operands: d_out; a, b, out, preact where some gradient needs them; the
// gradients (each optional: a null view skips it) in their row-major contiguous layouts.
OperandSpecs backward_operands(const GemmDescriptor& d, const detail::GemmBackwardExec& ex) {
  OperandSpecs s;
  const int al = std::min(d.pointer_alignment, 16);
  auto add = [&](std::string_view name, OperandRole role, const TensorLayout& l, int align, bool optional) {
    OperandSpec& o = s.add_layout(name, role, l);
    o.alignment = align;
    o.optional = optional;
  };
  add("a", OperandRole::kIn, d.a, al, true);  // needed for db
  add("b", OperandRole::kIn, d.b, al, true);  // needed for da
  if (d.activation == GemmActivation::kRelu) add("out", OperandRole::kIn, d.out, 1, false);
  if (d.activation == GemmActivation::kGeluTanh || d.activation == GemmActivation::kGeluErf)
    add("preact", OperandRole::kIn, d.out.contiguous(), 1, false);
  add("d_out", OperandRole::kIn, d.out, al, false);
  add("da", OperandRole::kOut, ex.a_grad, al, true);
  add("db", OperandRole::kOut, ex.b_grad, al, true);
  if (d.has_bias) add("dbias", OperandRole::kOut, ex.bias_grad, 1, true);
  if (d.has_c) add("dc", OperandRole::kOut, ex.c_grad, 1, true);
  return s;
}

}  // namespace

GemmPlanCacheStats gemm_plan_cache_stats() {
  GemmPlanCacheStats st;
  st.entries = g_fwd_cache.size() + g_bwd_cache.size();
  st.hits = g_cache_counters.hits.load();
  st.misses = g_cache_counters.misses.load();
  return st;
}

void gemm_plan_cache_clear() {
  g_fwd_cache.clear();
  g_bwd_cache.clear();
}

GemmDescriptor GemmDescriptor::matmul(const TensorLayout& a, const TensorLayout& b, const TensorLayout& out) {
  GemmDescriptor d;
  d.a = a, d.b = b, d.out = out;
  return d;
}

GemmDescriptor GemmDescriptor::addmm(const TensorLayout& input, const TensorLayout& m1, const TensorLayout& m2,
                                     const TensorLayout& out, double beta, double alpha) {
  GemmDescriptor d = matmul(m1, m2, out);
  d.c = input, d.has_c = true, d.beta = beta, d.alpha = alpha;
  // addbmm: the batch dims of m1 @ m2 are summed into out [M, N]
  d.sum_batch = out.rank == 2 && (m1.rank == 3 || m2.rank == 3);
  return d;
}

GemmDescriptor GemmDescriptor::outer(const TensorLayout& a, const TensorLayout& b, const TensorLayout& out) {
  TensorLayout a2 = a, b2 = b;
  if (a.rank == 1) {  // [M] -> [M, 1]
    a2.rank = 2, a2.shape[1] = 1, a2.stride[1] = 1;
  }
  if (b.rank == 1) {  // [N] -> [1, N]
    b2.rank = 2, b2.shape[1] = b.shape[0], b2.stride[1] = b.stride[0], b2.shape[0] = 1;
    // the extent-1 axis's stride (its value only matters as cuBLASLt's leading dimension); checked:
    // a caller's stride may be anything
    if (!checked_mul(b.shape[0], b.stride[0], &b2.stride[0])) b2.stride[0] = INT64_MAX;
  }
  GemmDescriptor d = matmul(a2, b2, out);
  return d;
}

GemmDescriptor GemmDescriptor::addr(const TensorLayout& input, const TensorLayout& a, const TensorLayout& b,
                                    const TensorLayout& out, double beta, double alpha) {
  GemmDescriptor d = outer(a, b, out);
  d.c = input, d.has_c = true, d.beta = beta, d.alpha = alpha;
  return d;
}

GemmDescriptor GemmDescriptor::linear(const TensorLayout& x, const TensorLayout& w, const TensorLayout* bias,
                                      const TensorLayout& y) {
  GemmDescriptor d = matmul(x, w, y);
  d.transpose_b = true;
  if (bias) d.bias = *bias, d.has_bias = true;
  return d;
}

GemmDescriptor GemmDescriptor::inner(const TensorLayout& a, const TensorLayout& b, const TensorLayout& out) {
  GemmDescriptor d = matmul(a, b, out);
  if (b.rank >= 2 && b.rank <= kMaxRank) {
    // fold b's leading dims into one N axis when their strides nest: b [.., K] -> [N, K]
    TensorLayout f = b;
    int64_t n = 1;
    bool b_folds = true;
    for (int i = b.rank - 2; i >= 0; --i) {
      int64_t nested = 0;
      if (i < b.rank - 2 && b.shape[i] > 1 &&
          (!checked_mul(b.stride[i + 1], b.shape[i + 1], &nested) || b.stride[i] != nested))
        b_folds = false;
      if (!checked_mul(n, b.shape[i], &n)) b_folds = false;
    }
    f.rank = 2;
    f.shape[0] = n, f.shape[1] = b.shape[b.rank - 1];
    f.stride[0] = b.stride[b.rank - 2], f.stride[1] = b.stride[b.rank - 1];
    if (!b_folds) f.rank = kGemmUnfoldable;  // select: "b's leading dims must fold"
    // out [a.., b..] is viewed as [a.., N]: its trailing b dims must fold too
    TensorLayout o = out;
    const int keep = out.rank - (b.rank - 1);
    if (keep >= 0 && out.rank <= kMaxRank) {
      int64_t on = 1;
      bool out_folds = true;
      for (int i = keep; i < out.rank; ++i) {
        int64_t nested = 0;
        if (!checked_mul(on, out.shape[i], &on)) out_folds = false;
        if (i + 1 < out.rank && out.shape[i] > 1 &&
            (!checked_mul(out.stride[i + 1], out.shape[i + 1], &nested) || out.stride[i] != nested))
          out_folds = false;
      }
      o.rank = keep + 1;
      o.shape[keep] = on;
      o.stride[keep] = out.rank > keep ? out.stride[out.rank - 1] : 1;
      if (!out_folds) o.rank = kGemmUnfoldable;  // select: "out's trailing dims must fold"
    }
    d.b = f, d.out = o;
    d.transpose_b = true;
  }
  return d;
}

// ------------------------------------------------------------------ forward plan
Result<GemmPlan> GemmPlan::select(const GemmDescriptor& desc, const PlanPreference& pref) {
  GemmPlan p;
  // enums, preference and architecture before anything hashes the descriptor (the plan cache)
  if (Status s = begin_select(kOp, desc, pref, &p.sku_, Backend::kCuBLASLt); !s.ok()) return s;
  if (Status s = check_folds(kOp, desc); !s.ok()) return s;
  const int arch = p.sku_.arch;
  const int device = cache_device(arch);
  std::shared_ptr<const detail::GemmExec> cached = g_fwd_cache.find(desc, pref, device);
  if (!cached) {
    Resolved r;
    if (Status s = resolve(kOp, desc, &r); !s.ok()) return s;
    auto core = GemmCore::select(kOp, r.canon, r.opt, pref, arch);
    if (!core) return core.status();
    auto exec = std::make_shared<detail::GemmExec>();
    exec->canon = r.canon;
    exec->core = std::move(*core);
    cached = exec;
    if (exec->core.device_ready) g_fwd_cache.insert(desc, pref, device, cached);
  }
  const GemmCore* core = &cached->core;
  p.desc_ = desc;
  p.sku_.op = desc.has_c ? "gemm.addmm" : "gemm.matmul";
  p.sku_.direction = Direction::kForward;
  p.sku_.dtype = desc.a.dtype;
  p.sku_.variant = core->variant;
  if (is_fp8(desc.a.dtype))
    p.sku_.variant = cat(dtype_name(desc.a.dtype), "x", dtype_name(desc.b.dtype), "-", dtype_name(desc.out.dtype), ".", p.sku_.variant);
  p.workspace_ = core->workspace;
  p.guarantee_.accumulator = core->compute_acc;
  p.guarantee_.math = desc.a.dtype == DType::f64 ? DType::f64 : DType::f32;
  p.guarantee_.determinism = Determinism::kRunToRun;
  p.guarantee_.tf32_inputs = core->tf32;
  p.guarantee_.split_k = core->split_k;
  p.operands_ = forward_operands(desc);
  if (Status s = resolve_operands<GemmArgs>(kOp, p.operands_); !s.ok()) return s;
  p.exec_ = std::move(cached);
  return p;
}

Status GemmPlan::can_implement(const GemmArgs& args) const { return check_plan_args(kOp, selected(), operands_, args); }

Status GemmPlan::run(cudaStream_t stream, Workspace ws, const GemmArgs& args) const {
  if (Status s = can_implement(args); !s.ok()) return s;
  GemmCore::RunArgs r;
  r.a = args.a.data, r.b = args.b.data, r.c = args.c.data, r.d = args.out.data;
  r.bias = args.bias.data;
  r.bias_stride = desc_.has_bias ? desc_.bias.stride[0] : 1;
  r.preact = args.preact.data;
  r.a_scale = static_cast<const float*>(args.a_scale.data), r.b_scale = static_cast<const float*>(args.b_scale.data);
  r.c_is_out = desc_.has_c && args.c.data == args.out.data && same_layout(args.c, args.out);
  r.aux = args.aux.data;
  r.bias_grad = args.bias_grad.data;
  return exec_->core.run(kOp, stream, ws, r);
}

// ------------------------------------------------------------------ backward plan
Result<GemmBackwardPlan> GemmBackwardPlan::select(const GemmBackwardDescriptor& desc, const PlanPreference& pref) {
  KernelSku sku;
  if (Status s = begin_select(kOpBwd, desc, pref, &sku, Backend::kCuBLASLt); !s.ok()) return s;
  if (Status s = check_folds(kOpBwd, desc); !s.ok()) return s;
  const int arch = sku.arch;
  if (is_fp8(desc.a.dtype) || is_fp8(desc.b.dtype))
    return error(StatusCode::kUnsupported, kOpBwd, ": fp8 GEMM has no backward (as torch._scaled_mm)");
  if (desc.grad_activation != GemmActivation::kNone || desc.has_bias_grad)
    return error(StatusCode::kUnsupported, kOpBwd, ": no backward for a GEMM with a backward epilogue (grad_activation / has_bias_grad)");
  auto make_plan = [&](std::shared_ptr<const detail::GemmBackwardExec> ex) -> Result<GemmBackwardPlan> {
    GemmBackwardPlan p;
    p.desc_ = desc;
    p.sku_ = sku;
    p.sku_.op = desc.has_c ? "gemm.addmm" : "gemm.matmul";
    p.sku_.direction = Direction::kBackward;
    p.sku_.dtype = desc.a.dtype;
    p.sku_.variant = cat("da:", ex->da.variant, "|db:", ex->db.variant);
    p.workspace_ = ex->workspace;
    p.guarantee_ = float_guarantee(desc.a.dtype);
    p.guarantee_.split_k = std::max(ex->da.split_k, ex->db.split_k);
    p.operands_ = backward_operands(desc, *ex);
    if (Status s = resolve_operands<GemmBackwardArgs>(kOpBwd, p.operands_); !s.ok()) return s;
    p.exec_ = std::move(ex);
    return p;
  };
  const int device = cache_device(arch);
  if (auto hit = g_bwd_cache.find(desc, pref, device)) return make_plan(std::move(hit));
  Resolved r;
  if (Status s = resolve(kOpBwd, desc, &r); !s.ok()) return s;
  const GemmCanon& f = r.canon;
  auto ex = std::make_shared<detail::GemmBackwardExec>();
  ex->canon = f;
  ex->fwd = r.opt;
  const bool act = desc.activation != GemmActivation::kNone;
  if (desc.activation == GemmActivation::kGeluTanh || desc.activation == GemmActivation::kGeluErf)
    if (!desc.save_preactivation)
      return error(StatusCode::kInvalidProblem, kOpBwd, ": the backward of ", enum_name(desc.activation),
                   " needs the forward's preact (set save_preactivation)");
  // gradient layouts: row-major contiguous in the forward operand's shape
  ex->a_grad = desc.a.contiguous();
  ex->b_grad = desc.b.contiguous();
  if (desc.has_bias) ex->bias_grad = desc.bias.contiguous();
  const size_t es = dtype_size(desc.out.dtype);
  int64_t off = 0;
  auto take = [&](int64_t bytes) {
    const int64_t at = off;
    off += (bytes + 255) / 256 * 256;
    return at;
  };
  // dZ strides over the canonical axes: the buffer (preact strides) or d_out itself (out strides)
  const int zs = act ? kOpP : kOpD;
  if (act) ex->dz_offset = take(desc.out.numel() * static_cast<int64_t>(es));
  ex->scratch_offset = off;

  // a's and b's gradient strides over the canonical axes (0 where the operand broadcasts)
  GemmDescriptor gd = desc;
  gd.a = ex->a_grad, gd.b = ex->b_grad, gd.has_c = false, gd.beta = 0.0, gd.has_bias = false;
  gd.activation = GemmActivation::kNone, gd.save_preactivation = false;
  Resolved rg;
  if (Status s = resolve(kOpBwd, gd, &rg); !s.ok()) return s;
  const GemmCanon& g = rg.canon;  // same axes as f, strides of the contiguous gradients

  GemmCoreOptions o;
  o.alpha = desc.alpha;
  o.pointer_alignment = std::min(desc.pointer_alignment, 16);
  o.reduced_precision_reduction = desc.allow_reduced_precision_reduction;
  o.epilogue = GemmEpilogueImpl::kAuto;
  // da = alpha · dZ ⊗ bᵀ: M'=M, N'=K, K'=N
  {
    GemmCanon c{};
    c.a_dtype = c.b_dtype = c.d_dtype = desc.out.dtype;
    c.nb = f.nb;
    for (int i = 0; i < f.nb; ++i) {
      c.batch[i].ext = f.batch[i].ext;
      c.batch[i].s[kOpA] = f.batch[i].s[zs];
      c.batch[i].s[kOpB] = f.batch[i].s[kOpB];
      c.batch[i].s[kOpD] = g.batch[i].s[kOpA];
    }
    c.m.ext = f.m.ext, c.m.s[kOpA] = f.m.s[zs], c.m.s[kOpD] = g.m.s[kOpA];
    c.n.ext = f.k.ext, c.n.s[kOpB] = f.k.s[kOpB], c.n.s[kOpD] = g.k.s[kOpA];
    c.k.ext = f.n.ext, c.k.s[kOpA] = f.n.s[zs], c.k.s[kOpB] = f.n.s[kOpB];
    // a 1-D b has N = 1 with no stride; a 1-D a has M = 1 likewise
    auto core = GemmCore::select(kOpBwd, c, o, pref, arch);
    if (!core) return core.status();
    ex->da = std::move(*core);
  }
  // db = alpha · aᵀ ⊗ dZ: M'=K, N'=N, K'=M
  {
    GemmCanon c{};
    c.a_dtype = c.b_dtype = c.d_dtype = desc.out.dtype;
    c.nb = f.nb;
    for (int i = 0; i < f.nb; ++i) {
      c.batch[i].ext = f.batch[i].ext;
      c.batch[i].s[kOpA] = f.batch[i].s[kOpA];
      c.batch[i].s[kOpB] = f.batch[i].s[zs];
      c.batch[i].s[kOpD] = g.batch[i].s[kOpB];
    }
    c.m.ext = f.k.ext, c.m.s[kOpA] = f.k.s[kOpA], c.m.s[kOpD] = g.k.s[kOpB];
    c.n.ext = f.n.ext, c.n.s[kOpB] = f.n.s[zs], c.n.s[kOpD] = g.n.s[kOpB];
    c.k.ext = f.m.ext, c.k.s[kOpA] = f.m.s[kOpA], c.k.s[kOpB] = f.m.s[zs];
    auto core = GemmCore::select(kOpBwd, c, o, pref, arch);
    if (!core) return core.status();
    ex->db = std::move(*core);
  }
  // dc: beta·dZ for a full-shape c, beta·column sums for a c that is a row vector [N] / [1, N]
  if (desc.has_c) {
    ex->c_grad = desc.c.contiguous();
    ex->dc_full = desc.c.numel() == desc.out.numel();  // broadcastable + same numel: same shape up to leading 1s
    if (!ex->dc_full) {
      bool row = desc.c.rank >= 1 && desc.c.shape[desc.c.rank - 1] == f.n.ext;
      for (int j = 0; j + 1 < desc.c.rank; ++j) row = row && desc.c.shape[j] == 1;
      if (row) {
        ex->dc_colsum = true;
      } else {
        auto rp = ReduceToShapePlan::select(
            ReduceToShapeDescriptor::make(ReduceOp::kSum, desc.out.dtype, std::span<const int64_t>(desc.out.shape, desc.out.rank),
                                          desc.c.dtype, std::span<const int64_t>(desc.c.shape, desc.c.rank)),
            pref);
        if (!rp) return rp.status();
        ex->dc_reduce = *rp;
        if (desc.beta != 1.0 && desc.beta != 0.0) {
          auto sp = ElementwisePlan::select(
              ElementwiseDescriptor::make(EwOp::mul, {EwOperand::tensor(ex->c_grad), EwOperand::scalar(desc.beta)}), pref);
          if (!sp) return sp.status();
          ex->dc_scale = *sp;
        }
      }
    }
  }
  int64_t rows = f.m.ext;
  for (int i = 0; i < f.nb; ++i)
    if (f.batch[i].s[kOpD] != 0) rows *= f.batch[i].ext;
  ex->colsum_ws = (desc.has_bias || ex->dc_colsum) ? detail::pointwise_colsum_workspace(desc.out.dtype, rows, f.n.ext) : 0;
  const size_t scratch = std::max({ex->da.workspace, ex->db.workspace, ex->colsum_ws,
                                   ex->dc_reduce ? ex->dc_reduce->workspace_size() : size_t{0}});
  ex->workspace = static_cast<size_t>(off) + scratch;

  if (ex->da.device_ready && ex->db.device_ready) g_bwd_cache.insert(desc, pref, device, ex);
  return make_plan(std::move(ex));
}

Status GemmBackwardPlan::can_implement(const GemmBackwardArgs& args) const {
  if (Status s = check_plan_args(kOpBwd, selected(), operands_, args); !s.ok()) return s;
  const GemmDescriptor& d = desc_;
  if (args.dbias.data && !d.has_bias) return error(StatusCode::kInvalidProblem, kOpBwd, ": dbias given but the forward has no bias");
  if (args.dc.data && !d.has_c) return error(StatusCode::kInvalidProblem, kOpBwd, ": dc given but the forward has no c");
  // da needs b, db needs a (each optional otherwise)
  if (args.da.data && args.b.data == nullptr && d.b.numel() != 0)
    return error(StatusCode::kInvalidProblem, kOpBwd, ": b is missing (da needs it)");
  if (args.db.data && args.a.data == nullptr && d.a.numel() != 0)
    return error(StatusCode::kInvalidProblem, kOpBwd, ": a is missing (db needs it)");
  return {};
}

Status GemmBackwardPlan::run(cudaStream_t stream, Workspace ws, const GemmBackwardArgs& args) const {
  if (Status s = can_implement(args); !s.ok()) return s;
  if (writes_nothing(operands_, args)) return {};
  const detail::GemmBackwardExec& ex = *exec_;
  const GemmDescriptor& d = desc_;
  if (Status s = check_workspace(kOpBwd, ws, ex.workspace); !s.ok()) return s;
  const GemmCanon& f = ex.canon;
  const DType dt = d.out.dtype;
  char* base = static_cast<char*>(ws.ptr);
  Workspace scratch{base + ex.scratch_offset, ws.bytes - static_cast<size_t>(ex.scratch_offset)};

  // out-shaped pointwise view over [kept batch..., M, N]
  auto view = [&](detail::PointwiseGeometry& pg, int so, int ss, int sx) { detail::pointwise_axes(f, so, ss, sx, pg); };
  const bool act = d.activation != GemmActivation::kNone;
  const void* dz = args.d_out.data;
  const int zs = act ? kOpP : kOpD;
  if (act) {
    detail::PointwiseGeometry pg;
    const bool relu = d.activation == GemmActivation::kRelu;
    view(pg, kOpP, kOpD, relu ? kOpD : kOpP);
    pg.out = base + ex.dz_offset;
    pg.src = args.d_out.data;
    pg.aux = const_cast<void*>(relu ? args.out.data : args.preact.data);
    pg.act = static_cast<int>(d.activation);
    pg.backward = true;
    // dbias rides along with dZ's pass; the GEMMs below do not touch the scratch it used
    if (Status s = args.dbias.data ? detail::launch_pointwise_colsum(dt, pg, args.dbias.data, scratch.ptr, stream)
                                   : detail::launch_pointwise(dt, pg, stream);
        !s.ok())
      return s;
    dz = pg.out;
  }
  if (args.da.data) {
    GemmCore::RunArgs r;
    r.a = dz, r.b = args.b.data, r.d = args.da.data;
    if (Status s = ex.da.run(kOpBwd, stream, scratch, r); !s.ok()) return s;
  }
  if (args.db.data) {
    GemmCore::RunArgs r;
    r.a = args.a.data, r.b = dz, r.d = args.db.data;
    if (Status s = ex.db.run(kOpBwd, stream, scratch, r); !s.ok()) return s;
  }
  auto column_sum = [&](void* dst, double scale) {
    detail::PointwiseGeometry pg;
    view(pg, zs, zs, zs);
    return detail::launch_column_sum_over(dt, pg, dz, dst, scale, scratch.ptr, stream);
  };
  if (args.dbias.data && !act)
    if (Status s = column_sum(args.dbias.data, 1.0); !s.ok()) return s;
  if (args.dc.data && ex.dc_reduce) {
    if (d.beta == 0.0)  // dc = 0 (c's gradient layout is contiguous)
      return cuda_status(cudaMemsetAsync(args.dc.data, 0, static_cast<size_t>(args.dc.numel()) * dtype_size(args.dc.dtype), stream), kOpBwd);
    ReduceToShapeArgs ra;
    ra.x = act ? TensorRef::make(dz, dt, std::span<const int64_t>(d.out.shape, d.out.rank)) : args.d_out;
    ra.y = args.dc;
    if (Status s = ex.dc_reduce->run(stream, scratch, ra); !s.ok()) return s;
    if (ex.dc_scale) {
      ElementwiseArgs sa;
      sa.in[0] = args.dc.as_ref();
      sa.out = args.dc;
      if (Status s = ex.dc_scale->run(stream, {}, sa); !s.ok()) return s;
    }
  } else if (args.dc.data) {
    const bool beta0 = d.beta == 0.0;
    if (ex.dc_colsum && !beta0) {
      if (Status s = column_sum(args.dc.data, d.beta); !s.ok()) return s;
    } else {
      // dc (c's contiguous layout == out's contiguous layout when full) = beta·dZ, or zeros
      detail::PointwiseGeometry pg;
      if (ex.dc_colsum) {
        pg.rank = 1, pg.ext[0] = f.n.ext, pg.s_out[0] = 1, pg.numel = f.n.ext;
      } else {
        view(pg, kOpP, zs, zs);
      }
      pg.out = args.dc.data;
      pg.src = beta0 ? nullptr : dz;
      pg.src_scale = d.beta;
      if (Status s = detail::launch_pointwise(dt, pg, stream); !s.ok()) return s;
    }
  }
  return {};
}

}  // namespace baracuda
