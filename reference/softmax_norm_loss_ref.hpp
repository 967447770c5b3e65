// Float64 host reference of the softmax / normalization / loss rows (issue 44's family), written
// from PyTorch's definitions, independently of any kernel: one row (the normalized axis, or one
// sample's class scores) at a time, forward and backward. No CUDA; no descriptor yet — the
// family's plans will adapt their operands onto these rows. Special values as PyTorch: a row
// whose maximum is -inf (fully masked) gives NaN softmax; NaN propagates.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace baracuda::ref {

// softmax (log = false) or log_softmax (log = true) of one row: exp(x - max) / sum, or
// x - max - log(sum exp(x - max)). softmin is softmax of -x.
std::vector<double> softmax_row(const std::vector<double>& x, bool log);
// PyTorch's _softmax_backward_data / _log_softmax_backward_data from the forward's output y:
// softmax dx = y * (dy - sum(dy * y)); log_softmax dx = dy - exp(y) * sum(dy).
std::vector<double> softmax_backward_row(const std::vector<double>& y, const std::vector<double>& dy, bool log);

// The masks of one line (SoftmaxDescriptor): kKeep removes entries whose value is 0 (a bool
// mask: -inf, dropping a NaN there too), kAdd adds the values; causal removes entries k > q +
// diagonal; zero_rows: a line with every entry -inf after masking gives 0 (log: -inf) instead
// of NaN, and log_softmax's gradient is 0 where y is -inf.
enum class MaskKind { kNone, kKeep, kAdd };
struct LineMask {
  MaskKind kind = MaskKind::kNone;
  std::vector<double> values;
  bool causal = false;
  int64_t q = 0, diagonal = 0;
  bool zero_rows = false;
  bool removed(size_t k) const;  // by the keep mask or the causal limit
};
std::vector<double> apply_line_mask(const std::vector<double>& x, const LineMask& m);
std::vector<double> masked_softmax_row(const std::vector<double>& x, const LineMask& m, bool log);
// batch_norm / group_norm / instance_norm over x = [N, C, S] (row-major, S the merged spatial
// extent): statistics per channel (kBatch), per (n, group of C / G channels) (kGroup), per (n, c)
// (kInstance); y = (x - mean) · rstd · w[c] + b[c] (w / b empty: 1 / 0). training = false: mean =
// running_mean[c], rstd = 1 / sqrt(running_var[c] + eps). training with running stats (rm / rv
// non-empty): the updated running stats (unbiased var; instance: averaged over n). mean / rstd per
// statistic in order (batch c; group n·G + g; instance n·C + c).
enum class ChannelStats { kBatch, kGroup, kInstance };
struct ChannelNormOut {
  std::vector<double> y, mean, rstd, running_mean, running_var;
};
ChannelNormOut channel_norm(ChannelStats kind, const std::vector<double>& x, int64_t N, int64_t C, int64_t S, int64_t G,
                            const std::vector<double>& w, const std::vector<double>& b, const std::vector<double>& rm,
                            const std::vector<double>& rv, bool training, double momentum, double eps);
// The gradients from x, the statistics used (mean / rstd as above) and dy: training, the full
// normalization's; eval (training = false), the statistics held constant.
struct ChannelNormGrad {
  std::vector<double> dx, dw, db;
};
ChannelNormGrad channel_norm_backward(ChannelStats kind, const std::vector<double>& x, int64_t N, int64_t C, int64_t S, int64_t G,
                                      const std::vector<double>& w, const std::vector<double>& mean, const std::vector<double>& rstd,
                                      const std::vector<double>& dy, bool training);
// The statistic of cell (n, c).
int64_t channel_stat(ChannelStats kind, int64_t n, int64_t c, int64_t C, int64_t G);

// softmax_backward_row, then 0 where the mask removed the entry (masked_fill's gradient) and,
// zero_rows, where log_softmax's y is -inf.
std::vector<double> masked_softmax_backward_row(const std::vector<double>& y, const std::vector<double>& dy, const LineMask& m, bool log);

// layer_norm over one row of N: mean, biased variance, rstd = 1 / sqrt(var + eps),
// y = (x - mean) * rstd * w + b (w, b optional: empty = absent).
struct NormRow {
  std::vector<double> y;
  double mean = 0, rstd = 0;  // rms_norm: mean unused, rstd = 1 / sqrt(mean(x^2) + eps)
};
NormRow layer_norm_row(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b, double eps);
// dx of one row, and its contribution to dw / db (added into dw / db when they are non-empty):
// xhat = (x - mean) * rstd, g = dy * w, dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),
// dw += dy * xhat, db += dy.
std::vector<double> layer_norm_backward_row(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& dy,
                                            double mean, double rstd, std::vector<double>* dw, std::vector<double>* db);

