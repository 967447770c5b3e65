// The contract suite: every row of the op table, over the CI problems of bench/problems/ci, in
// three views (contiguous, offset by one element, strided: padded rows, or step 2 for rank <= 1),
// checked against the float64 reference within the tolerance the plan's precision_guarantee()
// implies (harness::compare_values), with poisoned gaps. On the contiguous view also: bitwise
// equality over reruns where determinism is promised, CUDA-graph replay equal to eager, a
// workspace one byte short or misaligned rejected, and an output partially overlapping an input
// rejected before any launch. A row gets all of this by having CI problem lines; the families'
// own device tests keep only what is special to them.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "baracuda/baracuda.hpp"
#include "device/device_harness.hpp"
#include "harness/op_case.hpp"
#include "harness/problems.hpp"

using namespace baracuda;
using namespace baracuda::test;

namespace {

struct RowStats {
  int problems = 0, failed = 0, views = 0, rejected = 0, reruns = 0, replays = 0, ws_checks = 0, overlap_checks = 0;
  int64_t elements = 0;
  double worst = 0;
  std::string worst_at;
};
std::map<std::string, RowStats> g_rows;

enum class View { kContiguous, kOffset1, kStrided };
const char* view_name(View v) { return v == View::kContiguous ? "contiguous" : v == View::kOffset1 ? "offset1" : "strided"; }

harness::CaseOptions options_for(const harness::ProblemLine& p, const AnyPlan& plan, View v) {
  harness::CaseOptions o = p.opt;
  if (v == View::kOffset1) o.layout = harness::Layout::kOffset1;
  if (v == View::kStrided)
    for (const OperandSpec& s : plan.operands())
      if (!o.views.count(std::string(s.name)))
        o.views[std::string(s.name)] = s.rank >= 2 ? harness::Layout::kPaddedRows : harness::Layout::kStep2;
  return o;
}

// A status that may reject a non-contiguous view: the path needs an alignment or a unit stride.
bool clean_rejection(const Status& s) {
  return s.code() == StatusCode::kMisalignedOperand || s.code() == StatusCode::kUnsupported ||
         (s.code() == StatusCode::kInvalidProblem && s.message().find("stride") != std::string::npos);
}

void run_problem(const harness::ProblemLine& p) {
  const std::string repro = p.op + " " + p.problem + (p.options.empty() ? "" : " " + p.options) + "  (" + p.where + ")";
  auto plan = AnyPlan::select(p.op, p.problem);
  ASSERT_TRUE(plan.ok()) << repro << ": " << plan.status().to_string();
  RowStats& S = g_rows[p.op];
  ++S.problems;
  for (View v : {View::kContiguous, View::kOffset1, View::kStrided}) {
    SCOPED_TRACE(std::string(view_name(v)) + " view: " + repro);
    auto c = harness::OpCase::make(*plan, options_for(p, *plan, v));
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    const Status st = c->run(nullptr);
    if (!st.ok() && v != View::kContiguous && clean_rejection(st)) {
      ++S.rejected;  // e.g. a GEMM whose pointer_alignment an offset view breaks
      continue;
    }
    ASSERT_TRUE(st.ok()) << st.to_string();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const harness::CaseCheck k = c->check();
    ASSERT_TRUE(k.ok) << k.what;
    ++S.views;
    S.elements += k.elements;
    if (k.worst > S.worst) S.worst = k.worst, S.worst_at = std::string(view_name(v)) + ": " + repro;
    if (v != View::kContiguous) continue;

    // determinism: reruns on re-poisoned outputs give the same bits
    const std::vector<uint8_t> first = c->output_bytes();
    if (plan->precision_guarantee().determinism == Determinism::kRunToRun)
      for (int r = 0; r < 5; ++r) {
        c->reset_outputs();
        ASSERT_TRUE(c->run(nullptr).ok());
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        ASSERT_EQ(c->output_bytes(), first) << "rerun " << r << " differs (the plan promises run-to-run determinism)";
        ++S.reruns;
      }

    // graph capture: run() captured in global mode, replayed, equals eager
    cudaStream_t stream;
    BARACUDA_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    c->reset_outputs();
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    BARACUDA_CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    const Status cap = c->run(stream);
    BARACUDA_CUDA_OK(cudaStreamEndCapture(stream, &graph));
    ASSERT_TRUE(cap.ok()) << "run() under capture: " << cap.to_string();
    BARACUDA_CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
    for (int r = 0; r < 2; ++r) {
      c->reset_outputs();
      BARACUDA_CUDA_OK(cudaGraphLaunch(exec, stream));
      BARACUDA_CUDA_OK(cudaStreamSynchronize(stream));
      const std::vector<uint8_t> replay = c->output_bytes();
      if (plan->precision_guarantee().determinism == Determinism::kRunToRun) EXPECT_EQ(replay, first) << "graph replay " << r;
      else EXPECT_TRUE(c->check().ok) << "graph replay " << r << ": " << c->check().what;
      ++S.replays;
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);

    // workspace: one byte short, and misaligned, are refused
    const Workspace ws = c->workspace();
    if (ws.bytes > 0) {
      const Status small = c->run(nullptr, Workspace{ws.ptr, ws.bytes - 1});
      EXPECT_EQ(small.code(), StatusCode::kWorkspaceTooSmall) << small.to_string();
      const Status mis = c->run(nullptr, Workspace{static_cast<char*>(ws.ptr) + 1, ws.bytes - 1});
      EXPECT_TRUE(mis.code() == StatusCode::kMisalignedOperand || mis.code() == StatusCode::kWorkspaceTooSmall) << mis.to_string();
      ++S.ws_checks;
    }

    // an output overlapping an input by all but one element is refused before any launch
    const std::vector<NamedView> views = c->views();
    const OperandSpecs& specs = plan->operands();
    for (size_t o = 0; o < specs.size(); ++o) {
      if (specs[o].role != OperandRole::kOut || specs[o].numel() < 2) continue;
      for (size_t i = 0; i < specs.size(); ++i) {
        if (specs[i].role == OperandRole::kOut || specs[i].numel() < 2) continue;
        std::vector<NamedView> bad = views;
        bad[o].view.data = static_cast<char*>(views[i].view.data) + dtype_size(specs[o].dtype);
        const Status s = plan->can_implement(bad);
        EXPECT_TRUE(s.code() == StatusCode::kInvalidProblem || s.code() == StatusCode::kMisalignedOperand)
            << specs[o].name << " over " << specs[i].name << ": " << s.to_string();
        ++S.overlap_checks;
        break;
      }
      break;
    }
  }
}

int failed_parts() {
  const testing::TestResult* r = testing::UnitTest::GetInstance()->current_test_info()->result();
  int n = 0;
  for (int i = 0; i < r->total_part_count(); ++i) n += r->GetTestPartResult(i).failed();
  return n;
}

}  // namespace

