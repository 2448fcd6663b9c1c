// build_decode_metadata kernel (decode-metadata.md section 1).
//
// Computes, in one launch:
//   cache_seqlens[b] = clamp(seq_lens[b] + delta, 0, max_context)
//   cu_seqlens_k     = exclusive prefix of cache_seqlens, total last (parallel block scan)
//   page_table[b, j] = req_to_token[req_pool_indices[b], j * page_size] >> log2(page_size)
//                      for j < ceil(cache_seqlens[b] / page_size); 0 for j < fill_columns
//   swa_page_table   = full_to_swa[slot] >> log2(page_size) for the same columns (optional)
//   num_kv_splits    = the split heuristic (optional)
//
// Grid map (1-D, fixed by capacities so a captured graph never changes):
//   CTA 0          -> lengths, prefix sum, split plan (one CTA scans the whole batch).
//   CTAs 1..G-1    -> page-table work items, item = chunk * batch_size + b, strided by G-1:
//                     each item is kColsPerItem (2048) columns of one row; at page_size
//                     >= 8, where every entry is its own 32-byte sector, 64..2048 columns
//                     chosen so items about fill the GPU (a long row on one CTA would queue
//                     hundreds of sector loads on one SM).
//                     Items past the
//                     request's page count exit after one length load, so a table sized for
//                     128K tokens costs little when the batch is short.
//   kVec path (page_size 1, unit column strides, 16-byte aligned rows): each thread moves
//   8 consecutive columns with two 16-byte loads, both in flight before the stores.
//   Otherwise each thread handles 8 columns strided by 256 (coalesced stores; loads strided
//   by page_size), again all loads first.
//
// Bytes: reads 4 B per page of req_to_token (one 32-byte sector per page when page_size >=
// 8), writes 4 B per page-table entry; 256 x 16K at page 1 is 16 MB + 16 MB, ~8 us at 4 TB/s.
//
// PDL contract: by default every input (seq_lens, req_pool_indices, req_to_token,
// full_to_swa) may be written by an earlier kernel of the step, so nothing is read before
// wait_on_prior_grid(). With inputs_written_before_chain the caller asserts those inputs were
// written before the chain started (rule 1's step-invariant data): each CTA then issues its
// first item's loads before the wait and waits only before its first write. Either way every
// CTA waits on every path (PdlGate), and clamping faults are reported after the wait. The
// kernel triggers first thing: its dependents (qk_norm_rope_append, attention) wait for its
// completion, so the trigger only lets their launch and prologue overlap this kernel.
#pragma once

#include <cstdint>

#include "common/index.cuh"
#include "common/pdl.cuh"
#include "metadata/metadata_common.cuh"

