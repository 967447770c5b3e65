// Helpers every host-tier suite shares: a Hopper preference (select() without a GPU) and the
// error assertion (status code and a message substring).
#pragma once

#include <gtest/gtest.h>

#include <string>

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

}  // namespace baracuda::test
