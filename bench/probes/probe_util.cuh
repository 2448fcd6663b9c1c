// Helpers shared by the standalone probes (stream_probe.cu, gpc_probe.cu, queue_probe.cu) and
// the bench's read floor (read_floor.cu): a CUDA-call check that exits with the failing call's
// place and message, the GPU's nanosecond clock, and the mbarrier + cp.async.bulk steps of a
// bulk-copy ring (sm_90).
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                                  \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));          \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

// %globaltimer: nanoseconds, comparable across SMs (it ticks in steps of 32 ns or more).
__device__ __forceinline__ unsigned long long probe_now() {
  unsigned long long x;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(x));
  return x;
}

// A shared-memory address as the PTX shared state space takes it.
__device__ __forceinline__ unsigned smem_u32(void const* p) { return unsigned(__cvta_generic_to_shared(p)); }

// mbarrier `bar` (a shared address) expecting one arrival; after the last init of a CTA's
// barriers, mbar_init_fence() before any use.
__device__ __forceinline__ void mbar_init(unsigned bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar));
}
__device__ __forceinline__ void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }

// The arrival, expecting `bytes` of copies to complete the phase.
__device__ __forceinline__ void mbar_expect_tx(unsigned bar, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}

// `bytes` (a multiple of 16, both addresses 16-byte aligned) from global `src` to shared `dst`,
// completing on `bar`.
__device__ __forceinline__ void bulk_copy(void* dst, void const* src, int bytes, unsigned bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   smem_u32(dst)),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}

// Spins until the phase of parity `parity` of `bar` has completed.
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  unsigned done = 0;
  while (!done) {
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done)
                 : "r"(bar), "r"(parity)
                 : "memory");
  }
}
