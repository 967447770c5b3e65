// baracuda/ops/copy.hpp — dst.copy_(src): a strided copy with broadcasting and dtype conversion.
//
// Math: dst[i] = convert(src[i']) where src broadcasts to dst's shape (numpy rules: shapes
//   right-aligned, an extent of 1 stretches) and convert is PyTorch's cast (the elementwise
//   engine's `to`: floats through f32 for 16-bit types, float -> integer truncating, NaN -> 0 for
//   narrow integers, fp8 saturating when saturate_fp8, else PyTorch's NaN / inf on overflow).
// Shapes: dst rank 0..8; src rank <= dst rank, each extent 1 or equal to dst's.
// Strides: any for src (0, negative, permuted, offset); dst must not self-overlap. The engine
//   picks a contiguous, row-vectorized, 2-D tiled (transposes) or general strided path.
// Dtypes: every pair of the 12 real dtypes (f32 f16 bf16 f64 f8e4m3 f8e5m2 i8 u8 i16 i32 i64
//   bool); same-dtype copies are bit-exact data movement.
// Determinism: bitwise deterministic. Workspace: none.
// Aliasing: dst may be exactly src (a no-op copy); any other overlap is an error.
// This is the first op of the copy / indexing family; gemm packs operands through it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

struct CopyDescriptor {
  DType dtype = DType::f32;      // src
  DType out_dtype = DType::f32;  // dst
  int in_rank = 0;
  int64_t in_shape[kMaxRank] = {};  // src, broadcastable to out_shape
  int out_rank = 0;
  int64_t out_shape[kMaxRank] = {};
  bool saturate_fp8 = false;

  // A same-shape copy from `dtype` to `out_dtype` (the same dtype when omitted).
  static CopyDescriptor make(DType dtype, std::span<const int64_t> shape, std::optional<DType> out_dtype = std::nullopt);
  bool operator==(const CopyDescriptor&) const = default;
};
BARACUDA_DESCRIBE(CopyDescriptor, dtype, out_dtype, in_rank, in_shape, out_rank, out_shape, saturate_fp8);

struct CopyArgs {
  TensorRef src;
  TensorMut dst;
};
BARACUDA_DESCRIBE(CopyArgs, src, dst);

class ElementwisePlan;

class CopyPlan : public PlanBase<CopyDescriptor> {
 public:
  static Result<CopyPlan> select(const CopyDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const CopyArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const CopyArgs& args) const;

 private:
  std::shared_ptr<const ElementwisePlan> cast_;  // the engine's `to` over dst's shape
};

}  // namespace baracuda
