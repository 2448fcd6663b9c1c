#!/usr/bin/env bash
# SASS of the bf16 head_dim-128 producer (narrow form, 16 rows; the few-requests instance, or with
# MANY=1 the one for batches past 32) into $OUT/sass.txt; prints an opcode histogram.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-logs}; mkdir -p "$out"; out=$(cd "$out" && pwd)  # absolute: the script changes directory
obj=src/CMakeFiles/baton.dir/attention/decode_attention.cu.o
mkdir -p build/sass && cd build/sass
nvcc -DBATON_HAS_ATTENTION=1 -DBATON_HAS_METADATA=1 -DNDEBUG --expt-relaxed-constexpr -std=c++17 -arch=sm_90a -O3 -I../../include -I../../src -c ../../src/attention/decode_attention.cu -o da.o 2>/dev/null
many=$([ "${MANY:-0}" = 1 ] && echo 1 || echo 0)
cuobjdump -sass -fun "_ZN5baton9attention15split_kv_kernelI13__nv_bfloat16Li128ELi3ELb1ELb1ELb${many}ELi16EEEvNS0_15AttentionParamsE" da.o > "$out/sass.txt" 2>&1
echo "total $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' "$out/sass.txt") instructions"
grep -E '^\s+/\*[0-9a-f]{4}\*/' "$out/sass.txt" | awk '{print $2}' | sed 's/\..*//; s/;//' | sort | uniq -c | sort -rn | head -40 | paste - - - -
