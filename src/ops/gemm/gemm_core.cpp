// GemmCore: canonical GEMM -> packing steps + cuBLASLt descriptors + the chosen algorithm.
#include "ops/gemm/gemm_core.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "backends/cublaslt/cublaslt.hpp"
#include "core/arch.hpp"
#include "core/cuda_check.hpp"
#include "core/validate.hpp"

namespace baracuda::detail {

namespace {

constexpr size_t kMaxLtWorkspace = size_t{32} << 20;  // cuBLAS's recommendation for Hopper
constexpr int64_t kWsAlign = 256;

int64_t round_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

bool is_summed(const GemmAxis& x) { return x.s[kOpD] == 0 && x.ext > 1; }

bool can_merge(const GemmAxis& outer, const GemmAxis& inner) {
  if (is_summed(outer) != is_summed(inner)) return false;
  for (int j = 0; j < kGemmOperands; ++j)
    if (outer.s[j] != inner.ext * inner.s[j]) return false;
  return true;
}

// A matrix of rows x cols with element strides (sr, sc) as cuBLASLt sees it (column-major,
// op N or T). False when it cannot: no unit stride on either axis, or ld < the stored rows.
bool lt_matrix(int64_t rows, int64_t cols, int64_t sr, int64_t sc, bool* trans, int64_t* ld) {
  if (rows == 1) sr = 1;
  if (cols == 1) sc = 1;
  if (sr == 1 && (cols == 1 || sc >= std::max<int64_t>(rows, 1))) {
    *trans = false;
    *ld = cols == 1 ? std::max<int64_t>(rows, 1) : sc;
    return true;
  }
  if (sc == 1 && (rows == 1 || sr >= std::max<int64_t>(cols, 1))) {
    *trans = true;
    *ld = rows == 1 ? std::max<int64_t>(cols, 1) : sr;
    return true;
  }
  return false;
}

// K' = K · Π(summed extents) addressed with one stride for operand j, if the strides nest.
bool fold_k(const GemmCanon& c, int j, int64_t* k_total, int64_t* k_stride) {
  int64_t ext = c.k.ext, s = c.k.s[j];
  bool ok = true;
  for (int i = c.nb - 1; i >= 0; --i) {
    if (!is_summed(c.batch[i])) continue;
    if (c.batch[i].s[j] != ext * s && !(ext == 1)) ok = false;
    if (ext == 1) s = c.batch[i].s[j];  // K == 1: the summed axis alone sets the stride
    ext *= c.batch[i].ext;
  }
  *k_total = ext;
  *k_stride = s;
  return ok;
}

int64_t lowbit_bytes(int64_t elems, size_t esize) {
  const uint64_t v = static_cast<uint64_t>(elems < 0 ? -elems : elems) * esize;
  if (v == 0) return 256;
  return std::min<int64_t>(256, static_cast<int64_t>(v & (~v + 1)));
}

template <class T>
Status set_desc(std::string_view op, cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const T& v) {
  return cublaslt::lt_status(cublasLtMatmulDescSetAttribute(d, a, &v, sizeof v), op, "cublasLtMatmulDescSetAttribute");
}
template <class T>
Status set_layout(std::string_view op, cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t a, const T& v) {
  return cublaslt::lt_status(cublasLtMatrixLayoutSetAttribute(l, a, &v, sizeof v), op, "cublasLtMatrixLayoutSetAttribute");
}
template <class T>
Status set_pref(std::string_view op, cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t a, const T& v) {
  return cublaslt::lt_status(cublasLtMatmulPreferenceSetAttribute(p, a, &v, sizeof v), op,
                             "cublasLtMatmulPreferenceSetAttribute");
}

bool is_fp8(DType t) { return t == DType::f8e4m3 || t == DType::f8e5m2; }

// Contiguous strides over the listed axes (extent, materialised?) in order, innermost last.
// Axes not materialised get stride 0.
void contiguous_over(const int64_t* ext, const bool* keep, int n, int64_t* stride) {
  int64_t s = 1;
  for (int i = n - 1; i >= 0; --i) {
    stride[i] = keep[i] ? s : 0;
    if (keep[i]) s *= ext[i];
  }
}

// A pack (strided copy) of `n` axes: src strides -> dst strides, both over extents `ext`.
Result<PackStep> make_pack(std::string_view op, int which, DType dt, int n, const int64_t* ext, const int64_t* src_s,
                           const int64_t* dst_s, int64_t ws_offset, const PlanPreference& pref) {
  PackStep p;
  p.which = which;
  p.ws_offset = ws_offset;
  // drop extent-1 axes (fewer axes for the copy to walk)
  int r = 0;
  int64_t e[kMaxRank * 2], ss[kMaxRank * 2], ds[kMaxRank * 2];
  for (int i = 0; i < n; ++i) {
    if (ext[i] == 1 || dst_s[i] == 0) continue;  // dst stride 0: an axis the packed copy does not materialise
    e[r] = ext[i];
    ss[r] = src_s[i];
    ds[r] = dst_s[i];
    ++r;
  }
  if (r == 0) {
    e[0] = 1;
    ss[0] = ds[0] = 1;
    r = 1;
  }
  if (r > kMaxRank)
    return error(StatusCode::kUnsupported, op, ": an operand needs packing over ", r, " axes (at most ", kMaxRank, ")");
  p.src = TensorLayout::make(dt, std::span<const int64_t>(e, r), std::span<const int64_t>(ss, r));
  p.dst = TensorLayout::make(dt, std::span<const int64_t>(e, r), std::span<const int64_t>(ds, r));
  PlanPreference pp = pref;
  pp.forced_backend = Backend::kAny;
  auto plan = CopyPlan::select(CopyDescriptor::make(dt, std::span<const int64_t>(e, r)), pp);
  if (!plan) return plan.status();
  p.plan = std::move(*plan);
  return p;
}

}  // namespace

bool same_layout(const TensorLayout& x, const TensorLayout& y) {
  if (x.dtype != y.dtype || x.rank != y.rank) return false;
  for (int d = 0; d < x.rank; ++d) {
    if (x.shape[d] != y.shape[d]) return false;
    if (x.shape[d] > 1 && x.stride[d] != y.stride[d]) return false;
  }
  return true;
}

// One operand view against the layout the plan was selected for.
Status check_operand(std::string_view op, const char* name, const TensorLayout& got, const void* data,
                     const TensorLayout& want, int alignment) {
  if (Status s = check_view(op, name, got, data, want.dtype, std::span<const int64_t>(want.shape, static_cast<size_t>(std::max(0, want.rank)))); !s.ok()) return s;
  if (!same_layout(got, want))
    return error(StatusCode::kInvalidProblem, op, ": ", name, " strides ", shape_string(std::span<const int64_t>(got.stride, got.rank)),
                 " differ from the descriptor's ", shape_string(std::span<const int64_t>(want.stride, want.rank)));
  if (got.numel() > 0 && reinterpret_cast<uintptr_t>(data) % static_cast<uintptr_t>(alignment) != 0)
    return error(StatusCode::kMisalignedOperand, op, ": ", name, " data ", data, " is not aligned to the descriptor's pointer_alignment = ",
                 alignment, " bytes");
  return {};
}


void pointwise_axes(const GemmCanon& c, int so, int ss, int sx, PointwiseGeometry& g) {
  int n = 0;
  auto put = [&](const GemmAxis& x) {
    g.ext[n] = x.ext, g.s_out[n] = x.s[so], g.s_src[n] = x.s[ss], g.s_aux[n] = x.s[sx];
    ++n;
  };
  for (int i = 0; i < c.nb; ++i)
    if (c.batch[i].s[kOpD] != 0 && c.batch[i].ext != 1) put(c.batch[i]);  // summed axes are not out's
  put(c.m);
  put(c.n);
  g.rank = n;
  g.numel = 1;
  for (int i = 0; i < n; ++i) g.numel *= g.ext[i];
}

void simplify(GemmCanon& c) {
  int w = 0;
  for (int i = 0; i < c.nb; ++i) {
    const GemmAxis& x = c.batch[i];
    if (x.ext == 1) continue;
    if (w > 0 && can_merge(c.batch[w - 1], x)) {
      c.batch[w - 1].ext *= x.ext;
      c.batch[w - 1].s = x.s;
    } else {
      c.batch[w++] = x;
    }
  }
  c.nb = w;
}

// ---------------------------------------------------------------- GemmCore::build, step by step
namespace {

// What the steps of GemmCore::build hand on to each other, besides the GemmCore they fill in.
struct BuildContext {
  bool fp8 = false;
  size_t es_a = 0, es_b = 0, es_d = 0;  // element bytes of a, b and d
  int64_t M = 0, N = 0;
  int64_t out_rows = 0;  // rows of the output as the column sum sees them (kept batch axes x M)
  // K' = K · Π(summed extents) and a's and b's strides along it
  int64_t k_total = 0, a_k = 0, b_k = 0;
  // the batch axes the output keeps (outer -> inner) and those it sums
  int nkept = 0, nsum = 0;
  GemmAxis kept[kMaxRank], summed[kMaxRank];
  // a's stride along M and b's along N (the packed ones once packed)
  int64_t a_m = 0, b_n = 0;
  // a, b and d as cuBLASLt matrices: transposed?, leading dimension
  bool t = false, ta = false, tb = false;
  int64_t ld_d = 0, lda = 0, ldb = 0;
  int64_t off = 0;  // workspace bytes laid out so far
  // cuBLASLt's strided batch: count, and each operand's stride along it
  int64_t lt_batch = 1;
  std::array<int64_t, kGemmOperands> lt_bs{};
  // cuBLASLt's operands (A, B) = (b, a) when swapped: element types, transposes, leading dimensions
  cudaDataType_t ta_t{}, tb_t{}, td_t{};
  bool lt_ta = false, lt_tb = false;
  int64_t lt_lda = 0, lt_ldb = 0;
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  int64_t palign = 0;  // the pointer alignment the options promise, in [1, 256]

