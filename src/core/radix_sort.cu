// CUB's radix sort of (key, position) pairs, narrow and wide (core/radix_sort.hpp).
#include <cub/device/device_radix_sort.cuh>

#include "core/radix_sort.hpp"

namespace baracuda::detail {

namespace {

template <class K, class P>
cudaError_t sort(void* temp, size_t& bytes, SortPairsBuffers* b, int64_t n, int key_bits, cudaStream_t stream) {
  cub::DoubleBuffer<K> keys(static_cast<K*>(b->keys), static_cast<K*>(b->keys_alt));
  cub::DoubleBuffer<P> pos(static_cast<P*>(b->pos), static_cast<P*>(b->pos_alt));
  const cudaError_t e = cub::DeviceRadixSort::SortPairs(temp, bytes, keys, pos, n, 0, key_bits, stream);
  if (temp != nullptr) b->keys = keys.Current(), b->pos = pos.Current();
  return e;
}

}  // namespace

size_t sort_pairs_bound(int64_t n, bool wide) {
  // onesweep: per 8-bit pass a look-back word per digit per tile of >= 1024 keys, plus the
  // histograms (64-bit keys: twice the passes)
  const size_t per_pass = (static_cast<size_t>(n) / 1024 + 2) * 256 * (wide ? 8 : 4);
  return per_pass * (wide ? 8 : 4) + 80 * 1024;
}

cudaError_t sort_pairs_query(int64_t n, int key_bits, bool wide, size_t* bytes) {
  *bytes = 0;
  if (n <= 0) return cudaSuccess;
  SortPairsBuffers b;
  return wide ? sort<uint64_t, int64_t>(nullptr, *bytes, &b, n, key_bits, nullptr)
              : sort<uint32_t, int32_t>(nullptr, *bytes, &b, n, key_bits, nullptr);
}

cudaError_t sort_pairs(void* temp, size_t temp_bytes, SortPairsBuffers* b, int64_t n, int key_bits, bool wide, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  return wide ? sort<uint64_t, int64_t>(temp, temp_bytes, b, n, key_bits, stream)
              : sort<uint32_t, int32_t>(temp, temp_bytes, b, n, key_bits, stream);
}

}  // namespace baracuda::detail
