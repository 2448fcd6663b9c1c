// Host-side validation of the metadata ops: everything checked before any launch, with no
// CUDA call, so the CPU suite can exercise it.
#pragma once

#include "baton/metadata.h"

namespace baton::metadata {

Status validate(DecodeMetadataArgs const& args);
Status validate(SpecPageTableArgs const& args);
Status validate(PlanKvSplitsArgs const& args);
Status validate_split_plan(SplitPlanParams const& plan, char const* op);
// The attention grid's CTAs per request: the SGLang heuristic's ceil(num_q_heads / min(16,
// group)), or num_q_heads when group == 1 (decode-metadata.md 3.4); the balanced plan's
// num_kv_heads * attention::row_chunks(group, q_len, head_dim) (16 rows per CTA, or 32 past 16
// at head_dim <= 128), the same when q_len is 1.
int split_plan_ctas_per_request(SplitPlanParams const& plan);

}  // namespace baton::metadata
