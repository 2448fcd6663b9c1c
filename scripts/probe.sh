#!/usr/bin/env bash
# Ad-hoc probe on the GPU machine: build (release), tests, a split-policy sweep and ncu durations.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-logs}; mkdir -p "$out"
cmake --preset release > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
cmake --build --preset release -j16 > "$out/build.log" 2>&1 || { grep -E "error|FAILED" "$out/build.log" | head -40; exit 1; }
B=build/release/bench/baton-bench
if [ "${RUN_TESTS:-1}" = 1 ]; then
  ctest --preset release -j8 > "$out/ctest.log" 2>&1; echo "== ctest rc $?"; grep -E "tests passed|tests failed|Failed|\*\*\*" "$out/ctest.log" | head -20
fi
for mk in ${MINKEYS:-256}; do
  $B attention --only "${SHAPES:-1x1K,1x8K,8x1K,1x32K}" --min-keys $mk > "$out/sweep_$mk.txt" 2>&1
  echo "== min_keys $mk"; grep -E "^\| |splits" "$out/sweep_$mk.txt" | cut -c1-150
done
if [ -n "${NCU:-}" ]; then
  ncu --metrics gpu__time_duration.sum,dram__bytes_read.sum.per_second,launch__grid_size,sm__warps_active.avg.pct_of_peak_sustained_active \
    -k regex:"split_kv|merge" --launch-skip 4 --launch-count 4 $B attention --only $NCU --profile ${NCU_ARGS:-} > "$out/ncu.txt" 2>&1
  echo "== ncu $NCU"; grep -E "split_kv|merge|duration|bytes_read|grid_size|warps_active" "$out/ncu.txt" | cut -c1-140 | head -40
fi
