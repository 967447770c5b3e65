// CatPlan's kernels: one launch copies up to kMaxCatInputsPerLaunch inputs. A grid of blocks
// takes tiles of kTileUnits units (tiles never straddle two pieces: each piece's tiles
// are counted apart); a block finds a tile's piece by binary search over the tiles' prefix, and
// each thread moves kUnitsPerThread units, every load issued before the first store. Row form:
// 16-byte units when the piece's rows and both row starts are 16-byte aligned, else one element
// per unit. The parameter block travels by value (__grid_constant__; 64 bytes per row piece,
// launches with 8 or fewer pieces take a small block).
#include <algorithm>

#include "core/dispatch.hpp"
#include "core/launch.cuh"
#include "ops/copy/cat_geometry.hpp"

namespace baracuda::catk {

namespace {

// Row form on the device: a piece's output start is folded into dst (64 bytes a piece).
struct RowPiece {
  const char* src;
  char* dst;
  int64_t first_tile, units, row_units, src_row;
  detail::FastDiv row_div;
  bool vec;
};
// The strided walk: a piece's strides at the output's axes.
struct WalkPiece {
  const char* src;
  int64_t first_tile, units, begin, size;
  int64_t stride[kMaxRank];
};

// A launch's parameters with room for Cap pieces of type Piece.
template <class Piece, int Cap>
struct Params {
  char* dst;
  int64_t dst_row;
  int rank, dim, n;
  int64_t tiles;
  bool by_y;  // blockIdx.y is the piece, blockIdx.x its tile (else blockIdx.x strides over every tile)
  int64_t shape[kMaxRank], dst_stride[kMaxRank];  // walk only
  Piece piece[Cap];
};

// The piece of the launch's tile (by_y: the grid's y; else the last piece whose first_tile <=
// tile, by binary search: a dependent parameter load per step, which is why balanced launches
// take the y form).
template <class P>
__device__ int find_piece(const P& p, int64_t tile) {
  if (p.by_y) return static_cast<int>(blockIdx.y);
  int lo = 0, hi = p.n - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (p.piece[mid].first_tile <= tile) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// The block's first tile and the loop's stride: by_y, the y-th piece's x-th tile, once; else
// blockIdx.x, striding by the grid.
template <class P>
__device__ int64_t first_tile_of(const P& p) {
  return p.by_y ? p.piece[blockIdx.y].first_tile + blockIdx.x : blockIdx.x;
}
template <class P>
__device__ int64_t tile_stride(const P& p) {
  return p.by_y ? p.tiles : gridDim.x;
}

// Row form: units of type U (16 bytes, or the element's bits).
template <class U>
__device__ void copy_rows(const RowPiece& c, int64_t dst_row, int64_t base) {
  const bool small = c.units < (int64_t{1} << 31);
  U v[kUnitsPerThread];
  int64_t to[kUnitsPerThread];
#pragma unroll
  for (int k = 0; k < kUnitsPerThread; ++k) {
    const int64_t u = base + int64_t{k} * kThreads + threadIdx.x;
    if (u < c.units) {
      const int64_t r = small ? int64_t{c.row_div.div(static_cast<uint32_t>(u))} : u / c.row_units;
      const int64_t col = (u - r * c.row_units) * static_cast<int64_t>(sizeof(U));
      v[k] = *reinterpret_cast<const U*>(c.src + r * c.src_row + col);
      to[k] = r * dst_row + col;
    }
  }
#pragma unroll
  for (int k = 0; k < kUnitsPerThread; ++k)
    if (base + int64_t{k} * kThreads + threadIdx.x < c.units) *reinterpret_cast<U*>(c.dst + to[k]) = v[k];
}

template <int E, int Cap>
__global__ void __launch_bounds__(kThreads) cat_rows_kernel(const __grid_constant__ Params<RowPiece, Cap> p) {
  using T = StorageTypes::bits<E>;
  for (int64_t tile = first_tile_of(p); tile < p.tiles; tile += tile_stride(p)) {
    const RowPiece& c = p.piece[find_piece(p, tile)];
    const int64_t base = (tile - c.first_tile) * kTileUnits;
    if (base >= c.units) return;  // by_y: past this piece's tiles
    if (c.vec) copy_rows<uint4>(c, p.dst_row, base);
    else copy_rows<T>(c, p.dst_row, base);
  }
}

// Any strides: a piece's element e over the output's extents with extent `size` along dim.
template <int E, int Cap>
__global__ void __launch_bounds__(kThreads) cat_walk_kernel(const __grid_constant__ Params<WalkPiece, Cap> p) {
  using T = StorageTypes::bits<E>;
  for (int64_t tile = first_tile_of(p); tile < p.tiles; tile += tile_stride(p)) {
    const WalkPiece& c = p.piece[find_piece(p, tile)];
    const int64_t base = (tile - c.first_tile) * kTileUnits;
    if (base >= c.units) return;
    T v[kUnitsPerThread];
    int64_t to[kUnitsPerThread];
#pragma unroll
    for (int k = 0; k < kUnitsPerThread; ++k) {
      int64_t e = base + int64_t{k} * kThreads + threadIdx.x;
      if (e < c.units) {
        int64_t from = 0, out = 0;
        for (int a = p.rank - 1; a >= 0; --a) {
          const int64_t n = a == p.dim ? c.size : p.shape[a];
          const int64_t i = e % n;
          e /= n;
          from += i * c.stride[a];
          out += (a == p.dim ? i + c.begin : i) * p.dst_stride[a];
        }
        v[k] = reinterpret_cast<const T*>(c.src)[from];
        to[k] = out;
      }
    }
#pragma unroll
    for (int k = 0; k < kUnitsPerThread; ++k)
      if (base + int64_t{k} * kThreads + threadIdx.x < c.units) reinterpret_cast<T*>(p.dst)[to[k]] = v[k];
  }
}

template <class Piece, int Cap>
Params<Piece, Cap> header(const CatParams& g) {
  Params<Piece, Cap> p;
  p.dst = g.dst, p.dst_row = g.dst_row, p.rank = g.rank, p.dim = g.dim, p.n = g.n, p.tiles = g.tiles;
  std::copy(g.shape, g.shape + kMaxRank, p.shape);
  std::copy(g.dst_stride, g.dst_stride + kMaxRank, p.dst_stride);
  return p;
}

// A block per tile (small tiles, many blocks: a slot frees as soon as its tile is done; a
// persistent grid of 8 blocks per SM striding over 32 KB tiles measured 7 % slower, H200). When
// the pieces are balanced (the [largest piece's tiles, n] grid wastes at most 1/32 of its
// blocks) a block reads its piece off blockIdx.y: 128 equal inputs 290 -> 282 µs; an empty
// block is not free (the KV-cache append [4096 + 1] with half the grid empty: 262 -> 298 µs).
template <class P>
dim3 grid_of(P& p, const CatParams& g) {
  int64_t most = 0;
  for (int k = 0; k < g.n; ++k) most = std::max(most, (k + 1 < g.n ? g.piece[k + 1].first_tile : g.tiles) - g.piece[k].first_tile);
  p.by_y = most <= (int64_t{1} << 30) && most * g.n - g.tiles <= g.tiles / 32;
  if (p.by_y) return dim3(static_cast<unsigned>(most), static_cast<unsigned>(g.n));
  return dim3(static_cast<unsigned>(std::min<int64_t>(g.tiles, int64_t{1} << 30)));
}

template <int E, int Cap>
cudaError_t launch_cap(const CatParams& g, cudaStream_t stream) {
  if (g.rows) {
    auto p = header<RowPiece, Cap>(g);
    for (int k = 0; k < g.n; ++k) {
      const CatPiece& c = g.piece[k];
      p.piece[k] = RowPiece{c.src, g.dst + c.begin * g.inner * g.esize, c.first_tile, c.units, c.row_units, c.src_row, c.row_div, c.vec};
    }
    const dim3 grid = grid_of(p, g);
    return launch_kernel(cat_rows_kernel<E, Cap>, grid, dim3(kThreads), 0, stream, p);
  }
  auto p = header<WalkPiece, Cap>(g);
  for (int k = 0; k < g.n; ++k) {
    const CatPiece& c = g.piece[k];
    p.piece[k].src = c.src, p.piece[k].first_tile = c.first_tile, p.piece[k].units = c.units;
    p.piece[k].begin = c.begin, p.piece[k].size = c.size;
    std::copy(c.stride, c.stride + kMaxRank, p.piece[k].stride);
  }
  const dim3 grid = grid_of(p, g);
  return launch_kernel(cat_walk_kernel<E, Cap>, grid, dim3(kThreads), 0, stream, p);
}

template <int E>
cudaError_t launch(const CatParams& g, cudaStream_t stream) {
  if (g.tiles == 0 || g.n == 0) return cudaSuccess;
  return g.n <= 8 ? launch_cap<E, 8>(g, stream) : launch_cap<E, kMaxCatInputsPerLaunch>(g, stream);
}

}  // namespace

CatLaunchFn find_cat(int esize) {
  switch (esize) {
    case 1: return &launch<1>;
    case 2: return &launch<2>;
    case 4: return &launch<4>;
    case 8: return &launch<8>;
    default: return nullptr;
  }
}

}  // namespace baracuda::catk
