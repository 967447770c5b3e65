#include "embedding_ref.hpp"

#include <algorithm>

namespace baracuda::ref {

namespace {

bool in_range(const EmbShape& s, int64_t r) { return r >= 0 && r < s.V; }
bool valid(const EmbShape& s, int64_t r) { return in_range(s, r) && r != s.padding; }
size_t at(int64_t row, int64_t D, int64_t d) { return static_cast<size_t>(row * D + d); }

// Frequency of each row over the valid positions that lie in some bag.
std::vector<double> counts(const EmbShape& s, const std::vector<int64_t>& idx, const std::vector<char>& in_bag) {
  std::vector<double> c(static_cast<size_t>(s.V), 0.0);
  for (size_t p = 0; p < idx.size(); ++p)
    if (in_bag[p] && valid(s, idx[p])) c[static_cast<size_t>(idx[p])] += 1;
  return c;
}

}  // namespace

int64_t embedding_forward(const EmbShape& s, const std::vector<double>& w, const std::vector<int64_t>& idx,
                          std::vector<double>* out) {
  const int64_t N = static_cast<int64_t>(idx.size());
  out->assign(static_cast<size_t>(N * s.D), 0.0);
  int64_t bad = 0;
  for (int64_t p = 0; p < N; ++p) {
    if (!in_range(s, idx[p])) {
      ++bad;
      continue;
    }
    for (int64_t d = 0; d < s.D; ++d) (*out)[at(p, s.D, d)] = w[at(idx[p], s.D, d)];
  }
  return bad;
}

void embedding_backward(const EmbShape& s, const std::vector<int64_t>& idx, const std::vector<double>& dout,
                        bool scale_grad_by_freq, std::vector<double>* dweight) {
  dweight->assign(static_cast<size_t>(s.V * s.D), 0.0);
  const std::vector<double> c = counts(s, idx, std::vector<char>(idx.size(), 1));
  for (size_t p = 0; p < idx.size(); ++p) {
    if (!valid(s, idx[p])) continue;
    const double f = scale_grad_by_freq ? 1.0 / c[static_cast<size_t>(idx[p])] : 1.0;
    for (int64_t d = 0; d < s.D; ++d) (*dweight)[at(idx[p], s.D, d)] += f * dout[at(static_cast<int64_t>(p), s.D, d)];
  }
}

void bag_ranges_from_offsets(const std::vector<int64_t>& offsets, int64_t num_bags, int64_t n, bool include_last,
                             std::vector<int64_t>* lo, std::vector<int64_t>* hi) {
  auto clampn = [&](int64_t v) { return std::clamp<int64_t>(v, 0, n); };
  lo->assign(static_cast<size_t>(num_bags), 0);
  hi->assign(static_cast<size_t>(num_bags), 0);
  for (int64_t b = 0; b < num_bags; ++b) {
    const int64_t l = clampn(offsets[static_cast<size_t>(b)]);
    const int64_t h = (b + 1 < num_bags || include_last) ? clampn(offsets[static_cast<size_t>(b + 1)]) : n;
    (*lo)[static_cast<size_t>(b)] = l;
    (*hi)[static_cast<size_t>(b)] = std::max(l, h);
  }
}

int64_t embedding_bag_forward(const EmbShape& s, BagMode mode, const std::vector<double>& w,
                              const std::vector<int64_t>& idx, const std::vector<int64_t>& lo,
                              const std::vector<int64_t>& hi, const std::vector<double>& psw, std::vector<double>* out,
                              std::vector<int64_t>* max_idx) {
  const int64_t B = static_cast<int64_t>(lo.size()), D = s.D;
  out->assign(static_cast<size_t>(B * D), 0.0);
  if (mode == BagMode::kMax) max_idx->assign(static_cast<size_t>(B * D), -1);
  int64_t bad = 0;
  for (int64_t b = 0; b < B; ++b) {
    int64_t n = 0;
    for (int64_t p = lo[static_cast<size_t>(b)]; p < hi[static_cast<size_t>(b)]; ++p) {
      const int64_t r = idx[static_cast<size_t>(p)];
      if (!in_range(s, r)) ++bad;
      if (!valid(s, r)) continue;
      for (int64_t d = 0; d < D; ++d) {
        const double v = w[at(r, D, d)];
        double& o = (*out)[at(b, D, d)];
        if (mode == BagMode::kMax) {
          if (n == 0 || v > o) o = v, (*max_idx)[at(b, D, d)] = r;  // first valid, then strictly greater
        } else {
          o += (psw.empty() ? 1.0 : psw[static_cast<size_t>(p)]) * v;
        }
      }
      ++n;
    }
    if (mode == BagMode::kMean && n > 0)
      for (int64_t d = 0; d < D; ++d) (*out)[at(b, D, d)] /= static_cast<double>(n);
  }
  return bad;
}

void embedding_bag_backward(const EmbShape& s, BagMode mode, const std::vector<double>& w,
                            const std::vector<int64_t>& idx, const std::vector<int64_t>& lo,
                            const std::vector<int64_t>& hi, const std::vector<double>& psw,
                            const std::vector<int64_t>& max_idx, const std::vector<double>& dout,
                            bool scale_grad_by_freq, std::vector<double>* dweight, std::vector<double>* dpsw) {
  const int64_t B = static_cast<int64_t>(lo.size()), D = s.D, N = static_cast<int64_t>(idx.size());
  dweight->assign(static_cast<size_t>(s.V * D), 0.0);
  if (dpsw != nullptr) dpsw->assign(static_cast<size_t>(N), 0.0);
  std::vector<char> in_bag(static_cast<size_t>(N), 0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t p = lo[static_cast<size_t>(b)]; p < hi[static_cast<size_t>(b)]; ++p) in_bag[static_cast<size_t>(p)] = 1;
  const std::vector<double> c = counts(s, idx, in_bag);
  for (int64_t b = 0; b < B; ++b) {
    if (mode == BagMode::kMax) {
      for (int64_t d = 0; d < D; ++d) {
        const int64_t r = max_idx[at(b, D, d)];
        if (valid(s, r)) (*dweight)[at(r, D, d)] += dout[at(b, D, d)];
      }
      continue;
    }
    int64_t n = 0;
    for (int64_t p = lo[static_cast<size_t>(b)]; p < hi[static_cast<size_t>(b)]; ++p) n += valid(s, idx[static_cast<size_t>(p)]);
    for (int64_t p = lo[static_cast<size_t>(b)]; p < hi[static_cast<size_t>(b)]; ++p) {
      const int64_t r = idx[static_cast<size_t>(p)];
      if (!valid(s, r)) continue;
      double f = mode == BagMode::kMean ? 1.0 / static_cast<double>(n) : (psw.empty() ? 1.0 : psw[static_cast<size_t>(p)]);
      if (scale_grad_by_freq) f /= c[static_cast<size_t>(r)];
      double dot = 0;  // d per_sample_weights: only then is the table (w) given
      for (int64_t d = 0; d < D; ++d) {
        (*dweight)[at(r, D, d)] += f * dout[at(b, D, d)];
        if (dpsw != nullptr) dot += dout[at(b, D, d)] * w[at(r, D, d)];
      }
      if (dpsw != nullptr) (*dpsw)[static_cast<size_t>(p)] = dot;
    }
  }
}

}  // namespace baracuda::ref
