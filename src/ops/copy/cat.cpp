// CatPlan: the descriptor's checks, the inputs as operands "inputs[i]", and per launch of up
// to kMaxCatInputsPerLaunch inputs the row form (or the strided walk) of every view.
#include "baracuda/ops/cat.hpp"

#include <algorithm>
#include <cstdint>

#include "baracuda/core/promotion.hpp"
#include "baracuda/ops/copy.hpp"
#include "core/checked_math.hpp"
#include "core/cuda_check.hpp"
#include "core/dispatch.hpp"
#include "core/plan_kit.hpp"
#include "core/validate.hpp"
#include "ops/copy/cat_geometry.hpp"

namespace baracuda {

namespace {

constexpr std::string_view kOp = "cat";


int axis_of(const CatDescriptor& d) { return d.dim < 0 ? d.dim + d.rank : d.dim; }

// Input i seen at the output's rank (stack: its missing axis dim inserted, extent 1, stride 0).
TensorLayout at_out_rank(const CatDescriptor& d, int dim, const TensorLayout& v) {
  if (!d.stack) return v;
  TensorLayout t = v;
  t.rank = d.rank;
  for (int a = 0, s = 0; a < d.rank; ++a) {
    const bool added = a == dim;
    t.shape[a] = added ? 1 : v.shape[s];
    t.stride[a] = added ? 0 : v.stride[s];
    s += added ? 0 : 1;
  }
  return t;
}

// Axes [0, dim) one strided run (its stride in *outer) and axes [dim, rank) contiguous.
bool row_form(const TensorLayout& v, int dim, int64_t* outer) {
  int64_t inner = 0;
  return merged_stride(v, 0, dim, outer) && merged_stride(v, dim, v.rank, &inner) && inner == 1;
}

bool aligned16(const void* p, int64_t bytes) { return reinterpret_cast<uintptr_t>(p) % 16 == 0 && bytes % 16 == 0; }

}  // namespace

CatDescriptor CatDescriptor::cat(DType dtype, std::span<const int64_t> shape, int dim, std::span<const int64_t> sizes) {
  CatDescriptor d;
  d.dtype = dtype;
  d.rank = shape.size() > static_cast<size_t>(kMaxRank) ? -1 : static_cast<int>(shape.size());
  if (d.rank > 0) std::copy(shape.begin(), shape.end(), d.shape);
  d.dim = dim;
  d.sizes = IntList(std::vector<int64_t>(sizes.begin(), sizes.end()));
  const int a = dim < 0 ? dim + d.rank : dim;
  int64_t total = 0;
  for (int64_t s : sizes)
    if (!checked_add(total, s, &total)) total = -1;
  if (a >= 0 && a < d.rank) d.shape[a] = total;
  return d;
}

CatDescriptor CatDescriptor::make_stack(DType dtype, std::span<const int64_t> in_shape, int dim, int64_t n) {
  CatDescriptor d;
  d.dtype = dtype;
  d.rank = in_shape.size() >= static_cast<size_t>(kMaxRank) ? -1 : static_cast<int>(in_shape.size()) + 1;
  d.dim = dim;
  d.stack = true;
  const int a = dim < 0 ? dim + d.rank : dim;
  if (d.rank > 0 && a >= 0 && a < d.rank)
    for (int i = 0, s = 0; i < d.rank; ++i) d.shape[i] = i == a ? n : in_shape[static_cast<size_t>(s++)];
  d.sizes = IntList(std::vector<int64_t>(static_cast<size_t>(std::max<int64_t>(n, 0)), 1));
  return d;
}

CatDescriptor& CatDescriptor::promoted(std::span<const DType> inputs) {
  in_dtypes = DTypeVec(std::vector<DType>(inputs.begin(), inputs.end()));
  if (inputs.empty()) return *this;
  DType r = inputs[0];
  for (DType t : inputs.subspan(1)) {
    const Result<DType> p = promote_types(r, t);
    if (!p) return *this;
    r = *p;
  }
  dtype = r;
  return *this;
}

int64_t CatDescriptor::begin(size_t i) const {
  int64_t b = 0;
  for (size_t j = 0; j < i && j < sizes.size(); ++j) b += sizes[j];
  return b;
}

Result<CatPlan> CatPlan::select(const CatDescriptor& d, const PlanPreference& pref) {
  CatPlan p;
  if (Status s = begin_select(kOp, d, pref, &p.sku_); !s.ok()) return s;
  if (Status s = check_dtype(kOp, "dtype", d.dtype, RealDTypes{}); !s.ok()) return s;
  if (d.rank < 1 || d.rank > kMaxRank)
    return error(StatusCode::kInvalidProblem, kOp, ": rank = ", d.rank, " must be in [1, ", kMaxRank,
                 "] (the output's rank; a 0-d tensor cannot be concatenated)");
  if (d.dim < -d.rank || d.dim >= d.rank)
    return error(StatusCode::kInvalidProblem, kOp, ": dim = ", d.dim, " is out of range [", -d.rank, ", ", d.rank - 1, "]");
  int64_t numel = 0;
  if (Status s = check_shape(kOp, d.rank, d.shape, 1, &numel); !s.ok()) return s;
  if (d.sizes.empty()) return error(StatusCode::kInvalidProblem, kOp, ": sizes is empty (cat needs at least one input)");
  const int dim = axis_of(d);
  int64_t total = 0;
  for (size_t i = 0; i < d.sizes.size(); ++i) {
    if (d.sizes[i] < 0) return error(StatusCode::kInvalidProblem, kOp, ": sizes[", i, "] = ", d.sizes[i], " must be >= 0");
    if (d.stack && d.sizes[i] != 1)
      return error(StatusCode::kInvalidProblem, kOp, ": sizes[", i, "] = ", d.sizes[i], " must be 1 (stack: one slice per input)");
    if (!checked_add(total, d.sizes[i], &total)) return error(StatusCode::kInvalidProblem, kOp, ": the sizes sum past 2^63");
  }
  if (total != d.shape[dim])
    return error(StatusCode::kInvalidProblem, kOp, ": shape[", dim, "] = ", d.shape[dim], " must equal the sum of sizes (", total, ")");
  if (!d.in_dtypes.empty()) {
    if (d.in_dtypes.size() != d.sizes.size())
      return error(StatusCode::kInvalidProblem, kOp, ": in_dtypes has ", d.in_dtypes.size(), " entries, sizes ", d.sizes.size(),
                   " (one per input, or none)");
    DType result = d.in_dtypes[0];
    for (size_t i = 0; i < d.in_dtypes.size(); ++i) {
      if (Status s = check_dtype(kOp, element_name("in_dtypes", i), d.in_dtypes[i], RealDTypes{}); !s.ok()) return s;
      const Result<DType> r = promote_types(result, d.in_dtypes[i]);
      if (!r)
        return error(StatusCode::kUnsupported, kOp, ": in_dtypes[", i, "] = ", dtype_name(d.in_dtypes[i]), " does not promote with ",
                     dtype_name(result), " (PyTorch does not promote fp8 with another dtype)");
      result = *r;
    }
    if (!can_cast(result, d.dtype))
      return error(StatusCode::kInvalidProblem, kOp, ": the inputs' result type ", dtype_name(result), " cannot be cast to dtype = ",
                   dtype_name(d.dtype), " (torch.can_cast: no float to integer or bool, no number to bool)");
  }
  if (!catk::find_cat(static_cast<int>(dtype_size(d.dtype)))) return error(StatusCode::kInternal, kOp, ": no kernel for ", dtype_name(d.dtype));
  p.desc_ = d;
  int64_t in_shape[kMaxRank];
  for (size_t i = 0; i < d.sizes.size(); ++i) {
    int r = 0;
    for (int a = 0; a < d.rank; ++a) {
      if (d.stack && a == dim) continue;
      in_shape[r++] = a == dim ? d.sizes[i] : d.shape[a];
    }
    const std::span<const int64_t> shape_i(in_shape, static_cast<size_t>(r));
    p.operands_.input(element_name("inputs", i), d.in_dtype(i), shape_i);
    if (d.in_dtype(i) == d.dtype || d.sizes[i] == 0) continue;
    PlanPreference pp = pref;
    pp.forced_backend = Backend::kAny;
    auto copy = CopyPlan::select(CopyDescriptor::make(d.in_dtype(i), shape_i, d.dtype), pp);
    if (!copy) return copy.status();
    p.converted_.push_back({i, std::make_shared<const CopyPlan>(std::move(*copy))});
  }
  p.operands_.output("out", d.dtype, std::span<const int64_t>(d.shape, static_cast<size_t>(d.rank)));
  if (Status s = resolve_operands<CatArgs>(kOp, p.operands_); !s.ok()) return s;
  p.sku_.op = "cat";
  p.sku_.direction = Direction::kForward;
  p.sku_.dtype = d.dtype;
  p.sku_.variant = p.converted_.empty() ? "rows+walk" : "rows+walk+convert";
  p.guarantee_.accumulator = p.guarantee_.math = d.dtype;
  p.guarantee_.bit_exact = true;
  p.guarantee_.determinism = Determinism::kRunToRun;
  return p;
}

Status CatPlan::can_implement(const CatArgs& a) const {
  if (selected() && a.inputs.size() != desc_.sizes.size())
    return error(StatusCode::kInvalidProblem, kOp, ": ", a.inputs.size(), " inputs given, the descriptor has ", desc_.sizes.size());
  return check_plan_args(kOp, selected(), operands_, a);
}

Status CatPlan::run(cudaStream_t stream, Workspace, const CatArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (writes_nothing(operands_, a)) return {};
  const CatDescriptor& d = desc_;
  const int dim = axis_of(d);
  const int64_t es = static_cast<int64_t>(dtype_size(d.dtype));
  // out has elements: every extent >= 1, so these products are at most its element count
  int64_t outer = 1, inner = 1;
  for (int ax = 0; ax < dim; ++ax) outer *= d.shape[ax];
  for (int ax = dim + 1; ax < d.rank; ++ax) inner *= d.shape[ax];
  int64_t dst_outer = 0;
  const bool dst_rows = row_form(a.out, dim, &dst_outer);
  const catk::CatLaunchFn launch = catk::find_cat(static_cast<int>(es));

  catk::CatParams g;
  g.dst = static_cast<char*>(a.out.data);
  g.esize = static_cast<int>(es);
  g.dst_row = outer == 1 ? 0 : dst_outer * es;
  g.inner = inner;
  g.rank = d.rank, g.dim = dim;
  std::copy(a.out.shape, a.out.shape + d.rank, g.shape);
  std::copy(a.out.stride, a.out.stride + d.rank, g.dst_stride);
  TensorLayout views[kMaxCatInputsPerLaunch];
  int64_t begins[kMaxCatInputsPerLaunch];
  auto flush = [&]() -> Status {
    g.rows = dst_rows;
    int64_t src_outer[kMaxCatInputsPerLaunch];
    for (int k = 0; k < g.n; ++k) g.rows = g.rows && row_form(views[k], dim, &src_outer[k]);
    g.tiles = 0;
    for (int k = 0; k < g.n; ++k) {
      catk::CatPiece& c = g.piece[k];
      c.begin = begins[k];
      c.size = views[k].shape[dim];
      c.first_tile = g.tiles;
      if (g.rows) {
        const int64_t row_bytes = c.size * inner * es;
        c.src_row = outer == 1 ? 0 : src_outer[k] * es;
        c.vec = aligned16(c.src, row_bytes) && c.src_row % 16 == 0 && g.dst_row % 16 == 0 &&
                aligned16(g.dst + c.begin * inner * es, 0);
        c.row_units = c.vec ? row_bytes / 16 : c.size * inner;
        c.units = outer * c.row_units;
        c.row_div = c.units < (int64_t{1} << 31) ? detail::FastDiv(static_cast<uint32_t>(c.row_units)) : detail::FastDiv();
      } else {
        c.units = outer * c.size * inner;
        std::copy(views[k].stride, views[k].stride + d.rank, c.stride);
      }
      g.tiles += ceil_div(c.units, catk::kTileUnits);
    }
    const cudaError_t e = launch(g, stream);
    g.n = 0;
    return cuda_status(e, kOp);
  };
  g.n = 0;
  int64_t begin = 0;
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    const int64_t size = d.sizes[i];
    if (size > 0 && d.in_dtype(i) == d.dtype) {
      views[g.n] = at_out_rank(d, dim, a.inputs[i]);
      begins[g.n] = begin;
      g.piece[g.n] = catk::CatPiece{};
      g.piece[g.n].src = static_cast<const char*>(a.inputs[i].data);
      if (++g.n == kMaxCatInputsPerLaunch)
        if (Status s = flush(); !s.ok()) return s;
    }
    begin += size;
  }
  if (g.n > 0)
    if (Status s = flush(); !s.ok()) return s;
  // the converted inputs: a cast straight into their slice of out (stack: the slice without dim)
  for (const Converted& c : converted_) {
    TensorMut slice = a.out;
    slice.data = static_cast<char*>(a.out.data) + d.begin(c.input) * a.out.stride[dim] * es;
    slice.shape[dim] = d.sizes[c.input];
    if (d.stack) {
      for (int ax = dim; ax + 1 < d.rank; ++ax) slice.shape[ax] = slice.shape[ax + 1], slice.stride[ax] = slice.stride[ax + 1];
      --slice.rank;
    }
    if (Status s = c.copy->run(stream, {}, CopyArgs{a.inputs[c.input], slice}); !s.ok()) return s;
  }
  return {};
}

}  // namespace baracuda
