// The attention producer's row packing, shared by the attention host code and the split
// planner (which counts the producer's CTAs per request): a CTA computes up to
// rows_per_cta(rows, head_dim) packed query rows (draft token x query head) of one kv head,
// so a kv head with group * q_len rows takes row_chunks(group, q_len, head_dim) CTAs. Host
// and device code may include it.
#pragma once

#include <cstdint>

namespace baton::attention {

constexpr int kRowsPerCta = 16;      // packed query rows (t * group + g) per producer CTA
constexpr int kPairRowsPerCta = 32;  // the paired wide form: two 16-row halves per K/V tile load

// Up to 16 rows: one CTA (the narrow form up to 8, else the wide form). More (draft tokens,
// or group 16 with q_len > 1): 32 per CTA at head_dim <= 128, where a warp's accumulators for
// two halves fit its registers, so that one tile load serves twice the rows; 16 at head_dim
// 256. head_dim 0 counts as 128 (SplitPlanParams::head_dim left unset).
constexpr int rows_per_cta(int64_t rows, int head_dim) {
  return rows > kRowsPerCta && head_dim <= 128 ? kPairRowsPerCta : kRowsPerCta;
}

constexpr int64_t row_chunks(int64_t group, int64_t q_len, int head_dim) {
  int64_t const rows = group * q_len;
  int64_t const per = rows_per_cta(rows, head_dim);
  return (rows + per - 1) / per;
}

}  // namespace baton::attention
