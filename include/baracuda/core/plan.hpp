// baracuda/core/plan.hpp — the vocabulary of the Plan contract shared by every op.
//
//   FooPlan::select(desc, pref)   validates, picks an implementation, resolves dtype dispatch
//   plan.can_implement(args)      host-only checks of the views against the descriptor
//   plan.workspace_size()         scratch bytes run() needs (fixed at select)
//   plan.sku()                    which implementation was chosen (stable printable name)
//   plan.precision_guarantee()    accumulator, math precision, determinism
//   plan.run(stream, ws, args)    argument checks + launch; no allocation, no sync, graph-safe
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/dtype.hpp"
#include "baracuda/core/operands.hpp"

typedef struct CUstream_st* cudaStream_t;  // the CUDA runtime's own opaque declaration

namespace baracuda {

// Caller-owned scratch memory on the device. run() never allocates.
struct Workspace {
  void* ptr = nullptr;
  size_t bytes = 0;
};

BARACUDA_ENUM(Determinism, uint8_t,
              (kAny, "any"),              // atomics and run-to-run variation allowed
              (kRunToRun, "run_to_run"));  // same inputs, same device, same plan => bitwise-identical outputs

// kAny lets select() choose; a forced backend narrows the candidate list to that library.
BARACUDA_ENUM(Backend, uint8_t, (kAny, "any"), (kBespoke, "bespoke"), (kCuBLASLt, "cublaslt"), (kCuDNN, "cudnn"),
              (kCUB, "cub"), (kCuFFT, "cufft"), (kCuSOLVER, "cusolver"), (kCuRAND, "curand"), (kNCCL, "nccl"));

BARACUDA_ENUM(Direction, uint8_t, (kForward, "fwd"), (kBackward, "bwd"));

struct PlanPreference {
  Determinism determinism = Determinism::kAny;
  // Compute capability as major*10+minor (90 = sm_90). 0: ask the current device at select().
  // Naming an architecture lets select() run on a machine with no GPU.
  int target_arch = 0;
  size_t max_workspace_bytes = SIZE_MAX;
  Backend forced_backend = Backend::kAny;
  bool allow_tf32 = false;
  // Timed selection: select() runs the candidate implementations on the current device and
  // keeps the fastest (families that support it say so in their header; others ignore it).
  // Such a select() allocates and frees scratch device memory, synchronizes the device and
  // takes milliseconds to seconds; its result is cached per (descriptor, preference, device).
  // Do not call it while a stream of the device is being captured into a graph.
  bool autotune = false;

  bool operator==(const PlanPreference&) const = default;
};
BARACUDA_DESCRIBE(PlanPreference, determinism, target_arch, max_workspace_bytes, forced_backend, allow_tf32, autotune);

// What the chosen implementation promises about its numerics.
struct PrecisionGuarantee {
  DType accumulator = DType::f32;  // type partial sums are held in
  DType math = DType::f32;         // type pointwise math is done in
  bool bit_exact = false;          // result equals the exact math rounded once (data movement)
  Determinism determinism = Determinism::kRunToRun;
  bool tf32_inputs = false;  // f32 inputs rounded to TF32 (10-bit mantissa) before multiplying
  int split_k = 1;           // partial sums of the reduction computed separately, then added
};

// Which implementation a plan chose. name() is stable across releases for the same choice,
// e.g. "pad.reflect.fwd.bf16.bespoke.sm90.warprows".
struct KernelSku {
  std::string op;  // family-level op name, e.g. "pad.reflect"
  Direction direction = Direction::kForward;
  DType dtype = DType::f32;
  Backend backend = Backend::kBespoke;
  int arch = 0;
  std::string variant;

  std::string name() const;
};

// What every plan class shares: the descriptor it was selected for and what select() fixed.
// Plans derive from it (no virtual functions; plans stay value types) and add select(),
// can_implement() and run() with their own Args.
template <class Desc>
class PlanBase {
 public:
  const Desc& descriptor() const { return desc_; }
  size_t workspace_size() const { return workspace_; }
  const KernelSku& sku() const { return sku_; }
  PrecisionGuarantee precision_guarantee() const { return guarantee_; }
  // The views run() takes, from the descriptor (core/operands.hpp).
  const OperandSpecs& expected_operands() const { return operands_; }
  // False for a default-constructed plan: its can_implement() and run() refuse to do anything.
  bool selected() const { return sku_.arch != 0; }

 protected:
  Desc desc_{};
  KernelSku sku_;
  PrecisionGuarantee guarantee_;
  size_t workspace_ = 0;
  OperandSpecs operands_;
};

// Compute capability of the current CUDA device (major*10+minor), or an error Status message
// when there is none. Used by select() when PlanPreference::target_arch == 0.
int current_device_arch(std::string* why_not);

}  // namespace baracuda
