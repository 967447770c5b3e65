// baracuda_bench — the verification / benchmark CLI over the op table (benchdnn-style).
//
//   baracuda_bench --list                                     every op of the table
//   baracuda_bench --op rope --problem "dtype=bf16 seq=4096 heads_q=32 head_dim=128" [--mode CP]
//   baracuda_bench --batch bench/problems/perf/rope.txt --mode P --json rope.json
//   baracuda_bench                                            the main job: CI problems verified (C),
//                                                             then the performance problems timed (P)
//
// One line per problem: PASSED / FAILED / UNSUPPORTED (with the reason) / PERF, the sku, the
// median time (CUDA events around run(), after warm-ups), GB/s or TFLOP/s against the ceiling
// measured in the same run (device-to-device copy; a bf16 8192³ GEMM for compute-bound ops),
// and the repro line that reruns exactly that problem. --json writes one record per problem
// (bench/torch_side_by_side.py puts PyTorch's time beside each). Without a GPU every problem is
// selected for sm_90 (nothing runs) and the count is printed.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "harness/op_case.hpp"
#include "harness/problems.hpp"
#include "timing.hpp"

using namespace baracuda;
using baracuda::bench::filter_skips;
using baracuda::bench::median_ms;

namespace baracuda::bench {
int run_ew_parity(const std::string& dir, const std::string& filter);  // bench_ew_parity.cpp
}