  // Lays out `bytes` of workspace (256-aligned); returns its offset.
  int64_t take(int64_t bytes) {
    const int64_t at = off;
    off += round_up(bytes, kWsAlign);
    return at;
  }
};

// a (b) as a cuBLASLt operand at its current strides, setting ta / lda (tb / ldb); false when it cannot be.
bool place_a(const GemmCore& g, BuildContext& ctx) {
  return g.swap ? lt_matrix(ctx.k_total, ctx.M, ctx.a_k, ctx.a_m, &ctx.ta, &ctx.lda)
                : lt_matrix(ctx.M, ctx.k_total, ctx.a_m, ctx.a_k, &ctx.ta, &ctx.lda);
}
bool place_b(const GemmCore& g, BuildContext& ctx) {
  return g.swap ? lt_matrix(ctx.N, ctx.k_total, ctx.b_n, ctx.b_k, &ctx.tb, &ctx.ldb)
                : lt_matrix(ctx.k_total, ctx.N, ctx.b_k, ctx.b_n, &ctx.tb, &ctx.ldb);
}

// Accumulate type, TF32, empty output / empty sum (K' = 0), simplified batch axes, and the sizes later steps use.
void normalize(const PlanPreference& pref, GemmCore& g, BuildContext& ctx) {
  GemmCanon& c = g.canon;
  ctx.fp8 = is_fp8(c.a_dtype);
  g.compute_acc = c.a_dtype == DType::f64 ? DType::f64 : DType::f32;
  g.tf32 = c.a_dtype == DType::f32 && pref.allow_tf32;

  for (int i = 0; i < c.nb; ++i) {
    if (c.batch[i].ext == 0) (is_summed(c.batch[i]) || c.batch[i].s[kOpD] == 0 ? g.k_zero : g.empty) = true;
  }
  if (c.m.ext == 0 || c.n.ext == 0) g.empty = true;
  if (c.k.ext == 0) g.k_zero = true;
  simplify(c);
  // A zero-extent axis the output does not have makes the sum empty (K' = 0).
  for (int i = 0; i < c.nb; ++i)
    if (c.batch[i].ext == 0 && c.batch[i].s[kOpD] == 0) g.k_zero = true;

  ctx.es_a = dtype_size(c.a_dtype), ctx.es_b = dtype_size(c.b_dtype), ctx.es_d = dtype_size(c.d_dtype);
  ctx.M = c.m.ext, ctx.N = c.n.ext;

  // rows of the output as the column sum sees them (kept batch axes x M)
  ctx.out_rows = ctx.M;
  for (int i = 0; i < c.nb; ++i)
    if (!is_summed(c.batch[i])) ctx.out_rows *= c.batch[i].ext;
  if (ctx.out_rows == 0) g.empty = true;  // a kept batch axis of extent 0: out has no element (never a broadcast)
}

// Without a cuBLASLt call (empty output, or K' = 0) the epilogue kernel does all the work.
void plan_pointwise_only(GemmCore& g, const BuildContext& ctx) {
  g.separate_epilogue = !g.empty;
  g.variant = g.empty ? "empty" : "k0.pointwise";
  g.device_ready = true;
  if (g.opt.bias_grad) {  // (zeros when the output has no rows)
    g.colsum_ws_offset = 0;
    g.workspace = pointwise_colsum_workspace(g.canon.d_dtype, ctx.out_rows, ctx.N);
  }
}

// K folding: summed batch axes join K where a's and b's strides nest (else that operand is packed).
void fold_summed_axes(GemmCore& g, BuildContext& ctx) {
  const GemmCanon& c = g.canon;
  const bool a_folds = fold_k(c, kOpA, &ctx.k_total, &ctx.a_k);
  const bool b_folds = fold_k(c, kOpB, &ctx.k_total, &ctx.b_k);
  g.pack_a = !a_folds;
  g.pack_b = !b_folds;
  for (int i = 0; i < c.nb; ++i)
    if (!is_summed(c.batch[i])) ctx.kept[ctx.nkept++] = c.batch[i];
  for (int i = 0; i < c.nb; ++i)
    if (is_summed(c.batch[i])) ctx.summed[ctx.nsum++] = c.batch[i];
}

// Orientation from d: row-major d -> cuBLASLt computes dᵀ = bᵀ·aᵀ (swap); d is packed when not addressable.
Status choose_orientation(std::string_view op, GemmCore& g, BuildContext& ctx) {
  const GemmCanon& c = g.canon;
  const int64_t M = ctx.M, N = ctx.N;
  if (lt_matrix(N, M, c.n.s[kOpD], c.m.s[kOpD], &ctx.t, &ctx.ld_d) && !ctx.t) g.swap = true;
  else if (lt_matrix(M, N, c.m.s[kOpD], c.n.s[kOpD], &ctx.t, &ctx.ld_d) && !ctx.t) g.swap = false;
  else g.pack_d = true;
  for (int i = 0; i < ctx.nkept; ++i)
    if (ctx.kept[i].s[kOpD] < 0) g.pack_d = true;
  if (g.pack_d) g.swap = true;
  if (ctx.fp8 && !g.swap)
    return error(StatusCode::kUnsupported, op, ": fp8 needs a row-major out (unit stride along N)");
  return {};
}

// Whether a and b are packed: cuBLASLt cannot address them as they are, or a kept batch stride is negative.
void place_operands(GemmCore& g, BuildContext& ctx) {
  const GemmCanon& c = g.canon;
  ctx.a_m = c.m.s[kOpA], ctx.b_n = c.n.s[kOpB];
  if (!g.pack_a && !place_a(g, ctx)) g.pack_a = true;
  if (!g.pack_b && !place_b(g, ctx)) g.pack_b = true;
  for (int i = 0; i < ctx.nkept; ++i) {
    if (ctx.kept[i].s[kOpA] < 0) g.pack_a = true;
    if (ctx.kept[i].s[kOpB] < 0) g.pack_b = true;
  }
}

// a's pack (when packed): a copied into the workspace as (kept..., M, summed..., K) row-major, placed again.
Status pack_a_operand(std::string_view op, const PlanPreference& pref, GemmCore& g, BuildContext& ctx) {
  if (!g.pack_a) return {};
  const GemmCanon& c = g.canon;
  int64_t ext[kMaxRank * 2 + 2], src[kMaxRank * 2 + 2], dst[kMaxRank * 2 + 2];
  bool keep[kMaxRank * 2 + 2];
  int n = 0;
  for (int i = 0; i < ctx.nkept; ++i, ++n) {
    ext[n] = ctx.kept[i].ext;
    src[n] = ctx.kept[i].s[kOpA];
    keep[n] = src[n] != 0;
  }
  ext[n] = ctx.M, src[n] = c.m.s[kOpA], keep[n] = true, ++n;
  for (int i = 0; i < ctx.nsum; ++i, ++n) ext[n] = ctx.summed[i].ext, src[n] = ctx.summed[i].s[kOpA], keep[n] = true;
  ext[n] = c.k.ext, src[n] = c.k.s[kOpA], keep[n] = true, ++n;
  contiguous_over(ext, keep, n, dst);
  int64_t elems = 1;
  for (int i = 0; i < n; ++i) elems *= keep[i] ? ext[i] : 1;
  auto p = make_pack(op, kOpA, c.a_dtype, n, ext, src, dst, ctx.take(elems * ctx.es_a), pref);
  if (!p) return p.status();
  g.pre.push_back(std::move(*p));
  for (int i = 0; i < ctx.nkept; ++i) ctx.kept[i].s[kOpA] = dst[i];
  ctx.a_m = ctx.k_total;
  ctx.a_k = 1;
  if (!place_a(g, ctx)) return error(StatusCode::kInternal, op, ": packed a is not addressable");
  return {};
}

// b's pack (when packed): (kept..., summed..., K, N) row-major, or N before K for fp8, placed again.
Status pack_b_operand(std::string_view op, const PlanPreference& pref, GemmCore& g, BuildContext& ctx) {
  if (!g.pack_b) return {};
  const GemmCanon& c = g.canon;
  const int64_t N = ctx.N;
  int64_t ext[kMaxRank * 2 + 2], src[kMaxRank * 2 + 2], dst[kMaxRank * 2 + 2];
  bool keep[kMaxRank * 2 + 2];
  int n = 0;
  for (int i = 0; i < ctx.nkept; ++i, ++n) {
    ext[n] = ctx.kept[i].ext;
    src[n] = ctx.kept[i].s[kOpB];
    keep[n] = src[n] != 0;
  }
  // fp8 wants b K-major ([.., N, K] row-major); everything else [.., K, N] row-major
  if (ctx.fp8) {
    ext[n] = N, src[n] = c.n.s[kOpB], keep[n] = true, ++n;
    for (int i = 0; i < ctx.nsum; ++i, ++n) ext[n] = ctx.summed[i].ext, src[n] = ctx.summed[i].s[kOpB], keep[n] = true;
    ext[n] = c.k.ext, src[n] = c.k.s[kOpB], keep[n] = true, ++n;
  } else {
    for (int i = 0; i < ctx.nsum; ++i, ++n) ext[n] = ctx.summed[i].ext, src[n] = ctx.summed[i].s[kOpB], keep[n] = true;
    ext[n] = c.k.ext, src[n] = c.k.s[kOpB], keep[n] = true, ++n;
    ext[n] = N, src[n] = c.n.s[kOpB], keep[n] = true, ++n;
  }
  contiguous_over(ext, keep, n, dst);
  int64_t elems = 1;
  for (int i = 0; i < n; ++i) elems *= keep[i] ? ext[i] : 1;
  auto p = make_pack(op, kOpB, c.b_dtype, n, ext, src, dst, ctx.take(elems * ctx.es_b), pref);
  if (!p) return p.status();
  g.pre.push_back(std::move(*p));
  for (int i = 0; i < ctx.nkept; ++i) ctx.kept[i].s[kOpB] = dst[i];
  if (ctx.fp8) ctx.b_n = ctx.k_total, ctx.b_k = 1;
  else ctx.b_n = 1, ctx.b_k = N;
  if (!place_b(g, ctx)) return error(StatusCode::kInternal, op, ": packed b is not addressable");
  return {};
}

// The d target: out itself, or a row-major workspace buffer copied out afterwards; and the copy of c into it.
Status choose_d_target(std::string_view op, const PlanPreference& pref, GemmCore& g, BuildContext& ctx) {
  const GemmCanon& c = g.canon;
  const int64_t M = ctx.M, N = ctx.N;
  int64_t d_m = c.m.s[kOpD], d_n = c.n.s[kOpD];
  int64_t ext[kMaxRank + 2], dst_s[kMaxRank + 2], out_s[kMaxRank + 2], c_s[kMaxRank + 2];
  bool keep[kMaxRank + 2];
  int n = 0;
  for (int i = 0; i < ctx.nkept; ++i, ++n)
    ext[n] = ctx.kept[i].ext, out_s[n] = ctx.kept[i].s[kOpD], c_s[n] = ctx.kept[i].s[kOpC], keep[n] = true;
  ext[n] = M, out_s[n] = c.m.s[kOpD], c_s[n] = c.m.s[kOpC], keep[n] = true, ++n;
  ext[n] = N, out_s[n] = c.n.s[kOpD], c_s[n] = c.n.s[kOpC], keep[n] = true, ++n;
  if (g.pack_d) {
    contiguous_over(ext, keep, n, dst_s);
    int64_t elems = 1;
    for (int i = 0; i < n; ++i) elems *= ext[i];
    g.d_ws_offset = ctx.take(elems * ctx.es_d);
    auto p = make_pack(op, kOpD, c.d_dtype, n, ext, dst_s, out_s, g.d_ws_offset, pref);
    if (!p) return p.status();
    g.post.push_back(std::move(*p));
    for (int i = 0; i < ctx.nkept; ++i) ctx.kept[i].s[kOpD] = dst_s[i];
    d_m = N;
    d_n = 1;
  } else {
    std::copy(out_s, out_s + n, dst_s);
  }
  if (!lt_matrix(N, M, d_n, d_m, &ctx.t, &ctx.ld_d) || ctx.t) {
    if (!lt_matrix(M, N, d_m, d_n, &ctx.t, &ctx.ld_d) || ctx.t) return error(StatusCode::kInternal, op, ": out is not addressable");
  }
  if (g.opt.use_c) {
    // c is copied into the d target (broadcast materialised) unless it is the target itself
    auto p = make_pack(op, kOpC, c.d_dtype, n, ext, c_s, dst_s, g.pack_d ? g.d_ws_offset : -1, pref);
    if (!p) return p.status();
    g.pre.insert(g.pre.begin(), std::move(*p));
    g.c_copy_needed_unless_inplace = !g.pack_d;
  }
  return {};
}

// Batch: the innermost kept axis becomes cuBLASLt's strided batch, the rest loop on the host.
void choose_lt_batch(GemmCore& g, BuildContext& ctx) {
  if (ctx.nkept > 0) {
    const GemmAxis& in = ctx.kept[ctx.nkept - 1];
    const bool nonneg = in.s[kOpA] >= 0 && in.s[kOpB] >= 0 && in.s[kOpD] >= 0 && in.s[kOpP] >= 0;
    if (nonneg && in.ext <= std::numeric_limits<int32_t>::max()) {
      ctx.lt_batch = in.ext;
      ctx.lt_bs = in.s;
      --ctx.nkept;
    }
  }
  g.nloop = ctx.nkept;
  std::copy(ctx.kept, ctx.kept + ctx.nkept, g.loop);
}

// aux (preact written, or the grad epilogue's act input read) addressable by cuBLASLt: ld = N
bool aux_addressable(const GemmCore& g, const BuildContext& ctx) {
  const GemmCanon& c = g.canon;
  const int64_t M = ctx.M, N = ctx.N;
  bool ok = N % 8 == 0 && (M == 1 || c.m.s[kOpP] == N) && ctx.lt_bs[kOpP] % 8 == 0;
  for (int i = 0; i < g.nloop; ++i) ok = ok && g.loop[i].s[kOpP] % 8 == 0;
  return ok;
}

// Backward epilogue (act', bias_grad): fused as cuBLASLt's DGELU(_BGRAD) only when asked and exact, else separate.
Status choose_grad_epilogue(std::string_view op, GemmCore& g, BuildContext& ctx) {
  const GemmCanon& c = g.canon;
  const GemmCoreOptions& opt = g.opt;
  // cuBLASLt's DGELU(_BGRAD) is the tanh form; its DRELU reads a bit-mask aux, not a tensor;
  // its bias gradient covers one matrix (no batch)
  // f32/f64: cuBLASLt's dGELU is not accurate to f32 (measured on the H200: 25x the error of a
  // plain f32 evaluation), so only 16-bit outs fuse
  const bool half_out = c.d_dtype == DType::f16 || c.d_dtype == DType::bf16;
  bool fusable = g.swap && !g.pack_d && opt.grad_act == GemmActivation::kGeluTanh && half_out && aux_addressable(g, ctx) &&
                 (!opt.bias_grad || (ctx.lt_batch == 1 && g.nloop == 0));
  // kAuto without timing: separate, measured faster on the H200 (Llama-3 dgrad shapes: fused
  // DGELU_BGRAD 1.05-1.06x the time of GEMM + epilogue kernel + column sum)
  if (opt.epilogue != GemmEpilogueImpl::kFused) fusable = false;
  if (opt.epilogue == GemmEpilogueImpl::kFused && !fusable)
    return error(StatusCode::kUnsupported, op, ": epilogue_impl = fused, but cuBLASLt cannot fuse this backward epilogue (d",
                 enum_name(opt.grad_act), opt.bias_grad ? " + bias_grad" : "",
                 "; it fuses dgelu_tanh (+ bias_grad without batch) on a row-major f16/bf16 out with N % 8 == 0)");
  if (fusable) {
    g.fused_dact = true;
    g.fused_bgrad = opt.bias_grad;
  } else {
    g.separate_epilogue = true;
    if (opt.bias_grad) g.colsum_ws_offset = ctx.take(static_cast<int64_t>(pointwise_colsum_workspace(c.d_dtype, ctx.out_rows, ctx.N)));
  }
  return {};
}

// Forward epilogue (bias, act, preact): fused into cuBLASLt when it can express it exactly, else separate.
Status choose_forward_epilogue(std::string_view op, GemmCore& g, const BuildContext& ctx) {
  const GemmCanon& c = g.canon;
  const GemmCoreOptions& opt = g.opt;
  // f64: cuBLASLt's GELU epilogue is not f64-accurate (measured 1e-8 relative error on H200),
  // so activations on f64 run in the bespoke epilogue, in f64
  bool fusable = g.swap && !g.pack_d && opt.act != GemmActivation::kGeluErf &&
                 !(c.d_dtype == DType::f64 && opt.act != GemmActivation::kNone);
  // aux = preact, ld = N (row-major), needs N % 8 and batch strides % 8; relu's aux is a bitmask
  if (opt.save_preact) fusable = fusable && opt.act == GemmActivation::kGeluTanh && aux_addressable(g, ctx);
  if (opt.epilogue == GemmEpilogueImpl::kSeparate) fusable = false;
  if (opt.epilogue == GemmEpilogueImpl::kFused && !fusable)
    return error(StatusCode::kUnsupported, op, ": epilogue_impl = fused, but cuBLASLt cannot fuse this epilogue (",
                 enum_name(opt.act), opt.has_bias ? " + bias" : "", opt.save_preact ? " + preact" : "",
                 "; it fuses bias/relu/gelu-tanh on a row-major out, preact only for gelu-tanh with N % 8 == 0)");
  if (fusable) {
    g.fused_bias = opt.has_bias;
    g.fused_act = opt.act != GemmActivation::kNone;
    g.fused_aux = opt.save_preact;
  } else {
    g.separate_epilogue = true;
  }
  return {};
}

// Epilogue: the backward's or the forward's, whichever the options ask for (neither: nothing to decide).
Status choose_epilogue(std::string_view op, GemmCore& g, BuildContext& ctx) {
  const GemmCoreOptions& opt = g.opt;
  const bool want_grad = opt.grad_act != GemmActivation::kNone || opt.bias_grad;
  const bool want_epi = opt.has_bias || opt.act != GemmActivation::kNone || opt.save_preact || want_grad;
  if (want_grad) return choose_grad_epilogue(op, g, ctx);
  if (want_epi) return choose_forward_epilogue(op, g, ctx);
  return {};
}

// Whether cuBLASLt can be asked now (a device of the selected arch); if not, the core stays "lt.unresolved".
bool on_selected_device(int arch, GemmCore& g, const BuildContext& ctx) {
  int dev_arch = 0;
  std::string why;
  dev_arch = current_device_arch(&why);
  if (dev_arch == 0 || dev_arch != arch) {
    g.device_ready = false;
    g.variant = "lt.unresolved";
    g.workspace = static_cast<size_t>(ctx.off);
    return false;
  }
  return true;
}

// The cuBLASLt handle of the current device.
Status bind_handle(std::string_view op, GemmCore& g) {
  auto h = cublaslt::handle_for_current_device(op, &g.device);
  if (!h) return h.status();
  g.handle = *h;
  return {};
}

// Matmul descriptor: compute and scale types, cuBLASLt's (A, B) = (b, a) when swapped, and their transposes.
Status init_op_desc(std::string_view op, GemmCore& g, BuildContext& ctx) {
  const GemmCanon& c = g.canon;
  cublaslt::data_type(g.swap ? c.b_dtype : c.a_dtype, &ctx.ta_t);
  cublaslt::data_type(g.swap ? c.a_dtype : c.b_dtype, &ctx.tb_t);
  cublaslt::data_type(c.d_dtype, &ctx.td_t);
  const cublasComputeType_t ct = c.a_dtype == DType::f64 ? CUBLAS_COMPUTE_64F
                                 : g.tf32                ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                         : CUBLAS_COMPUTE_32F;
  const cudaDataType_t st = c.a_dtype == DType::f64 ? CUDA_R_64F : CUDA_R_32F;
  cublasLtMatmulDesc_t desc = &g.op_desc;
  if (Status s = cublaslt::lt_status(cublasLtMatmulDescInit(desc, ct, st), op, "cublasLtMatmulDescInit"); !s.ok()) return s;

  // cuBLASLt operands: (A, B) = (b, a) when swapped
  ctx.lt_ta = g.swap ? ctx.tb : ctx.ta, ctx.lt_tb = g.swap ? ctx.ta : ctx.tb;
  ctx.lt_lda = g.swap ? ctx.ldb : ctx.lda, ctx.lt_ldb = g.swap ? ctx.lda : ctx.ldb;
  const int32_t opa = ctx.lt_ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = ctx.lt_tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (ctx.fp8 && !(ctx.lt_ta && !ctx.lt_tb))
    return error(StatusCode::kUnsupported, op, ": fp8 needs a row-major a [M, K] and a K-major b (b [N, K] row-major with transpose_b)");
  if (Status s = set_desc(op, desc, CUBLASLT_MATMUL_DESC_TRANSA, opa); !s.ok()) return s;
  if (Status s = set_desc(op, desc, CUBLASLT_MATMUL_DESC_TRANSB, opb); !s.ok()) return s;
  return {};
}

// The cuBLASLt epilogue, with placeholder bias / aux pointers (their alignment, for the heuristic) and aux layout.
Status set_epilogue_attributes(std::string_view op, GemmCore& g, BuildContext& ctx) {
  const GemmCoreOptions& opt = g.opt;
  cublasLtMatmulDesc_t desc = &g.op_desc;
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  if (g.fused_act && opt.act == GemmActivation::kRelu) epi = g.fused_bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  else if (g.fused_act && opt.act == GemmActivation::kGeluTanh)
    epi = g.fused_aux ? (g.fused_bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX)
                      : (g.fused_bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU);
  else if (g.fused_bias) epi = CUBLASLT_EPILOGUE_BIAS;
  if (g.fused_dact) epi = g.fused_bgrad ? CUBLASLT_EPILOGUE_DGELU_BGRAD : CUBLASLT_EPILOGUE_DGELU;
  ctx.epi = epi;
  if (Status s = set_desc(op, desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epi); !s.ok()) return s;
  const int64_t palign = std::min(256, std::max(1, opt.pointer_alignment));
  ctx.palign = palign;
  if (g.fused_bias || g.fused_bgrad) {
    // the heuristic reads the pointer's value for its alignment; run() sets the real one
    const void* fake = reinterpret_cast<const void*>(static_cast<uintptr_t>(palign));
    if (Status s = set_desc(op, desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, fake); !s.ok()) return s;
  }
  if (g.fused_aux || g.fused_dact) {
    void* fake = reinterpret_cast<void*>(static_cast<uintptr_t>(palign));
    if (Status s = set_desc(op, desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, fake); !s.ok()) return s;
    const int64_t aux_ld = ctx.N;
    if (Status s = set_desc(op, desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, aux_ld); !s.ok()) return s;
    if (ctx.lt_batch > 1)
      if (Status s = set_desc(op, desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, ctx.lt_bs[kOpP]); !s.ok()) return s;
  }
  return {};
}

// fp8: placeholder scale pointers for the heuristic, and fast accumulation when the options ask for it.
Status set_fp8_attributes(std::string_view op, GemmCore& g, const BuildContext& ctx) {
  cublasLtMatmulDesc_t desc = &g.op_desc;
  if (ctx.fp8) {
    // the heuristic must see scale pointers to choose a scaling kernel; run() sets the real ones
    const void* fake = reinterpret_cast<const void*>(uintptr_t{16});
    if (Status s = set_desc(op, desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, fake); !s.ok()) return s;
    if (Status s = set_desc(op, desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, fake); !s.ok()) return s;
  }
  if (ctx.fp8 && g.opt.fp8_fast_accum) {
    const int8_t on = 1;
    if (Status s = set_desc(op, desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, on); !s.ok()) return s;
  }
  return {};
}

// The layouts of cuBLASLt's A, B and D (stored shape, before op), with the strided batch.
Status init_layouts(std::string_view op, GemmCore& g, const BuildContext& ctx) {
  const int64_t M = ctx.M, N = ctx.N, k_total = ctx.k_total, lt_batch = ctx.lt_batch;
  const std::array<int64_t, kGemmOperands>& lt_bs = ctx.lt_bs;
  // layouts (stored shape, before op)
  auto init_layout = [&](cublasLtMatrixLayoutOpaque_t* l, cudaDataType_t dt, int64_t rows, int64_t cols, bool tr,
                         int64_t ld, int64_t bstride) -> Status {
    const uint64_t r = static_cast<uint64_t>(tr ? cols : rows), cl = static_cast<uint64_t>(tr ? rows : cols);
    if (Status s = cublaslt::lt_status(cublasLtMatrixLayoutInit(l, dt, r, cl, ld), op, "cublasLtMatrixLayoutInit"); !s.ok())
      return s;
    if (lt_batch > 1) {
      const int32_t bc = static_cast<int32_t>(lt_batch);
      if (Status s = set_layout(op, l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, bc); !s.ok()) return s;
      if (Status s = set_layout(op, l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, bstride); !s.ok()) return s;
    }
    return {};
  };
  const int64_t lt_m = g.swap ? N : M, lt_n = g.swap ? M : N;
  if (Status s = init_layout(&g.lay_a, ctx.ta_t, lt_m, k_total, ctx.lt_ta, ctx.lt_lda, g.swap ? lt_bs[kOpB] : lt_bs[kOpA]); !s.ok())
    return s;
  if (Status s = init_layout(&g.lay_b, ctx.tb_t, k_total, lt_n, ctx.lt_tb, ctx.lt_ldb, g.swap ? lt_bs[kOpA] : lt_bs[kOpB]); !s.ok())
    return s;
  if (Status s = init_layout(&g.lay_d, ctx.td_t, lt_m, lt_n, false, ctx.ld_d, lt_bs[kOpD]); !s.ok()) return s;
  return {};
}

// Heuristic constraints: workspace left after the packs, alignments it may assume, split-K partials' type.
Status init_preference(std::string_view op, const PlanPreference& pref, const GemmCore& g, const BuildContext& ctx,
                       cublasLtMatmulPreference_t lp) {
  const GemmCanon& c = g.canon;
  // alignment the algorithm may assume: pointer guarantee, lowered by loop offsets
  auto align_of = [&](int j, bool packed, size_t es) {
    int64_t al = packed ? kWsAlign : ctx.palign;
    for (int i = 0; i < g.nloop; ++i) al = std::min(al, lowbit_bytes(g.loop[i].s[j], es));
    return static_cast<uint32_t>(al);
  };
  const uint32_t al_a = align_of(kOpA, g.pack_a, ctx.es_a), al_b = align_of(kOpB, g.pack_b, ctx.es_b);
  const uint32_t al_d = align_of(kOpD, g.pack_d, ctx.es_d);

  if (Status s = cublaslt::lt_status(cublasLtMatmulPreferenceInit(lp), op, "cublasLtMatmulPreferenceInit"); !s.ok())
    return s;
  const size_t budget = pref.max_workspace_bytes > static_cast<size_t>(ctx.off) ? pref.max_workspace_bytes - ctx.off : 0;
  const uint64_t max_ws = std::min(budget, kMaxLtWorkspace);
  if (Status s = set_pref(op, lp, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, max_ws); !s.ok()) return s;
  if (Status s = set_pref(op, lp, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, g.swap ? al_b : al_a); !s.ok()) return s;
  if (Status s = set_pref(op, lp, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, g.swap ? al_a : al_b); !s.ok()) return s;
  if (Status s = set_pref(op, lp, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, al_d); !s.ok()) return s;
  if (Status s = set_pref(op, lp, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, al_d); !s.ok()) return s;
  const bool half_out = c.d_dtype == DType::f16 || c.d_dtype == DType::bf16;
  if (half_out && !g.opt.reduced_precision_reduction) {
    // split-K partials stay in the compute type (f32), never in the 16-bit output
    const uint32_t mask = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    if (Status s = set_pref(op, lp, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, mask); !s.ok()) return s;
  }
  return {};
}

// The algorithm: the heuristic's best (its top `candidates` kept for autotune), its workspace after the packs.
Status choose_algorithm(std::string_view op, int candidates, GemmCore& g, BuildContext& ctx, cublasLtMatmulPreference_t lp) {
  const GemmCanon& c = g.canon;
  cublasLtMatmulDesc_t desc = &g.op_desc;
  constexpr int kMaxCandidates = 8;
  cublasLtMatmulHeuristicResult_t res_all[kMaxCandidates]{};
  const int want = std::clamp(candidates, 1, kMaxCandidates);
  int got = 0;
  cublasStatus_t hs =
      cublasLtMatmulAlgoGetHeuristic(g.handle, desc, &g.lay_a, &g.lay_b, &g.lay_d, &g.lay_d, lp, want, res_all, &got);
  const cublasLtMatmulHeuristicResult_t& res = res_all[0];
  if (hs != CUBLAS_STATUS_SUCCESS || got == 0)
    return error(StatusCode::kUnsupported, op, ": cuBLASLt has no algorithm for this problem (M=", ctx.M, " N=", ctx.N,
                 " K=", ctx.k_total, " batch=", ctx.lt_batch, ", ", dtype_name(c.a_dtype), " x ", dtype_name(c.b_dtype), " -> ",
                 dtype_name(c.d_dtype), ", epilogue ", static_cast<int>(ctx.epi), "): ", cublasLtGetStatusName(hs));
  g.algo = res.algo;
  g.algo_ws = res.workspaceSize;
  if (candidates > 1) {
    for (int i = 0; i < got; ++i) {
      if (res_all[i].state != CUBLAS_STATUS_SUCCESS) continue;
      g.candidates.push_back({res_all[i].algo, res_all[i].workspaceSize});
      g.algo_ws = std::max(g.algo_ws, res_all[i].workspaceSize);  // the workspace fits every candidate while tuning
    }
  }
  g.algo_ws_offset = ctx.take(static_cast<int64_t>(g.algo_ws));
  g.workspace = static_cast<size_t>(ctx.off);
  g.device_ready = true;
  return {};
}

}  // namespace

Result<GemmCore> GemmCore::build(std::string_view op, const GemmCanon& canon_in, const GemmCoreOptions& opt,
                                 const PlanPreference& pref, int arch, int candidates) {
  GemmCore g;
  g.opt = opt;
  g.canon = canon_in;
  BuildContext ctx;
  normalize(pref, g, ctx);
  if (g.empty || g.k_zero) {
    plan_pointwise_only(g, ctx);
    return g;
  }
  // ---- operands: K folding, orientation, packing
  fold_summed_axes(g, ctx);
  if (Status s = choose_orientation(op, g, ctx); !s.ok()) return s;
  place_operands(g, ctx);
  if (Status s = pack_a_operand(op, pref, g, ctx); !s.ok()) return s;
  if (Status s = pack_b_operand(op, pref, g, ctx); !s.ok()) return s;
  if (Status s = choose_d_target(op, pref, g, ctx); !s.ok()) return s;
  choose_lt_batch(g, ctx);
  if (Status s = choose_epilogue(op, g, ctx); !s.ok()) return s;
  // ---- cuBLASLt descriptors and the algorithm (needs the device)
  if (!on_selected_device(arch, g, ctx)) return g;
  if (Status s = bind_handle(op, g); !s.ok()) return s;
  if (Status s = init_op_desc(op, g, ctx); !s.ok()) return s;
  if (Status s = set_epilogue_attributes(op, g, ctx); !s.ok()) return s;
  if (Status s = set_fp8_attributes(op, g, ctx); !s.ok()) return s;
  if (Status s = init_layouts(op, g, ctx); !s.ok()) return s;
  cublasLtMatmulPreferenceOpaque_t pref_store{};
  if (Status s = init_preference(op, pref, g, ctx, &pref_store); !s.ok()) return s;
  if (Status s = choose_algorithm(op, candidates, g, ctx, &pref_store); !s.ok()) return s;
  g.describe();
  return g;
}

void GemmCore::describe() {
  auto cfg = [&](cublasLtMatmulAlgoConfigAttributes_t a) {
    uint32_t v = 0;  // every attribute read here is 32-bit (int32 / uint32 / uint16 stored as 32)
    size_t w = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&algo, a, &v, sizeof v, &w) != CUBLAS_STATUS_SUCCESS) return int64_t{-1};
    return static_cast<int64_t>(v);
  };
  split_k = static_cast<int>(std::max<int64_t>(1, cfg(CUBLASLT_ALGO_CONFIG_SPLITK_NUM)));
  variant = cat("lt.algo", cfg(CUBLASLT_ALGO_CONFIG_ID), ".tile", cfg(CUBLASLT_ALGO_CONFIG_TILE_ID), ".stages",
                cfg(CUBLASLT_ALGO_CONFIG_STAGES_ID), ".splitk", split_k, pack_a ? ".packa" : "", pack_b ? ".packb" : "",
                pack_d ? ".packd" : "", nloop ? ".loop" : "",
                fused_bias || fused_act || fused_dact ? ".fusedepi" : "", separate_epilogue ? ".sepepi" : "",
                tuned ? ".tuned" : "");
}

