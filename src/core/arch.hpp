// Which GPU architecture a plan targets, and whether this build carries code for it.
#pragma once

#include <string_view>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"

namespace baracuda {

// The architectures compiled into this build (CMAKE_CUDA_ARCHITECTURES), e.g. "90a".
std::string_view built_cuda_archs();

// PlanPreference::target_arch, or the current device's when it is 0. Fails with the reason
// when the build has no code that runs on that architecture.
Result<int> resolve_arch(std::string_view op, const PlanPreference& pref);

// Streaming multiprocessors of the current device (0 when there is none); defined in plan.cpp
// beside current_device_arch. For run()-time grid shaping only: select() never depends on it.
int current_device_sm_count();

}  // namespace baracuda
