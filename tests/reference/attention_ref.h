// CPU reference of paged decode attention (decode-attention.md "Math"), in plain C++ over the
// same paged cache the kernel reads. Values are held as float (bf16/fp16 inputs are exactly
// representable); the reference accumulates in double, the "naive" variant in float (the
// same-precision computation of the FlashAttention tolerance rule, docs/numerics.md).
#pragma once

#include <cstdint>
#include <vector>

namespace baton::ref {

struct AttentionCase {
  int batch = 1, q_len = 1, num_q_heads = 1, num_kv_heads = 1, head_dim = 64, page_size = 16;
  std::vector<float> q;                       // [batch * q_len, num_q_heads, head_dim]
  std::vector<float> k, v;                    // paged pools addressed by the strides below
  int64_t stride_page = 0, stride_token = 0, stride_head = 0;  // K's, in elements; head_dim stride 1
  int64_t v_stride_page = -1, v_stride_token = -1, v_stride_head = -1;  // V's; -1: K's
  std::vector<int32_t> cache_seqlens;         // [batch]
  std::vector<int32_t> page_table;            // [batch, pt_stride]
  int64_t pt_stride = 0;
  float scale = 1;
  int window_left = -1;
  float softcap = 0;
  std::vector<float> sinks, alibi;            // empty or [num_q_heads]
  bool alibi_before_softcap = false;          // a wrong order, for negative controls only

  int64_t kv_offset(int b, int64_t pos, int kv_head) const;  // K's element offset
  int64_t v_offset(int b, int64_t pos, int kv_head) const;   // V's
};

// out [batch * q_len, num_q_heads, head_dim], lse [batch * q_len, num_q_heads]
void decode_attention(AttentionCase const& c, std::vector<double>& out, std::vector<double>& lse);
void decode_attention_naive(AttentionCase const& c, std::vector<float>& out, std::vector<float>& lse);

}  // namespace baton::ref
