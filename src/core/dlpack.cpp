#include "baracuda/core/dlpack.hpp"

#include <cstring>
#include <string>

#include "core/checked_math.hpp"
#include "core/validate.hpp"

namespace baracuda {

DLDataType to_dlpack_dtype(DType t) {
  const uint8_t bits = static_cast<uint8_t>(dtype_size(t) * 8);
  switch (t) {
    case DType::f32: case DType::f16: case DType::f64: return {kDLFloat, bits, 1};
    case DType::bf16: return {kDLBfloat, bits, 1};
    case DType::f8e4m3: return {kDLFloat8_e4m3fn, bits, 1};
    case DType::f8e5m2: return {kDLFloat8_e5m2, bits, 1};
    case DType::i8: case DType::i16: case DType::i32: case DType::i64: return {kDLInt, bits, 1};
    case DType::u8: return {kDLUInt, bits, 1};
    case DType::boolean: return {kDLBool, bits, 1};
    case DType::c64: case DType::c128: return {kDLComplex, bits, 1};
  }
  return {kDLOpaqueHandle, 0, 1};
}

Result<DType> from_dlpack_dtype(DLDataType t) {
  if (t.lanes != 1)
    return Status(StatusCode::kInvalidProblem,
                  "dlpack: dtype lanes = " + std::to_string(t.lanes) + " must be 1");
  for (int i = 0; i < kNumDTypes; ++i) {
    const DLDataType c = to_dlpack_dtype(static_cast<DType>(i));
    if (c.code == t.code && c.bits == t.bits) return static_cast<DType>(i);
  }
  return Status(StatusCode::kInvalidProblem, "dlpack: dtype code " + std::to_string(t.code) +
                                                 " with " + std::to_string(t.bits) +
                                                 " bits has no baracuda dtype");
}

namespace {

DLTensor make_dl(void* data, TensorLayout& t, DLDevice device) {
  DLTensor d{};
  d.data = data;
  d.device = device;
  d.ndim = t.rank;
  d.dtype = to_dlpack_dtype(t.dtype);
  d.shape = t.shape;
  d.strides = t.stride;
  d.byte_offset = 0;
  return d;
}

Result<TensorMut> view_of(const DLTensor& t, bool allow_host) {
  // the device type as the integer a C producer wrote (a value outside DLDeviceType's
  // enumerators must not be loaded as the enum)
  int32_t device_type = 0;
  static_assert(sizeof(t.device.device_type) == sizeof(device_type));
  std::memcpy(&device_type, &t.device.device_type, sizeof device_type);
  const bool cuda_like = device_type == kDLCUDA || device_type == kDLCUDAManaged || device_type == kDLCUDAHost;
  if (!cuda_like && !(allow_host && device_type == kDLCPU))
    return Status(StatusCode::kUnsupported, "dlpack: device_type " + std::to_string(device_type) + " is not CUDA memory");
  if (t.ndim < 0 || t.ndim > kMaxRank)
    return Status(StatusCode::kInvalidProblem, "dlpack: ndim = " + std::to_string(t.ndim) +
                                                   " must be in [0, " + std::to_string(kMaxRank) + "]");
  if (t.ndim > 0 && t.shape == nullptr)
    return Status(StatusCode::kInvalidProblem, "dlpack: shape is null with ndim = " + std::to_string(t.ndim));
  auto dt = from_dlpack_dtype(t.dtype);
  if (!dt) return dt.status();
  const size_t es = dtype_size(*dt);
  if (t.byte_offset % es != 0)
    return Status(StatusCode::kMisalignedOperand,
                  "dlpack: byte_offset = " + std::to_string(t.byte_offset) +
                      " is not a multiple of the element size " + std::to_string(es));
  uintptr_t at = 0;
  if (t.byte_offset > static_cast<uint64_t>(INT64_MAX) ||
      (t.data && !checked_address(t.data, static_cast<int64_t>(t.byte_offset), &at)))
    return Status(StatusCode::kInvalidProblem, "dlpack: byte_offset = " + std::to_string(t.byte_offset) +
                                                   " moves the data pointer past the end of the address space");
  TensorMut v;
  v.dtype = *dt;
  v.rank = t.ndim;
  for (int d = 0; d < t.ndim; ++d) v.shape[d] = t.shape[d];
  if (t.strides) {
    for (int d = 0; d < t.ndim; ++d) v.stride[d] = t.strides[d];
  } else {
    v.set_contiguous_strides();
  }
  v.data = t.data ? reinterpret_cast<void*>(at) : nullptr;
  if (Status s = check_layout("dlpack", "tensor", v); !s.ok()) return s;
  return v;
}

}  // namespace

DLTensor to_dlpack(const TensorRef& t, DLDevice device) {
  return make_dl(const_cast<void*>(t.data), const_cast<TensorRef&>(t), device);
}
DLTensor to_dlpack(TensorMut& t, DLDevice device) { return make_dl(t.data, t, device); }

Result<TensorRef> from_dlpack(const DLTensor& t, bool allow_host) {
  auto v = view_of(t, allow_host);
  if (!v) return v.status();
  return v->as_ref();
}
Result<TensorMut> from_dlpack_mut(const DLTensor& t, bool allow_host) { return view_of(t, allow_host); }

}  // namespace baracuda
