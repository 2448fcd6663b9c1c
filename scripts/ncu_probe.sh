#!/usr/bin/env bash
# ncu details of the attention kernels at one shape: scripts/ncu_probe.sh SHAPE [bench args...]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-logs}; mkdir -p "$out"
shape=$1; shift
ncu --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats \
  -k regex:"split_kv|merge" --launch-skip 2 --launch-count 2 build/release/bench/baton-bench attention --only "$shape" --profile "$@" \
  > "$out/ncu_$shape.txt" 2>&1
grep -E "split_kv|merge_splits|Duration|DRAM Throughput|Memory Throughput|Stall|Warp Cycles Per Issued|Issued Warp Per Scheduler|No Eligible|Achieved Occupancy|Registers Per|Theoretical Occupancy|Block Limit|Active Warps" "$out/ncu_$shape.txt" | cut -c1-130
