#include <sstream>

#include "baton/tensor.h"

namespace baton {

char const* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kFloat32: return "float32";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
  }
  return "unknown";
}

size_t dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::kInt32: return 4;
    case DType::kInt64: return 8;
    case DType::kFloat32: return 4;
    case DType::kFloat16: return 2;
    case DType::kBFloat16: return 2;
  }
  return 0;
}

namespace {
// The dims a view's arrays hold: a hand-built view may carry any rank, but only kMaxRank sizes.
int held_dims(TensorView const& t) { return t.rank < 0 ? 0 : (t.rank > TensorView::kMaxRank ? TensorView::kMaxRank : t.rank); }

// a * b for sizes and strides, held at INT64_MAX (or INT64_MIN) instead of overflowing: a view
// whose extent does not fit then fails validation as one past the address space.
int64_t mul_sat(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
  return r;
}
}  // namespace

// A shape of more than kMaxRank sizes keeps its rank, so that validation rejects the view by
// name ("rank 5 (outside [0, 4])"), but only the first kMaxRank sizes and strides are stored.
TensorView TensorView::contiguous(void* data, DType dtype, std::initializer_list<int64_t> shape) {
  TensorView t;
  t.data = data;
  t.dtype = dtype;
  t.rank = static_cast<int>(shape.size());
  int i = 0;
  for (int64_t s : shape) {
    if (i < kMaxRank) t.shape[i] = s;
    ++i;
  }
  int64_t running = 1;
  for (int d = held_dims(t) - 1; d >= 0; --d) {
    t.stride[d] = running;
    running = mul_sat(running, t.shape[d]);
  }
  return t;
}

TensorView TensorView::strided(void* data, DType dtype, std::initializer_list<int64_t> shape,
                               std::initializer_list<int64_t> stride) {
  TensorView t = contiguous(data, dtype, shape);
  int i = 0;
  for (int64_t s : stride) {
    if (i < kMaxRank) t.stride[i] = s;
    ++i;
  }
  return t;
}

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int d = 0; d < held_dims(*this); ++d) n = mul_sat(n, shape[d]);
  return n;
}

bool TensorView::is_contiguous() const {
  int64_t running = 1;
  for (int d = held_dims(*this) - 1; d >= 0; --d) {
    if (shape[d] != 1 && stride[d] != running) return false;
    running = mul_sat(running, shape[d]);
  }
  return true;
}

std::string TensorView::describe() const {
  std::ostringstream os;
  if (held_dims(*this) != rank) {
    os << "rank " << rank << " (outside [0, " << kMaxRank << "]) " << dtype_name(dtype);
    return os.str();
  }
  os << "[";
  for (int d = 0; d < rank; ++d) os << (d ? ", " : "") << shape[d];
  os << "] " << dtype_name(dtype) << " strides [";
  for (int d = 0; d < rank; ++d) os << (d ? ", " : "") << stride[d];
  os << "]";
  return os.str();
}

}  // namespace baton