// rms_norm (F.rms_norm) over one row: y = x * rstd * w, rstd = 1 / sqrt(mean(x^2) + eps).
NormRow rms_norm_row(const std::vector<double>& x, const std::vector<double>& w, double eps);
// g = dy * w, dx = rstd * (g - x * rstd^2 * mean(g * x)); dw += dy * x * rstd.
std::vector<double> rms_norm_backward_row(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& dy,
                                          double rstd, std::vector<double>* dw);

// One sample of F.cross_entropy / F.nll_loss as CrossEntropyPlan defines it (baracuda/ops/loss.hpp):
// x the class scores (nll: log-probabilities), a class index t (prob empty) or probabilities
// prob; w the class weights (empty: all 1); s label_smoothing, z the z-loss coefficient. A t that
// is ignore_index gives loss 0 and weight 0; a t outside [0, C) otherwise gives loss NaN, weight 0.
struct ClassLossRow {
  double loss = 0, weight = 0, lse = 0;  // weight: w[t] (1 for a probability target)
};
ClassLossRow class_loss_row(const std::vector<double>& x, int64_t t, const std::vector<double>& prob, const std::vector<double>& w,
                            std::optional<int64_t> ignore_index, double s, double z, bool nll);
// d loss / d x of one sample times g (its share of dloss): the loss.hpp formulas.
std::vector<double> class_loss_backward_row(const std::vector<double>& x, int64_t t, const std::vector<double>& prob,
                                            const std::vector<double>& w, std::optional<int64_t> ignore_index, double s, double z,
                                            bool nll, double g);

// One line of F.normalize / torch._weight_norm (baracuda/ops/normalize.hpp): the p-norm (p > 0,
// inf: max |x|), y = x / max(n, eps); weight_norm: w = x · g / n. Backward: dx (and dg) from dy, as
// PyTorch differentiates them (norm_backward's sign · |x|^(p-1) / n^(p-1), inf's ties sharing,
// clamp_min passing at n = eps).
double vector_norm(const std::vector<double>& x, double p);
std::vector<double> normalize_line(const std::vector<double>& x, double p, double eps);
std::vector<double> normalize_line_backward(const std::vector<double>& x, const std::vector<double>& dy, double p, double eps);
std::vector<double> weight_norm_line(const std::vector<double>& v, double g, double* norm);
std::vector<double> weight_norm_line_backward(const std::vector<double>& v, double g, double norm, const std::vector<double>& dw,
                                              double* dg);

// One sample of the row losses (baracuda/ops/row_loss.hpp): op 0 multilabel_soft_margin (x, its
// target row y, weights w: empty = 1), 1 cosine_embedding (x, x2, the target y[0]), 2
// triplet_margin (anchor x, positive x2, negative x3). The gradient: d l / d each row (and d l / d y
// for multilabel) times g, PyTorch's conventions at the kinks.
struct RowLossOptions {
  int op = 0;
  double margin = 0, p = 2, eps = 1e-6;
  bool swap = false;
};
double row_loss(const RowLossOptions& o, const std::vector<double>& x, const std::vector<double>& x2, const std::vector<double>& x3,
                const std::vector<double>& y, const std::vector<double>& w);
struct RowLossGrad {
  std::vector<double> dx, dx2, dx3, dy;
};
RowLossGrad row_loss_grad(const RowLossOptions& o, const std::vector<double>& x, const std::vector<double>& x2,
                          const std::vector<double>& x3, const std::vector<double>& y, const std::vector<double>& w, double g);

// The fused linear cross entropy (baracuda/ops/fused_linear_cross_entropy.hpp): x [S, H], W [V, H],
// b [V] (empty: none), class indices t [S], class weights w [V] (empty: all 1); z = x Wᵀ + b, each
// token through class_loss_row, loss = Σ l / Σ weight (mean; every token ignored: NaN) or Σ l;
// dz = d loss / d z (mean: each token's row over Σ weight; 0 when nothing is kept), dx = dz W,
// dW = dzᵀ x, db = Σ_tokens dz. Row-major vectors.
struct FlceResult {
  std::vector<double> z, lse, dz, dx, dW, db;
  double loss = 0, total_weight = 0;
};
FlceResult fused_linear_cross_entropy(const std::vector<double>& x, const std::vector<double>& W, const std::vector<double>& b,
                                      const std::vector<double>& t, const std::vector<double>& w, int64_t S, int64_t H, int64_t V,
                                      int64_t ignore_index, double s, double z, bool mean);

