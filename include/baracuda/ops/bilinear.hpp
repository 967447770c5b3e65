// baracuda/ops/bilinear.hpp — torch.nn.functional.bilinear, forward and backward, as a chain of
// cuBLASLt GEMMs (the GEMM family's GemmCore).
//
// Math:   out[..., o] = Σ_i Σ_j x1[..., i] · weight[o, i, j] · x2[..., j]  (+ bias[o])
//   Forward: U[b, o, :] = x1[b, :] · weight[o]        (batched over o, U in the workspace)
//            out[b, :]  = x2[b, :] · U[b]ᵀ (+ bias)   (batched over b)
//   Backward (each gradient optional; null pointers are skipped):
//            dx2[b, j]    = Σ_o d_out[b, o] · U[b, o, j]             (U recomputed)
//            dx1[b, i]    = Σ_o d_out[b, o] · T[b, o, i],  T[b, o, :] = x2[b, :] · weight[o]ᵀ
//            dweight[o]   = x1ᵀ · G[:, o, :],  G[b, o, j] = d_out[b, o] · x2[b, j]
//            dbias[o]     = Σ_b d_out[b, o]                          (fixed-order column sum)
// Shapes: x1 [..., I], x2 [..., J] with the same leading dims (none is allowed: 1-D inputs),
//   weight [O, I, J], bias [O], out [..., O]. The leading dims of x1, x2, out and d_out must
//   each fold into one axis (nesting strides); the last axes and weight take any strides.
// Dtypes: f32 (IEEE; TF32 only with PlanPreference::allow_tf32), f16, bf16, f64; every operand
//   the same dtype. Accumulator f32 (f64 for f64); the intermediates U, T, G are stored in the
//   operand dtype (as PyTorch's composition does), so 16-bit types round twice.
// Determinism: run-to-run bitwise deterministic (pinned cuBLASLt algorithms, no atomics).
// Workspace: B·O·max(I, J) elements for the intermediate plus the GEMMs' own; fixed at select().
// Aliasing: outputs may not overlap inputs or each other.
// Gradients are written row-major contiguous in their operand's shape.
#pragma once

#include <cstddef>
#include <memory>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

struct BilinearDescriptor {
  TensorLayout x1, x2, weight, out;
  TensorLayout bias;  // [O]; used when has_bias
  bool has_bias = false;
  int pointer_alignment = 16;  // bytes every operand pointer is guaranteed to be aligned to

  bool operator==(const BilinearDescriptor& o) const;  // every field (fields_equal)
};
BARACUDA_DESCRIBE(BilinearDescriptor, x1, x2, weight, out, bias, has_bias, pointer_alignment);
inline bool BilinearDescriptor::operator==(const BilinearDescriptor& o) const { return fields_equal(*this, o); }

struct BilinearArgs {
  TensorRef x1, x2, weight, bias;
  TensorMut out;
};
BARACUDA_DESCRIBE(BilinearArgs, x1, x2, weight, bias, out);

// Each gradient is optional: a null pointer skips it.
struct BilinearBackwardArgs {
  TensorRef x1, x2, weight, d_out;  // d_out has out's layout
  TensorMut dx1, dx2, dweight, dbias;
};
BARACUDA_DESCRIBE(BilinearBackwardArgs, x1, x2, weight, d_out, dx1, dx2, dweight, dbias);

namespace detail {
struct BilinearExec;
}

class BilinearPlan : public PlanBase<BilinearDescriptor> {
 public:
  static Result<BilinearPlan> select(const BilinearDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const BilinearArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const BilinearArgs& args) const;

 private:
  std::shared_ptr<const detail::BilinearExec> exec_;
};

class BilinearBackwardPlan : public PlanBase<BilinearDescriptor> {
 public:
  static Result<BilinearBackwardPlan> select(const BilinearDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const BilinearBackwardArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const BilinearBackwardArgs& args) const;

 private:
  std::shared_ptr<const detail::BilinearExec> exec_;
};

}  // namespace baracuda
