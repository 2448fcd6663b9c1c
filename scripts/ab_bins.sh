#!/usr/bin/env bash
# Alternate runs of two baton-bench binaries (same machine), printing the in-graph columns:
#   scripts/ab_bins.sh BIN_A BIN_B "bench args" [repeats]
set -uo pipefail
a=$1; b=$2; args=$3; reps=${4:-2}
for r in $(seq "$reps"); do
  for v in A B; do
    bin=$a; [ "$v" = B ] && bin=$b
    echo "== $v run $r: $args"
    $bin attention $args 2>&1 | grep -E "^\| (shape|[0-9]|mix)" | awk -F'|' '{printf "%-14s %9s %9s %9s %9s %9s %6s\n", $2, $4, $5, $6, $7, $8, $9}'
  done
done
