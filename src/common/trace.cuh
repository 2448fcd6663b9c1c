// Timestamps inside kernels, for latency studies only (CMake option BATON_TRACE, off by
// default; without it every mark compiles to nothing).
//
// Thread 0 of each CTA keeps its marks (%clock, the SM's cycles) in shared memory and, when it
// leaves the kernel, stores them as one Record with the CTA's %globaltimer (ns; 256 ns ticks on
// the H200 here) and %clock64 at entry. The host (read_unit) turns the records into two tables
// at [kernel][cta][slot]: ns (the entry's globaltimer plus the cycles since entry at the SM's
// clock rate, so each CTA's times share one offset of up to a tick) and cycles (for phases
// within one CTA). The last launch to write a row wins, so after a graph of N calls the tables
// hold the last call's timeline. Each translation unit has its own records;
// baton::trace::read (decode_attention.cu defines it in trace builds) reads decode_attention.cu's
// and decode_attention_small_pages.cu's as one (read_unit). baton-bench attention --trace
// prints a summary.
//
// What it costs (fifty-fifth session, docs/benchmarking.md): in graphs a 1x1K call takes
// 7.23-7.33 us against the release build's 6.11-6.12, where the marks of earlier trace builds
// cost 3.3 us. Nearly all of it is the marks themselves, with their shared-memory stores (7.26 with
// the records never stored; 6.27-6.29 when the compiler had dropped those stores, leaving the
// clock reads), 0.37 us of it the marks inside the KV loop (six sites, five of which fire at
// 1x1K; BATON_TRACE_LOOP=0 compiles them out: 6.96). So every phase a trace shows is an upper
// bound, by up to ~1.2 us over a 1x1K call. BATON_TRACE_LEVEL (default 3) builds the tracer in
// parts: 0 compiles the marks and the scope out, 1 keeps the scope (entry and exit) without
// marks, 2 keeps the marks (and their stores, read at the end) without storing the records.
//
// Two calls in steady state: baton::trace::focus(a, b) names two K pools. Then only the calls
// on those pools store, call a into kernels 0..2 and call b into kernels 3..5 (each kernel
// takes its pool from its params at entry: BATON_SELECT). With the bench's rotating pools, the
// last calls of a graph on pools a and b are two neighbours in the middle of a chain: one call
// with the next one's launch, pre-wait reads and wait beside its tail.
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
constexpr int kSmSlot = 11;  // kernels 0 and 1: the CTA's SM (%smid + 1), not a time (mark_sm)

#if defined(BATON_TRACE) && defined(__CUDACC__)
#ifndef BATON_TRACE_LEVEL
#define BATON_TRACE_LEVEL 3
#endif
// A mark costs thread 0 one read of %clock (32 bits) and one shared-memory store (g_buf). At
// the end Scope's destructor stores the CTA's record: 16 bytes of entry times, then 64 bytes per
// kernel row that holds a mark (a producer CTA: 2 rows, 9 stores of 16 bytes; a reducer's: 1
// row): ~0.03-0.06 us per call at 1x1K-1x8K. A first form that read both timers per mark
// (+0.9 us without their stores) and stored every slot's two values one by one at the end (~60
// single-thread stores per producer CTA: +3.3 in all) led to the compact rows and the
// conversion to ns on the host.
struct Record {                     // one CTA of one kernel class, 256 bytes
  unsigned long long t0;            // %globaltimer at entry (ns)
  unsigned long long c0_rows;       // %clock64 at entry (low 56 bits); bits 56..58: the rows written
  unsigned c[kKernelsPerCall][kSlots];  // %clock | 1 per slot (0: none); rows 0-1 slot 11: SM + 1
  unsigned pad[(256 - 16) / 4 - kKernelsPerCall * kSlots];
};
static_assert(sizeof(Record) == 256, "a record is two 128-byte lines");
// One table per translation unit that includes this header: decode_attention.cu (the reducers,
// the producers of pages of 16 keys and more) and decode_attention_small_pages.cu (the small-page
// producers). [call of the focus][0: a producer's CTA (it writes row 0), 1: a reducer's][cta].
static __device__ __align__(256) Record g_rec[2][2][kMaxCtas];
// The two calls traced, by their K pools' keys (focus_key); 0: every call.
static __device__ uint2 g_focus;
// Never 0; two pools share a key only if their addresses agree in bits 9..39 (pools are MBs apart).
__host__ __device__ inline unsigned focus_key(void const* k_pool) {
  return static_cast<unsigned>(reinterpret_cast<uintptr_t>(k_pool) >> 8) | 1u;
}
static __shared__ __align__(16) unsigned g_buf[kKernelsPerCall * kSlots];
static __shared__ unsigned long long g_entry[2];  // globaltimer, clock64 at entry

