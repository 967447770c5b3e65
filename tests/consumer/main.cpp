// Built against an installed baracuda through find_package: selects a plan without a GPU.
#include <baracuda/baracuda.hpp>

#include <cstdio>

int main() {
  auto desc = baracuda::PadDescriptor::torch_style(baracuda::DType::bf16, {2, 3, 8}, {1, 2},
                                                  baracuda::PadMode::kReflect);
  if (!desc) return 1;
  baracuda::PlanPreference pref;
  pref.target_arch = 90;
  auto plan = baracuda::PadPlan::select(*desc, pref);
  if (!plan) {
    std::printf("%s\n", plan.status().to_string().c_str());
    return 1;
  }
  std::printf("%s\n", plan->sku().name().c_str());
  return 0;
}
