// Timestamps inside kernels, for latency studies only (CMake option BATON_TRACE, off by
// default; without it every mark compiles to nothing).
//
// Thread 0 of each CTA writes %globaltimer (ns) into a fixed device table at
// [kernel][cta][slot]; the last launch to write a slot wins, so after a graph of N calls the
// table holds the last call's timeline. Read it with baton::trace::read (decode_attention.cu
// defines it in trace builds); baton-bench attention --trace prints a summary.
#pragma once

#include <cstdint>

namespace baton::trace {

constexpr int kSlots = 8;        // marks per CTA
constexpr int kMaxCtas = 8192;   // CTAs per kernel recorded (the rest are not)
constexpr int kKernels = 2;      // 0: split_kv producer, 1: merge_splits reducer
constexpr size_t kEntries = size_t(kKernels) * kMaxCtas * kSlots;

#if defined(BATON_TRACE) && defined(__CUDACC__)
// One table per translation unit that includes this header; only decode_attention.cu does.
static __device__ unsigned long long g_marks[kEntries];

static __device__ __forceinline__ void mark(int kernel, int slot) {  // internal, like its table
  if (threadIdx.x != 0) return;
  unsigned const cta = blockIdx.x + blockIdx.y * gridDim.x;
  if (cta >= unsigned(kMaxCtas)) return;
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  g_marks[(size_t(kernel) * kMaxCtas + cta) * kSlots + slot] = t;
}
#else
#define BATON_TRACE_OFF 1
#endif

}  // namespace baton::trace

#if defined(BATON_TRACE_OFF)
#define BATON_MARK(kernel, slot) ((void)0)
#else
#define BATON_MARK(kernel, slot) ::baton::trace::mark(kernel, slot)
#endif

namespace baton::trace {
// Trace builds only: copies the table to `host` (kEntries values; nullptr: no copy) and,
// with clear, zeroes it.
bool read(unsigned long long* host, bool clear);
}  // namespace baton::trace
