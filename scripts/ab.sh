#!/usr/bin/env bash
# Same-machine A/B of the attention benchmark: A = the release build (build/release, built
# here if missing), B = a second build with extra CUDA flags (experiment macros). Runs A and B
# alternately and prints the in-graph columns of each run; full output under $OUT.
#   scripts/ab.sh "-DSOME_MACRO" "--graph-only --only 1x1K,8x1K" [repeats]   (repeats 0: build only)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-logs}; mkdir -p "$out"
flags=$1; args=$2; reps=${3:-2}
# A: incremental, so a warm machine's older build is never measured as A.
cmake --preset release > "$out/ab_configure_a.log" 2>&1 && cmake --build --preset release -j16 --target baton-bench > "$out/ab_build_a.log" 2>&1 || { tail -20 "$out/ab_build_a.log"; exit 1; }
bdir=build/release
if [ -n "$flags" ]; then
  bdir=build/ab-$(echo "$flags" | md5sum | cut -c1-8)
  cmake -S . -B $bdir -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DBATON_BUILD_BENCH=ON \
    -DBATON_BUILD_TESTS=OFF "-DCMAKE_CUDA_FLAGS=$flags" > "$out/ab_configure_${bdir##*-}.log" 2>&1 &&
    cmake --build $bdir -j16 --target baton-bench > "$out/ab_build_${bdir##*-}.log" 2>&1 || { tail -20 "$out/ab_build_${bdir##*-}.log"; exit 1; }
fi
for r in $(seq "$reps"); do
  for v in A B; do
    [ "$v" = B ] && [ -z "$flags" ] && continue
    bin=build/release/bench/baton-bench; [ "$v" = B ] && bin=$bdir/bench/baton-bench
    log="$out/ab_${v}_${bdir##*-}_$r.txt"
    $bin attention $args > "$log" 2>&1
    echo "== $v run $r: $args ${flags:+(B: $flags)}"
    grep -E "^\| (shape|[0-9]|mix)" "$log" | awk -F'|' '{printf "%-14s %9s %9s %9s %9s %9s %6s\n", $2, $4, $5, $6, $7, $8, $9}'
  done
done
