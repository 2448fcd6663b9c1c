// The key range of one split of a request (the producer's items: split_kv_item.cuh), plain
// C++ so that host tests can check the partition. Host and device code may include it.
#pragma once

#include <cstdint>

namespace baton::attention {

constexpr unsigned kSplitAlign = 16;  // keys: the producer's K/V tile (kMmaTileKeys)

struct KeyRange {
  int64_t begin, end;
};

// Split `split` of n (1 <= n <= 1024, 0 <= split < n) of the visible keys [lo, L) (0 <= lo,
// L <= 2^31 - 16): an equal share, cut at multiples of kSplitAlign keys -- per_split =
// ceil(span / n) rounded up to kSplitAlign, counted from lo rounded down to kSplitAlign -- so
// that every split but a windowed split 0 begins on a tile boundary, and with a page of 16
// keys or more each of its full tiles lies in one page (the producer's one-base copy,
// split_kv_item.cuh: load_tile_at). In split order the ranges are disjoint and cover [lo, L)
// exactly; the last shares may be short or empty ([L, L)). A split's tile count is at most
// ceil(span / (16 n)), as with unrounded shares, but the rounding can leave trailing splits of
// a plan empty (2000 keys in 15 splits: 14 of 144 keys and none): such a CTA stores an empty
// partial (lse -inf) that the merge weighs 0, the critical path unchanged. A cut at 16 x
// floor(s x tiles / n) would spread the tiles with none empty, for two more divisions on the
// item's path: not measured. Unsigned 32-bit (a 64-bit division is a long subroutine on the
// producer's critical path): span + n, and base + (split + 1) * per_split <= L + kSplitAlign
// * n, stay below 2^32.
constexpr KeyRange split_keys(int L, int lo, int n, int split) {
  unsigned const base = unsigned(lo) & ~(kSplitAlign - 1);
  unsigned const span = L > lo ? unsigned(L) - base : 0u;
  unsigned const per_split = ((span + unsigned(n) - 1u) / unsigned(n) + kSplitAlign - 1) & ~(kSplitAlign - 1);
  unsigned const first = base + unsigned(split) * per_split;
  unsigned const begin_lo = first > unsigned(lo) ? first : unsigned(lo);
  unsigned const begin = begin_lo < unsigned(L) ? begin_lo : unsigned(L);
  unsigned const last = base + unsigned(split + 1) * per_split;
  unsigned const last_in = last < unsigned(L) ? last : unsigned(L);
  unsigned const end = last_in > begin ? last_in : begin;  // begin <= end <= L
  return {int64_t(begin), int64_t(end)};
}

}  // namespace baton::attention