// Thread 0 (the macros below): one slot of this CTA's buffer.
static __device__ __forceinline__ void mark(int kernel, int slot) {
  unsigned c;
  asm volatile("mov.u32 %0, %%clock;" : "=r"(c));
  g_buf[kernel * kSlots + slot] = c | 1u;
}
// The CTA's SM (%smid + 1, so that 0 still means "not written") in slot `slot`.
static __device__ __forceinline__ void mark_sm(int kernel, int slot) {
  unsigned sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  g_buf[kernel * kSlots + slot] = sm + 1u;
}

// At kernel entry (BATON_SELECT): thread 0 empties the buffer, reads the timers and requests the
// focus (used only at the end, so that no warp waits for it); when thread 0 leaves the kernel,
// by any return, the buffer goes to the record of the focus's call this launch is (by K pool).
// The focus is written by the host before any traced launch (step-invariant), so reading it
// before a kernel's PDL wait keeps ../shared/specs/pdl-contract.md; the record goes to a table
// no kernel reads.
struct Scope {
  unsigned key;  // this launch's K pool
  uint2 focus;   // g_focus, loaded at entry
  __device__ __forceinline__ explicit Scope(void const* k_pool) : key(focus_key(k_pool)) {
    if (threadIdx.x != 0) return;
    focus = g_focus;
    uint4* const buf = reinterpret_cast<uint4*>(g_buf);
#pragma unroll
    for (int i = 0; i < kKernelsPerCall * kSlots / 4; ++i) buf[i] = make_uint4(0, 0, 0, 0);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g_entry[0]));
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(g_entry[1]));
  }
  __device__ __forceinline__ ~Scope() {
    if (threadIdx.x != 0 || BATON_TRACE_LEVEL == 0) return;
    int const call = focus.x == 0 || key == focus.x ? 0 : (key == focus.y ? 1 : -1);
    unsigned const cta = blockIdx.x + blockIdx.y * gridDim.x;
    if (call < 0 || cta >= unsigned(kMaxCtas)) return;
    uint4 row[kKernelsPerCall][kSlots / 4];
    unsigned rows = 0;
#pragma unroll
    for (int k = 0; k < kKernelsPerCall; ++k) {
      unsigned any = 0;
#pragma unroll
      for (int i = 0; i < kSlots / 4; ++i) {
        row[k][i] = reinterpret_cast<uint4 const*>(g_buf)[k * kSlots / 4 + i];
        any |= row[k][i].x | row[k][i].y | row[k][i].z | row[k][i].w;
      }
      rows |= any != 0 ? 1u << k : 0u;
    }
    if (rows == 0) return;  // no marks (BATON_TRACE_LEVEL 1)
    if (BATON_TRACE_LEVEL == 2) {  // the marks, not stored: one rare store keeps them live
      unsigned x = 0;
#pragma unroll
      for (int k = 0; k < kKernelsPerCall; ++k) {
#pragma unroll
        for (int i = 0; i < kSlots / 4; ++i) x ^= row[k][i].x ^ row[k][i].y ^ row[k][i].z ^ row[k][i].w;
      }
      if (x == 0x9e3779b9u) g_rec[call][1][cta].pad[0] = x;
      return;
    }
    Record* const r = &g_rec[call][(rows & 1u) != 0 ? 0 : 1][cta];
    *reinterpret_cast<ulonglong2*>(r) =
        make_ulonglong2(g_entry[0], (g_entry[1] & ((1ull << 56) - 1)) | (static_cast<unsigned long long>(rows) << 56));
#pragma unroll
    for (int k = 0; k < kKernelsPerCall; ++k) {
      if ((rows >> k & 1u) == 0) continue;
#pragma unroll
      for (int i = 0; i < kSlots / 4; ++i) reinterpret_cast<uint4*>(r->c[k])[i] = row[k][i];
    }
  }
};
// The producer CTA's item ordinal within the CTA (thread 0 alone writes and reads it).
static __shared__ int g_item;
static __device__ __forceinline__ void item_begin(int i) {  // thread 0 (BATON_ITEM_BEGIN)
  g_item = i;
  if (i < kItemsTraced) mark(2, i * kItemMarks);
}
static __device__ __forceinline__ void item_mark(int m) {  // thread 0 (BATON_ITEM_MARK)
  if (g_item < kItemsTraced) mark(2, g_item * kItemMarks + m);
}
// This unit's records as the tables above, for baton::trace::read and focus (every unit that
// carries marks calls these from a host function of its own: decode_attention.cu,
// decode_attention_small_pages.cu). merge: each entry of `host` becomes the larger of it and
// this unit's (a slot no kernel of this unit wrote holds 0), so that the units' tables read as
// one. A reducer's row overrides a producer's row of the same CTA and kernel.
[[maybe_unused]] static bool read_unit(unsigned long long* host, bool clear, bool merge) {
  if (host != nullptr) {
    // The SM's clock rate for ns: the H200's maximum, at which it ran under these kernels in every
    // session (1980 MHz); a throttled GPU would stretch the cycles' share of each time.
    int dev = 0, khz = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev) != cudaSuccess ||
        khz <= 0) {
      return false;
    }
    std::vector<Record> recs(size_t(2) * 2 * kMaxCtas);
    if (cudaMemcpyFromSymbol(recs.data(), g_rec, sizeof(g_rec)) != cudaSuccess) return false;
    std::vector<unsigned long long> mine(2 * kEntries, 0);
    for (int call = 0; call < 2; ++call) {
      for (int kind = 0; kind < 2; ++kind) {
        for (int cta = 0; cta < kMaxCtas; ++cta) {
          Record const& r = recs[(size_t(call) * 2 + kind) * kMaxCtas + cta];
          unsigned const rows = static_cast<unsigned>(r.c0_rows >> 56);
          unsigned long long const c0 = r.c0_rows & ((1ull << 56) - 1);
          for (int k = 0; k < kKernelsPerCall; ++k) {
            if ((rows >> k & 1u) == 0) continue;
            size_t const at = (size_t(k + call * kKernelsPerCall) * kMaxCtas + cta) * kSlots;
            for (int s = 0; s < kSlots; ++s) {
              unsigned const v = r.c[k][s];
              if (v == 0) {
                mine[at + s] = mine[kEntries + at + s] = 0;
              } else if (s == kSmSlot && k < 2) {  // the SM in kernels 0 and 1 (2: item marks)
                mine[at + s] = mine[kEntries + at + s] = v;
              } else {
                unsigned long long const dc = static_cast<unsigned>(v - static_cast<unsigned>(c0));  // mod 2^32
                mine[kEntries + at + s] = c0 + dc;
                mine[at + s] = r.t0 + dc * 1000000ull / static_cast<unsigned long long>(khz);
              }
            }
          }
        }
      }
    }
    for (size_t i = 0; i < mine.size(); ++i) host[i] = merge ? std::max(host[i], mine[i]) : mine[i];
  }
  // Cleared before the call returns: the bench's streams do not synchronize with the legacy
  // stream that cudaMemset runs on.
  void* table = nullptr;
  if (clear && (cudaGetSymbolAddress(&table, g_rec) != cudaSuccess || cudaMemset(table, 0, sizeof(g_rec)) != cudaSuccess ||
                cudaDeviceSynchronize() != cudaSuccess)) {
    return false;
  }
  return true;
}
[[maybe_unused]] static bool focus_unit(void const* a, void const* b) {
  uint2 const keys{a == nullptr ? 0u : focus_key(a), b == nullptr ? 0u : focus_key(b)};
  return cudaMemcpyToSymbol(g_focus, &keys, sizeof(keys)) == cudaSuccess;
}
#else
#define BATON_TRACE_OFF 1
#endif

}  // namespace baton::trace

