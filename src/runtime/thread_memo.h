// A per-thread copy of facts that never change once read for a key (a kernel's binary
// version and driver handle, occupancy, a device's attributes), kept in front of the shared,
// locked caches: after the first call on a thread, a launch takes no lock and no map lookup.
// Eager callers pay these lookups on every call (docs/benchmarking.md, host cost per call).
#pragma once

namespace baton::detail {

template <class Key, class Value, int N = 16>
class ThreadMemo {
 public:
  Value const* find(Key const& key) const {
    for (int i = 0; i < size_; ++i) {
      if (keys_[i] == key) return &values_[i];
    }
    return nullptr;
  }
  void put(Key const& key, Value const& value) {  // past N entries the oldest is replaced
    int const i = size_ < N ? size_++ : next_++ % N;
    keys_[i] = key;
    values_[i] = value;
  }

 private:
  Key keys_[N] = {};
  Value values_[N] = {};
  int size_ = 0;
  int next_ = 0;
};

}  // namespace baton::detail
