// One problem of any op of the op table, ready to run on the GPU and to check against the
// float64 reference: what the contract tests and the benchmark CLI (baracuda_bench --op /
// --batch) share.
//
//   auto plan = AnyPlan::select("rope", "dtype=bf16 seq=64 heads_q=4 head_dim=64");
//   auto c = OpCase::make(*plan, {.layout = Layout::kOffset1, .seed = 7});
//   Status s = c->run(stream);                  // the plan on the case's views and workspace
//   CaseCheck k = c->check();                   // gaps, then every output against the reference
//
// Operands are allocated from the plan's expected_operands() in the chosen layout (each its own
// allocation of exactly the bytes its view reaches), inputs filled with seeded random values (or
// the values the op's reference adapter gives operands that need a domain: indices, offsets),
// outputs and every storage gap poisoned with 0xFF (NaN in every float dtype).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "baracuda/core/any_plan.hpp"
#include "harness/buffer.hpp"

namespace baracuda::harness {

inline constexpr uint8_t kPoison = 0xFF;

// ---------------------------------------------------------------- comparison

struct Mismatch {
  int64_t index = -1;  // first element out of tolerance; -1: none
  double got = 0, want = 0, err = 0, tol = 0;
};
struct Comparison {
  int64_t elements = 0;
  double worst = 0;  // largest err / tol
  Mismatch bad;
  bool ok() const { return bad.index < 0; }
};
// |got − want| <= atol(out) + rounding_eps(out)·|want| + 64·accumulator_eps(acc)·mag + extra for
// every element (mag empty: |want|; extra empty: 0; atol: half of f16's smallest subnormal for
// f16 outputs). NaN equals NaN, an infinity must match exactly. exact: got == want.
Comparison compare_values(const std::vector<double>& got, const std::vector<double>& want, const std::vector<double>& mag,
                          const std::vector<double>& extra, DType out, DType acc, bool exact);

// ---------------------------------------------------------------- reference adapters

struct RefOperand {
  const OperandSpec* spec = nullptr;
  std::vector<double> in;     // the values the op reads (inputs, in-out), logical row-major order
  std::vector<double> want;   // outputs and in-out: the float64 answer (rounded where the op defines it)
  std::vector<double> mag;    // per element of want: the sum of |terms| (empty: |want|)
  std::vector<double> extra;  // per element of want: an op-specific tolerance on top (empty: none)
  bool exact = false;         // compare value for value (integer results, data movement)
  bool given = false;         // `in` was set by the adapter's fill
  double lo = -2, hi = 2;     // range of the random fill of a float input (integers: [-64, 64])
};

// The operands of one call, by name, with the op's descriptor.
class RefCall {
 public:
  RefCall(const AnyPlan& plan, uint64_t seed, std::string data);
  const AnyPlan& plan() const { return *plan_; }
  template <class D>
  const D& desc() const {
    const D* d = plan_->descriptor<D>();
    if (!d) fail_descriptor_type();
    return *d;
  }
  RefOperand& operator[](std::string_view name);  // aborts when the op has no such operand
  RefOperand* find(std::string_view name);
  std::vector<RefOperand>& operands() { return ops_; }
  std::mt19937_64& rng() { return rng_; }
  const std::string& data() const { return data_; }  // the input distribution asked for ("zipf1.1", "same", ...)

 private:
  [[noreturn]] void fail_descriptor_type() const;
  const AnyPlan* plan_;
  std::vector<RefOperand> ops_;
  std::mt19937_64 rng_;
  std::string data_;
};

struct CaseOptions {
  Layout layout = Layout::kContiguous;              // every operand's layout
  std::map<std::string, Layout> views;              // per operand (by name), over `layout`
  std::map<std::string, std::vector<int64_t>> strides;  // per operand: explicit element strides
  bool inplace = false;    // outputs that may alias an input of their shape and dtype are bound to it
  std::map<std::string, std::string> alias;  // output -> the input it is bound to (any: the plan judges)
  bool specials = false;   // ±0, ±inf, NaN at the first, middle and last element of float inputs
  bool reference = true;   // keep full random inputs for check() (off: tiled values, for timing only)
  uint64_t seed = 1;
  std::string data;        // the adapter's input distribution
};

struct Cost {
  double bytes = 0;  // the minimum traffic: each input read once, each output written once
  double flops = 0;  // > 0: the op is compute-bound and measured in TFLOP/s
};

struct OpRef {
  // Sets the inputs that need a domain (indices, offsets, positions ...; `in` and given = true)
  // or a range (lo, hi); the other inputs get seeded random values. Optional.
  void (*fill)(RefCall&) = nullptr;
  // The float64 answer: want (and mag / extra / exact) of every output and in-out operand.
  Status (*compute)(RefCall&) = nullptr;
  // The roofline's numerator for a case laid out by `opt` (aliasing may remove a pass).
  // Optional: each operand's bytes once (in-out twice), no flops.
  Cost (*cost)(const AnyPlan&, const CaseOptions&) = nullptr;
};

// The adapter of an op of the op table (every row has one: harness/ref_<family>.cpp).
const OpRef& op_ref(std::string_view op);
Cost op_cost(const AnyPlan& plan, const CaseOptions& opt = {});

// ---------------------------------------------------------------- a runnable case


struct CaseCheck {
  bool ok = true;
  std::string what;  // the first failure, with the operand and element
  double worst = 0;  // largest err / tol over the outputs
  int64_t elements = 0;
};

class OpCase {
 public:
  static Result<OpCase> make(const AnyPlan& plan, const CaseOptions& opt);
  OpCase(OpCase&&) = default;
  OpCase& operator=(OpCase&&) = default;
  ~OpCase() = default;

  const AnyPlan& plan() const { return *plan_; }
  std::vector<NamedView> views() const;
  Workspace workspace() const { return {ws_.get(), ws_bytes_}; }
  // The plan on the case's views (ws: the case's own workspace unless given).
  Status run(cudaStream_t stream) const;
  Status run(cudaStream_t stream, Workspace ws) const;
  // Every output's (and in-out's) whole storage back to the poison; in-out and aliased inputs
  // back to their input values.
  void reset_outputs();
  // The raw storage of every written operand (for bitwise comparisons).
  std::vector<uint8_t> output_bytes();
  // Downloads, checks that storage gaps still hold the poison, and compares every output with
  // the reference (computed once, on first use).
  CaseCheck check();
  // The input and output views' storage of operand `name` (nullptr when absent).
  StridedBuffer* buffer(std::string_view name);

 private:
  OpCase() = default;
  const AnyPlan* plan_ = nullptr;
  CaseOptions opt_;
  std::vector<std::unique_ptr<StridedBuffer>> bufs_;  // per operand; an in-place output shares its input's
  std::vector<int> buf_of_;                           // operand -> index into bufs_
  std::vector<std::vector<uint8_t>> initial_;          // per buffer: the storage as uploaded
  std::unique_ptr<RefCall> ref_;
  bool computed_ = false;
  Status ref_status_;
  struct CudaFree { void operator()(void* p) const; };
  std::unique_ptr<void, CudaFree> ws_;  // owned: a moved-from case must not free it
  size_t ws_bytes_ = 0;
};

}  // namespace baracuda::harness
