#include "reference/metadata_ref.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace baton::ref {
namespace {

constexpr int32_t kNegative = 1, kClamped = 2, kPoolIndex = 4, kSwaSlot = 8;

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t clamp_len(int64_t len, int64_t max_len, int32_t& flags) {
  if (len < 0) {
    flags |= kNegative;
    return 0;
  }
  if (len > max_len) {
    flags |= kClamped;
    return max_len;
  }
  return len;
}

// a + b saturated at the int64 limits, as the kernels' add_sat (metadata_common.cuh).
int64_t add_sat(int64_t a, int64_t b) {
  if (b > 0 && a > INT64_MAX - b) return INT64_MAX;
  if (b < 0 && a < INT64_MIN - b) return INT64_MIN;
  return a + b;
}

void write_prefix(std::vector<int32_t> const& lens, std::vector<int32_t>& cu) {
  cu.assign(lens.size() + 1, 0);
  int64_t total = 0;
  for (size_t i = 0; i < lens.size(); ++i) {
    cu[i] = static_cast<int32_t>(total);
    total += lens[i];
  }
  cu[lens.size()] = static_cast<int32_t>(total);
}

}  // namespace

IntMatrix IntMatrix::make(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride, int32_t fill) {
  IntMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.row_stride = row_stride;
  m.col_stride = col_stride;
  int64_t const extent = rows == 0 || cols == 0 ? 0 : (rows - 1) * row_stride + (cols - 1) * col_stride + 1;
  m.data.assign(static_cast<size_t>(std::max<int64_t>(extent, 1)), fill);
  return m;
}

