// Reference adapter of the reduce row: each output's reduced elements gathered in row-major order
// of the reduced axes, then reference/reduce_ref.cpp's definition.
#include "baracuda/ops/reduce.hpp"
#include "elementwise_ref.hpp"
#include "harness/op_case.hpp"
#include "harness/ref_common.hpp"
#include "reduce_ref.hpp"

namespace baracuda::harness {

namespace {

Status reduce(RefCall& c) {
  const ReduceDescriptor& d = c.desc<ReduceDescriptor>();
  const std::vector<bool> red = ref::reduced_axes(d);
  const std::vector<double>& x = c["x"].in;
  // output index of x's element (reduced coordinates dropped), reduced index (row-major over
  // the reduced axes); the elements of each output in increasing reduced index
  int64_t outputs = 1;
  for (int a = 0; a < d.rank; ++a)
    if (!red[static_cast<size_t>(a)]) outputs *= d.shape[a];
  std::vector<std::vector<double>> groups(static_cast<size_t>(outputs));
  const int64_t n = numel_of(std::span<const int64_t>(d.shape, static_cast<size_t>(d.rank)));
  for (int64_t f = 0; f < n; ++f) {
    int64_t rem = f, o = 0, omul = 1;
    for (int a = d.rank - 1; a >= 0; --a) {
      const int64_t e = d.shape[a], cidx = rem % e;
      rem /= e;
      if (!red[static_cast<size_t>(a)]) o += cidx * omul, omul *= e;
    }
    groups[static_cast<size_t>(o)].push_back(x[static_cast<size_t>(f)]);  // f ascending: reduced index ascending
  }
  const ReducePlan& plan = *c.plan().plan<ReducePlan>();
  const bool values = c.find("y") != nullptr, indices = c.find("indices") != nullptr;
  RefOperand* y = values ? &c["y"] : nullptr;
  RefOperand* ix = indices ? &c["indices"] : nullptr;
  for (size_t j = 0; j < groups.size(); ++j) {
    const ref::ReduceResult r = ref::reduce_one(d, groups[j]);
    if (y) {
      const DType out = plan.expected_operands().find("y")->dtype;
      y->want.push_back(is_floating(out) ? ref::store_as(out, r.value) : static_cast<double>(ref::store_int(out, static_cast<int64_t>(r.value))));
      y->mag.push_back(r.mag > 0 ? r.mag : std::fabs(r.value));
    }
    if (ix) ix->want.push_back(static_cast<double>(r.index));
  }
  if (ix) ix->exact = true;
  if (y) {
    const DType out = plan.expected_operands().find("y")->dtype;
    y->exact = !is_floating(out) || !is_floating(d.dtype) || d.op == ReduceKind::kAmax || d.op == ReduceKind::kAmin ||
               d.op == ReduceKind::kMax || d.op == ReduceKind::kMin || d.op == ReduceKind::kCountNonzero ||
               d.op == ReduceKind::kAll || d.op == ReduceKind::kAny;
    if (d.op == ReduceKind::kLogSumExp && !is_floating(d.dtype)) y->exact = false;
  }
  return {};
}

}  // namespace

OpRef ref_reduce() { return {nullptr, &reduce, nullptr}; }

}  // namespace baracuda::harness
