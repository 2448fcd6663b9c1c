#!/usr/bin/env bash
# Does a change leave the GPU code as it was? Compiles the attention kernels' translation
# units to cubins for the working tree and for REV (default HEAD, in a temporary worktree),
# and compares them byte for byte. A refactor that prints "same" needs no device time to
# show it costs nothing; one that prints "differs" changes the SASS and needs an A/B.
#   scripts/cubin_same.sh [REV]
set -uo pipefail
cd "$(dirname "$0")/.."
rev=${1:-HEAD}
units=(src/attention/decode_attention.cu src/attention/decode_attention_small_pages.cu tests/gpu/test_attention_race.cu)
flags=(-std=c++17 -arch=sm_90a -O3 -Iinclude -Isrc -Itests --expt-relaxed-constexpr -DBATON_HAS_ATTENTION=1)
tmp=$(mktemp -d)
trap 'git worktree remove --force "$tmp/rev" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
git worktree add --detach "$tmp/rev" "$rev" >/dev/null 2>&1 || { echo "cubin_same: no revision $rev"; exit 2; }
status=0
for u in "${units[@]}"; do
  name=$(basename "$u" .cu)
  nvcc "${flags[@]}" -cubin "$u" -o "$tmp/$name.new.cubin" || exit 2
  if [ ! -f "$tmp/rev/$u" ]; then
    echo "new      $u (not in $rev)"; status=1; continue
  fi
  (cd "$tmp/rev" && nvcc "${flags[@]}" -cubin "$u" -o "$tmp/$name.old.cubin") || exit 2
  if cmp -s "$tmp/$name.old.cubin" "$tmp/$name.new.cubin"; then
    echo "same     $u ($(md5sum < "$tmp/$name.new.cubin" | cut -c1-12))"
  else
    echo "differs  $u (against $rev)"; status=1
  fi
done
exit $status
