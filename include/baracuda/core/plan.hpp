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

#include "baracuda/core/dtype.hpp"

typedef struct CUstream_st* cudaStream_t;  // the CUDA runtime's own opaque declaration

namespace baracuda {

// Caller-owned scratch memory on the device. run() never allocates.
struct Workspace {
  void* ptr = nullptr;
  size_t bytes = 0;
};

enum class Determinism : uint8_t {
  kAny,       // atomics and run-to-run variation allowed
  kRunToRun,  // same inputs, same device, same plan => bitwise-identical outputs
};

enum class Backend : uint8_t {
  kAny,  // let select() choose (a forced backend below narrows the candidate list)
  kBespoke,
  kCuBLASLt,
  kCuDNN,
  kCUB,
  kCuFFT,
  kCuSOLVER,
  kCuRAND,
  kNCCL,
};
std::string_view backend_name(Backend b);

enum class Direction : uint8_t { kForward, kBackward };
std::string_view direction_name(Direction d);

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

// Compute capability of the current CUDA device (major*10+minor), or an error Status message
// when there is none. Used by select() when PlanPreference::target_arch == 0.
int current_device_arch(std::string* why_not);

}  // namespace baracuda
