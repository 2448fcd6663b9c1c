// Timestamps inside kernels, for latency studies only (CMake option BATON_TRACE, off by
// default; without it every mark compiles to nothing).
//
// Thread 0 of each CTA writes %globaltimer (ns; it ticks in 256 ns steps on the H200 here) and
// %clock64 (the SM's cycles, for phases within one CTA) into fixed device tables at
// [kernel][cta][slot]; the last launch to write a slot wins, so after a graph of N calls the
// table holds the last call's timeline. Each translation unit has its own tables;
// baton::trace::read (decode_attention.cu defines it in trace builds) reads decode_attention.cu's
// and decode_attention_small_pages.cu's as one (read_unit). baton-bench attention --trace
// prints a summary.
//
// Two calls in steady state: baton::trace::focus(a, b) names two K pools. Then only the calls
// on those pools write, call a into kernels 0..2 and call b into kernels 3..5 (each kernel reads
// its pool from its params at entry: BATON_SELECT). With the bench's rotating pools, the last
// calls of a graph on pools a and b are two neighbours in the middle of a chain: one call with
// the next one's launch, pre-wait reads and wait beside its tail.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace baton::trace {

constexpr int kSlots = 16;       // marks per CTA
constexpr int kMaxCtas = 8192;   // CTAs per kernel recorded (the rest are not)
constexpr int kKernelsPerCall = 3;  // 0: split_kv producer, 1: merge_splits reducer, 2: producer items
constexpr int kKernels = 2 * kKernelsPerCall;  // 3..5: the focus's second call (trace::focus)
constexpr int kItemMarks = 4;    // per item (table 2; 5 for the focus's second call): start, tile 0 landed, KV loop done, end
constexpr int kItemsTraced = kSlots / kItemMarks;  // a CTA's first 4 items
constexpr size_t kEntries = size_t(kKernels) * kMaxCtas * kSlots;  // per table: globaltimer ns, then clock64 cycles

#if defined(BATON_TRACE) && defined(__CUDACC__)
// One table per translation unit that includes this header: decode_attention.cu (the reducers,
// the producers of pages of 16 keys and more) and decode_attention_small_pages.cu (the small-page
// producers). A call's producer marks go to one of the two and its reducer marks to the first.
static __device__ unsigned long long g_marks[2 * kEntries];
static __device__ unsigned long long g_focus[2];  // K pool addresses of the two calls traced; 0: every call
static __shared__ int g_call;                     // this CTA's call in the focus: 0, 1, or -1 (not traced)

