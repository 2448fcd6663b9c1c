#!/usr/bin/env bash
# Warp stall breakdown of the producer at one shape, with caches flushed between ncu passes
# (cold, the default) and kept (warm): scripts/ncu_stalls.sh SHAPE [bench args...]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-logs}; mkdir -p "$out"
shape=$1; shift
for cc in all none; do
  ncu --cache-control $cc --section WarpStateStats --metrics smsp__pcsamp_warps_issue_stalled_no_instructions,smsp__pcsamp_warps_issue_stalled_long_scoreboard,smsp__pcsamp_warps_issue_stalled_barrier,smsp__pcsamp_warps_issue_stalled_wait,smsp__pcsamp_warps_issue_stalled_short_scoreboard,smsp__pcsamp_warps_issue_stalled_math_pipe_throttle,smsp__pcsamp_warps_issue_stalled_branch_resolving,smsp__pcsamp_warps_issue_stalled_membar,smsp__pcsamp_warps_issue_stalled_lg_throttle,smsp__pcsamp_warps_issue_stalled_selected,smsp__pcsamp_sample_count \
    -k regex:"split_kv|merge" --launch-skip 2 --launch-count 2 build/release/bench/baton-bench attention --only "$shape" --profile "$@" \
    > "$out/ncu_stalls_${shape}_$cc.txt" 2>&1
  echo "== cache-control $cc"
  grep -E "split_kv_kernel|merge_splits_(medium_|large_)?kernel|Duration|pcsamp|Stall" "$out/ncu_stalls_${shape}_$cc.txt" | cut -c1-120
done
