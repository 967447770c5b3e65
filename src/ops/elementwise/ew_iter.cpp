#include "ops/elementwise/ew_iter.hpp"

#include <algorithm>
#include <cstdlib>

#include "core/checked_math.hpp"
#include "core/cuda_check.hpp"
#include "core/validate.hpp"

namespace baracuda::ew {

namespace {

constexpr int64_t kLimit32 = (int64_t{1} << 31) - 1;

struct Op {  // one operand, uniform over inputs and outputs
  const void* data;
  size_t esize;
  int64_t* stride;
  bool active;
};

// Collects the active operands of it (non-literal inputs, wanted outputs).
int operands_of(Iter& it, Op* ops) {
  int n = 0;
  for (int i = 0; i < it.ni; ++i)
    ops[n++] = Op{it.in[i].data, dtype_size(it.in[i].dtype), it.in[i].stride, !it.in[i].literal};
  for (int o = 0; o < it.no; ++o)
    ops[n++] = Op{it.out[o].data, dtype_size(it.out[o].dtype), it.out[o].stride, it.out_on[o]};
  return n;
}

// Drops extent-1 axes, orders axes by the first output's stride (outermost first; kept as
// they are when !order) and merges axes that are contiguous in every operand.
void coalesce(Iter& it, bool order = true) {
  Op ops[kMaxIn + kMaxOut];
  const int n = operands_of(it, ops);
  int keep[kMaxRank], r = 0;
  for (int d = 0; d < it.rank; ++d)
    if (it.size[d] != 1) keep[r++] = d;
  int first_out = 0;
  while (first_out < it.no && !it.out_on[first_out]) ++first_out;
  if (order && first_out < it.no) {
    const int64_t* os = it.out[first_out].stride;
    std::stable_sort(keep, keep + r, [&](int a, int b) { return saturating_abs(os[a]) > saturating_abs(os[b]); });
  }
  int64_t size[kMaxRank];
  int64_t st[kMaxIn + kMaxOut][kMaxRank];
  for (int a = 0; a < r; ++a) {
    size[a] = it.size[keep[a]];
    for (int k = 0; k < n; ++k) st[k][a] = ops[k].stride[keep[a]];
  }
  int m = 0;  // merged rank
  for (int a = 0; a < r; ++a) {
    if (m > 0) {
      bool ok = true;
      for (int k = 0; k < n && ok; ++k)
        if (ops[k].active && st[k][m - 1] != st[k][a] * size[a]) ok = false;
      if (ok) {
        size[m - 1] *= size[a];
        for (int k = 0; k < n; ++k) st[k][m - 1] = st[k][a];
        continue;
      }
    }
    size[m] = size[a];
    for (int k = 0; k < n; ++k) st[k][m] = st[k][a];
    ++m;
  }
  it.rank = m;
  for (int a = 0; a < m; ++a) {
    it.size[a] = size[a];
    for (int k = 0; k < n; ++k) ops[k].stride[a] = st[k][a];
  }
}

// A vec-element access of an operand with this base and row stride is aligned on every row.
bool vector_aligned(const void* p, int64_t row_stride, size_t esize, int64_t vec, int64_t rows) {
  const uint64_t vbytes = static_cast<uint64_t>(vec) * esize;
  if (reinterpret_cast<uintptr_t>(p) % vbytes != 0) return false;
  return rows == 1 || (static_cast<uint64_t>(saturating_abs(row_stride)) * esize) % vbytes == 0;
}

const void* advance(const void* p, int64_t elems, size_t esize) {
  return p ? static_cast<const char*>(p) + elems * static_cast<int64_t>(esize) : p;
}

// ---------------------------------------------------------------- rows path
// The inputs of a [rows, cols] problem (rank <= 2 after coalescing) as the vector kernels (rows,
// flat, bcast) take them: literal; a vector along cols (unit stride, vec·esize-aligned base and
// row stride); or one value per row (stride 0 along cols, or cols == 1). Storage dtype `storage`
// (bool for the mask operand). False if some input fits none.
template <class G>
bool vector_inputs(const Iter& it, DType storage, int64_t vec, int64_t rows, int64_t cols, G* g) {
  const int last = it.rank - 1;
  for (int i = 0; i < it.ni; ++i) {
    const IterOperand& o = it.in[i];
    g->in[i] = o.data;
    if (o.literal) {
      g->in_kind[i] = kLiteral;
      continue;
    }
    if (o.dtype != (i == it.mask_operand ? DType::boolean : storage)) return false;
    const int64_t inner = it.rank == 0 ? 1 : o.stride[last];
    g->in_rs[i] = it.rank == 2 ? o.stride[0] : 0;
    if (inner == 0 || cols == 1) {
      g->in_kind[i] = kRowScalar;
    } else if (inner == 1) {
      g->in_kind[i] = kVector;
      if (!vector_aligned(o.data, g->in_rs[i], dtype_size(o.dtype), vec, rows)) return false;
    } else {
      return false;
    }
  }
  return true;
}

bool try_rows(std::string_view op, Iter& it, const EwKernels& k, const EwScalars& s, bool sat_fp8, cudaStream_t stream,
              Status* st) {
  if (!k.rows || it.rank > 2) return false;
  const int64_t cols = it.rank == 0 ? 1 : it.size[it.rank - 1];
  const int64_t rows = it.rank == 2 ? it.size[0] : 1;
  const int last = it.rank - 1;
  const int64_t vec = k.rows_vec;
  const int64_t vpr = (cols + vec - 1) / vec;
  EwRows g;
  g.s = s;
  g.sat_fp8 = sat_fp8;
  if (!vector_inputs(it, k.rows_in, vec, rows, cols, &g)) return false;
  for (int o = 0; o < it.no; ++o) {
    g.out_on[o] = it.out_on[o];
    if (!it.out_on[o]) continue;
    const IterOperand& x = it.out[o];
    if (x.dtype != (o == 1 && k.rows_out1 != DType::c128 ? k.rows_out1 : k.rows_out)) return false;
    const int64_t inner = it.rank == 0 ? 1 : x.stride[last];
    if (inner != 1 && cols != 1) return false;
    g.out[o] = const_cast<void*>(x.data);
    g.out_rs[o] = it.rank == 2 ? x.stride[0] : 0;
    if (!vector_aligned(x.data, g.out_rs[o], dtype_size(x.dtype), vec, rows)) return false;
  }
  // One launch of fn with every operand advanced by elems(its row stride) elements.
  auto launch = [&](EwRowsFn fn, EwRows c, auto&& elems) {
    for (int i = 0; i < it.ni; ++i)
      if (g.in_kind[i] != kLiteral) c.in[i] = advance(g.in[i], elems(g.in_rs[i]), dtype_size(it.in[i].dtype));
    for (int o = 0; o < it.no; ++o)
      if (g.out_on[o]) c.out[o] = const_cast<void*>(advance(g.out[o], elems(g.out_rs[o]), dtype_size(it.out[o].dtype)));
    *st = cuda_status(static_cast<cudaError_t>(fn(c, stream)), op);
    return st->ok();
  };
  *st = {};
  // The flat kernel: every operand a vector along the rows, rows at least one block long (the
  // rows kernel serves short rows), in launches of at most 65535 rows (grid.y) of at most 2^30
  // columns (a multiple of every vector: alignment holds), every operand's offsets within a
  // launch below 2^31 (the kernel's row offsets are 32-bit).
  constexpr int64_t kRun = int64_t{1} << 30, kMaxGridY = 65535;
  const bool dense = std::all_of(g.in_kind, g.in_kind + it.ni, [](uint8_t kind) { return kind == kVector; });
  if (k.flat && dense && (rows == 1 || (cols >= k.flat_block && cols <= kRun))) {
    int64_t rows_per_launch = kMaxGridY;
    auto fit = [&](int64_t row_stride) {
      if (row_stride != 0) rows_per_launch = std::min<int64_t>(rows_per_launch, (kLimit32 - cols) / saturating_abs(row_stride) + 1);
    };
    for (int i = 0; i < it.ni; ++i) fit(g.in_rs[i]);
    for (int o = 0; o < it.no; ++o)
      if (g.out_on[o]) fit(g.out_rs[o]);
    for (int64_t r0 = 0; r0 < rows; r0 += rows_per_launch)
      for (int64_t c0 = 0; c0 < cols; c0 += kRun) {
        EwRows c = g;
        c.cols = static_cast<uint32_t>(std::min(kRun, cols - c0));
        c.flat_rows = static_cast<uint32_t>(std::min(rows_per_launch, rows - r0));
        if (!launch(k.flat, c, [&](int64_t row_stride) { return r0 * row_stride + c0; })) return true;
      }
    return true;
  }
  if (cols > kLimit32 || vpr > kLimit32) return false;
  g.cols = static_cast<uint32_t>(cols);
  g.vecs_per_row = static_cast<uint32_t>(vpr);
  g.vpr = FastDiv(g.vecs_per_row);
  // rows per launch so that rows * vecs_per_row < 2^31
  const int64_t chunk = std::max<int64_t>(1, kLimit32 / vpr);
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    EwRows c = g;
    c.total = static_cast<uint32_t>(std::min(chunk, rows - r0) * vpr);
    if (!launch(k.rows, c, [&](int64_t row_stride) { return r0 * row_stride; })) return true;
  }
  return true;
}

// ---------------------------------------------------------------- tiled 2-D path
// Rank 2 (after coalescing) with some operand whose row stride is smaller than its column
// stride (a transposed view): tiles keep both kinds of access coalesced.
bool try_tile(std::string_view op, const Iter& it, const EwKernels& k, const EwScalars& s, bool sat_fp8, cudaStream_t stream,
              Status* st) {
  if (!k.tile || it.rank != 2 || it.size[0] < 32 || it.size[1] < 32 || (it.size[1] + 31) / 32 > 65535) return false;  // grid.y: column tiles
  auto row_fastest = [](const int64_t* stride) { return saturating_abs(stride[0]) < saturating_abs(stride[1]); };
  bool any = false;
  EwTile g;
  g.rows = it.size[0];
  g.cols = it.size[1];
  g.s = s;
  g.sat_fp8 = sat_fp8;
  for (int i = 0; i < it.ni; ++i) {
    const IterOperand& o = it.in[i];
    g.in[i] = o.data;
    g.in_dt[i] = static_cast<uint8_t>(o.dtype);
    g.in_kind[i] = o.literal ? kLiteral : kVector;
    if (o.literal) continue;
    if (o.dtype != (i == it.mask_operand ? DType::boolean : k.rows_in)) return false;  // typed kernel
    g.in_rs[i] = o.stride[0];
    g.in_cs[i] = o.stride[1];
    g.in_t[i] = row_fastest(o.stride);
    any |= g.in_t[i] != 0;
  }
  for (int o = 0; o < it.no; ++o) {
    g.out_on[o] = it.out_on[o];
    if (!it.out_on[o]) continue;
    if (it.out[o].dtype != k.rows_out) return false;
    g.out[o] = const_cast<void*>(it.out[o].data);
    g.out_dt[o] = static_cast<uint8_t>(it.out[o].dtype);
    g.out_rs[o] = it.out[o].stride[0];
    g.out_cs[o] = it.out[o].stride[1];
    g.out_t[o] = row_fastest(it.out[o].stride);
    any |= g.out_t[o] != 0;
  }
  if (!any) return false;
  if (k.tile_pairs) {
    // 2-byte element pairs along each operand's contiguous axis, 4-byte aligned; an input with
    // stride 0 there (broadcast) reads one element per pair (kRowScalar)
    if (g.rows % 2 != 0 || g.cols % 2 != 0) return false;
    auto unit_stride = [](int64_t rs, int64_t cs, bool staged) { return staged ? rs : cs; };
    auto pairs_ok = [](const void* data, int64_t unit, int64_t other) {
      return unit == 1 && other % 2 == 0 && reinterpret_cast<uintptr_t>(data) % 4 == 0;
    };
    for (int i = 0; i < it.ni; ++i) {
      if (g.in_kind[i] == kLiteral) continue;
      const bool staged = g.in_t[i] != 0;
      const int64_t unit = unit_stride(g.in_rs[i], g.in_cs[i], staged);
      if (unit == 0) g.in_kind[i] = kRowScalar;
      else if (!pairs_ok(g.in[i], unit, staged ? g.in_cs[i] : g.in_rs[i])) return false;
    }
    for (int o = 0; o < it.no; ++o) {
      if (!g.out_on[o]) continue;
      const bool staged = g.out_t[o] != 0;
      if (!pairs_ok(g.out[o], unit_stride(g.out_rs[o], g.out_cs[o], staged), staged ? g.out_cs[o] : g.out_rs[o])) return false;
    }
  }
  *st = cuda_status(static_cast<cudaError_t>(k.tile(g, stream)), op);
  return true;
}

// ---------------------------------------------------------------- strided path
struct StridedCtx {
  std::string_view op;
  const Iter* it;
  const EwKernels* k;
  const EwScalars* s;
  bool sat;
  cudaStream_t stream;
};

// Largest |offset| an operand reaches over axes [from, rank) with the given extents.
int64_t reach(const Iter& it, const int64_t* stride, int from, const int64_t* size) {
  int64_t r = 0;
  for (int a = from; a < it.rank; ++a)
    if (!checked_mul_add(size[a] - 1, saturating_abs(stride[a]), r, &r)) return INT64_MAX;  // saturates: "does not fit"
  return r;
}

bool fits(const Iter& it, int from, const int64_t* size) {
  int64_t n = 1;
  for (int a = from; a < it.rank; ++a)
    if (!checked_mul(n, size[a], &n)) return false;
  if (n > kLimit32) return false;
  for (int i = 0; i < it.ni; ++i)
    if (!it.in[i].literal && reach(it, it.in[i].stride, from, size) > kLimit32) return false;
  for (int o = 0; o < it.no; ++o)
    if (it.out_on[o] && reach(it, it.out[o].stride, from, size) > kLimit32) return false;
  return true;
}

Status launch_strided(const StridedCtx& c, int from, const int64_t* size, const void* const* in_ptr,
                      void* const* out_ptr) {
  const Iter& it = *c.it;
  EwStrided g;
  g.s = *c.s;
  g.sat_fp8 = c.sat;
  int64_t n = 1;
  int r = 0;
  for (int a = it.rank - 1; a >= from; --a, ++r) {  // innermost first
    g.size[r] = static_cast<uint32_t>(size[a]);
    g.div[r] = FastDiv(static_cast<uint32_t>(g.size[r]));
    n *= size[a];
    for (int i = 0; i < it.ni; ++i) g.in_st[i][r] = static_cast<int32_t>(it.in[i].stride[a]);
    for (int o = 0; o < it.no; ++o) g.out_st[o][r] = static_cast<int32_t>(it.out[o].stride[a]);
  }
  if (r == 0) {
    g.size[0] = 1;
    g.div[0] = FastDiv(1);
    r = 1;
  }
  g.rank = r;
  g.numel = static_cast<uint32_t>(n);
  for (int i = 0; i < it.ni; ++i) {
    g.in[i] = in_ptr[i];
    g.in_dt[i] = static_cast<uint8_t>(it.in[i].dtype);
    g.in_kind[i] = it.in[i].literal ? kLiteral : kVector;
  }
  for (int o = 0; o < it.no; ++o) {
    g.out[o] = out_ptr[o];
    g.out_dt[o] = static_cast<uint8_t>(it.out[o].dtype);
    g.out_on[o] = it.out_on[o];
  }
  return cuda_status(static_cast<cudaError_t>(c.k->strided(g, c.stream)), c.op);
}

// Splits axis `from` until every launch fits 32-bit offsets.
Status strided_rec(const StridedCtx& c, int from, const void* const* in_ptr, void* const* out_ptr) {
  const Iter& it = *c.it;
  int64_t size[kMaxRank];
  std::copy(it.size, it.size + it.rank, size);
  if (from >= it.rank || fits(it, from, size)) return launch_strided(c, from, size, in_ptr, out_ptr);
  const void* ip[kMaxIn];
  void* op[kMaxOut];
  const int64_t n0 = it.size[from];
  if (fits(it, from + 1, size)) {
    // the largest block of axis `from` that still fits
    int64_t lo = 1, hi = n0;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo + 1) / 2;
      size[from] = mid;
      if (fits(it, from, size)) lo = mid;
      else hi = mid - 1;
    }
    for (int64_t i0 = 0; i0 < n0; i0 += lo) {
      size[from] = std::min(lo, n0 - i0);
      for (int i = 0; i < it.ni; ++i) ip[i] = it.in[i].literal ? nullptr : advance(in_ptr[i], i0 * it.in[i].stride[from], dtype_size(it.in[i].dtype));
      for (int o = 0; o < it.no; ++o) op[o] = it.out_on[o] ? const_cast<void*>(advance(out_ptr[o], i0 * it.out[o].stride[from], dtype_size(it.out[o].dtype))) : nullptr;
      if (Status s = launch_strided(c, from, size, ip, op); !s.ok()) return s;
    }
    return {};
  }
  for (int64_t i0 = 0; i0 < n0; ++i0) {
    for (int i = 0; i < it.ni; ++i) ip[i] = it.in[i].literal ? nullptr : advance(in_ptr[i], i0 * it.in[i].stride[from], dtype_size(it.in[i].dtype));
    for (int o = 0; o < it.no; ++o) op[o] = it.out_on[o] ? const_cast<void*>(advance(out_ptr[o], i0 * it.out[o].stride[from], dtype_size(it.out[o].dtype))) : nullptr;
    if (Status s = strided_rec(c, from + 1, ip, op); !s.ok()) return s;
  }
  return {};
}

}  // namespace

