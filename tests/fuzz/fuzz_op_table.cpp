// The descriptor fuzzer over the op table: for every row, descriptors mutated from the row's CI
// problems (every field may become 0, 1, 2^31 ± 1, 2^40, INT64_MAX, INT64_MIN, negative, NaN,
// inf, an out-of-range dtype or enum value, a rank of -1 or 9, INT64_MIN strides ...), selected
// with random preferences (invalid enums included), then random views for the plan's operands
// (wrong dtype / shape / rank, strides 0, negative and INT64_MIN, null and misaligned pointers,
// aliasing) through can_implement and, on a machine without a GPU, run(). A crash, a sanitizer
// report (the ASan + UBSan + float-cast-overflow build, scripts/test.sh), an exception or a hang
// fails the run; so does an accepted call that breaks a contract:
//   - a refusal with an empty message;
//   - can_implement accepting views whose outputs have no element, and run() then doing
//     anything but return OK without touching CUDA (no GPU here: a launch would fail).
//
//   baracuda_fuzz [--iterations N | --seconds N] [--seed S] [--row NAME] [--verbose]
//   --iterations: that many rounds over the rows (the same cases on every machine: what CI runs);
//   --seconds: rounds until the time is up (exploration; scripts/fuzz.sh)
//
// Seeded and deterministic for a given seed and row; each case's line ("row seed iteration:
// problem") is kept so a crash report names it. scripts/fuzz.sh runs it longer.
#include <cuda_runtime_api.h>

#include <csignal>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "harness/problems.hpp"

// The sanitizer runtime's death hook, when a sanitizer build links it (weak: absent otherwise).
extern "C" void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

using namespace baracuda;

