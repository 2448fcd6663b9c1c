// Helpers shared by the standalone probes (stream_probe.cu, gpc_probe.cu): a CUDA-call check
// that exits with the failing call's place and message, and the GPU's nanosecond clock.
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
