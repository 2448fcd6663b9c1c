// The attention producer's row packing, shared by the attention host code and the split
// planner (which counts the producer's CTAs per request): a CTA computes up to kRowsPerCta
// packed query rows (draft token x query head) of one kv head, so a kv head with group *
// q_len rows takes row_chunks(group, q_len) CTAs. Host and device code may include it.
#pragma once

#include <cstdint>

namespace baton::attention {

constexpr int kRowsPerCta = 16;  // packed query rows (t * group + g) per producer CTA

constexpr int64_t row_chunks(int64_t group, int64_t q_len) { return (group * q_len + kRowsPerCta - 1) / kRowsPerCta; }

}  // namespace baton::attention
