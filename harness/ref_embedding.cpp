// Reference adapters of the embedding rows. Indices are drawn over [0, V) by CaseOptions::data:
// "uniform" (the default; one in 32 out of range, -1 or V, when a reference is kept), "zipf1.1"
// (row k-1 with weight 1/k^1.1) or "same" (all row 7, or V-1 when V <= 7); offsets are sorted
// draws over [0, N] starting at 0; max_indices (the max backward's input) an index of the bag,
// as a forward would give. Bytes: the ideal traffic (rows read, not the whole table).
#include <algorithm>
#include <cmath>

#include "baracuda/ops/embedding.hpp"
#include "embedding_ref.hpp"
#include "harness/op_case.hpp"
#include "harness/ref_common.hpp"

namespace baracuda::harness {

namespace {

std::vector<double> draw_indices(RefCall& c, int64_t n, int64_t V) {
  std::vector<double> ids(static_cast<size_t>(std::max<int64_t>(n, 0)));
  auto& rng = c.rng();
  if (V <= 0) return std::vector<double>(ids.size(), 0.0);
  if (c.data() == "same") {
    std::fill(ids.begin(), ids.end(), static_cast<double>(std::min<int64_t>(7, V - 1)));
  } else if (c.data().rfind("zipf", 0) == 0) {
    const double s = c.data().size() > 4 ? std::atof(c.data().c_str() + 4) : 1.1;
    std::vector<double> cdf(static_cast<size_t>(V));
    double acc = 0;
    for (int64_t k = 0; k < V; ++k) cdf[static_cast<size_t>(k)] = acc += std::pow(static_cast<double>(k + 1), -s);
    std::uniform_real_distribution<double> u(0, acc);
    for (double& e : ids) e = static_cast<double>(std::lower_bound(cdf.begin(), cdf.end(), u(rng)) - cdf.begin());
  } else {
    for (double& e : ids) e = static_cast<double>(rng() % static_cast<uint64_t>(V));
    if (c.data().empty())  // the correctness default: a few out of range, never dereferenced
      for (double& e : ids)
        if (rng() % 32 == 0) e = rng() % 2 ? -1.0 : static_cast<double>(V);
  }
  return ids;
}

void give(RefOperand& r, std::vector<double> v) {
  r.in = std::move(v);
  r.given = true;
}

// The bags' [lo, hi) position ranges.
void bag_ranges(RefCall& c, const EmbeddingBagDescriptor& d, std::vector<int64_t>* lo, std::vector<int64_t>* hi) {
  if (d.bag_size > 0) {
    for (int64_t b = 0; b < d.num_bags; ++b) lo->push_back(b * d.bag_size), hi->push_back((b + 1) * d.bag_size);
    return;
  }
  ref::bag_ranges_from_offsets(as_ints(c["offsets"].in), d.num_bags, d.num_indices, d.include_last_offset, lo, hi);
}

int64_t norm_padding(const std::optional<int64_t>& p, int64_t V) { return p ? (*p < 0 ? *p + V : *p) : -1; }

ref::BagMode bag_mode(EmbeddingBagMode m) {
  return m == EmbeddingBagMode::kSum ? ref::BagMode::kSum : m == EmbeddingBagMode::kMean ? ref::BagMode::kMean : ref::BagMode::kMax;
}

// ---------------------------------------------------------------- embedding

void emb_fill(RefCall& c) {
  const EmbeddingDescriptor& d = c.desc<EmbeddingDescriptor>();
  give(c["indices"], draw_indices(c, d.num_indices, d.num_embeddings));
}

void set_count(RefCall& c, int64_t invalid) {
  if (RefOperand* k = c.find("invalid_count")) {
    // the counter is added to: its initial value (random) plus the invalid ones seen
    k->want = {k->in.empty() ? static_cast<double>(invalid) : k->in[0] + static_cast<double>(invalid)};
    k->exact = true;
  }
}

Status emb_forward(RefCall& c) {
  const EmbeddingDescriptor& d = c.desc<EmbeddingDescriptor>();
  const ref::EmbShape s{d.num_embeddings, d.embedding_dim, -1};
  std::vector<double> out;
  const int64_t invalid = ref::embedding_forward(s, c["weight"].in, as_ints(c["indices"].in), &out);
  c["out"].want = std::move(out);
  c["out"].exact = true;
  set_count(c, invalid);
  return {};
}

Status emb_backward(RefCall& c) {
  const EmbeddingDescriptor& d = c.desc<EmbeddingDescriptor>();
  const ref::EmbShape s{d.num_embeddings, d.embedding_dim, norm_padding(d.padding_idx, d.num_embeddings)};
  const auto idx = as_ints(c["indices"].in);
  const std::vector<double>& g = c["dout"].in;
  std::vector<double> dw, mdw;
  ref::embedding_backward(s, idx, g, d.scale_grad_by_freq, &dw);
  ref::embedding_backward(s, idx, abs_of(g), d.scale_grad_by_freq, &mdw);
  c["dweight"].want = std::move(dw);
  c["dweight"].mag = std::move(mdw);
  int64_t invalid = 0;
  for (int64_t i : idx) invalid += i < 0 || i >= d.num_embeddings;
  set_count(c, invalid);
  return {};
}

Cost emb_cost(const AnyPlan& p, const CaseOptions&) {
  const EmbeddingDescriptor& d = *p.descriptor<EmbeddingDescriptor>();
  const double row = static_cast<double>(d.embedding_dim) * static_cast<double>(dtype_size(d.dtype));
  const double ids = static_cast<double>(d.num_indices) * static_cast<double>(dtype_size(d.index_dtype));
  if (p.op().direction == Direction::kForward) return {2.0 * static_cast<double>(d.num_indices) * row + ids, 0};
  return {static_cast<double>(d.num_embeddings) * row + static_cast<double>(d.num_indices) * row + ids, 0};
}

// ---------------------------------------------------------------- embedding_bag

void bag_fill(RefCall& c) {
  const EmbeddingBagDescriptor& d = c.desc<EmbeddingBagDescriptor>();
  const int64_t n = d.indices_count();
  give(c["indices"], draw_indices(c, n, d.num_embeddings));
  if (RefOperand* o = c.find("offsets")) {
    std::vector<double> offs(static_cast<size_t>(o->spec->numel()));
    if (c.data().empty()) {  // correctness: random bag lengths (some empty)
      for (double& e : offs) e = static_cast<double>(c.rng()() % static_cast<uint64_t>(n + 1));
      std::sort(offs.begin(), offs.end());
    } else {  // timing: equal bags
      for (size_t b = 0; b < offs.size(); ++b) offs[b] = static_cast<double>(static_cast<int64_t>(b) * n / std::max<int64_t>(d.num_bags, 1));
    }
    if (!offs.empty()) offs[0] = 0;
    if (d.include_last_offset && !offs.empty()) offs.back() = static_cast<double>(n);
    give(*o, std::move(offs));
  }
  if (RefOperand* m = c.find("max_indices")) {  // an index of the bag (its max as a forward would pick), -1 for none
    std::vector<int64_t> lo, hi;
    bag_ranges(c, d, &lo, &hi);
    const auto idx = as_ints(c["indices"].in);
    std::vector<double> mi(static_cast<size_t>(d.num_bags * d.embedding_dim), -1.0);
    for (int64_t b = 0; b < d.num_bags; ++b) {
      std::vector<int64_t> valid;
      for (int64_t p = lo[static_cast<size_t>(b)]; p < hi[static_cast<size_t>(b)]; ++p)
        if (idx[static_cast<size_t>(p)] >= 0 && idx[static_cast<size_t>(p)] < d.num_embeddings &&
            idx[static_cast<size_t>(p)] != norm_padding(d.padding_idx, d.num_embeddings))
          valid.push_back(idx[static_cast<size_t>(p)]);
      if (valid.empty()) continue;
      for (int64_t k = 0; k < d.embedding_dim; ++k)
        mi[static_cast<size_t>(b * d.embedding_dim + k)] = static_cast<double>(valid[c.rng()() % valid.size()]);
    }
    give(*m, std::move(mi));
  }
}

Status bag_forward(RefCall& c) {
  const EmbeddingBagDescriptor& d = c.desc<EmbeddingBagDescriptor>();
  const ref::EmbShape s{d.num_embeddings, d.embedding_dim, norm_padding(d.padding_idx, d.num_embeddings)};
  std::vector<int64_t> lo, hi, mi;
  bag_ranges(c, d, &lo, &hi);
  const RefOperand* psw = c.find("per_sample_weights");
  const std::vector<double> pw = psw ? psw->in : std::vector<double>{};
  const auto idx = as_ints(c["indices"].in);
  std::vector<double> out, mout;
  const int64_t invalid = ref::embedding_bag_forward(s, bag_mode(d.mode), c["weight"].in, idx, lo, hi, pw, &out, &mi);
  std::vector<int64_t> mi2;
  ref::embedding_bag_forward(s, bag_mode(d.mode), abs_of(c["weight"].in), idx, lo, hi, abs_of(pw), &mout, &mi2);
  c["out"].want = std::move(out);
  c["out"].mag = std::move(mout);
  if (RefOperand* m = c.find("max_indices")) {
    m->want.assign(mi.begin(), mi.end());
    m->exact = true;
  }
  set_count(c, invalid);
  return {};
}

Status bag_backward(RefCall& c) {
  const EmbeddingBagDescriptor& d = c.desc<EmbeddingBagDescriptor>();
  const ref::EmbShape s{d.num_embeddings, d.embedding_dim, norm_padding(d.padding_idx, d.num_embeddings)};
  std::vector<int64_t> lo, hi;
  bag_ranges(c, d, &lo, &hi);
  const RefOperand* psw = c.find("per_sample_weights");
  const std::vector<double> pw = psw ? psw->in : std::vector<double>{};
  const RefOperand* w = c.find("weight");
  const std::vector<double> wv = w ? w->in : std::vector<double>{};
  const RefOperand* m = c.find("max_indices");
  const std::vector<int64_t> mi = m ? as_ints(m->in) : std::vector<int64_t>{};
  const auto idx = as_ints(c["indices"].in);
  const std::vector<double>& g = c["dout"].in;
  std::vector<double> dw, dpsw, mdw, mdpsw;
  ref::embedding_bag_backward(s, bag_mode(d.mode), wv, idx, lo, hi, pw, mi, g, d.scale_grad_by_freq, &dw,
                              d.per_sample_weights_grad ? &dpsw : nullptr);
  ref::embedding_bag_backward(s, bag_mode(d.mode), abs_of(wv), idx, lo, hi, abs_of(pw), mi, abs_of(g), d.scale_grad_by_freq, &mdw,
                              d.per_sample_weights_grad ? &mdpsw : nullptr);
  c["dweight"].want = std::move(dw);
  c["dweight"].mag = std::move(mdw);
  if (RefOperand* o = c.find("dper_sample_weights")) o->want = std::move(dpsw), o->mag = std::move(mdpsw);
  int64_t invalid = 0;
  for (size_t b = 0; b < lo.size(); ++b)
    for (int64_t p = lo[b]; p < hi[b]; ++p) invalid += idx[static_cast<size_t>(p)] < 0 || idx[static_cast<size_t>(p)] >= d.num_embeddings;
  set_count(c, invalid);
  return {};
}

Cost bag_cost(const AnyPlan& p, const CaseOptions&) {
  const EmbeddingBagDescriptor& d = *p.descriptor<EmbeddingBagDescriptor>();
  const double row = static_cast<double>(d.embedding_dim) * static_cast<double>(dtype_size(d.dtype));
  const double n = static_cast<double>(d.indices_count()), b = static_cast<double>(d.num_bags);
  const double ids = n * static_cast<double>(dtype_size(d.index_dtype));
  if (p.op().direction == Direction::kForward) return {2.0 * b * row + (n - b) * row + ids, 0};
  return {static_cast<double>(d.num_embeddings) * row + b * row + ids, 0};
}

}  // namespace

OpRef ref_embedding() { return {&emb_fill, &emb_forward, &emb_cost}; }
OpRef ref_embedding_backward() { return {&emb_fill, &emb_backward, &emb_cost}; }
OpRef ref_embedding_bag() { return {&bag_fill, &bag_forward, &bag_cost}; }
OpRef ref_embedding_bag_backward() { return {&bag_fill, &bag_backward, &bag_cost}; }

}  // namespace baracuda::harness
