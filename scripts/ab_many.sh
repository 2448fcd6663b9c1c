#!/usr/bin/env bash
# Alternating runs of several baton-bench builds or settings on one machine (rounds of A, B,
# C, ...), then the median per shape and column (scripts/ab_summary.py):
#   scripts/ab_many.sh ROUNDS "bench args" NAME=CMD [NAME=CMD ...]
# CMD is a command line that runs baton-bench without its subcommand, e.g.
#   scripts/ab_many.sh 3 "attention --graph-only --only 1x1K,8x1K" \
#     main=build/bins/main "warm=env BATON_WARM=1 build/bins/new"
# COLUMNS (default "graph us") names the table columns to summarize, comma-separated, e.g.
# COLUMNS="graph us,early 1L,cold us". Each run's output goes to $OUT/ab_<NAME>_<round>.txt
# ($OUT: default gpu-logs).
set -uo pipefail
[ $# -ge 3 ] || { sed -n '2,11p' "$0"; exit 2; }
rounds=$1; args=$2; shift 2
out=${OUT:-gpu-logs}; mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
names=(); cmds=()
for v in "$@"; do
  names+=("${v%%=*}"); cmds+=("${v#*=}")
done
for r in $(seq "$rounds"); do
  for i in "${!names[@]}"; do
    # shellcheck disable=SC2086  # CMD and the bench args are word lists on purpose
    ${cmds[$i]} $args > "$out/ab_${names[$i]}_$r.txt" 2>&1 ||
      echo "run ${names[$i]} $r failed (rc $?): see $out/ab_${names[$i]}_$r.txt"
  done
done
IFS=',' read -r -a cols <<< "${COLUMNS:-graph us}"
python3 "$here/ab_summary.py" "$out" "${cols[@]}"
