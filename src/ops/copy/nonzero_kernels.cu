// nonzero / masked_select / masked_scatter: the count pass, CUB's scan of the tile counts, the
// write pass (block scan of the flags) and the finish (count, nonzero's padding rows).
#include <cub/device/device_scan.cuh>

#include <algorithm>

#include "baracuda/ops/nonzero.hpp"
#include "core/launch.cuh"
#include "ops/copy/nonzero_geometry.hpp"

namespace baracuda::nzk {

namespace {

// Element offset of logical position i in a view (contiguous: i itself).
__device__ __forceinline__ int64_t offset_of(const Params& p, const int64_t* stride, int contig, int64_t i) {
  if (contig) return i;
  int64_t off = 0;
#pragma unroll
  for (int a = kMaxRank - 1; a >= 0; --a) {
    if (a >= p.rank) continue;
    const int64_t q = a > 0 ? i / p.shape[a] : 0;
    off += (i - q * p.shape[a]) * stride[a];
    i = q;
  }
  return off;
}

__device__ __forceinline__ bool flag_at(const Params& p, int64_t i) {
  const char* at = p.flag + offset_of(p, p.flag_stride, p.flag_contig, i) * p.flag_es;
  uint64_t b = 0;
  switch (p.flag_es) {
    case 1: b = *reinterpret_cast<const uint8_t*>(at); break;
    case 2: b = *reinterpret_cast<const uint16_t*>(at); break;
    case 4: b = *reinterpret_cast<const uint32_t*>(at); break;
    default: b = *reinterpret_cast<const uint64_t*>(at); break;
  }
  return (b & p.flag_bits) != 0;
}

constexpr int kWarps = kThreads / 32;
constexpr int64_t kWarpSpan = int64_t{kItems} * 32;  // positions per warp: kItems steps of 32

// Warp w of tile b owns positions [b·kTile + w·kWarpSpan, + kWarpSpan), 32 consecutive ones
// per step (lane = position: coalesced); flags[s] is step s's ballot.
__device__ __forceinline__ int warp_flags(const Params& p, int64_t base, uint32_t (&flags)[kItems]) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  int c = 0;
#pragma unroll
  for (int s = 0; s < kItems; ++s) {
    const int64_t i = base + s * 32 + lane;
    flags[s] = __ballot_sync(0xffffffffu, i < p.numel && flag_at(p, i));
    c += __popc(flags[s]);
  }
  return c;
}

__device__ __forceinline__ int64_t warp_base() {
  return static_cast<int64_t>(blockIdx.x) * kTile + static_cast<int64_t>(threadIdx.x / 32) * kWarpSpan;
}

__global__ void __launch_bounds__(kThreads) count_kernel(const __grid_constant__ Params p) {
  __shared__ int warp_total[kWarps];
  uint32_t flags[kItems];
  const int c = warp_flags(p, warp_base(), flags);
  if (threadIdx.x % 32 == 0) warp_total[threadIdx.x / 32] = c;
  __syncthreads();
  if (threadIdx.x == 0) {
    long long t = 0;
    for (int w = 0; w < kWarps; ++w) t += warp_total[w];
    p.tile_counts[blockIdx.x] = t;
  }
}

template <int ES>
using bits_t = std::conditional_t<ES == 1, uint8_t, std::conditional_t<ES == 2, uint16_t, std::conditional_t<ES == 4, uint32_t, uint64_t>>>;

template <int ES>
__global__ void __launch_bounds__(kThreads) write_kernel(const __grid_constant__ Params p) {
  using E = bits_t<ES>;
  __shared__ int warp_total[kWarps];
  uint32_t flags[kItems];
  const int64_t base = warp_base();
  const int c = warp_flags(p, base, flags);
  const int w = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  if (lane == 0) warp_total[w] = c;
  __syncthreads();
  int64_t k = p.tile_offsets[blockIdx.x];
  for (int v = 0; v < w; ++v) k += warp_total[v];
  const MaskOp op = static_cast<MaskOp>(p.op);
  const uint32_t below = (1u << lane) - 1u;
#pragma unroll 1
  for (int s = 0; s < kItems; ++s) {
    const int64_t i = base + s * 32 + lane;
    if (i >= p.numel) break;
    const bool on = (flags[s] >> lane) & 1u;
    const int64_t r = k + __popc(flags[s] & below);  // this position's rank when flagged
    k += __popc(flags[s]);
    if (op == MaskOp::kMaskedScatter) {
      const char* from = on && r < p.source_numel ? p.src + r * p.src_s * ES : p.in + offset_of(p, p.in_stride, p.in_contig, i) * ES;
      *reinterpret_cast<E*>(p.out + offset_of(p, p.out_stride, p.out_contig, i) * ES) = *reinterpret_cast<const E*>(from);
    } else if (on && r < p.max_count) {
      if (op == MaskOp::kNonzero) {
        long long* row = reinterpret_cast<long long*>(p.out) + r * p.out_stride[0];
        if (p.numel <= UINT32_MAX) {  // 32-bit divisions
          uint32_t q = static_cast<uint32_t>(i);
          for (int a = p.out_cols - 1; a >= 0; --a) {
            const uint32_t n = static_cast<uint32_t>(p.shape[a]), d = q / n;
            row[a * p.out_stride[1]] = q - d * n;
            q = d;
          }
        } else {
          int64_t q = i;
          for (int a = p.out_cols - 1; a >= 0; --a) {
            const int64_t d = q / p.shape[a];
            row[a * p.out_stride[1]] = q - d * p.shape[a];
            q = d;
          }
        }
      } else {
        *reinterpret_cast<E*>(p.out + r * p.out_stride[0] * ES) =
            *reinterpret_cast<const E*>(p.in + offset_of(p, p.in_stride, p.in_contig, i) * ES);
      }
    }
  }
}

// The count, and the rows [count, max_count): nonzero's fill_value, masked_select's zeros.
__global__ void __launch_bounds__(kThreads) finish_kernel(const __grid_constant__ Params p) {
  const int64_t total = p.tile_offsets[p.tiles];
  const int64_t u0 = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (u0 == 0) *p.count = total;
  const MaskOp op = static_cast<MaskOp>(p.op);
  if (op == MaskOp::kMaskedScatter) return;
  const int64_t cols = op == MaskOp::kNonzero ? p.out_cols : 1;
  const int64_t n = p.max_count * cols, step = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t u = u0 + total * cols; u < n; u += step) {
    const int64_t row = u / cols, a = u - row * cols;
    if (op == MaskOp::kNonzero) reinterpret_cast<long long*>(p.out)[row * p.out_stride[0] + a * p.out_stride[1]] = p.fill;
    else
      for (int b = 0; b < p.es; ++b) p.out[row * p.out_stride[0] * p.es + b] = 0;
  }
}