// cross_entropy over rows of class scores with class-index targets (F.cross_entropy; the label
// smoothing as aten's cross_entropy_loss_label_smoothing, both terms over the same divisor): per row
// loss = (1 - s) * (-w[t] * logp[t]) + s / C * sum_c (-w[c] * logp[c]) (s: label_smoothing;
// w: class weights, empty = all 1); a row whose target is ignore_index gives 0 and no weight.
// reduction: 0 none, 1 mean (divided by the sum of w[t] over the rows kept: NaN when none is),
// 2 sum.
struct CrossEntropy {
  std::vector<double> loss;        // reduction none: per row; else one value
  std::vector<double> row_weight;  // w[t] per row (0 for an ignored row): the mean's divisor terms
};
CrossEntropy cross_entropy(const std::vector<std::vector<double>>& logits, const std::vector<int64_t>& target,
                           const std::vector<double>& weight, std::optional<int64_t> ignore_index, double label_smoothing,
                           int reduction);
// dlogits of every row for the loss's gradient dloss (reduction none: one per row; else one):
// (1 - s) * w[t] * (p - onehot(t)) + s / C * (W * p - w), W = sum(w), scaled by dloss (and by
// 1 / sum of the kept rows' w[t] for the mean); 0 for an ignored row.
std::vector<std::vector<double>> cross_entropy_backward(const std::vector<std::vector<double>>& logits, const std::vector<int64_t>& target,
                                                        const std::vector<double>& weight, std::optional<int64_t> ignore_index,
                                                        double label_smoothing, int reduction, const std::vector<double>& dloss);

// The element-wise losses of PointwiseLossPlan (baracuda/ops/loss.hpp), in its PointwiseLossKind
// order, from PyTorch's definitions: the loss of one element and its derivatives (PyTorch's
// conventions at the kinks: sign(0) = 0; the clamps pass the gradient at equality).
enum class PwLoss { mse, l1, smooth_l1, huber, bce, bce_with_logits, kl_div, poisson_nll, gaussian_nll, soft_margin, hinge_embedding,
                    margin_ranking };
struct PwOptions {
  PwLoss op = PwLoss::mse;
  double beta = 1, delta = 1, margin = 0, eps = 0;
  bool log_input = true, full = false, log_target = false;
};
struct PwElem {
  double x = 0, x2 = 0, y = 0, v = 1, w = 1, pw = 1;  // input, input2, target, var, weight, pos_weight
};
struct PwGrad {
  double dx = 0, dx2 = 0, dy = 0, dv = 0;
};
double pointwise_loss(const PwOptions& o, const PwElem& e);
PwGrad pointwise_loss_grad(const PwOptions& o, const PwElem& e);

// F.local_response_norm along one line of channels (one batch index and spatial position):
// y_c = x_c / d_c^beta, d_c = k + alpha / size · Σ_{j ∈ W(c)} x_j², W(c) = [c - size / 2,
// c + (size - 1) / 2] ∩ [0, C); the backward is the composite's autograd gradient for dy.
std::vector<double> local_response_norm_line(const std::vector<double>& x, int64_t size, double alpha, double beta, double k);
std::vector<double> local_response_norm_line_backward(const std::vector<double>& x, const std::vector<double>& dy, int64_t size,
                                                      double alpha, double beta, double k);

// F.ctc_loss of one sample: lp[t][c] log-probabilities (the first input_length steps used),
// target labels l_1 .. l_L, the extended labels l' = (blank, l_1, blank, ..., l_L, blank); nll =
// -log Σ over the alignments that collapse to the target of Π_t exp(lp[t][path_t]) (input_length
// 0: 0 for an empty target, inf otherwise). grad (dnll = 1) is PyTorch's ctc_loss_backward:
// exp(lp[t][c]) - exp(log Σ_{s: l'_s = c} α_t(s) β_t(s) + nll - lp[t][c]) for t < input_length, 0
// after — the gradient with respect to the logits of a log_softmax (the true ∂nll / ∂lp is it
// minus exp(lp), which log_softmax's backward removes).
struct CtcSample {
  double nll = 0;
  std::vector<std::vector<double>> grad;  // [T][C]
};
CtcSample ctc_loss_sample(const std::vector<std::vector<double>>& lp, int64_t input_length, const std::vector<int64_t>& target,
                          int64_t blank);

}  // namespace baracuda::ref
