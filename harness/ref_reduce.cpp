// Reference adapter of the reduce row: each output's reduced elements gathered in row-major order
// of the reduced axes, then reference/reduce_ref.cpp's definition.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "baracuda/ops/reduce.hpp"
#include "elementwise_ref.hpp"
#include "harness/op_case.hpp"
#include "harness/ref_common.hpp"
#include "reduce_ref.hpp"

namespace baracuda::harness {

namespace {

// x's elements (row-major indices) of each output (kept coordinates, row-major), each list in
// increasing reduced index (row-major over the reduced axes: f ascending).
std::vector<std::vector<int64_t>> members_of(const ReduceDescriptor& d) {
  const std::vector<bool> red = ref::reduced_axes(d);
  int64_t outputs = 1;
  for (int a = 0; a < d.rank; ++a)
    if (!red[static_cast<size_t>(a)]) outputs *= d.shape[a];
  std::vector<std::vector<int64_t>> members(static_cast<size_t>(outputs));
  const int64_t n = numel_of(std::span<const int64_t>(d.shape, static_cast<size_t>(d.rank)));
  for (int64_t f = 0; f < n; ++f) {
    int64_t rem = f, o = 0, omul = 1;
    for (int a = d.rank - 1; a >= 0; --a) {
      const int64_t e = d.shape[a], ci = rem % e;
      rem /= e;
      if (!red[static_cast<size_t>(a)]) o += ci * omul, omul *= e;
    }
    members[static_cast<size_t>(o)].push_back(f);
  }
  return members;
}

Status reduce(RefCall& c) {
  const ReduceDescriptor& d = c.desc<ReduceDescriptor>();
  const std::vector<double>& x = c["x"].in;
  std::vector<std::vector<double>> groups;
  for (const std::vector<int64_t>& m : members_of(d)) {
    std::vector<double>& g = groups.emplace_back();
    for (int64_t f : m) g.push_back(x[static_cast<size_t>(f)]);
  }
  const ReducePlan& plan = *c.plan().plan<ReducePlan>();
  const bool values = c.find("y") != nullptr, indices = c.find("indices") != nullptr;
  RefOperand* y = values ? &c["y"] : nullptr;
  RefOperand* ix = indices ? &c["indices"] : nullptr;
  RefOperand* y2 = c.find("y2");
  for (size_t j = 0; j < groups.size(); ++j) {
    const ref::ReduceResult r = ref::reduce_one(d, groups[j]);
    if (y) {
      const DType out = plan.expected_operands().find("y")->dtype;
      y->want.push_back(is_floating(out) ? ref::store_as(out, r.value) : static_cast<double>(ref::store_int(out, static_cast<int64_t>(r.value))));
      y->mag.push_back(r.mag > 0 ? r.mag : std::fabs(r.value));
    }
    if (ix) ix->want.push_back(static_cast<double>(r.index));
    if (y2) {
      const DType out = y2->spec->dtype;
      y2->want.push_back(is_floating(out) ? ref::store_as(out, r.value2) : static_cast<double>(ref::store_int(out, static_cast<int64_t>(r.value2))));
      y2->mag.push_back(r.mag2 > 0 ? r.mag2 : std::fabs(r.value2));
    }
  }
  if (y2) y2->exact = d.op == ReduceKind::kAminmax || !is_floating(y2->spec->dtype);
  if (ix) ix->exact = true;
  if (y) {
    const DType out = plan.expected_operands().find("y")->dtype;
    y->exact = !is_floating(out) || !is_floating(d.dtype) || d.op == ReduceKind::kAmax || d.op == ReduceKind::kAmin || d.op == ReduceKind::kAminmax ||
               d.op == ReduceKind::kMax || d.op == ReduceKind::kMin || d.op == ReduceKind::kCountNonzero ||
               d.op == ReduceKind::kAll || d.op == ReduceKind::kAny;
    if (d.op == ReduceKind::kLogSumExp && !is_floating(d.dtype)) y->exact = false;
  }
  return {};
}

// The backward's inputs: indices in [0, N) (any, the formula scatters dy there); y positive
// where the formula divides by it or raises it to a power.
void reduce_backward_fill(RefCall& c) {
  const ReduceDescriptor& d = c.desc<ReduceDescriptor>();
  const std::vector<bool> red = ref::reduced_axes(d);
  int64_t n = 1;
  for (int a = 0; a < d.rank; ++a)
    if (red[static_cast<size_t>(a)]) n *= d.shape[a];
  if (RefOperand* ix = c.find("indices")) {
    ix->in.resize(static_cast<size_t>(ix->spec->numel()));
    std::uniform_int_distribution<int64_t> u(0, std::max<int64_t>(n - 1, 0));
    for (double& v : ix->in) v = static_cast<double>(u(c.rng()));
    ix->given = true;
  }
  // amax / amin / norm ±inf / prod: x on a grid of quarters (ties, zeros) and y its forward;
  // nanmean: a NaN in every few elements
  const bool inf_norm = d.op == ReduceKind::kNorm && std::isinf(d.p);
  if (d.op == ReduceKind::kAmax || d.op == ReduceKind::kAmin || d.op == ReduceKind::kAminmax || d.op == ReduceKind::kProd || inf_norm) {
    RefOperand& x = c["x"];
    RefOperand& y = c["y"];
    RefOperand* y2 = c.find("y2");
    x.in.resize(static_cast<size_t>(x.spec->numel()));
    std::uniform_int_distribution<int> q(d.op == ReduceKind::kProd ? -6 : -8, d.op == ReduceKind::kProd ? 6 : 8);
    for (double& v : x.in) v = q(c.rng()) / 4.0;
    if (d.op == ReduceKind::kProd)  // mostly |x| near 1, so the products stay O(1); a zero now and then
      for (double& v : x.in) v = v == 0 ? 0 : (v > 0 ? 1 : -1) * (0.75 + std::fabs(v) / 12);
    const std::vector<std::vector<int64_t>> members = members_of(d);
    y.in.assign(members.size(), 0);
    if (y2) y2->in.assign(members.size(), 0);
    for (size_t o = 0; o < members.size(); ++o) {
      std::vector<double> xs;
      for (int64_t f : members[o]) xs.push_back(x.in[static_cast<size_t>(f)]);
      const ref::ReduceResult r = ref::reduce_one(d, xs);
      y.in[o] = ref::store_as(y.spec->dtype, r.value);
      if (y2) y2->in[o] = ref::store_as(y2->spec->dtype, r.value2);
    }
    x.given = y.given = true;
    if (y2) y2->given = true;
  } else if (d.op == ReduceKind::kNanMean) {
    RefOperand& x = c["x"];
    x.in.resize(static_cast<size_t>(x.spec->numel()));
    std::uniform_real_distribution<double> u(-2, 2);
    for (double& v : x.in) v = c.rng()() % 5 == 0 ? std::numeric_limits<double>::quiet_NaN() : u(c.rng());
    x.given = true;
  } else if (RefOperand* y = c.find("y"); y && d.op != ReduceKind::kLogSumExp) {
    y->lo = 0.5, y->hi = 2;
  }
}

Status reduce_backward(RefCall& c) {
  const ReduceDescriptor& d = c.desc<ReduceDescriptor>();
  const RefOperand* x = c.find("x");
  const RefOperand* y = c.find("y");
  const RefOperand* ix = c.find("indices");
  const RefOperand* y2 = c.find("y2");
  const RefOperand* dy2 = c.find("dy2");
  const std::vector<double>& dy = c["dy"].in;
  RefOperand& dx = c["dx"];
  const int64_t total = numel_of(std::span<const int64_t>(d.shape, static_cast<size_t>(d.rank)));
  const std::vector<std::vector<int64_t>> members = members_of(d);
  dx.want.assign(static_cast<size_t>(total), 0.0);
  dx.mag.assign(static_cast<size_t>(total), 0.0);
  for (size_t o = 0; o < members.size(); ++o) {
    std::vector<double> xs;
    for (int64_t f : members[o]) xs.push_back(x ? x->in[static_cast<size_t>(f)] : 0.0);
    std::vector<double> mag;
    const std::vector<double> g = ref::reduce_backward_one(d, xs, y ? y->in[o] : 0.0, dy[o], ix ? static_cast<int64_t>(ix->in[o]) : -1,
                                                           &mag, y2 ? y2->in[o] : 0.0, dy2 ? dy2->in[o] : 0.0);
    for (size_t i = 0; i < members[o].size(); ++i) {
      dx.want[static_cast<size_t>(members[o][i])] = ref::store_as(d.dtype, g[i]);
      dx.mag[static_cast<size_t>(members[o][i])] = mag[i];
    }
  }
  if (d.op == ReduceKind::kSum || d.op == ReduceKind::kNanSum || d.op == ReduceKind::kMax || d.op == ReduceKind::kMin)
    dx.exact = d.dtype == c["dy"].spec->dtype;
  return {};
}

}  // namespace

OpRef ref_reduce() { return {nullptr, &reduce, nullptr}; }
OpRef ref_reduce_backward() { return {&reduce_backward_fill, &reduce_backward, nullptr}; }

}  // namespace baracuda::harness
