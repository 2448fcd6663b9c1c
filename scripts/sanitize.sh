#!/usr/bin/env bash
# compute-sanitizer's racecheck (shared-memory hazards) and synccheck (barrier misuse) over the
# attention tests that cover the producer's and reducer's paths (the large reducer form's fp16
# store among them), and over the metadata tests:
# one process per test and tool, in parallel (the slowest took ~5 min, 304 s, under racecheck on
# an H200 of 16 cores in the thirty-seventh session). Needs a built GPU test binary:
#   scripts/sanitize.sh [build/release/tests/baton_gpu_tests]
# SANITIZE_ONLY=REGEX runs only the filters it matches; SANITIZE_LIMIT_S caps each process.
# Full logs go to $OUT (or ./gpu-logs); prints one summary line per (tool, test) and exits
# non-zero if any reported a hazard, an error, a failure or ran past its time limit.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/release/tests/baton_gpu_tests}
out=${OUT:-gpu-logs}; mkdir -p "$out"
limit=${SANITIZE_LIMIT_S:-400}
filters=(
  'DecodeAttention.EdgeLengthsOneSplit'
  'DecodeAttention.EdgeLengthsThreeAndMaxSplits'
  'DecodeAttention.MoreItemsThanCtasAndSeveralPasses'
  'DecodeAttention.ManyRequestsSeveralStepsAndPasses'
  'DecodeAttention.ManyRequestsRunOnIntoTheNextItem'
  'DecodeAttention.ItemSearchAtThirtyTwoRequests'
  'DecodeAttention.GroupsAndLayouts'
  'DecodeAttention.HeadDimsAndDtypes'
  'DecodeAttention.AllPageSizes'
  'DecodeAttention.SmallPagesMatchPage64Bitwise'
  'DecodeAttention.DraftTokensCausal'
  'DecodeAttention.PairedRowsMatchReference:DecodeAttention.EarlyReadsTwoRowChunksMatchBitwise:DecodeAttention.EarlyReadsPairedRowsMatchBitwise'
  'DecodeAttention.SingleLaunchMatchesTwoKernelsBitwise'
  'DecodeAttention.SlidingWindowShorterAndLonger:DecodeAttention.SoftcapAlibiAndScale:DecodeAttention.SinksCountedOnceWithManySplits'
  'DecodeAttention.ReducerFormsAllHeadDims'
  'DecodeAttention.EarlyReadsChainOfLayersSharingTheWorkspace'
  'AttentionInputs.OutOfRangeDeviceValuesAreClamped:AttentionInputs.StridedQueriesAndEveryDraftLength'
  'AttentionInputs.CustomSoftmaxScale:AttentionInputs.EveryKeyCountedOnce:AttentionInputs.MaxSplitsAtTheLimitAndNoLse'
  'AttentionInputs.SmallPagesAndSingleLaunchSameBitsPdlAndGraph'
  'AttentionInputs.Fp16OutputsSaturateInsteadOfInf:AttentionInputs.OutputAndLseLayouts:DecodeAttention.ManySplitsPastThirtyTwo'
  'DecodeMetadata.*:PlanKvSplits.*'
  'Seeded/SpecPageTable.*'
  'Seeded/DecodeMetadataSweep.*ps1_b7_*:Seeded/DecodeMetadataSweep.*ps64_b256_*:Seeded/DecodeMetadataSweep.*ps256_b1000_*'
  'SpecPageTableEdges.*:DecodeAttention.GreenContextStream'
)
skip() { [[ -n "${SANITIZE_ONLY:-}" && ! "${filters[$1]}" =~ $SANITIZE_ONLY ]]; }  # a regex: run the filters it matches
for i in "${!filters[@]}"; do
  skip "$i" && continue
  for tool in racecheck synccheck; do
    ( timeout "$limit" compute-sanitizer --tool "$tool" --error-exitcode 3 "$bin" --gtest_filter="${filters[$i]}" \
        > "$out/${tool}_$i.log" 2>&1
      echo "rc $?" >> "$out/${tool}_$i.log" ) &
  done
done
wait
bad=0
for tool in racecheck synccheck; do
  for i in "${!filters[@]}"; do
    skip "$i" && continue
    log="$out/${tool}_$i.log"
    rc=$(tail -1 "$log" | awk '{print $2}')
    [ "$rc" = 0 ] || bad=1
    printf '%-9s rc %-3s %s | %s\n' "$tool" "$rc" "$(grep -m1 -oE '(RACECHECK|ERROR) SUMMARY: [0-9]+ [a-z ]+' "$log")" "${filters[$i]:0:80}"
  done
done
exit $bad