// ---------------------------------------------------------------- broadcast backward
bool plan_bcast(const Iter& in_it, int red, const EwKernels& k, EwBcast* out) {
  if (!k.bcast || red < 0 || red >= in_it.no || !in_it.out_on[red]) return false;
  Iter it = in_it;
  for (int d = 0; d < it.rank; ++d)
    if (it.size[d] == 0) return false;
  coalesce(it, false);  // the axes stay in the problem's order: the reduced gradient is row-major
  const int64_t* rs = it.out[red].stride;
  EwBcast g;
  int64_t rows = 1, cols = 0;
  if (it.rank == 1 && rs[0] == 0) {  // a one-element operand: one sum over everything
    g.col_mode = 1;
    cols = it.size[0];
  } else if (it.rank == 2 && ((rs[0] == 0 && rs[1] == 1) || (rs[0] == 1 && rs[1] == 0))) {
    g.col_mode = rs[1] == 0 ? 1 : 0;
    rows = it.size[0];
    cols = it.size[1];
  } else {
    return false;
  }
  const int64_t vec = k.bcast_vec, width = kBcastThreads * vec;
  // rows much narrower than a block leave most threads idle: the two-pass form serves them
  if (vec <= 0 || cols * 2 < width || cols > kLimit32 || rows > UINT32_MAX) return false;
  if (!vector_inputs(it, k.rows_in, vec, rows, cols, &g)) return false;
  const int last = it.rank - 1;
  for (int o = 0; o < it.no; ++o) {
    g.out_on[o] = it.out_on[o];
    if (!it.out_on[o]) continue;
    const IterOperand& x = it.out[o];
    if (x.dtype != k.rows_out) return false;
    if (o == red) {
      g.grad = const_cast<void*>(x.data);
      continue;
    }
    g.out[o] = const_cast<void*>(x.data);
    g.out_rs[o] = it.rank == 2 ? x.stride[0] : 0;
    if (x.stride[last] != 1 || !vector_aligned(x.data, g.out_rs[o], dtype_size(x.dtype), vec, rows)) return false;
  }
  // kBcastColRows rows per block (col mode: its shared sums; row mode: measured as fast as 16 and
  // 64 on the H200, 128 was 7 % slower), more in row mode when the grid would pass 65535 rows
  // of blocks.
  const int64_t gx = (cols + width - 1) / width;
  int64_t per = kBcastColRows;
  if (!g.col_mode) per = std::max<int64_t>(per, (rows + 65534) / 65535);
  per = std::min<int64_t>(per, rows);
  const int64_t gy = (rows + per - 1) / per;
  if (gy > 65535 || gx > kLimit32) return false;
  g.rows = static_cast<uint32_t>(rows);
  g.cols = static_cast<uint32_t>(cols);
  g.rows_per_block = static_cast<uint32_t>(per);
  g.grid_x = static_cast<uint32_t>(gx);
  g.grid_y = static_cast<uint32_t>(gy);
  g.red = static_cast<uint8_t>(red);
  *out = g;
  return true;
}

