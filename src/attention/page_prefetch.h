// Which page-table id each prefetching thread of the producer's grid prefetches into L2
// (split_kv_search.cuh, prefetch_page_rows): the index math alone, plain C++, so that host
// tests can check it covers every row and never leaves one. Host and device code may include it.
#pragma once

#include <cstdint>

namespace baton::attention {

constexpr int kPrefetchLinesPerRow = 64;  // 8 KB of a row: 2048 page ids

// A row's prefetched lines: the 128-byte lines its ids fill, plus one for a row that starts
// mid-line (its last id then reaches one line further; for an aligned row that extra one
// repeats its last line), at most kPrefetchLinesPerRow.
constexpr int page_prefetch_lines(int64_t pt_cols) {
  int64_t const lines = (pt_cols * int64_t(sizeof(int32_t)) + 127) / 128 + 1;
  return static_cast<int>(lines < kPrefetchLinesPerRow ? lines : kPrefetchLinesPerRow);
}

// Thread i (CTA-major over the grid's prefetching threads) takes line i % lines of row
// i / lines: emit(b, col) with the id at line * 32, or the row's last, so every address is
// one of the row's own ids [0, p.pt_cols) of a row in [0, p.batch); nothing past batch x
// lines. `lines` is page_prefetch_lines(p.pt_cols), passed in so that the kernel computes it
// before its thread index, as in the build that was measured (the compiled code is the same
// bar the operand order of one compare); P has `batch` and `pt_cols`
// (AttentionParams). Called by the kernel with the prefetch as `emit`, and by the host tests
// with a recorder.
template <class P, class Emit>
constexpr void page_prefetch(unsigned i, P const& p, int lines, Emit&& emit) {
  if (p.pt_cols <= 0 || i >= unsigned(p.batch * lines)) return;  // batch <= 32 (few requests)
  int const b = static_cast<int>(i) / lines, line = static_cast<int>(i) % lines;
  emit(b, int64_t(line) * 32 < p.pt_cols - 1 ? int64_t(line) * 32 : p.pt_cols - 1);
}

}  // namespace baton::attention
