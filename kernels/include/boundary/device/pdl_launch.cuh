// A kernel launch with programmatic dependent launch on or off: the one place that spells the
// launch attribute, for every kernel of the project and the kernels around them in the tests.
#pragma once

#include <cuda_runtime_api.h>

namespace boundary::dev {

// With pdl, the kernel may start while the previous kernel in the stream still runs (until its
// griddepcontrol.wait). cudaLaunchKernelEx returns this launch's own error, never one left over
// from an earlier call.
template <class... Params, class... Args>
cudaError_t launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, bool pdl, cudaStream_t stream, Args... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.stream = stream;
  cudaLaunchAttribute attribute[1]{};
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attribute;
  config.numAttrs = pdl ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, args...);
}

}  // namespace boundary::dev
