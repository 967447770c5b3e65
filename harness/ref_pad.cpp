// Reference adapters of the pad rows.
#include "baracuda/ops/pad.hpp"
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

}  // namespace

OpRef ref_pad() { return {nullptr, &pad_forward, nullptr}; }
OpRef ref_pad_backward() { return {nullptr, &pad_backward, nullptr}; }

}  // namespace baracuda::harness
