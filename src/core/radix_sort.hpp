// The library's one key-value radix sort: CUB's stable DeviceRadixSort::SortPairs of (key,
// position) pairs through double buffers, in a narrow form (u32 keys, i32 positions) and a wide
// one (u64 keys, i64 positions, past 2^31 positions or 2^32 keys). The embedding backward and
// the sorted scatter order their terms with it.
#pragma once

#include <driver_types.h>

#include <cstddef>
#include <cstdint>

namespace baracuda::detail {

struct SortPairsBuffers {
  void* keys = nullptr;      // in: the keys; out: the sorted keys (either buffer: see sort_pairs)
  void* keys_alt = nullptr;  // the other key buffer, as large
  void* pos = nullptr;       // in: the values (positions); out: sorted with their keys
  void* pos_alt = nullptr;
};

// CUB's scratch: a bound that needs no GPU (select()) and the exact need (run(), checked
// against the bound).
size_t sort_pairs_bound(int64_t n, bool wide);
cudaError_t sort_pairs_query(int64_t n, int key_bits, bool wide, size_t* bytes);

// Sorts n pairs by their low key_bits bits (stable: equal keys keep their order). On return
// b->keys / b->pos point at the buffers holding the sorted pairs.
cudaError_t sort_pairs(void* temp, size_t temp_bytes, SortPairsBuffers* b, int64_t n, int key_bits, bool wide, cudaStream_t stream);

}  // namespace baracuda::detail