// BATON_SELECT: a declaration; the CTA's marks are stored when thread 0 leaves the scope it is
// declared in (none when off or at level 0). The marks: thread 0 alone, inline (one %clock read
// and one shared-memory store), from level 2.
#if defined(BATON_TRACE_OFF) || BATON_TRACE_LEVEL == 0
#define BATON_SELECT(k_pool) ((void)0)
#else
#define BATON_SELECT(k_pool) ::baton::trace::Scope baton_trace_scope_(k_pool)
#endif
#if defined(BATON_TRACE_OFF) || BATON_TRACE_LEVEL < 2
#define BATON_MARK(kernel, slot) ((void)0)
#define BATON_MARK_SM(kernel, slot) ((void)0)
#define BATON_ITEM_BEGIN(i) ((void)0)
#define BATON_ITEM_MARK(m) ((void)0)
#else
#define BATON_MARK(kernel, slot) (threadIdx.x == 0 ? ::baton::trace::mark(kernel, slot) : (void)0)
#define BATON_MARK_SM(kernel, slot) (threadIdx.x == 0 ? ::baton::trace::mark_sm(kernel, slot) : (void)0)
#define BATON_ITEM_BEGIN(i) (threadIdx.x == 0 ? ::baton::trace::item_begin(i) : (void)0)
#define BATON_ITEM_MARK(m) (threadIdx.x == 0 ? ::baton::trace::item_mark(m) : (void)0)
#endif

// Marks inside the producer's KV loop (tile 0 landed, in kernel 0 and as item mark 1, its math
// issued, a quarter, half and three quarters of warp 0's tiles): BATON_TRACE_LOOP=0 compiles
// them out.
#if !defined(BATON_TRACE_LOOP) || BATON_TRACE_LOOP
#define BATON_LOOP_MARK(kernel, slot) BATON_MARK(kernel, slot)
#define BATON_LOOP_ITEM_MARK(m) BATON_ITEM_MARK(m)
#else
#define BATON_LOOP_MARK(kernel, slot) ((void)0)
#define BATON_LOOP_ITEM_MARK(m) ((void)0)
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
