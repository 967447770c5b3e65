#include "harness/op_case.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "baracuda/core/describe.hpp"

namespace baracuda::harness {

// ---------------------------------------------------------------- comparison

Comparison compare_values(const std::vector<double>& got, const std::vector<double>& want, const std::vector<double>& mag,
                          const std::vector<double>& extra, DType out, DType acc, bool exact) {
  Comparison c;
  const double oe = rounding_eps(out), ae = accumulator_eps(acc), atol = out == DType::f16 ? 3e-8 : 0;
  const size_t n = std::min(got.size(), want.size());
  if (got.size() != want.size()) c.bad = {static_cast<int64_t>(n), 0, 0, 0, 0};
  for (size_t i = 0; i < n; ++i) {
    ++c.elements;
    const double g = got[i], w = want[i];
    if (std::isnan(g) && std::isnan(w)) continue;
    double tol = 0;
    if (!exact && !std::isinf(w)) {
      const double m = mag.empty() ? std::fabs(w) : mag[i];
      tol = atol + oe * std::fabs(w) + 64 * ae * m + (extra.empty() ? 0.0 : extra[i]) + 1e-300;
    }
    const double err = g == w ? 0.0 : std::fabs(g - w);
    if (!(err <= tol)) {
      c.bad = {static_cast<int64_t>(i), g, w, err, tol};
      return c;
    }
    if (tol > 0 && err / tol > c.worst) c.worst = err / tol;
  }
  return c;
}

// ---------------------------------------------------------------- reference calls

RefCall::RefCall(const AnyPlan& plan, uint64_t seed, std::string data) : plan_(&plan), rng_(seed), data_(std::move(data)) {
  for (const OperandSpec& s : plan.operands()) {
    RefOperand r;
    r.spec = &s;
    ops_.push_back(r);
  }
}

RefOperand* RefCall::find(std::string_view name) {
  for (RefOperand& r : ops_)
    if (r.spec->name == name) return &r;
  return nullptr;
}

RefOperand& RefCall::operator[](std::string_view name) {
  if (RefOperand* r = find(name)) return *r;
  std::fprintf(stderr, "harness: %s has no operand '%.*s'\n", std::string(plan_->op().name).c_str(), static_cast<int>(name.size()),
               name.data());
  std::abort();
}

void RefCall::fail_descriptor_type() const {
  std::fprintf(stderr, "harness: the reference adapter of %s asked for another descriptor type\n",
               std::string(plan_->op().name).c_str());
  std::abort();
}

Cost op_cost(const AnyPlan& plan, const CaseOptions& opt) {
  if (const OpRef& r = op_ref(plan.op().name); r.cost) return r.cost(plan, opt);
  Cost c;
  for (const OperandSpec& s : plan.operands())
    c.bytes += static_cast<double>(s.numel()) * static_cast<double>(dtype_size(s.dtype)) * (s.role == OperandRole::kInOut ? 2 : 1);
  return c;
}

// ---------------------------------------------------------------- cases

namespace {

double random_value(DType t, std::mt19937_64& rng, double lo, double hi) {
  if (t == DType::boolean) return static_cast<double>(rng() & 1);
  if (is_integral(t)) {
    const int64_t a = t == DType::u8 ? 0 : -64, b = t == DType::u8 ? 128 : 64;
    return static_cast<double>(a + static_cast<int64_t>(rng() % static_cast<uint64_t>(b - a + 1)));
  }
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}

std::vector<int64_t> dims_of(const OperandSpec& s) { return std::vector<int64_t>(s.shape, s.shape + s.rank); }

int64_t lead_of(Layout l) { return l == Layout::kOffset1 ? 1 : l == Layout::kOffset3 ? 3 : 0; }

// Writes logical values (f over the view, row-major) into the host mirror.
void write_values(StridedBuffer& b, const std::vector<double>& v) {
  const int64_t n = b.numel();
  for (int64_t f = 0; f < n && f < static_cast<int64_t>(v.size()); ++f) b.set_bits(f, double_to_bits(b.dtype, v[static_cast<size_t>(f)]));
}

// Fills a large input's whole storage on the device, for timing: 2^20 + 13 random values (an
// odd count, so rows do not repeat in step) uploaded once and replicated device to device.
Status fill_device_tiled(StridedBuffer& b, std::mt19937_64& rng, double lo, double hi) {
  const int64_t n = b.storage_elems, tile = std::min<int64_t>(n, (int64_t{1} << 20) + 13);
  if (n == 0) return {};
  const size_t es = b.elem();
  std::vector<uint8_t> h(static_cast<size_t>(tile) * es);
  for (int64_t f = 0; f < tile; ++f) {
    const uint64_t bits = double_to_bits(b.dtype, random_value(b.dtype, rng, lo, hi));
    std::memcpy(h.data() + f * static_cast<int64_t>(es), &bits, es);
  }
  char* d = static_cast<char*>(b.dev);
  if (cudaMemcpy(d, h.data(), h.size(), cudaMemcpyHostToDevice) != cudaSuccess) return Status(StatusCode::kCudaError, "OpCase: upload failed");
  for (int64_t at = tile; at < n;) {  // doubling copies
    const int64_t len = std::min(at, n - at);
    if (cudaMemcpy(d + at * static_cast<int64_t>(es), d, static_cast<size_t>(len) * es, cudaMemcpyDeviceToDevice) != cudaSuccess)
      return Status(StatusCode::kCudaError, "OpCase: device fill failed");
    at += len;
  }
  return {};
}

}  // namespace

Result<OpCase> OpCase::make(const AnyPlan& plan, const CaseOptions& opt) {
  if (!plan.selected()) return Status(StatusCode::kInvalidProblem, "OpCase: the plan was not selected");
  OpCase c;
  c.plan_ = &plan;
  c.opt_ = opt;
  c.ref_ = std::make_unique<RefCall>(plan, opt.seed, opt.data);
  const OpRef& ref = op_ref(plan.op().name);
  if (ref.fill) ref.fill(*c.ref_);
  const OperandSpecs& specs = plan.operands();
  c.buf_of_.assign(specs.size(), -1);
  // timing runs keep host copies only of the inputs the adapter gave values (indices ...)
  auto mirrored = [&](size_t i) { return opt.reference || (specs[i].role != OperandRole::kOut && c.ref_->operands()[i].given); };
  for (size_t i = 0; i < specs.size(); ++i) {
    const OperandSpec& s = specs[i];
    if (opt.inplace && s.writes())
      for (size_t j = 0; j < specs.size() && j < 32; ++j)
        if ((s.alias_mask >> j & 1u) && specs[j].dtype == s.dtype && specs[j].rank == s.rank &&
            std::equal(s.shape, s.shape + s.rank, specs[j].shape)) {
          c.buf_of_[i] = c.buf_of_[j];
          break;
        }
    const std::string name(s.name);
    if (auto a = opt.alias.find(name); a != opt.alias.end()) {
      const int j = specs.index_of(a->second);
      if (j < 0 || specs[static_cast<size_t>(j)].writes() || c.buf_of_[static_cast<size_t>(j)] < 0)
        return Status(StatusCode::kInvalidProblem, "OpCase: --alias=" + name + ":" + a->second + " names no input before it");
      c.buf_of_[i] = c.buf_of_[static_cast<size_t>(j)];
    }
    if (c.buf_of_[i] >= 0) continue;
    const Layout l = opt.views.count(name) ? opt.views.at(name) : opt.layout;
    std::unique_ptr<StridedBuffer> b;
    const bool host = mirrored(i);
    if (opt.strides.count(name))
      b = std::make_unique<StridedBuffer>(s.dtype, dims_of(s), opt.strides.at(name), lead_of(l), host);
    else if (s.fixed_strides)
      b = std::make_unique<StridedBuffer>(s.dtype, dims_of(s), std::vector<int64_t>(s.stride, s.stride + s.rank), lead_of(l), host);
    else
      b = std::make_unique<StridedBuffer>(s.dtype, dims_of(s), l == Layout::kBroadcast && s.writes() ? Layout::kContiguous : l, host);
    if (b->storage_elems > 0 && b->dev == nullptr) return Status(StatusCode::kCudaError, "OpCase: cudaMalloc failed for " + name);
    if (host) b->fill_storage(kPoison);
    else if (b->dev && cudaMemset(b->dev, kPoison, static_cast<size_t>(b->storage_elems) * b->elem()) != cudaSuccess)
      return Status(StatusCode::kCudaError, "OpCase: cudaMemset failed for " + name);
    c.buf_of_[i] = static_cast<int>(c.bufs_.size());
    c.bufs_.push_back(std::move(b));
  }
  // inputs: the adapter's values, else seeded random ones (tiled when no reference is kept)
  std::mt19937_64& rng = c.ref_->rng();
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].role == OperandRole::kOut) continue;
    RefOperand& r = c.ref_->operands()[i];
    StridedBuffer& b = *c.bufs_[static_cast<size_t>(c.buf_of_[i])];
    if (r.given) {
      write_values(b, r.in);
    } else if (opt.reference) {
      r.in.resize(static_cast<size_t>(b.numel()));
      for (double& v : r.in) v = random_value(b.dtype, rng, r.lo, r.hi);
      if (opt.specials && is_floating(b.dtype) && r.in.size() >= 3) {
        const double sp[] = {0.0, -0.0, INFINITY, -INFINITY, NAN};
        for (size_t at : {size_t{0}, r.in.size() / 2, r.in.size() - 1}) r.in[at] = sp[rng() % 5];
      }
      write_values(b, r.in);
    } else if (Status st = fill_device_tiled(b, rng, r.lo, r.hi); !st.ok()) {
      return st;
    }
    if (opt.reference) r.in = logical_values(b);  // what the op reads: rounded to the dtype, broadcast views collapsed
  }
  for (auto& b : c.bufs_) {
    if (!b->host.empty()) b->upload();
    c.initial_.push_back(b->host);
  }
  c.ws_bytes_ = plan.workspace_size();
  if (c.ws_bytes_ > 0) {
    void* p = nullptr;
    if (cudaMalloc(&p, c.ws_bytes_) != cudaSuccess)
      return Status(StatusCode::kCudaError, "OpCase: cudaMalloc of the workspace failed");
    c.ws_.reset(p);
  }
  if (c.ws_ && cudaMemset(c.ws_.get(), 0xA5, c.ws_bytes_) != cudaSuccess)  // not zero: a plan must not rely on it
    return Status(StatusCode::kCudaError, "OpCase: cudaMemset of the workspace failed");
  return c;
}

