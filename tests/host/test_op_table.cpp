// Host tier of the op table: every row has CI problems, every problem selects for sm_90 without
// a GPU and round-trips through its problem line, every enum of every descriptor round-trips
// through its names, and a plan that was not selected refuses to run — for every row, derived
// from ops/ops.def (a new family gets these checks by adding its row and its problem file).
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <type_traits>

#include "baracuda/baracuda.hpp"
#include "harness/problems.hpp"
#include "host/host_test_util.hpp"

using namespace baracuda;
using baracuda::test::expect_error;
using baracuda::test::hopper;

namespace {

std::vector<harness::ProblemLine> ci_problems() {
  std::vector<harness::ProblemLine> all;
  for (const std::string& f : harness::problem_files(std::string(BARACUDA_PROBLEMS_DIR) + "/ci")) {
    auto lines = harness::read_problem_file(f);
    EXPECT_TRUE(lines.ok()) << lines.status().to_string();
    if (lines) all.insert(all.end(), lines->begin(), lines->end());
  }
  return all;
}

// Every enumerator of every enum field of T (nested structs, arrays and optionals included)
// parses back from its name, and a value outside the enum has none.
template <class M>
void enum_round_trips(std::set<std::string_view>* seen) {
  if constexpr (DescribedEnum<M>) {
    if (!seen->insert(enum_type_name<M>()).second) return;
    for (const auto& e : EnumTraits<M>::kEntries) {
      M back{};
      EXPECT_TRUE(enum_parse(enum_name(e.value), &back)) << enum_type_name<M>() << "::" << e.name;
      EXPECT_EQ(back, e.value) << enum_type_name<M>() << "::" << e.name;
      EXPECT_TRUE(enum_valid(e.value));
    }
    EXPECT_FALSE(enum_valid(static_cast<M>(std::size(EnumTraits<M>::kEntries) + 3))) << enum_type_name<M>();
  } else if constexpr (std::is_array_v<M>) {
    enum_round_trips<std::remove_extent_t<M>>(seen);
  } else if constexpr (requires(M m) { m.has_value(); *m; }) {
    enum_round_trips<std::remove_cvref_t<decltype(*std::declval<M>())>>(seen);
  } else if constexpr (Described<M>) {
    M m{};
    for_each_field(m, [&](std::string_view, const auto& f) { enum_round_trips<std::remove_cvref_t<decltype(f)>>(seen); });
  }
}

// A default-constructed plan of the row refuses can_implement and run, saying so.
template <class Plan>
void unselected_plan_refuses(std::string_view name) {
  using Args = ArgsOf<Plan>;
  const Plan plan{};
  EXPECT_FALSE(plan.selected()) << name;
  expect_error(plan.can_implement(Args{}), StatusCode::kInvalidProblem, "not selected");
  expect_error(plan.run(nullptr, Workspace{}, Args{}), StatusCode::kInvalidProblem, "not selected");
}

}  // namespace

TEST(OpTable, EveryRowHasCiProblemsThatSelectForHopper) {
  const auto problems = ci_problems();
  ASSERT_FALSE(problems.empty()) << "no problem files under " << BARACUDA_PROBLEMS_DIR << "/ci";
  std::set<std::string> covered;
  int n = 0;
  for (const harness::ProblemLine& p : problems) {
    ASSERT_NE(find_op(p.op), nullptr) << p.where << ": no op " << p.op;
    auto plan = AnyPlan::select(p.op, p.problem, hopper());
    ASSERT_TRUE(plan.ok()) << p.where << ": " << plan.status().to_string();
    covered.insert(p.op);
    ++n;
    // the problem line round-trips: the plan's own line selects the same descriptor again
    const std::string line = plan->problem();
    auto again = AnyPlan::select(p.op, line, hopper());
    ASSERT_TRUE(again.ok()) << p.where << ": " << line << ": " << again.status().to_string();
    EXPECT_EQ(again->problem(), line) << p.where;
    EXPECT_EQ(again->sku().name(), plan->sku().name()) << p.where;
    EXPECT_EQ(again->operands().size(), plan->operands().size()) << p.where;
    EXPECT_EQ(plan->repro(), p.op + (line.empty() ? "" : " " + line));
    // operands are named after fields of the Args, inputs first
    bool outputs_started = false;
    for (const OperandSpec& o : plan->operands()) {
      EXPECT_GE(o.field, 0) << p.where << ": " << o.name;
      if (o.writes()) outputs_started = true;
      else EXPECT_FALSE(outputs_started) << p.where << ": input " << o.name << " after an output";
    }
  }
  for (const OpInfo& row : op_table()) EXPECT_TRUE(covered.count(std::string(row.name))) << row.name << " has no CI problem line";
  std::printf("[op table] %zu rows, %d CI problems select for sm_90 and round-trip\n", op_table().size(), n);
}

