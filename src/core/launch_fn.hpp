// The one launcher type: a host function, compiled by nvcc and explicitly instantiated in a .cu
// file, that launches an op's kernel for a parameter block and returns the launch's error.
// Host code (.cpp) stores pointers to them at select() and calls one per run().
#pragma once

#include <driver_types.h>  // cudaError_t, cudaStream_t (no CUDA runtime functions)

namespace baracuda {

template <class Params>
using LaunchFn = cudaError_t (*)(const Params&, cudaStream_t);

}  // namespace baracuda
