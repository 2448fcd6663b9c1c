#!/usr/bin/env bash
# The attention kernels' executed code at one shape (ncu source counters; needs a GPU and a
# build): scripts/code_footprint.sh SHAPE [bench args...]; writes $OUT/footprint_SHAPE.csv.gz
# and prints scripts/code_footprint.py's summary of one producer and one reducer launch.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-logs}; mkdir -p "$out"
shape=$1; shift
bench=${BENCH:-build/release/bench/baton-bench}
ncu --section SourceCounters -k regex:"split_kv|merge" --launch-skip 4 --launch-count 2 --page source \
  --print-source sass --csv "$bench" attention --only "$shape" --profile "$@" > "$out/footprint_$shape.csv" 2> "$out/footprint_$shape.err"
rc=$?
gzip -f -9 "$out/footprint_$shape.csv"
[ $rc = 0 ] || { tail -5 "$out/footprint_$shape.err"; exit $rc; }
python3 scripts/code_footprint.py "$out/footprint_$shape.csv.gz"
