#!/usr/bin/env bash
# Build (release) then run the command lines given in $EXP (one per line); for quick experiments.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-logs}; mkdir -p "$out"
cmake --preset release > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
cmake --build --preset release -j16 > "$out/build.log" 2>&1 || { grep -E "error|FAILED" "$out/build.log" | head -40; exit 1; }
B=build/release/bench/baton-bench
while IFS= read -r line; do
  [ -z "$line" ] && continue
  echo "== $line"; eval "$line" 2>&1 | grep -E "^\| [0-9]|splits" | cut -c1-${WIDTH:-110}
done <<< "$EXP"
