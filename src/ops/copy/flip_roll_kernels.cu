// FlipPlan's and RollPlan's kernel: each thread moves kUnitsPerThread units (every load before
// the first store), a unit's source found by decomposing its index over the merged axes and
// mapping each coordinate (n − 1 − i, or (i − shift) mod n). Divisions by multiplication when
// the launch has fewer than 2^31 units. A flipped 16-byte unit reverses its elements in
// registers; a roll of the last axis by a part of a unit joins two source units at a byte offset.
// The flattened roll of views that are not both contiguous walks elements.
#include <algorithm>

#include "core/dispatch.hpp"
#include "core/launch.cuh"
#include "ops/copy/flip_roll_geometry.hpp"

namespace baracuda::fliproll {

namespace {

// a / d and a mod d (by multiplication when small).
__device__ __forceinline__ int64_t quot(int64_t a, int64_t d, const detail::FastDiv& f, bool small) {
  return small ? int64_t{f.div(static_cast<uint32_t>(a))} : a / d;
}

__device__ __forceinline__ uint32_t rev_bytes(uint32_t w, int esize) {
  return esize == 1 ? __byte_perm(w, 0, 0x0123) : esize == 2 ? __byte_perm(w, 0, 0x1032) : w;
}

// The 16-byte unit's elements of `esize` bytes in reverse order.
__device__ __forceinline__ uint4 reversed(uint4 v, int esize) {
  if (esize == 8) return make_uint4(v.z, v.w, v.x, v.y);
  return make_uint4(rev_bytes(v.w, esize), rev_bytes(v.z, esize), rev_bytes(v.y, esize), rev_bytes(v.x, esize));
}

// Bytes [4·Q + sh / 8, 4·Q + sh / 8 + 16) of the 32 bytes a ++ b (the words w): o[k] joins
// words Q + k and Q + k + 1 shifted right by sh bits.
template <int Q>
__device__ __forceinline__ uint4 join_from(const uint32_t (&w)[8], uint32_t sh) {
  return make_uint4(__funnelshift_r(w[Q], w[Q + 1], sh), __funnelshift_r(w[Q + 1], w[Q + 2], sh),
                    __funnelshift_r(w[Q + 2], w[Q + 3], sh), __funnelshift_r(w[Q + 3], w[Q + 4], sh));
}

// The 16 bytes of a ++ b (32 bytes) from byte `bytes` (1..15) on.
__device__ __forceinline__ uint4 join(const uint4& a, const uint4& b, int bytes) {
  const uint32_t w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
  const uint32_t sh = static_cast<uint32_t>(bytes & 3) * 8;
  switch (bytes >> 2) {
    case 0: return join_from<0>(w, sh);
    case 1: return join_from<1>(w, sh);
    case 2: return join_from<2>(w, sh);
    default: return join_from<3>(w, sh);
  }
}

// The input's and output's unit offsets of unit u (and, for a joined roll, the input's offset
// of the next unit along the last axis, cyclically).
__device__ __forceinline__ void offsets(const Params& p, int64_t u, int64_t* in, int64_t* out, int64_t* in_next = nullptr) {
  int64_t o = quot(u, p.run, p.run_div, p.small);
  const int64_t c = u - o * p.run;
  int64_t a_in = c, a_out = c;
  for (int a = p.naxes - 1; a >= 0; --a) {
    const Axis& x = p.ax[a];
    int64_t i = o;
    if (a > 0) {
      const int64_t q = quot(o, x.n, x.div, p.small);
      i = o - q * x.n;
      o = q;
    }
    const int64_t j = x.flip ? x.n - 1 - i : (i >= x.shift ? i - x.shift : i - x.shift + x.n);
    a_in += j * x.in_stride;
    a_out += i * x.out_stride;
    if (in_next != nullptr && a == p.naxes - 1) *in_next = (j + 1 == x.n ? -j : 1) * x.in_stride;
  }
  *in = a_in, *out = a_out;
  if (in_next != nullptr) *in_next += a_in;
}

template <class U, bool Vec>
__device__ void move_units(const Params& p, int64_t base, int esize) {
  U v[kUnitsPerThread];
  int64_t to[kUnitsPerThread];
#pragma unroll
  for (int k = 0; k < kUnitsPerThread; ++k) {
    const int64_t u = base + int64_t{k} * kThreads + threadIdx.x;
    if (u < p.units) {
      int64_t from = 0;
      if constexpr (Vec) {
        if (p.sub != 0) {
          int64_t next = 0;
          offsets(p, u, &from, &to[k], &next);
          v[k] = join(reinterpret_cast<const U*>(p.in)[from], reinterpret_cast<const U*>(p.in)[next], p.sub);
          continue;
        }
      }
      offsets(p, u, &from, &to[k]);
      v[k] = reinterpret_cast<const U*>(p.in)[from];
      if constexpr (Vec)
        if (p.reverse) v[k] = reversed(v[k], esize);
    }
  }
#pragma unroll
  for (int k = 0; k < kUnitsPerThread; ++k)
    if (base + int64_t{k} * kThreads + threadIdx.x < p.units) reinterpret_cast<U*>(p.out)[to[k]] = v[k];
}

// (Tried, H200 2026-11-28: the parameters as __grid_constant__ with 16-byte tiles of element
// units: flip 368 -> 708 µs, the 2-byte roll 1925 -> 6981: the axis loop's dynamic indexing of
// the parameter space is slower than this form. Not kept.)
template <int E>
__global__ void __launch_bounds__(kThreads) flip_roll_kernel(const Params p) {
  using T = StorageTypes::bits<E>;
  constexpr int64_t kTile = int64_t{kThreads} * kUnitsPerThread;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * kTile; base < p.units; base += static_cast<int64_t>(gridDim.x) * kTile) {
    if (p.flat) {
      for (int k = 0; k < kUnitsPerThread; ++k) {
        const int64_t f = base + int64_t{k} * kThreads + threadIdx.x;
        if (f >= p.units) break;
        int64_t g = f >= p.flat_shift ? f - p.flat_shift : f - p.flat_shift + p.units, from = 0, to = 0, r = f;
        for (int a = p.rank - 1; a >= 0; --a) {
          from += (g % p.shape[a]) * p.in_stride[a], g /= p.shape[a];
          to += (r % p.shape[a]) * p.out_stride[a], r /= p.shape[a];
        }
        reinterpret_cast<T*>(p.out)[to] = reinterpret_cast<const T*>(p.in)[from];
      }
    } else if (p.vec) {
      move_units<uint4, true>(p, base, E);
    } else {
      move_units<T, false>(p, base, E);
    }
  }
}

template <int E>
cudaError_t launch(const Params& p, cudaStream_t stream) {
  if (p.units == 0) return cudaSuccess;
  constexpr int64_t kTile = int64_t{kThreads} * kUnitsPerThread;
  const int64_t blocks = std::min<int64_t>((p.units + kTile - 1) / kTile, int64_t{1} << 30);
  return launch_kernel(flip_roll_kernel<E>, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, stream, p);
}

}  // namespace

FlipRollLaunchFn find_flip_roll(int esize) {
  switch (esize) {
    case 1: return &launch<1>;
    case 2: return &launch<2>;
    case 4: return &launch<4>;
    case 8: return &launch<8>;
    default: return nullptr;
  }
}

}  // namespace baracuda::fliproll
