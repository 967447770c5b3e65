// baracuda/core/dlpack.hpp — DLPack (DLTensor) interchange for TensorRef / TensorMut.
//
// If the real <dlpack/dlpack.h> was included first, its definitions are used. Otherwise this
// header declares the ABI-identical C structs itself (written from the DLPack 1.x spec) under
// the same include guard, so a later #include <dlpack/dlpack.h> is a harmless no-op.
#pragma once

#include <cstdint>

#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_
#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 1
extern "C" {
typedef enum {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
  kDLMAIA = 17,
  kDLTrn = 18,
} DLDeviceType;

typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

typedef enum {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
  kDLOpaqueHandle = 3U,
  kDLBfloat = 4U,
  kDLComplex = 5U,
  kDLBool = 6U,
  kDLFloat8_e3m4 = 7U,
  kDLFloat8_e4m3 = 8U,
  kDLFloat8_e4m3b11fnuz = 9U,
  kDLFloat8_e4m3fn = 10U,
  kDLFloat8_e4m3fnuz = 11U,
  kDLFloat8_e5m2 = 12U,
  kDLFloat8_e5m2fnuz = 13U,
  kDLFloat8_e8m0fnu = 14U,
  kDLFloat6_e2m3fn = 15U,
  kDLFloat6_e3m2fn = 16U,
  kDLFloat4_e2m1fn = 17U,
} DLDataTypeCode;

typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} DLTensor;
}  // extern "C"
#endif  // DLPACK_DLPACK_H_

namespace baracuda {

// DLPack dtype of a baracuda dtype (bool as kDLBool/8 bits, fp8 as kDLFloat8_e4m3fn / e5m2).
DLDataType to_dlpack_dtype(DType t);
// The baracuda dtype of a DLPack dtype (lanes must be 1); InvalidProblem when none matches.
Result<DType> from_dlpack_dtype(DLDataType t);

// A DLTensor describing `t`. shape/strides point into `t`, which must outlive the result.
// `device` defaults to CUDA device 0.
DLTensor to_dlpack(const TensorRef& t, DLDevice device = {kDLCUDA, 0});
DLTensor to_dlpack(TensorMut& t, DLDevice device = {kDLCUDA, 0});

// Views of a DLTensor. byte_offset is folded into data; strides == nullptr means contiguous.
// Rejects ndim > kMaxRank, lanes != 1, unknown dtypes, byte offsets not a multiple of the
// element size, and non-CUDA devices unless allow_host is set.
Result<TensorRef> from_dlpack(const DLTensor& t, bool allow_host = false);
Result<TensorMut> from_dlpack_mut(const DLTensor& t, bool allow_host = false);

}  // namespace baracuda