void OpCase::CudaFree::operator()(void* p) const { cudaFree(p); }

std::vector<NamedView> OpCase::views() const {
  std::vector<NamedView> v;
  const OperandSpecs& specs = plan_->operands();
  for (size_t i = 0; i < specs.size(); ++i) {
    const StridedBuffer& b = *bufs_[static_cast<size_t>(buf_of_[i])];
    v.push_back({specs[i].name, b.mut()});
  }
  return v;
}

Status OpCase::run(cudaStream_t stream) const { return run(stream, workspace()); }

Status OpCase::run(cudaStream_t stream, Workspace ws) const {
  const std::vector<NamedView> v = views();
  return plan_->run(stream, ws, v);
}

StridedBuffer* OpCase::buffer(std::string_view name) {
  const OperandSpecs& specs = plan_->operands();
  for (size_t i = 0; i < specs.size(); ++i)
    if (specs[i].name == name) return bufs_[static_cast<size_t>(buf_of_[i])].get();
  return nullptr;
}

void OpCase::reset_outputs() {
  const OperandSpecs& specs = plan_->operands();
  std::vector<bool> done(bufs_.size(), false);
  for (size_t i = 0; i < specs.size(); ++i) {
    const size_t b = static_cast<size_t>(buf_of_[i]);
    if (!specs[i].writes() || done[b]) continue;
    done[b] = true;
    if (initial_[b].empty()) {  // no host copy: a pure output, poisoned on the device
      if (bufs_[b]->dev) cudaMemset(bufs_[b]->dev, kPoison, static_cast<size_t>(bufs_[b]->storage_elems) * bufs_[b]->elem());
      continue;
    }
    bufs_[b]->host = initial_[b];
    bufs_[b]->upload();
  }
}