Status GemmCore::run(std::string_view op, cudaStream_t stream, Workspace ws, const RunArgs& r) const {
  if (empty && !opt.bias_grad) return {};
  if (!device_ready)
    return error(StatusCode::kUnsupported, op, ": this plan was selected without a device (", variant,
                 "); select it again on the GPU that runs it so cuBLASLt can choose an algorithm");
  if (workspace > 0) {
    if (ws.bytes < workspace)
      return error(StatusCode::kWorkspaceTooSmall, op, ": workspace has ", ws.bytes, " bytes; the plan needs ", workspace);
    if (reinterpret_cast<uintptr_t>(ws.ptr) % kWsAlign != 0)
      return error(StatusCode::kMisalignedOperand, op, ": workspace pointer must be 256-byte aligned");
  }
  auto ws_at = [&](int64_t o) { return static_cast<void*>(static_cast<char*>(ws.ptr) + o); };
  const GemmCanon& c = canon;

  // the pointwise view of out over [kept batch..., M, N]
  const bool grad = opt.grad_act != GemmActivation::kNone;
  auto out_view = [&](PointwiseGeometry& pg) {
    pointwise_axes(c, kOpD, kOpC, kOpP, pg);
    pg.out = r.d;
    if (grad) {  // out = src ⊙ act'(aux)
      pg.aux = const_cast<void*>(r.aux);
      pg.act = static_cast<int>(opt.grad_act);
      pg.backward = true;
      return;
    }
    pg.aux = opt.save_preact ? r.preact : nullptr;
    pg.bias = opt.has_bias ? r.bias : nullptr;
    pg.bias_stride = r.bias_stride;
    pg.act = static_cast<int>(opt.act);
  };
  // the separate bias gradient: column sums of the finished out
  auto bias_grad_pass = [&]() -> Status {
    if (!opt.bias_grad) return {};
    PointwiseGeometry pg;
    pointwise_axes(c, kOpD, kOpD, kOpD, pg);
    return launch_column_sum_over(canon.d_dtype, pg, r.d, r.bias_grad, 1.0, ws_at(colsum_ws_offset), stream);
  };

  if (empty) return bias_grad_pass();
  // the epilogue kernel, with the bias gradient in the same pass when one is wanted
  auto epilogue = [&](const PointwiseGeometry& pg) -> Status {
    if (opt.bias_grad) return launch_pointwise_colsum(canon.d_dtype, pg, r.bias_grad, ws_at(colsum_ws_offset), stream);
    return launch_pointwise(canon.d_dtype, pg, stream);
  };
  if (k_zero) {
    PointwiseGeometry pg;
    out_view(pg);
    pg.src = opt.use_c ? r.c : nullptr;
    pg.src_scale = opt.beta;
    return epilogue(pg);
  }

  void* d_target = pack_d ? ws_at(d_ws_offset) : r.d;
  const void* a_ptr = r.a;
  const void* b_ptr = r.b;
  for (const PackStep& p : pre) {
    TensorRef src;
    static_cast<TensorLayout&>(src) = p.src;
    TensorMut dst;
    static_cast<TensorLayout&>(dst) = p.dst;
    if (p.which == kOpC) {
      if (r.c_is_out && c_copy_needed_unless_inplace) continue;  // in-place addmm
      src.data = r.c;
      dst.data = d_target;
    } else {
      src.data = p.which == kOpA ? r.a : r.b;
      dst.data = ws_at(p.ws_offset);
      (p.which == kOpA ? a_ptr : b_ptr) = dst.data;
    }
    if (Status s = p.plan.run(stream, {}, CopyArgs{src, dst}); !s.ok()) return s;
  }

  // cuBLASLt: per-call pointers go on a copy of the select-time descriptor (thread-safe run)
  cublasLtMatmulDescOpaque_t desc = op_desc;
  cublasLtMatrixLayoutOpaque_t la = lay_a, lb = lay_b, ld = lay_d;  // cuBLASLt takes them non-const
  if (fused_bias || fused_bgrad)
    if (Status s = set_desc(op, &desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, fused_bgrad ? r.bias_grad : r.bias); !s.ok())
      return s;
  if (r.a_scale)
    if (Status s = set_desc(op, &desc, swap ? CUBLASLT_MATMUL_DESC_B_SCALE_POINTER : CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                            r.a_scale);
        !s.ok())
      return s;
  if (r.b_scale)
    if (Status s = set_desc(op, &desc, swap ? CUBLASLT_MATMUL_DESC_A_SCALE_POINTER : CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                            r.b_scale);
        !s.ok())
      return s;
  const float alpha_f = static_cast<float>(opt.alpha), beta_f = static_cast<float>(opt.use_c ? opt.beta : 0.0);
  const double alpha_d = opt.alpha, beta_d = opt.use_c ? opt.beta : 0.0;
  const bool f64 = canon.a_dtype == DType::f64;
  const void* alpha = f64 ? static_cast<const void*>(&alpha_d) : &alpha_f;
  const void* beta = f64 ? static_cast<const void*>(&beta_d) : &beta_f;
  const size_t es_a = dtype_size(canon.a_dtype), es_b = dtype_size(canon.b_dtype), es_d = dtype_size(canon.d_dtype);

  int64_t iters = 1;
  for (int i = 0; i < nloop; ++i) iters *= loop[i].ext;
  for (int64_t it = 0; it < iters; ++it) {
    int64_t rem = it, oa = 0, ob = 0, od = 0, op_ = 0;
    for (int i = nloop - 1; i >= 0; --i) {
      const int64_t x = rem % loop[i].ext;
      rem /= loop[i].ext;
      oa += x * loop[i].s[kOpA];
      ob += x * loop[i].s[kOpB];
      od += x * loop[i].s[kOpD];
      op_ += x * loop[i].s[kOpP];
    }
    const void* pa = static_cast<const char*>(a_ptr) + oa * static_cast<int64_t>(es_a);
    const void* pb = static_cast<const char*>(b_ptr) + ob * static_cast<int64_t>(es_b);
    void* pd = static_cast<char*>(d_target) + od * static_cast<int64_t>(es_d);
    if (fused_aux || fused_dact) {
      void* aux = static_cast<char*>(fused_aux ? r.preact : const_cast<void*>(r.aux)) + op_ * static_cast<int64_t>(es_d);
      if (Status s = set_desc(op, &desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux); !s.ok()) return s;
    }
    const void* pc = pd;  // C is D (beta is 0 unless c was copied into D)
    const cublasStatus_t st = cublasLtMatmul(handle, &desc, alpha, swap ? pb : pa, &la, swap ? pa : pb, &lb, beta, pc,
                                             &ld, pd, &ld, &algo, algo_ws ? ws_at(algo_ws_offset) : nullptr,
                                             algo_ws, stream);
    if (Status s = cublaslt::lt_status(st, op, "cublasLtMatmul"); !s.ok()) return s;
  }

  for (const PackStep& p : post) {
    TensorRef src;
    static_cast<TensorLayout&>(src) = p.src;
    src.data = d_target;
    TensorMut dst;
    static_cast<TensorLayout&>(dst) = p.dst;
    dst.data = r.d;
    if (Status s = p.plan.run(stream, {}, CopyArgs{src, dst}); !s.ok()) return s;
  }
  if (separate_epilogue) {
    const bool pointwise = grad || opt.has_bias || opt.act != GemmActivation::kNone || opt.save_preact;
    if (pointwise) {
      PointwiseGeometry pg;
      out_view(pg);
      // src = out itself, read with out's strides
      for (int i = 0; i < pg.rank; ++i) pg.s_src[i] = pg.s_out[i];
      pg.src = r.d;
      pg.src_scale = 1.0;
      return epilogue(pg);
    }
    return bias_grad_pass();
  }
  return {};
}

}  // namespace baracuda::detail

