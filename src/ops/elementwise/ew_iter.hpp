// Host side of the elementwise engine: turns strided views into coalesced launches.
#pragma once

#include <cstdint>

#include "baracuda/core/status.hpp"
#include "ops/elementwise/ew_geometry.hpp"

namespace baracuda::ew {

struct IterOperand {
  const void* data = nullptr;
  DType dtype = DType::f32;
  bool literal = false;            // scalar operand: value in EwScalars slot kLiteralSlot + index
  int64_t stride[kMaxRank] = {};   // element strides aligned to the iteration shape (0: broadcast)
};

// One launch problem: ni inputs and no outputs over `size` (outer axis first).
struct Iter {
  int rank = 0;
  int64_t size[kMaxRank] = {};
  int ni = 0, no = 0;
  IterOperand in[kMaxIn];
  IterOperand out[kMaxOut];
  bool out_on[kMaxOut] = {};
  int mask_operand = -1;  // input whose storage is bool in the rows kernel
};

// Coalesces the problem, picks the rows path when kernels.rows accepts it (dtypes uniform,
// inner axis unit-stride, 16-byte alignment), otherwise the strided path; splits into launches
// whose offsets fit 32-bit index math.
Status run_iter(std::string_view op, const Iter& it, const EwKernels& k, const EwScalars& s, bool sat_fp8,
                cudaStream_t stream);

// The backward with one broadcast operand whose gradient (output `red`, its view's strides 0 on
// the broadcast axes) is summed in the same pass (EwBcast): plan_bcast fills g when the problem
// coalesces, in its own axis order, to [rows, cols] with that gradient [1, cols] or [rows, 1]
// (or one element) and contiguous, the other operands as the rows path takes them, and rows at
// least half a block wide. try_bcast runs it with `part_bytes` of partials at `part`; false:
// the caller takes the two-pass form.
bool plan_bcast(const Iter& it, int red, const EwKernels& k, EwBcast* g);
// Bytes of partials g needs (f32: the bcast kernels serve f32 / f16 / bf16 storage only).
size_t bcast_part_bytes(const EwBcast& g);
bool try_bcast(std::string_view op, const Iter& it, int red, const EwKernels& k, const EwScalars& s, void* part,
               size_t part_bytes, cudaStream_t stream, Status* st);

}  // namespace baracuda::ew
