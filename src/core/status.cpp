#include "baracuda/core/status.hpp"

#include <cstdio>
#include <cstdlib>

namespace baracuda {

std::string_view status_code_name(StatusCode c) {
  switch (c) {
    case StatusCode::kOk: return "Ok";
    case StatusCode::kInvalidProblem: return "InvalidProblem";
    case StatusCode::kUnsupported: return "Unsupported";
    case StatusCode::kMisalignedOperand: return "MisalignedOperand";
    case StatusCode::kWorkspaceTooSmall: return "WorkspaceTooSmall";
    case StatusCode::kBufferTooSmall: return "BufferTooSmall";
    case StatusCode::kCudaError: return "CudaError";
    case StatusCode::kLibraryError: return "LibraryError";
    case StatusCode::kInternal: return "Internal";
  }
  return "Unknown";
}

std::string Status::to_string() const {
  std::string s(status_code_name(code_));
  if (!message_.empty()) {
    s += ": ";
    s += message_;
  }
  return s;
}

void result_has_no_value(const Status& why) {
  std::fprintf(stderr, "baracuda: Result::value() called on a Result that holds an error: %s\n", why.to_string().c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace baracuda