// ------------------------------------------------------------------ timed selection
namespace baracuda::detail {

namespace {

// Device scratch for timing: every operand's span over the canonical axes, filled once.
struct TuneScratch {
  std::vector<void*> allocs;
  cudaStream_t stream = nullptr;
  cudaEvent_t ev0 = nullptr, ev1 = nullptr;
  ~TuneScratch() {
    for (void* p : allocs) cudaFree(p);
    if (ev0) cudaEventDestroy(ev0);
    if (ev1) cudaEventDestroy(ev1);
    if (stream) cudaStreamDestroy(stream);
  }
  // A buffer covering offsets [lo, hi] (elements) of an operand; returns the pointer of offset 0.
  void* span(DType dt, int64_t lo, int64_t hi, bool fill, uint64_t seed, bool* ok) {
    const int64_t es = static_cast<int64_t>(dtype_size(dt));
    void* p = nullptr;
    if (cudaMalloc(&p, static_cast<size_t>((hi - lo + 1) * es + 256)) != cudaSuccess) {
      (void)cudaGetLastError();
      *ok = false;
      return nullptr;
    }
    allocs.push_back(p);
    if (fill && !launch_fill_scratch(dt, p, hi - lo + 1, seed, stream).ok()) *ok = false;
    return static_cast<char*>(p) - lo * es;
  }
};

void operand_span(const GemmCanon& c, int j, int64_t* lo, int64_t* hi) {
  *lo = *hi = 0;
  auto add = [&](const GemmAxis& x) {
    if (x.ext <= 0) return;
    const int64_t v = (x.ext - 1) * x.s[j];
    (v < 0 ? *lo : *hi) += v;
  };
  for (int i = 0; i < c.nb; ++i) add(c.batch[i]);
  add(c.m), add(c.n), add(c.k);
}

// Mean time of one run() in ms, or a negative value when the configuration fails to run.
double time_core(std::string_view op, const GemmCore& g, const TuneScratch& t, Workspace ws, const GemmCore::RunArgs& r) {
  if (!g.run(op, t.stream, ws, r).ok() || cudaStreamSynchronize(t.stream) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  float ms = 0;
  cudaEventRecord(t.ev0, t.stream);
  (void)g.run(op, t.stream, ws, r);
  cudaEventRecord(t.ev1, t.stream);
  if (cudaEventSynchronize(t.ev1) != cudaSuccess || cudaEventElapsedTime(&ms, t.ev0, t.ev1) != cudaSuccess) return -1;
  const int reps = static_cast<int>(std::clamp(10.0 / std::max(ms, 1e-3f), 2.0, 50.0));
  cudaEventRecord(t.ev0, t.stream);
  for (int i = 0; i < reps; ++i) (void)g.run(op, t.stream, ws, r);
  cudaEventRecord(t.ev1, t.stream);
  if (cudaEventSynchronize(t.ev1) != cudaSuccess || cudaEventElapsedTime(&ms, t.ev0, t.ev1) != cudaSuccess) return -1;
  return ms / reps;
}

}  // namespace

Result<GemmCore> GemmCore::select(std::string_view op, const GemmCanon& canon, const GemmCoreOptions& opt,
                                  const PlanPreference& pref, int arch) {
  if (!pref.autotune) return build(op, canon, opt, pref, arch);
  // the forms to time: the requested one, or for kAuto with an epilogue both fused and separate
  const bool has_epi = opt.has_bias || opt.act != GemmActivation::kNone || opt.save_preact ||
                       opt.grad_act != GemmActivation::kNone || opt.bias_grad;
  std::vector<GemmCore> forms;
  if (has_epi && opt.epilogue == GemmEpilogueImpl::kAuto) {
    for (GemmEpilogueImpl e : {GemmEpilogueImpl::kFused, GemmEpilogueImpl::kSeparate}) {
      GemmCoreOptions o = opt;
      o.epilogue = e;
      auto g = build(op, canon, o, pref, arch, 8);
      if (g) forms.push_back(std::move(*g));
    }
  }
  if (forms.empty()) {
    auto g = build(op, canon, opt, pref, arch, 8);
    if (!g) return g.status();
    forms.push_back(std::move(*g));
  }
  auto untuned = [&]() -> Result<GemmCore> { return build(op, canon, opt, pref, arch); };
  if (!forms[0].device_ready || forms[0].candidates.empty()) return untuned();

  // scratch operands (the canonical strides address them as the caller's views would)
  TuneScratch t;
  if (cudaStreamCreateWithFlags(&t.stream, cudaStreamNonBlocking) != cudaSuccess ||
      cudaEventCreate(&t.ev0) != cudaSuccess || cudaEventCreate(&t.ev1) != cudaSuccess) {
    (void)cudaGetLastError();
    return untuned();
  }
  bool ok = true;
  const GemmCanon& c = canon;
  int64_t lo = 0, hi = 0;
  RunArgs r;
  operand_span(c, kOpA, &lo, &hi);
  r.a = t.span(c.a_dtype, lo, hi, true, 1, &ok);
  operand_span(c, kOpB, &lo, &hi);
  r.b = t.span(c.b_dtype, lo, hi, true, 2, &ok);
  operand_span(c, kOpD, &lo, &hi);
  r.d = t.span(c.d_dtype, lo, hi, false, 0, &ok);
  if (opt.use_c) {
    operand_span(c, kOpC, &lo, &hi);
    r.c = t.span(c.d_dtype, lo, hi, true, 3, &ok);
  }
  const int64_t N = c.n.ext;
  if (opt.has_bias) {
    const int64_t v = (N - 1) * opt.bias_stride;
    r.bias = t.span(opt.bias_dtype, std::min<int64_t>(0, v), std::max<int64_t>(0, v), true, 4, &ok);
    r.bias_stride = opt.bias_stride;
  }
  if (opt.save_preact || opt.grad_act != GemmActivation::kNone) {
    operand_span(c, kOpP, &lo, &hi);
    void* p = t.span(c.d_dtype, lo, hi, true, 5, &ok);
    r.preact = p, r.aux = p;
  }
  if (opt.bias_grad) r.bias_grad = t.span(c.d_dtype, 0, std::max<int64_t>(0, N - 1), false, 0, &ok);
  if (c.a_dtype == DType::f8e4m3 || c.a_dtype == DType::f8e5m2) {
    float* sc = static_cast<float*>(t.span(DType::f32, 0, 7, false, 0, &ok));
    if (ok) {
      const float one[8] = {1, 1, 1, 1, 1, 1, 1, 1};
      ok = cudaMemcpy(sc, one, sizeof one, cudaMemcpyHostToDevice) == cudaSuccess;
      r.a_scale = sc, r.b_scale = sc + 4;
    }
  }
  size_t ws_bytes = 0;
  for (const GemmCore& g : forms) ws_bytes = std::max(ws_bytes, g.workspace);
  Workspace ws{nullptr, ws_bytes};
  if (ok && ws_bytes) ws.ptr = t.span(DType::u8, 0, static_cast<int64_t>(ws_bytes), false, 0, &ok);
  if (ok) ws.ptr = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(ws.ptr) + 255) / 256 * 256);
  if (!ok) return untuned();  // no memory to time with: the heuristic's choice

