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
#include "core/hash.hpp"
#include "core/validate.hpp"
#include "ops/embedding/embedding_geometry.hpp"

namespace baracuda {

namespace detail {

PosMap make_pos_map(const TensorLayout& t, int rank) {
  PosMap m;
  m.rank = 0;
  for (int a = 0; a < rank; ++a) {
    if (t.shape[a] == 1) continue;
    if (m.rank > 0 && m.stride[m.rank - 1] == t.stride[a] * t.shape[a]) {  // merge into the previous axis
      m.shape[m.rank - 1] *= t.shape[a];
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

Status check_common(std::string_view op, const Common& c, bool backward, int64_t n) {
  auto bad = [&](auto... parts) { return error(StatusCode::kInvalidProblem, op, ": ", parts...); };
  if (!FloatDTypes::contains(c.dtype))
    return error(StatusCode::kUnsupported, op, ": dtype ", dtype_name(c.dtype), " is not supported (supported: ",
                 FloatDTypes::names(), ")");
  if (c.index_dtype != DType::i32 && c.index_dtype != DType::i64)
    return error(StatusCode::kUnsupported, op, ": index_dtype ", dtype_name(c.index_dtype), " must be i32 or i64");
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

Status check_backend(std::string_view op, const PlanPreference& pref) {
  if (pref.forced_backend != Backend::kAny && pref.forced_backend != Backend::kBespoke)
    return error(StatusCode::kUnsupported, op, ": forced backend ", backend_name(pref.forced_backend),
                 " has no implementation (candidates: bespoke)");
  return {};
}

void fill_sku(KernelSku* sku, std::string op, Direction dir, DType t, int arch, std::string variant) {
  sku->op = std::move(op);
  sku->direction = dir;
  sku->dtype = t;
  sku->backend = Backend::kBespoke;
  sku->arch = arch;
  sku->variant = std::move(variant);
}

PrecisionGuarantee guarantee(DType t, bool exact, Determinism det) {
  const DType acc = t == DType::f64 ? DType::f64 : DType::f32;
  return PrecisionGuarantee{acc, acc, exact, det};
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
  size_t at = 0;
  auto take = [&](size_t bytes) {
    const size_t here = at;
    at += (bytes + 255) / 256 * 256;
    return here;
  };
  const size_t n = static_cast<size_t>(N), acc = t == DType::f64 ? 8 : 4;
  l.counts = take(4 * static_cast<size_t>(V + 2));  // the histogram, then fill_ticket
  l.row_start = take(4 * static_cast<size_t>(V + 1));
  l.rows = take(4 * static_cast<size_t>(std::min(N, V)));
  l.n_rows = take(4);
  l.keys_in = take(4 * n);
  l.keys = take(4 * n);
  l.pos_in = take(4 * n);
  l.pos = take(4 * n);
  l.bag_of = take(offsets_form ? 4 * n : 0);
  l.bag_count = take(mean ? 4 * static_cast<size_t>(B) : 0);
  l.partials = take(static_cast<size_t>((N + detail::kEmbTile - 1) / detail::kEmbTile) * 2 * static_cast<size_t>(D) * acc);
  l.cub = take(detail::emb_cub_bound(N, V));
  l.total = at;
  l.has_bag_of = offsets_form;
  l.has_bag_count = mean;
  return l;
}

int key_bits(int64_t V) { return std::max(1, static_cast<int>(std::bit_width(static_cast<uint64_t>(V)))); }

// Points the workspace pieces of p; checks size and CUB's actual need.
Status bind_workspace(std::string_view op, const BwdLayout& l, Workspace ws, detail::EmbParams* p) {
  if (ws.bytes < l.total || (l.total > 0 && ws.ptr == nullptr))
    return error(StatusCode::kWorkspaceTooSmall, op, ": workspace has ", ws.bytes, " bytes, needs ", l.total);
  if (reinterpret_cast<uintptr_t>(ws.ptr) % 256 != 0)
    return error(StatusCode::kMisalignedOperand, op, ": workspace must be 256-byte aligned");
  char* w = static_cast<char*>(ws.ptr);
  p->counts = reinterpret_cast<int*>(w + l.counts);
  p->fill_ticket = reinterpret_cast<unsigned*>(p->counts + p->V + 1);
  p->row_start = reinterpret_cast<int*>(w + l.row_start);
  p->rows = reinterpret_cast<int*>(w + l.rows);
  p->n_rows = reinterpret_cast<int*>(w + l.n_rows);
  p->keys_in = reinterpret_cast<uint32_t*>(w + l.keys_in);
  p->keys = reinterpret_cast<uint32_t*>(w + l.keys);
  p->pos_in = reinterpret_cast<int*>(w + l.pos_in);
  p->pos = reinterpret_cast<int*>(w + l.pos);
  p->bag_of = l.has_bag_of ? reinterpret_cast<int*>(w + l.bag_of) : nullptr;
  p->bag_count = l.has_bag_count ? reinterpret_cast<int*>(w + l.bag_count) : nullptr;
  p->partials = w + l.partials;
  p->cub_temp = w + l.cub;
  p->cub_bytes = l.total - l.cub;
  p->key_bits = key_bits(p->V);
  size_t need = 0;
  if (int e = detail::emb_cub_query(p->N, p->V, p->key_bits, &need); e != 0)
    return cuda_status(static_cast<cudaError_t>(e), op);
  if (need > p->cub_bytes)
    return error(StatusCode::kInternal, op, ": CUB needs ", need, " scratch bytes, the plan reserved ", p->cub_bytes);
  return {};
}

Status launch(std::string_view op, detail::EmbLaunchFn fn, const detail::EmbParams& p, cudaStream_t stream) {
  if (fn == nullptr) return error(StatusCode::kInternal, op, ": no kernel for this dtype");
  return cuda_status(static_cast<cudaError_t>(fn(p, stream)), op);
}

// The optional invalid-index counter (i64, one element).
void push_counter(OperandList* ops, bool on, const TensorMut& c) {
  if (on) ops->push_back({"invalid_count", &c, c.data, DType::i64, {1}, 1, true});
}
unsigned long long* counter_ptr(bool on, const TensorMut& c) {
  return on ? static_cast<unsigned long long*>(c.data) : nullptr;
}

// indices of any shape with numel n (rank <= kMaxRank − 1): its own shape, checked.
Status check_any_shape_indices(std::string_view op, const TensorRef& idx, int64_t n) {
  if (Status s = check_layout(op, "indices", idx); !s.ok()) return s;
  if (idx.rank > kMaxRank - 1)
    return error(StatusCode::kInvalidProblem, op, ": indices rank ", idx.rank, " must be <= ", kMaxRank - 1);
  if (idx.numel() != n)
    return error(StatusCode::kInvalidProblem, op, ": indices has ", idx.numel(), " elements, descriptor num_indices = ", n);
  return {};
}

Operand rows_operand(std::string_view name, const TensorLayout* v, const void* data, DType t, const TensorLayout& idx,
                     int64_t D, bool output) {
  Operand o{name, v, data, t, {}, idx.rank + 1, output};
  for (int a = 0; a < idx.rank; ++a) o.shape[a] = idx.shape[a];
  o.shape[idx.rank] = D;
  return o;
}

}  // namespace

std::string_view embedding_bag_mode_name(EmbeddingBagMode m) {
  return m == EmbeddingBagMode::kSum ? "sum" : m == EmbeddingBagMode::kMean ? "mean" : m == EmbeddingBagMode::kMax ? "max" : "?";
}

size_t EmbeddingDescriptor::hash() const {
  Fnv1a f;
  for (int64_t v : {int64_t(dtype), int64_t(index_dtype), num_embeddings, embedding_dim, num_indices,
                    int64_t(padding_idx.has_value()), padding_idx.value_or(0), int64_t(scale_grad_by_freq), int64_t(count_invalid),
                    int64_t(backward_algo)})
    f.mix(v);
  return f.value();
}

size_t EmbeddingBagDescriptor::hash() const {
  Fnv1a f;
  for (int64_t v : {int64_t(dtype), int64_t(index_dtype), num_embeddings, embedding_dim, int64_t(mode), num_bags, bag_size,
                    num_indices, int64_t(include_last_offset), int64_t(per_sample_weights), int64_t(padding_idx.has_value()),
                    padding_idx.value_or(0), int64_t(scale_grad_by_freq), int64_t(per_sample_weights_grad),
                    int64_t(count_invalid), int64_t(backward_algo)})
    f.mix(v);
  return f.value();
}

// ================================================================ embedding

namespace {

// The backward's implementation: sort (deterministic) or scatter; see embedding.hpp.
Status pick_backward(std::string_view op, EmbeddingBackwardAlgo algo, const PlanPreference& pref, bool max_mode,
                     int64_t n, bool* sorted) {
  if (static_cast<int>(algo) > static_cast<int>(EmbeddingBackwardAlgo::kScatter))
    return error(StatusCode::kInvalidProblem, op, ": backward_algo is not an EmbeddingBackwardAlgo");
  const bool must_sort = pref.determinism == Determinism::kRunToRun || max_mode;
  if (algo == EmbeddingBackwardAlgo::kScatter && max_mode)
    return error(StatusCode::kUnsupported, op, ": backward_algo = scatter is not available in max mode (it always sorts)");
  if (algo == EmbeddingBackwardAlgo::kScatter && must_sort)
    return error(StatusCode::kUnsupported, op,
                 ": backward_algo = scatter is not run-to-run deterministic (PlanPreference::determinism = kRunToRun)");
  *sorted = must_sort || algo == EmbeddingBackwardAlgo::kSort ||
            (algo == EmbeddingBackwardAlgo::kAuto && n >= kSortFromIndices);
  return {};
}

// sorted: the backward's form (sort or scatter) is returned there; nullptr selects the forward.
Status select_embedding(std::string_view op, const EmbeddingDescriptor& d, const PlanPreference& pref, KernelSku* sku,
                        bool* sorted) {
  const bool backward = sorted != nullptr;
  const Common c{d.dtype, d.index_dtype, d.num_embeddings, d.embedding_dim, d.padding_idx};
  if (d.num_indices < 0) return error(StatusCode::kInvalidProblem, op, ": num_indices = ", d.num_indices, " must be >= 0");
  if (Status s = check_common(op, c, backward, d.num_indices); !s.ok()) return s;
  if (Status s = check_backend(op, pref); !s.ok()) return s;
  auto arch = resolve_arch(op, pref);
  if (!arch) return arch.status();
  if (backward)
    if (Status s = pick_backward(op, d.backward_algo, pref, false, d.num_indices, sorted); !s.ok()) return s;
  fill_sku(sku, "embedding", backward ? Direction::kBackward : Direction::kForward, d.dtype, *arch,
           backward ? (*sorted ? "sort" : "scatter") : "gather");
  return {};
}

}  // namespace

Result<EmbeddingPlan> EmbeddingPlan::select(const EmbeddingDescriptor& d, const PlanPreference& pref) {
  EmbeddingPlan plan;
  if (Status s = select_embedding(kEmb, d, pref, &plan.sku_, nullptr); !s.ok()) return s;
  plan.desc_ = d;
  return plan;
}

PrecisionGuarantee EmbeddingPlan::precision_guarantee() const {
  return guarantee(desc_.dtype, /*exact=*/true, Determinism::kRunToRun);
}

Status EmbeddingPlan::can_implement(const EmbeddingArgs& a) const {
  const EmbeddingDescriptor& d = desc_;
  if (Status s = check_any_shape_indices(kEmb, a.indices, d.num_indices); !s.ok()) return s;
  OperandList ops;
  ops.push_back({"weight", &a.weight, a.weight.data, d.dtype, {d.num_embeddings, d.embedding_dim}, 2, false});
  Operand idx{"indices", &a.indices, a.indices.data, d.index_dtype, {}, a.indices.rank, false};
  std::copy(a.indices.shape, a.indices.shape + a.indices.rank, idx.shape);
  ops.push_back(idx);
  ops.push_back(rows_operand("out", &a.out, a.out.data, d.dtype, a.indices, d.embedding_dim, true));
  push_counter(&ops, d.count_invalid, a.invalid_count);
  return check_operands(kEmb, ops);
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
  if (Status s = select_embedding(kEmbBwd, d, pref, &plan.sku_, &plan.sorted_); !s.ok()) return s;
  plan.desc_ = d;
  plan.workspace_ = bwd_layout(d.num_indices, d.num_embeddings, 0, d.embedding_dim, d.dtype, false, false).total;
  if (Status s = check_workspace_budget(kEmbBwd, plan.workspace_, pref.max_workspace_bytes); !s.ok()) return s;
  return plan;
}

PrecisionGuarantee EmbeddingBackwardPlan::precision_guarantee() const {
  return guarantee(desc_.dtype, false, sorted_ ? Determinism::kRunToRun : Determinism::kAny);
}

Status EmbeddingBackwardPlan::can_implement(const EmbeddingBackwardArgs& a) const {
  const EmbeddingDescriptor& d = desc_;
  if (Status s = check_any_shape_indices(kEmbBwd, a.indices, d.num_indices); !s.ok()) return s;
  OperandList ops;
  Operand idx{"indices", &a.indices, a.indices.data, d.index_dtype, {}, a.indices.rank, false};
  std::copy(a.indices.shape, a.indices.shape + a.indices.rank, idx.shape);
  ops.push_back(idx);
  ops.push_back(rows_operand("dout", &a.dout, a.dout.data, d.dtype, a.indices, d.embedding_dim, false));
  ops.push_back({"dweight", &a.dweight, a.dweight.data, d.dtype, {d.num_embeddings, d.embedding_dim}, 2, true});
  push_counter(&ops, d.count_invalid, a.invalid_count);
  return check_operands(kEmbBwd, ops);
}

Status EmbeddingBackwardPlan::run(cudaStream_t stream, Workspace ws, const EmbeddingBackwardArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
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
                  bool* sorted) {
  const bool backward = sorted != nullptr;
  auto bad = [&](auto... parts) { return error(StatusCode::kInvalidProblem, op, ": ", parts...); };
  if (static_cast<int>(d.mode) > static_cast<int>(EmbeddingBagMode::kMax)) return bad("mode is not an EmbeddingBagMode");
  if (d.num_bags < 0) return bad("num_bags = ", d.num_bags, " must be >= 0");
  if (d.bag_size < 0) return bad("bag_size = ", d.bag_size, " must be >= 0 (0: offsets form)");
  if (d.bag_size == 0 && d.num_indices < 0) return bad("num_indices = ", d.num_indices, " must be >= 0");
  if (d.bag_size > 0 && d.num_bags > INT64_MAX / d.bag_size) return bad("num_bags * bag_size overflows int64");
  if (d.bag_size > 0 && d.include_last_offset) return bad("include_last_offset needs the offsets form (bag_size = 0)");
  if (d.per_sample_weights && d.mode != EmbeddingBagMode::kSum)
    return bad("per_sample_weights are only allowed with mode sum, not ", embedding_bag_mode_name(d.mode));
  if (d.per_sample_weights_grad && !d.per_sample_weights) return bad("per_sample_weights_grad needs per_sample_weights");
  if (d.scale_grad_by_freq && d.mode == EmbeddingBagMode::kMax) return bad("scale_grad_by_freq is not allowed with mode max");
  const Common c{d.dtype, d.index_dtype, d.num_embeddings, d.embedding_dim, d.padding_idx};
  if (Status s = check_common(op, c, backward, d.indices_count()); !s.ok()) return s;
  if (backward && d.num_bags > kMaxBackwardCount)
    return error(StatusCode::kUnsupported, op, ": num_bags = ", d.num_bags, " must be < 2^31 in the backward");
  if (Status s = check_backend(op, pref); !s.ok()) return s;
  auto arch = resolve_arch(op, pref);
  if (!arch) return arch.status();
  if (backward)
    if (Status s = pick_backward(op, d.backward_algo, pref, d.mode == EmbeddingBagMode::kMax, d.indices_count(), sorted);
        !s.ok())
      return s;
  fill_sku(sku, cat("embedding_bag.", embedding_bag_mode_name(d.mode)), backward ? Direction::kBackward : Direction::kForward,
           d.dtype, *arch, backward ? (*sorted ? "sort" : "scatter") : "bags");
  return {};
}

// indices [N] or [B, bag_size], offsets, per-sample weights (and their gradient) shapes.
void bag_index_shape(const EmbeddingBagDescriptor& d, int64_t* s, int* rank) {
  if (d.bag_size > 0) s[0] = d.num_bags, s[1] = d.bag_size, *rank = 2;
  else s[0] = d.num_indices, *rank = 1;
}

void push_bag_inputs(const EmbeddingBagDescriptor& d, OperandList* ops, const TensorRef& idx, const TensorRef& off,
                     const TensorRef& psw) {
  Operand i{"indices", &idx, idx.data, d.index_dtype, {}, 0, false};
  bag_index_shape(d, i.shape, &i.rank);
  ops->push_back(i);
  if (d.bag_size == 0)
    ops->push_back({"offsets", &off, off.data, d.index_dtype, {d.num_bags + (d.include_last_offset ? 1 : 0)}, 1, false});
  if (d.per_sample_weights) {
    Operand w = i;
    w.name = "per_sample_weights", w.view = &psw, w.data = psw.data, w.dtype = d.dtype;
    ops->push_back(w);
  }
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

Result<EmbeddingBagPlan> EmbeddingBagPlan::select(const EmbeddingBagDescriptor& d, const PlanPreference& pref) {
  EmbeddingBagPlan plan;
  if (Status s = select_bag(kBag, d, pref, &plan.sku_, nullptr); !s.ok()) return s;
  plan.desc_ = d;
  return plan;
}

PrecisionGuarantee EmbeddingBagPlan::precision_guarantee() const {
  return guarantee(desc_.dtype, desc_.mode == EmbeddingBagMode::kMax, Determinism::kRunToRun);
}

Status EmbeddingBagPlan::can_implement(const EmbeddingBagArgs& a) const {
  const EmbeddingBagDescriptor& d = desc_;
  OperandList ops;
  ops.push_back({"weight", &a.weight, a.weight.data, d.dtype, {d.num_embeddings, d.embedding_dim}, 2, false});
  push_bag_inputs(d, &ops, a.indices, a.offsets, a.per_sample_weights);
  ops.push_back({"out", &a.out, a.out.data, d.dtype, {d.num_bags, d.embedding_dim}, 2, true});
  if (d.mode == EmbeddingBagMode::kMax)
    ops.push_back({"max_indices", &a.max_indices, a.max_indices.data, d.index_dtype, {d.num_bags, d.embedding_dim}, 2, true});
  push_counter(&ops, d.count_invalid, a.invalid_count);
  return check_operands(kBag, ops);
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
  if (Status s = select_bag(kBagBwd, d, pref, &plan.sku_, &plan.sorted_); !s.ok()) return s;
  plan.desc_ = d;
  plan.workspace_ = bwd_layout(d.indices_count(), d.num_embeddings, d.num_bags, d.embedding_dim, d.dtype, d.bag_size == 0,
                               d.mode == EmbeddingBagMode::kMean)
                        .total;
  if (Status s = check_workspace_budget(kBagBwd, plan.workspace_, pref.max_workspace_bytes); !s.ok()) return s;
  return plan;
}

PrecisionGuarantee EmbeddingBagBackwardPlan::precision_guarantee() const {
  return guarantee(desc_.dtype, false, sorted_ ? Determinism::kRunToRun : Determinism::kAny);
}

Status EmbeddingBagBackwardPlan::can_implement(const EmbeddingBagBackwardArgs& a) const {
  const EmbeddingBagDescriptor& d = desc_;
  OperandList ops;
  push_bag_inputs(d, &ops, a.indices, a.offsets, a.per_sample_weights);
  if (d.mode == EmbeddingBagMode::kMax)
    ops.push_back({"max_indices", &a.max_indices, a.max_indices.data, d.index_dtype, {d.num_bags, d.embedding_dim}, 2, false});
  ops.push_back({"dout", &a.dout, a.dout.data, d.dtype, {d.num_bags, d.embedding_dim}, 2, false});
  ops.push_back({"dweight", &a.dweight, a.dweight.data, d.dtype, {d.num_embeddings, d.embedding_dim}, 2, true});
  if (d.per_sample_weights_grad) {
    ops.push_back({"weight", &a.weight, a.weight.data, d.dtype, {d.num_embeddings, d.embedding_dim}, 2, false});
    Operand g = ops.v[0];
    g.name = "dper_sample_weights", g.view = &a.dper_sample_weights, g.data = a.dper_sample_weights.data;
    g.dtype = d.dtype, g.output = true;
    ops.push_back(g);
  }
  push_counter(&ops, d.count_invalid, a.invalid_count);
  return check_operands(kBagBwd, ops);
}

Status EmbeddingBagBackwardPlan::run(cudaStream_t stream, Workspace ws, const EmbeddingBagBackwardArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
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
