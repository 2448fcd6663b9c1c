#!/usr/bin/env bash
# The attention kernels' executed code at one shape (ncu source counters; needs a GPU and a
# build): scripts/code_footprint.sh SHAPE [bench args...]; writes $OUT/footprint_SHAPE.csv.gz
# (footprint_NAME_SHAPE.csv.gz when BENCH is set, NAME its file name, so that two builds' files
# do not overwrite each other) and prints scripts/code_footprint.py's summary of one producer
# and one reducer launch.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-logs}; mkdir -p "$out"
shape=$1; shift
bench=${BENCH:-build/release/bench/baton-bench}
tag=""; [ -n "${BENCH:-}" ] && tag="$(basename "$BENCH")_"
ncu --section SourceCounters -k regex:"split_kv|merge" --launch-skip 4 --launch-count 2 --page source \
  --print-source sass --csv "$bench" attention --only "$shape" --profile "$@" > "$out/footprint_$tag$shape.csv" 2> "$out/footprint_$tag$shape.err"
rc=$?
gzip -f -9 "$out/footprint_$tag$shape.csv"
[ $rc = 0 ] || { tail -5 "$out/footprint_$tag$shape.err"; exit $rc; }
python3 scripts/code_footprint.py "$out/footprint_$tag$shape.csv.gz"
