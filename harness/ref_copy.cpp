// Reference adapters of the copy family: copy (dst = cast(src broadcast to dst's shape)) and cat
// (each input's elements at its place in out); every element exact.
#include "baracuda/ops/cat.hpp"
#include "baracuda/ops/copy.hpp"
#include "elementwise_ref.hpp"
#include "harness/op_case.hpp"
#include "harness/ref_common.hpp"

namespace baracuda::harness {

namespace {

Status copy(RefCall& c) {
  const CopyDescriptor& d = c.desc<CopyDescriptor>();
  const std::span<const int64_t> out(d.out_shape, static_cast<size_t>(d.out_rank)), in(d.in_shape, static_cast<size_t>(d.in_rank));
  const std::vector<double>& src = c["src"].in;
  RefOperand& dst = c["dst"];
  const int64_t n = numel_of(out);
  dst.want.resize(static_cast<size_t>(n));
  for (int64_t f = 0; f < n; ++f)
    dst.want[static_cast<size_t>(f)] = ref::store_as(d.out_dtype, src[static_cast<size_t>(broadcast_index(out, f, in))], d.saturate_fp8);
  dst.exact = true;
  return {};
}

// out's element f: the input whose range along dim holds f's index there, at that index less
// the input's begin (stack: the input's axis dim dropped).
Status cat(RefCall& c) {
  const CatDescriptor& d = c.desc<CatDescriptor>();
  const int dim = d.dim < 0 ? d.dim + d.rank : d.dim;
  const std::span<const int64_t> out(d.shape, static_cast<size_t>(d.rank));
  RefOperand& dst = c["out"];
  const int64_t n = numel_of(out);
  dst.want.assign(static_cast<size_t>(n), 0.0);
  std::vector<int64_t> owner(static_cast<size_t>(d.shape[dim])), local(owner.size());
  for (size_t i = 0, at = 0; i < d.sizes.size(); ++i)
    for (int64_t j = 0; j < d.sizes[i]; ++j, ++at) owner[at] = static_cast<int64_t>(i), local[at] = j;
  int64_t inner = 1;
  for (int a = dim + 1; a < d.rank; ++a) inner *= d.shape[a];
  for (int64_t f = 0; f < n; ++f) {
    const int64_t o = f / (inner * d.shape[dim]), k = (f / inner) % d.shape[dim], r = f % inner;
    const size_t i = static_cast<size_t>(owner[static_cast<size_t>(k)]);
    const std::vector<double>& src = c[element_name("inputs", i)].in;
    const int64_t from = (o * d.sizes[i] + local[static_cast<size_t>(k)]) * inner + r;
    dst.want[static_cast<size_t>(f)] = src[static_cast<size_t>(from)];
  }
  dst.exact = true;
  return {};
}

}  // namespace

OpRef ref_copy() { return {nullptr, &copy, nullptr}; }
OpRef ref_cat() { return {nullptr, &cat, nullptr}; }

}  // namespace baracuda::harness