std::vector<uint8_t> OpCase::output_bytes() {
  std::vector<uint8_t> all;
  const OperandSpecs& specs = plan_->operands();
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!specs[i].writes()) continue;
    StridedBuffer& b = *bufs_[static_cast<size_t>(buf_of_[i])];
    b.download();
    all.insert(all.end(), b.host.begin(), b.host.end());
  }
  return all;
}

CaseCheck OpCase::check() {
  CaseCheck k;
  auto fail = [&](std::string what) {
    k.ok = false;
    k.what = std::move(what);
    return k;
  };
  if (!opt_.reference) return fail("the case keeps no reference values (CaseOptions::reference is off)");
  if (!computed_) {
    const OpRef& ref = op_ref(plan_->op().name);
    ref_status_ = ref.compute ? ref.compute(*ref_) : Status(StatusCode::kInternal, "no reference");
    computed_ = true;
  }
  if (!ref_status_.ok()) return fail("reference: " + ref_status_.to_string());
  const OperandSpecs& specs = plan_->operands();
  const PrecisionGuarantee g = plan_->precision_guarantee();
  const DType acc = is_floating(g.accumulator) ? g.accumulator : DType::f64;
  for (size_t i = 0; i < specs.size(); ++i) {
    const OperandSpec& s = specs[i];
    if (!s.writes()) continue;
    RefOperand& r = ref_->operands()[i];
    StridedBuffer& b = *bufs_[static_cast<size_t>(buf_of_[i])];
    b.download();
    int64_t gap = -1;
    if (!b.gaps_hold(kPoison, &gap)) return fail(std::string(s.name) + " wrote outside its view at storage element " + std::to_string(gap));
    if (r.want.size() != static_cast<size_t>(b.numel()))
      return fail(std::string(s.name) + ": the reference gave " + std::to_string(r.want.size()) + " values for " +
                  std::to_string(b.numel()) + " elements");
    const std::vector<double> got = logical_values(b);
    const bool exact = r.exact || g.bit_exact || !is_floating(s.dtype);
    const Comparison c = compare_values(got, r.want, r.mag, r.extra, s.dtype, acc, exact);
    k.elements += c.elements;
    k.worst = std::max(k.worst, c.worst);
    if (!c.ok()) {
      char buf[256];
      std::snprintf(buf, sizeof buf, "[%lld] got %.9g want %.9g |err| %.3g tol %.3g", static_cast<long long>(c.bad.index),
                    c.bad.got, c.bad.want, c.bad.err, c.bad.tol);
      return fail(std::string(s.name) + buf);
    }
  }
  return k;
}

}  // namespace baracuda::harness
