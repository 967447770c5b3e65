// cp.async (sm_80+) helpers: asynchronous global -> shared copies of 4, 8 or 16 bytes that a
// thread issues ahead and waits for itself (no barrier needed when a thread reads back only
// what it copied).
#pragma once

namespace baracuda {

// The 32-bit shared-window address of a shared-memory pointer. Kernels that issue many copies
// compute it once and add offsets: converting per copy costs several instructions each.
__device__ __forceinline__ unsigned smem_u32(const void* smem) {
  return static_cast<unsigned>(__cvta_generic_to_shared(smem));
}
template <int B>
__device__ __forceinline__ void cp_async(unsigned sa, const void* gmem) {
  static_assert(B == 4 || B == 8 || B == 16, "cp.async moves 4, 8 or 16 bytes");
  if constexpr (B == 16) asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sa), "l"(gmem) : "memory");
  else asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(sa), "l"(gmem), "n"(B) : "memory");
}
template <int B>
__device__ __forceinline__ void cp_async(void* smem, const void* gmem) {
  cp_async<B>(smem_u32(smem), gmem);
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

}  // namespace baracuda
