// Shared by the decode-attention producer (split_kv_kernel.cuh) and reducer
// (merge_splits_kernel.cuh): the kernel parameters, the CTA -> work mapping, the split
// ranges and small device helpers.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "attention/row_chunks.h"
#include "attention/split_range.h"
#include "common/pdl.cuh"

namespace baton::attention {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;

struct AttentionParams {
  void const* q;  // [batch * q_len, num_q_heads, head_dim]
  int64_t q_stride_token, q_stride_head;
  void const* k;  // paged pool
  void const* v;
  int32_t k_stride_page, k_stride_token, k_stride_head;  // elements, validated < 2^31
  int32_t v_stride_page, v_stride_token, v_stride_head;
  int32_t num_pages;             // pages in the pool (capped at 2^31 - 1); other ids read nothing
  int32_t const* cache_seqlens;  // [batch]
  int32_t const* page_table;     // [batch, pt_stride]
  int64_t pt_stride;
  int64_t pt_cols;               // page-table columns: lengths are clamped to pt_cols pages
  int32_t const* num_kv_splits;  // [batch] or null (max_splits for all)
  int max_splits;
  int batch, q_len, num_q_heads, num_kv_heads, group, rows, row_chunks;
  int page_shift;
  float scale;
  int window_left;
  int early_reads;     // DecodeAttentionArgs::inputs_written_before_chain
  float softcap;
  float const* sinks;  // [num_q_heads] or null
  float const* alibi;  // [num_q_heads] or null
  void* out;           // [batch * q_len, num_q_heads, head_dim]
  int64_t out_stride_token, out_stride_head;
  float* lse;          // [batch * q_len, num_q_heads] or null
  int64_t lse_stride_token;
  float* part_o;       // [batch, max_splits, q_len, num_q_heads, head_dim]
  float* part_lse;     // [batch, max_splits, q_len, num_q_heads]
  int* counters;       // single launch: [batch, num_kv_heads, row_chunks] arrivals; else null
  int trigger_after_wait;  // early reads, and no reducer or a small one that fits beside: the producer triggers after its wait
};

// Device-side clamps, so that no input can make a kernel read out of bounds: split counts to
// [1, max_splits], lengths to [0, pt_cols * page_size].
__device__ __forceinline__ int clamp_splits(AttentionParams const& p, int32_t raw) {
  if (p.num_kv_splits == nullptr) return p.max_splits;
  return raw < 1 ? 1 : (raw > p.max_splits ? p.max_splits : raw);
}
__device__ __forceinline__ int64_t clamp_length(AttentionParams const& p, int32_t raw) {
  int64_t const cap = p.pt_cols << p.page_shift;
  return raw < 0 ? 0 : (raw > cap ? cap : raw);
}

// Split `split` of n covers an equal share of the visible key span [lo, L) (lo = L - q_len -
// window_left with a window, else 0), cut at multiples of 16 keys (split_range.h). Cut
// anywhere (the form before), a split's tiles crossed page boundaries whenever a length was
// not a multiple of 16 n -- every tile at page 16, a quarter at page 64 -- and took the
// per-row copy. Same machine (GPU-7f1e31e6), 3 alternating rounds, in-graph us, every length
// 23 under the shape's (`baton-bench attention --graph-only --len-delta -23`), unaligned ->
// aligned, page 64: 1x1K 7.69 -> 6.90, 8x1K 13.38 -> 12.88, with early reads 1x1K 6.18 ->
// 6.04; page 16: 1x1K 7.77 -> 6.90; 1x8K and 1x32K within 0.1; the ragged batch and the mix
// moved by less than two builds of identical kernels differ there (docs/benchmarking.md,
// thirty-third session). Lengths that are multiples of 16 n (the standard shapes but the
// mix) split as before.
__device__ __forceinline__ KeyRange split_range(AttentionParams const& p, int L, int n, int split) {
  int lo = 0;
  if (p.window_left >= 0) {
    int64_t const w = int64_t(L) - p.q_len - p.window_left;  // no int32 overflow for any window
    lo = w < 0 ? 0 : static_cast<int>(w);
  }
  return split_keys(L, lo, n, split);
}

// Row of (request b, split, token t, head h) in the scratch: [batch, max_splits, q_len, num_q_heads].
__device__ __forceinline__ int64_t scratch_row(AttentionParams const& p, int b, int split, int t, int h) {
  return ((int64_t(b) * p.max_splits + split) * p.q_len + t) * p.num_q_heads + h;
}

template <class T>
__device__ __forceinline__ T from_float(float f);
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float f) { return __float2bfloat16_rn(f); }
// An output is a weighted mean of V rows, so its exact value lies within fp16's range; but P
// is rounded to fp16 for the P.V product while the row sum is not, which can lift a mean of
// values at the fp16 maximum past 65504 by a few parts in 10^4 -- and past 65520 rounds to
// Inf. Finite values past the range saturate to +-65504 (Inf and NaN, which only bad
// inputs give, pass through). bf16's range has no such edge.
__device__ __forceinline__ float saturate_half(float f) {
  constexpr float kMax = 65504.f;
  return fabsf(f) > kMax && fabsf(f) < INFINITY ? copysignf(kMax, f) : f;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float f) { return __float2half_rn(saturate_half(f)); }

