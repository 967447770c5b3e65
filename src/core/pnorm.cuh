// The p-norm pieces of the row families (normalize, the triplet margin loss): a line's
// accumulation Σ |x|^p (max |x| for p = inf, NaN kept), the norm of it, and the derivative
// d ||x||_p / d x_i as PyTorch's norm_backward gives it. Device code only.
#pragma once

namespace baracuda::pnorm {

enum PKind : int { kP2 = 0, kP1, kPInf, kPGeneral };

__device__ __forceinline__ int kind(double p) { return p == 2.0 ? kP2 : p == 1.0 ? kP1 : p > 1.7e308 ? kPInf : kPGeneral; }

// max with NaN kept (a NaN element makes the inf-norm NaN, as torch.linalg.vector_norm)
template <class C>
__device__ __forceinline__ C nan_max(C a, C b) {
  return (b > a || b != b) ? b : a;
}

// acc combined with the term of v (acc starts at 0)
template <class C>
__device__ __forceinline__ C accumulate(int pk, C acc, C v, C p) {
  const C a = fabs(v);
  switch (pk) {
    case kP2: return acc + v * v;
    case kP1: return acc + a;
    case kPInf: return nan_max(acc, a);
    default: return acc + pow(a, p);
  }
}

template <class C>
__device__ __forceinline__ C norm_of(int pk, C acc, C p) {
  switch (pk) {
    case kP2: return sqrt(acc);
    case kP1:
    case kPInf: return acc;
    default: return pow(acc, C(1) / p);
  }
}

// d n / d v for an element v of a line of norm n: sign(v) (|v| / n)^(p-1) (p = 2: v / n; 0 at
// v = 0 and for n = 0); p = inf: sign(v) / ties where |v| = n (ties: how many).
template <class C>
__device__ __forceinline__ C derivative(int pk, C v, C n, C p, C ties) {
  const C a = fabs(v), sg = v > C(0) ? C(1) : v < C(0) ? C(-1) : C(0);
  if (n == C(0)) return C(0);
  switch (pk) {
    case kP2: return v / n;
    case kP1: return sg;
    case kPInf: return a == n ? sg / ties : C(0);
    default: return a == C(0) ? C(0) : sg * pow(a / n, p - C(1));
  }
}

}  // namespace baracuda::pnorm
