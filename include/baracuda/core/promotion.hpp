// baracuda/core/promotion.hpp — PyTorch's type promotion, for every op that combines dtypes
// (elementwise, reductions with an accumulating dtype, where, index_add, scatter, losses ...).
//
// torch.result_type ranks operands in three tiers — dimensioned tensors, zero-dim tensors,
// wrapped numbers (Python scalars) — and combines them by category (bool < integer < floating):
// a lower tier only matters when it is of a higher category than every higher tier (a float
// scalar turns an integer tensor's result into the default float dtype, an int scalar never
// widens an int tensor).
#pragma once

#include <span>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/scalar.hpp"
#include "baracuda/core/status.hpp"

namespace baracuda {

// PyTorch's promote_types (bool < integers < floating; u8 + i8 -> i16, f16 + bf16 -> f32 ...).
// Fails for fp8 and complex pairs, which PyTorch does not promote either.
Result<DType> promote_types(DType a, DType b);

enum class PromotionTier : uint8_t { kTensor, kZeroDim, kScalar };

struct PromotionOperand {
  DType dtype = DType::f32;
  PromotionTier tier = PromotionTier::kTensor;
};

// The dtype a Python number takes part with: bool, i64, or f32 (PyTorch's default float dtype).
DType scalar_dtype(const Scalar& s);

// torch.result_type over the operands; Unsupported when a pair does not promote or the list is empty.
Result<DType> result_type(std::span<const PromotionOperand> operands);

// torch.can_cast for an op's result into an out dtype: no floating -> integral or bool, no
// numeric -> bool.
bool can_cast(DType from, DType to);

}  // namespace baracuda
