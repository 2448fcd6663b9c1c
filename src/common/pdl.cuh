// Device side of the PDL contract (pdl-contract.md, docs/pdl.md).
//
// wait_on_prior_grid(): the PDL wait instruction -- blocks until the whole previous grid in the
//   stream has completed and its memory is visible. A no-op when the kernel was launched
//   without the PDL attribute. The "memory" clobber keeps the compiler from hoisting loads
//   above it (rule 3).
// allow_next_grid(): griddepcontrol.launch_dependents -- lets the next PDL-launched kernel be
//   scheduled once every CTA of this grid has issued it or exited. Performance only: it
//   never makes anything safe (rule 6).
//
// Both compile to nothing below sm_90; the launch helper never requests PDL for such code.
#pragma once

namespace baton {

__device__ __forceinline__ void wait_on_prior_grid() {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void allow_next_grid() {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

}  // namespace baton
