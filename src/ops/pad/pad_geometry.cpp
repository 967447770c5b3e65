// Pad geometry: the host-side coalescing that turns arbitrary strided views into the kernels'
// PadGeometry (pad_build_geometry), and the planners that decide which kernel serves it and
// set that kernel's launch shape (pad_plan_staged, pad_plan_segments, pad_plan_flat,
// pad_plan_pairs; declared in pad_geometry.hpp).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>

#include "baracuda/ops/pad.hpp"
#include "core/checked_math.hpp"
#include "core/validate.hpp"
#include "ops/pad/pad_geometry.hpp"

namespace baracuda {

void detail::pad_single_interval(PadMode mode, int64_t n, int64_t m, int64_t lo, int64_t* x0, int64_t* x1) {
  // identity cell in range: 0 <= x + lo < m
  int64_t a = std::max<int64_t>(0, -lo), b = std::min(n, m - lo);
  switch (mode) {
    case PadMode::kConstant: break;
    case PadMode::kReflect:  // no left mirror (x > lo), no right mirror (lo + 2(n-1) - x >= m)
      if (lo > 0) a = std::max(a, lo + 1);
      if (m - n - lo > 0) b = std::min(b, lo + 2 * (n - 1) - m + 1);
      break;
    case PadMode::kReplicate:  // not an edge element of a padded side (it collects the clamped cells)
      if (lo > 0) a = std::max<int64_t>(a, 1);
      if (m - n - lo > 0) b = std::min(b, n - 1);
      break;
    case PadMode::kCircular:  // no wrapped copy on either side
      a = std::max(a, m - lo - n);
      b = std::min(b, n - lo);
      break;
  }
  *x0 = a;
  *x1 = std::max(a, b);
}

void detail::pad_source_span(const TensorRef& src, PadGeometry* g) {
  int64_t lo = 0, hi = 0;
  src.byte_extent(&lo, &hi);  // validated by can_implement
  g->src_lo = static_cast<const char*>(src.data) + lo;
  g->src_hi = static_cast<const char*>(src.data) + hi;
}

bool detail::pad_fits_index32(const TensorLayout& t) {
  constexpr int64_t kLimit = (int64_t{1} << 31) - (int64_t{1} << 16);  // headroom for tile overrun
  int64_t lo = 0, hi = 0;
  t.byte_extent(&lo, &hi);
  const int64_t es = static_cast<int64_t>(dtype_size(t.dtype));
  return t.numel() < kLimit && -lo / es < kLimit && hi / es < kLimit;
}

Status detail::pad_build_geometry(std::string_view op, const PadDescriptor& d, const TensorLayout& xl,
                                  const TensorLayout& yl, bool dst_is_x, PadGeometry* g, const void* dst) {
  struct Axis {
    int64_t n, m, lo, xs, ys;
  };
  Axis ax[kMaxRank];
  int na = 0;
  for (int a = 0; a < d.rank; ++a) {
    const Axis v{d.in_shape[a], d.out_dim(a), d.pad_low[a], xl.stride[a], yl.stride[a]};
    if (v.n == 1 && v.m == 1 && v.lo == 0) continue;  // contributes nothing
    ax[na++] = v;
  }
  if (na == 0) ax[na++] = Axis{1, 1, 0, 1, 1};
  auto dst_extent = [&](const Axis& v) { return dst_is_x ? v.n : v.m; };
  auto dst_stride = [&](const Axis& v) { return saturating_abs(dst_is_x ? v.xs : v.ys); };
  // column axis: smallest destination stride among axes with extent > 1 (the later on ties)
  int col = na - 1;
  for (int a = na - 1; a >= 0; --a)
    if (dst_extent(ax[a]) > 1 && (dst_extent(ax[col]) <= 1 || dst_stride(ax[a]) < dst_stride(ax[col]))) col = a;
  Axis col_axis = ax[col];
  std::copy(ax + col + 1, ax + na, ax + col);
  --na;
  std::stable_sort(ax, ax + na, [&](const Axis& p, const Axis& q) { return dst_stride(p) > dst_stride(q); });
  ax[na++] = col_axis;
  // merge unpadded neighbours that are contiguous with each other on both sides
  int out_n = 0;
  Axis merged[kMaxRank];
  for (int a = 0; a < na; ++a) {
    const Axis& v = ax[a];
    if (out_n > 0) {
      Axis& p = merged[out_n - 1];
      const bool unpadded = p.n == p.m && p.lo == 0 && v.n == v.m && v.lo == 0;
      int64_t xo = 0, yo = 0, n = 0, m = 0;  // checked: strides of an empty view are the caller's
      if (unpadded && checked_mul(v.xs, v.n, &xo) && checked_mul(v.ys, v.m, &yo) && p.xs == xo && p.ys == yo &&
          checked_mul(p.n, v.n, &n) && checked_mul(p.m, v.m, &m)) {
        p = Axis{n, m, 0, v.xs, v.ys};
        continue;
      }
    }
    merged[out_n++] = v;
  }
  *g = detail::PadGeometry{};
  g->rank = out_n;
  g->mode = static_cast<int>(d.mode);
  int64_t rows = 1;
  for (int a = 0; a < out_n; ++a) {
    g->n[a] = merged[a].n;
    g->m[a] = merged[a].m;
    g->lo[a] = merged[a].lo;
    g->xs[a] = merged[a].xs;
    g->ys[a] = merged[a].ys;
    if (a < out_n - 1) rows *= dst_is_x ? merged[a].n : merged[a].m;
  }
  const int64_t W = dst_is_x ? g->n[out_n - 1] : g->m[out_n - 1];
  g->rows = rows;
  if (W == 0 || rows == 0) return {};  // nothing to write
  auto ceil_div = [](int64_t a, int64_t b) { return (a - 1) / b + 1; };  // a >= 1; no overflow
  // the row core (see pad_geometry.hpp) and how many aligned 16-byte chunks of it every row has
  const int ca = out_n - 1;
  int64_t core_lo = 0, core_hi = 0;
  if (dst_is_x) {  // the columns whose identity cell c + lo exists; single: no other preimage
    core_lo = std::max<int64_t>(0, -g->lo[ca]);
    core_hi = std::max(core_lo, std::min(g->n[ca], g->m[ca] - g->lo[ca]));
    detail::pad_single_interval(d.mode, g->n[ca], g->m[ca], g->lo[ca], &g->single_lo, &g->single_hi);
  } else {
    core_lo = std::max<int64_t>(g->lo[ca], 0);
    core_hi = std::max(core_lo, std::min(g->lo[ca] + g->n[ca], g->m[ca]));
    g->single_lo = core_lo;
    g->single_hi = core_hi;
  }
  const int64_t elem = static_cast<int64_t>(dtype_size(d.dtype));
  const int64_t vec = detail::pad_chunk_elems(static_cast<int>(elem));
  g->core_lo = core_lo;
  for (int a = 0; a + 1 < out_n; ++a) {
    const int64_t e = dst_is_x ? g->n[a] : g->m[a];
    if (e <= (int64_t{1} << 31)) g->row_div[a] = detail::FastDiv(static_cast<uint32_t>(e));
  }
  // Every row starts at the same 16-byte phase when the columns are unit-stride and each row
  // stride is a multiple of 16 bytes: the core's first aligned column is then known here
  // (core_a) and the core has exactly (core_hi - core_a) / vec chunks. Otherwise each row finds
  // its own, and every row is guaranteed (core_len - (vec - 1)) / vec of them.
  const uintptr_t addr = reinterpret_cast<uintptr_t>(dst);
  bool uniform = dst != nullptr && addr % static_cast<uintptr_t>(elem) == 0 && (dst_is_x ? g->xs[ca] : g->ys[ca]) == 1;
  for (int a = 0; a + 1 < out_n && uniform; ++a) uniform = ((dst_is_x ? g->xs[a] : g->ys[a]) * elem) % 16 == 0;
  if (uniform) {
    const int64_t phase = static_cast<int64_t>((addr / static_cast<uintptr_t>(elem)) % static_cast<uintptr_t>(vec));
    g->core_a = core_lo + (vec - (phase + core_lo) % vec) % vec;
    g->core_chunks = std::max<int64_t>(0, (core_hi - g->core_a) / vec);
  } else {
    const int64_t core_len = core_hi - core_lo;  // a row's alignment may cost up to vec-1 of it
    g->core_a = -1;
    g->core_chunks = core_len >= vec ? (core_len - (vec - 1)) / vec : 0;
  }
  // A warp walks a contiguous stretch of the destination: whole short rows (up to 512 chunks,
  // 8 KB) or 4 KB pieces of long ones, for as many rows as make ~2048 chunks (32 KB) per warp.
  // Long contiguous runs per warp keep DRAM pages open; 32 rows at most (one per lane).
  constexpr int64_t kWarpsPerBlock = detail::kPadThreads / 32;
  g->tiles_c = g->core_chunks <= 512 ? 1 : ceil_div(g->core_chunks, 256);
  g->chunks_per_tile = ceil_div(std::max<int64_t>(g->core_chunks, 1), g->tiles_c);
  // edge elements per row (int item counts): outside the core's chunks, and (backward) inside
  // them but with more than one preimage
  const int64_t edge = W - g->core_chunks * vec + std::max<int64_t>(0, g->single_lo - core_lo) +
                       std::max<int64_t>(0, core_hi - g->single_hi);
  if (edge > (int64_t{1} << 30))
    return error(StatusCode::kUnsupported, op, ": a row with ", edge,
                 " padded or cropped elements outside its copied core exceeds the 2^30 supported");
  const int64_t per_row = g->chunks_per_tile + ceil_div(edge, vec);
  int rpw = 1;
  while (rpw < 32 && int64_t{rpw} * 2 * per_row <= 2048) rpw *= 2;
  g->rows_per_warp = rpw;
  const int64_t row_groups = ceil_div(rows, rpw);
  const int64_t block_rows = ceil_div(row_groups, kWarpsPerBlock);
  if (block_rows > std::numeric_limits<int32_t>::max() / g->tiles_c)
    return error(StatusCode::kUnsupported, op, ": ", block_rows, " x ", g->tiles_c,
                 " blocks exceed the grid limit 2^31 - 1");
  g->blocks = block_rows * g->tiles_c;
  return {};
}

detail::PadColCells detail::pad_col_cells(PadMode mode, int64_t n64, int64_t m64, int64_t lo64) {
  const auto n = static_cast<int32_t>(n64), m = static_cast<int32_t>(m64), lo = static_cast<int32_t>(lo64);
  const int32_t lp = std::max(lo, 0), hp = std::max(m - n - lo, 0);
  switch (mode) {
    case PadMode::kReflect: return {lo, m, 1, lp, -1, lo, 1, n - 1 - hp, hp, -1, lo + 2 * (n - 1), 1};
    case PadMode::kReplicate: return {lo, m, 0, lp > 0, 0, 0, lp, n - 1, hp > 0, 0, lo + n, hp};
    case PadMode::kCircular: return {lo, m, n - lp, lp, 1, lo - n, 1, 0, hp, 1, lo + n, 1};
    case PadMode::kConstant: break;
  }
  return {lo, m, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
}

namespace {
// The flat and segment backward kernels set up at most 4 preimage rows per dx row: bound their
// count by the product over the row axes of the most cells one coordinate can have (a
// coordinate in both the low and the high set takes both ranges: replicate of an axis of 1
// takes all m).
bool at_most_4_preimage_rows(const detail::PadGeometry& g) {
  int64_t cells = 1;
  for (int a = 0; a < g.rank - 1 && cells <= 4; ++a) {
    const detail::PadColCells c = detail::pad_col_cells(static_cast<PadMode>(g.mode), g.n[a], g.m[a], g.lo[a]);
    auto extra = [&](int64_t x) {
      return (static_cast<uint64_t>(x - c.l0) < static_cast<uint64_t>(c.lw) ? c.llen : 0) +
             (static_cast<uint64_t>(x - c.h0) < static_cast<uint64_t>(c.hw) ? c.hlen : 0);
    };
    cells *= 1 + std::max({extra(c.l0), extra(c.h0), extra(std::max(c.l0, c.h0))});
  }
  return cells <= 4;
}
}  // namespace

void detail::pad_plan_segments(PadGeometry* g, int elem, const void* dx, const void* dy) {
  g->seg_tasks = 0;
  const int ca = g->rank - 1;
  const auto e = static_cast<uintptr_t>(elem);
  if (g->xs[ca] != 1 || g->ys[ca] != 1) return;
  if (reinterpret_cast<uintptr_t>(dx) % e != 0 || reinterpret_cast<uintptr_t>(dy) % e != 0) return;
  if (!at_most_4_preimage_rows(*g)) return;
  auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  const int64_t W = g->n[ca], vec = pad_chunk_elems(elem);
  // Serves what the staged backward does not take (constant mode with cropping, padded outer
  // axes, strided views), and only when no column has more than its identity cell (a constant
  // or unpadded column axis):
  // the chunks holding such columns are deferred to the end of each warp's work, and that tail
  // cost more than the copy gained (H200, reflect / replicate / circular backward, bf16
  // [16, 512, 16384] pad 3: 58-73 % of copy against the flat kernel's 75-77 %; f32 82-84 %
  // against 85-86 %; [32, 64, 256, 256] pad 1: bf16 46-50 % against 43-44 %, f32 59-64 %
  // against 62-65 %). Constant: bf16 86 % against 78 %, f32 92 % against 86 %. Summing those
  // columns' cells inside the copy batch from a host-built cell table was slower still
  // (docs/perf/pad.md, "Multi-cell columns inside the segment kernel").
  const int64_t id_lo = std::max<int64_t>(0, -g->lo[ca]), id_hi = std::min(W, g->m[ca] - g->lo[ca]);
  if (g->single_lo > id_lo || g->single_hi < id_hi) return;
  // chunks per row: exact when every row starts at the same 16-byte phase, else a bound
  bool uniform = true;
  for (int a = 0; a < ca; ++a) uniform = uniform && (g->xs[a] * elem) % 16 == 0;
  const auto phase = static_cast<int64_t>((reinterpret_cast<uintptr_t>(dx) / e) % static_cast<uintptr_t>(vec));
  const int64_t chunks = uniform ? ceil_div(W + phase, vec) : ceil_div(W + vec - 1, vec);
  if (chunks < 4) return;
  int group = 4, log2 = 2;
  while (group < 32 && group < chunks) group *= 2, ++log2;
  const int64_t segs = ceil_div(chunks, group);
  if (g->rows > (int64_t{1} << 31) / segs - 1) return;
  const int64_t tasks = g->rows * segs;
  // A warp's tasks touch at most 32 rows (one set-up lane each); up to 4 batches per warp while
  // the grid keeps at least 1024 blocks.
  const int64_t batch = int64_t{kSegTasksInFlight} * (32 / group);
  auto rows_touched = [&](int64_t t) { return segs == 1 ? t : (t - 1) / segs + 2; };
  auto blocks = [&](int64_t t) { return ceil_div(tasks, t * (kPadThreads / 32)); };
  int64_t tpw = 4 * batch;
  while (tpw > batch && (rows_touched(tpw) > 32 || blocks(tpw) < 1024)) tpw -= batch;
  if (rows_touched(tpw) > 32) return;
  g->seg_group_log2 = log2;
  g->seg_tpw = static_cast<int>(tpw);
  g->seg_tasks = tasks;
  g->seg_blocks = blocks(tpw);
  g->seg_per_row = FastDiv(static_cast<uint32_t>(segs));
  g->col_cells = pad_col_cells(static_cast<PadMode>(g->mode), g->n[ca], g->m[ca], g->lo[ca]);
}

void detail::pad_plan_staged(PadGeometry* g, int elem, const void* dst, const void* src, bool backward) {
  g->st = PadStaged{};
  const int R = g->rank, ca = R - 1, ha = R - 2;
  const auto e = static_cast<uintptr_t>(elem);
  if (g->xs[ca] != 1 || g->ys[ca] != 1) return;
  if (reinterpret_cast<uintptr_t>(dst) % e != 0 || reinterpret_cast<uintptr_t>(src) % e != 0) return;
  for (int a = 0; a < ha; ++a)
    if (g->lo[a] != 0 || g->n[a] != g->m[a]) return;  // only H and W padded
  for (int a = std::max(ha, 0); a <= ca; ++a)
    if (g->lo[a] < 0 || g->m[a] - g->n[a] - g->lo[a] < 0) return;  // no cropping
  PadStaged s;
  if (ha >= 0) {
    s.H = static_cast<int32_t>(g->n[ha]);
    s.Mh = static_cast<int32_t>(g->m[ha]);
    s.lo_h = static_cast<int32_t>(g->lo[ha]);
    s.xs_h = static_cast<int32_t>(g->xs[ha]);
    s.ys_h = static_cast<int32_t>(g->ys[ha]);
  }
  s.W = static_cast<int32_t>(g->n[ca]);
  s.Mw = static_cast<int32_t>(g->m[ca]);
  s.lo_w = static_cast<int32_t>(g->lo[ca]);
  int64_t planes = 1;
  for (int a = 0; a < ha; ++a) planes *= g->n[a];
  const int32_t rows = backward ? s.H : s.Mh, cols = backward ? s.W : s.Mw;  // the destination's
  // Tiles of about kTileBytes of the destination: whole rows when a row fits, else
  // kPieceBytes pieces. Measured (H200, bf16 / f32 backward, % of copy): 8 KB tiles with 4 KB
  // pieces 86-89 / 91-93 on [32, 64, 256, 256] pad 1 and 89-91 / 94 on [16, 512, 16384] pad 3;
  // 4 KB tiles lose 2-D (78-81 / 85-87); 16 KB tiles or 8 KB pieces are no better (85-88, 89
  // on 1-D bf16).
  constexpr int64_t kTileBytes = 8192, kPieceBytes = 4096;
  const int64_t row_bytes = int64_t{cols} * elem;
  // The staged forward only for 2-byte elements in rows longer than a tile (column pieces),
  // where it measured ahead (H200, bf16 [16, 512, 16384] pad 3: 85.2-86.6 % of copy against
  // 83.2-85.8 % for warprows). Elsewhere it is behind the flat kernel: bf16 [32, 64, 256, 256]
  // 80.5-82 % against 83-85 % (its y rows are not 16-byte aligned: every row has blocks
  // written element by element; walking the tile as one range with blocks across a row end
  // merged from two windows was slower still, 69 %), f32 90-92 % against 91-97 %.
  if (!backward && (elem != 2 || row_bytes <= kTileBytes)) return;
  if (row_bytes <= kTileBytes) {
    s.Wc = cols;
  } else {  // pieces of at most ~kPieceBytes, equal up to a 16-byte multiple (no sliver at the end)
    const int64_t pieces = (row_bytes + kPieceBytes - 1) / kPieceBytes, vec = 16 / elem;
    s.Wc = static_cast<int32_t>(((cols + pieces - 1) / pieces + vec - 1) / vec * vec);
  }
  int64_t extra_rows = 0;  // shared rows beyond one per tile row
  if (backward) {
    // Padding staged with the edge tiles when short: the smem cost is bounded, and the cells
    // there are read once by the few elements that own them.
    constexpr int32_t kExtRows = 8, kExtCols = 64;
    const int32_t hi_h = s.Mh - s.H - s.lo_h, hi_w = s.Mw - s.W - s.lo_w;
    s.ext_lo_h = s.lo_h <= kExtRows;
    s.ext_hi_h = hi_h <= kExtRows;
    s.ext_lo_w = s.lo_w <= kExtCols;
    s.ext_hi_w = hi_w <= kExtCols;
    extra_rows = (s.ext_lo_h ? s.lo_h : 0) + (s.ext_hi_h ? hi_h : 0);
    const int64_t scols = int64_t{s.Wc} + (s.ext_lo_w ? s.lo_w : 0) + (s.ext_hi_w ? hi_w : 0);
    s.pitch = static_cast<int32_t>((scols * elem + 15 + 15) / 16 * 16);  // any 16-byte phase
  } else {
    // a slot: 16 bytes of room before (a head block), any phase, the last window's overread
    extra_rows = g->mode == static_cast<int>(PadMode::kConstant);  // the fill slot
    s.pitch = static_cast<int32_t>((int64_t{s.Wc} * elem + 63) / 16 * 16);
  }
  // narrow rows: a staged row costs at least 32 bytes, so the row count is capped by smem too
  const int64_t t_smem = 2 * kTileBytes / s.pitch - extra_rows;
  s.T = static_cast<int32_t>(std::clamp<int64_t>(std::min(kTileBytes / (int64_t{s.Wc} * elem), t_smem), 1, rows));
  if (!backward) s.T = std::min(s.T, kStagedMaxRows);
  const int64_t smem = kStagedGuard + (s.T + extra_rows) * s.pitch + 16;  // + the windows' overread
  if (smem > 48 * 1024) return;
  s.smem = static_cast<int32_t>(smem);
  const int64_t tiles_r = (rows + s.T - 1) / s.T, tiles_c = (cols + s.Wc - 1) / s.Wc;
  if (planes * tiles_r * tiles_c >= (int64_t{1} << 31)) return;
  s.tiles = planes * tiles_r * tiles_c;
  s.tiles_c = FastDiv(static_cast<uint32_t>(tiles_c));
  s.tiles_r = FastDiv(static_cast<uint32_t>(tiles_r));
  s.blk_in = FastDiv(static_cast<uint32_t>(s.pitch / 16));
  // destination blocks per tile row: exact when every tile row starts at one 16-byte phase
  const int64_t* dst_stride = backward ? g->xs : g->ys;
  bool uniform = (s.Wc * elem) % 16 == 0;
  for (int a = 0; a < ca; ++a) uniform = uniform && (dst_stride[a] * elem) % 16 == 0;
  const int64_t phase = static_cast<int64_t>(reinterpret_cast<uintptr_t>(dst) % 16);
  s.blk_out = FastDiv(static_cast<uint32_t>(uniform ? (phase + int64_t{s.Wc} * elem + 15) / 16
                                                    : (int64_t{s.Wc} * elem + 30) / 16));
  if (backward) {
    int64_t a0 = 0, a1 = 0;
    pad_single_interval(static_cast<PadMode>(g->mode), s.H, s.Mh, s.lo_h, &a0, &a1);
    s.s_lo_h = static_cast<int32_t>(a0);
    s.s_hi_h = static_cast<int32_t>(a1);
    pad_single_interval(static_cast<PadMode>(g->mode), s.W, s.Mw, s.lo_w, &a0, &a1);
    s.s_lo_w = static_cast<int32_t>(a0);
    s.s_hi_w = static_cast<int32_t>(a1);
    s.rows = pad_col_cells(static_cast<PadMode>(g->mode), s.H, s.Mh, s.lo_h);
    s.cols = pad_col_cells(static_cast<PadMode>(g->mode), s.W, s.Mw, s.lo_w);
  }
  g->st = s;
}

void detail::pad_plan_flat(PadGeometry* g, int elem, const void* dst, bool backward) {
  g->flat_words = 0;
  const int ca = g->rank - 1;
  // dense destination (forward y, backward dx) in the coalesced axis order: unit column
  // stride, each row axis the product of the extents inside it
  const int64_t* ext = backward ? g->n : g->m;
  const int64_t* str = backward ? g->xs : g->ys;
  int64_t numel = 1;
  for (int a = ca; a >= 0; --a) {
    if (str[a] != numel) return;
    numel *= ext[a];
  }
  const int64_t W = ext[ca];
  if (W < 32 || numel <= 0) return;
  if (backward) {
    if (!at_most_4_preimage_rows(*g)) return;
    // the fix-up pass recomputes the copied columns with more than one cell one by one, per
    // row: keep them a small share of the row
    const int64_t id_lo = std::max<int64_t>(0, -g->lo[ca]), id_hi = std::min(W, g->m[ca] - g->lo[ca]);
    const int64_t fixed = std::max<int64_t>(0, g->single_lo - id_lo) + std::max<int64_t>(0, id_hi - g->single_hi);
    if (fixed * 16 > W) return;
  }
  // Forward rows of 2-byte elements from 2048 on stay with "warprows", its 16-byte
  // shifted-vector copy (H200, [16, 512, 16384] bf16: 84.9 % flat 85.7 %, a tie); the flat
  // kernel wins on short rows ([32, 64, 256, 256] bf16: 84 % against 58 %), for 4-byte types at
  // every row length (91-97 %) and in the backward (bf16 [16, 512, 16384] 76 % against 70 %,
  // [32, 64, 256, 256] reflect 42 % against 33 %; f32 85 % against 77 %, 61 % against 52 %).
  // See docs/perf/pad.md.
  if (!backward && elem == 2 && W >= 2048) return;
  // widest word (at most 4 bytes) that divides the row length and the destination's alignment
  int epw = 1;
  while (epw * 2 * elem <= 4 && W % (epw * 2) == 0 && reinterpret_cast<uintptr_t>(dst) % (epw * 2 * elem) == 0) epw *= 2;
  // A warp's batches of 32·K words must touch at most 32 rows (one set-up lane each). More
  // batches per warp spread the row set-up over more words, while the grid keeps at least
  // 1024 blocks; measured best: 2 for 1- and 2-byte forward words (1: 79 %, 4: 82.7 % on the
  // bf16 2-D row), 1 for 4-byte ones (2: 93.7 %, 4: 90.1 % against 97 %).
  constexpr int64_t kBatchWords = int64_t{32} * kFlatWordsPerLane;
  auto rows_touched = [&](int64_t batches) { return (kBatchWords * batches * epw - 1) / W + 2; };
  if (rows_touched(1) > 32) return;
  const int64_t words = numel / epw;
  auto blocks = [&](int64_t batches) {
    const int64_t per_block = int64_t{kPadThreads / 32} * kBatchWords * batches;
    return (words + per_block - 1) / per_block;
  };
  // The backward's row set-up (preimage rows) costs more: up to 16 batches there.
  int batches = backward ? 16 : elem < 4 ? 2 : 1;
  while (batches > 1 && (rows_touched(batches) > 32 || blocks(batches) < 1024)) batches /= 2;
  g->flat_epw = epw;
  g->flat_batches = batches;
  g->flat_words = words;
  g->flat_blocks = blocks(batches);
  g->flat_step_r = static_cast<int>(32 * epw / W);
  g->flat_step_c = static_cast<int>(32 * epw % W);
  g->flat_cols = FastDiv(static_cast<uint32_t>(W));
  if (backward) g->col_cells = pad_col_cells(static_cast<PadMode>(g->mode), g->n[ca], g->m[ca], g->lo[ca]);
}

void detail::pad_plan_pairs(PadGeometry* g, const void* dst, const void* src) {
  g->pr = PadPairs{};
  const int ca = g->rank - 1;
  // dense y, 4-byte aligned
  int64_t numel = 1;
  for (int a = ca; a >= 0; --a) {
    if (g->ys[a] != numel) return;
    numel *= g->m[a];
  }
  if (numel <= 0 || reinterpret_cast<uintptr_t>(dst) % 4 != 0) return;
  const int64_t Wy = g->m[ca];
  if (Wy % 2 != 0) return;
  const int64_t words = Wy / 2, nseg = words / 32, tail = words % 32;
  if (nseg < 2 || nseg > kPairsMaxSeg || tail > kPairsMaxTail) return;
  // x: unit-stride columns, every row 4-byte aligned, offsets that only grow; not empty and
  // rows of at least 2 columns, since every lane loads a 4-byte word (a dummy at column 0 for
  // the words it redoes) also in constant mode's padding rows (from row 0)
  if (g->xs[ca] != 1 || g->n[ca] < 2 || reinterpret_cast<uintptr_t>(src) % 4 != 0) return;
  for (int a = 0; a < ca; ++a)
    if (g->xs[a] < 0 || g->xs[a] % 2 != 0 || g->n[a] < 1) return;
  const int32_t W = static_cast<int32_t>(g->n[ca]), lo = static_cast<int32_t>(g->lo[ca]);
  const int shift = static_cast<int>(((lo % 2) + 2) % 2);
  // the middle segments are plain copies: padding cells only in the first and last segment
  for (int32_t j = 32; j < 32 * (nseg - 1); ++j)
    if (!pad_pairs_plain(j, lo, W, shift)) return;
  const int64_t rows = numel / Wy;
  const int rw = pad_pairs_rows_per_warp(static_cast<int>(nseg));
  const int64_t tasks = (rows + rw - 1) / rw;
  const int64_t tasks_per_block = kPadThreads / 32;
  g->pr.blocks = (tasks + tasks_per_block - 1) / tasks_per_block;
  g->pr.tasks = static_cast<int32_t>(tasks);
  g->pr.rows = static_cast<int32_t>(rows);
  g->pr.words = static_cast<int32_t>(words);
  g->pr.nseg = static_cast<int>(nseg);
  g->pr.shift = shift;
  g->pr.rw = rw;
}

}  // namespace baracuda
