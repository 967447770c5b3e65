// Problem lines and batch files (benchdnn-style): one problem per line,
//
//   <op> [field=value ...] [--option ...]      # comment
//
// where the fields are the op's descriptor fields (AnyPlan::select's problem line) and the
// options say how the case is laid out and filled (CaseOptions):
//   --layout=KIND            every operand's layout (contiguous, offset1, offset3, step2,
//                            padded_rows, permuted, negative_last, transposed)
//   --view=NAME:KIND         one operand's layout ("--view=in[0]:transposed")
//   --strides=NAME:S0,S1..   one operand's element strides
//   --inplace                outputs that may alias an input are bound to it
//   --alias=OUT:IN           output OUT bound to input IN's storage ("--alias=grad_in[0]:grad_out")
//   --data=DIST              the input distribution the op's adapter knows ("zipf1.1", "same" ...)
//   --specials               ±0, ±inf, NaN in float inputs
//   --seed=N
//   --pref=FIELD=VALUE       a PlanPreference field for this problem ("--pref=autotune=true")
//   --graph                  timing: per call under CUDA graph replay as well (baracuda_bench)
// Files live in bench/problems/ci/<family>.txt (small problems: the contract tests, the host
// select test, --mode C) and bench/problems/perf/<family>.txt (the benchmark shapes).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "baracuda/core/status.hpp"
#include "harness/op_case.hpp"

namespace baracuda::harness {

struct ProblemLine {
  std::string op;       // the op table row
  std::string problem;  // "field=value ..." (what AnyPlan::select takes)
  std::string options;  // "--option ..." as written (part of the repro line)
  std::string pref;     // PlanPreference fields of --pref options ("autotune=true ...")
  bool graph = false;   // --graph
  CaseOptions opt;
  std::string where;    // "file:line" for messages
};

// One line (no comment); InvalidProblem naming the token that is wrong.
Result<ProblemLine> parse_problem_line(std::string_view text);
// Every problem of a file (blank and '#' lines skipped).
Result<std::vector<ProblemLine>> read_problem_file(const std::string& path);
// The files of a directory ("<dir>/*.txt", sorted), for --batch over a whole set.
std::vector<std::string> problem_files(const std::string& dir);
bool parse_layout(std::string_view name, Layout* out);

}  // namespace baracuda::harness
