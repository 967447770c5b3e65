// Bespoke kernels of the GEMM family: the pointwise epilogue (bias + activation + preact, also
// K == 0 and the backward's dZ = d_out ⊙ act'(Z)) and the deterministic column sum (dbias).
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <type_traits>
#include <utility>

#include "core/cuda_check.hpp"
#include "core/cuda_types.cuh"
#include "core/launch.cuh"
#include "core/validate.hpp"
#include "ops/gemm/gemm_core.hpp"

namespace baracuda::detail {

namespace {

// tanh for the gelu-tanh epilogue. FAST (f32 math rounded to a 16-bit result): 1 - 2 / (1 +
// e^2u) from exp2f and the approximate division, absolute error below 1e-6, far below half an
// ulp of bf16 / f16 (with the library tanhf the pass was compute-bound: SM 73 %, DRAM 70 %);
// otherwise the library tanh.
template <bool FAST, class A>
__device__ __forceinline__ A tanh_for(A u) {
  if constexpr (FAST && std::is_same_v<A, float>) {
    const float uc = u > 15.0f ? 15.0f : u;  // tanh(15) rounds to 1; keeps e^2u finite (NaN passes)
    return 1.0f - __fdividef(2.0f, 1.0f + exp2f(uc * 2.8853900817779268f));
  } else {
    return tanh(u);
  }
}

template <class A, bool FAST = false>
__device__ __forceinline__ A activate(int act, A z) {
  switch (act) {
    case 1: return z > A(0) || z != z ? z : A(0);  // relu; NaN stays NaN, as torch.relu
    case 2: {                              // gelu, tanh approximation (PyTorch's formula)
      const A k_beta = A(0.7978845608028654), k_kappa = A(0.044715);
      return A(0.5) * z * (A(1) + tanh_for<FAST>(k_beta * (z + k_kappa * z * z * z)));
    }
    case 3: return A(0.5) * z * (A(1) + erf(z * A(0.7071067811865476)));  // gelu, erf
    default: return z;
  }
}

template <class A, bool FAST = false>
__device__ __forceinline__ A activate_grad(int act, A z) {
  switch (act) {
    case 1: return z > A(0) ? A(1) : A(0);
    case 2: {
      const A k_beta = A(0.7978845608028654), k_kappa = A(0.044715);
      const A x2 = z * z, th = tanh_for<FAST>(k_beta * (z + k_kappa * x2 * z));
      return A(0.5) * (A(1) + th) + A(0.5) * z * (A(1) - th * th) * k_beta * (A(1) + A(3) * k_kappa * x2);
    }
    case 3: {
      const A cdf = A(0.5) * (A(1) + erf(z * A(0.7071067811865476)));
      const A pdf = exp(A(-0.5) * z * z) * A(0.3989422804014327);
      return cdf + z * pdf;
    }
    default: return A(1);
  }
}

template <class T>
__global__ void __launch_bounds__(256) pointwise_kernel(const __grid_constant__ PointwiseGeometry g) {
  using A = acc_t<T>;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < g.numel; i += stride) {
    int64_t rem = i, o = 0, s = 0, x = 0, n = 0;
    for (int d = g.rank - 1; d >= 0; --d) {
      const int64_t c = rem % g.ext[d];
      rem /= g.ext[d];
      if (d == g.rank - 1) n = c;
      o += c * g.s_out[d];
      s += c * g.s_src[d];
      x += c * g.s_aux[d];
    }
    const A v = g.src ? static_cast<A>(g.src_scale) * to_acc(static_cast<const T*>(g.src)[s]) : A(0);
    if (g.backward) {
      // out = v ⊙ act'(z), z = aux (relu: the forward output, whose sign is z's)
      const A z = to_acc(static_cast<const T*>(g.aux)[x]);
      static_cast<T*>(g.out)[o] = from_acc<T>(v * activate_grad(g.act, z));
    } else {
      A z = v;
      if (g.bias) z += to_acc(static_cast<const T*>(g.bias)[n * g.bias_stride]);
      if (g.aux) {
        const T zt = from_acc<T>(z);
        static_cast<T*>(g.aux)[x] = zt;
        z = to_acc(zt);  // act sees the stored preact, as a separate torch op would
      }
      static_cast<T*>(g.out)[o] = from_acc<T>(activate(g.act, z));
    }
  }
}

// The common case: out, src and aux share one row-major contiguous layout [rows, n_cols] (src /
// aux may be absent), n_cols % VEC == 0, 16-byte aligned. A block covers TC vector columns and
// 256/TC rows per step; each thread keeps its VEC bias values in registers and walks rows with
// two rows' loads in flight (no per-element index division, one bias load per thread).
// With `partial`, each block also writes the column sums of the values it stored (f32, f64 for
// f64; its rows in a fixed order) to partial[blockIdx.y][col]: the bias gradient, in the same pass.
// MODE = act + 4 * backward (GemmActivation, PointwiseGeometry::backward) is a template
// parameter: with one activation's code per kernel the backward fits 4 blocks/SM without spills
// (the run-time switch over every activation needed 80 registers and spilled at 3 blocks/SM);
// the forward (bias in registers, preact store) stays at 3.
constexpr int rows_blocks_per_sm(int mode) { return mode >= 4 ? 4 : 3; }
inline constexpr int kRowsWidestMode = 7;  // a mode with the most blocks per SM (the largest grid)
template <class T, int VEC, int MODE>
__global__ void __launch_bounds__(256, rows_blocks_per_sm(MODE)) pointwise_rows_kernel(const __grid_constant__ PointwiseGeometry g,
                                                                              int64_t rows, int64_t vcols, int tc,
                                                                              acc_t<T>* partial) {
  using A = acc_t<T>;
  constexpr bool kBackward = MODE >= 4;
  constexpr int kAct = MODE & 3;
  constexpr bool kFast = sizeof(T) == 2;  // 16-bit results: see tanh_for
  struct alignas(16) Vec {
    T v[VEC];
  };
  const int64_t cv = static_cast<int64_t>(blockIdx.x) * tc + threadIdx.x % tc;
  const bool active = cv < vcols;
  const int rows_per_block = blockDim.x / tc;
  const int64_t row_step = static_cast<int64_t>(gridDim.y) * rows_per_block;
  A bias[VEC], sum[VEC];
#pragma unroll
  for (int j = 0; j < VEC; ++j) {
    bias[j] = g.bias && active ? to_acc(static_cast<const T*>(g.bias)[(cv * VEC + j) * g.bias_stride]) : A(0);
    sum[j] = A(0);
  }
  const A scale = static_cast<A>(g.src_scale);
  auto apply = [&](const Vec& src, const Vec& aux, Vec& out, Vec& pre) {
#pragma unroll
    for (int j = 0; j < VEC; ++j) {
      const A v = g.src ? scale * to_acc(src.v[j]) : A(0);
      if constexpr (kBackward) {
        out.v[j] = from_acc<T>(v * activate_grad<A, kFast>(kAct, to_acc(aux.v[j])));
      } else {
        A z = g.bias ? v + bias[j] : v;  // no bias: -0 stays -0
        if (g.aux) {
          pre.v[j] = from_acc<T>(z);
          z = to_acc(pre.v[j]);
        }
        out.v[j] = from_acc<T>(activate<A, kFast>(kAct, z));
      }
      sum[j] += to_acc(out.v[j]);
    }
  };
  const Vec* src = static_cast<const Vec*>(g.src);
  Vec* aux = static_cast<Vec*>(g.aux);
  Vec* out = static_cast<Vec*>(g.out);
  int64_t r = static_cast<int64_t>(blockIdx.y) * rows_per_block + threadIdx.x / tc;
  if (active) {
    for (; r + row_step < rows; r += 2 * row_step) {
      const int64_t i0 = r * vcols + cv, i1 = (r + row_step) * vcols + cv;
      Vec s0{}, s1{}, x0{}, x1{}, o0, o1, p0, p1;
      if (src) s0 = src[i0], s1 = src[i1];
      if (kBackward) x0 = aux[i0], x1 = aux[i1];
      apply(s0, x0, o0, p0);
      apply(s1, x1, o1, p1);
      if (!kBackward && aux) aux[i0] = p0, aux[i1] = p1;
      out[i0] = o0, out[i1] = o1;
    }
    if (r < rows) {
      const int64_t i0 = r * vcols + cv;
      Vec s0{}, x0{}, o0, p0;
      if (src) s0 = src[i0];
      if (kBackward) x0 = aux[i0];
      apply(s0, x0, o0, p0);
      if (!kBackward && aux) aux[i0] = p0;
      out[i0] = o0;
    }
  }
  if (partial == nullptr) return;  // uniform across the block
  __shared__ A red[256 * VEC];
#pragma unroll
  for (int j = 0; j < VEC; ++j) red[threadIdx.x * VEC + j] = sum[j];
  __syncthreads();
  if (threadIdx.x < tc && active) {
#pragma unroll
    for (int j = 0; j < VEC; ++j) {
      A s = 0;
      for (int y = 0; y < rows_per_block; ++y) s += red[(y * tc + threadIdx.x) * VEC + j];
      partial[static_cast<int64_t>(blockIdx.y) * vcols * VEC + cv * VEC + j] = s;
    }
  }
}

// dst[col] = scale · Σ_y partial[y][col] for y < chunks: 8 lanes per column each sum every 8th
// partial, then lane 0 adds the 8 lane sums in order (fixed order: deterministic).
template <class T>
__global__ void __launch_bounds__(256) column_final_lanes_kernel(const __grid_constant__ ColumnSumGeometry g,
                                                                const acc_t<T>* partial, int64_t chunks) {
  using A = acc_t<T>;
  __shared__ A red[8][32];
  const int64_t col = static_cast<int64_t>(blockIdx.x) * 32 + threadIdx.x;
  A s = 0;
  if (col < g.cols)
    for (int64_t y = threadIdx.y; y < chunks; y += 8) s += partial[y * g.cols + col];
  red[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && col < g.cols) {
    A t = 0;
    for (int y = 0; y < 8; ++y) t += red[y][threadIdx.x];
    static_cast<T*>(g.dst)[col * g.dst_stride] = from_acc<T>(static_cast<A>(g.scale) * t);
  }
}

// Grid of pointwise_rows_kernel: tc vector columns x 256/tc rows per block, gx x gy blocks.
struct RowsGrid {
  int tc = 1;
  int64_t gx = 1, gy = 1;
};
RowsGrid rows_grid(int64_t rows, int64_t vcols, int mode) {
  RowsGrid rg;
  while (rg.tc < 256 && rg.tc < vcols) rg.tc *= 2;
  rg.gx = (vcols + rg.tc - 1) / rg.tc;
  const int64_t rows_per_block = 256 / rg.tc;
  // one wave: the resident blocks per SM of the kernel's launch bounds, each walking its rows
  rg.gy = std::max<int64_t>(1, std::min<int64_t>({(rows + rows_per_block - 1) / rows_per_block,
                                                  std::max<int64_t>(1, 132 * rows_blocks_per_sm(mode) / rg.gx), 65535}));
  return rg;
}

// Hash fill for timing scratch: sign and mantissa random, exponent in {bias-1, bias} (|v| in
// [0.5, 2)), so the timed kernels see operands that toggle like real activations and weights.
__global__ void fill_scratch_kernel(uint8_t* p, int64_t elems, int esize, int mant_bits, int exp_bits, uint64_t seed) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const uint64_t bias = (uint64_t{1} << (exp_bits - 1)) - 1;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < elems; i += stride) {
    uint64_t h = (static_cast<uint64_t>(i) + seed) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    const uint64_t mant = h & ((uint64_t{1} << mant_bits) - 1);
    const uint64_t e = bias - ((h >> 62) & 1);
    const uint64_t sign = h >> 63;
    const uint64_t v = (sign << (mant_bits + exp_bits)) | (e << mant_bits) | mant;
    for (int b = 0; b < esize; ++b) p[i * esize + b] = static_cast<uint8_t>(v >> (8 * b));
  }
}

