// The GEMM problem in canonical form, and its execution on cuBLASLt.
//
// Every GEMM the family runs (matmul/addmm/linear forward, the da and db GEMMs of the backward)
// is first written as a GemmCanon: M, N, K axes plus batch axes, each axis carrying one element
// stride per operand (a, b, d = the output, c = the addend, p = preact). A batch axis on which d
// has stride 0 is summed: it is folded into K. GemmCore turns a GemmCanon into cuBLASLt calls
// (row-major via Dᵀ = Bᵀ·Aᵀ when d is row-major), packing into the workspace what cuBLASLt
// cannot address, and looping over batch axes that do not coalesce into one strided batch.
#pragma once

#include <cublasLt.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/gemm.hpp"
#include "baracuda/ops/copy.hpp"

namespace baracuda::detail {

// Same dtype, shape, and strides on every axis longer than 1.
bool same_layout(const TensorLayout& x, const TensorLayout& y);
// One operand view against the layout a plan was selected for: dtype, shape, strides, non-null
// data, and the pointer aligned to `alignment` bytes.
Status check_operand(std::string_view op, const char* name, const TensorLayout& got, const void* data,
                     const TensorLayout& want, int alignment);

enum GemmOperand : int { kOpA = 0, kOpB, kOpD, kOpC, kOpP, kGemmOperands };

struct GemmAxis {
  int64_t ext = 1;
  std::array<int64_t, kGemmOperands> s{};  // element stride of each operand along this axis
};

struct GemmCanon {
  DType a_dtype = DType::f32, b_dtype = DType::f32, d_dtype = DType::f32;
  int nb = 0;
  GemmAxis batch[kMaxRank];  // outer -> inner; s[kOpD] == 0 with ext > 1 means "summed"
  GemmAxis m, n, k;          // m: a d c p;  n: b d c p;  k: a b
};

// Drops extent-1 batch axes and merges adjacent batch axes of the same kind (kept / summed)
// whose strides nest for every operand.
void simplify(GemmCanon& c);

// Elementwise geometry over the canonical output axes [batch kept..., M, N] (N innermost):
// out = act(src_scale·src + bias[n]); pre = the value before act. Used for the separate
// epilogue, for K == 0, for the backward's dZ = d_out ⊙ act'(Z) and its dc = beta·dZ.
struct PointwiseGeometry {
  int rank = 0;
  int64_t ext[kMaxRank] = {};
  int64_t s_out[kMaxRank] = {}, s_src[kMaxRank] = {}, s_aux[kMaxRank] = {};
  int64_t numel = 0;
  void* out = nullptr;
  const void* src = nullptr;   // nullptr: reads as 0
  void* aux = nullptr;         // epilogue: preact written here; backward: Z read from here
  const void* bias = nullptr;  // indexed bias[n * bias_stride], n = index along axis rank-1
  int64_t bias_stride = 0;
  double src_scale = 1.0;
  int act = 0;                 // GemmActivation
  bool backward = false;       // out = src ⊙ act'(aux)   (relu: aux > 0, gelu: derivative at aux)
};
Status launch_pointwise(DType dt, const PointwiseGeometry& g, cudaStream_t stream);
// Fills g's axes [kept batch..., M, N] from c (axes where out has stride 0 are skipped), taking
// the out / src / aux strides from operands so / ss / sx (GemmOperand); sets rank and numel.
void pointwise_axes(const GemmCanon& c, int so, int ss, int sx, PointwiseGeometry& g);

// dst[n·dst_stride] = scale · Σ_rows src[row, n], summed in f32 (f64 for f64) in a fixed
// order: pass 1 writes per-chunk partials to the workspace, pass 2 adds them in chunk order.
struct ColumnSumGeometry {
  int rank = 0;  // row axes (the column axis is separate)
  int64_t ext[kMaxRank] = {}, s_src[kMaxRank] = {};
  int64_t rows = 0, cols = 0, col_stride = 1, dst_stride = 1;
  const void* src = nullptr;
  void* dst = nullptr;
  double scale = 1.0;
};
size_t column_sum_workspace(DType dt, int64_t rows, int64_t cols);
Status launch_column_sum(DType dt, const ColumnSumGeometry& g, void* ws, cudaStream_t stream);
// Column sums of src viewed through pg (s_out strides, last axis = the columns) into dst.
Status launch_column_sum_over(DType dt, const PointwiseGeometry& pg, const void* src, void* dst, double scale, void* ws,
                              cudaStream_t stream);

// launch_pointwise, then dst[n] = Σ over the other axes of the values written to g.out (the bias
// gradient), fused into the same pass on the contiguous fast path (per-block partials in ws, then
// a fixed-order final sum: deterministic); otherwise a second column-sum pass.
size_t pointwise_colsum_workspace(DType dt, int64_t rows, int64_t cols);
Status launch_pointwise_colsum(DType dt, const PointwiseGeometry& g, void* dst, void* ws, cudaStream_t stream);

// Scratch fill for timing: |v| in [0.5, 2) with random sign and mantissa from a hash of the index
// (float dtypes and fp8).
Status launch_fill_scratch(DType dt, void* p, int64_t elems, uint64_t seed, cudaStream_t stream);

// Options a GEMM takes from its descriptor and preference.
struct GemmCoreOptions {
  double alpha = 1.0, beta = 0.0;
  bool use_c = false;            // beta·c is added (c read from its own view, copied into d first)
  bool has_bias = false;
  DType bias_dtype = DType::f32;
  GemmActivation act = GemmActivation::kNone;
  bool save_preact = false;
  GemmEpilogueImpl epilogue = GemmEpilogueImpl::kAuto;
  int pointer_alignment = 16;
  bool reduced_precision_reduction = false;
  bool fp8_fast_accum = false;
  GemmActivation grad_act = GemmActivation::kNone;  // backward epilogue: d = Z ⊙ act'(aux), aux at kOpP strides
  bool bias_grad = false;                           // bias_grad[n] = Σ over d's other axes
  int64_t bias_stride = 1;                          // of the bias view (autotune's scratch operands)
};

// One packing copy: operand `which` (as viewed over canonical axes) into the workspace.
struct PackStep {
  int which = 0;  // GemmOperand; kOpD means "out -> workspace d" for c, or "workspace d -> out"
  CopyPlan plan;
  TensorLayout src, dst;
  int64_t ws_offset = 0;
};

struct GemmCore {
  GemmCanon canon;      // after simplify, before packing
  GemmCoreOptions opt;
  bool empty = false;   // M, N or batch is 0: nothing to write
  bool k_zero = false;  // K == 0 (after folding): out = act(beta·c + bias)
  bool device_ready = false;  // the cuBLASLt algorithm was chosen (a device was present)