namespace baton::metadata {

struct DecodeMetadataParams {
  IndexPtr seq_lens;           // [batch_size]
  IndexPtr req_pool_indices;   // [batch_size]
  int32_t const* req_to_token; // [num_rows, max_context]
  int64_t rt_row_stride, rt_col_stride;
  int64_t num_rows, max_context;
  int64_t const* full_to_swa;  // [swa_map_size] or null
  int64_t swa_map_size;
  int64_t seq_len_delta;
  int batch_size;
  int page_shift;              // log2(page_size)
  int64_t max_pages;           // page_table columns
  int64_t fill_columns;        // 0: untouched past a request's pages
  int cols_per_item;           // kColsPerItem; 64..kColsPerItem for page_size >= 8
  int num_items;               // batch_size * ceil(max(max_pages needed, fill) / cols_per_item)
  int32_t* cache_seqlens;      // [batch_size]
  int32_t* cu_seqlens_k;       // [batch_size + 1]
  int32_t* page_table;         // [batch_size, max_pages]
  int64_t pt_row_stride, pt_col_stride;
  int32_t* swa_page_table;     // [batch_size, max_pages] or null
  int64_t swa_row_stride, swa_col_stride;
  int32_t* error_flags;        // [1] or null
  SplitPlanDevice plan;
  bool inputs_written_before_chain;  // reads may precede the PDL wait (see metadata.h)
};

struct DecodeLength {
  DecodeMetadataParams const& p;
  __device__ int64_t operator()(int b, int32_t& bits) const {
    return clamp_length(add_sat(p.seq_lens.load(b), p.seq_len_delta), p.max_context, bits);
  }
};

// One page-table entry (and its SWA twin) from a token slot.
__device__ __forceinline__ void write_entry(DecodeMetadataParams const& p, int b, int64_t col,
                                            int32_t slot, int32_t& bits) {
  p.page_table[b * p.pt_row_stride + col * p.pt_col_stride] = slot >> p.page_shift;
  if (p.swa_page_table != nullptr) {
    int64_t idx = slot < 0 ? slot + p.swa_map_size : slot;
    int64_t swa = 0;
    if (idx >= 0 && idx < p.swa_map_size) {
      swa = p.full_to_swa[idx];
    } else {
      bits |= 1 << 3;
    }
    p.swa_page_table[b * p.swa_row_stride + col * p.swa_col_stride] =
        static_cast<int32_t>(swa >> p.page_shift);
  }
}

__device__ __forceinline__ void write_zero(DecodeMetadataParams const& p, int b, int64_t col) {
  p.page_table[b * p.pt_row_stride + col * p.pt_col_stride] = 0;
  if (p.swa_page_table != nullptr) p.swa_page_table[b * p.swa_row_stride + col * p.swa_col_stride] = 0;
}

// One work item: cols_per_item columns of one request's row.
struct Item {
  bool active;            // some column of the item must be written
  int b;
  int64_t col0, num_pages;
  int32_t const* src;     // the request's req_to_token row
};

__device__ __forceinline__ Item open_item(DecodeMetadataParams const& p, int item, int32_t& bits) {
  Item it{false, 0, 0, 0, nullptr};
  it.b = item % p.batch_size;  // 32-bit division: cheap
  it.col0 = int64_t(item / p.batch_size) * p.cols_per_item;
  // The length and the row load issue together; the row does not wait for the length.
  int64_t const raw_len = p.seq_lens.load(it.b);
  int64_t row = p.req_pool_indices.load(it.b);
  int32_t ignored = 0;  // CTA 0 reports clamped lengths
  int64_t const len = clamp_length(add_sat(raw_len, p.seq_len_delta), p.max_context, ignored);
  it.num_pages = (len + (int64_t(1) << p.page_shift) - 1) >> p.page_shift;
  int64_t const cols_end = it.num_pages > p.fill_columns ? it.num_pages : p.fill_columns;
  it.active = it.col0 < cols_end;  // uniform across the CTA
  if (row < 0 || row >= p.num_rows) {  // clamp to row 0, report
    if (it.active && it.num_pages > 0) bits |= 1 << 2;
    row = 0;
  }
  it.src = p.req_to_token + row * p.rt_row_stride;
  return it;
}

template <bool kVec, bool kWait = true>
__global__ void __launch_bounds__(kThreads, kVec ? 6 : 4)
    decode_metadata_kernel(__grid_constant__ DecodeMetadataParams const p) {
  // The trigger needs no data: dependents wait for this grid's completion anyway, so
  // triggering first only lets their launch and prologue start as early as possible.
  allow_next_grid();  // next: qk_norm_rope_append / attention
  PdlGate<kWait> gate{p.inputs_written_before_chain};

  if (blockIdx.x == 0) {
    write_lengths(p.batch_size, DecodeLength{p}, p.cache_seqlens, p.cu_seqlens_k, p.plan, gate,
                  p.error_flags);
    return;
  }
  int32_t bits = 0;
  int const stride = gridDim.x - 1;
  for (int item = blockIdx.x - 1; item < p.num_items; item += stride) {
    gate.before_read();
    Item const it = open_item(p, item, bits);
    if (!it.active) continue;
    if constexpr (kVec) {
      constexpr int kVecs = kColsPerThread / 4;
      int64_t const c = it.col0 + threadIdx.x * kColsPerThread;
      if (c + kColsPerThread <= it.num_pages) {
        int4 v[kVecs];
#pragma unroll
        for (int k = 0; k < kVecs; ++k) v[k] = reinterpret_cast<int4 const*>(it.src + c)[k];
        gate.before_write();
        if (p.swa_page_table == nullptr) {  // page_shift == 0 on this path
          int4* dst = reinterpret_cast<int4*>(p.page_table + it.b * p.pt_row_stride + c);
#pragma unroll
          for (int k = 0; k < kVecs; ++k) dst[k] = v[k];
        } else {
#pragma unroll
          for (int k = 0; k < kVecs; ++k) {
            write_entry(p, it.b, c + 4 * k + 0, v[k].x, bits);
            write_entry(p, it.b, c + 4 * k + 1, v[k].y, bits);
            write_entry(p, it.b, c + 4 * k + 2, v[k].z, bits);
            write_entry(p, it.b, c + 4 * k + 3, v[k].w, bits);
          }
        }
        continue;
      }
      // The row's tail and the fill region, one column at a time (few registers).
      gate.before_write();
#pragma unroll
      for (int k = 0; k < kColsPerThread; ++k) {
        int64_t const col = c + k;
        if (col < it.num_pages) {
          write_entry(p, it.b, col, it.src[col], bits);
        } else if (col < p.fill_columns) {
          write_zero(p, it.b, col);
        }
      }
      continue;
    }
    // Scalar path: loads first, 8 in flight per thread; columns strided by the CTA width so
    // the stores coalesce.
    int64_t const base = it.col0 + threadIdx.x;
    int64_t const step = kThreads;
    int64_t const item_end = it.col0 + p.cols_per_item;
    int32_t slot[kColsPerThread];
#pragma unroll
    for (int k = 0; k < kColsPerThread; ++k) {
      int64_t const col = base + k * step;
      slot[k] = col < it.num_pages && col < item_end ? it.src[(col << p.page_shift) * p.rt_col_stride] : 0;
    }
    gate.before_write();
#pragma unroll
    for (int k = 0; k < kColsPerThread; ++k) {
      int64_t const col = base + k * step;
      if (col >= item_end) break;
      if (col < it.num_pages) {
        write_entry(p, it.b, col, slot[k], bits);
      } else if (col < p.fill_columns) {
        write_zero(p, it.b, col);
      }
    }
  }
  gate.before_write();  // every CTA waits, also one with no active item
  if (bits != 0) set_error(p.error_flags, bits);
}

}  // namespace baton::metadata