// out/src/aux all row-major contiguous over the same extents (absent ones do not count)
bool contiguous_same(const PointwiseGeometry& g) {
  int64_t s = 1;
  for (int d = g.rank - 1; d >= 0; --d) {
    if (g.ext[d] != 1) {
      if (g.s_out[d] != s) return false;
      if (g.src && g.s_src[d] != s) return false;
      if (g.aux && g.s_aux[d] != s) return false;
    }
    s *= g.ext[d];
  }
  return true;
}

constexpr int kColTile = 32, kRowLanes = 8;

int64_t column_sum_chunks(int64_t rows, int64_t cols) {
  const int64_t col_tiles = (cols + kColTile - 1) / kColTile;
  int64_t chunks = (rows + 255) / 256;
  const int64_t cap = std::max<int64_t>(1, 2048 / std::max<int64_t>(1, col_tiles));
  return std::max<int64_t>(1, std::min(chunks, cap));
}

template <class T>
__device__ __forceinline__ int64_t row_offset(const ColumnSumGeometry& g, int64_t r) {
  int64_t o = 0;
  for (int d = g.rank - 1; d >= 0; --d) {
    o += (r % g.ext[d]) * g.s_src[d];
    r /= g.ext[d];
  }
  return o;
}

// pass 1: partial[chunk][col] = Σ rows of the chunk, in a fixed order
template <class T>
__global__ void __launch_bounds__(kColTile* kRowLanes) column_partial_kernel(const __grid_constant__ ColumnSumGeometry g,
                                                                           acc_t<T>* partial, int64_t rows_per_chunk) {
  using A = acc_t<T>;
  __shared__ A red[kRowLanes][kColTile];
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kColTile + threadIdx.x;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * rows_per_chunk;
  const int64_t r1 = min(g.rows, r0 + rows_per_chunk);
  A acc = 0;
  if (col < g.cols) {
    const T* src = static_cast<const T*>(g.src);
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kRowLanes) acc += to_acc(src[row_offset<T>(g, r) + col * g.col_stride]);
  }
  red[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && col < g.cols) {
    A s = 0;
    for (int y = 0; y < kRowLanes; ++y) s += red[y][threadIdx.x];
    partial[static_cast<int64_t>(blockIdx.y) * g.cols + col] = s;
  }
}

