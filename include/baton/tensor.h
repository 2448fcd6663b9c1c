// TensorView: a non-owning view of device memory -- pointer, dtype, shape and strides
// (in elements). Ops take their inputs and outputs as TensorViews. An optional argument is
// left out with a default-constructed view (rank 0, null data). A view with a rank and no
// elements may have a null data pointer (PyTorch gives empty tensors one); a view with
// elements and a null pointer is an error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace baton {

enum class DType { kInt32, kInt64, kFloat32, kFloat16, kBFloat16 };

char const* dtype_name(DType dtype);
size_t dtype_bytes(DType dtype);

struct TensorView {
  static constexpr int kMaxRank = 4;

  void* data = nullptr;
  DType dtype = DType::kInt32;
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};  // elements, not bytes

  // A row-major contiguous view.
  static TensorView contiguous(void* data, DType dtype, std::initializer_list<int64_t> shape);
  // A view with explicit strides (elements).
  static TensorView strided(void* data, DType dtype, std::initializer_list<int64_t> shape,
                            std::initializer_list<int64_t> stride);

  // Given (not a left-out optional): data, or a rank (an empty view's data may be null).
  bool defined() const { return data != nullptr || rank > 0; }
  int64_t size(int dim) const { return shape[dim]; }
  int64_t numel() const;
  bool is_contiguous() const;
  // "[4, 128] int32 strides [256, 1]"
  std::string describe() const;
};

}  // namespace baton
