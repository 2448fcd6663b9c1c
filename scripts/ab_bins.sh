#!/usr/bin/env bash
# Alternate runs of two baton-bench binaries (same machine), printing the in-graph columns;
# full output of each run under $OUT (default gpu-logs):
#   scripts/ab_bins.sh BIN_A BIN_B "bench args" [repeats]
set -uo pipefail
a=$1; b=$2; args=$3; reps=${4:-2}
out=${OUT:-gpu-logs}; mkdir -p "$out"
for r in $(seq "$reps"); do
  for v in A B; do
    bin=$a; [ "$v" = B ] && bin=$b
    log="$out/ab_${v}_$r.txt"
    $bin attention $args > "$log" 2>&1
    echo "== $v run $r: $bin $args"
    grep -E "^\| (shape|[0-9]|mix)" "$log" | awk -F'|' '{printf "%-14s %9s %9s %9s %9s %9s %6s\n", $2, $4, $5, $6, $7, $8, $9}'
  done
done
python3 "$(dirname "$0")/ab_summary.py" "$out"  # medians per shape (graph us)
