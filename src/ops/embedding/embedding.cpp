// Embedding / embedding_bag plans: descriptor validation, operand checks, the vector / group
// geometry and the backward workspace layout (embedding_geometry.hpp).
#include <algorithm>
#include <bit>
#include <cstdint>
#include <span>

#include "baracuda/ops/embedding.hpp"
#include "core/arch.hpp"
#include "core/cuda_check.hpp"
#include "core/dispatch.hpp"
#include "core/plan_kit.hpp"
#include "core/select_first.hpp"
#include "core/validate.hpp"
#include "core/checked_math.hpp"
#include "core/workspace.hpp"
#include "ops/embedding/embedding_geometry.hpp"

namespace baracuda {

namespace detail {

PosMap make_pos_map(const TensorLayout& t, int rank) {
  PosMap m;
  m.rank = 0;
  for (int a = 0; a < rank; ++a) {
    if (t.shape[a] == 1) continue;
    // merge into the previous axis (checked: an empty view's strides are arbitrary)
    int64_t outer = 0, merged = 0;
    if (m.rank > 0 && checked_mul(t.stride[a], t.shape[a], &outer) && m.stride[m.rank - 1] == outer &&
        checked_mul(m.shape[m.rank - 1], t.shape[a], &merged)) {
      m.shape[m.rank - 1] = merged;
      m.stride[m.rank - 1] = t.stride[a];
      continue;
    }
    m.shape[m.rank] = t.shape[a];
    m.stride[m.rank] = t.stride[a];
    ++m.rank;
  }
  if (m.rank == 0) m.rank = 1, m.shape[0] = 1, m.stride[0] = 0;
  return m;
}

}  // namespace detail

namespace {

constexpr std::string_view kEmb = "embedding", kEmbBwd = "embedding_backward";
constexpr std::string_view kBag = "embedding_bag", kBagBwd = "embedding_bag_backward";
constexpr int64_t kMaxBackwardCount = (int64_t{1} << 31) - 1;  // positions and rows addressed as int32

// What both families share once their descriptor is read.
struct Common {
  DType dtype, index_dtype;
  int64_t V, D;
  std::optional<int64_t> padding_idx;
};

using IndexDTypes = DTypeList<DType::i32, DType::i64>;

Status check_common(std::string_view op, const Common& c, bool backward, int64_t n) {
  auto bad = [&](auto... parts) { return error(StatusCode::kInvalidProblem, op, ": ", parts...); };
  if (Status s = check_dtype(op, "dtype", c.dtype, FloatDTypes{}); !s.ok()) return s;
  if (Status s = check_dtype(op, "index_dtype", c.index_dtype, IndexDTypes{}); !s.ok()) return s;
  if (c.V < 0) return bad("num_embeddings = ", c.V, " must be >= 0");
  if (c.D < 0) return bad("embedding_dim = ", c.D, " must be >= 0");
  if (c.padding_idx && (*c.padding_idx < -c.V || *c.padding_idx >= c.V))
    return bad("padding_idx = ", *c.padding_idx, " must be in [-num_embeddings, num_embeddings) = [", -c.V, ", ", c.V, ")");
  if (c.V >= kMaxBackwardCount)
    return error(StatusCode::kUnsupported, op, ": num_embeddings = ", c.V, " must be < 2^31 - 1 (rows are addressed as int32)");
  if (backward && n > kMaxBackwardCount)
    return error(StatusCode::kUnsupported, op, ": ", n, " indices exceed the backward's 2^31 - 1");
  return {};
}

int64_t norm_padding(const Common& c) { return c.padding_idx ? (*c.padding_idx < 0 ? *c.padding_idx + c.V : *c.padding_idx) : -1; }

// The backward's two forms, in order (select_first): the atomic counting scatter where it is
// allowed and kAuto's index count favours it, else the deterministic radix sort.
template <class D>
constexpr bool kIsBag = std::is_same_v<D, EmbeddingBagDescriptor>;
template <class D>
bool max_mode(const D& d) {
  if constexpr (kIsBag<D>) return d.mode == EmbeddingBagMode::kMax;
  else return false;
}
template <class D>
int64_t index_count(const D& d) {
  if constexpr (kIsBag<D>) return d.indices_count();
  else return d.num_indices;
}
template <class D>
Status scatter_accepts(const D& d, const PlanPreference& pref) {
  const bool asked = d.backward_algo == EmbeddingBackwardAlgo::kScatter;
  if (d.backward_algo == EmbeddingBackwardAlgo::kSort) return error(StatusCode::kUnsupported, "backward_algo = sort");
  if (max_mode(d))
    return error(StatusCode::kUnsupported, asked ? "backward_algo = scatter " : "", "is not available in max mode (it always sorts)");
  if (pref.determinism == Determinism::kRunToRun)
    return error(StatusCode::kUnsupported, asked ? "backward_algo = scatter " : "",
                 "is not run-to-run deterministic (PlanPreference::determinism = run_to_run)");
  if (!asked && index_count(d) >= kSortFromIndices)
    return error(StatusCode::kUnsupported, "backward_algo = auto sorts from ", kSortFromIndices, " indices");
  return {};
}
template <class D>
Status sort_accepts(const D& d, const PlanPreference&) {
  if (d.backward_algo == EmbeddingBackwardAlgo::kScatter) return error(StatusCode::kUnsupported, "backward_algo = scatter");
  return {};
}
template <class D>
constexpr Impl<D> kBackwardImpls[] = {{"scatter", Backend::kBespoke, &scatter_accepts<D>},
                                      {"sort", Backend::kBespoke, &sort_accepts<D>}};

// The optional invalid-index counter (i64, one element).
void add_counter(OperandSpecs* ops, bool on) {
  if (on) ops->add("invalid_count", OperandRole::kInOut, DType::i64, {1});  // added to
}

// ---------------------------------------------------------------- geometry

// 16-byte vectors fit a row operand: unit stride on D, other strides and the base aligned.
bool rows_vec_ok(const TensorLayout& t, const void* data, int vec, size_t es) {
  if (reinterpret_cast<uintptr_t>(data) % (static_cast<size_t>(vec) * es) != 0) return false;
  for (int a = 0; a + 1 < t.rank; ++a)
    if (t.shape[a] > 1 && t.stride[a] % vec != 0) return false;
  return t.stride[t.rank - 1] == 1;
}

// Vector width, group and chunks for D columns; `unroll` vectors per lane per item (gather).
void set_geometry(detail::EmbParams* p, DType t, bool vector, int unroll) {
  const int64_t vec = vector ? 16 / static_cast<int64_t>(dtype_size(t)) : 1;
  const int64_t nvec = (p->D + vec - 1) / vec, per_lane = (nvec + unroll - 1) / unroll;
  int g = 1;
  while (g < 32 && g < per_lane) g *= 2;
  p->group = g;
  p->chunks = (nvec + int64_t{g} * unroll - 1) / (int64_t{g} * unroll);
  p->sms = std::max(1, current_device_sm_count());
}

bool vector_fits(DType t, int64_t D, std::initializer_list<std::pair<const TensorLayout*, const void*>> rows) {
  const int vec = 16 / static_cast<int>(dtype_size(t));
  if (D % vec != 0 || D == 0) return false;
  for (auto [l, d] : rows)
    if (!rows_vec_ok(*l, d, vec, dtype_size(t))) return false;
  return true;
}

// ---------------------------------------------------------------- backward workspace

struct BwdLayout {
  size_t counts, row_start, rows, n_rows, keys_in, keys, pos_in, pos, bag_of, bag_count, partials, cub, total;
  bool has_bag_of, has_bag_count;
};

BwdLayout bwd_layout(int64_t N, int64_t V, int64_t B, int64_t D, DType t, bool offsets_form, bool mean) {
  BwdLayout l{};
  WorkspaceLayout w;
  const size_t n = static_cast<size_t>(N), acc = dtype_size(acc_of(t));
  l.counts = w.take_n<int>(static_cast<size_t>(V + 2));  // the histogram, then fill_ticket
  l.row_start = w.take_n<int>(static_cast<size_t>(V + 1));
  l.rows = w.take_n<int>(static_cast<size_t>(std::min(N, V)));
  l.n_rows = w.take_n<int>(1);
  l.keys_in = w.take_n<uint32_t>(n);
  l.keys = w.take_n<uint32_t>(n);
  l.pos_in = w.take_n<int>(n);
  l.pos = w.take_n<int>(n);
  l.bag_of = w.take_n<int>(offsets_form ? n : 0);
  l.bag_count = w.take_n<int>(mean ? static_cast<size_t>(B) : 0);
  l.partials = w.take(static_cast<size_t>((N + detail::kEmbTile - 1) / detail::kEmbTile) * 2 * static_cast<size_t>(D) * acc);
  l.cub = w.take(detail::emb_cub_bound(N, V));
  l.total = w.total();
  l.has_bag_of = offsets_form;
  l.has_bag_count = mean;
  return l;
}

int key_bits(int64_t V) { return std::max(1, static_cast<int>(std::bit_width(static_cast<uint64_t>(V)))); }

// Points the workspace pieces of p; checks size and CUB's actual need.
Status bind_workspace(std::string_view op, const BwdLayout& l, Workspace ws, detail::EmbParams* p) {
  if (Status s = check_workspace(op, ws, l.total); !s.ok()) return s;
  p->counts = slice<int>(ws, l.counts);
  p->fill_ticket = reinterpret_cast<unsigned*>(p->counts + p->V + 1);
  p->row_start = slice<int>(ws, l.row_start);
  p->rows = slice<int>(ws, l.rows);
  p->n_rows = slice<int>(ws, l.n_rows);
  p->keys_in = slice<uint32_t>(ws, l.keys_in);
  p->keys = slice<uint32_t>(ws, l.keys);
  p->pos_in = slice<int>(ws, l.pos_in);
  p->pos = slice<int>(ws, l.pos);
  p->bag_of = l.has_bag_of ? slice<int>(ws, l.bag_of) : nullptr;
  p->bag_count = l.has_bag_count ? slice<int>(ws, l.bag_count) : nullptr;
  p->partials = slice<char>(ws, l.partials);
  p->cub_temp = slice<char>(ws, l.cub);
  p->cub_bytes = l.total - l.cub;
  p->key_bits = key_bits(p->V);
  size_t need = 0;
  if (cudaError_t e = detail::emb_cub_query(p->N, p->V, p->key_bits, &need); e != cudaSuccess) return cuda_status(e, op);
  if (need > p->cub_bytes)
    return error(StatusCode::kInternal, op, ": CUB needs ", need, " scratch bytes, the plan reserved ", p->cub_bytes);
  return {};
}

Status launch(std::string_view op, detail::EmbLaunchFn fn, const detail::EmbParams& p, cudaStream_t stream) {
  if (fn == nullptr) return error(StatusCode::kInternal, op, ": no kernel for this dtype");
  return cuda_status(fn(p, stream), op);
}

unsigned long long* counter_ptr(bool on, const TensorMut& c) {
  return on ? static_cast<unsigned long long*>(c.data) : nullptr;
}

// What the generic check leaves to the embedding: indices of any shape S (rank <= 7, numel N)
// and the row operand (out / dout) of shape [S..., D].
Status check_rows_operand(std::string_view op, const TensorLayout& idx, std::string_view name, const TensorLayout& rows,
                          int64_t D) {
  if (idx.rank > kMaxRank - 1)
    return error(StatusCode::kInvalidProblem, op, ": indices rank ", idx.rank, " must be <= ", kMaxRank - 1);
  int64_t want[kMaxRank];
  std::copy(idx.shape, idx.shape + idx.rank, want);
  want[idx.rank] = D;
  const std::span<const int64_t> w(want, static_cast<size_t>(idx.rank + 1)), got(rows.shape, static_cast<size_t>(rows.rank));
  if (!std::equal(got.begin(), got.end(), w.begin(), w.end()))
    return error(StatusCode::kInvalidProblem, op, ": ", name, " shape ", shape_string(got), " does not match indices' shape + [",
                 D, "] = ", shape_string(w));
  return {};
}

}  // namespace

// ================================================================ embedding

Result<EmbeddingDescriptor> EmbeddingDescriptor::from_args(const EmbeddingArgs& a) {
  if (a.weight.rank != 2) return error(StatusCode::kInvalidProblem, kEmb, ": weight has rank ", a.weight.rank, "; it must be 2");
  EmbeddingDescriptor d;
  d.dtype = a.weight.dtype;
  d.index_dtype = a.indices.dtype;
  d.num_embeddings = a.weight.shape[0];
  d.embedding_dim = a.weight.shape[1];
  d.num_indices = a.indices.numel();
  d.count_invalid = a.invalid_count.data != nullptr;
  return d;
}

namespace {

// Validation, sku, guarantee and operands of both directions; the backward's form (sort or
// scatter) is returned in *sorted (nullptr: the forward).
Status select_embedding(std::string_view op, const EmbeddingDescriptor& d, const PlanPreference& pref, KernelSku* sku,
                        PrecisionGuarantee* g, OperandSpecs* ops, bool* sorted) {
  const bool backward = sorted != nullptr;
  if (Status s = begin_select(op, d, pref, sku); !s.ok()) return s;
  const Common c{d.dtype, d.index_dtype, d.num_embeddings, d.embedding_dim, d.padding_idx};
  if (d.num_indices < 0) return error(StatusCode::kInvalidProblem, op, ": num_indices = ", d.num_indices, " must be >= 0");
  if (Status s = check_common(op, c, backward, d.num_indices); !s.ok()) return s;
  std::string_view variant = "gather";
  if (backward) {
    auto impl = select_first(op, kBackwardImpls<EmbeddingDescriptor>, d, pref);
    if (!impl) return impl.status();
    variant = (*impl)->name;
    *sorted = variant == "sort";
  }
  sku->op = "embedding";
  sku->direction = backward ? Direction::kBackward : Direction::kForward;
  sku->dtype = d.dtype;
  sku->variant = std::string(variant);
  *g = float_guarantee(d.dtype, !backward, backward && !*sorted ? Determinism::kAny : Determinism::kRunToRun);
  const int64_t N = d.num_indices, V = d.num_embeddings, D = d.embedding_dim;
  ops->input("indices", d.index_dtype, {N}).any_shape = true;
  if (backward) {
    ops->input("dout", d.dtype, {N, D}).any_shape = true;
    ops->output("dweight", d.dtype, {V, D});
  } else {
    ops->input("weight", d.dtype, {V, D});
    ops->output("out", d.dtype, {N, D}).any_shape = true;
  }
  add_counter(ops, d.count_invalid);
  return backward ? resolve_operands<EmbeddingBackwardArgs>(op, *ops) : resolve_operands<EmbeddingArgs>(op, *ops);
}

}  // namespace

Result<EmbeddingPlan> EmbeddingPlan::select(const EmbeddingDescriptor& d, const PlanPreference& pref) {
  EmbeddingPlan plan;
  if (Status s = select_embedding(kEmb, d, pref, &plan.sku_, &plan.guarantee_, &plan.operands_, nullptr); !s.ok()) return s;
  plan.desc_ = d;
  return plan;
}

Status EmbeddingPlan::can_implement(const EmbeddingArgs& a) const {
  if (Status s = check_plan_args(kEmb, selected(), operands_, a); !s.ok()) return s;
  return check_rows_operand(kEmb, a.indices, "out", a.out, desc_.embedding_dim);
}

Status EmbeddingPlan::run(cudaStream_t stream, Workspace, const EmbeddingArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  const EmbeddingDescriptor& d = desc_;
  detail::EmbParams p;
  p.kind = detail::EmbKind::kEmbedding;
  p.V = d.num_embeddings, p.D = d.embedding_dim, p.N = d.num_indices;
  p.idx64 = d.index_dtype == DType::i64;
  p.idx = a.indices.data;
  p.idx_map = detail::make_pos_map(a.indices, a.indices.rank);
  p.weight = a.weight.data, p.w_s0 = a.weight.stride[0], p.w_s1 = a.weight.stride[1];
  p.out = a.out.data;
  p.row_map = detail::make_pos_map(a.out, a.indices.rank);
  p.row_s1 = a.out.stride[a.indices.rank];
  p.invalid = counter_ptr(d.count_invalid, a.invalid_count);
  const bool vec = vector_fits(d.dtype, p.D, {{&a.weight, a.weight.data}, {&a.out, a.out.data}});
  set_geometry(&p, d.dtype, vec, detail::kGatherUnroll);
  return launch(kEmb, detail::emb_forward_launcher(d.dtype, vec), p, stream);
}

Result<EmbeddingBackwardPlan> EmbeddingBackwardPlan::select(const EmbeddingBackwardDescriptor& d, const PlanPreference& pref) {
  EmbeddingBackwardPlan plan;
  if (Status s = select_embedding(kEmbBwd, d, pref, &plan.sku_, &plan.guarantee_, &plan.operands_, &plan.sorted_); !s.ok())
    return s;
  plan.desc_ = d;
  plan.workspace_ = bwd_layout(d.num_indices, d.num_embeddings, 0, d.embedding_dim, d.dtype, false, false).total;
  if (Status s = check_workspace_budget(kEmbBwd, plan.workspace_, pref.max_workspace_bytes); !s.ok()) return s;
  return plan;
}

Status EmbeddingBackwardPlan::can_implement(const EmbeddingBackwardArgs& a) const {
  if (Status s = check_plan_args(kEmbBwd, selected(), operands_, a); !s.ok()) return s;
  return check_rows_operand(kEmbBwd, a.indices, "dout", a.dout, desc_.embedding_dim);
}

Status EmbeddingBackwardPlan::run(cudaStream_t stream, Workspace ws, const EmbeddingBackwardArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (writes_nothing(operands_, a)) return {};
  const EmbeddingDescriptor& d = desc_;
  detail::EmbParams p;
  p.kind = detail::EmbKind::kEmbedding;
  p.V = d.num_embeddings, p.D = d.embedding_dim, p.N = d.num_indices;
  p.padding = norm_padding({d.dtype, d.index_dtype, d.num_embeddings, d.embedding_dim, d.padding_idx});
  p.idx64 = d.index_dtype == DType::i64;
  p.idx = a.indices.data;
  p.idx_map = detail::make_pos_map(a.indices, a.indices.rank);
  p.dout = a.dout.data;
  p.row_map = detail::make_pos_map(a.dout, a.indices.rank);
  p.row_s1 = a.dout.stride[a.indices.rank];
  p.dweight = a.dweight.data, p.dw_s0 = a.dweight.stride[0], p.dw_s1 = a.dweight.stride[1];
  p.scale_freq = d.scale_grad_by_freq;
  p.invalid = counter_ptr(d.count_invalid, a.invalid_count);
  p.sorted = sorted_;
  const BwdLayout l = bwd_layout(p.N, p.V, 0, p.D, d.dtype, false, false);
  if (Status s = bind_workspace(kEmbBwd, l, ws, &p); !s.ok()) return s;
  const bool vec = vector_fits(d.dtype, p.D, {{&a.dout, a.dout.data}, {&a.dweight, a.dweight.data}});
  set_geometry(&p, d.dtype, vec, detail::kSegCols);
  return launch(kEmbBwd, detail::emb_backward_launcher(d.dtype, vec), p, stream);
}

// ================================================================ embedding_bag

namespace {

// sorted: as select_embedding's.
Status select_bag(std::string_view op, const EmbeddingBagDescriptor& d, const PlanPreference& pref, KernelSku* sku,
                  PrecisionGuarantee* g, OperandSpecs* ops, bool* sorted) {
  const bool backward = sorted != nullptr;
  if (Status s = begin_select(op, d, pref, sku); !s.ok()) return s;
  auto bad = [&](auto... parts) { return error(StatusCode::kInvalidProblem, op, ": ", parts...); };
  if (d.num_bags < 0) return bad("num_bags = ", d.num_bags, " must be >= 0");
  if (d.bag_size < 0) return bad("bag_size = ", d.bag_size, " must be >= 0 (0: offsets form)");
  if (d.bag_size == 0 && d.num_indices < 0) return bad("num_indices = ", d.num_indices, " must be >= 0");
  if (d.bag_size > 0 && d.num_bags > INT64_MAX / d.bag_size) return bad("num_bags * bag_size overflows int64");
  if (d.bag_size == 0 && d.include_last_offset && d.num_bags == INT64_MAX)
    return bad("num_bags = ", d.num_bags, " leaves no room for the last offset (num_bags + 1 offsets)");
  if (d.bag_size > 0 && d.include_last_offset) return bad("include_last_offset needs the offsets form (bag_size = 0)");
  if (d.per_sample_weights && d.mode != EmbeddingBagMode::kSum)
    return bad("per_sample_weights are only allowed with mode sum, not ", enum_name(d.mode));
  if (d.per_sample_weights_grad && !d.per_sample_weights) return bad("per_sample_weights_grad needs per_sample_weights");
  if (d.scale_grad_by_freq && d.mode == EmbeddingBagMode::kMax) return bad("scale_grad_by_freq is not allowed with mode max");
  const Common c{d.dtype, d.index_dtype, d.num_embeddings, d.embedding_dim, d.padding_idx};
  if (Status s = check_common(op, c, backward, d.indices_count()); !s.ok()) return s;
  if (backward && d.num_bags > kMaxBackwardCount)
    return error(StatusCode::kUnsupported, op, ": num_bags = ", d.num_bags, " must be < 2^31 in the backward");
  std::string_view variant = "bags";
  if (backward) {
    auto impl = select_first(op, kBackwardImpls<EmbeddingBagDescriptor>, d, pref);
    if (!impl) return impl.status();
    variant = (*impl)->name;
    *sorted = variant == "sort";
  }
  sku->op = cat("embedding_bag.", enum_name(d.mode));
  sku->direction = backward ? Direction::kBackward : Direction::kForward;
  sku->dtype = d.dtype;
  sku->variant = std::string(variant);
  *g = float_guarantee(d.dtype, !backward && d.mode == EmbeddingBagMode::kMax,
                       backward && !*sorted ? Determinism::kAny : Determinism::kRunToRun);
  const int64_t B = d.num_bags, V = d.num_embeddings, D = d.embedding_dim;
  int64_t is[2];
  int ir = 0;
  if (d.bag_size > 0) is[0] = B, is[1] = d.bag_size, ir = 2;
  else is[0] = d.num_indices, ir = 1;
  const std::span<const int64_t> ishape(is, static_cast<size_t>(ir));
  if (!backward) ops->input("weight", d.dtype, {V, D});
  ops->input("indices", d.index_dtype, ishape);
  if (d.bag_size == 0) ops->input("offsets", d.index_dtype, {B + (d.include_last_offset ? 1 : 0)});
  if (d.per_sample_weights) ops->input("per_sample_weights", d.dtype, ishape);
  if (backward) {
    if (d.mode == EmbeddingBagMode::kMax) ops->input("max_indices", d.index_dtype, {B, D});
    ops->input("dout", d.dtype, {B, D});
    if (d.per_sample_weights_grad) ops->input("weight", d.dtype, {V, D});
    ops->output("dweight", d.dtype, {V, D});
    if (d.per_sample_weights_grad) ops->output("dper_sample_weights", d.dtype, ishape);
  } else {
    ops->output("out", d.dtype, {B, D});
    if (d.mode == EmbeddingBagMode::kMax) ops->output("max_indices", d.index_dtype, {B, D});
  }
  add_counter(ops, d.count_invalid);
  return backward ? resolve_operands<EmbeddingBagBackwardArgs>(op, *ops) : resolve_operands<EmbeddingBagArgs>(op, *ops);
}

detail::EmbParams bag_params(const EmbeddingBagDescriptor& d, const TensorRef& idx, const TensorRef& off,
                             const TensorRef& psw) {
  detail::EmbParams p;
  p.kind = d.mode == EmbeddingBagMode::kSum ? detail::EmbKind::kSum
           : d.mode == EmbeddingBagMode::kMean ? detail::EmbKind::kMean : detail::EmbKind::kMax;
  p.V = d.num_embeddings, p.D = d.embedding_dim, p.N = d.indices_count(), p.B = d.num_bags, p.bag_size = d.bag_size;
  p.padding = norm_padding({d.dtype, d.index_dtype, d.num_embeddings, d.embedding_dim, d.padding_idx});
  p.idx64 = d.index_dtype == DType::i64;
  p.idx = idx.data;
  p.idx_map = detail::make_pos_map(idx, idx.rank);
  if (d.bag_size == 0) p.off = off.data, p.off_s = off.stride[0], p.include_last = d.include_last_offset;
  if (d.per_sample_weights) p.psw = psw.data, p.psw_map = detail::make_pos_map(psw, psw.rank);
  return p;
}

}  // namespace

Result<EmbeddingBagDescriptor> EmbeddingBagDescriptor::from_args(const EmbeddingBagArgs& a, EmbeddingBagMode mode,
                                                                 bool include_last_offset) {
  if (a.weight.rank != 2) return error(StatusCode::kInvalidProblem, kBag, ": weight has rank ", a.weight.rank, "; it must be 2");
  if (a.indices.rank != 1 && a.indices.rank != 2)
    return error(StatusCode::kInvalidProblem, kBag, ": indices has rank ", a.indices.rank, "; it must be 1 (with offsets) or 2");
  EmbeddingBagDescriptor d;
  d.dtype = a.weight.dtype;
  d.index_dtype = a.indices.dtype;
  d.num_embeddings = a.weight.shape[0];
  d.embedding_dim = a.weight.shape[1];
  d.mode = mode;
  if (a.indices.rank == 2) {
    d.num_bags = a.indices.shape[0];
    d.bag_size = a.indices.shape[1];
  } else {
    if (a.offsets.rank != 1) return error(StatusCode::kInvalidProblem, kBag, ": 1-D indices need 1-D offsets");
    d.num_indices = a.indices.shape[0];
    d.include_last_offset = include_last_offset;
    d.num_bags = a.offsets.shape[0] - (include_last_offset ? 1 : 0);
  }
  d.per_sample_weights = a.per_sample_weights.data != nullptr;
  d.count_invalid = a.invalid_count.data != nullptr;
  return d;
}

Result<EmbeddingBagPlan> EmbeddingBagPlan::select(const EmbeddingBagDescriptor& d, const PlanPreference& pref) {
  EmbeddingBagPlan plan;
  if (Status s = select_bag(kBag, d, pref, &plan.sku_, &plan.guarantee_, &plan.operands_, nullptr); !s.ok()) return s;
  plan.desc_ = d;
  return plan;
}

Status EmbeddingBagPlan::can_implement(const EmbeddingBagArgs& a) const {
  return check_plan_args(kBag, selected(), operands_, a);
}

Status EmbeddingBagPlan::run(cudaStream_t stream, Workspace, const EmbeddingBagArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  const EmbeddingBagDescriptor& d = desc_;
  detail::EmbParams p = bag_params(d, a.indices, a.offsets, a.per_sample_weights);
  p.weight = a.weight.data, p.w_s0 = a.weight.stride[0], p.w_s1 = a.weight.stride[1];
  p.out = a.out.data;
  p.row_map = detail::make_pos_map(a.out, 1);
  p.row_s1 = a.out.stride[1];
  if (d.mode == EmbeddingBagMode::kMax)
    p.max_idx = a.max_indices.data, p.mi_s0 = a.max_indices.stride[0], p.mi_s1 = a.max_indices.stride[1];
  p.invalid = counter_ptr(d.count_invalid, a.invalid_count);
  const bool vec = vector_fits(d.dtype, p.D, {{&a.weight, a.weight.data}, {&a.out, a.out.data}});
  set_geometry(&p, d.dtype, vec, 1);
  return launch(kBag, detail::emb_forward_launcher(d.dtype, vec), p, stream);
}

Result<EmbeddingBagBackwardPlan> EmbeddingBagBackwardPlan::select(const EmbeddingBagBackwardDescriptor& d,
                                                                  const PlanPreference& pref) {
  EmbeddingBagBackwardPlan plan;
  if (Status s = select_bag(kBagBwd, d, pref, &plan.sku_, &plan.guarantee_, &plan.operands_, &plan.sorted_); !s.ok())
    return s;
  plan.desc_ = d;
  plan.workspace_ = bwd_layout(d.indices_count(), d.num_embeddings, d.num_bags, d.embedding_dim, d.dtype, d.bag_size == 0,
                               d.mode == EmbeddingBagMode::kMean)
                        .total;
  if (Status s = check_workspace_budget(kBagBwd, plan.workspace_, pref.max_workspace_bytes); !s.ok()) return s;
  return plan;
}

Status EmbeddingBagBackwardPlan::can_implement(const EmbeddingBagBackwardArgs& a) const {
  return check_plan_args(kBagBwd, selected(), operands_, a);
}

Status EmbeddingBagBackwardPlan::run(cudaStream_t stream, Workspace ws, const EmbeddingBagBackwardArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (writes_nothing(operands_, a)) return {};
  const EmbeddingBagDescriptor& d = desc_;
  detail::EmbParams p = bag_params(d, a.indices, a.offsets, a.per_sample_weights);
  p.slot_bag = p.psw == nullptr;  // the row writer then needs no bag look-up per term
  p.dout = a.dout.data;
  p.row_map = detail::make_pos_map(a.dout, 1);
  p.row_s1 = a.dout.stride[1];
  if (d.mode == EmbeddingBagMode::kMax)
    p.max_idx = const_cast<void*>(a.max_indices.data), p.mi_s0 = a.max_indices.stride[0], p.mi_s1 = a.max_indices.stride[1];
  p.dweight = a.dweight.data, p.dw_s0 = a.dweight.stride[0], p.dw_s1 = a.dweight.stride[1];
  if (d.per_sample_weights_grad) {
    p.weight = a.weight.data, p.w_s0 = a.weight.stride[0], p.w_s1 = a.weight.stride[1];
    p.dpsw = a.dper_sample_weights.data;
    p.dpsw_map = detail::make_pos_map(a.dper_sample_weights, a.dper_sample_weights.rank);
  }
  p.scale_freq = d.scale_grad_by_freq;
  p.invalid = counter_ptr(d.count_invalid, a.invalid_count);
  p.sorted = sorted_;
  const BwdLayout l = bwd_layout(p.N, p.V, p.B, p.D, d.dtype, d.bag_size == 0, d.mode == EmbeddingBagMode::kMean);
  if (Status s = bind_workspace(kBagBwd, l, ws, &p); !s.ok()) return s;
  bool vec = vector_fits(d.dtype, p.D, {{&a.dout, a.dout.data}, {&a.dweight, a.dweight.data}});
  if (d.per_sample_weights_grad) vec = vec && vector_fits(d.dtype, p.D, {{&a.weight, a.weight.data}});
  set_geometry(&p, d.dtype, vec, detail::kSegCols);
  return launch(kBagBwd, detail::emb_backward_launcher(d.dtype, vec), p, stream);
}

}  // namespace baracuda
