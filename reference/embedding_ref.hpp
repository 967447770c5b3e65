// Float64 host reference of embedding and embedding_bag, forward and backward, written from the
// definitions in baracuda/ops/embedding.hpp, independently of the kernels. Tables are row-major
// [V, D]; indices are given as int64 positions; bags as [lo, hi) position ranges; no CUDA.
#pragma once

#include <cstdint>
#include <vector>

namespace baracuda::ref {

struct EmbShape {
  int64_t V = 0, D = 0;
  int64_t padding = -1;  // normalized, −1: none
};

// out [N, D]; out-of-range indices give zero rows. Returns the number of out-of-range indices.
int64_t embedding_forward(const EmbShape& s, const std::vector<double>& w, const std::vector<int64_t>& idx,
                          std::vector<double>* out);

// dweight [V, D] from dout [N, D].
void embedding_backward(const EmbShape& s, const std::vector<int64_t>& idx, const std::vector<double>& dout,
                        bool scale_grad_by_freq, std::vector<double>* dweight);

enum class BagMode { kSum, kMean, kMax };

// Bag b covers positions [lo[b], hi[b]). Offsets form (PyTorch's rule, clamped): see the header.
void bag_ranges_from_offsets(const std::vector<int64_t>& offsets, int64_t num_bags, int64_t n, bool include_last,
                             std::vector<int64_t>* lo, std::vector<int64_t>* hi);

// out [B, D], max_idx [B, D] (max mode; −1 for empty bags); psw empty: none.
int64_t embedding_bag_forward(const EmbShape& s, BagMode mode, const std::vector<double>& w,
                              const std::vector<int64_t>& idx, const std::vector<int64_t>& lo,
                              const std::vector<int64_t>& hi, const std::vector<double>& psw, std::vector<double>* out,
                              std::vector<int64_t>* max_idx);

// dweight [V, D] and (when dpsw != nullptr) d(per_sample_weights) [N] from dout [B, D].
void embedding_bag_backward(const EmbShape& s, BagMode mode, const std::vector<double>& w,
                            const std::vector<int64_t>& idx, const std::vector<int64_t>& lo,
                            const std::vector<int64_t>& hi, const std::vector<double>& psw,
                            const std::vector<int64_t>& max_idx, const std::vector<double>& dout,
                            bool scale_grad_by_freq, std::vector<double>* dweight, std::vector<double>* dpsw);

}  // namespace baracuda::ref
