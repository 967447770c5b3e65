// Reference adapter of the copy row: dst = cast(src broadcast to dst's shape), every element exact.
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

}  // namespace

OpRef ref_copy() { return {nullptr, &copy, nullptr}; }

}  // namespace baracuda::harness
