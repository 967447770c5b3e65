// tril / triu: one thread per unit (an element, or 16 bytes of a row), its matrix coordinates
// by FastDiv below 2^31 units; a unit wholly on the zeroed side is written without a read.
#include <algorithm>

#include "core/launch.cuh"
#include "ops/copy/triangle_geometry.hpp"

namespace baracuda::trik {

namespace {

template <int E>
using bits_t = std::conditional_t<E == 1, uint8_t, std::conditional_t<E == 2, uint16_t, std::conditional_t<E == 4, uint32_t, uint64_t>>>;

// Whether (i, j) keeps its value.
__device__ __forceinline__ bool keep(const Params& p, int64_t i, int64_t j) {
  return p.upper ? j - i >= p.diagonal : j - i <= p.diagonal;
}

template <int E, int V>
__global__ void __launch_bounds__(kThreads) triangle_kernel(const __grid_constant__ Params p) {
  using T = bits_t<E>;
  struct alignas(E * V) Unit {
    T v[V];
  };
  const int64_t step = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t u = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; u < p.units; u += step) {
    int64_t c = 0, i = 0, in = 0, out = 0;
    if (p.small) {
      uint32_t r = static_cast<uint32_t>(u), q = p.col_div.div(r);
      c = r - q * static_cast<uint32_t>(p.cols);
      r = q, q = p.row_div.div(r);
      i = r - q * static_cast<uint32_t>(p.rows);
      r = q;
      for (int k = p.nb - 1; k >= 0; --k) {
        const uint32_t d = k > 0 ? p.b_div[k].div(r) : 0;
        const int64_t b = r - d * static_cast<uint32_t>(p.bn[k]);
        in += b * p.b_in[k], out += b * p.b_out[k];
        r = d;
      }
    } else {
      int64_t r = u, q = r / p.cols;
      c = r - q * p.cols;
      r = q, q = r / p.rows;
      i = r - q * p.rows;
      r = q;
      for (int k = p.nb - 1; k >= 0; --k) {
        const int64_t d = k > 0 ? r / p.bn[k] : 0;
        in += (r - d * p.bn[k]) * p.b_in[k], out += (r - d * p.bn[k]) * p.b_out[k];
        r = d;
      }
    }
    in += i * p.r_in + c * p.c_in, out += i * p.r_out + c * p.c_out;
    const int64_t j0 = c * V;
    Unit w{};
    const bool any = keep(p, i, j0) || keep(p, i, j0 + V - 1);  // the kept side is one interval of j
    if (any) {
      w = *reinterpret_cast<const Unit*>(reinterpret_cast<const T*>(p.in) + in);
#pragma unroll
      for (int e = 0; e < V; ++e)
        if (!keep(p, i, j0 + e)) w.v[e] = 0;
    }
    *reinterpret_cast<Unit*>(reinterpret_cast<T*>(p.out) + out) = w;
  }
}

template <int E, int V>
cudaError_t launch(const Params& p, cudaStream_t stream) {
  if (p.units == 0) return cudaSuccess;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((p.units + kThreads - 1) / kThreads, int64_t{1} << 30));
  return launch_kernel(triangle_kernel<E, V>, dim3(blocks), dim3(kThreads), 0, stream, p);
}

}  // namespace

TriLaunchFn find_triangle(int esize, bool vec) {
  switch (esize) {
    case 1: return vec ? &launch<1, 16> : &launch<1, 1>;
    case 2: return vec ? &launch<2, 8> : &launch<2, 1>;
    case 4: return vec ? &launch<4, 4> : &launch<4, 1>;
    case 8: return vec ? &launch<8, 2> : &launch<8, 1>;
    default: return nullptr;
  }
}

}  // namespace baracuda::trik
