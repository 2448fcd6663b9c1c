#include "runtime/check.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

namespace baton::detail {

std::string hex_address(void const* p) {
  char hex[2 + 2 * sizeof(uintptr_t) + 1];
  std::snprintf(hex, sizeof(hex), "0x%llx", static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(p)));
  return hex;
}

namespace {
// a + b * c for non-negative operands, saturating at INT64_MAX (absurd strides must not wrap).
// Overflow builtins, not a division per dim: this runs for every dim of every view on every
// eager call, and the divisions were most of validation's time (perf, fifty-second session).
int64_t add_mul_sat(int64_t a, int64_t b, int64_t c) {
  int64_t product = 0, sum = 0;
  if (__builtin_mul_overflow(b, c, &product) || __builtin_add_overflow(a, product, &sum)) return INT64_MAX;
  return sum;
}

// The offset of a view's last element, in elements (INT64_MAX when it saturates); -1 when the
// view has no element.
int64_t last_offset(TensorView const& t) {
  int64_t last = 0;
  for (int d = 0; d < std::min(t.rank, TensorView::kMaxRank); ++d) {
    if (t.shape[d] <= 0) return -1;
    last = add_mul_sat(last, t.shape[d] - 1, t.stride[d]);
  }
  return last;
}
}  // namespace

Status Checker::tensor(TensorView const& t, char const* name, int rank,
                       std::initializer_list<DType> dtypes) const {
  if (!t.defined()) return fail(std::string(name) + " is null");
  if (t.rank != rank) {  // describe() shows no sizes past kMaxRank
    return fail(std::string(name) + " has rank " + std::to_string(t.rank) + ", expected " + std::to_string(rank) +
                " (" + t.describe() + ")");
  }
  bool dtype_ok = false;
  for (DType d : dtypes) dtype_ok = dtype_ok || d == t.dtype;
  if (!dtype_ok) {  // the message is built only on failure: this check runs on every eager call
    std::string allowed;
    for (DType d : dtypes) allowed += (allowed.empty() ? "" : " or ") + std::string(dtype_name(d));
    return fail(std::string(name) + " dtype " + dtype_name(t.dtype) + " is not " + allowed);
  }
  for (int d = 0; d < rank; ++d) {
    if (t.shape[d] < 0) return fail(std::string(name) + " has a negative size (" + t.describe() + ")");
    if (t.stride[d] < 0) return fail(std::string(name) + " has a negative stride (" + t.describe() + ")");
  }
  // An empty view's data may be null (PyTorch's empty tensors); no kernel reads or writes it.
  int64_t const last = last_offset(t);
  if (t.data == nullptr && last >= 0) return fail(std::string(name) + " is null (" + t.describe() + ")");
  size_t const align = dtype_bytes(t.dtype);
  uintptr_t const address = reinterpret_cast<uintptr_t>(t.data);
  if (address % align != 0) {
    return fail(std::string(name) + " at address " + hex_address(t.data) + " is not " + std::to_string(align) +
                "-byte aligned (" + dtype_name(t.dtype) + ")");
  }
  // The last element's byte offset must fit beside the address: a kernel's pointer arithmetic
  // would wrap where byte_span saturates, and land on another argument.
  int64_t const elem = static_cast<int64_t>(align);
  if (last >= 0 && (last > INT64_MAX / elem - 1 || uint64_t(last + 1) * uint64_t(elem) > UINTPTR_MAX - address)) {
    return fail(std::string(name) + " at address " + hex_address(t.data) +
                " reaches past the end of the address space (" + t.describe() + ")");
  }
  return Status::ok();
}

ByteSpan byte_span(TensorView const& t) {
  int64_t const last = last_offset(t);
  if (t.data == nullptr || last < 0) return {};
  uintptr_t const begin = reinterpret_cast<uintptr_t>(t.data);
  uint64_t const bytes = last >= INT64_MAX / 16 ? UINT64_MAX : uint64_t(last + 1) * dtype_bytes(t.dtype);
  return {begin, bytes > UINTPTR_MAX - begin ? UINTPTR_MAX : begin + static_cast<uintptr_t>(bytes)};
}