  // packing (workspace offsets in bytes, 256-aligned)
  bool pack_a = false, pack_b = false, pack_d = false;
  std::vector<PackStep> pre;   // before the GEMM: c -> d target, a, b packs
  std::vector<PackStep> post;  // after: workspace d -> out
  bool c_copy_needed_unless_inplace = false;  // c is copied into out unless it is out itself
  int64_t d_ws_offset = -1;                   // workspace d (when pack_d)

  // cuBLASLt
  bool swap = false;  // cuBLASLt's A is our b (d row-major)
  cublasLtHandle_t handle = nullptr;
  int device = -1;
  cublasLtMatmulDescOpaque_t op_desc{};
  cublasLtMatrixLayoutOpaque_t lay_a{}, lay_b{}, lay_d{};
  cublasLtMatmulAlgo_t algo{};
  size_t algo_ws = 0;
  int64_t algo_ws_offset = 0;
  bool fused_bias = false, fused_act = false, fused_aux = false;
  bool fused_dact = false, fused_bgrad = false;  // DGELU(_BGRAD): aux read, bias pointer written
  struct Candidate {
    cublasLtMatmulAlgo_t algo{};
    size_t ws = 0;
  };
  std::vector<Candidate> candidates;  // the heuristic's top-k (autotune), best first
  bool tuned = false;
  // loop axes: host loop around the cuBLASLt call; strides after packing, in elements
  int nloop = 0;
  GemmAxis loop[kMaxRank];
  DType compute_acc = DType::f32;
  bool tf32 = false;
  int split_k = 1;
  std::string variant;  // for the sku

  // separate epilogue over the output (when the epilogue is not fused)
  bool separate_epilogue = false;
  int64_t colsum_ws_offset = -1;  // separate bias_grad: column-sum partials

  size_t workspace = 0;

  struct RunArgs {
    const void* a = nullptr;
    const void* b = nullptr;
    const void* c = nullptr;
    void* d = nullptr;
    const void* bias = nullptr;
    int64_t bias_stride = 1;
    void* preact = nullptr;
    const float* a_scale = nullptr;
    const float* b_scale = nullptr;
    bool c_is_out = false;  // c is exactly out (same pointer and strides): no copy
    const void* aux = nullptr;  // grad epilogue: act's input, at kOpP strides
    void* bias_grad = nullptr;  // [N], unit stride
  };

  // Resolves everything; with a device (pref.target_arch == 0 or a device present) also asks
  // cuBLASLt for the algorithm.
  // candidates > 1 keeps the heuristic's top-k for autotune().
  static Result<GemmCore> build(std::string_view op, const GemmCanon& canon, const GemmCoreOptions& opt,
                                const PlanPreference& pref, int arch, int candidates = 1);
  Status run(std::string_view op, cudaStream_t stream, Workspace ws, const RunArgs& r) const;
  void describe();  // variant and split_k from the chosen algorithm

  // build(), and with pref.autotune on a device: every candidate algorithm, and for kAuto
  // epilogues both the fused and the separate form, timed on scratch operands; the fastest kept.
  static Result<GemmCore> select(std::string_view op, const GemmCanon& canon, const GemmCoreOptions& opt,
                                 const PlanPreference& pref, int arch);
};

}  // namespace baracuda::detail
