// baton-bench attention --trace: where the time of one attention call goes, from the
// timestamps the kernels write in a BATON_TRACE build (src/common/trace.cuh).
#include "attention_trace.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#if defined(BATON_TRACE)
#include "common/trace.cuh"
#endif

namespace baton::bench {

#if defined(BATON_TRACE)
namespace {

constexpr char const* kProducerMarks[trace::kSlots] = {"entry", "waited", "items", "q+ids", "tile0",
                                                        "kv loop", "stored", "exit"};
constexpr char const* kReducerMarks[trace::kSlots] = {"entry", "waited", "merged", "exit", "", "", "", ""};
constexpr char const* kLastCtaMarks[trace::kSlots] = {"", "last", "loaded", "merged", "", "", "", ""};

// Per mark: min / median / max over the CTAs that wrote it, in us after t0.
void print_kernel(char const* name, char const* const* marks, unsigned long long const* table, unsigned long long t0) {
  std::printf("  %-8s", name);
  for (int s = 0; s < trace::kSlots; ++s) {
    if (marks[s][0] == '\0') continue;
    std::vector<double> v;
    for (int c = 0; c < trace::kMaxCtas; ++c) {
      unsigned long long const t = table[size_t(c) * trace::kSlots + s];
      if (t != 0) v.push_back((double(t) - double(t0)) / 1e3);
    }
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    std::printf(" | %s %.2f/%.2f/%.2f", marks[s], v.front(), v[v.size() / 2], v.back());
  }
  std::printf("\n");
}

}  // namespace

bool trace_supported() { return true; }

bool trace_clear() { return trace::read(nullptr, true); }

void trace_print(char const* what, bool single) {
  std::vector<unsigned long long> table(trace::kEntries);
  if (!trace::read(table.data(), true)) {
    std::printf("%s: trace read failed\n", what);
    return;
  }
  unsigned long long const* prod = table.data();
  unsigned long long const* red = table.data() + size_t(trace::kMaxCtas) * trace::kSlots;
  unsigned long long t0 = ~0ull;  // the first producer CTA past its PDL wait
  for (int c = 0; c < trace::kMaxCtas; ++c) {
    unsigned long long const t = prod[size_t(c) * trace::kSlots + 1];
    if (t != 0) t0 = std::min(t0, t);
  }
  if (t0 == ~0ull) {
    std::printf("%s: no marks\n", what);
    return;
  }
  std::printf("%s (us after the first producer CTA's wait; min/median/max over CTAs):\n", what);
  print_kernel("producer", kProducerMarks, prod, t0);
  print_kernel(single ? "last CTA" : "reducer", single ? kLastCtaMarks : kReducerMarks, red, t0);
}
#else
bool trace_supported() { return false; }
bool trace_clear() { return false; }
void trace_print(char const*, bool) {}
#endif

}  // namespace baton::bench
