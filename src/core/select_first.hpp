// An op with several implementations lists them in priority order and select() walks the list
// (oneDNN's implementation lists): the first whose `accepts` passes is chosen; when none does,
// the error gives every candidate's reason. A forced backend (PlanPreference::forced_backend)
// skips the other candidates.
//
//   constexpr Impl<FooDescriptor> kFooImpls[] = {
//       {"bespoke.tiled", Backend::kBespoke, &tiled_accepts},
//       {"cudnn", Backend::kCuDNN, &cudnn_accepts},
//   };
//   auto impl = select_first(kOp, kFooImpls, desc, pref);  // Result<const Impl<FooDescriptor>*>
//   if (!impl) return impl.status();
//   ... configure the plan for (*impl)->name
#pragma once

#include <string>
#include <string_view>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "core/validate.hpp"

namespace baracuda {

template <class Desc>
struct Impl {
  std::string_view name;  // also the sku variant of plans that take it
  Backend backend;
  // OK when this implementation takes the problem; otherwise why not.
  Status (*accepts)(const Desc&, const PlanPreference&);
};

template <class Desc, size_t N>
Result<const Impl<Desc>*> select_first(std::string_view op, const Impl<Desc> (&impls)[N], const Desc& d,
                                       const PlanPreference& pref) {
  std::string why;
  StatusCode code = StatusCode::kOk;
  bool mixed = false;
  for (const Impl<Desc>& im : impls) {
    Status s = pref.forced_backend != Backend::kAny && pref.forced_backend != im.backend
                   ? error(StatusCode::kUnsupported, "forced backend ", enum_name(pref.forced_backend))
                   : im.accepts(d, pref);
    if (s.ok()) return &im;
    mixed = mixed || (code != StatusCode::kOk && code != s.code());
    code = s.code();
    why += cat(why.empty() ? "" : "; ", im.name, ": ", s.message());
  }
  // one common kind of reason (an invalid problem) keeps its code; different ones are Unsupported
  return Status(mixed || code == StatusCode::kOk ? StatusCode::kUnsupported : code,
                cat(op, ": no implementation accepts the problem (", why, ")"));
}

}  // namespace baracuda
