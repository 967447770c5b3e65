// The scalar function of every elementwise op and its derivative, written once.
//
// Compiled into the kernels (nvcc, C = float / double / int64_t; each unit ew_inst_<group>.cu
// through its own group's header) and into the float64 reference (g++, C = double / int64_t).
// Each op is a struct op_<name> with
//   unary:   static C f(C x, const P<C>& p);            static C df(C x, C g, const P<C>& p);
//   binary:  static C f(C a, C b, const P<C>& p);       static void df(C a, C b, C g, const P<C>& p, C& da, C& db);
//   ternary: static C f(C a, C b, C c, const P<C>& p);  static void df(C a, C b, C c, C g, const P<C>& p, C& da, C& db, C& dc);
// (df only for ops with a nonzero grad_mask). p holds the op's parameters after
// ew::kernel_params() (ew_params.hpp) turned the descriptor's Scalars into the form used here.
// Formulas follow PyTorch's CUDA kernels, including their NaN and signed-zero behaviour
// (docs/notes/torch-pointwise-probe.txt holds what PyTorch 2.11 returns on special values).
//
// The code is split by op group (the 5th column of BARACUDA_EW_OPS): ew_ops_common.hpp holds P,
// the helpers several groups share, FlatDepth and the adapters Fwd / Bwd / FrexpBoth;
// ew_ops_<group>.hpp holds that group's op structs and the helpers only they use. A kernel unit
// ew_inst_<group>.cu includes only its own group's header (build time). This header includes
// every group, for the code that needs every op: the float64 reference (reference/
// elementwise_ref.cpp, which dispatches over all of EwOp) and the host tests.
#pragma once

#include "ops/elementwise/ew_ops_common.hpp"
#include "ops/elementwise/ew_ops_unary.hpp"
#include "ops/elementwise/ew_ops_special.hpp"
#include "ops/elementwise/ew_ops_activation.hpp"
#include "ops/elementwise/ew_ops_binary.hpp"
#include "ops/elementwise/ew_ops_logic.hpp"
#include "ops/elementwise/ew_ops_ternary.hpp"