std::vector<int32_t> plan_kv_splits(std::vector<int32_t> const& lens, SplitPlan const& plan) {
  std::vector<int32_t> splits(lens.size());
  if (lens.empty()) return splits;
  int64_t max_len = 0, min_len = INT64_MAX;
  for (int32_t l : lens) {
    int64_t const v = std::max<int32_t>(l, 0);
    max_len = std::max(max_len, v);
    min_len = std::min(min_len, v);
  }
  int const group = plan.num_q_heads / plan.num_kv_heads;
  // The attention producer's CTAs per request for the balanced plan (16 packed rows of a kv
  // head each; past 16 rows, 32 at head_dim <= 128); SGLang's rule for its heuristic (the same
  // when q_len is 1).
  int64_t const rows = int64_t(group) * plan.q_len;
  int64_t const rows_per_cta = rows > 16 && plan.head_dim <= 128 ? 32 : 16;
  int64_t const per_request = plan.ctas_per_wave > 0 ? int64_t(plan.num_kv_heads) * cdiv(rows, rows_per_cta)
                              : group == 1          ? plan.num_q_heads
                                                    : cdiv(plan.num_q_heads, std::min(16, group));
  if (plan.ctas_per_wave > 0) {  // balanced: about ctas_per_wave CTAs of equal work
    int64_t total = 0;
    for (int32_t l : lens) total += std::max<int32_t>(l, 0);
    int64_t wave = plan.ctas_per_wave;
    // The chunk that cuts the batch into about `waves` x wave CTAs of equal work.
    auto chunk_for = [&](int64_t waves) {
      return std::max<int64_t>({cdiv(std::max<int64_t>(total, 1) * per_request, waves * wave), plan.min_keys_per_split, 1});
    };
    // Ragged batches (longest planned length > 2 x the shortest) with room in the wave and a
    // two-wave chunk of at least 512 keys: the plan for two waves (metadata_common.cuh, plan_waves).
    bool const ragged = std::max<int64_t>(max_len, 1) > 2 * std::max<int64_t>(min_len, 1);
    bool const room = static_cast<int64_t>(lens.size()) * per_request < wave;
    bool const doubled = ragged && room && wave <= (1 << 29) && chunk_for(2) >= 512;
    if (doubled) wave *= 2;
    int64_t const chunk = chunk_for(1);
    // Past the wave (the batch alone fills it, or a fit would starve the long requests): the
    // chunk for two waves, floor(len / chunk_over) splits.
    int64_t const chunk_over = chunk_for(2);
    // Second pass (metadata_common.cuh, balanced_chunk2): every request takes at least one CTA
    // per kv head; the CTAs left are shared by the keys of the requests longer than the chunk;
    // 8 bisection steps between the chunk and that bound find about the smallest chunk whose
    // splits fit the wave. Splits of a chunk: ceil(len / chunk), held to the key floor (metadata_common.cuh).
    auto splits_of = [&](int64_t len, int64_t c) {
      int64_t n = cdiv(len, c);
      // The key floor: floor(len / min_keys) splits at most, except that a request the floor
      // splits into 2 or more keeps the rounded-up count up to 8 (the reducer merges 8 splits in
      // one round trip, and rounding up gives shorter splits).
      if (plan.min_keys_per_split > 0) {
        int64_t const floor_n = len / plan.min_keys_per_split;
        if (n > floor_n && (n > 8 || floor_n < 2)) n = floor_n;
      }
      return std::clamp<int64_t>(n, 1, plan.max_splits);
    };
    // About the smallest chunk whose splits fit w CTAs (metadata_common.cuh, fit_chunk):
    // the keys of the requests longer than lo share the CTAs left after one per request;
    // 8 bisection steps between lo and that bound. 0: no CTA left, or no request longer than lo.
    auto fit_chunk = [&](int64_t lo, int64_t w) -> int64_t {
      int64_t long_len = 0;
      for (int32_t l : lens) {
        if (std::max<int32_t>(l, 1) > lo) long_len += l;
      }
      int64_t const slots = w - static_cast<int64_t>(lens.size()) * per_request;
      if (slots <= 0 || long_len == 0) return 0;
      int64_t hi = std::max(lo, std::min(cdiv(long_len * per_request, slots), max_len));
      for (int k = 0; k < 8 && lo < hi; ++k) {
        int64_t const mid = lo + (hi - lo) / 2;
        int64_t ctas = 0;
        for (int32_t l : lens) ctas += splits_of(std::max<int32_t>(l, 1), mid);
        if (ctas * per_request <= w) {
          hi = mid;
        } else {
          lo = mid + 1;
        }
      }
      return hi;
    };
    int64_t chunk2 = fit_chunk(chunk, wave);
    if (chunk2 > 2 * chunk) chunk2 = 0;  // a starving fit: about one chunk per split instead
    // A poor one-wave fit (not doubled; a two-wave chunk of at least 512 keys): past the wave
    // instead (metadata_common.cuh, kPoorFitNum), with about the smallest chunk whose splits fit
    // two waves (> 0: some request is longer than chunk >= chunk_over, and two waves leave more
    // CTAs over than one). B1: the fit's longest split; B2: the items past the
    // wave per kv head over its CTAs, rounded up, times the longest item. Poor: B2 < 19/20 of
    // B1, or fewer than 5/6 of the wave's CTAs in the fit and B2 <= B1.
    auto past_splits = [&](int64_t len) { return std::clamp<int64_t>(len / chunk_over, 1, plan.max_splits); };
    if (chunk2 > 0 && !doubled && chunk_over >= 512) {
      int64_t const over = fit_chunk(chunk_over, 2 * wave);
      int64_t fit = 0, busiest1 = 0, items = 0, longest_item = 0;
      for (int32_t l : lens) {
        int64_t const len = std::max<int32_t>(l, 1);
        int64_t const s1 = splits_of(len, chunk2), s2 = splits_of(len, over);
        fit += s1;
        busiest1 = std::max(busiest1, cdiv(len, s1));
        items += s2;
        longest_item = std::max(longest_item, cdiv(len, s2));
      }
      int64_t const busiest2 = cdiv(items, wave / per_request) * longest_item;
      bool const underfilled = fit * per_request * 6 < 5 * wave;
      if (busiest2 * 20 < busiest1 * 19 || (underfilled && busiest2 <= busiest1)) chunk2 = over;
    }
    for (size_t b = 0; b < lens.size(); ++b) {
      int64_t const len = std::max<int32_t>(lens[b], 1);
      int64_t const n = chunk2 > 0 ? splits_of(len, chunk2) : past_splits(len);
      splits[b] = static_cast<int32_t>(std::clamp<int64_t>(n, 1, plan.max_splits));
    }
    return splits;
  }
  max_len = std::max<int64_t>(max_len, 1);
  min_len = std::max<int64_t>(min_len, 1);
  // 1. near-uniform batches (max < 1.25 min) count as uniform
  if (max_len * 8 < min_len * 10) min_len = max_len;
  // 2. splits so the longest request is cut into pieces about the shortest's length
  int64_t const s1 = std::min<int64_t>(cdiv(max_len, min_len), plan.max_splits);
  int64_t const c1 = cdiv(max_len, s1);
  // 3.-5. splits so the grid fills the GPU, growing with log2 of the length
  int64_t const cores =
      static_cast<int64_t>(plan.num_sms * std::max(std::log2(static_cast<double>(max_len) / 64.0), 1.0));
  int64_t const grid = static_cast<int64_t>(lens.size()) * per_request;
  int64_t const s2 = std::min<int64_t>(cdiv(cores, grid), plan.max_splits);
  int64_t const c2 = cdiv(max_len, s2);
  // 6.
  for (size_t b = 0; b < lens.size(); ++b) {
    int64_t const len = std::max<int32_t>(lens[b], 1);
    int64_t n = std::max(cdiv(len, c1), cdiv(len, c2));
    if (plan.min_keys_per_split > 0) n = std::min(n, cdiv(len, plan.min_keys_per_split));  // baton's cap
    splits[b] = static_cast<int32_t>(n);
  }
  return splits;
}

