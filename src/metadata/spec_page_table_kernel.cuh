// build_spec_page_table kernel (decode-metadata.md section 2): the speculative-decoding
// concat of the committed page table and the draft ("expand") table.
//
// Row m of rows = batch_size * R:
//   len_a = committed_lens[m / R] (or [m] when given per row), s = start[m] (default 0)
//   page_table[m, n] = committed[m / R, s + n]         for n < len_a
//                    = draft[m, n - len_a]             for len_a <= n < len_a + draft_lens[m]
//   a source column outside [0, its row's width) reads 0; columns past the total are untouched.
//   cache_seqlens[m] = min(len_a + draft_lens[m], max_cols), cu_seqlens_k its exclusive scan.
//
// Grid map: CTA 0 writes lengths and the prefix sum; CTAs 1..G-1 loop over work items
// (item = chunk * rows + m, kColsPerItem columns of one row). Each thread does 8 columns
// strided by 256 with all loads issued before the stores.
//
// PDL contract: every input may come from an earlier kernel of the step, so nothing is read
// before wait_on_prior_grid(); every CTA waits. Triggers first thing (the attention that
// follows waits for completion anyway, so the trigger only lets it launch early).
#pragma once

#include <cstdint>

#include "common/index.cuh"
#include "common/pdl.cuh"
#include "metadata/metadata_common.cuh"

namespace baton::metadata {

struct SpecPageTableParams {
  int32_t const* committed;    // [batch_size, width_a]
  int64_t a_row_stride, a_col_stride, width_a;
  IndexPtr committed_lens;     // [batch_size] or [rows]
  bool lens_per_row;
  IndexPtr start;              // [rows] or undefined
  int32_t const* draft;        // [rows, width_b]
  int64_t b_row_stride, b_col_stride, width_b;
  IndexPtr draft_lens;         // [rows]
  int num_draft_tokens;        // R
  int rows;                    // batch_size * R
  int64_t max_cols;            // page_table columns
  int num_items;
  int32_t* page_table;         // [rows, max_cols]
  int64_t pt_row_stride, pt_col_stride;
  int32_t* cache_seqlens;      // [rows]
  int32_t* cu_seqlens_k;       // [rows + 1]
  int32_t* error_flags;        // [1] or null
};

struct SpecRow {
  int64_t len_a, len_b, start;
};

// Each part clamped to >= 0 and the total to max_cols (draft part first to give way).
__device__ __forceinline__ SpecRow spec_row(SpecPageTableParams const& p, int m, int32_t& bits) {
  SpecRow r;
  int64_t const a_index = p.lens_per_row ? m : m / p.num_draft_tokens;
  r.len_a = clamp_length(p.committed_lens.load(a_index), p.max_cols, bits);
  r.len_b = clamp_length(p.draft_lens.load(m), p.max_cols - r.len_a, bits);
  r.start = p.start.defined() ? p.start.load(m) : 0;
  return r;
}

struct SpecLength {
  SpecPageTableParams const& p;
  __device__ int64_t operator()(int m, int32_t& bits) const {
    SpecRow const r = spec_row(p, m, bits);
    return r.len_a + r.len_b;
  }
};

template <bool kWait = true>
__global__ void __launch_bounds__(kThreads)
    spec_page_table_kernel(__grid_constant__ SpecPageTableParams const p) {
  allow_next_grid();  // next: attention over the draft tokens (waits for completion)
  PdlGate<kWait> gate;  // inputs may come from the previous kernel: wait before any read
  gate.before_read();

  if (blockIdx.x == 0) {
    write_lengths(p.rows, SpecLength{p}, p.cache_seqlens, p.cu_seqlens_k, SplitPlanDevice{}, gate,
                  p.error_flags);
    return;
  }
  for (int item = blockIdx.x - 1; item < p.num_items; item += gridDim.x - 1) {
    int const m = item % p.rows;
    int64_t const col0 = int64_t(item / p.rows) * kColsPerItem;
    int32_t ignored = 0;  // CTA 0 reports clamping
    SpecRow const r = spec_row(p, m, ignored);
    int64_t const total = r.len_a + r.len_b;
    if (col0 >= total) continue;  // uniform across the CTA

    int32_t const* row_a = p.committed + int64_t(m / p.num_draft_tokens) * p.a_row_stride;
    int32_t const* row_b = p.draft + int64_t(m) * p.b_row_stride;
    int32_t value[kColsPerThread];
#pragma unroll
    for (int k = 0; k < kColsPerThread; ++k) {
      int64_t const n = col0 + threadIdx.x + k * kThreads;
      int32_t v = 0;
      if (n < r.len_a) {
        // start + n in [0, width_a), compared without forming the sum, which is past the int64
        // range (undefined) for a start near INT64_MAX (0 <= n < 2^31: neither side overflows).
        if (r.start >= -n && r.start < p.width_a - n) v = row_a[(r.start + n) * p.a_col_stride];
      } else if (n < total) {
        int64_t const src = n - r.len_a;
        if (src < p.width_b) v = row_b[src * p.b_col_stride];
      }
      value[k] = v;
    }
#pragma unroll
    for (int k = 0; k < kColsPerThread; ++k) {
      int64_t const n = col0 + threadIdx.x + k * kThreads;
      if (n < total) p.page_table[int64_t(m) * p.pt_row_stride + n * p.pt_col_stride] = value[k];
    }
  }
}

}  // namespace baton::metadata