TEST(Contract, EveryRowOverItsCiProblems) {
  BARACUDA_REQUIRE_GPU();
  int n = 0;
  for (const std::string& f : harness::problem_files(std::string(BARACUDA_PROBLEMS_DIR) + "/ci")) {
    auto lines = harness::read_problem_file(f);
    ASSERT_TRUE(lines.ok()) << lines.status().to_string();
    for (const harness::ProblemLine& p : *lines) {
      if (matrix_case_skipped(static_cast<uint64_t>(n++))) continue;
      const int before = failed_parts();
      run_problem(p);  // a failure stops this problem, not the suite
      if (failed_parts() > before) ++g_rows[p.op].failed;
    }
  }
  for (const OpInfo& row : op_table()) EXPECT_TRUE(g_rows.count(std::string(row.name))) << row.name << " ran no problem";
  // BARACUDA_CONTRACT_JSON=FILE: the per-row results (docs/verified.json; scripts/gen_ops_md.py)
  FILE* json = std::getenv("BARACUDA_CONTRACT_JSON") ? std::fopen(std::getenv("BARACUDA_CONTRACT_JSON"), "w") : nullptr;
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  if (json) std::fprintf(json, "{\"device\": \"%s\", \"rows\": [\n", prop.name);
  size_t k = 0;
  for (const auto& [op, s] : g_rows) {
    if (json)
      std::fprintf(json,
                   "  {\"op\": \"%s\", \"problems\": %d, \"failed\": %d, \"views\": %d, \"rejected\": %d, \"elements\": %lld, "
                   "\"worst_of_tolerance\": %.4f, \"reruns\": %d, \"replays\": %d}%s\n",
                   op.c_str(), s.problems, s.failed, s.views, s.rejected, static_cast<long long>(s.elements), s.worst, s.reruns,
                   s.replays, ++k < g_rows.size() ? "," : "");
    std::printf("[contract] %-24s %2d problems (%d failed), %2d views checked (%d rejected cleanly), %lld elements, worst %.3f of tolerance; "
                "%d bitwise reruns, %d graph replays, %d workspace and %d overlap checks\n",
                op.c_str(), s.problems, s.failed, s.views, s.rejected, static_cast<long long>(s.elements), s.worst, s.reruns,
                s.replays, s.ws_checks, s.overlap_checks);
  }
  if (json) std::fprintf(json, "]}\n"), std::fclose(json);
}
