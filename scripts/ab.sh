#!/usr/bin/env bash
# Same-machine A/B of the attention benchmark: A = the release build (build/release, built
# incrementally here), B = a second build with extra CUDA flags (experiment macros); then
# scripts/ab_bins.sh runs them alternately. Build logs and run output under $OUT.
#   scripts/ab.sh "-DSOME_MACRO" "--graph-only --only 1x1K,8x1K" [repeats]   (repeats 0: build only)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-logs}; mkdir -p "$out"
flags=$1; args=$2; reps=${3:-2}
[ -n "$flags" ] || { echo "ab.sh: B needs CUDA flags (for two existing binaries: scripts/ab_bins.sh)"; exit 2; }
# A: incremental, so a warm machine's older build is never measured as A.
cmake --preset release > "$out/ab_configure_a.log" 2>&1 && cmake --build --preset release -j16 --target baton-bench > "$out/ab_build_a.log" 2>&1 || { tail -20 "$out/ab_build_a.log"; exit 1; }
bdir=build/ab-$(echo "$flags" | md5sum | cut -c1-8)
cmake -S . -B $bdir -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DBATON_BUILD_BENCH=ON \
    -DBATON_BUILD_TESTS=OFF "-DCMAKE_CUDA_FLAGS=$flags" > "$out/ab_configure_${bdir##*-}.log" 2>&1 &&
  cmake --build $bdir -j16 --target baton-bench > "$out/ab_build_${bdir##*-}.log" 2>&1 || { tail -20 "$out/ab_build_${bdir##*-}.log"; exit 1; }
if [ "$reps" -gt 0 ]; then
  exec scripts/ab_bins.sh build/release/bench/baton-bench "$bdir/bench/baton-bench" "$args" "$reps"
fi