  double best = 0;
  int best_form = -1;
  size_t best_cand = 0;
  static const bool log = std::getenv("BARACUDA_AUTOTUNE_LOG") != nullptr;
  for (size_t f = 0; f < forms.size(); ++f) {
    GemmCore& g = forms[f];
    for (size_t i = 0; i < g.candidates.size(); ++i) {
      g.algo = g.candidates[i].algo;
      g.algo_ws = g.candidates[i].ws;  // each candidate runs with its own workspace size, as it will in the plan
      const double ms = time_core(op, g, t, ws, r);
      if (log) {
        g.describe();
        std::fprintf(stderr, "[baracuda autotune] %.*s form %zu cand %zu ws %zu: %.4f ms %s\n", static_cast<int>(op.size()),
                     op.data(), f, i, g.algo_ws, ms, g.variant.c_str());
      }
      if (ms > 0 && (best_form < 0 || ms < best)) best = ms, best_form = static_cast<int>(f), best_cand = i;
    }
  }
  if (best_form < 0) return untuned();
  GemmCore g = std::move(forms[best_form]);
  g.algo = g.candidates[best_cand].algo;
  g.algo_ws = g.candidates[best_cand].ws;
  g.workspace = static_cast<size_t>(g.algo_ws_offset + round_up(static_cast<int64_t>(g.algo_ws), kWsAlign));
  g.candidates.clear();
  g.tuned = true;
  g.describe();
  return g;
}

}  // namespace baracuda::detail
