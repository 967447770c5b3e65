#include "core/arch.hpp"

#include <cstdlib>
#include <string>

#include "core/validate.hpp"

#ifndef BARACUDA_BUILT_ARCHS
#error "BARACUDA_BUILT_ARCHS must be defined by the build (CMAKE_CUDA_ARCHITECTURES)"
#endif

namespace baracuda {

std::string_view built_cuda_archs() { return BARACUDA_BUILT_ARCHS; }

namespace {

// "90a" runs only on 9.0; "80" (SASS + PTX) runs on 8.0 and, through the PTX, anything newer.
bool build_runs_on(int arch) {
  std::string_view list = built_cuda_archs();
  while (!list.empty()) {
    const size_t cut = list.find_first_of(";, ");
    std::string_view tok = list.substr(0, cut);
    list = cut == std::string_view::npos ? std::string_view{} : list.substr(cut + 1);
    if (tok.empty()) continue;
    const int built = std::atoi(std::string(tok).c_str());
    const std::string_view suffix = tok.substr(tok.find_first_not_of("0123456789") == std::string_view::npos
                                                   ? tok.size()
                                                   : tok.find_first_not_of("0123456789"));
    const bool specific = !suffix.empty() && (suffix[0] == 'a' || suffix[0] == 'f');
    const bool real_only = suffix.find("-real") != std::string_view::npos;
    if (built == arch) return true;
    if (!specific && !real_only && built < arch) return true;
  }
  return false;
}

}  // namespace

Result<int> resolve_arch(std::string_view op, const PlanPreference& pref) {
  int arch = pref.target_arch;
  if (arch == 0) {
    std::string why;
    arch = current_device_arch(&why);
    if (arch == 0) return error(StatusCode::kUnsupported, op, ": ", why);
  }
  if (!build_runs_on(arch))
    return error(StatusCode::kUnsupported, op, ": target sm_", arch, " has no code in this build (built for ",
                 built_cuda_archs(), "; set BARACUDA_CUDA_ARCHITECTURES)");
  return arch;
}

}  // namespace baracuda