namespace {

// ---------------------------------------------------------------- the case being run (for crash reports)

char g_case[4096];
void set_case(const std::string& s) {
  const size_t n = std::min(s.size(), sizeof g_case - 1);
  std::memcpy(g_case, s.data(), n);
  g_case[n] = 0;
}
void print_case() {
  const char head[] = "\nbaracuda_fuzz: the failing case: ";
  (void)!write(2, head, sizeof head - 1);
  (void)!write(2, g_case, std::strlen(g_case));
  (void)!write(2, "\n", 1);
}
void on_signal(int sig) {
  print_case();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

// ---------------------------------------------------------------- random values

struct Rng {
  std::mt19937_64 g;
  explicit Rng(uint64_t seed) : g(seed) {}
  uint64_t operator()() { return g(); }
  bool chance(int one_in) { return g() % static_cast<uint64_t>(one_in) == 0; }
  template <class T>
  const T& pick(const std::vector<T>& v) { return v[g() % v.size()]; }
};

const std::vector<int64_t> kInts = {0, 1, -1, 2, 3, 4, 7, 8, 16, 33, 64, 1000, 4096, (int64_t{1} << 31) - 1, int64_t{1} << 31,
                                    (int64_t{1} << 31) + 1, int64_t{1} << 32, int64_t{1} << 40, int64_t{1} << 62, INT64_MAX,
                                    INT64_MIN, INT64_MIN + 1, -(int64_t{1} << 31), -1000};
const std::vector<double> kDoubles = {0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e30, -1e300, 1e300, 4.9e-324,
                                      std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                                      -std::numeric_limits<double>::infinity(), 9.3e18, -9.3e18, 65504.0, 1e-8};

int64_t rand_int(Rng& r) { return r.chance(3) ? static_cast<int64_t>(r() % 17) : r.pick(kInts); }

DType rand_dtype(Rng& r) {
  if (r.chance(8)) return static_cast<DType>(r.chance(2) ? 77 : 255);  // not a dtype
  return static_cast<DType>(r() % kNumDTypes);
}

template <class E>
E rand_enum(Rng& r) {
  using U = std::underlying_type_t<E>;
  const size_t n = std::size(EnumTraits<E>::kEntries);
  if (r.chance(6)) return static_cast<E>(static_cast<U>(n + r() % 3));  // out of range
  return EnumTraits<E>::kEntries[r() % n].value;
}

void mutate_layout(Rng& r, TensorLayout& t, bool view) {
  switch (r() % 6) {
    case 0: t.dtype = rand_dtype(r); break;
    case 1: t.rank = r.chance(3) ? (r.chance(2) ? -1 : kMaxRank + 1) : static_cast<int>(r() % (kMaxRank + 1)); break;
    case 2: t.shape[r() % kMaxRank] = rand_int(r); break;
    case 3: t.stride[r() % kMaxRank] = r.chance(3) ? 0 : rand_int(r); break;
    case 4:
      if (t.rank > 0 && t.rank <= kMaxRank) t.stride[r() % t.rank] = r.chance(2) ? INT64_MIN : -t.stride[r() % t.rank];
      break;
    default:
      if (view && t.rank > 1 && t.rank <= kMaxRank) std::swap(t.stride[0], t.stride[t.rank - 1]);  // a permutation
      break;
  }
}

// One field of a descriptor, changed by its type.
template <class M>
void mutate_member(Rng& r, M& m) {
  if constexpr (std::is_same_v<M, bool>) {
    m = !m;
  } else if constexpr (std::is_same_v<M, DType>) {
    m = rand_dtype(r);
  } else if constexpr (DescribedEnum<M>) {
    m = rand_enum<M>(r);
  } else if constexpr (std::is_integral_v<M>) {
    const int64_t v = rand_int(r);
    m = static_cast<M>(std::clamp<int64_t>(v, static_cast<int64_t>(std::numeric_limits<M>::min()),
                                           static_cast<int64_t>(std::min<uint64_t>(std::numeric_limits<M>::max(), INT64_MAX))));
    if (r.chance(4)) m = static_cast<M>(v);  // the raw (wrapped) value too
  } else if constexpr (std::is_floating_point_v<M>) {
    m = static_cast<M>(r.pick(kDoubles));
  } else if constexpr (std::is_same_v<M, Scalar>) {
    m = r.chance(2) ? Scalar(r.pick(kDoubles)) : Scalar(rand_int(r));
    if (r.chance(10)) m.kind = static_cast<Scalar::Kind>(r() % 5);
  } else if constexpr (std::is_base_of_v<TensorLayout, M>) {
    mutate_layout(r, m, false);
  } else if constexpr (std::is_array_v<M>) {
    mutate_member(r, m[r() % std::extent_v<M>]);
  } else if constexpr (requires { m.has_value(); *m; }) {
    if (m.has_value() && r.chance(2)) m.reset();
    else {
      if (!m.has_value()) m.emplace();
      mutate_member(r, *m);
    }
  } else if constexpr (Described<M>) {
    const int n = static_cast<int>(field_count<M>());
    const int which = static_cast<int>(r() % static_cast<uint64_t>(n));
    int i = 0;
    for_each_field(m, [&](std::string_view, auto& f) {
      if (i++ == which) mutate_member(r, f);
    });
  } else if constexpr (std::is_same_v<M, EwOperand>) {
    switch (r() % 5) {
      case 0: m.is_scalar = !m.is_scalar; break;
      case 1: m.dtype = rand_dtype(r); break;
      case 2: m.rank = r.chance(3) ? (r.chance(2) ? -1 : kMaxRank + 1) : static_cast<int>(r() % (kMaxRank + 1)); break;
      case 3: m.shape[r() % kMaxRank] = rand_int(r); break;
      default: mutate_member(r, m.value); break;
    }
  }
}

template <class D>
void mutate_descriptor(Rng& r, D& d) {
  const int n = static_cast<int>(field_count<D>());
  const int times = 1 + static_cast<int>(r() % 3);
  for (int t = 0; t < times; ++t) {
    const int which = static_cast<int>(r() % static_cast<uint64_t>(n));
    int i = 0;
    for_each_field(d, [&](std::string_view, auto& f) {
      if (i++ == which) mutate_member(r, f);
    });
  }
}

PlanPreference rand_pref(Rng& r) {
  PlanPreference p;
  p.target_arch = 90;
  if (r.chance(4)) mutate_descriptor(r, p);
  if (r.chance(3)) p.target_arch = 90;  // mostly something that can select
  p.autotune = false;                     // timing needs a GPU
  return p;
}

// ---------------------------------------------------------------- views for the plan's operands

struct Counters {
  int64_t cases = 0, selected = 0, implemented = 0, runs = 0;
};

// Distinct, 256-byte aligned fake device addresses (never dereferenced on the host).
void* fake(size_t i) { return reinterpret_cast<void*>(uintptr_t{0x7f0000000000} + (uintptr_t{i} << 36)); }

std::vector<NamedView> views_for(Rng& r, const AnyPlan& plan, bool mutate) {
  std::vector<NamedView> v;
  const OperandSpecs& specs = plan.operands();
  for (size_t i = 0; i < specs.size(); ++i) {
    const OperandSpec& s = specs[i];
    TensorMut t;
    t.dtype = s.dtype;
    t.rank = s.rank;
    for (int d = 0; d < s.rank; ++d) t.shape[d] = s.shape[d];
    if (s.fixed_strides)
      for (int d = 0; d < s.rank; ++d) t.stride[d] = s.stride[d];
    else
      t.set_contiguous_strides();
    t.data = fake(i);
    if (mutate && r.chance(3)) {
      switch (r() % 5) {
        case 0: t.data = nullptr; break;
        case 1: t.data = static_cast<char*>(t.data) + 1 + r() % 15; break;  // misaligned
        case 2:
          if (!v.empty()) t.data = v[r() % v.size()].view.data;  // alias an earlier operand
          break;
        default: mutate_layout(r, t, true); break;
      }
    }
    if (!(mutate && r.chance(25))) v.push_back({s.name, t});  // sometimes a view goes missing
  }
  return v;
}

bool outputs_empty(const AnyPlan& plan, const std::vector<NamedView>& views) {
  for (const OperandSpec& s : plan.operands())
    if (s.writes())
      for (const NamedView& v : views)
        if (v.name == s.name && v.view.numel() != 0) return false;
  return true;
}

int g_failures = 0;
void fail(const std::string& what) {
  ++g_failures;
  std::fprintf(stderr, "baracuda_fuzz: FAILED: %s\n  case: %s\n", what.c_str(), g_case);
}

void check_refusal(const Status& s, const char* where) {
  if (!s.ok() && s.message().empty()) fail(std::string(where) + " refused with an empty message");
}

// One row: mutated descriptors from its CI problems.
template <class Plan>
void fuzz_row(std::string_view name, const std::vector<std::string>& lines, Rng& r, bool gpu, Counters* c) {
  using Desc = DescriptorOf<Plan>;
  std::vector<Desc> bases;
  for (const std::string& l : lines) {
    Desc d{};
    if (from_string(l, &d).ok()) bases.push_back(d);
  }
  if (bases.empty()) bases.push_back(Desc{});
  Desc d = r.pick(bases);
  if (!r.chance(8)) mutate_descriptor(r, d);
  const PlanPreference pref = rand_pref(r);
  std::string line = std::string(name) + " " + to_string(d);
  set_case(line);
  ++c->cases;
  auto plan = AnyPlan::select(name, d, pref);
  if (!plan) {
    check_refusal(plan.status(), "select");
    return;
  }
  ++c->selected;
  for (int k = 0; k < 4; ++k) {
    const std::vector<NamedView> views = views_for(r, *plan, k > 0);
    const Status ok = plan->can_implement(views);
    check_refusal(ok, "can_implement");
    if (!ok.ok() || gpu) continue;  // never run fake pointers where a GPU would follow them
    ++c->implemented;
    ++c->runs;
    const size_t need = plan->workspace_size();
    const Workspace ws{need ? fake(40) : nullptr, need};
    const Status run = plan->run(nullptr, ws, views);
    check_refusal(run, "run");
    if (outputs_empty(*plan, views) && !run.ok())
      fail("run() of views without output elements did something (it must return OK without a launch): " + run.to_string());
    (void)cudaGetLastError();
  }
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 20;
  int64_t iterations = 0;  // 0: bounded by --seconds
  uint64_t seed = 1;
  std::string only;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&]() -> std::string { return i + 1 < argc ? argv[++i] : std::string(); };
    if (a == "--seconds") seconds = std::atof(val().c_str());
    else if (a == "--iterations") iterations = std::strtoll(val().c_str(), nullptr, 10);
    else if (a == "--seed") seed = std::strtoull(val().c_str(), nullptr, 10);
    else if (a == "--row") only = val();
    else if (a == "--verbose") verbose = true;
    else {
      std::printf("usage: baracuda_fuzz [--iterations N | --seconds N] [--seed S] [--row NAME] [--verbose]\n");
      return 2;
    }
  }
  for (int sig : {SIGSEGV, SIGFPE, SIGBUS, SIGILL, SIGABRT}) std::signal(sig, on_signal);
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(print_case);
  alarm(iterations ? 3600u : static_cast<unsigned>(seconds * 3 + 60));  // a hang fails the run (SIGALRM)

