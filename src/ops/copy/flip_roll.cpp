// FlipPlan and RollPlan: the descriptors' checks (dims, shifts), the per-axis maps, and one
// geometry for both: extent-1 axes dropped, identity axes that nest on both sides merged, the
// trailing contiguous run, 16-byte units where the run (or the mapped last axis) allows.
#include "baracuda/ops/flip_roll.hpp"

#include <algorithm>
#include <vector>

#include "core/checked_math.hpp"
#include "core/cuda_check.hpp"
#include "core/dispatch.hpp"
#include "core/plan_kit.hpp"
#include "core/validate.hpp"
#include "ops/copy/flip_roll_geometry.hpp"

namespace baracuda {

namespace {

constexpr std::string_view kFlip = "flip";
constexpr std::string_view kRoll = "roll";


// The checks and operands both plans share.
template <class Desc>
Status begin(std::string_view op, const Desc& d, OperandSpecs* operands) {
  if (Status s = check_dtype(op, "dtype", d.dtype, RealDTypes{}); !s.ok()) return s;
  int64_t numel = 0;
  if (Status s = check_shape(op, d.rank, d.shape, 0, &numel); !s.ok()) return s;
  if (!fliproll::find_flip_roll(static_cast<int>(dtype_size(d.dtype))))
    return error(StatusCode::kInternal, op, ": no kernel for ", dtype_name(d.dtype));
  const std::span<const int64_t> shape(d.shape, static_cast<size_t>(d.rank));
  operands->input("input", d.dtype, shape);
  operands->output("out", d.dtype, shape);
  return resolve_operands<FlipRollArgs>(op, *operands);
}

// dims[i] as an axis in [0, rank), or the error naming it.
Result<int> axis_of(std::string_view op, const IntList& dims, size_t i, int rank) {
  const int64_t a = dims[i];
  if (rank == 0 ? (a != 0 && a != -1) : (a < -rank || a >= rank))
    return error(StatusCode::kInvalidProblem, op, ": dims[", i, "] = ", a, " is out of range [", -std::max(rank, 1), ", ",
                 std::max(rank, 1) - 1, "]");
  return static_cast<int>(a < 0 ? a + rank : a);
}

void set_guarantee(PrecisionGuarantee* g, DType dt) {
  g->accumulator = g->math = dt;
  g->bit_exact = true;
  g->determinism = Determinism::kRunToRun;
}

// One call's kernel parameters from the per-axis maps (flat: a flattened roll by flat_shift).
fliproll::Params geometry(const TensorLayout& in, const void* in_data, const TensorLayout& out, void* out_data,
                          const fliproll::AxisMap* maps, bool flat, int64_t flat_shift) {
  fliproll::Params p;
  p.in = static_cast<const char*>(in_data);
  p.out = static_cast<char*>(out_data);
  const int64_t numel = out.numel();
  const bool contiguous = in.is_contiguous() && out.is_contiguous();
  if (flat && !contiguous) {
    p.flat = true, p.flat_shift = flat_shift, p.units = numel, p.rank = out.rank;
    std::copy(out.shape, out.shape + out.rank, p.shape);
    std::copy(in.stride, in.stride + in.rank, p.in_stride);
    std::copy(out.stride, out.stride + out.rank, p.out_stride);
    return p;
  }
  // outermost first; at most kMaxRank, on the stack (run() allocates nothing)
  struct {
    fliproll::Axis v[kMaxRank];
    size_t n = 0;
    bool empty() const { return n == 0; }
    size_t size() const { return n; }
    fliproll::Axis& back() { return v[n - 1]; }
    void pop_back() { --n; }
    void push_back(const fliproll::Axis& a) { v[n++] = a; }
    fliproll::Axis& operator[](size_t k) { return v[k]; }
    fliproll::Axis* begin() { return v; }
    fliproll::Axis* end() { return v + n; }
  } ax;
  if (flat) {
    fliproll::Axis a;
    a.n = numel, a.in_stride = a.out_stride = 1, a.shift = flat_shift;
    ax.push_back(a);
  } else {
    for (int d = 0; d < out.rank; ++d) {
      if (out.shape[d] == 1) continue;
      fliproll::Axis a;
      a.n = out.shape[d], a.in_stride = in.stride[d], a.out_stride = out.stride[d];
      a.flip = maps[d].flip, a.shift = maps[d].shift;
      const bool identity = !a.flip && a.shift == 0;
      if (!ax.empty()) {
        fliproll::Axis& b = ax.back();  // b (outer) merges into a when both are identity and nest
        int64_t in_next = 0, out_next = 0;  // (checked: a caller's stride times an extent can pass 2^63)
        if (identity && !b.flip && b.shift == 0 && checked_mul(a.in_stride, a.n, &in_next) && checked_mul(a.out_stride, a.n, &out_next) &&
            b.in_stride == in_next && b.out_stride == out_next) {
          a.n *= b.n;
          ax.pop_back();
        }
      }
      ax.push_back(a);
    }
  }
  // the trailing identity run, contiguous on both sides
  if (!ax.empty() && !ax.back().flip && ax.back().shift == 0 && ax.back().in_stride == 1 && ax.back().out_stride == 1) {
    p.run = ax.back().n;
    ax.pop_back();
  }
  // 16-byte units: the run, or the mapped last axis (a roll by any shift: see Params::sub)
  const int64_t es = static_cast<int64_t>(dtype_size(out.dtype)), V = 16 / es;
  auto strides_divide = [&](size_t upto) {
    for (size_t k = 0; k < upto; ++k)
      if (ax[k].in_stride % V != 0 || ax[k].out_stride % V != 0) return false;
    return true;
  };
  const bool aligned = reinterpret_cast<uintptr_t>(in_data) % 16 == 0 && reinterpret_cast<uintptr_t>(out_data) % 16 == 0;
  if (V > 1 && aligned) {
    if (p.run > 1 && p.run % V == 0 && strides_divide(ax.size())) {
      p.vec = true;
      p.run /= V;
    } else if (p.run == 1 && !ax.empty()) {
      fliproll::Axis& last = ax.back();
      if (last.in_stride == 1 && last.out_stride == 1 && last.n % V == 0 && strides_divide(ax.size() - 1)) {
        p.vec = true, p.reverse = last.flip;
        // out element i = in element (i − shift) mod n; shift = q·V + m: out unit c starts at
        // byte (V − m)·es of in unit (c − q − 1) mod n/V and runs into the next one
        const int64_t q = last.shift / V, m = last.shift % V;
        if (m != 0) p.sub = static_cast<int>((V - m) * es);
        last.shift = m == 0 ? q : (q + 1) % (last.n / V);
        last.n /= V, last.in_stride = last.out_stride = V;
      }
    }
    if (p.vec)
      for (fliproll::Axis& a : ax) a.in_stride /= V, a.out_stride /= V;
  }
  p.naxes = static_cast<int>(ax.size());
  std::copy(ax.begin(), ax.end(), p.ax);
  p.units = p.run;
  for (const fliproll::Axis& a : ax) p.units *= a.n;  // at most numel
  p.small = p.units < (int64_t{1} << 31);
  if (p.small) {
    p.run_div = detail::FastDiv(static_cast<uint32_t>(p.run));
    for (int k = 0; k < p.naxes; ++k) p.ax[k].div = detail::FastDiv(static_cast<uint32_t>(p.ax[k].n));
  }
  return p;
}

Status launch(std::string_view op, DType dt, const fliproll::Params& p, cudaStream_t stream) {
  return cuda_status(fliproll::find_flip_roll(static_cast<int>(dtype_size(dt)))(p, stream), op);
}

}  // namespace

FlipDescriptor FlipDescriptor::make(DType dtype, std::span<const int64_t> shape, std::span<const int64_t> dims) {
  FlipDescriptor d;
  d.dtype = dtype;
  d.rank = shape.size() > static_cast<size_t>(kMaxRank) ? -1 : static_cast<int>(shape.size());
  if (d.rank > 0) std::copy(shape.begin(), shape.end(), d.shape);
  d.dims = IntList(std::vector<int64_t>(dims.begin(), dims.end()));
  return d;
}

RollDescriptor RollDescriptor::make(DType dtype, std::span<const int64_t> shape, std::span<const int64_t> shifts,
                                    std::span<const int64_t> dims) {
  RollDescriptor d;
  d.dtype = dtype;
  d.rank = shape.size() > static_cast<size_t>(kMaxRank) ? -1 : static_cast<int>(shape.size());
  if (d.rank > 0) std::copy(shape.begin(), shape.end(), d.shape);
  d.shifts = IntList(std::vector<int64_t>(shifts.begin(), shifts.end()));
  d.dims = IntList(std::vector<int64_t>(dims.begin(), dims.end()));
  return d;
}

RollDescriptor RollDescriptor::inverse() const {
  RollDescriptor d = *this;
  // each shift negated mod its extent (so INT64_MIN has an inverse): −(s mod n), |s mod n| < n
  int64_t numel = 1;
  const bool sized = rank >= 0 && rank <= kMaxRank && checked_product(shape, rank, &numel);
  for (size_t i = 0; i < d.shifts.size(); ++i) {
    int64_t n = 0;
    if (dims.empty()) n = sized ? numel : 0;
    else if (i < dims.size() && dims[i] >= -rank && dims[i] < rank && rank > 0) n = shape[dims[i] < 0 ? dims[i] + rank : dims[i]];
    int64_t& s = d.shifts.v[i];
    s = n > 0 ? -(s % n) : (s == INT64_MIN ? 0 : -s);
  }
  return d;
}

Result<FlipPlan> FlipPlan::select(const FlipDescriptor& d, const PlanPreference& pref) {
  FlipPlan p;
  if (Status s = begin_select(kFlip, d, pref, &p.sku_); !s.ok()) return s;
  if (Status s = begin(kFlip, d, &p.operands_); !s.ok()) return s;  // rank first: the dims index by it
  bool seen[kMaxRank] = {};
  for (size_t i = 0; i < d.dims.size(); ++i) {
    auto a = axis_of(kFlip, d.dims, i, d.rank);
    if (!a) return a.status();
    if (d.rank > 0 && seen[*a]) return error(StatusCode::kInvalidProblem, kFlip, ": dims[", i, "] = ", d.dims[i], ": dim ", *a, " appears multiple times in the list of dims");
    if (d.rank > 0) seen[*a] = true;
  }
  p.desc_ = d;
  p.sku_.op = "flip";
  p.sku_.direction = Direction::kForward;
  p.sku_.dtype = d.dtype;
  p.sku_.variant = "index_map";
  set_guarantee(&p.guarantee_, d.dtype);
  return p;
}

Status FlipPlan::can_implement(const FlipRollArgs& a) const { return check_plan_args(kFlip, selected(), operands_, a); }

Status FlipPlan::run(cudaStream_t stream, Workspace, const FlipRollArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (writes_nothing(operands_, a)) return {};
  fliproll::AxisMap maps[kMaxRank];
  for (size_t i = 0; i < desc_.dims.size(); ++i)
    if (desc_.rank > 0) maps[*axis_of(kFlip, desc_.dims, i, desc_.rank)].flip = true;
  return launch(kFlip, desc_.dtype, geometry(a.input, a.input.data, a.out, a.out.data, maps, false, 0), stream);
}

Result<RollPlan> RollPlan::select(const RollDescriptor& d, const PlanPreference& pref) {
  RollPlan p;
  if (Status s = begin_select(kRoll, d, pref, &p.sku_); !s.ok()) return s;
  if (Status s = begin(kRoll, d, &p.operands_); !s.ok()) return s;  // rank first: the dims index by it
  if (d.dims.empty() ? d.shifts.size() != 1 : d.shifts.size() != d.dims.size())
    return error(StatusCode::kInvalidProblem, kRoll, ": shifts has ", d.shifts.size(), " entries and dims ", d.dims.size(),
                 " (one shift per dim, or one shift with no dims: the flattened roll)");
  for (size_t i = 0; i < d.dims.size(); ++i)
    if (auto a = axis_of(kRoll, d.dims, i, d.rank); !a) return a.status();
  p.desc_ = d;
  p.sku_.op = "roll";
  p.sku_.direction = Direction::kForward;
  p.sku_.dtype = d.dtype;
  p.sku_.variant = "index_map";
  set_guarantee(&p.guarantee_, d.dtype);
  return p;
}

Status RollPlan::can_implement(const FlipRollArgs& a) const { return check_plan_args(kRoll, selected(), operands_, a); }

Status RollPlan::run(cudaStream_t stream, Workspace, const FlipRollArgs& a) const {
  if (Status s = can_implement(a); !s.ok()) return s;
  if (writes_nothing(operands_, a)) return {};
  const RollDescriptor& d = desc_;
  // a shift reduced mod n (n >= 1 here: the output has elements); named twice: the shifts add
  auto reduce = [](int64_t s, int64_t n) { const int64_t r = s % n; return r < 0 ? r + n : r; };
  if (d.dims.empty())
    return launch(kRoll, d.dtype, geometry(a.input, a.input.data, a.out, a.out.data, nullptr, true, reduce(d.shifts[0], a.out.numel())), stream);
  fliproll::AxisMap maps[kMaxRank];
  for (size_t i = 0; i < d.dims.size(); ++i) {
    const int ax = d.rank == 0 ? 0 : *axis_of(kRoll, d.dims, i, d.rank);
    if (d.rank == 0) continue;  // a 0-d roll is a copy
    const int64_t n = d.shape[ax];
    maps[ax].shift = reduce(maps[ax].shift + reduce(d.shifts[i], n), n);
  }
  return launch(kRoll, d.dtype, geometry(a.input, a.input.data, a.out, a.out.data, maps, false, 0), stream);
}

}  // namespace baracuda
