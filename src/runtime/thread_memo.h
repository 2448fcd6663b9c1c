// A per-thread copy of facts that never change once read for a key (a kernel's binary
// version and driver handle, occupancy, a device's attributes), kept in front of the shared,
// locked caches: after the first call on a thread, a launch takes no lock and no map lookup.
// Eager callers pay these lookups on every call (docs/benchmarking.md, host cost per call).
// Nothing is evicted: the keys are the library's kernels and launch shapes per device, a few
// dozen at most, so a thread that uses all of them still finds each one without a miss.
#pragma once

#include <utility>
#include <vector>

namespace baton::detail {

template <class Key, class Value>
class ThreadMemo {
 public:
  Value const* find(Key const& key) const {
    for (auto const& [k, v] : entries_) {
      if (k == key) return &v;
    }
    return nullptr;
  }
  void put(Key const& key, Value const& value) {  // a known key is overwritten
    for (auto& [k, v] : entries_) {
      if (k == key) {
        v = value;
        return;
      }
    }
    entries_.emplace_back(key, value);
  }

 private:
  std::vector<std::pair<Key, Value>> entries_;
};

}  // namespace baton::detail
