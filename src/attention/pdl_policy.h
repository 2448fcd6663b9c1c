// decode_attention under PdlMode::kAuto: where PDL is switched off because it was measured to
// cost (docs/pdl.md). Host-only, so the CPU tests check the rule.
#pragma once

#include "baton/launch.h"

namespace baton::attention {

// Batches past this many requests, in the default mode (no early reads, two kernels), launch
// both kernels without PDL under kAuto. On some H200s the default mode with PDL loses there:
// 128x2K +3.0% to +3.4% and 64x4K +0.8% to +2.0% (GPU-82e5c952, four runs each over two
// builds), up to +8.7% at 64x4K on one machine of an earlier session; with early reads,
// single launch, or at batch <= 32, no loss past 2% was seen, and where PDL does save at
// those shapes it saves 0.1-0.5% (0.3-1.3 us of ~270). The cause is not known
// (docs/benchmarking.md); kOn keeps PDL.
constexpr int kAutoPdlMaxBatch = 32;

// The mode decode_attention's two launches use: `requested`, or kOff where kAuto would cost.
constexpr PdlMode attention_pdl(PdlMode requested, int batch, bool early_reads, bool single_launch) {
  bool const costs = batch > kAutoPdlMaxBatch && !early_reads && !single_launch;
  return requested == PdlMode::kAuto && costs ? PdlMode::kOff : requested;
}

}  // namespace baton::attention