size_t bcast_part_bytes(const EwBcast& g) {
  const size_t n = g.col_mode ? static_cast<size_t>(g.rows) * g.grid_x : static_cast<size_t>(g.grid_y) * g.cols;
  return n * sizeof(float);
}

bool try_bcast(std::string_view op, const Iter& it, int red, const EwKernels& k, const EwScalars& s, void* part,
               size_t part_bytes, cudaStream_t stream, Status* st) {
  EwBcast g;
  if (!plan_bcast(it, red, k, &g)) return false;
  if (bcast_part_bytes(g) > part_bytes || reinterpret_cast<uintptr_t>(part) % sizeof(float) != 0) return false;
  g.part = part;
  g.s = s;
  *st = cuda_status(static_cast<cudaError_t>(k.bcast(g, stream)), op);
  return true;
}

Status run_iter(std::string_view op, const Iter& in_it, const EwKernels& k, const EwScalars& s, bool sat_fp8,
                cudaStream_t stream) {
  Iter it = in_it;
  for (int d = 0; d < it.rank; ++d)
    if (it.size[d] == 0) return {};
  coalesce(it);
  Status st;
  if (try_rows(op, it, k, s, sat_fp8, stream, &st)) return st;
  if (try_tile(op, it, k, s, sat_fp8, stream, &st)) return st;
  if (!k.strided) return error(StatusCode::kInternal, op, ": no strided kernel");
  const void* ip[kMaxIn];
  void* opp[kMaxOut];
  for (int i = 0; i < it.ni; ++i) ip[i] = it.in[i].data;
  for (int o = 0; o < it.no; ++o) opp[o] = const_cast<void*>(it.out[o].data);
  StridedCtx c{op, &it, &k, &s, sat_fp8, stream};
  return strided_rec(c, 0, ip, opp);
}

}  // namespace baracuda::ew
