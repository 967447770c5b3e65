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
};
using LossLaunchFn = LaunchFn<LossGeom>;

// The launcher of the input's dtype (forward or backward); nullptr when there is none.
LossLaunchFn find_cross_entropy(DType x, bool backward);

}  // namespace baracuda::loss
