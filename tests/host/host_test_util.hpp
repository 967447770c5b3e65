// Helpers every host-tier suite shares: a Hopper preference (select() without a GPU), the
// error assertion (status code and a message substring) and random test vectors.
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "baracuda/core/any_plan.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"

namespace baracuda::test {

inline PlanPreference hopper() {
  PlanPreference p;
  p.target_arch = 90;
  return p;
}

inline void expect_error(const Status& s, StatusCode code, const std::string& needle) {
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_NE(s.message().find(needle), std::string::npos) << "message: " << s.message() << "\nwanted: " << needle;
}

// AnyPlan::select(op, problem) on Hopper is refused with `code` and a message holding `needle`.
inline void expect_refused(std::string_view op, std::string_view problem, StatusCode code, const std::string& needle) {
  auto p = AnyPlan::select(op, problem, hopper());
  ASSERT_FALSE(p) << op << " " << problem;
  expect_error(p.status(), code, needle);
}

// n values uniform in [lo, hi) from rng.
inline std::vector<double> uniform_values(size_t n, std::mt19937_64& rng, double lo = -1.0, double hi = 1.0) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (double& e : v) e = u(rng);
  return v;
}
// The same from a fresh generator seeded with seed.
inline std::vector<double> uniform_values(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  return uniform_values(n, rng);
}

}  // namespace baracuda::test
