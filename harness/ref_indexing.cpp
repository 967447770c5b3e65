// Reference adapters of the indexing rows: gather, scatter and nonzero (nonzero / masked_select /
// masked_scatter). gather / scatter index entries are drawn per CaseOptions::data:
// "" (the correctness default: uniform over the valid range, one in 32 out of range — −1 or n,
// or −n − 1 with wrap_negative), "uniform" (all valid), "perm" (entry k along dim is perm[k mod
// n] of one random permutation: targets unique while S[dim] <= n, each exactly twice at 2n —
// MoE's top-2 combine), "same" (every entry 7, or n − 1). The answer walks S in row-major order
// (scatter: the terms of a target in position order, as the sorted pass combines them).
// Bytes: gathered / scattered elements once each way, the index once, self's copy when out is
// not self. nonzero: the flag operand (the input, or the mask) half zeros — floats with −0.0
// among them, which is zero — and the answer in row-major order.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "baracuda/ops/gather_scatter.hpp"
#include "baracuda/ops/nonzero.hpp"
#include "elementwise_ref.hpp"
#include "harness/buffer.hpp"
#include "harness/op_case.hpp"
#include "harness/ref_common.hpp"

namespace baracuda::harness {

namespace {

int norm_dim(int dim, int rank) { return dim < 0 ? dim + std::max(rank, 1) : dim; }
std::span<const int64_t> dims(const int64_t* s, int rank) { return {s, static_cast<size_t>(rank)}; }

// The index operand's entries over [0, n) (see above); `along` gives entry k's coordinate
// along dim (elements form) or k itself (slices).
void draw(RefCall& c, int64_t count, int64_t n, bool wrap, const std::vector<int64_t>& along) {
  RefOperand& r = c["index"];
  r.in.assign(static_cast<size_t>(count), 0.0);
  r.given = true;
  auto& rng = c.rng();
  if (n <= 0) {
    for (double& e : r.in) e = static_cast<double>(rng() % 3) - 1.0;  // nothing is valid
    return;
  }
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  for (int64_t k = 0; k < count; ++k) {
    double& e = r.in[static_cast<size_t>(k)];
    if (c.data() == "perm") e = static_cast<double>(perm[static_cast<size_t>(along[static_cast<size_t>(k)] % n)]);
    else if (c.data() == "same") e = static_cast<double>(std::min<int64_t>(7, n - 1));
    else {
      int64_t v = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
      if (wrap && rng() % 2) v -= n;
      if (c.data().empty() && rng() % 32 == 0) v = rng() % 2 ? (wrap ? -n - 1 : -1) : n;
      e = static_cast<double>(v);
    }
  }
}

// Coordinates along dim of the index operand's entries.
std::vector<int64_t> along_dim(IndexForm form, std::span<const int64_t> S, int dim) {
  if (form == IndexForm::kSlices) {
    std::vector<int64_t> k(static_cast<size_t>(S[static_cast<size_t>(dim)]));
    std::iota(k.begin(), k.end(), 0);
    return k;
  }
  const int64_t n = numel_of(S);
  std::vector<int64_t> k(static_cast<size_t>(n));
  int64_t inner = 1;
  for (size_t a = static_cast<size_t>(dim) + 1; a < S.size(); ++a) inner *= S[a];
  for (int64_t f = 0; f < n; ++f) k[static_cast<size_t>(f)] = S.empty() ? 0 : (f / inner) % S[static_cast<size_t>(dim)];
  return k;
}

// j normalized into [0, n), or -1 when out of range.
int64_t resolve(double v, int64_t n, bool wrap, IndexBounds b) {
  int64_t j = static_cast<int64_t>(v);
  if (wrap && j < 0) j += n;
  if (b == IndexBounds::kClamp && n > 0) j = std::clamp<int64_t>(j, 0, n - 1);
  return j >= 0 && j < n ? j : -1;
}

void set_count(RefCall& c, int64_t invalid) {
  if (RefOperand* k = c.find("invalid_count")) {
    k->want = {k->in.empty() ? static_cast<double>(invalid) : k->in[0] + static_cast<double>(invalid)};
    k->exact = true;
  }
}

// Walks S in row-major order: f(flat position, its coordinates, the index entry's value).
template <class F>
void walk(std::span<const int64_t> S, int dim, IndexForm form, const std::vector<double>& idx, F f) {
  const int64_t n = numel_of(S);
  std::vector<int64_t> s(S.size());
  for (int64_t p = 0; p < n; ++p) {
    int64_t r = p;
    for (size_t a = S.size(); a-- > 0;) s[a] = r % S[a], r /= S[a];
    const double v = form == IndexForm::kSlices ? idx[static_cast<size_t>(s[static_cast<size_t>(dim)])] : idx[static_cast<size_t>(p)];
    f(p, s, v);
  }
}
int64_t linear(std::span<const int64_t> shape, const std::vector<int64_t>& s) {
  int64_t g = 0;
  for (size_t a = 0; a < shape.size(); ++a) g = g * shape[a] + s[a];
  return g;
}

// ---------------------------------------------------------------- gather

void gather_fill(RefCall& c) {
  const GatherDescriptor& d = c.desc<GatherDescriptor>();
  const int dim = norm_dim(d.dim, d.rank);
  const std::span<const int64_t> S = dims(d.index_shape, d.rank);
  const std::vector<int64_t> k = along_dim(d.form, S, dim);
  draw(c, static_cast<int64_t>(k.size()), d.rank == 0 ? 1 : d.input_shape[dim], d.wrap_negative, k);
}

Status gather(RefCall& c) {
  const GatherDescriptor& d = c.desc<GatherDescriptor>();
  const int dim = norm_dim(d.dim, d.rank);
  const std::span<const int64_t> S = dims(d.index_shape, d.rank), I = dims(d.input_shape, d.rank);
  const int64_t n = d.rank == 0 ? 1 : I[static_cast<size_t>(dim)];
  const std::vector<double>& in = c["input"].in;
  const std::vector<double>& idx = c["index"].in;
  RefOperand& out = c["out"];
  out.want.assign(static_cast<size_t>(numel_of(S)), 0.0);
  const double fill = ref::store_as(d.dtype, d.fill_value.as_double());
  walk(S, dim, d.form, idx, [&](int64_t p, std::vector<int64_t> s, double v) {
    const int64_t j = resolve(v, n, d.wrap_negative, d.bounds);
    if (j >= 0 && d.rank > 0) s[static_cast<size_t>(dim)] = j;
    out.want[static_cast<size_t>(p)] = j < 0 ? fill : in[static_cast<size_t>(linear(I, s))];
  });
  out.exact = true;
  int64_t invalid = 0;
  for (double v : idx) invalid += resolve(v, n, d.wrap_negative, d.bounds) < 0;
  set_count(c, invalid);
  return {};
}

Cost gather_cost(const AnyPlan& plan, const CaseOptions&) {
  const GatherDescriptor& d = *plan.descriptor<GatherDescriptor>();
  const double es = static_cast<double>(dtype_size(d.dtype)), is = static_cast<double>(dtype_size(d.index_dtype));
  const std::span<const int64_t> S = dims(d.index_shape, d.rank);
  const double n = static_cast<double>(numel_of(S));
  const double entries = d.form == IndexForm::kSlices ? static_cast<double>(S[static_cast<size_t>(norm_dim(d.dim, d.rank))]) : n;
  return {2 * n * es + entries * is, 0};
}

// ---------------------------------------------------------------- scatter

void scatter_fill(RefCall& c) {
  const ScatterDescriptor& d = c.desc<ScatterDescriptor>();
  const int dim = norm_dim(d.dim, d.rank);
  const std::vector<int64_t> k = along_dim(d.form, dims(d.index_shape, d.rank), dim);
  draw(c, static_cast<int64_t>(k.size()), d.rank == 0 ? 1 : d.self_shape[dim], d.wrap_negative, k);
}

bool is_float(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::f64; }

Status scatter(RefCall& c) {
  const ScatterDescriptor& d = c.desc<ScatterDescriptor>();
  const int dim = norm_dim(d.dim, d.rank);
  const std::span<const int64_t> S = dims(d.index_shape, d.rank), T = dims(d.self_shape, d.rank);
  const int64_t n = d.rank == 0 ? 1 : T[static_cast<size_t>(dim)];
  const std::vector<double>& self = c["self"].in;
  const std::vector<double>& idx = c["index"].in;
  const std::vector<double>* src = d.src_is_value ? nullptr : &c["src"].in;
  const bool fl = is_float(d.dtype);
  const double value = ref::store_as(d.dtype, d.value.as_double());
  const double alpha = d.alpha.as_double();
  const size_t nt = static_cast<size_t>(numel_of(T));
  std::vector<double> acc(self), mag(nt, 0.0);
  std::vector<int64_t> count(nt, 0);
  auto identity = [&]() -> double {
    switch (d.reduce) {
      case ScatterReduce::kProd: return 1;
      case ScatterReduce::kAmax: return fl ? -INFINITY : -1e300;
      case ScatterReduce::kAmin: return fl ? INFINITY : 1e300;
      default: return 0;
    }
  };
  walk(S, dim, d.form, idx, [&](int64_t p, std::vector<int64_t> s, double v) {
    const int64_t j = resolve(v, n, d.wrap_negative, d.bounds);
    if (j < 0) return;
    if (d.rank > 0) s[static_cast<size_t>(dim)] = j;
    const size_t t = static_cast<size_t>(linear(T, s));
    double x = src ? (*src)[static_cast<size_t>(p)] : value;
    if (count[t]++ == 0) {
      if (d.reduce != ScatterReduce::kNone && !d.include_self) acc[t] = identity();
      mag[t] = d.include_self ? std::fabs(self[t]) : 0;
    }
    switch (d.reduce) {
      case ScatterReduce::kNone: acc[t] = x; break;
      case ScatterReduce::kSum:
      case ScatterReduce::kMean: acc[t] += x * alpha, mag[t] += std::fabs(x * alpha); break;
      case ScatterReduce::kProd: acc[t] *= x; break;
      case ScatterReduce::kAmax: acc[t] = std::isnan(acc[t]) ? acc[t] : (std::isnan(x) ? x : std::max(acc[t], x)); break;
      case ScatterReduce::kAmin: acc[t] = std::isnan(acc[t]) ? acc[t] : (std::isnan(x) ? x : std::min(acc[t], x)); break;
    }
  });
  RefOperand& out = c["out"];
  out.want.assign(nt, 0.0);
  out.mag.assign(nt, 0.0);
  for (size_t t = 0; t < nt; ++t) {
    double v = acc[t];
    if (count[t] > 0 && d.reduce == ScatterReduce::kMean) {
      const int64_t k = count[t] + (d.include_self ? 1 : 0);
      if (fl) v /= static_cast<double>(k), mag[t] /= static_cast<double>(k);
      else {
        const int64_t a = static_cast<int64_t>(wrap_int(d.dtype, static_cast<int64_t>(v)));
        v = static_cast<double>(a / k - ((a % k != 0 && a < 0) ? 1 : 0));
      }
    }
    if (d.reduce == ScatterReduce::kProd) mag[t] = std::fabs(v) * static_cast<double>(count[t] + 1);
    out.want[t] = fl || d.reduce == ScatterReduce::kNone ? ref::store_as(d.dtype, v) : wrap_int(d.dtype, static_cast<int64_t>(v));
    out.mag[t] = count[t] > 0 ? mag[t] : std::fabs(out.want[t]);
  }
  out.exact = !fl || d.reduce == ScatterReduce::kNone || d.reduce == ScatterReduce::kAmax || d.reduce == ScatterReduce::kAmin;
  // the atomic pass adds in the dtype: every add of a 16-bit float rounds (half an ulp of a
  // partial sum, each at most mag) — a documented error beyond the accumulator's
  const bool half = d.dtype == DType::f16 || d.dtype == DType::bf16;
  if (half && c.plan().sku().variant == "atomic" && d.reduce == ScatterReduce::kSum) {
    out.extra.assign(nt, 0.0);
    for (size_t t = 0; t < nt; ++t) out.extra[t] = 0.5 * rounding_eps(d.dtype) * static_cast<double>(count[t]) * out.mag[t];
  }
  int64_t invalid = 0;
  for (double v : idx) invalid += resolve(v, n, d.wrap_negative, d.bounds) < 0;
  set_count(c, invalid);
  return {};
}

Cost scatter_cost(const AnyPlan& plan, const CaseOptions& opt) {
  const ScatterDescriptor& d = *plan.descriptor<ScatterDescriptor>();
  const double es = static_cast<double>(dtype_size(d.dtype)), is = static_cast<double>(dtype_size(d.index_dtype));
  const std::span<const int64_t> S = dims(d.index_shape, d.rank);
  const double n = static_cast<double>(numel_of(S));
  const double entries = d.form == IndexForm::kSlices ? static_cast<double>(S[static_cast<size_t>(norm_dim(d.dim, d.rank))]) : n;
  const bool in_place = opt.inplace || opt.alias.count("out") > 0;
  const double copy = in_place ? 0 : 2 * static_cast<double>(numel_of(dims(d.self_shape, d.rank))) * es;
  const double target = d.reduce == ScatterReduce::kNone ? n * es : 2 * n * es;  // written (read and written)
  return {(d.src_is_value ? 0 : n * es) + entries * is + target + copy, 0};
}

// ---------------------------------------------------------------- nonzero

void nonzero_fill(RefCall& c) {
  const NonzeroDescriptor& d = c.desc<NonzeroDescriptor>();
  const bool masked = d.op != MaskOp::kNonzero;
  const DType t = masked ? d.mask_dtype : d.dtype;
  RefOperand& f = c[masked ? "mask" : "input"];
  f.in.assign(static_cast<size_t>(d.numel()), 0.0);
  f.given = true;
  auto& rng = c.rng();
  for (double& e : f.in) {
    const uint64_t r = rng() % 8;
    if (r < 3) e = 0.0;
    else if (r == 3) e = is_floating(t) ? -0.0 : 0.0;
    else e = t == DType::boolean ? 1.0 : static_cast<double>(1 + static_cast<int64_t>(rng() % 50)) * (r % 2 && t != DType::u8 ? -1 : 1);
  }
}

Status nonzero(RefCall& c) {
  const NonzeroDescriptor& d = c.desc<NonzeroDescriptor>();
  const std::span<const int64_t> shape = dims(d.shape, d.rank);
  const int64_t n = d.numel();
  const bool masked = d.op != MaskOp::kNonzero;
  const std::vector<double>& flag = c[masked ? "mask" : "input"].in;
  const std::vector<double>& in = c["input"].in;
  RefOperand& out = c["out"];
  out.exact = true;
  int64_t count = 0;
  if (d.op == MaskOp::kMaskedScatter) {
    const std::vector<double>& src = c["source"].in;
    out.want = in;
    for (int64_t i = 0; i < n; ++i)
      if (flag[static_cast<size_t>(i)] != 0.0) {
        if (count < static_cast<int64_t>(src.size())) out.want[static_cast<size_t>(i)] = src[static_cast<size_t>(count)];
        ++count;
      }
  } else {
    const int64_t rows = d.max_count < 0 ? n : d.max_count, cols = d.op == MaskOp::kNonzero ? d.rank : 1;
    out.want.assign(static_cast<size_t>(rows * cols), d.op == MaskOp::kNonzero ? static_cast<double>(d.fill_value) : 0.0);
    for (int64_t i = 0; i < n; ++i) {
      if (flag[static_cast<size_t>(i)] == 0.0) continue;
      if (count < rows) {
        if (d.op == MaskOp::kMaskedSelect) out.want[static_cast<size_t>(count)] = in[static_cast<size_t>(i)];
        else
          for (int64_t r = i, a = d.rank - 1; a >= 0; --a) {
            out.want[static_cast<size_t>(count * cols + a)] = static_cast<double>(r % shape[static_cast<size_t>(a)]);
            r /= shape[static_cast<size_t>(a)];
          }
      }
      ++count;
    }
  }
  RefOperand& k = c["count"];
  k.want = {static_cast<double>(count)};
  k.exact = true;
  return {};
}

}  // namespace

OpRef ref_gather() { return {&gather_fill, &gather, &gather_cost}; }
OpRef ref_scatter() { return {&scatter_fill, &scatter, &scatter_cost}; }
OpRef ref_nonzero() { return {&nonzero_fill, &nonzero, nullptr}; }

}  // namespace baracuda::harness
