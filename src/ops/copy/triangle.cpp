// TrianglePlan: tril / triu — the descriptor's checks and the geometry (batch axes merged, the
// row in 16-byte units where both views allow).
#include "baracuda/ops/triangle.hpp"

#include <algorithm>

#include "core/checked_math.hpp"
#include "core/cuda_check.hpp"
#include "core/dispatch.hpp"
#include "core/plan_kit.hpp"
#include "core/validate.hpp"
#include "ops/copy/triangle_geometry.hpp"

namespace baracuda {

namespace {

constexpr std::string_view kOp = "triangle";


TriangleDescriptor make(DType dtype, std::span<const int64_t> shape, int64_t diagonal, bool upper) {
  TriangleDescriptor d;
  d.dtype = dtype, d.diagonal = diagonal, d.upper = upper;
  d.rank = shape.size() > static_cast<size_t>(kMaxRank) ? -1 : static_cast<int>(shape.size());
  if (d.rank > 0) std::copy(shape.begin(), shape.end(), d.shape);
  return d;
}

}  // namespace

TriangleDescriptor TriangleDescriptor::tril(DType dtype, std::span<const int64_t> shape, int64_t diagonal) {
  return make(dtype, shape, diagonal, false);
}
TriangleDescriptor TriangleDescriptor::triu(DType dtype, std::span<const int64_t> shape, int64_t diagonal) {
  return make(dtype, shape, diagonal, true);
}

Result<TrianglePlan> TrianglePlan::select(const TriangleDescriptor& d, const PlanPreference& pref) {
  TrianglePlan p;
  if (Status s = begin_select(kOp, d, pref, &p.sku_); !s.ok()) return s;
  if (Status s = check_dtype(kOp, "dtype", d.dtype, RealDTypes{}); !s.ok()) return s;
  int64_t numel = 0;
  if (Status s = check_shape(kOp, d.rank, d.shape, 2, &numel); !s.ok()) return s;
  if (!trik::find_triangle(static_cast<int>(dtype_size(d.dtype)), false))
    return error(StatusCode::kInternal, kOp, ": no kernel for ", dtype_name(d.dtype));
  p.desc_ = d;
  p.sku_.op = d.upper ? "triu" : "tril";
  p.sku_.direction = Direction::kForward;
  p.sku_.dtype = d.dtype;
  p.sku_.variant = "rows";
  p.guarantee_.accumulator = p.guarantee_.math = d.dtype;
  p.guarantee_.bit_exact = true;
  p.guarantee_.determinism = Determinism::kRunToRun;
  const std::span<const int64_t> shape(d.shape, static_cast<size_t>(d.rank));
  p.operands_.input("input", d.dtype, shape);
  p.operands_.output("out", d.dtype, shape);
  p.operands_.may_alias("out", "input");
  if (Status s = resolve_operands<TriangleArgs>(kOp, p.operands_); !s.ok()) return s;
  return p;
}

Status TrianglePlan::can_implement(const TriangleArgs& a) const {
  if (Status s = check_plan_args(kOp, selected(), operands_, a); !s.ok()) return s;
  if ((a.out.data != a.input.data || !a.out.identical(a.input)) && views_may_overlap(a.out, a.out.data, a.input, a.input.data))
    return error(StatusCode::kInvalidProblem, kOp, ": out overlaps input without being the same view (pass the input itself for the in-place form)");
  return {};
}

Status TrianglePlan::run(cudaStream_t stream, Workspace, const TriangleArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (a.out.numel() == 0) return {};
  const TriangleDescriptor& d = desc_;
  const int r = d.rank;
  trik::Params p;
  p.in = static_cast<const char*>(a.input.data);
  p.out = static_cast<char*>(a.out.data);
  p.rows = d.shape[r - 2];
  p.cols = d.shape[r - 1];
  p.diagonal = d.diagonal;
  p.upper = d.upper;
  p.r_in = a.input.stride[r - 2], p.r_out = a.out.stride[r - 2];
  p.c_in = a.input.stride[r - 1], p.c_out = a.out.stride[r - 1];
  for (int k = 0; k < r - 2; ++k) {  // batch axes: extent-1 dropped, nesting ones merged
    if (d.shape[k] == 1) continue;
    int64_t in_next = 0, out_next = 0;
    if (p.nb > 0 && checked_mul(a.input.stride[k], d.shape[k], &in_next) && checked_mul(a.out.stride[k], d.shape[k], &out_next) &&
        p.b_in[p.nb - 1] == in_next && p.b_out[p.nb - 1] == out_next) {
      p.bn[p.nb - 1] *= d.shape[k], p.b_in[p.nb - 1] = a.input.stride[k], p.b_out[p.nb - 1] = a.out.stride[k];
      continue;
    }
    p.bn[p.nb] = d.shape[k], p.b_in[p.nb] = a.input.stride[k], p.b_out[p.nb] = a.out.stride[k];
    ++p.nb;
  }
  const int64_t es = static_cast<int64_t>(dtype_size(d.dtype)), V = 16 / es;
  bool vec = V > 1 && p.c_in == 1 && p.c_out == 1 && p.cols % V == 0 && p.r_in % V == 0 && p.r_out % V == 0 &&
             reinterpret_cast<uintptr_t>(a.input.data) % 16 == 0 && reinterpret_cast<uintptr_t>(a.out.data) % 16 == 0;
  for (int k = 0; k < p.nb && vec; ++k) vec = p.b_in[k] % V == 0 && p.b_out[k] % V == 0;
  if (vec) p.cols /= V, p.c_in = p.c_out = V, p.vec = static_cast<int>(V);
  p.units = a.out.numel() / (vec ? V : 1);
  p.small = p.units < (int64_t{1} << 31);
  if (p.small) {
    p.col_div = detail::FastDiv(static_cast<uint32_t>(p.cols));
    p.row_div = detail::FastDiv(static_cast<uint32_t>(p.rows));
    for (int k = 0; k < p.nb; ++k) p.b_div[k] = detail::FastDiv(static_cast<uint32_t>(p.bn[k]));
  }
  return cuda_status(trik::find_triangle(static_cast<int>(es), vec)(p, stream), kOp);
}

}  // namespace baracuda
