// baton-bench attention --trace: where the time of one attention call goes, from the
// timestamps the kernels write in a BATON_TRACE build (src/common/trace.cuh).
#include "attention_trace.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#if defined(BATON_TRACE)
#include "common/trace.cuh"
#endif

namespace baton::bench {

#if defined(BATON_TRACE)
namespace {

using trace::kSmSlot;  // the CTA's SM (%smid + 1), not a time: producer and reducer
constexpr char const* kProducerMarks[trace::kSlots] = {"entry",  "waited",  "items",     "q+ids",
                                                        "tile0",  "kv loop", "stored",    "exit",
                                                        "ids req", "tiles req", "warps merged", "",
                                                        "quarter", "half", "3 quarters", "tile0 math"};

// BATON_TRACE_CSV=FILE: every producer CTA's marks appended to FILE, one line per CTA:
// "what",cta,sm, then slots 0..10 and 12..15 in ns after t0 (empty: not written; 12..14: warp 0
// at a quarter, half, three quarters of its tiles). Each slot keeps its last writer, so with
// several items per CTA one row can mix items (a short last item leaves earlier marks). Then
// the CTA's first four items, four columns each (trace::kItemMarks: start, tile 0 landed, KV
// loop done, end), empty where the CTA had fewer.
void dump_csv(char const* what, unsigned long long const* prod, unsigned long long t0) {
  char const* path = std::getenv("BATON_TRACE_CSV");
  if (path == nullptr || path[0] == '\0') return;
  std::FILE* f = std::fopen(path, "a");
  if (f == nullptr) return;
  auto put = [&](unsigned long long t) {  // one column: empty if not written, else ns after t0
    if (t == 0) {
      std::fprintf(f, ",");
    } else {
      std::fprintf(f, ",%lld", static_cast<long long>(t) - static_cast<long long>(t0));
    }
  };
  for (int c = 0; c < trace::kMaxCtas; ++c) {
    unsigned long long const* row = prod + size_t(c) * trace::kSlots;
    if (row[kSmSlot] == 0) continue;
    std::fprintf(f, "\"%s\",%d,%llu", what, c, row[kSmSlot] - 1);
    for (int s = 0; s < trace::kSlots; ++s) {
      if (s != kSmSlot) put(row[s]);
    }
    unsigned long long const* items = prod + (size_t(2) * trace::kMaxCtas + c) * trace::kSlots;  // table 2
    for (int s = 0; s < trace::kSlots; ++s) put(items[s]);
    std::fprintf(f, "\n");
  }
  // The reducer's CTAs (kernel 1; a reducer kernel's, not a single launch's last CTAs, which
  // record no SM): "what reducer",cta,sm, then slots 0..5 (entry, waited, merged, exit,
  // counted, max) in ns after t0.
  unsigned long long const* red = prod + size_t(trace::kMaxCtas) * trace::kSlots;
  for (int c = 0; c < trace::kMaxCtas; ++c) {
    unsigned long long const* row = red + size_t(c) * trace::kSlots;
    if (row[kSmSlot] == 0) continue;
    std::fprintf(f, "\"%s reducer\",%d,%llu", what, c, row[kSmSlot] - 1);
    for (int s = 0; s < 6; ++s) put(row[s]);
    std::fprintf(f, "\n");
  }
  std::fclose(f);
}
constexpr char const* kReducerMarks[trace::kSlots] = {"entry", "waited", "merged", "exit", "counted", "max"};
// The reducer's slots in the order a CTA passes them (the rest unused).
constexpr int kReducerOrder[trace::kSlots] = {0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
constexpr char const* kLastCtaMarks[trace::kSlots] = {"", "last", "loaded", "merged"};
// The producer's marks in the order a CTA passes them, for the per-CTA cycle counts.
// 12..14: warp 0 at a quarter, half, three quarters of its tiles (at 2 tiles: "half" and "3
// quarters" are tile 1 landed); 15: tile 0's math issued.
constexpr int kProducerOrder[] = {1, 2, 8, 9, 3, 4, 15, 12, 13, 14, 5, 10, 6, 7};

// Per mark: min / median / max over the CTAs that wrote it, in us after t0. Only this mode's
// marks are in the table: the bench clears the records before each traced mode, and a CTA's
// record says which of its rows it wrote, so a single launch's last-CTA row from an earlier
// replay, in a CTA that was not last this time, is not read (trace.cuh, read_unit).
void print_kernel(char const* name, char const* const* marks, unsigned long long const* table, unsigned long long t0,
                  int const* order = nullptr) {
  std::printf("  %-8s", name);
  for (int i = 0; i < trace::kSlots; ++i) {
    int const s = order != nullptr ? order[i] : i;
    if (marks[s] == nullptr || marks[s][0] == '\0') continue;
    std::vector<double> v;
    for (int c = 0; c < trace::kMaxCtas; ++c) {
      unsigned long long const t = table[size_t(c) * trace::kSlots + s];
      // As integers first: globaltimer values (~1.8e18 ns) are past a double's 2^53.
      if (t != 0) v.push_back(double(static_cast<long long>(t - t0)) / 1e3);
    }
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    std::printf(" | %s %.2f/%.2f/%.2f", marks[s], v.front(), v[v.size() / 2], v.back());
  }
  std::printf("\n");
}

// Per mark: the median over CTAs of the cycles since the CTA's own mark `ref` (clock64 of its
// SM, so phases within a CTA are exact where the globaltimer only ticks every 256 ns).
// `table` holds the marks counted (cycles, and their globaltimer at table - kEntries); a mark
// counts only if its globaltimer is within 50 us after the reference's (the same call: under the
// tracer before the fifty-fifth session a slot kept its last writer, which for the last-CTA
// marks could be an earlier call).
void print_cycles(char const* name, char const* const* marks, int const* order, int count,
                  unsigned long long const* ref_table, int ref, unsigned long long const* table) {
  unsigned long long const* ref_ns = ref_table - trace::kEntries;
  unsigned long long const* ns = table - trace::kEntries;
  std::printf("  %-8s cycles", name);
  for (int i = 0; i < count; ++i) {
    int const s = order[i];
    std::vector<double> v;
    for (int c = 0; c < trace::kMaxCtas; ++c) {
      unsigned long long const r = ref_table[size_t(c) * trace::kSlots + ref];
      unsigned long long const t = table[size_t(c) * trace::kSlots + s];
      unsigned long long const rn = ref_ns[size_t(c) * trace::kSlots + ref];
      unsigned long long const tn = ns[size_t(c) * trace::kSlots + s];
      bool const same_call = tn >= rn && tn - rn < 50000;
      if (r != 0 && t != 0 && t >= r && same_call) v.push_back(double(t - r));
    }
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    std::printf(" | %s %.0f", marks[s], v[v.size() / 2]);
  }
  std::printf("\n");
}

// The device table (then zeroed) and its first producer CTA past its PDL wait (kernel 0's
// slot 1), the time origin of a summary; false, with a line saying why, if there is none.
bool read_table(char const* what, std::vector<unsigned long long>* table, unsigned long long* t0) {
  table->assign(2 * trace::kEntries, 0);
  if (!trace::read(table->data(), true)) {
    std::printf("%s: trace read failed\n", what);
    return false;
  }
  *t0 = ~0ull;
  for (int c = 0; c < trace::kMaxCtas; ++c) {
    unsigned long long const t = (*table)[size_t(c) * trace::kSlots + 1];
    if (t != 0) *t0 = std::min(*t0, t);
  }
  if (*t0 == ~0ull) {
    std::printf("%s: no marks\n", what);
    return false;
  }
  return true;
}

}  // namespace

bool trace_supported() { return true; }

bool trace_clear() { return trace::read(nullptr, true); }

bool trace_focus(void const* a, void const* b) { return trace::focus(a, b); }

void trace_print_pair(char const* what, bool single) {
  std::vector<unsigned long long> table;
  unsigned long long t0 = 0;  // call a's first producer CTA past its PDL wait
  if (!read_table(what, &table, &t0)) return;
  size_t const per_call = size_t(trace::kKernelsPerCall) * trace::kMaxCtas * trace::kSlots;
  size_t const kernel = size_t(trace::kMaxCtas) * trace::kSlots;
  unsigned long long const* prod_a = table.data();
  unsigned long long const* prod_b = table.data() + per_call;
  std::printf("%s (two neighbouring calls a, b of a chain; us after a's first producer CTA's wait; min/median/max over CTAs):\n",
              what);
  std::string const a = std::string(what) + " [a]", b = std::string(what) + " [b]";
  dump_csv(a.c_str(), prod_a, t0);
  dump_csv(b.c_str(), prod_b, t0);
  char const* const* red_marks = single ? kLastCtaMarks : kReducerMarks;
  int const* red_order = single ? nullptr : kReducerOrder;
  print_kernel("a prod", kProducerMarks, prod_a, t0);
  print_kernel(single ? "a last" : "a red", red_marks, prod_a + kernel, t0, red_order);
  print_kernel("b prod", kProducerMarks, prod_b, t0);
  print_kernel(single ? "b last" : "b red", red_marks, prod_b + kernel, t0, red_order);
}

void trace_print(char const* what, bool single) {
  std::vector<unsigned long long> table;
  unsigned long long t0 = 0;  // the first producer CTA past its PDL wait
  if (!read_table(what, &table, &t0)) return;
  unsigned long long const* prod = table.data();
  unsigned long long const* red = table.data() + size_t(trace::kMaxCtas) * trace::kSlots;
  std::printf("%s (us after the first producer CTA's wait; min/median/max over CTAs):\n", what);
  dump_csv(what, prod, t0);
  print_kernel("producer", kProducerMarks, prod, t0);
  print_kernel(single ? "last CTA" : "reducer", single ? kLastCtaMarks : kReducerMarks, red, t0,
               single ? nullptr : kReducerOrder);
  unsigned long long const* prod_cyc = prod + trace::kEntries;
  unsigned long long const* red_cyc = red + trace::kEntries;
  print_cycles("producer", kProducerMarks, kProducerOrder, int(sizeof(kProducerOrder) / sizeof(int)), prod_cyc, 1, prod_cyc);
  if (!single) {  // the reducer's phases, counted from each CTA's own wait
    int const order[] = {4, 5, 2, 3};
    print_cycles("reducer", kReducerMarks, order, 4, red_cyc, 1, red_cyc);
  }
  if (single) {  // the last CTA's merge, counted from its own "stored" mark
    int const order[] = {1, 2, 3};
    print_cycles("last CTA", kLastCtaMarks, order, 3, prod_cyc, 6, red_cyc);
  }
}
#else
bool trace_supported() { return false; }
bool trace_clear() { return false; }
bool trace_focus(void const*, void const*) { return false; }
void trace_print_pair(char const*, bool) {}
void trace_print(char const*, bool) {}
#endif

}  // namespace baton::bench
