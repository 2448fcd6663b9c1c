// Argument checks shared by every op's validation. Each returns a Status whose message names
// the op, the argument and the offending value.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "baton/status.h"
#include "baton/tensor.h"

namespace baton::detail {

// A view an op reads or writes, by its argument name (for Checker::disjoint).
struct NamedView {
  char const* name;
  TensorView const* view;
};

// "0x..." for an address, in messages.
std::string hex_address(void const* p);

class Checker {
 public:
  explicit Checker(char const* op) : op_(op) {}

  Status fail(std::string const& what) const { return Status::invalid_argument(std::string(op_) + ": " + what); }

  // Given (TensorView::defined), the given rank, one of the dtypes, no negative sizes or
  // strides, a data pointer that is null only when the view has no elements, aligned to the
  // dtype's size (a misaligned load or store would fault the kernel), and every element's
  // address inside the address space (no offset that wraps a kernel's pointer).
  Status tensor(TensorView const& t, char const* name, int rank, std::initializer_list<DType> dtypes) const;
  // Same, but a left-out view (TensorView{}) is accepted (optional argument).
  Status optional(TensorView const& t, char const* name, int rank, std::initializer_list<DType> dtypes) const;
  // t.shape[dim] == expected.
  Status dim(TensorView const& t, char const* name, int dim, int64_t expected, char const* what) const;
  // Stride 1 along `dim`.
  Status unit_stride(TensorView const& t, char const* name, int dim) const;
  // No two logical elements share an address (an output written by several threads at once
  // would be garbage): e.g. a stride of 0, or of 1 beside a contiguous dim of size > 1. The
  // test is sufficient, not necessary: dense tensors and their slices, steps and transposes
  // pass, but a few hand-built interleaved layouts that do not overlap (shape (3, 2), strides
  // (2, 3)) are rejected too.
  Status distinct_elements(TensorView const& t, char const* name) const;
  // No view of `written` overlaps another view of `written` or one of `read` (left-out and
  // empty views occupy no bytes): a kernel's threads write the first while others may still read or write the
  // rest. Byte spans, first to last element: a view with gaps counts as occupying them.
  Status disjoint(std::initializer_list<NamedView> written, std::initializer_list<NamedView> read) const;
  // The same over one array whose first `written` views are the written ones.
  Status disjoint(NamedView const* views, size_t count, size_t written) const;

 private:
  char const* op_;
};

// The bytes from a view's first element to its last, [begin, end) (empty for a view without
// elements); gaps inside count as occupied.
struct ByteSpan {
  uintptr_t begin = 0, end = 0;
  bool overlaps(ByteSpan const& o) const { return begin < o.end && o.begin < end; }
};
ByteSpan byte_span(TensorView const& t);

inline bool is_power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }
inline int log2_exact(int64_t v) {
  int s = 0;
  while ((int64_t(1) << s) < v) ++s;
  return s;
}

}  // namespace baton::detail
