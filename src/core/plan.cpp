#include "baracuda/core/plan.hpp"

#include <cuda_runtime_api.h>

#include <initializer_list>
#include <string>
#include <utility>

#include "core/arch.hpp"

namespace baracuda {

std::string KernelSku::name() const {
  // <op-family>.<dir>.<op-variant>.<dtype>.<backend>.sm<arch>.<kernel-variant>
  std::string s = op;
  s += '.';
  s += enum_name(direction);
  s += '.';
  s += dtype_name(dtype);
  s += '.';
  s += enum_name(backend);
  s += ".sm";
  s += std::to_string(arch);
  if (!variant.empty()) {
    s += '.';
    s += variant;
  }
  return s;
}

namespace {

// Attributes of the current device; on an error (returned) the error is cleared so that later
// calls do not see it.
cudaError_t device_attributes(std::initializer_list<std::pair<cudaDeviceAttr, int*>> want) {
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  for (auto [attr, out] : want)
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(out, attr, dev);
  if (e != cudaSuccess) cudaGetLastError();
  return e;
}

}  // namespace

int current_device_arch(std::string* why_not) {
  int major = 0, minor = 0;
  const cudaError_t e =
      device_attributes({{cudaDevAttrComputeCapabilityMajor, &major}, {cudaDevAttrComputeCapabilityMinor, &minor}});
  if (e != cudaSuccess) {
    if (why_not) {
      *why_not = "no usable CUDA device (";
      *why_not += cudaGetErrorName(e);
      *why_not += "); name PlanPreference::target_arch to select without one";
    }
    return 0;
  }
  return major * 10 + minor;
}

int current_device_sm_count() {
  int n = 0;
  return device_attributes({{cudaDevAttrMultiProcessorCount, &n}}) == cudaSuccess ? n : 0;
}

}  // namespace baracuda
