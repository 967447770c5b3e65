// Reference adapters of the pad and copy rows.
#include "baracuda/ops/copy.hpp"
#include "baracuda/ops/pad.hpp"
#include "elementwise_ref.hpp"
#include "harness/op_case.hpp"
#include "harness/ref_common.hpp"
#include "pad_ref.hpp"

namespace baracuda::harness {

namespace {

Status pad_forward(RefCall& c) {
  const PadDescriptor& d = c.desc<PadDescriptor>();
  RefOperand& y = c["y"];
  y.want = ref::pad_forward(d, c["x"].in);
  y.exact = true;
  return {};
}

Status pad_backward(RefCall& c) {
  const PadDescriptor& d = c.desc<PadDescriptor>();
  const std::vector<double>& dy = c["dy"].in;
  RefOperand& dx = c["dx"];
  dx.want = ref::pad_backward(d, dy);
  dx.mag = ref::pad_backward(d, abs_of(dy));
  return {};
}

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

OpRef ref_pad() { return {nullptr, &pad_forward, nullptr}; }
OpRef ref_pad_backward() { return {nullptr, &pad_backward, nullptr}; }
OpRef ref_copy() { return {nullptr, &copy, nullptr}; }

}  // namespace baracuda::harness
