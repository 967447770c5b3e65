// GatherPlan and ScatterPlan: the descriptors' checks, the iteration axes (merged, 16-byte
// units where every operand allows), the choice between the atomic and the sorted scatter, and
// the sorted scatter's workspace.
#include "baracuda/ops/gather_scatter.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "baracuda/ops/copy.hpp"
#include "core/checked_math.hpp"
#include "core/cuda_check.hpp"
#include "core/dispatch.hpp"
#include "core/plan_kit.hpp"
#include "core/radix_sort.hpp"
#include "core/scalar_convert.hpp"
#include "core/select_first.hpp"
#include "core/validate.hpp"
#include "core/workspace.hpp"
#include "ops/copy/gather_scatter_geometry.hpp"

namespace baracuda {

namespace {

constexpr std::string_view kGather = "gather";
constexpr std::string_view kScatter = "scatter";

using ArithDTypes = DTypeList<DType::f32, DType::f16, DType::bf16, DType::f64, DType::i8, DType::u8, DType::i16, DType::i32,
                              DType::i64>;
using IndexDTypes = DTypeList<DType::i32, DType::i64>;

std::span<const int64_t> dims_of(const int64_t* s, int rank) { return {s, static_cast<size_t>(std::clamp(rank, 0, kMaxRank))}; }

// The checks both descriptors share: ranks, extents, dim, the index shape against the data's.
// `data` names the indexed operand's shape field (input_shape / self_shape).
Status check_geometry(std::string_view op, DType index_dtype, IndexForm form, int rank, const int64_t* data, std::string_view data_field,
                      const int64_t* S, int dim, int64_t* s_numel) {
  if (Status s = check_dtype(op, "index_dtype", index_dtype, IndexDTypes{}); !s.ok()) return s;
  int64_t numel = 0;
  if (Status s = check_shape(op, rank, data, 0, &numel); !s.ok()) return s;
  if (form == IndexForm::kSlices && rank == 0)
    return error(StatusCode::kInvalidProblem, op, ": the slices form needs rank >= 1 (a 0-d tensor: use the elements form)");
  const int r1 = std::max(rank, 1);
  if (dim < -r1 || dim >= r1) return error(StatusCode::kInvalidProblem, op, ": dim = ", dim, " is out of range [", -r1, ", ", r1 - 1, "]");
  const int d = dim < 0 ? dim + r1 : dim;
  for (int a = 0; a < rank; ++a) {
    if (S[a] < 0) return error(StatusCode::kInvalidProblem, op, ": index_shape[", a, "] = ", S[a], " must be >= 0");
    if (a == d) continue;
    if (form == IndexForm::kSlices && S[a] != data[a])
      return error(StatusCode::kInvalidProblem, op, ": index_shape[", a, "] = ", S[a], " must equal ", data_field, "[", a, "] = ", data[a],
                   " (slices form: only the extent along dim differs)");
    if (form == IndexForm::kElements && S[a] > data[a])
      return error(StatusCode::kInvalidProblem, op, ": index_shape[", a, "] = ", S[a], " must be <= ", data_field, "[", a, "] = ", data[a],
                   " (the index may only be larger than the data along dim)");
  }
  if (!checked_product(S, rank, s_numel) || *s_numel > (int64_t{1} << 58))
    return error(StatusCode::kInvalidProblem, op, ": index_shape has more than 2^58 elements");
  return {};
}

// A Scalar as a caller wrote it ("2", "0.5").
std::string scalar_text(const Scalar& v) {
  if (v.is_int()) return std::to_string(v.i);
  char b[32];
  std::snprintf(b, sizeof b, "%.17g", v.f);
  return b;
}

int norm_dim(int dim, int rank) { return dim < 0 ? dim + std::max(rank, 1) : dim; }

// The index operand's shape: S (elements) or [S[dim]] (slices).
std::vector<int64_t> index_operand_shape(IndexForm form, int rank, const int64_t* S, int dim) {
  if (form == IndexForm::kSlices) return {S[norm_dim(dim, rank)]};
  return {S, S + rank};
}

// A scalar in dtype's bits (0 needs no conversion: every dtype's zero is all-zero bits, fp8 too).
Result<uint64_t> bits_of(std::string_view op, std::string_view field, DType dt, const Scalar& v) {
  if (!v.is_int() && v.f == 0.0 && !std::signbit(v.f)) return uint64_t{0};
  if (v.is_int() && v.i == 0) return uint64_t{0};
  return scalar_to_bits(op, field, dt, v);
}

// The 16 bytes of one unit filled with an element's bits.
void replicate(uint64_t bits, size_t es, uint64_t (&out)[2]) {
  unsigned char b[16];
  for (size_t i = 0; i < 16; ++i) b[i] = static_cast<unsigned char>(bits >> (8 * (i % es)));
  std::memcpy(out, b, 16);
}

int64_t stride_at(const TensorLayout& t, int a) { return t.rank == 0 ? 0 : t.stride[a]; }
bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Drops extent-1 axes and merges axes that nest on every stride (outer into inner).
void merge_axes(gs::MoveParams* p) {
  gs::Axis out[kMaxRank];
  int n = 0;
  for (int k = 0; k < p->naxes; ++k) {
    const gs::Axis a = p->ax[k];
    if (a.n == 1) continue;
    if (n > 0) {
      gs::Axis& b = out[n - 1];
      int64_t d = 0, o = 0, i = 0;
      if (checked_mul(a.data_s, a.n, &d) && checked_mul(a.out_s, a.n, &o) && checked_mul(a.idx_s, a.n, &i) && b.data_s == d &&
          b.out_s == o && b.idx_s == i) {
        b.n *= a.n, b.data_s = a.data_s, b.out_s = a.out_s, b.idx_s = a.idx_s;
        continue;
      }
    }
    out[n++] = a;
  }
  p->naxes = n;
  std::copy(out, out + n, p->ax);
}

// 16-byte units over the last axis when it is contiguous in both data operands (data null: the
// value form), constant in the index, and every other stride (dim's too) a multiple of the vector.
bool vectorize(gs::MoveParams* p, int64_t es, bool data_aligned, bool out_aligned) {
  const int64_t V = 16 / es;
  if (V <= 1 || p->naxes == 0 || !data_aligned || !out_aligned || p->dim_s % V != 0) return false;
  gs::Axis& last = p->ax[p->naxes - 1];
  const bool data_unit = p->data == nullptr ? last.data_s == 0 : last.data_s == 1;
  if (!data_unit || last.out_s != 1 || last.idx_s != 0 || last.n % V != 0) return false;
  for (int k = 0; k + 1 < p->naxes; ++k)
    if (p->ax[k].data_s % V != 0 || p->ax[k].out_s % V != 0) return false;
  last.n /= V;
  last.data_s = p->data == nullptr ? 0 : V;
  last.out_s = V;
  return true;
}

void finish_units(gs::MoveParams* p) {
  p->units = 1;
  for (int k = 0; k < p->naxes; ++k) p->units *= p->ax[k].n;  // at most numel(S)
  if (p->naxes == 0) p->units = 1;
  p->small = p->units < (int64_t{1} << 31);
  if (p->small)
    for (int k = 0; k < p->naxes; ++k) p->ax[k].div = detail::FastDiv(static_cast<uint32_t>(p->ax[k].n));
  // narrow: Σ |stride|·(n − 1) of each operand, and the indexed side's reach along dim, in int32
  int64_t reach[3] = {0, 0, 0};
  bool fits = p->small && checked_mul(p->dim_s < 0 ? -p->dim_s : p->dim_s, std::max<int64_t>(p->rule.n - 1, 0), &reach[0]);
  for (int k = 0; k < p->naxes && fits; ++k) {
    const gs::Axis& a = p->ax[k];
    const int64_t s[3] = {a.data_s, a.out_s, a.idx_s};
    for (int i = 0; i < 3 && fits; ++i) {
      int64_t t = 0;
      fits = s[i] != INT64_MIN && checked_mul(s[i] < 0 ? -s[i] : s[i], a.n - 1, &t) && checked_add(reach[i], t, &reach[i]);
    }
  }
  p->narrow = fits && reach[0] < (int64_t{1} << 30) && reach[1] < (int64_t{1} << 30) && reach[2] < (int64_t{1} << 30);
  // up to 8 passes per block while the grid keeps ~4 blocks per SM of a 132-SM part
  const int64_t pass = int64_t{gs::kThreads} * gs::kUnitsPerThread;
  p->passes = static_cast<int>(std::clamp<int64_t>(p->units / (pass * 132 * 4), 1, 8));
}

unsigned long long* counter_ptr(bool on, const TensorMut& c) { return on ? static_cast<unsigned long long*>(c.data) : nullptr; }

gs::IndexRule rule_of(IndexBounds bounds, bool wrap, DType index_dtype, const TensorRef& index, int64_t n, bool count,
                      const TensorMut& counter) {
  gs::IndexRule r;
  r.idx = index.data;
  r.idx64 = index_dtype == DType::i64;
  r.wrap = wrap;
  r.clamp = bounds == IndexBounds::kClamp;
  r.n = n;
  r.invalid = counter_ptr(count, counter);
  return r;
}

// The per-axis strides of the move pass over S: `data` is the non-indexed side's data operand
// (gather: input with 0 on dim; scatter: src), out the written one (scatter: 0 on dim).
void move_axes(gs::MoveParams* p, IndexForm form, int rank, const int64_t* S, int dim, const TensorLayout* data, bool data_on_dim,
               const TensorLayout& out, bool out_on_dim, const TensorLayout& index) {
  const int r = std::max(rank, 1);
  p->naxes = r;
  for (int a = 0; a < r; ++a) {
    gs::Axis& x = p->ax[a];
    x.n = rank == 0 ? 1 : S[a];
    x.data_s = data && (a != dim || data_on_dim) ? stride_at(*data, a) : 0;
    x.out_s = a != dim || out_on_dim ? stride_at(out, a) : 0;
    x.idx_s = form == IndexForm::kElements ? stride_at(index, a) : (a == dim ? stride_at(index, 0) : 0);
  }
}

void set_sku(KernelSku* sku, std::string op, DType dt, std::string variant) {
  sku->op = std::move(op);
  sku->direction = Direction::kForward;
  sku->dtype = dt;
  sku->variant = std::move(variant);
}

}  // namespace

// ================================================================ gather

GatherDescriptor GatherDescriptor::gather(DType dtype, DType index_dtype, std::span<const int64_t> input_shape,
                                          std::span<const int64_t> index_shape, int dim) {
  GatherDescriptor d;
  d.dtype = dtype, d.index_dtype = index_dtype, d.dim = dim;
  d.rank = input_shape.size() > static_cast<size_t>(kMaxRank) || index_shape.size() != input_shape.size() ? -1
                                                                                                        : static_cast<int>(input_shape.size());
  if (d.rank > 0) {
    std::copy(input_shape.begin(), input_shape.end(), d.input_shape);
    std::copy(index_shape.begin(), index_shape.end(), d.index_shape);
  }
  return d;
}

GatherDescriptor GatherDescriptor::index_select(DType dtype, DType index_dtype, std::span<const int64_t> input_shape, int dim, int64_t n) {
  GatherDescriptor d = gather(dtype, index_dtype, input_shape, input_shape, dim);
  d.form = IndexForm::kSlices;
  if (d.rank > 0 && dim >= -d.rank && dim < d.rank) d.index_shape[norm_dim(dim, d.rank)] = n;
  return d;
}

Result<GatherPlan> GatherPlan::select(const GatherDescriptor& d, const PlanPreference& pref) {
  GatherPlan p;
  if (Status s = begin_select(kGather, d, pref, &p.sku_); !s.ok()) return s;
  if (Status s = check_dtype(kGather, "dtype", d.dtype, RealDTypes{}); !s.ok()) return s;
  int64_t s_numel = 0;
  if (Status s = check_geometry(kGather, d.index_dtype, d.form, d.rank, d.input_shape, "input_shape", d.index_shape, d.dim, &s_numel); !s.ok())
    return s;
  auto fill = bits_of(kGather, "fill_value", d.dtype, d.fill_value);
  if (!fill) return fill.status();
  p.fill_bits_ = *fill;
  p.desc_ = d;
  set_sku(&p.sku_, d.form == IndexForm::kSlices ? "index_select" : "gather", d.dtype, "index_map");
  p.guarantee_.accumulator = p.guarantee_.math = d.dtype;
  p.guarantee_.bit_exact = true;
  p.guarantee_.determinism = Determinism::kRunToRun;
  p.operands_.input("input", d.dtype, dims_of(d.input_shape, d.rank));
  p.operands_.input("index", d.index_dtype, index_operand_shape(d.form, d.rank, d.index_shape, d.dim));
  p.operands_.output("out", d.dtype, dims_of(d.index_shape, d.rank));
  if (d.count_invalid) p.operands_.add("invalid_count", OperandRole::kInOut, DType::i64, {1});
  if (Status s = resolve_operands<GatherArgs>(kGather, p.operands_); !s.ok()) return s;
  return p;
}

Status GatherPlan::can_implement(const GatherArgs& a) const { return check_plan_args(kGather, selected(), operands_, a); }

Status GatherPlan::run(cudaStream_t stream, Workspace, const GatherArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (a.out.numel() == 0) return {};
  const GatherDescriptor& d = desc_;
  const int dim = norm_dim(d.dim, d.rank);
  const int64_t es = static_cast<int64_t>(dtype_size(d.dtype));
  gs::MoveParams p;
  p.data = static_cast<const char*>(a.input.data);
  p.out = static_cast<char*>(a.out.data);
  p.esize = static_cast<int>(es);
  p.rule = rule_of(d.bounds, d.wrap_negative, d.index_dtype, a.index, d.rank == 0 ? 1 : d.input_shape[dim], d.count_invalid,
                   a.invalid_count);
  p.dim_s = stride_at(a.input, dim);
  move_axes(&p, d.form, d.rank, d.index_shape, dim, &a.input, false, a.out, true, a.index);
  merge_axes(&p);
  const bool vec = vectorize(&p, es, aligned16(a.input.data), aligned16(a.out.data));
  finish_units(&p);
  replicate(fill_bits_, static_cast<size_t>(es), p.fill);
  return cuda_status(gs::find_move(static_cast<int>(es), vec)(p, stream), kGather);
}

// ================================================================ scatter

ScatterDescriptor ScatterDescriptor::scatter(DType dtype, DType index_dtype, std::span<const int64_t> self_shape,
                                             std::span<const int64_t> index_shape, int dim, ScatterReduce reduce) {
  ScatterDescriptor d;
  d.dtype = dtype, d.index_dtype = index_dtype, d.dim = dim, d.reduce = reduce;
  d.rank = self_shape.size() > static_cast<size_t>(kMaxRank) || index_shape.size() != self_shape.size() ? -1
                                                                                                      : static_cast<int>(self_shape.size());
  if (d.rank > 0) {
    std::copy(self_shape.begin(), self_shape.end(), d.self_shape);
    std::copy(index_shape.begin(), index_shape.end(), d.index_shape);
  }
  return d;
}

ScatterDescriptor ScatterDescriptor::index(DType dtype, DType index_dtype, std::span<const int64_t> self_shape, int dim, int64_t n,
                                           ScatterReduce reduce) {
  ScatterDescriptor d = scatter(dtype, index_dtype, self_shape, self_shape, dim, reduce);
  d.form = IndexForm::kSlices;
  if (d.rank > 0 && dim >= -d.rank && dim < d.rank) d.index_shape[norm_dim(dim, d.rank)] = n;
  return d;
}

namespace {

// The positions and key range of the sorted scatter (from the descriptor alone).
struct SortShape {
  int64_t positions = 0, key_range = 1;
  int key_bits = 1;
  bool wide = false;
};
SortShape sort_shape(const ScatterDescriptor& d) {
  SortShape s;
  const int dim = norm_dim(d.dim, d.rank);
  if (d.form == IndexForm::kSlices) {
    s.positions = d.index_shape[dim];
    s.key_range = d.self_shape[dim];
  } else {
    s.positions = 1;
    for (int a = 0; a < d.rank; ++a) s.positions *= d.index_shape[a], s.key_range *= d.self_shape[a];  // checked at select
  }
  s.key_bits = std::max(1, static_cast<int>(std::bit_width(static_cast<uint64_t>(s.key_range))));
  s.wide = s.key_bits > 32 || s.positions > INT32_MAX;
  return s;
}

struct SortLayout {
  size_t keys = 0, keys_alt = 0, pos = 0, pos_alt = 0, cub = 0, total = 0;
};
SortLayout sort_layout(const SortShape& s) {
  SortLayout l;
  WorkspaceLayout w;
  const size_t n = static_cast<size_t>(s.positions), e = s.wide ? 8 : 4;
  l.keys = w.take_n<char>(n * e);
  l.keys_alt = w.take_n<char>(n * e);
  l.pos = w.take_n<char>(n * e);
  l.pos_alt = w.take_n<char>(n * e);
  l.cub = w.take(detail::sort_pairs_bound(s.positions, s.wide));
  l.total = w.total();
  return l;
}

// Whether the atomic pass gives a run-to-run identical result.
bool atomic_deterministic(const ScatterDescriptor& d) {
  if (d.reduce == ScatterReduce::kNone) return false;  // duplicate targets race
  if (d.reduce == ScatterReduce::kAmax || d.reduce == ScatterReduce::kAmin) return true;
  return IntegerDTypes::contains(d.dtype);
}

Status atomic_accepts(const ScatterDescriptor& d, const PlanPreference& pref) {
  if (d.algo == ScatterAlgo::kSort) return error(StatusCode::kUnsupported, "algo = sort");
  const bool asked = d.algo == ScatterAlgo::kAtomic;
  if (d.reduce == ScatterReduce::kMean) return error(StatusCode::kUnsupported, asked ? "algo = atomic " : "", "has no mean (mean sorts)");
  if (pref.determinism == Determinism::kRunToRun && !atomic_deterministic(d))
    return error(StatusCode::kUnsupported, asked ? "algo = atomic " : "", "is not run-to-run deterministic for reduce ",
                 enum_name(d.reduce), " of ", dtype_name(d.dtype), " (PlanPreference::determinism = run_to_run)");
  return {};
}
Status sort_accepts(const ScatterDescriptor& d, const PlanPreference&) {
  if (d.algo == ScatterAlgo::kAtomic) return error(StatusCode::kUnsupported, "algo = atomic");
  return {};
}
constexpr Impl<ScatterDescriptor> kScatterImpls[] = {{"atomic", Backend::kBespoke, &atomic_accepts},
                                                     {"sort", Backend::kBespoke, &sort_accepts}};

}  // namespace

Result<ScatterPlan> ScatterPlan::select(const ScatterDescriptor& d, const PlanPreference& pref) {
  ScatterPlan p;
  if (Status s = check_enums(kScatter, d); !s.ok()) return s;
  const bool none = d.reduce == ScatterReduce::kNone;
  if (Status s = none ? check_dtype(kScatter, "dtype", d.dtype, RealDTypes{}) : check_dtype(kScatter, "dtype", d.dtype, ArithDTypes{});
      !s.ok())
    return Status(s.code(), cat(s.message(), none ? "" : cat(" with reduce ", enum_name(d.reduce))));
  int64_t s_numel = 0;
  if (Status s = check_geometry(kScatter, d.index_dtype, d.form, d.rank, d.self_shape, "self_shape", d.index_shape, d.dim, &s_numel); !s.ok())
    return s;
  if (!d.include_self && none)
    return error(StatusCode::kInvalidProblem, kScatter, ": include_self = false needs a reduction (reduce none replaces self)");
  const bool has_alpha = !(d.alpha.is_int() ? d.alpha.i == 1 : d.alpha.f == 1.0);
  if (has_alpha && d.reduce != ScatterReduce::kSum)
    return error(StatusCode::kInvalidProblem, kScatter, ": alpha = ", scalar_text(d.alpha), " applies to reduce sum only (reduce ",
                 enum_name(d.reduce), ")");
  if (has_alpha && IntegerDTypes::contains(d.dtype) && !d.alpha.is_int())
    return error(StatusCode::kInvalidProblem, kScatter, ": alpha = ", scalar_text(d.alpha), " must be an integer for ", dtype_name(d.dtype), " data");
  auto impl = select_first(kScatter, kScatterImpls, d, pref);
  if (!impl) return impl.status();
  if (Status s = begin_select(kScatter, pref, &p.sku_, (*impl)->backend); !s.ok()) return s;
  p.sorted_ = (*impl)->name == "sort";
  if (d.src_is_value) {
    auto v = bits_of(kScatter, "value", d.dtype, d.value);
    if (!v) return v.status();
    p.value_bits_ = *v;
  }
  p.has_alpha_ = has_alpha;
  if (has_alpha) {  // the compute type's bits: f32 for f32 / 16-bit floats, f64, int64
    if (IntegerDTypes::contains(d.dtype)) p.alpha_bits_ = static_cast<uint64_t>(d.alpha.i);
    else if (d.dtype == DType::f64) p.alpha_bits_ = std::bit_cast<uint64_t>(d.alpha.as_double());
    else p.alpha_bits_ = std::bit_cast<uint32_t>(static_cast<float>(d.alpha.as_double()));
  }
  // self -> out when they are different views
  auto copy = CopyPlan::select(CopyDescriptor::make(d.dtype, dims_of(d.self_shape, d.rank)), [&] {
    PlanPreference inner = pref;
    inner.forced_backend = Backend::kAny;
    return inner;
  }());
  if (!copy) return Status(copy.status().code(), cat(kScatter, ": ", copy.status().message()));
  if (copy->workspace_size() != 0) return error(StatusCode::kInternal, kScatter, ": the self copy asks for workspace");
  p.copy_ = std::make_shared<const CopyPlan>(std::move(*copy));
  if (p.sorted_) {
    const SortShape ss = sort_shape(d);
    p.wide_ = ss.wide;
    p.key_bits_ = ss.key_bits;
    p.workspace_ = sort_layout(ss).total;
    if (Status s = check_workspace_budget(kScatter, p.workspace_, pref.max_workspace_bytes); !s.ok()) return s;
  }
  p.desc_ = d;
  set_sku(&p.sku_, cat(d.form == IndexForm::kSlices ? "index_reduce." : "scatter.", enum_name(d.reduce)), d.dtype,
          std::string((*impl)->name));
  const bool integer = IntegerDTypes::contains(d.dtype);
  const bool exact = none || integer || d.reduce == ScatterReduce::kAmax || d.reduce == ScatterReduce::kAmin;
  p.guarantee_.math = p.guarantee_.accumulator = none || !p.sorted_ ? d.dtype : (integer ? DType::i64 : acc_of(d.dtype));
  p.guarantee_.bit_exact = exact;
  p.guarantee_.determinism = p.sorted_ || atomic_deterministic(d) ? Determinism::kRunToRun : Determinism::kAny;
  const std::span<const int64_t> T = dims_of(d.self_shape, d.rank);
  p.operands_.input("self", d.dtype, T);
  p.operands_.input("index", d.index_dtype, index_operand_shape(d.form, d.rank, d.index_shape, d.dim));
  if (!d.src_is_value) p.operands_.input("src", d.dtype, dims_of(d.index_shape, d.rank));
  p.operands_.output("out", d.dtype, T);
  p.operands_.may_alias("out", "self");
  if (d.count_invalid) p.operands_.add("invalid_count", OperandRole::kInOut, DType::i64, {1});
  if (Status s = resolve_operands<ScatterArgs>(kScatter, p.operands_); !s.ok()) return s;
  return p;
}

Status ScatterPlan::can_implement(const ScatterArgs& a) const {
  if (Status s = check_plan_args(kScatter, selected(), operands_, a); !s.ok()) return s;
  if (a.out.data != a.self.data || !a.out.identical(a.self)) {
    if (views_may_overlap(a.out, a.out.data, a.self, a.self.data))
      return error(StatusCode::kInvalidProblem, kScatter, ": out overlaps self without being the same view (pass self itself for the in-place form)");
  }
  return {};
}

Status ScatterPlan::run(cudaStream_t stream, Workspace ws, const ScatterArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (a.out.numel() == 0) return {};
  const ScatterDescriptor& d = desc_;
  if (a.out.data != a.self.data || !a.out.identical(a.self))
    if (Status s = copy_->run(stream, {}, CopyArgs{a.self, a.out}); !s.ok()) return s;
  if (a.index.numel() == 0) return {};
  const int dim = norm_dim(d.dim, d.rank);
  const int64_t es = static_cast<int64_t>(dtype_size(d.dtype));
  const int64_t n = d.rank == 0 ? 1 : d.self_shape[dim];
  const TensorRef* src = d.src_is_value ? nullptr : &a.src;
  const bool none = d.reduce == ScatterReduce::kNone;
  const gs::Reduce reduce = static_cast<gs::Reduce>(static_cast<int>(d.reduce));
  const bool has_alpha = has_alpha_;
  if (!sorted_) {
    gs::MoveParams p;
    p.data = src ? static_cast<const char*>(src->data) : nullptr;
    p.out = static_cast<char*>(a.out.data);
    p.esize = static_cast<int>(es);
    p.scatter = 1;
    p.rule = rule_of(d.bounds, d.wrap_negative, d.index_dtype, a.index, n, d.count_invalid, a.invalid_count);
    p.dim_s = stride_at(a.out, dim);
    move_axes(&p, d.form, d.rank, d.index_shape, dim, src, true, a.out, false, a.index);
    merge_axes(&p);
    const bool float_sum = !none && reduce == gs::Reduce::kSum && FloatDTypes::contains(d.dtype);
    const bool vec = (none || float_sum) && vectorize(&p, es, src ? aligned16(src->data) : true, aligned16(a.out.data));
    finish_units(&p);
    replicate(value_bits_, static_cast<size_t>(es), p.fill);
    if (none) return cuda_status(gs::find_move(static_cast<int>(es), vec)(p, stream), kScatter);
    p.reduce = reduce;
    p.alpha_bits = alpha_bits_, p.has_alpha = has_alpha;
    p.fill[0] = value_bits_;
    const gs::MoveLaunchFn fn = gs::find_atomic(d.dtype, vec);
    if (!d.include_self) {
      p.phase = 0;
      if (Status s = cuda_status(fn(p, stream), kScatter); !s.ok()) return s;
    }
    p.phase = 1;
    return cuda_status(fn(p, stream), kScatter);
  }
  // sorted: positions and columns
  gs::SortParams p;
  p.rule = rule_of(d.bounds, d.wrap_negative, d.index_dtype, a.index, n, d.count_invalid, a.invalid_count);
  p.src = src ? static_cast<const char*>(src->data) : nullptr;
  p.out = static_cast<char*>(a.out.data);
  p.reduce = reduce;
  p.include_self = d.include_self;
  p.value_bits = value_bits_;
  p.alpha_bits = alpha_bits_, p.has_alpha = has_alpha;
  const int r = std::max(d.rank, 1);
  auto S = [&](int ax) { return d.rank == 0 ? int64_t{1} : d.index_shape[ax]; };
  auto T = [&](int ax) { return d.rank == 0 ? int64_t{1} : d.self_shape[ax]; };
  if (d.form == IndexForm::kSlices) {
    gs::PosAxis& x = p.pa[0];
    x.n = S(dim), x.src_s = src ? stride_at(*src, dim) : 0, x.idx_s = stride_at(a.index, 0), x.key_n = T(dim), x.key_c = 1;
    x.out_s = stride_at(a.out, dim), x.is_dim = 1;
    p.npos = 1;
    gs::MoveParams cols;  // the columns, merged as a move pass (data = src, out, no index)
    cols.data = p.src;
    for (int ax = 0; ax < r; ++ax)
      if (ax != dim)
        cols.ax[cols.naxes++] = gs::Axis{S(ax), src ? stride_at(*src, ax) : 0, stride_at(a.out, ax), 0, {}};
    merge_axes(&cols);
    cols.dim_s = 0;
    bool vec = vectorize(&cols, es, src ? aligned16(src->data) : true, aligned16(a.out.data));
    const int64_t V = vec ? 16 / es : 1;
    if (vec && (x.src_s % V != 0 || x.out_s % V != 0)) {  // undo: the slice step breaks the vector's alignment
      cols.ax[cols.naxes - 1].n *= V, cols.ax[cols.naxes - 1].data_s = src ? 1 : 0, cols.ax[cols.naxes - 1].out_s = 1;
      vec = false;
    }
    p.vec = vec ? static_cast<int>(V) : 1;
    p.ncol = cols.naxes;
    p.cols = 1;
    for (int k = 0; k < cols.naxes; ++k) {
      p.ca[k] = gs::ColAxis{cols.ax[k].n, cols.ax[k].data_s, cols.ax[k].out_s};
      p.cols *= cols.ax[k].n;
    }
  } else {
    int64_t c = 1;
    p.npos = r;
    for (int ax = r - 1; ax >= 0; --ax) {
      gs::PosAxis& x = p.pa[ax];
      x.n = S(ax), x.src_s = src ? stride_at(*src, ax) : 0, x.idx_s = stride_at(a.index, ax), x.key_n = T(ax), x.key_c = c;
      x.out_s = stride_at(a.out, ax), x.is_dim = ax == dim;
      c *= T(ax);
    }
    p.ncol = 0, p.cols = 1;
  }
  const SortShape ss = sort_shape(d);
  p.positions = ss.positions;
  p.small = p.positions * p.cols < (int64_t{1} << 31);  // (both within numel(S))
  if (p.small) p.cols_div = detail::FastDiv(static_cast<uint32_t>(p.cols));
  p.wide = wide_, p.key_bits = key_bits_;
  const SortLayout l = sort_layout(ss);
  if (Status s = check_workspace(kScatter, ws, l.total); !s.ok()) return s;
  p.keys = slice<char>(ws, l.keys), p.keys_alt = slice<char>(ws, l.keys_alt);
  p.pos = slice<char>(ws, l.pos), p.pos_alt = slice<char>(ws, l.pos_alt);
  p.cub_temp = slice<char>(ws, l.cub);
  size_t need = 0;
  if (cudaError_t e = detail::sort_pairs_query(p.positions, p.key_bits, p.wide, &need); e != cudaSuccess) return cuda_status(e, kScatter);
  if (need > l.total - l.cub)
    return error(StatusCode::kInternal, kScatter, ": CUB asks for ", need, " scratch bytes, over the ", l.total - l.cub, " reserved");
  p.cub_bytes = l.total - l.cub;
  return cuda_status(gs::find_sorted(d.dtype, p.vec > 1, none)(p, stream), kScatter);
}

}  // namespace baracuda
