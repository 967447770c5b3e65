#include "baracuda/core/status.hpp"

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

}  // namespace baracuda