Status Checker::distinct_elements(TensorView const& t, char const* name) const {
  if (last_offset(t) < 0) return Status::ok();  // no element: none shares an address (any strides)
  // Dims of size > 1 from the smallest stride up: each stride must step past every element
  // the dims inside it reach (then no two index tuples share an offset).
  int dims[TensorView::kMaxRank];
  int n = 0;
  for (int d = 0; d < std::min(t.rank, TensorView::kMaxRank); ++d) {
    if (t.shape[d] > 1) dims[n++] = d;
  }
  for (int i = 1; i < n; ++i) {  // insertion sort by stride (at most kMaxRank dims)
    for (int j = i; j > 0 && t.stride[dims[j]] < t.stride[dims[j - 1]]; --j) std::swap(dims[j], dims[j - 1]);
  }
  int64_t reach = 0;  // the largest offset the inner dims reach
  for (int i = 0; i < n; ++i) {
    int const d = dims[i];
    if (t.stride[d] <= reach) {
      return fail(std::string(name) + " has overlapping elements: stride " + std::to_string(t.stride[d]) + " in dim " +
                  std::to_string(d) + " (" + t.describe() + ")");
    }
    reach = add_mul_sat(reach, t.shape[d] - 1, t.stride[d]);
  }
  return Status::ok();
}

Status Checker::optional(TensorView const& t, char const* name, int rank,
                         std::initializer_list<DType> dtypes) const {
  return t.defined() ? tensor(t, name, rank, dtypes) : Status::ok();
}

Status Checker::dim(TensorView const& t, char const* name, int d, int64_t expected, char const* what) const {
  if (t.shape[d] != expected) {
    return fail(std::string(name) + " dim " + std::to_string(d) + " is " + std::to_string(t.shape[d]) +
                ", expected " + std::to_string(expected) + " (" + what + ")");
  }
  return Status::ok();
}

Status Checker::unit_stride(TensorView const& t, char const* name, int d) const {
  if (t.shape[d] > 1 && t.stride[d] != 1) {
    return fail(std::string(name) + " must have stride 1 in dim " + std::to_string(d) + " (" + t.describe() + ")");
  }
  return Status::ok();
}

namespace {
// Written views [wb, we), read views [rb, re): each written one against the written ones after
// it and every read one.
// Each view's span is computed once (up to kSpans views; past that, per comparison): this
// runs on every eager call (decode_attention: 3 written views against 10).
Status disjoint_views(Checker const& c, NamedView const* wb, NamedView const* we, NamedView const* rb,
                      NamedView const* re) {
  constexpr size_t kSpans = 16;
  size_t const nw = static_cast<size_t>(we - wb), nr = static_cast<size_t>(re - rb);
  ByteSpan spans[kSpans];  // written views, then read views
  bool const cached = nw + nr <= kSpans;
  if (cached) {
    for (size_t i = 0; i < nw; ++i) spans[i] = byte_span(*wb[i].view);
    for (size_t i = 0; i < nr; ++i) spans[nw + i] = byte_span(*rb[i].view);
  }
  auto span_of = [&](size_t i) { return cached ? spans[i] : byte_span(*(i < nw ? wb[i] : rb[i - nw]).view); };
  for (size_t w = 0; w < nw; ++w) {
    ByteSpan const span = span_of(w);  // empty for a left-out or empty view: overlaps nothing
    // The first view it overlaps: the written ones after it, then every read one.
    for (size_t o = w + 1; o < nw + nr; ++o) {
      if (span.overlaps(span_of(o))) {
        char const* const other = o < nw ? wb[o].name : rb[o - nw].name;
        return c.fail(std::string(wb[w].name) + " overlaps " + other);
      }
    }
  }
  return Status::ok();
}
}  // namespace

Status Checker::disjoint(std::initializer_list<NamedView> written, std::initializer_list<NamedView> read) const {
  return disjoint_views(*this, written.begin(), written.end(), read.begin(), read.end());
}

Status Checker::disjoint(NamedView const* views, size_t count, size_t written) const {
  return disjoint_views(*this, views, views + written, views + written, views + count);
}

}  // namespace baton::detail
