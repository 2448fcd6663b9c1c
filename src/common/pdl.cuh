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

// Places the wait in kernels that may read step-invariant inputs early. With early_reads
// false (the default contract) the wait comes before the first read of any input; with
// early_reads true (the caller asserts the inputs were written before the chain started) it
// comes before the first write. Every path must call before_write() before it writes or
// exits, so every CTA waits. kWait = false exists only for the race harness's mutation test.
template <bool kWait = true>
struct PdlGate {
  bool early_reads = false;
  bool waited = false;

  __device__ __forceinline__ void before_read() {
    if (!early_reads) before_write();
  }
  __device__ __forceinline__ void before_write() {
    if (!waited) {
      if constexpr (kWait) wait_on_prior_grid();
      waited = true;
    }
  }
};

}  // namespace baton