template <int ES>
cudaError_t launch(const Params& p, cudaStream_t stream) {
  BARACUDA_CUDA_TRY(cudaMemsetAsync(p.tile_counts + p.tiles, 0, sizeof(long long), stream));
  if (p.tiles > 0) BARACUDA_CUDA_TRY(launch_kernel(count_kernel, dim3(static_cast<unsigned>(p.tiles)), dim3(kThreads), 0, stream, p));
  size_t bytes = p.cub_bytes;
  BARACUDA_CUDA_TRY(cub::DeviceScan::ExclusiveSum(p.cub_temp, bytes, p.tile_counts, p.tile_offsets, p.tiles + 1, stream));
  if (p.tiles > 0) BARACUDA_CUDA_TRY(launch_kernel(write_kernel<ES>, dim3(static_cast<unsigned>(p.tiles)), dim3(kThreads), 0, stream, p));
  const MaskOp op = static_cast<MaskOp>(p.op);
  const int64_t pad = op == MaskOp::kNonzero ? p.max_count * p.out_cols : op == MaskOp::kMaskedSelect ? p.max_count : 0;
  const unsigned blocks = static_cast<unsigned>(std::clamp<int64_t>((pad + kThreads - 1) / kThreads, 1, int64_t{1} << 16));
  return launch_kernel(finish_kernel, dim3(blocks), dim3(kThreads), 0, stream, p);
}

}  // namespace

NonzeroLaunchFn find_nonzero(int es) {
  switch (es) {
    case 1: return &launch<1>;
    case 2: return &launch<2>;
    case 4: return &launch<4>;
    case 8: return &launch<8>;
    default: return nullptr;
  }
}

size_t scan_bound(int64_t n) { return 16 * (static_cast<size_t>(n) / 128 + 64) + 4 * 1024; }

cudaError_t scan_query(int64_t n, size_t* bytes) {
  return cub::DeviceScan::ExclusiveSum(nullptr, *bytes, static_cast<long long*>(nullptr), static_cast<long long*>(nullptr), n);
}

}  // namespace baracuda::nzk