namespace {

struct Settings {
  std::string mode = "CP";  // C: verify, P: time, CP: both
  std::string json, filter;
  int reps = 20, warm = 3;
  bool graph = false;
  std::string pref;  // --pref fields (a problem line's --pref options are added to them)
  bool gpu = false;
  double copy_tbps = 0, gemm_tflops = 0;
  std::string device;
};

struct Record {
  std::string line;
};

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

std::string dims_json(const int64_t* v, int n) {
  std::string s = "[";
  for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// The bf16 tensor-core rate, measured once (compute-bound problems are judged against it).
double gemm_ceiling_tflops() {
  static double rate = [] {
    const int64_t n = 8192;
    auto plan = AnyPlan::select("gemm", "a=bf16[8192,8192] b=bf16[8192,8192] out=bf16[8192,8192]");
    if (!plan) return 0.0;
    auto c = harness::OpCase::make(*plan, {.reference = false});
    if (!c) return 0.0;
    const std::vector<NamedView> v = c->views();
    auto b = plan->bind(v);
    if (!b) return 0.0;
    const double ms = median_ms([&] { (void)b->run(nullptr, c->workspace()); }, 3, 10);
    return 2.0 * n * n * n / (ms * 1e-3) / 1e12;
  }();
  return rate;
}

std::string repro_of(const harness::ProblemLine& p) {
  std::string r = "baracuda_bench --op " + p.op + " --problem \"" + p.problem + "\"";
  if (!p.options.empty()) r += " " + p.options;
  return r;
}

// Runs one problem; prints its line and returns its JSON record. failures counts FAILED lines.
std::string run_problem(const harness::ProblemLine& p, Settings& S, int* failures) {
  const bool verify = S.mode.find('C') != std::string::npos, time = S.mode.find('P') != std::string::npos;
  PlanPreference pref;
  const Status pref_status = from_string(S.pref + " " + p.pref, &pref);
  auto plan = pref_status.ok() ? AnyPlan::select(p.op, p.problem, pref) : Result<AnyPlan>(pref_status);
  std::string status, reason, sku;
  double us = 0, graph_us = 0, host_us = 0, worst = 0;
  harness::Cost cost;
  std::vector<NamedView> views;
  std::string operands = "[]";
  if (!plan) {
    status = plan.status().code() == StatusCode::kUnsupported ? "UNSUPPORTED" : "FAILED";
    reason = plan.status().to_string();
  } else {
    sku = plan->sku().name();
    cost = harness::op_cost(*plan, p.opt);
    harness::CaseOptions o = p.opt;
    o.reference = verify;
    auto c = harness::OpCase::make(*plan, o);
    if (!c) {
      status = "FAILED", reason = c.status().to_string();
    } else {
      views = c->views();
      operands = "[";
      for (size_t i = 0; i < views.size(); ++i) {
        const OperandSpec& s = plan->operands()[i];
        const TensorMut& t = views[i].view;
        operands += std::string(i ? ", " : "") + "{\"name\": \"" + std::string(s.name) + "\", \"role\": \"" + std::string(enum_name(s.role)) +
                    "\", \"dtype\": \"" + std::string(dtype_name(t.dtype)) + "\", \"shape\": " + dims_json(t.shape, t.rank) +
                    ", \"strides\": " + dims_json(t.stride, t.rank) + "}";
      }
      operands += "]";
      Status st = c->run(nullptr);
      if (st.ok() && cudaDeviceSynchronize() != cudaSuccess) st = Status(StatusCode::kCudaError, "the kernel faulted");
      if (!st.ok()) {
        status = st.code() == StatusCode::kUnsupported || st.code() == StatusCode::kMisalignedOperand ? "UNSUPPORTED" : "FAILED";
        reason = st.to_string();
      } else {
        status = time && !verify ? "PERF" : "PASSED";
        if (verify) {
          const harness::CaseCheck k = c->check();
          worst = k.worst;
          if (!k.ok) status = "FAILED", reason = k.what;
        }
        if (time && status != "FAILED") {
          auto bound = plan->bind(views);
          if (!bound) {
            status = "FAILED", reason = bound.status().to_string();
          } else {
            const Workspace ws = c->workspace();
            us = 1000.0 * median_ms([&] { (void)bound->run(nullptr, ws); }, S.warm, S.reps);
            if (S.graph || p.graph) {
              graph_us = bench::median_graph_us([&](cudaStream_t s) { (void)bound->run(s, ws); }, 20, S.reps);
              host_us = bench::median_host_us([&] { (void)bound->run(nullptr, ws); }, 20, 11);
            }
          }
        }
      }
    }
  }
  if (status == "FAILED") ++*failures;
  const bool compute = cost.flops > 0;
  const double ceiling = compute ? (S.gemm_tflops > 0 ? S.gemm_tflops : (S.gemm_tflops = gemm_ceiling_tflops())) : S.copy_tbps;
  const double achieved = us > 0 ? (compute ? cost.flops / (us * 1e-6) / 1e12 : cost.bytes / (us * 1e-6) / 1e12) : 0;
  std::printf("%-11s %-24s", status.c_str(), p.op.c_str());
  if (us > 0)
    std::printf(" %10.1f us %8.1f %s %5.1f%% of %s", us, compute ? achieved : achieved * 1000, compute ? "TFLOP/s" : "GB/s",
                ceiling > 0 ? 100 * achieved / ceiling : 0.0, compute ? "gemm" : "copy");
  if (graph_us > 0) std::printf("  graph %.1f us  host %.1f us", graph_us, host_us);
  if (verify && status == "PASSED") std::printf("  worst %.3f of tol", worst);
  std::printf("  %s\n", sku.c_str());
  if (!reason.empty()) std::printf("            %s\n", reason.c_str());
  std::printf("            repro: %s\n", repro_of(p).c_str());
  std::fflush(stdout);
  const OpInfo* info = find_op(p.op);
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "\"ours_us\": %.3f, \"graph_us\": %.3f, \"host_us\": %.3f, \"bytes\": %.0f, \"flops\": %.0f, \"achieved\": %.4f, \"unit\": \"%s\", "
                "\"ceiling\": %.4f, \"fraction_of_ceiling\": %.4f, \"bound\": \"%s\", \"worst_of_tolerance\": %.4f, \"workspace_bytes\": %.0f",
                us, graph_us, host_us, cost.bytes, cost.flops, achieved, compute ? "TFLOP/s" : "TB/s", ceiling,
                ceiling > 0 && us > 0 ? achieved / ceiling : 0.0, compute ? "compute" : "memory", worst,
                plan ? static_cast<double>(plan->workspace_size()) : 0.0);
  return "{\"op\": \"" + p.op + "\", \"family\": \"" + std::string(info ? info->family : "") + "\", \"direction\": \"" +
         std::string(info ? enum_name(info->direction) : "") + "\", \"problem\": \"" + json_escape(p.problem) +
         "\", \"options\": \"" + json_escape(p.options) + "\", \"status\": \"" + status + "\", \"reason\": \"" + json_escape(reason) +
         "\", \"sku\": \"" + sku + "\", \"verified\": " + (verify && status == "PASSED" ? "true" : "false") + ", " + buf +
         ", \"operands\": " + operands + ", \"repro\": \"" + json_escape(repro_of(p)) + "\", \"device\": \"" + S.device + "\"}";
}

// --list: one line per row; --ops-table: the measured columns of docs/ops.md as JSON lines.
void list_ops(bool table, const std::string& problems_dir) {
  std::map<std::string, std::vector<std::string>> lines_of;  // op -> its CI problems
  for (const std::string& f : harness::problem_files(problems_dir + "/ci"))
    if (auto lines = harness::read_problem_file(f))
      for (const auto& p : *lines) lines_of[p.op].push_back(p.problem);
  auto is_word_at = [](const std::string& s, size_t at, size_t n) {
    return (at == 0 || !isalnum(static_cast<unsigned char>(s[at - 1]))) &&
           (at + n >= s.size() || !isalnum(static_cast<unsigned char>(s[at + n])));
  };
  PlanPreference pref;
  pref.target_arch = 90;
  for (const OpInfo& row : op_table()) {
    if (!table) {
      std::printf("%-24s %-12s %-4s %s\n", std::string(row.name).c_str(), std::string(row.family).c_str(),
                  std::string(enum_name(row.direction)).c_str(), std::string(row.plan).c_str());
      continue;
    }
    // determinism: over every CI problem of the row (it may depend on the problem: an atomic
    // backward chosen for small sizes); accumulator: the first problem's.
    // dtypes: over every CI problem of the row, the non-bool dtype named first replaced (every
    // token of it: fields and operands) by each dtype, selected for sm_90
    const std::vector<std::string>& lines = lines_of[std::string(row.name)];
    std::string det = "?", acc = "?";
    std::set<DType> ok;
    for (const std::string& base : lines) {
      auto plan = AnyPlan::select(row.name, base, pref);
      if (!plan) continue;
      const std::string d = plan->precision_guarantee().determinism == Determinism::kRunToRun ? "run_to_run" : "any";
      if (det == "?") {
        det = d;
        acc = std::string(dtype_name(plan->precision_guarantee().accumulator));
      } else if (det != d) {
        det = "run_to_run or any (by problem)";
      }
      size_t first = std::string::npos;
      DType main = DType::f32;
      for (const auto& e : EnumTraits<DType>::kEntries)
        for (size_t at = base.find(e.name); at != std::string::npos; at = base.find(e.name, at + 1))
          if (is_word_at(base, at, e.name.size()) && at < first && e.value != DType::boolean) first = at, main = e.value;
      if (first == std::string::npos) continue;  // the problem names no dtype to vary
      ok.insert(main);
      const std::string mn(dtype_name(main));
      for (const auto& e : EnumTraits<DType>::kEntries) {
        std::string line;
        for (size_t i = 0; i < base.size();) {
          if (base.compare(i, mn.size(), mn) == 0 && is_word_at(base, i, mn.size())) line += e.name, i += mn.size();
          else line += base[i++];
        }
        if (AnyPlan::select(row.name, line, pref).ok()) ok.insert(e.value);
      }
    }
    std::string dtypes;
    for (const auto& e : EnumTraits<DType>::kEntries)
      if (ok.count(e.value)) dtypes += (dtypes.empty() ? "" : " ") + std::string(e.name);
    std::printf("{\"op\": \"%s\", \"family\": \"%s\", \"direction\": \"%s\", \"dtypes\": \"%s\", \"determinism\": \"%s\", "
                "\"accumulator\": \"%s\"}\n",
                std::string(row.name).c_str(), std::string(row.family).c_str(), std::string(enum_name(row.direction)).c_str(),
                dtypes.c_str(), det.c_str(), acc.c_str());
  }
  if (!table) return;
  // the elementwise rows per pointwise op: the dtypes each direction selects for (every operand of
  // that dtype; where's condition and masked_fill's mask bool; `to` into f32)
  for (const auto& e : EnumTraits<EwOp>::kEntries) {
    std::string dt[2];
    for (const auto& t : EnumTraits<DType>::kEntries) {
      ElementwiseDescriptor d;
      d.op = e.value;
      d.num_operands = ew_op_arity(e.value);
      ew_default_params(e.value, d.param);
      for (int k = 0; k < d.num_operands; ++k)
        d.operand[k] = EwOperand::tensor((e.value == EwOp::where && k == 0) || (e.value == EwOp::masked_fill && k == 1) ? DType::boolean : t.value, {64});
      if (e.value == EwOp::to) d.out_dtype = DType::f32;
      if (ElementwisePlan::select(d, pref).ok()) dt[0] += (dt[0].empty() ? "" : " ") + std::string(t.name);
      if (ew_op_grad_mask(e.value) && ElementwiseBackwardPlan::select(d, pref).ok()) dt[1] += (dt[1].empty() ? "" : " ") + std::string(t.name);
    }
    std::printf("{\"op\": \"elementwise\", \"sub\": \"%s\", \"arity\": %d, \"dtypes_fwd\": \"%s\", \"dtypes_bwd\": \"%s\"}\n",
                std::string(e.name).c_str(), ew_op_arity(e.value), dt[0].c_str(), dt[1].c_str());
  }
}

std::string default_problems_dir() {
  if (std::filesystem::exists("bench/problems")) return "bench/problems";
  return BARACUDA_PROBLEMS_DIR;
}

int usage(int rc) {
  std::printf(
      "usage: baracuda_bench [--list] [--ops-table]\n"
      "                      [--op NAME --problem \"field=value ...\" [case options]] [--batch FILE|DIR]...\n"
      "                      [--mode C|P|CP] [--json FILE] [--filter TEXT] [--reps N] [--graph] [--pref field=value]...\n"
      "                      [--ew-parity DIR]\n"
      "  default: --batch <problems>/ci --mode C, then --batch <problems>/perf --mode P\n"
      "  case options (also in batch lines): --layout=KIND --view=NAME:KIND --strides=NAME:S0,S1 --inplace\n"
      "    --data=DIST --specials --seed=N   (harness/problems.hpp)\n"
      "  --pref: a PlanPreference field (determinism=run_to_run, allow_tf32=true, autotune=true ...)\n"
      "  --filter: problems whose op + problem line contain TEXT (or one of its '|'-separated parts)\n"
      "  --ew-parity DIR: writes DIR/cases.json + DIR/data.bin for bench/torch_elementwise_parity.py\n");
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  Settings S;
  std::vector<std::pair<std::string, std::string>> batches;  // (path, mode)
  std::string op, problem, options, parity_dir, pref_text;
  bool list = false, table = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&]() -> std::string { return i + 1 < argc ? argv[++i] : std::string(); };
    if (a == "--list") list = true;
    else if (a == "--ops-table") table = true;
    else if (a == "--op") op = val();
    else if (a == "--problem") problem = val();
    else if (a == "--batch") batches.push_back({val(), ""});
    else if (a == "--mode") S.mode = val();
    else if (a == "--json") S.json = val();
    else if (a == "--filter") S.filter = val();
    else if (a == "--reps") S.reps = std::max(1, std::atoi(val().c_str()));
    else if (a == "--graph") S.graph = true;
    else if (a == "--pref") pref_text += (pref_text.empty() ? "" : " ") + val();
    else if (a == "--ew-parity") parity_dir = val();
    else if (a == "--help" || a == "-h") return usage(0);
    else if (a.rfind("--", 0) == 0 && !op.empty()) options += (options.empty() ? "" : " ") + a;
    else return usage(2);
  }
  PlanPreference global_pref;
  if (Status s = from_string(pref_text, &global_pref); !s.ok()) {
    std::printf("--pref: %s\n", s.to_string().c_str());
    return 2;
  }
  S.pref = pref_text;
  const std::string dir = default_problems_dir();
  if (list || table) {
    list_ops(table, dir);
    return 0;
  }
  if (!parity_dir.empty()) return baracuda::bench::run_ew_parity(parity_dir, S.filter);

  std::vector<harness::ProblemLine> problems;
  std::vector<std::string> modes;
  auto add_file = [&](const std::string& path, const std::string& mode) -> bool {
    auto lines = harness::read_problem_file(path);
    if (!lines) {
      std::printf("%s\n", lines.status().to_string().c_str());
      return false;
    }
    for (auto& p : *lines) {
      if (filter_skips(S.filter, p.op + " " + p.problem)) continue;
      problems.push_back(std::move(p));
      modes.push_back(mode);
    }
    return true;
  };
  if (!op.empty()) {
    auto p = harness::parse_problem_line(op + " " + problem + " " + options);
    if (!p) {
      std::printf("%s\n", p.status().to_string().c_str());
      return 2;
    }
    problems.push_back(*p);
    modes.push_back("");
  }
  if (op.empty() && batches.empty()) {
    batches.push_back({dir + "/ci", "C"});
    batches.push_back({dir + "/perf", "P"});
  }
  for (const auto& [path, mode] : batches) {
    const std::vector<std::string> files =
        std::filesystem::is_directory(path) ? harness::problem_files(path) : std::vector<std::string>{path};
    for (const std::string& f : files)
      if (!add_file(f, mode)) return 2;
  }

  int n = 0;
  S.gpu = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  if (!S.gpu) {
    cudaGetLastError();
    int ok = 0;
    for (const auto& p : problems) {
      PlanPreference line_pref;
      const Status ps = from_string(S.pref + " " + p.pref, &line_pref);
      line_pref.target_arch = 90;
      auto plan = ps.ok() ? AnyPlan::select(p.op, p.problem, line_pref) : Result<AnyPlan>(ps);
      ok += plan.ok();
      if (!plan) std::printf("does not select: %s %s: %s\n", p.op.c_str(), p.problem.c_str(), plan.status().to_string().c_str());
    }
    std::printf("baracuda_bench: no CUDA GPU on this machine, so nothing was run or timed.\n"
                "  %d of %zu problems select a plan for sm_90 (checked without a GPU). Run this on an H100 / H200\n"
                "  (scripts/device-check.sh) for verification and timings.\n",
                ok, problems.size());
    return ok == static_cast<int>(problems.size()) ? 0 : 1;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  S.device = prop.name;
  S.copy_tbps = bench::measure_copy_tbps();
  std::printf("device: %s   copy ceiling (D2D 2 GiB, read+write): %.3f TB/s\n", S.device.c_str(), S.copy_tbps);
  const std::string mode_all = S.mode;
  std::vector<std::string> records;
  int failures = 0;
  for (size_t i = 0; i < problems.size(); ++i) {
    S.mode = modes[i].empty() ? mode_all : modes[i];
    records.push_back(run_problem(problems[i], S, &failures));
  }
  if (!S.json.empty()) {
    FILE* f = std::fopen(S.json.c_str(), "w");
    if (!f) return 2;
    std::fprintf(f, "{\"device\": \"%s\", \"copy_tbps\": %.4f, \"gemm_tflops\": %.2f, \"records\": [\n", S.device.c_str(), S.copy_tbps,
                 S.gemm_tflops);
    for (size_t i = 0; i < records.size(); ++i) std::fprintf(f, "  %s%s\n", records[i].c_str(), i + 1 < records.size() ? "," : "");
    std::fprintf(f, "]}\n");
    std::fclose(f);
  }
  std::printf("%zu problems, %d failed\n", problems.size(), failures);
  return failures ? 1 : 0;
}
