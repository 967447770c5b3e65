// Scalar -> element conversion with PyTorch's checked cast (c10::checked_convert, as fill_ and
// the `value` arguments of pad, full, masked_fill, index_fill and clamp take a Python number):
// floats round to nearest (f16 / bf16 through f32, as PyTorch), integers are range-checked and
// truncated toward zero, bool is `nonzero`. Used by select(), once per plan.
#pragma once

#include <cstdint>
#include <string_view>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/scalar.hpp"
#include "baracuda/core/status.hpp"

namespace baracuda {

// The element of `dt` that v converts to, as raw bits in the low dtype_size(dt) bytes.
// InvalidProblem ("<op>: <field> = 300 overflows i8") when an integer target cannot hold it
// (unsigned targets accept [-max, max] and wrap, as c10's overflow check does); Unsupported for
// dtypes without a conversion (fp8, complex).
Result<uint64_t> scalar_to_bits(std::string_view op, std::string_view field, DType dt, const Scalar& v);

}  // namespace baracuda