  int n = 0;
  const bool gpu = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  (void)cudaGetLastError();
  std::map<std::string, std::vector<std::string>> lines;  // row -> its CI problems
  for (const std::string& f : harness::problem_files(std::string(BARACUDA_PROBLEMS_DIR) + "/ci"))
    if (auto ls = harness::read_problem_file(f))
      for (const auto& p : *ls) lines[p.op].push_back(p.problem);

  struct Row {
    std::string_view name;
    void (*run)(std::string_view, const std::vector<std::string>&, Rng&, bool, Counters*);
  };
  const std::vector<Row> rows = {
#define BARACUDA_OP(name, Plan, family, direction) {#name, &fuzz_row<Plan>},
#include "baracuda/ops/ops.def"
#undef BARACUDA_OP
  };
  std::map<std::string_view, Counters> counts;
  Rng r(seed);
  const auto start = std::chrono::steady_clock::now();
  const auto budget = std::chrono::duration<double>(seconds);
  int64_t iter = 0;
  while (iterations ? iter < iterations : std::chrono::steady_clock::now() - start < budget) {
    for (const Row& row : rows) {
      if (!only.empty() && row.name != only) continue;
      Rng case_rng(seed * 1000003u + static_cast<uint64_t>(iter) * 131u + std::hash<std::string_view>{}(row.name));
      row.run(row.name, lines[std::string(row.name)], case_rng, gpu, &counts[row.name]);
      if (verbose) std::printf("%s\n", g_case);
    }
    ++iter;
  }
  int64_t total = 0;
  for (const Row& row : rows) {
    const Counters& c = counts[row.name];
    if (!only.empty() && row.name != only) continue;
    total += c.cases;
    std::printf("[fuzz] %-24s %8lld cases, %7lld selected, %7lld views accepted, %7lld runs\n", std::string(row.name).c_str(),
                static_cast<long long>(c.cases), static_cast<long long>(c.selected), static_cast<long long>(c.implemented),
                static_cast<long long>(c.runs));
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[fuzz] seed %llu: %lld iterations, %lld cases in %.0f s, %d contract failures%s\n",
              static_cast<unsigned long long>(seed), static_cast<long long>(iter), static_cast<long long>(total), took, g_failures, gpu ? " (GPU present: run() not called)" : "");
  return g_failures ? 1 : 0;
}
