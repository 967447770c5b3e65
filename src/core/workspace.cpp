#include "core/workspace.hpp"

#include "core/validate.hpp"

namespace baracuda {

size_t WorkspaceLayout::take(size_t bytes) {
  const size_t at = total_ == SIZE_MAX ? SIZE_MAX : (total_ + kAlign - 1) / kAlign * kAlign;
  if (at == SIZE_MAX || __builtin_add_overflow(at, bytes, &total_)) total_ = SIZE_MAX;
  return at;
}

Status check_workspace(std::string_view op, Workspace ws, size_t need) {
  if (need == 0) return {};
  if (ws.ptr == nullptr || ws.bytes < need)
    return error(StatusCode::kWorkspaceTooSmall, op, ": needs ", need, " workspace bytes, got ", ws.bytes,
                 ws.ptr == nullptr ? " at a null pointer" : "");
  if (reinterpret_cast<uintptr_t>(ws.ptr) % WorkspaceLayout::kAlign != 0)
    return error(StatusCode::kMisalignedOperand, op, ": workspace ", ws.ptr, " is not ", WorkspaceLayout::kAlign,
                 "-byte aligned");
  return {};
}

}  // namespace baracuda
