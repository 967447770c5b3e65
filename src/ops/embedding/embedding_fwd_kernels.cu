// Embedding forward kernels: the row gather and the bag pooling (sum / mean / max).
#include "ops/embedding/embedding_common.cuh"

namespace baracuda::detail {
namespace emb {

// out[p, chunk] = weight[idx[p], chunk]: a G-lane group per (position, chunk of
// kGatherUnroll·G vectors), every lane's kGatherUnroll loads issued before its stores.
template <class T, int VEC>
__global__ void __launch_bounds__(kEmbThreads) gather_kernel(const EmbParams p) {
  constexpr int U = kGatherUnroll;
  const T* w = static_cast<const T*>(p.weight);
  T* out = static_cast<T*>(p.out);
  for_each_item(p.N * p.chunks, p.group, [&](int64_t item, int lane) {
    const int64_t pos = item / p.chunks, chunk = item - pos * p.chunks;
    const int64_t raw = load_index(p.idx, p.idx64, pos_offset(p.idx_map, pos));
    const bool ok = raw >= 0 && raw < p.V;
    if (chunk == 0 && lane == 0) count_flag(p.invalid, !ok);
    const int64_t wrow = ok ? raw * p.w_s0 : 0, orow = pos_offset(p.row_map, pos);
    acc_t<T> v[U][VEC];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t col = ((chunk * U + u) * p.group + lane) * static_cast<int64_t>(VEC);
#pragma unroll
      for (int e = 0; e < VEC; ++e) v[u][e] = 0;
      if (ok && col < p.D) load_cols<T, VEC>(w, wrow, col, p.w_s1, v[u]);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t col = ((chunk * U + u) * p.group + lane) * static_cast<int64_t>(VEC);
      if (col < p.D) store_cols<T, VEC>(out, orow, col, p.row_s1, v[u]);
    }
  });
}

// One bag × column chunk per G-lane group. The group reads G indices at a time (one per lane),
// the next G while it gathers the current ones, and walks them in position order with kUnroll
// raw row vectors in flight per lane. Sized by measurement (H200, [10M, 128], bags of 32):
// 3 blocks/SM and 4 rows in flight (80 registers, <= 4 bytes spilled in sum mode) beat 2 blocks × 8 rows
// (bf16 69.6 %, f32 82.1 % of copy), 4 × 4 (70.2 / 85.2 %, spills) and 5 × 4, 4 × 6, 3 × 8
// (all spill) — bf16 80.2 %, f32 91.8 %. The random row gather wants rows in flight per SM
// at few registers each.
template <class T, int VEC, bool kMax>
__global__ void __launch_bounds__(kEmbThreads, 3) bag_kernel(const EmbParams p) {
  constexpr int kUnroll = 4;  // raw row vectors in flight per lane
  using A = acc_t<T>;
  const T* psw = static_cast<const T*>(p.psw);
  const int G = p.group;
  const unsigned gm = group_mask(G);
  for_each_item(p.B * p.chunks, G, [&](int64_t item, int lane) {
    const int64_t bag = item / p.chunks, chunk = item - bag * p.chunks;
    const int64_t col = (chunk * G + lane) * static_cast<int64_t>(VEC);
    const bool active = col < p.D;
    // This lane's column of table row 0; row r starts r·w_s0 elements further.
    const T* wcol = static_cast<const T*>(p.weight) + (VEC == 1 ? col * p.w_s1 : col);
    int64_t lo, hi;
    bag_range(p, bag, &lo, &hi);
    // Table row (< 2^31; −1: skipped) and weight of position q, read by the lane that owns it.
    auto fetch = [&](int64_t q, int* row, A* wt) {
      *row = -1;
      *wt = 1;
      if (q >= hi) return;
      const int64_t raw = load_index(p.idx, p.idx64, pos_offset(p.idx_map, q));
      const bool in_range = raw >= 0 && raw < p.V;
      count_flag(p.invalid, !in_range && chunk == 0);
      if (in_range && raw != p.padding) *row = static_cast<int>(raw);
      if (psw != nullptr) *wt = to_acc(psw[pos_offset(p.psw_map, q)]);
    };
    A acc[VEC];
    int best_idx[kMax ? VEC : 1];
#pragma unroll
    for (int e = 0; e < VEC; ++e) acc[e] = 0;
    if constexpr (kMax)
#pragma unroll
      for (int e = 0; e < VEC; ++e) best_idx[e] = -1;
    int nvalid = 0;  // valid positions seen (a bag has < 2^31)
    int next_row;
    A next_w;
    fetch(lo + lane, &next_row, &next_w);
    for (int64_t base = lo; base < hi; base += G) {
      const int my_row = next_row;
      const A my_w = next_w;
      fetch(base + G + lane, &next_row, &next_w);  // in flight while this step gathers
      const int n = static_cast<int>(hi - base < G ? hi - base : G);
      for (int k = 0; k < n; k += kUnroll) {
        int r[kUnroll];
        RawCols<T, VEC> v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          r[u] = gshfl(gm, my_row, (k + u) & (G - 1), G);
          if (k + u >= n) r[u] = -1;
          if (r[u] >= 0 && active) v[u].load(wcol, static_cast<int64_t>(r[u]) * p.w_s0, 0, p.w_s1);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const A wt = gshfl(gm, my_w, (k + u) & (G - 1), G);
          if (r[u] < 0) continue;
#pragma unroll
          for (int e = 0; e < VEC; ++e) {
            const A x = v[u].get(e);
            if constexpr (kMax) {
              if (nvalid == 0 || x > acc[e]) acc[e] = x, best_idx[e] = r[u];
            } else {
              acc[e] = fma(wt, x, acc[e]);
            }
          }
          ++nvalid;
        }
      }
    }
    if (!active) return;
    if (p.kind == EmbKind::kMean && nvalid > 0)
#pragma unroll
      for (int e = 0; e < VEC; ++e) acc[e] = acc[e] / static_cast<A>(nvalid);
    store_cols<T, VEC>(static_cast<T*>(p.out), pos_offset(p.row_map, bag), col, p.row_s1, acc);
    if constexpr (kMax)
#pragma unroll
      for (int e = 0; e < VEC; ++e) store_index(p.max_idx, p.idx64, bag * p.mi_s0 + (col + e) * p.mi_s1, best_idx[e]);
  });
}

struct Forward {
  template <class T, int VEC>
  static cudaError_t fn(const EmbParams& p, cudaStream_t stream);
};

template <class T, int VEC>
cudaError_t Forward::fn(const EmbParams& p, cudaStream_t stream) {
  const dim3 block(kEmbThreads);
  if (p.kind == EmbKind::kEmbedding) {
    if (p.N * p.D == 0) return cudaSuccess;
    return launch_kernel(gather_kernel<T, VEC>, dim3(grid_for(p.N * p.chunks, p.group)), block, 0, stream, p);
  }
  if (p.B * p.D == 0) return cudaSuccess;
  auto kernel = p.kind == EmbKind::kMax ? bag_kernel<T, VEC, true> : bag_kernel<T, VEC, false>;
  return launch_kernel(kernel, dim3(grid_for(p.B * p.chunks, p.group)), block, 0, stream, p);
}

}  // namespace emb

EmbLaunchFn emb_forward_launcher(DType t, bool vector) { return emb::launcher_for<emb::Forward>(t, vector); }

}  // namespace baracuda::detail
