// What the reduce-to-shape host code hands its kernels (no CUDA headers).
//
// x is viewed as kept axes K (kk of them) and reduced axes R (kr of them), both outer-first.
//   row mode     the innermost x axis is reduced: a warp per (output, split) walks the reduced
//                index space; lanes combine in a fixed shuffle tree.
//   column mode  the innermost axis is kept: a thread per (output, split) walks its share of the
//                reduced index space in order (coalesced across threads); with col_vec > 1 a
//                thread per col_vec adjacent outputs, one 16-byte load per row (same order of
//                additions per output, so the same bits).
// With splits > 1 pass 1 writes partials[split][k] and pass 2 combines them in split order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/reduce.hpp"
#include "core/fast_div.hpp"
#include "core/launch_fn.hpp"

namespace baracuda::red {

struct ReduceGeom {
  int kk = 0, kr = 0;
  int64_t ksize[kMaxRank] = {}, kxs[kMaxRank] = {}, kys[kMaxRank] = {};  // kept: extent, x stride, y stride
  int64_t rsize[kMaxRank] = {}, rxs[kMaxRank] = {};                       // reduced: extent, x stride
  int64_t K = 1, R = 1;
  int64_t splits = 1;
  int64_t r_per_split = 0;
  const void* x = nullptr;
  void* y = nullptr;
  uint8_t y_dtype = 0;
  void* partials = nullptr;  // splits * K accumulators
  bool row_mode = false;
  // column mode: each thread takes col_vec adjacent kept elements (one 16-byte load per row) when
  // the one kept axis is unit-stride and 16-byte aligned at run; set from the shape (one kept and
  // one reduced axis, K a multiple of it), so the splits and the workspace do not depend on it
  int col_vec = 1;
  int split_vec = 1;  // the width choose_splits counts column threads by: from K alone, so select and run agree
  // ReducePlan only: the index output (argmax / max), the op's parameters
  void* y2 = nullptr;
  int64_t kys2[kMaxRank] = {};
  uint8_t y2_dtype = 0;
  double p = 2;           // norm's p
  double correction = 1;  // var / std
};

// Launches pass 1 (and pass 2 when splits > 1).
using ReduceLaunchFn = LaunchFn<ReduceGeom>;
ReduceLaunchFn reduce_find_kernel(DType in, int op, bool f64_acc);

// ReducePlan's launchers (reduce_ops_<group>.cu): kind is red::Kind (reduce_policies.cuh), the
// norms by p; nullptr when the group has no such kind for `in`. The accumulator is f64 for f64
// storage, i64 for integer storage (f32 for logsumexp), f32 otherwise.
ReduceLaunchFn find_sums(DType in, int kind);
// The kernels' kind of a ReducePlan descriptor (red::Kind: ReduceKind's value; the norms by p:
// kNorm0 + 0..5 for p = 0, 1, 2, inf, -inf, other). Defined in reduce.cpp.
inline constexpr int kNormKind0 = 100;  // = red::kNorm0 (reduce_policies.cuh)
int kernel_kind(const ReduceDescriptor& d);
ReduceLaunchFn find_extremes(DType in, int kind);
ReduceLaunchFn find_stats(DType in, int kind);

// ReduceBackwardPlan's pass, over x's axes merged where every view allows (finish_backward):
// rows x inner, the innermost axis walked in units of 8 elements (4 for f64). A block is tile_units threads
// along a row (one unit each) times rows_per_tile rows; blocks are cgroups column groups times
// row groups, each walking its rows (and, past cgroups, its column tiles) in order. Strides of
// the per-output views (y, y2, dy, dy2, indices, pre-pass values) are in keepdim form: 0 on the
// reduced axes; rmul gives the element's reduced index (row-major over the reduced axes; 0 on
// kept axes).
struct ReduceBwdGeom {
  int rank = 0;
  int64_t numel = 0;
  int64_t size[kMaxRank] = {}, xs[kMaxRank] = {}, dxs[kMaxRank] = {}, ys[kMaxRank] = {}, dys[kMaxRank] = {},
          ixs[kMaxRank] = {}, ms[kMaxRank] = {}, rmul[kMaxRank] = {};
  const void* x = nullptr;
  const void* y = nullptr;
  const void* y2 = nullptr;  // aminmax: the max (y2 and dy2 share y's and dy's strides)
  const void* dy = nullptr;
  const void* dy2 = nullptr;  // var_mean / std_mean: the mean's gradient; aminmax: the max's
  const void* indices = nullptr;
  // per-output values of the pre-pass (f32; f64 for f64 x), at ms: var / std / var_mean /
  // std_mean the mean; amax / amin / norm ±inf the count of extremes (aminmax: the min's in
  // mean, the max's in aux2); nanmean the count of non-NaN; prod the product of the nonzeros
  // (mean) and the count of zeros (aux2)
  const void* mean = nullptr;
  const void* aux2 = nullptr;
  void* dx = nullptr;
  uint8_t y_dtype = 0;  // y, y2, dy and dy2
  int kind = 0;         // red::Kind (the norms by p)
  double p = 2, inv_n = 0, dof = 0;
  // set by finish_backward (reduce_geometry.cpp)
  int64_t rows = 1, inner = 1, ctiles = 1, cgroups = 1;
  int tile_units = 1, rows_per_tile = 1;
  bool small = false;  // rows < 2^31: the outer axes' divisions by div[]
  detail::FastDiv div[kMaxRank];
  // 16-byte accesses of a whole unit: unit stride along inner, 16-byte aligned rows
  bool vec_x = false, vec_dx = false, vec_y = false, vec_dy = false, vec_ix = false, vec_m = false;
};
using ReduceBwdLaunchFn = LaunchFn<ReduceBwdGeom>;
// Merges x's axes where every view's strides allow, then sets the tiling and the vector flags
// (the pointers and strides must be final; x is x's dtype).
void finish_backward(ReduceBwdGeom* g, DType x);
// Whether the pass can take var / std's mean itself (finished geometry): only the inner axis is
// reduced and a row fills a block (tile_units 256); ReduceBackwardPlan then runs no pre-pass and
// leaves mean null.
bool fused_mean(const ReduceBwdGeom& g);
// The broadcast pass of the kernels' kind (red::Kind, the norms by p) for x's dtype (f32 / f16 /
// bf16 / f64); nullptr when there is none.
ReduceBwdLaunchFn find_backward(DType x, int kind);
// The backward's pre-pass over x (engine kernels writing y = the per-output value, y2 = prod's
// zero count): kind is red::Kind (kAmax, kAmin, kNormInf, kNormNegInf: the extremes' count;
// kNanMean: the non-NaN count; kProd: the nonzeros' product and the zero count; kMean: the mean).
ReduceLaunchFn find_backward_prepass(DType x, int kind);

// The geometry of x viewed as kept x reduced axes (reduce_geometry.cpp), from the shapes: out
// is x's shape with 1 on the reduced axes (right-aligned; leading missing axes reduced). Strides
// come from x and y when given (run), shape-only otherwise (select). y2: the index output.
struct ReduceShape {
  DType in_dtype = DType::f32;
  int in_rank = 0;
  const int64_t* in_shape = nullptr;
  int out_rank = 0;
  const int64_t* out_shape = nullptr;
};
void build_geometry(const ReduceShape& d, const TensorLayout* x, const TensorLayout* y, ReduceGeom* g);
void choose_splits(ReduceGeom* g);
// Pass 2 by a block per output (few outputs, many splits: an all-reduce) rather than by tiles of
// 32 outputs x 8 split groups; a function of the shape, so the order of the additions is too.
inline bool combine_per_block(const ReduceGeom& g) { return g.K < 64 && g.splits > 32; }
// Bytes of one split partial of ReduceToShapePlan's kinds (sum / prod / max / min): f32 sums
// keep f64 partials (the engine's tree type)
inline constexpr size_t kPartialBytes = 8;
// Bytes of split partials select() reserves for g (shape-only): the larger split count of the two
// modes, since the run-time layout may pick the other; an error past 2^63 bytes.
Result<size_t> partials_bytes(std::string_view op, const ReduceGeom& g, size_t acc_bytes);

}  // namespace baracuda::red
