// The reference adapter of every row of the op table: a row "x" is served by harness::ref_x(),
// defined in harness/ref_<family>.cpp or, for a family's larger ops, harness/ref_<op>.cpp (a
// missing one is a link error).
#include <cstdio>
#include <cstdlib>

#include "baracuda/baracuda.hpp"
#include "harness/op_case.hpp"

namespace baracuda::harness {

#define BARACUDA_OP(name, Plan, family, direction) OpRef ref_##name();
#include "baracuda/ops/ops.def"
#undef BARACUDA_OP

const OpRef& op_ref(std::string_view op) {
  struct Row {
    std::string_view name;
    OpRef ref;
  };
  static const Row rows[] = {
#define BARACUDA_OP(name, Plan, family, direction) {#name, ref_##name()},
#include "baracuda/ops/ops.def"
#undef BARACUDA_OP
  };
  for (const Row& r : rows)
    if (r.name == op) return r.ref;
  std::fprintf(stderr, "harness: no reference adapter for op '%.*s'\n", static_cast<int>(op.size()), op.data());
  std::abort();
}

}  // namespace baracuda::harness
