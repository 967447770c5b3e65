// baracuda/core/status.hpp — errors as values.
//
// No exception escapes the library. Every fallible call returns a Status (code + message) or a
// Result<T>. The success path allocates nothing: an OK Status holds an empty std::string.
// Messages name the op and the field ("pad: pad_low[2] = -3 must be >= 0").
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace baracuda {

enum class StatusCode : int {
  kOk = 0,
  kInvalidProblem,     // the descriptor or arguments describe no valid problem
  kUnsupported,        // valid, but no implementation accepts it (dtype, arch, determinism ...)
  kMisalignedOperand,  // a pointer or stride breaks an alignment the chosen path needs
  kWorkspaceTooSmall,  // run() got less scratch than workspace_size()
  kBufferTooSmall,     // a caller-provided buffer is smaller than the problem needs
  kCudaError,          // the CUDA runtime reported an error (message carries its name)
  kLibraryError,       // cuBLAS/cuDNN/... status (message carries the library's status)
  kInternal,           // a bug in baracuda
};

std::string_view status_code_name(StatusCode c);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "InvalidProblem: pad: ..." — for logs.
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Reports a Result's error on stderr and aborts: what value() / * / -> do when the Result holds
// no value (a programming error; the library throws no exceptions, so this is the clear end).
[[noreturn]] void result_has_no_value(const Status& why);

// A value or the Status that explains why there is none. Test ok() (or the bool conversion)
// before value(), * or ->: on a Result that holds an error they print the Status and abort.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}                 // NOLINT(implicit)
  Result(Status status) : v_(std::move(status)) {           // NOLINT(implicit)
    if (std::get<Status>(v_).ok()) v_ = Status(StatusCode::kInternal, "Result built from OK Status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : *std::get_if<Status>(&v_);
  }
  T& value() & { return *checked(); }
  const T& value() const& { return *const_cast<Result*>(this)->checked(); }
  T&& value() && { return std::move(*checked()); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  T* checked() {
    if (T* p = std::get_if<T>(&v_)) return p;
    result_has_no_value(*std::get_if<Status>(&v_));
  }
  std::variant<T, Status> v_;
};

}  // namespace baracuda
