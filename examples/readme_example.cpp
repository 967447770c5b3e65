// The usage example shown in README.md (compiled and run by the test suite).
// Pads a [2, 3, 8] bf16 tensor by (1, 2) on its last axis in reflect mode, then takes the
// backward. Without a GPU it stops after select(), which needs none when the architecture is named.
#include <baracuda/baracuda.hpp>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <vector>

int main() {
  using namespace baracuda;
  // 1. Describe the problem (PyTorch's pad order: last axis first).
  Result<PadDescriptor> desc = PadDescriptor::torch_style(DType::bf16, {2, 3, 8}, {1, 2}, PadMode::kReflect);
  if (!desc) return std::printf("%s\n", desc.status().to_string().c_str()), 1;

  // 2. Select once (validates, picks the kernel). Naming the architecture works without a GPU.
  PlanPreference pref;
  pref.target_arch = 90;
  Result<PadPlan> plan = PadPlan::select(*desc, pref);
  if (!plan) return std::printf("%s\n", plan.status().to_string().c_str()), 1;
  std::printf("plan: %s, workspace %zu bytes\n", plan->sku().name().c_str(), plan->workspace_size());

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no GPU here: stopping after select()\n");
    return 0;
  }
  // 3. Run on a stream with caller-owned memory: views carry shape and strides.
  std::vector<uint16_t> host(2 * 3 * 8);
  for (size_t i = 0; i < host.size(); ++i) host[i] = float_to_bf16_bits(static_cast<float>(i));
  void *x = nullptr, *y = nullptr;
  cudaMalloc(&x, host.size() * 2);
  cudaMalloc(&y, 2 * 3 * 11 * 2);
  cudaMemcpy(x, host.data(), host.size() * 2, cudaMemcpyHostToDevice);
  PadArgs args{TensorRef::make(x, DType::bf16, {2, 3, 8}), TensorMut::make(y, DType::bf16, {2, 3, 11})};
  if (Status s = plan->run(/*stream=*/nullptr, Workspace{}, args); !s.ok())
    return std::printf("%s\n", s.to_string().c_str()), 1;
  std::vector<uint16_t> out(2 * 3 * 11);
  cudaMemcpy(out.data(), y, out.size() * 2, cudaMemcpyDeviceToHost);
  // row 0 = [0..7] reflect (1, 2) -> [1, 0, 1, ..., 7, 6, 5]
  const bool ok = bf16_bits_to_float(out[0]) == 1.0f && bf16_bits_to_float(out[10]) == 5.0f;
  std::printf("y[0, 0, :3] = %g %g %g ... %s\n", bf16_bits_to_float(out[0]), bf16_bits_to_float(out[1]),
              bf16_bits_to_float(out[2]), ok ? "ok" : "WRONG");
  cudaFree(x);
  cudaFree(y);
  return ok ? 0 : 1;
}