// pass 2: dst[col] = scale · Σ_chunk partial[chunk][col], chunks in order
template <class T>
__global__ void __launch_bounds__(256) column_final_kernel(const __grid_constant__ ColumnSumGeometry g,
                                                           const acc_t<T>* partial, int64_t chunks) {
  using A = acc_t<T>;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= g.cols) return;
  A s = 0;
  for (int64_t c = 0; c < chunks; ++c) s += partial[c * g.cols + col];
  static_cast<T*>(g.dst)[col * g.dst_stride] = from_acc<T>(static_cast<A>(g.scale) * s);
}

template <class F>
bool dispatch_float(DType dt, F&& f) {
  return dispatch_dtype<CudaTypes>(dt, FloatDTypes{}, std::forward<F>(f));
}

}  // namespace

namespace {

bool rows_path(DType dt, const PointwiseGeometry& g) {
  const int64_t n_cols = g.rank > 0 ? g.ext[g.rank - 1] : 1;
  const int vec = static_cast<int>(16 / dtype_size(dt));
  auto aligned = [](const void* p) { return p == nullptr || reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  return contiguous_same(g) && n_cols % vec == 0 && aligned(g.out) && aligned(g.src) && aligned(g.aux);
}

Status launch_rows(DType dt, const PointwiseGeometry& g, void* partial, cudaStream_t stream, int64_t* gy_out) {
  const int64_t n_cols = g.ext[g.rank - 1];
  const int vec = static_cast<int>(16 / dtype_size(dt));
  const int64_t vcols = n_cols / vec, rows = g.numel / n_cols;
  if (g.act < 0 || g.act > 3) return error(StatusCode::kInternal, "gemm epilogue: activation ", g.act);
  const int mode = g.act + (g.backward ? 4 : 0);
  const RowsGrid rg = rows_grid(rows, vcols, mode);
  if (gy_out) *gy_out = rg.gy;
  cudaError_t e = cudaSuccess;
  const bool ok = dispatch_float(dt, [&]<class T>() {
    constexpr int V = 16 / sizeof(T);
    const auto kernels = [&]<int... M>(std::integer_sequence<int, M...>) {
      return std::array{&pointwise_rows_kernel<T, V, M>...};
    }(std::make_integer_sequence<int, 8>{});
    e = launch_kernel(kernels[mode], dim3(static_cast<unsigned>(rg.gx), static_cast<unsigned>(rg.gy)), dim3(256), 0,
                      stream, g, rows, vcols, rg.tc, static_cast<acc_t<T>*>(partial));
  });
  if (!ok) return error(StatusCode::kInternal, "gemm epilogue: dtype ", dtype_name(dt), " not instantiated");
  return cuda_status(e, "gemm epilogue");
}

}  // namespace

Status launch_pointwise(DType dt, const PointwiseGeometry& g, cudaStream_t stream) {
  if (g.numel == 0) return {};
  if (rows_path(dt, g)) return launch_rows(dt, g, nullptr, stream, nullptr);
  const int64_t blocks = std::min<int64_t>((g.numel + 255) / 256, 132 * 16);
  cudaError_t e = cudaSuccess;
  if (!dispatch_float(dt, [&]<class T>() { e = launch_kernel(pointwise_kernel<T>, dim3(static_cast<unsigned>(blocks)), dim3(256), 0, stream, g); }))
    return error(StatusCode::kInternal, "gemm epilogue: dtype ", dtype_name(dt), " not instantiated");
  return cuda_status(e, "gemm epilogue");
}

size_t pointwise_colsum_workspace(DType dt, int64_t rows, int64_t cols) {
  const size_t acc = dt == DType::f64 ? 8 : 4;
  const int64_t vec = static_cast<int64_t>(16 / dtype_size(dt));
  const size_t fused = cols % vec == 0 && cols > 0 ? static_cast<size_t>(rows_grid(rows, cols / vec, kRowsWidestMode).gy * cols) * acc : 0;
  return std::max(fused, column_sum_workspace(dt, rows, cols));
}

Status launch_pointwise_colsum(DType dt, const PointwiseGeometry& g, void* dst, void* ws, cudaStream_t stream) {
  if (g.numel > 0 && rows_path(dt, g)) {
    int64_t gy = 0;
    if (Status s = launch_rows(dt, g, ws, stream, &gy); !s.ok()) return s;
    ColumnSumGeometry cg;
    cg.cols = g.ext[g.rank - 1];
    cg.dst = dst;
    cg.dst_stride = 1;
    cg.scale = 1.0;
    cudaError_t e = cudaSuccess;
    dispatch_float(dt, [&]<class T>() {
      e = launch_kernel(column_final_lanes_kernel<T>, dim3(static_cast<unsigned>((cg.cols + 31) / 32)), dim3(32, 8), 0, stream,
                        cg, static_cast<const acc_t<T>*>(ws), gy);
    });
    return cuda_status(e, "gemm epilogue column sum");
  }
  if (Status s = launch_pointwise(dt, g, stream); !s.ok()) return s;
  return launch_column_sum_over(dt, g, g.out, dst, 1.0, ws, stream);
}

Status launch_fill_scratch(DType dt, void* p, int64_t elems, uint64_t seed, cudaStream_t stream) {
  if (elems <= 0) return {};
  int mant = 0, exp = 0;
  switch (dt) {
    case DType::f64: mant = 52, exp = 11; break;
    case DType::f32: mant = 23, exp = 8; break;
    case DType::f16: mant = 10, exp = 5; break;
    case DType::bf16: mant = 7, exp = 8; break;
    case DType::f8e4m3: mant = 3, exp = 4; break;
    case DType::f8e5m2: mant = 2, exp = 5; break;
    default: return error(StatusCode::kInternal, "gemm scratch fill: dtype ", dtype_name(dt));
  }
  const int64_t blocks = std::min<int64_t>((elems + 255) / 256, 132 * 32);
  return cuda_status(launch_kernel(fill_scratch_kernel, dim3(static_cast<unsigned>(blocks)), dim3(256), 0, stream,
                                   static_cast<uint8_t*>(p), elems, static_cast<int>(dtype_size(dt)), mant, exp, seed),
                     "gemm scratch fill");
}

size_t column_sum_workspace(DType dt, int64_t rows, int64_t cols) {
  const size_t acc = dt == DType::f64 ? 8 : 4;
  return static_cast<size_t>(column_sum_chunks(rows, cols) * cols) * acc;
}

Status launch_column_sum(DType dt, const ColumnSumGeometry& g, void* ws, cudaStream_t stream) {
  if (g.cols == 0) return {};
  const int64_t chunks = column_sum_chunks(g.rows, g.cols);
  const int64_t per = std::max<int64_t>(1, (g.rows + chunks - 1) / chunks);
  const int64_t col_tiles = (g.cols + kColTile - 1) / kColTile;
  cudaError_t e = cudaSuccess;
  const bool ok = dispatch_float(dt, [&]<class T>() {
    auto* partial = static_cast<acc_t<T>*>(ws);
    e = launch_kernel(column_partial_kernel<T>, dim3(static_cast<unsigned>(col_tiles), static_cast<unsigned>(chunks)),
                      dim3(kColTile, kRowLanes), 0, stream, g, partial, per);
    if (e == cudaSuccess)
      e = launch_kernel(column_final_kernel<T>, dim3(static_cast<unsigned>((g.cols + 255) / 256)), dim3(256), 0, stream, g,
                        static_cast<const acc_t<T>*>(partial), chunks);
  });
  if (!ok) return error(StatusCode::kInternal, "gemm column sum: dtype ", dtype_name(dt), " not instantiated");
  return cuda_status(e, "gemm column sum");
}

Status launch_column_sum_over(DType dt, const PointwiseGeometry& pg, const void* src, void* dst, double scale, void* ws,
                              cudaStream_t stream) {
  ColumnSumGeometry cg;
  cg.rank = pg.rank - 1;
  cg.rows = 1;
  for (int i = 0; i < cg.rank; ++i) cg.ext[i] = pg.ext[i], cg.s_src[i] = pg.s_out[i], cg.rows *= pg.ext[i];
  cg.cols = pg.ext[pg.rank - 1];
  cg.col_stride = pg.s_out[pg.rank - 1];
  cg.dst_stride = 1;
  cg.src = src;
  cg.dst = dst;
  cg.scale = scale;
  return launch_column_sum(dt, cg, ws, stream);
}

}  // namespace baracuda::detail
