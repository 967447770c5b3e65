#include "core/plan_kit.hpp"

namespace baracuda {

Status begin_select(std::string_view op, const PlanPreference& pref, KernelSku* sku, Backend backend) {
  if (Status s = check_enums(op, pref, "pref."); !s.ok()) return s;
  if (pref.forced_backend != Backend::kAny && pref.forced_backend != backend)
    return error(StatusCode::kUnsupported, op, ": forced backend ", enum_name(pref.forced_backend), " has no ", op,
                 " implementation (candidates: ", enum_name(backend), ")");
  auto arch = resolve_arch(op, pref);
  if (!arch) return arch.status();
  sku->backend = backend;
  sku->arch = *arch;
  return {};
}

}  // namespace baracuda
