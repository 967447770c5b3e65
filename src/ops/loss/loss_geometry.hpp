// What CrossEntropyPlan / CrossEntropyBackwardPlan hand their kernels (no CUDA headers).
//
// The input is viewed as `samples` lines of C class scores (class stride cs[v] in the views that
// have a class axis: input, a probability target, dinput); the sample axes (every axis but the
// class axis, outer-first, unmerged) give a sample's offset in every view. Paths:
//   kWarpRows   class axis unit-stride in every class view: a warp per sample, kRowWarps per block
//   kBlockRows  ... a block of kThreads per sample (C > kWarpMaxC)
//   kColumns    otherwise: a thread per sample, adjacent samples on adjacent threads
#pragma once

#include <cstddef>
#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/tensor.hpp"
#include "core/launch_fn.hpp"

namespace baracuda::loss {

inline constexpr int kThreads = 256;
inline constexpr int kRowWarps = 8;
inline constexpr int64_t kWarpMaxC = 1024;
inline constexpr int kFinishThreads = 1024;
inline constexpr int64_t kMaxGrid = int64_t{132} * 16;  // grid-stride kernels' blocks at most

enum Path : int { kWarpRows = 0, kBlockRows = 1, kColumns = 2 };
// Views: with a class axis (kX, kT for a probability target, kDx) and per sample (kT for a class
// index, kLoss with reduction none, kLse, kDloss with reduction none).
enum View : int { kX = 0, kT, kDx, kLoss, kLse, kDloss, kViews };

struct LossGeom {
  int64_t samples = 0, C = 0;
  int ko = 0;                         // sample axes
  int64_t osize[kMaxRank] = {};       // their extents
  int64_t os[kViews][kMaxRank] = {};  // per view: their strides
  int64_t cs[kViews] = {};            // per view: the class stride
  const void* in[kViews] = {};        // read views (null: absent)
  void* out[kViews] = {};             // written views
  const void* w = nullptr;            // class weights, stride ws
  int64_t ws = 1;
  void* partials = nullptr;           // reduction mean / sum: samples losses, then samples weights
  void* scalar_loss = nullptr;        // ... the reduced loss (dtype) and total_weight (accumulator)
  void* total_weight = nullptr;
  const void* tw_in = nullptr;        // backward: total_weight (mean)
  int kind = 0;                       // ClassLossKind
  bool prob = false;                  // probability target
  bool index64 = true;                // i64 class index (else i32)
  int reduction = 1;                  // LossReduction
  int64_t ignore_index = -100;
  double smoothing = 0.0, z = 0.0;
  int path = kColumns;
  bool vec = false;  // 16-byte pieces in every class view
  // What the forward launcher runs (FusedLinearCrossEntropyPlan runs the stages apart: the
  // samples chunk by chunk, the finish once over every chunk's partials): kSamples the
  // per-sample kernel, kFinish (reduction mean / sum) the sum of the partials, kPrep only the
  // prep kernel (below).
  int stages = kSamples | kFinish;
  int64_t part_stride = 0;  // a sample's weight sits part_stride after its loss (0: samples)
  // kPrep: total_weight = Σ over the samples kept and in range of w_t (the finish's Σ w, in the
  // same order: the same bits), *one = 1 and ones[0 .. n_ones) = 1, all of the input's dtype.
  void* one = nullptr;
  void* ones = nullptr;
  int64_t n_ones = 0;
  static constexpr int kSamples = 1, kFinish = 2, kPrep = 4;
};
using LossLaunchFn = LaunchFn<LossGeom>;

// The launcher of the input's dtype (forward or backward); nullptr when there is none.
LossLaunchFn find_cross_entropy(DType x, bool backward);

// ---------------------------------------------------------------- row losses
// RowLossPlan / RowLossBackwardPlan: N samples (rows) of D elements. Views: the row inputs (kRA
// input / input1 / anchor, kRB input2 / positive, kRC negative), the target (a row for
// multilabel; one value per sample for cosine: s = 0), the gradients of the four, and per sample
// loss / dloss (reduction none: s = 0). os: a view's sample stride; s: its element stride. Paths
// as cross_entropy's (kWarpRows, kBlockRows with every row view unit-stride; else kColumns).
enum RowView : int { kRA = 0, kRB, kRC, kRT, kRDa, kRDb, kRDc, kRDt, kRLoss, kRDloss, kRowViews };

struct RowLossGeom {
  int64_t N = 0, D = 0;
  int64_t os[kRowViews] = {};
  int64_t s[kRowViews] = {};
  void* p[kRowViews] = {};      // data (null: absent)
  const void* w = nullptr;      // multilabel's class weights, stride ws
  int64_t ws = 1;
  int op = 0, reduction = 1;    // RowLossKind, LossReduction
  double margin = 0, p_norm = 2, eps = 1e-6;
  bool swap = false;
  void* partials = nullptr;     // mean / sum: N accumulators
  void* scalar_loss = nullptr;
  int path = kColumns;
};
using RowLossLaunchFn = LaunchFn<RowLossGeom>;
RowLossLaunchFn find_row_loss(DType x, bool backward);

// ---------------------------------------------------------------- scaling
// buf[i][0 .. n[i]) *= *scale for every i with buf[i] set (contiguous arrays of one float dtype,
// scale a scalar of it; the fused linear cross entropy's backward).
struct ScaleGeom {
  const void* scale = nullptr;
  void* buf[3] = {};
  int64_t n[3] = {};
};
using ScaleLaunchFn = LaunchFn<ScaleGeom>;
ScaleLaunchFn find_scale_by(DType x);

// ---------------------------------------------------------------- pointwise losses
// Every view has the input's shape (size[0..rank)) with its own strides; flat: all of them
// row-major contiguous (element i at offset i). Forward: `blocks` blocks of kThreads, block b
// adding elements b·kThreads + tid, + blocks·kThreads, ... into partials[b] (reduction) or
// writing loss (none); finish: the partials in order, over div.
enum PwView : int { kPwIn = 0, kPwIn2, kPwTgt, kPwVar, kPwW, kPwPw, kPwDl, kPwOut, kPwOut2, kPwDt, kPwDv, kPwViews };

struct PwGeom {
  int64_t n = 0;
  int rank = 0;
  int64_t size[kMaxRank] = {};
  int64_t st[kPwViews][kMaxRank] = {};
  const void* in[kPwViews] = {};
  void* out[kPwViews] = {};
  bool flat = false;
  bool vec = false;  // flat and every view 16-byte aligned: 16-byte pieces
  int op = 0, reduction = 1;
  double beta = 1, delta = 1, margin = 0, eps = 0, div = 1;  // div: numel (mean), shape[0] (batchmean), else 1
  bool log_input = true, full = false, log_target = false;
  void* partials = nullptr;  // reduction: `blocks` accumulators
  void* scalar_loss = nullptr;
  int64_t blocks = 1;
};
using PwLaunchFn = LaunchFn<PwGeom>;
inline constexpr int64_t kPwElemsPerBlock = 4096;
inline constexpr int64_t kPwMaxBlocks = 1024;

PwLaunchFn find_pointwise_loss(DType x, bool backward);

}  // namespace baracuda::loss
