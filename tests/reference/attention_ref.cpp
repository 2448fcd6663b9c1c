#include "reference/attention_ref.h"

#include <cmath>
#include <limits>

namespace baton::ref {

int64_t AttentionCase::kv_offset(int b, int64_t pos, int kv_head) const {
  int64_t const page = page_table[b * pt_stride + pos / page_size];
  return page * stride_page + (pos % page_size) * stride_token + kv_head * stride_head;
}

int64_t AttentionCase::v_offset(int b, int64_t pos, int kv_head) const {
  int64_t const page = page_table[b * pt_stride + pos / page_size];
  return page * (v_stride_page >= 0 ? v_stride_page : stride_page) +
         (pos % page_size) * (v_stride_token >= 0 ? v_stride_token : stride_token) +
         kv_head * (v_stride_head >= 0 ? v_stride_head : stride_head);
}

namespace {

template <class Acc>
void attend(AttentionCase const& c, std::vector<Acc>& out, std::vector<Acc>& lse) {
  int const D = c.head_dim, group = c.num_q_heads / c.num_kv_heads;
  int64_t const tokens = int64_t(c.batch) * c.q_len;
  out.assign(tokens * c.num_q_heads * D, 0);
  lse.assign(tokens * c.num_q_heads, -std::numeric_limits<Acc>::infinity());
  std::vector<Acc> s, acc(D);
  for (int b = 0; b < c.batch; ++b) {
    int64_t const L = c.cache_seqlens[b];
    for (int t = 0; t < c.q_len; ++t) {
      int64_t const pos = L - c.q_len + t;  // this token's own position
      int64_t const first = c.window_left >= 0 ? pos - c.window_left : 0;
      for (int h = 0; h < c.num_q_heads; ++h) {
        int const kvh = h / group;
        float const* qv = &c.q[((int64_t(b) * c.q_len + t) * c.num_q_heads + h) * D];
        s.clear();
        Acc m = -std::numeric_limits<Acc>::infinity();
        int64_t const lo = first > 0 ? first : 0, hi = pos < L - 1 ? pos : L - 1;  // inclusive
        for (int64_t p = lo; p <= hi; ++p) {
          float const* kv = &c.k[c.kv_offset(b, p, kvh)];
          Acc dot = 0;
          for (int d = 0; d < D; ++d) dot += Acc(qv[d]) * Acc(kv[d]);
          Acc score = Acc(c.scale) * dot;
          Acc const bias = c.alibi.empty() ? Acc(0) : Acc(c.alibi[h]) * Acc(pos - p);
          if (c.alibi_before_softcap) score -= bias;
          if (c.softcap > 0) score = Acc(c.softcap) * std::tanh(score / Acc(c.softcap));
          if (!c.alibi_before_softcap) score -= bias;
          s.push_back(score);
          if (score > m) m = score;
        }
        int64_t const row = (int64_t(b) * c.q_len + t) * c.num_q_heads + h;
        if (s.empty()) continue;  // no visible key: zeros, lse = -inf
        Acc denom = 0;
        for (int d = 0; d < D; ++d) acc[d] = 0;
        for (int64_t p = lo; p <= hi; ++p) {
          Acc const w = std::exp(s[p - lo] - m);
          denom += w;
          float const* vv = &c.v[c.v_offset(b, p, kvh)];
          for (int d = 0; d < D; ++d) acc[d] += w * Acc(vv[d]);
        }
        if (!c.sinks.empty()) denom += std::exp(Acc(c.sinks[h]) - m);  // once, never per split
        for (int d = 0; d < D; ++d) out[row * D + d] = acc[d] / denom;
        lse[row] = m + std::log(denom);
      }
    }
  }
}

}  // namespace

void decode_attention(AttentionCase const& c, std::vector<double>& out, std::vector<double>& lse) {
  attend<double>(c, out, lse);
}

void decode_attention_naive(AttentionCase const& c, std::vector<float>& out, std::vector<float>& lse) {
  attend<float>(c, out, lse);
}

}  // namespace baton::ref
