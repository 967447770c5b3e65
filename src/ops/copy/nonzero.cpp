// NonzeroPlan: nonzero / masked_select / masked_scatter — the descriptor's checks, the operands
// of each op, the tile workspace and the parameter block of the two-pass pipeline.
#include "baracuda/ops/nonzero.hpp"

#include <algorithm>

#include "core/checked_math.hpp"
#include "core/cuda_check.hpp"
#include "core/dispatch.hpp"
#include "core/plan_kit.hpp"
#include "core/validate.hpp"
#include "core/workspace.hpp"
#include "ops/copy/nonzero_geometry.hpp"

namespace baracuda {

namespace {

constexpr std::string_view kOp = "nonzero";


std::span<const int64_t> dims_of(const int64_t* s, int rank) { return {s, static_cast<size_t>(std::clamp(rank, 0, kMaxRank))}; }

// The bits of an element that make it nonzero: all of them, but a float's sign (−0.0 is zero).
uint64_t flag_bits(DType t) {
  const size_t bits = 8 * dtype_size(t);
  const uint64_t all = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  return is_floating(t) ? all & ~(uint64_t{1} << (bits - 1)) : all;
}

struct Layout {
  size_t counts = 0, offsets = 0, cub = 0, total = 0;
};
Layout layout_of(int64_t numel) {
  const int64_t tiles = (numel + nzk::kTile - 1) / nzk::kTile;
  Layout l;
  WorkspaceLayout w;
  l.counts = w.take_n<long long>(static_cast<size_t>(tiles + 1));
  l.offsets = w.take_n<long long>(static_cast<size_t>(tiles + 1));
  l.cub = w.take(nzk::scan_bound(tiles + 1));
  l.total = w.total();
  return l;
}

void set_view(const TensorLayout& t, int rank, int64_t* stride, int* contig) {
  *contig = t.is_contiguous();
  for (int a = 0; a < rank; ++a) stride[a] = t.rank == 0 ? 0 : t.stride[a];
}

}  // namespace

int64_t NonzeroDescriptor::numel() const {
  int64_t n = 0;
  return rank >= 0 && rank <= kMaxRank && checked_product(shape, rank, &n) ? n : 0;
}

namespace {
NonzeroDescriptor make(MaskOp op, DType dtype, std::span<const int64_t> shape) {
  NonzeroDescriptor d;
  d.op = op;
  d.dtype = dtype;
  d.rank = shape.size() > static_cast<size_t>(kMaxRank) ? -1 : static_cast<int>(shape.size());
  if (d.rank > 0) std::copy(shape.begin(), shape.end(), d.shape);
  return d;
}
}  // namespace

NonzeroDescriptor NonzeroDescriptor::nonzero(DType dtype, std::span<const int64_t> shape, int64_t max_count) {
  NonzeroDescriptor d = make(MaskOp::kNonzero, dtype, shape);
  d.max_count = max_count;
  return d;
}
NonzeroDescriptor NonzeroDescriptor::masked_select(DType dtype, std::span<const int64_t> shape, int64_t max_count) {
  NonzeroDescriptor d = make(MaskOp::kMaskedSelect, dtype, shape);
  d.max_count = max_count;
  return d;
}
NonzeroDescriptor NonzeroDescriptor::masked_scatter(DType dtype, std::span<const int64_t> shape, int64_t source_numel) {
  NonzeroDescriptor d = make(MaskOp::kMaskedScatter, dtype, shape);
  d.source_numel = source_numel;
  return d;
}

Result<NonzeroPlan> NonzeroPlan::select(const NonzeroDescriptor& d, const PlanPreference& pref) {
  NonzeroPlan p;
  if (Status s = begin_select(kOp, d, pref, &p.sku_); !s.ok()) return s;
  if (Status s = check_dtype(kOp, "dtype", d.dtype, RealDTypes{}); !s.ok()) return s;
  const bool masked = d.op != MaskOp::kNonzero;
  if (masked)
    if (Status s = check_dtype(kOp, "mask_dtype", d.mask_dtype, RealDTypes{}); !s.ok()) return s;
  int64_t numel = 0;
  if (Status s = check_shape(kOp, d.rank, d.shape, 0, &numel); !s.ok()) return s;
  if (d.max_count < -1) return error(StatusCode::kInvalidProblem, kOp, ": max_count = ", d.max_count, " must be >= 0 (or -1: numel)");
  if (d.source_numel < -1)
    return error(StatusCode::kInvalidProblem, kOp, ": source_numel = ", d.source_numel, " must be >= 0 (or -1: numel)");
  if ((numel + nzk::kTile - 1) / nzk::kTile > INT32_MAX)  // (a stride-0 view can be that large): one block per tile
    return error(StatusCode::kUnsupported, kOp, ": shape has ", numel, " positions, more than 2^31 tiles of ", nzk::kTile);
  const int64_t max_count = d.max_count < 0 ? numel : d.max_count;
  const int64_t source = d.source_numel < 0 ? numel : d.source_numel;
  if (max_count > (int64_t{1} << 58) || source > (int64_t{1} << 58))
    return error(StatusCode::kInvalidProblem, kOp, ": max_count / source_numel past 2^58 elements");
  int64_t out_elems = 0;
  if (d.op == MaskOp::kNonzero && !checked_mul(max_count, std::max(d.rank, 1), &out_elems))
    return error(StatusCode::kInvalidProblem, kOp, ": max_count · rank overflows");
  p.desc_ = d;
  p.flag_bits_ = flag_bits(masked ? d.mask_dtype : d.dtype);
  p.sku_.op = std::string(enum_name(d.op));
  p.sku_.direction = Direction::kForward;
  p.sku_.dtype = d.dtype;
  p.sku_.variant = "two_pass";
  p.guarantee_.accumulator = p.guarantee_.math = DType::i64;
  p.guarantee_.bit_exact = true;
  p.guarantee_.determinism = Determinism::kRunToRun;
  const std::span<const int64_t> shape = dims_of(d.shape, d.rank);
  p.operands_.input("input", d.dtype, shape);
  if (masked) p.operands_.input("mask", d.mask_dtype, shape);
  if (d.op == MaskOp::kMaskedScatter) p.operands_.input("source", d.dtype, {source});
  if (d.op == MaskOp::kNonzero) p.operands_.output("out", DType::i64, {max_count, static_cast<int64_t>(d.rank)});
  else if (d.op == MaskOp::kMaskedSelect) p.operands_.output("out", d.dtype, {max_count});
  else {
    p.operands_.output("out", d.dtype, shape);
    p.operands_.may_alias("out", "input");
  }
  p.operands_.output("count", DType::i64, {1});
  if (Status s = resolve_operands<NonzeroArgs>(kOp, p.operands_); !s.ok()) return s;
  p.workspace_ = layout_of(numel).total;
  if (Status s = check_workspace_budget(kOp, p.workspace_, pref.max_workspace_bytes); !s.ok()) return s;
  return p;
}

Status NonzeroPlan::can_implement(const NonzeroArgs& a) const { return check_plan_args(kOp, selected(), operands_, a); }

Status NonzeroPlan::run(cudaStream_t stream, Workspace ws, const NonzeroArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  const NonzeroDescriptor& d = desc_;
  const Layout l = layout_of(d.numel());
  if (Status s = check_workspace(kOp, ws, l.total); !s.ok()) return s;
  nzk::Params p;
  p.op = static_cast<int>(d.op);
  p.rank = std::max(d.rank, 1);
  for (int i = 0; i < p.rank; ++i) p.shape[i] = d.rank == 0 ? 1 : d.shape[i];
  p.numel = d.numel();
  p.tiles = (p.numel + nzk::kTile - 1) / nzk::kTile;
  const bool masked = d.op != MaskOp::kNonzero;
  const TensorRef& flag = masked ? a.mask : a.input;
  p.flag = static_cast<const char*>(flag.data);
  p.flag_es = static_cast<int>(dtype_size(flag.dtype));
  p.flag_bits = flag_bits_;
  set_view(flag, p.rank, p.flag_stride, &p.flag_contig);
  p.in = static_cast<const char*>(a.input.data);
  p.es = static_cast<int>(dtype_size(d.dtype));
  set_view(a.input, p.rank, p.in_stride, &p.in_contig);
  p.out = static_cast<char*>(a.out.data);
  if (d.op == MaskOp::kMaskedScatter) {
    set_view(a.out, p.rank, p.out_stride, &p.out_contig);
    p.src = static_cast<const char*>(a.source.data);
    p.src_s = a.source.stride[0];
    p.source_numel = a.source.shape[0];
  } else {
    p.max_count = a.out.shape[0];
    p.out_cols = d.op == MaskOp::kNonzero ? d.rank : 0;
    p.out_stride[0] = a.out.stride[0];
    p.out_stride[1] = a.out.rank > 1 ? a.out.stride[1] : 0;
  }
  p.fill = d.fill_value;
  p.count = static_cast<long long*>(a.count.data);
  p.tile_counts = slice<long long>(ws, l.counts);
  p.tile_offsets = slice<long long>(ws, l.offsets);
  p.cub_temp = slice<char>(ws, l.cub);
  size_t need = 0;
  if (cudaError_t e = nzk::scan_query(p.tiles + 1, &need); e != cudaSuccess) return cuda_status(e, kOp);
  if (need > l.total - l.cub)
    return error(StatusCode::kInternal, kOp, ": CUB asks for ", need, " scratch bytes, over the ", l.total - l.cub, " reserved");
  p.cub_bytes = l.total - l.cub;
  return cuda_status(nzk::find_nonzero(d.op == MaskOp::kNonzero ? 8 : p.es)(p, stream), kOp);
}

}  // namespace baracuda