// At kernel entry, thread 0: which of the focus's calls this launch is (by its K pool).
static __device__ __forceinline__ void select(void const* k_pool) {
  if (threadIdx.x != 0) return;
  unsigned long long const k = reinterpret_cast<unsigned long long>(k_pool);
  unsigned long long const a = g_focus[0];
  g_call = a == 0 || k == a ? 0 : (k == g_focus[1] ? 1 : -1);
}
// Thread 0's entry of (kernel, this CTA, slot) in both tables; false for other threads, CTAs
// past kMaxCtas and calls outside the focus.
static __device__ __forceinline__ bool slot_of(int kernel, int slot, size_t* at) {
  unsigned const cta = blockIdx.x + blockIdx.y * gridDim.x;
  if (threadIdx.x != 0 || cta >= unsigned(kMaxCtas) || g_call < 0) return false;
  *at = (size_t(kernel + g_call * kKernelsPerCall) * kMaxCtas + cta) * kSlots + slot;
  return true;
}
static __device__ __noinline__ void mark(int kernel, int slot) {  // internal, like its table
  size_t at;
  if (!slot_of(kernel, slot, &at)) return;
  unsigned long long t, c;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(c));
  g_marks[at] = t;             // across SMs (coarse ticks)
  g_marks[kEntries + at] = c;  // within the CTA's SM (cycles)
}
// The producer CTA's item ordinal within the CTA (thread 0 alone writes and reads it).
static __shared__ int g_item;
static __device__ __noinline__ void item_begin(int i) {  // thread 0 (BATON_ITEM_BEGIN)
  g_item = i;
  if (i < kItemsTraced) mark(2, i * kItemMarks);
}
static __device__ __noinline__ void item_mark(int m) {  // thread 0 (BATON_ITEM_MARK)
  if (g_item < kItemsTraced) mark(2, g_item * kItemMarks + m);
}
// The CTA's SM (%smid + 1, so that 0 still means "not written") in slot `slot`.
static __device__ __noinline__ void mark_sm(int kernel, int slot) {
  size_t at;
  if (!slot_of(kernel, slot, &at)) return;
  unsigned sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  g_marks[at] = sm + 1ull;
  g_marks[kEntries + at] = sm + 1ull;
}
// This unit's tables, for baton::trace::read and focus (every unit that carries marks calls
// these from a host function of its own: decode_attention.cu, decode_attention_small_pages.cu).
// merge: each entry of `host` becomes the larger of it and this unit's (a slot no kernel of
// this unit wrote holds 0), so that the units' tables read as one.
[[maybe_unused]] static bool read_unit(unsigned long long* host, bool clear, bool merge) {
  if (host != nullptr) {
    if (!merge) {
      if (cudaMemcpyFromSymbol(host, g_marks, sizeof(g_marks)) != cudaSuccess) return false;
    } else {
      std::vector<unsigned long long> mine(2 * kEntries);
      if (cudaMemcpyFromSymbol(mine.data(), g_marks, sizeof(g_marks)) != cudaSuccess) return false;
      for (size_t i = 0; i < mine.size(); ++i) host[i] = std::max(host[i], mine[i]);
    }
  }
  void* table = nullptr;
  if (clear && (cudaGetSymbolAddress(&table, g_marks) != cudaSuccess || cudaMemset(table, 0, sizeof(g_marks)) != cudaSuccess)) {
    return false;
  }
  return true;
}
[[maybe_unused]] static bool focus_unit(void const* a, void const* b) {
  unsigned long long const keys[2] = {reinterpret_cast<unsigned long long>(a), reinterpret_cast<unsigned long long>(b)};
  return cudaMemcpyToSymbol(g_focus, keys, sizeof(keys)) == cudaSuccess;
}
#else
#define BATON_TRACE_OFF 1
#endif

}  // namespace baton::trace

#if defined(BATON_TRACE_OFF)
#define BATON_SELECT(k_pool) ((void)0)
#define BATON_MARK(kernel, slot) ((void)0)
#define BATON_MARK_SM(kernel, slot) ((void)0)
#define BATON_ITEM_BEGIN(i) ((void)0)
#define BATON_ITEM_MARK(m) ((void)0)
#else
#define BATON_SELECT(k_pool) ::baton::trace::select(k_pool)
// Thread 0 alone calls (the marks are out of line: fewer registers in the kernels).
#define BATON_MARK(kernel, slot) (threadIdx.x == 0 ? ::baton::trace::mark(kernel, slot) : (void)0)
#define BATON_MARK_SM(kernel, slot) (threadIdx.x == 0 ? ::baton::trace::mark_sm(kernel, slot) : (void)0)
#define BATON_ITEM_BEGIN(i) (threadIdx.x == 0 ? ::baton::trace::item_begin(i) : (void)0)
#define BATON_ITEM_MARK(m) (threadIdx.x == 0 ? ::baton::trace::item_mark(m) : (void)0)
#endif

namespace baton::trace {
// Trace builds only: copies the tables to `host` (2 x kEntries values: globaltimer, then
// clock64; nullptr: no copy) and,
// with clear, zeroes it.
bool read(unsigned long long* host, bool clear);
// Trace builds only: trace only the calls on K pools a and b (see above); nullptrs: every call.
bool focus(void const* a, void const* b);
namespace detail {  // the small-page unit's tables (decode_attention_small_pages.cu), merged by read
bool read_small_pages(unsigned long long* host, bool clear);
bool focus_small_pages(void const* a, void const* b);
}  // namespace detail
}  // namespace baton::trace
