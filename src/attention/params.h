// The kernel parameters of one decode_attention call, built from its validated arguments
// (decode_attention.cu). Internal: the tests use it to launch the kernels directly (the race
// harness's mutation test).
#pragma once

#include "attention/attention_common.cuh"
#include "attention/validate.h"
#include "baton/attention.h"

namespace baton::attention {

// `a` must have passed validate(a, &s); the workspace is used only when max_splits > 1 (a null
// one leaves the scratch pointers null: planned_trigger_after_wait, which launches nothing).
AttentionParams make_params(DecodeAttentionArgs const& a, AttentionShape const& s, Workspace workspace);

}  // namespace baton::attention
