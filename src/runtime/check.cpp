#include "runtime/check.h"

#include <string>

namespace baton::detail {

Status Checker::tensor(TensorView const& t, char const* name, int rank,
                       std::initializer_list<DType> dtypes) const {
  if (!t.defined()) return fail(std::string(name) + " is null");
  if (t.rank != rank) {
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

}  // namespace baton::detail
