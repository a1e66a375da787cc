// A kernel launch with programmatic dependent launch on or off: the one place that spells the
// launch attribute, for every kernel of the project and the kernels around them in the tests.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace boundary::dev {

// The launch attribute that asks for a cluster scheduling policy (also what an occupancy query
// of clusters so placed passes).
inline cudaLaunchAttribute placement_attribute(cudaClusterSchedulingPolicy placement) {
  cudaLaunchAttribute a{};
  a.id = cudaLaunchAttributeClusterSchedulingPolicyPreference;
  a.val.clusterSchedulingPolicyPreference = placement;
  return a;
}

// With pdl, the kernel may start while the previous kernel in the stream still runs (until its
// griddepcontrol.wait). cudaLaunchKernelEx returns this launch's own error, never one left over
// from an earlier call. shared_bytes: the dynamic shared memory of each CTA; cluster_ctas: CTAs
// per cluster (1: no clusters, or those of the kernel's __cluster_dims__); placement: how the
// hardware places a cluster's CTAs on SMs (cudaClusterSchedulingPolicyDefault: no attribute, the
// driver's choice).
template <class... Params, class... Args>
cudaError_t launch_pdl_placed(void (*kernel)(Params...), dim3 grid, dim3 block, unsigned cluster_ctas,
                              std::size_t shared_bytes, cudaClusterSchedulingPolicy placement, bool pdl,
                              cudaStream_t stream, Args... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  cudaLaunchAttribute attribute[3]{};
  unsigned n = 0;
  if (placement != cudaClusterSchedulingPolicyDefault) attribute[n++] = placement_attribute(placement);
  if (pdl) {
    attribute[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute[n++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (cluster_ctas > 1) {
    attribute[n].id = cudaLaunchAttributeClusterDimension;
    attribute[n].val.clusterDim.x = cluster_ctas;
    attribute[n].val.clusterDim.y = 1;
    attribute[n++].val.clusterDim.z = 1;
  }
  config.attrs = attribute;
  config.numAttrs = n;
  return cudaLaunchKernelEx(&config, kernel, args...);
}

template <class... Params, class... Args>
cudaError_t launch_pdl_cluster(void (*kernel)(Params...), dim3 grid, dim3 block, unsigned cluster_ctas,
                               std::size_t shared_bytes, bool pdl, cudaStream_t stream, Args... args) {
  return launch_pdl_placed(kernel, grid, block, cluster_ctas, shared_bytes, cudaClusterSchedulingPolicyDefault, pdl,
                           stream, args...);
}

template <class... Params, class... Args>
cudaError_t launch_pdl_shared(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t shared_bytes, bool pdl,
                              cudaStream_t stream, Args... args) {
  return launch_pdl_cluster(kernel, grid, block, 1, shared_bytes, pdl, stream, args...);
}

template <class... Params, class... Args>
cudaError_t launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, bool pdl, cudaStream_t stream, Args... args) {
  return launch_pdl_shared(kernel, grid, block, 0, pdl, stream, args...);
}

}  // namespace boundary::dev
