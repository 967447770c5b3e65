// Scratch memory carved from the caller's Workspace: slices at fixed offsets, 256-byte aligned,
// sized once at select() (CUB's alias_temporaries). run() checks the caller's workspace with
// check_workspace and takes its slices with slice<T>(ws, offset).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"

namespace baracuda {

class WorkspaceLayout {
 public:
  static constexpr size_t kAlign = 256;
  // Reserves `bytes` at the next kAlign boundary and returns the slice's offset. A total past
  // SIZE_MAX saturates total() (select's budget check then refuses the plan).
  size_t take(size_t bytes);
  // n elements of T (checked product).
  template <class T>
  size_t take_n(size_t n) {
    size_t bytes = 0;
    if (__builtin_mul_overflow(n, sizeof(T), &bytes)) bytes = SIZE_MAX;
    return take(bytes);
  }
  size_t total() const { return total_; }

 private:
  size_t total_ = 0;
};

// OK when ws holds `need` bytes at a kAlign-aligned address (need == 0 accepts anything);
// otherwise WorkspaceTooSmall / MisalignedOperand naming the op, the size and the address.
Status check_workspace(std::string_view op, Workspace ws, size_t need);

template <class T>
T* slice(Workspace ws, size_t offset) {
  return reinterpret_cast<T*>(static_cast<char*>(ws.ptr) + offset);
}

}  // namespace baracuda