// Two floats rounded to T in one 32-bit word, lo in the low half (the lower address). No
// saturation: for P (in [0, 1]); outputs go through pack_out_pair.
template <class T>
__device__ __forceinline__ uint32_t pack_pair(float lo, float hi) {
  uint32_t bits;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    __nv_bfloat162 const v = __floats2bfloat162_rn(lo, hi);
    memcpy(&bits, &v, sizeof(bits));
  } else {
    __half2 const v = __floats2half2_rn(lo, hi);
    memcpy(&bits, &v, sizeof(bits));
  }
  return bits;
}

// Two outputs rounded to T as from_float rounds them (fp16 saturates), packed as pack_pair.
template <class T>
__device__ __forceinline__ uint32_t pack_out_pair(float lo, float hi) {
  if constexpr (std::is_same_v<T, __half>) return pack_pair<T>(saturate_half(lo), saturate_half(hi));
  return pack_pair<T>(lo, hi);
}

__device__ __forceinline__ void cp_async_16(void* smem, void const* gmem, bool valid) {
  unsigned const addr = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  int const bytes = valid ? 16 : 0;  // 0: zero-fill, nothing read
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(addr), "l"(gmem), "r"(bytes) : "memory");
}
// L2 eviction policy for the K/V stream. Read once per call (one row chunk per kv head):
// evict-first, so the stream does not push the small data every call reuses (lengths, page
// tables, q, the split partials) out of L2 (against no hint: 1x8K / 8x1K 0.7-0.8 us, 1x32K
// 1.7 us faster in graphs). Read by several row chunks' CTAs: evict-unchanged, so the later
// readers can still hit. Not evict-normal: that hint streamed 11-16% slower than no hint at
// large shapes; with 8 draft tokens evict-unchanged was 2.6-4.5% faster than evict-normal in
// graphs, and faster than no hint in most cells (docs/benchmarking.md, twenty-fourth session).
__device__ __forceinline__ uint64_t l2_stream_policy(bool read_once) {
  uint64_t first, unchanged;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(first));
  asm("createpolicy.fractional.L2::evict_unchanged.b64 %0, 1.0;" : "=l"(unchanged));
  return read_once ? first : unchanged;
}
__device__ __forceinline__ void cp_async_16_stream(void* smem, void const* gmem, bool valid, uint64_t policy) {
  unsigned const addr = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  int const bytes = valid ? 16 : 0;  // 0: zero-fill, nothing read
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;" ::"r"(addr), "l"(gmem), "r"(bytes),
               "l"(policy)
               : "memory");
}
// The same into a shared-memory address already converted (the small-page instance's per-row
// copy converts its tile's base once), issued only where `on` (a predicate, not a branch): a
// skipped row leaves its shared memory untouched.
__device__ __forceinline__ void cp_async_16_stream_if(unsigned smem, void const* gmem, bool valid, bool on,
                                                      uint64_t policy) {
  int const bytes = valid ? 16 : 0;  // 0: zero-fill, nothing read
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %4, 0;\n"
      " @p cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n}" ::"r"(smem),
      "l"(gmem), "r"(bytes), "l"(policy), "r"(int(on))
      : "memory");
}
// a * b + c for 32-bit unsigned a, b (one IMAD.WIDE.U32): per-row addresses whose page ids and
// byte strides are non-negative and below 2^32.
__device__ __forceinline__ uint64_t mad_wide_u32(unsigned a, unsigned b, uint64_t c) { return uint64_t(a) * b + c; }
// 4 bytes (e.g. a page id) into shared memory: unlike a load into a register, it leaves no
// register scoreboard pending, which the compiler would wait on at the next warp-level sync.
__device__ __forceinline__ void cp_async_4(void* smem, void const* gmem) {
  unsigned const addr = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(addr), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory"); }

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

}  // namespace baton::attention
