// Host-side validation of decode_attention: everything checked before any launch, with no
// CUDA call.
#pragma once

#include "baton/attention.h"

namespace baton::attention {

// The compiled set; tests and docs read the same lists.
constexpr int kHeadDims[] = {64, 128, 256};
constexpr int kMaxGroup = 16;
constexpr int kMaxQLen = 8;
constexpr int kMaxSplits = 1024;
constexpr int kMaxBatch = 65535;  // requests per call (attention.h: batch_size in [1, 65535])

inline bool supported_head_dim(int head_dim) {
  for (int d : kHeadDims) {
    if (d == head_dim) return true;
  }
  return false;
}

struct AttentionShape {
  int batch, q_len, num_q_heads, num_kv_heads, head_dim, page_size;
};

// Validates and returns the shape it read from the views.
Status validate(DecodeAttentionArgs const& args, AttentionShape* shape);
Status validate_workspace(DecodeAttentionArgs const& args, AttentionShape const& shape, Workspace const& ws);

}  // namespace baton::attention
