// CatPlan's kernel: one launch copies up to kMaxCatInputsPerLaunch inputs. A block takes tiles
// of kTileUnits units (tiles never straddle two pieces: each piece's tiles are counted apart),
// finds its piece by binary search over the tiles' prefix, and each thread moves
// kUnitsPerThread units, every load issued before the first store. Row form: 16-byte units
// when the piece's rows and both row starts are 16-byte aligned, else one element per unit.
// The parameter block travels by value (launches with 8 or fewer pieces take a small copy).
#include <algorithm>

#include "core/launch.cuh"
#include "ops/copy/cat_geometry.hpp"

namespace baracuda::catk {

namespace {

template <int E>
struct Bits;
template <>
struct Bits<1> {
  using type = uint8_t;
};
template <>
struct Bits<2> {
  using type = uint16_t;
};
template <>
struct Bits<4> {
  using type = uint32_t;
};
template <>
struct Bits<8> {
  using type = uint64_t;
};

// The launch's parameters with room for Cap pieces.
template <int Cap>
struct Params {
  char* dst;
  int esize;
  bool rows;
  int64_t dst_row, inner;
  int rank, dim;
  int64_t shape[kMaxRank], dst_stride[kMaxRank];
  int n;
  int64_t tiles;
  CatPiece piece[Cap];
};

template <int Cap>
__device__ int find_piece(const Params<Cap>& p, int64_t tile) {
  int lo = 0, hi = p.n - 1;  // the last piece whose first_tile <= tile
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (p.piece[mid].first_tile <= tile) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// Row form: units of type U (16 bytes, or the element's bits).
template <class U, int Cap>
__device__ void copy_rows(const Params<Cap>& p, const CatPiece& c, int64_t base) {
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
      to[k] = r * p.dst_row + col;
    }
  }
  char* const dst = p.dst + c.begin * p.inner * p.esize;
#pragma unroll
  for (int k = 0; k < kUnitsPerThread; ++k)
    if (base + int64_t{k} * kThreads + threadIdx.x < c.units) *reinterpret_cast<U*>(dst + to[k]) = v[k];
}

// Any strides: a piece's element e over the output's extents with extent `size` along dim.
template <class T, int Cap>
__device__ void copy_walk(const Params<Cap>& p, const CatPiece& c, int64_t base) {
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

template <int E, int Cap>
__global__ void __launch_bounds__(kThreads) cat_kernel(const __grid_constant__ Params<Cap> p) {
  using T = typename Bits<E>::type;
  for (int64_t tile = blockIdx.x; tile < p.tiles; tile += gridDim.x) {
    const CatPiece& c = p.piece[find_piece(p, tile)];
    const int64_t base = (tile - c.first_tile) * kTileUnits;
    if (!p.rows) copy_walk<T>(p, c, base);
    else if (c.vec) copy_rows<uint4>(p, c, base);
    else copy_rows<T>(p, c, base);
  }
}

template <int E, int Cap>
cudaError_t launch_cap(const CatParams& g, cudaStream_t stream) {
  Params<Cap> p;
  p.dst = g.dst, p.esize = g.esize, p.rows = g.rows, p.dst_row = g.dst_row, p.inner = g.inner;
  p.rank = g.rank, p.dim = g.dim, p.n = g.n, p.tiles = g.tiles;
  std::copy(g.shape, g.shape + kMaxRank, p.shape);
  std::copy(g.dst_stride, g.dst_stride + kMaxRank, p.dst_stride);
  std::copy(g.piece, g.piece + g.n, p.piece);
  const int64_t blocks = std::min<int64_t>(g.tiles, int64_t{132} * 64);
  return launch_kernel(cat_kernel<E, Cap>, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, stream, p);
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
