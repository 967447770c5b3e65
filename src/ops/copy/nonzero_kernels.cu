// nonzero / masked_select / masked_scatter: the count pass, CUB's scan of the tile counts, the
// write pass (block scan of the flags) and the finish (count, nonzero's padding rows).
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
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

// The flags of thread t's items in tile b, as a bit mask (bit k: item k).
__device__ __forceinline__ uint32_t thread_flags(const Params& p, int64_t first) {
  uint32_t m = 0;
#pragma unroll
  for (int k = 0; k < kItems; ++k)
    if (first + k < p.numel && flag_at(p, first + k)) m |= 1u << k;
  return m;
}

__global__ void __launch_bounds__(kThreads) count_kernel(const __grid_constant__ Params p) {
  using Reduce = cub::BlockReduce<int, kThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kTile + static_cast<int64_t>(threadIdx.x) * kItems;
  const int c = __popc(thread_flags(p, first));
  const int total = Reduce(tmp).Sum(c);
  if (threadIdx.x == 0) p.tile_counts[blockIdx.x] = total;
}

template <int ES>
using bits_t = std::conditional_t<ES == 1, uint8_t, std::conditional_t<ES == 2, uint16_t, std::conditional_t<ES == 4, uint32_t, uint64_t>>>;

template <int ES>
__global__ void __launch_bounds__(kThreads) write_kernel(const __grid_constant__ Params p) {
  using Scan = cub::BlockScan<int, kThreads>;
  using E = bits_t<ES>;
  __shared__ typename Scan::TempStorage tmp;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kTile + static_cast<int64_t>(threadIdx.x) * kItems;
  const uint32_t m = thread_flags(p, first);
  int before = 0;
  Scan(tmp).ExclusiveSum(__popc(m), before);
  int64_t k = p.tile_offsets[blockIdx.x] + before;
  const MaskOp op = static_cast<MaskOp>(p.op);
#pragma unroll 1
  for (int j = 0; j < kItems; ++j) {
    const int64_t i = first + j;
    if (i >= p.numel) break;
    const bool on = (m >> j) & 1u;
    if (op == MaskOp::kMaskedScatter) {
      const char* from = on && k < p.source_numel ? p.src + k * p.src_s * ES : p.in + offset_of(p, p.in_stride, p.in_contig, i) * ES;
      *reinterpret_cast<E*>(p.out + offset_of(p, p.out_stride, p.out_contig, i) * ES) = *reinterpret_cast<const E*>(from);
    } else if (on && k < p.max_count) {
      if (op == MaskOp::kNonzero) {
        int64_t r = i;
        for (int a = p.out_cols - 1; a >= 0; --a) {
          const int64_t q = r / p.shape[a];
          reinterpret_cast<long long*>(p.out)[k * p.out_stride[0] + a * p.out_stride[1]] = r - q * p.shape[a];
          r = q;
        }
      } else {
        *reinterpret_cast<E*>(p.out + k * p.out_stride[0] * ES) =
            *reinterpret_cast<const E*>(p.in + offset_of(p, p.in_stride, p.in_contig, i) * ES);
      }
    }
    k += on;
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
