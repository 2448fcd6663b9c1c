// CPU reference of the decode-metadata ops (decode-metadata.md): the spec in plain C++.
// Outputs are updated in place, so columns the op must leave untouched keep whatever the
// caller put there (the poison).
#pragma once

#include <cstdint>
#include <vector>

namespace baton::ref {

// A row-major-addressed int32 matrix with arbitrary strides over `data`.
struct IntMatrix {
  std::vector<int32_t> data;
  int64_t rows = 0, cols = 0, row_stride = 0, col_stride = 1;
  int32_t& at(int64_t r, int64_t c) { return data[r * row_stride + c * col_stride]; }
  int32_t at(int64_t r, int64_t c) const { return data[r * row_stride + c * col_stride]; }
  // rows x cols, row stride `row_stride` (>= cols * col_stride), all filled with `fill`.
  static IntMatrix make(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride, int32_t fill);
};

struct SplitPlan {
  int num_q_heads = 0, num_kv_heads = 0, max_splits = 0, num_sms = 0;
  int min_keys_per_split = 0;  // 0: the SGLang baseline
  int ctas_per_wave = 0;       // > 0: baton's balanced plan (SplitPlanParams::ctas_per_wave)
  int q_len = 1;               // balanced plan: CTAs per request = kv heads x ceil(group x q_len / R),
  int head_dim = 0;            // R = 16 packed rows per CTA, or 32 past 16 rows at head_dim <= 128 (0: 128)
};

// SGLang's split heuristic, or the balanced plan; a length of 0 plans as 1 token.
std::vector<int32_t> plan_kv_splits(std::vector<int32_t> const& cache_seqlens, SplitPlan const& plan);

struct DecodeMetadataCase {
  std::vector<int64_t> seq_lens;
  int64_t seq_len_delta = 0;
  std::vector<int64_t> req_pool_indices;
  IntMatrix req_to_token;           // [num_rows, max_context]
  int page_size = 1;
  std::vector<int64_t> full_to_swa;  // empty: no SWA table
  int64_t fill_columns = 0;
  bool plan_splits = false;
  SplitPlan plan;
};

struct DecodeMetadataResult {
  std::vector<int32_t> cache_seqlens;  // [batch_size]
  std::vector<int32_t> cu_seqlens_k;   // [batch_size + 1]
  IntMatrix page_table;                // [batch_size, max_pages], pre-filled by the caller
  IntMatrix swa_page_table;            // same shape, used when full_to_swa is given
  std::vector<int32_t> num_kv_splits;  // [batch_size] when planned
  int32_t error_flags = 0;
};

void build_decode_metadata(DecodeMetadataCase const& in, DecodeMetadataResult& out);

struct SpecPageTableCase {
  int num_draft_tokens = 1;
  IntMatrix committed;                   // [batch_size, width_a]
  std::vector<int64_t> committed_lens;   // [batch_size] or [batch_size * R]
  std::vector<int64_t> start;            // empty or [batch_size * R]
  IntMatrix draft;                       // [batch_size * R, width_b]
  std::vector<int64_t> draft_lens;       // [batch_size * R]
};

struct SpecPageTableResult {
  IntMatrix page_table;                  // [rows, max_cols], pre-filled by the caller
  std::vector<int32_t> cache_seqlens;
  std::vector<int32_t> cu_seqlens_k;
  int32_t error_flags = 0;
};

void build_spec_page_table(SpecPageTableCase const& in, SpecPageTableResult& out);

}  // namespace baton::ref