void build_decode_metadata(DecodeMetadataCase const& in, DecodeMetadataResult& out) {
  int64_t const batch = static_cast<int64_t>(in.seq_lens.size());
  int64_t const max_context = in.req_to_token.cols;
  int shift = 0;
  while ((1 << shift) < in.page_size) ++shift;

  out.cache_seqlens.assign(batch, 0);
  for (int64_t b = 0; b < batch; ++b) {
    out.cache_seqlens[b] =
        static_cast<int32_t>(clamp_len(add_sat(in.seq_lens[b], in.seq_len_delta), max_context, out.error_flags));
  }
  write_prefix(out.cache_seqlens, out.cu_seqlens_k);
  if (in.plan_splits) out.num_kv_splits = plan_kv_splits(out.cache_seqlens, in.plan);

  int64_t const swa_size = static_cast<int64_t>(in.full_to_swa.size());
  for (int64_t b = 0; b < batch; ++b) {
    int64_t const num_pages = cdiv(out.cache_seqlens[b], in.page_size);
    int64_t row = in.req_pool_indices[b];
    if (row < 0 || row >= in.req_to_token.rows) {
      if (num_pages > 0) out.error_flags |= kPoolIndex;
      row = 0;
    }
    for (int64_t j = 0; j < num_pages; ++j) {
      int32_t const slot = in.req_to_token.at(row, j * in.page_size);
      out.page_table.at(b, j) = slot >> shift;
      if (swa_size > 0) {
        int64_t const idx = slot < 0 ? slot + swa_size : slot;  // -1 reads the last entry
        int64_t swa = 0;
        if (idx >= 0 && idx < swa_size) {
          swa = in.full_to_swa[idx];
        } else {
          out.error_flags |= kSwaSlot;
        }
        out.swa_page_table.at(b, j) = static_cast<int32_t>(swa >> shift);
      }
    }
    for (int64_t j = num_pages; j < in.fill_columns; ++j) {
      out.page_table.at(b, j) = 0;
      if (swa_size > 0) out.swa_page_table.at(b, j) = 0;
    }
  }
}

void build_spec_page_table(SpecPageTableCase const& in, SpecPageTableResult& out) {
  int64_t const rows = in.committed.rows * in.num_draft_tokens;
  int64_t const max_cols = out.page_table.cols;
  bool const lens_per_row = static_cast<int64_t>(in.committed_lens.size()) == rows && in.num_draft_tokens > 1;
  out.cache_seqlens.assign(rows, 0);
  for (int64_t m = 0; m < rows; ++m) {
    int64_t const a_row = m / in.num_draft_tokens;
    int64_t const len_a = clamp_len(in.committed_lens[lens_per_row ? m : a_row], max_cols, out.error_flags);
    int64_t const len_b = clamp_len(in.draft_lens[m], max_cols - len_a, out.error_flags);
    int64_t const start = in.start.empty() ? 0 : in.start[m];
    for (int64_t n = 0; n < len_a; ++n) {
      bool const inside = start >= -n && start < in.committed.cols - n;  // start + n, without overflow
      out.page_table.at(m, n) = inside ? in.committed.at(a_row, start + n) : 0;
    }
    for (int64_t n = 0; n < len_b; ++n) {
      out.page_table.at(m, len_a + n) = n < in.draft.cols ? in.draft.at(m, n) : 0;
    }
    out.cache_seqlens[m] = static_cast<int32_t>(len_a + len_b);
  }
  write_prefix(out.cache_seqlens, out.cu_seqlens_k);
}

}  // namespace baton::ref