TEST(OpTable, EnumsRoundTripAndUnselectedPlansRefuse) {
  std::set<std::string_view> seen;
#define BARACUDA_OP(name, Plan, family, direction)                                               \
  enum_round_trips<DescriptorOf<Plan>>(&seen);                  \
  unselected_plan_refuses<Plan>(#name);
#include "baracuda/ops/ops.def"
#undef BARACUDA_OP
  enum_round_trips<PlanPreference>(&seen);
  EXPECT_GE(seen.size(), 15u);
  std::printf("[op table] %zu enum types round-trip through their names\n", seen.size());
}

TEST(OpTable, ProblemLinesAndAnyPlanErrors) {
  expect_error(AnyPlan::select("nope", "", hopper()).status(), StatusCode::kInvalidProblem, "no op named 'nope'");
  expect_error(AnyPlan::select("rope", "heads_q=4 sq=3", hopper()).status(), StatusCode::kInvalidProblem,
               "rope: RopeDescriptor: unknown field 'sq'");
  expect_error(AnyPlan::select("rope", "layout=diagonal", hopper()).status(), StatusCode::kInvalidProblem,
               "layout = 'diagonal' must be one of bhsd, bshd");
  expect_error(AnyPlan::select("rope", "heads_q", hopper()).status(), StatusCode::kInvalidProblem, "name=value");
  // a typed descriptor of the wrong type
  expect_error(AnyPlan::select("rope", PadDescriptor{}, hopper()).status(), StatusCode::kInvalidProblem, "not a RopeDescriptor");
  RopeDescriptor d;
  d.dtype = DType::bf16, d.seq = 4, d.heads_q = 2, d.head_dim = 8;
  auto plan = AnyPlan::select("rope", d, hopper());
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->problem(), "seq=4 heads_q=2 head_dim=8");  // bf16 is rope's default dtype
  ASSERT_NE(plan->descriptor<RopeDescriptor>(), nullptr);
  EXPECT_EQ(plan->descriptor<PadDescriptor>(), nullptr);
  ASSERT_NE(plan->plan<RopePlan>(), nullptr);
  EXPECT_EQ(plan->operands().size(), 2u);
  // views bound by name; an unknown name is an error
  alignas(16) static uint16_t q[64], qo[64];
  NamedView views[] = {{"q", TensorMut::make(q, DType::bf16, {1, 4, 2, 8})}, {"q_out", TensorMut::make(qo, DType::bf16, {1, 4, 2, 8})}};
  EXPECT_TRUE(plan->can_implement(views).ok()) << plan->can_implement(views).to_string();
  NamedView wrong[] = {{"qq", TensorMut::make(q, DType::bf16, {1, 4, 2, 8})}};
  expect_error(plan->can_implement(wrong), StatusCode::kInvalidProblem, "'qq' is not an operand of rope");
  expect_error(AnyPlan{}.run(nullptr, {}, views), StatusCode::kInvalidProblem, "not selected");
  // problem lines with options
  auto line = harness::parse_problem_line("gemm a=f32[4,4] b=f32[4,4] out=f32[4,4] --view=a:offset1 --inplace --data=zipf1.1");
  ASSERT_TRUE(line.ok()) << line.status().to_string();
  EXPECT_EQ(line->op, "gemm");
  EXPECT_EQ(line->problem, "a=f32[4,4] b=f32[4,4] out=f32[4,4]");
  EXPECT_TRUE(line->opt.inplace);
  EXPECT_EQ(line->opt.data, "zipf1.1");
  EXPECT_EQ(line->opt.views.at("a"), harness::Layout::kOffset1);
  expect_error(harness::parse_problem_line("rope --colour=red").status(), StatusCode::kInvalidProblem, "unknown option");
}

// Variable-count operands (concat inputs, optimizer tensor lists) bind through a span field of
// the Args: the describing machinery and the binder take them from day one.
namespace baracuda {
struct ListArgs {
  std::span<const TensorRef> inputs;
  TensorMut out;
};
BARACUDA_DESCRIBE(ListArgs, inputs, out);
}  // namespace baracuda

TEST(OpTable, SpanOperandsBindByElement) {
  alignas(16) static float a[4], b[4], c[8];
  const TensorRef ins[] = {TensorRef::make(a, DType::f32, {4}), TensorRef::make(b, DType::f32, {4})};
  ListArgs args{ins, TensorMut::make(c, DType::f32, {8})};
  OperandSpecs specs;
  specs.input("inputs[0]", DType::f32, {4});
  specs.input("inputs[1]", DType::f32, {4});
  specs.output("out", DType::f32, {8});
  ASSERT_TRUE(resolve_operands<ListArgs>("concat", specs).ok());
  EXPECT_EQ(specs[1].field, 0);
  EXPECT_EQ(specs[1].element, 1);
  EXPECT_TRUE(check_args("concat", specs, args).ok());
  const TensorRef short_list[] = {ins[0]};
  args.inputs = short_list;  // inputs[1] absent
  expect_error(check_args("concat", specs, args), StatusCode::kInvalidProblem, "inputs[1] is missing");
  args.inputs = ins;
  args.out = TensorMut::make(a, DType::f32, {8});  // overlaps inputs[0]
  expect_error(check_args("concat", specs, args), StatusCode::kInvalidProblem, "out overlaps inputs[0]");
  OperandSpecs typo;
  typo.input("inptus[0]", DType::f32, {4});
  expect_error(resolve_operands<ListArgs>("concat", typo), StatusCode::kInternal, "'inptus[0]' is no field of ListArgs");
}
