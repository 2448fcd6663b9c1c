// Where decode_attention's producer triggers (producer_launch.cuh, launch_producer), as a
// query for tests. Internal, plain C++ (no CUDA headers), so host-only tests can include it.
#pragma once

#include "baton/attention.h"

namespace baton::attention {

// Where the producer of decode_attention(a, ...) would trigger: true right after its PDL wait
// (early reads, and no reducer or a small one whose CTAs all fit beside the producer's),
// false after its last KV loop. Decided as a call decides it, on the current device, with
// nothing launched. `a` must be valid (the Status says why not); the workspace is not needed.
Status planned_trigger_after_wait(DecodeAttentionArgs const& a, bool* after_wait);

}  // namespace baton::attention
