// Loads of index tensors whose dtype (int32 | int64) is a runtime property of the launch.
// The branch is uniform across the grid, so one kernel serves both dtypes at no measurable
// cost and the instantiation count stays small. Plain loads (no __ldg, no __restrict__):
// these inputs may be written by an earlier kernel of the step (pdl-contract.md rule 4).
#pragma once

#include <cstdint>

namespace baton {

struct IndexPtr {
  void const* data = nullptr;
  int64_t stride = 1;  // elements
  bool is_int64 = false;

  __device__ __forceinline__ int64_t load(int64_t i) const {
    return is_int64 ? static_cast<int64_t const*>(data)[i * stride]
                    : static_cast<int64_t>(static_cast<int32_t const*>(data)[i * stride]);
  }
  // Non-null. The host passes null for a left-out view, and for a given one only when it has no
  // elements (then no index reaches load()).
  __host__ __device__ bool defined() const { return data != nullptr; }
};

}  // namespace baton
