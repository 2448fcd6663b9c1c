#!/usr/bin/env bash
# One call on the GPU machine: configure + build (release preset), every test, a memcheck
# pass over the whole GPU suite (scripts/sanitize_suite.sh), then the benchmarks. Full logs go
# to $OUT (or ./gpu-logs); the last lines printed are the short summary.
#   scripts/gpu_suite.sh [bench-subcommand ...]     (default: metadata attention)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-logs}
mkdir -p "$out"
[ $# -gt 0 ] && benches=("$@") || benches=(metadata attention)

nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm,clocks.mem --format=csv > "$out/gpu.txt" 2>&1
cmake --preset release > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
cmake --build --preset release -j16 > "$out/build.log" 2>&1 || { grep -E "error|FAILED" "$out/build.log" | head -40; exit 1; }

ctest --preset release -j8 > "$out/ctest.log" 2>&1
test_rc=$?

OUT="$out" scripts/sanitize_suite.sh memcheck build/release/tests/baton_gpu_tests > "$out/memcheck.txt" 2>&1
memcheck_rc=$?

for b in "${benches[@]}"; do
  build/release/bench/baton-bench "$b" --json "$out/bench_$b.jsonl" > "$out/bench_$b.txt" 2>&1
done
[[ " ${benches[*]} " == *" attention "* && -x build/release/bench/baton-host-cost ]] &&
  build/release/bench/baton-host-cost > "$out/host_cost.txt" 2>&1
# Draft tokens: 8 per request at group 4 take two row chunks per kv head, a path the default
# shapes never run (its L2 policy cost up to 16% until rev e34554c, unseen by the table above).
[[ " ${benches[*]} " == *" attention "* ]] &&
  build/release/bench/baton-bench attention --graph-only --q-len 8 --only 8x1K,1x32K,32x8K \
    > "$out/bench_attention_q8.txt" 2>&1

for b in "${benches[@]}"; do echo "== bench $b"; grep -vE "pools, splits|^$" "$out/bench_$b.txt"; done
[ -f "$out/bench_attention_q8.txt" ] && { echo "== bench attention --q-len 8 (in-graph)"; grep -E "^\| " "$out/bench_attention_q8.txt"; }
[ -f "$out/host_cost.txt" ] && { echo "== host cost per eager call (baton-host-cost)"; cat "$out/host_cost.txt"; }
echo "== ctest (rc $test_rc)"; grep -E "tests passed|tests failed|Failed|\*\*\*" "$out/ctest.log" | head -30
echo "== memcheck over the whole GPU suite (rc $memcheck_rc)"; tail -1 "$out/memcheck.txt"
echo "== gpu (the uuid tells machines apart: some show a PDL cost at 64x4K / 128x2K, others not)"; tail -1 "$out/gpu.txt"
exit $test_rc
