// Random paged decode-attention cases mirrored on the device, checked against
// tests/reference/attention_ref with the FlashAttention tolerance rule (docs/numerics.md).
#pragma once

#include <cstdint>
#include <vector>

#include "baton/attention.h"
#include "common/gpu.h"
#include "reference/attention_ref.h"

namespace baton::test {

struct AttnShape {
  std::vector<int> lens = {1000};  // KV length per request (batch = lens.size())
  int q_len = 1, num_q_heads = 32, num_kv_heads = 8, head_dim = 128, page_size = 16;
  DType dtype = DType::kBFloat16;
  KvLayout layout = KvLayout::kNHD;
  bool padded = false;             // non-contiguous pool strides
  bool v_padded = false;           // V's pool strides differ from K's (V rows and pages padded otherwise)
  int out_pad = 0;                 // elements after each (token, head) row of out: non-contiguous out strides
  int out_token_pad = 0;           // elements after each token's rows of out (after each head's with heads_major)
  bool out_heads_major = false;    // out laid out [head][token][dim] (strides: head > token)
  int lse_pad = 0;                 // elements after each token's row of lse
  int q_pad = 0;                   // elements (NaN) after each (token, head) row of q: q as a view into a wider tensor
  int max_splits = 1;
  std::vector<int> splits;         // empty: no num_kv_splits tensor (max_splits for all)
  int window_left = -1;
  float softcap = 0;
  bool sinks = false, alibi = false;
  float sink_bias = 0;             // added to every sink logit (random in [-2, 4))
  bool early = false;              // DecodeAttentionArgs::inputs_written_before_chain
  bool single_launch = false;      // DecodeAttentionArgs::single_launch (merge_counters zeroed once)
  float softmax_scale = 0;         // DecodeAttentionArgs::softmax_scale (0: 1 / sqrt(head_dim))
  bool zero_q = false;             // q all zeros: every score 0, each visible key weighs 1 (K/V stay random)
  uint64_t seed = 1;
};

// Two row chunks per kv head with 8 draft tokens (the producer's `two_late` path under early
// reads): group 4 (32 rows) at head_dim 256, 16 rows per CTA; group 8 (64 rows) at head_dim
// 128, 32 rows per CTA (row_chunks.h). Lengths 3000 (8 splits: warps of 6 tiles), 150 and 9
// (one split each), page 64.
AttnShape two_row_chunks_case(int head_dim, int num_kv_heads);

// The paired form under early reads (head_dim 128, q_len 8; group 4: 32 rows per kv head, one
// row chunk; group 8: 64 rows, two chunks): lengths 250 (one split of 16 tiles: every warp 4
// tiles, kStages + 1, so its ring's last two tiles come after the wait; this step's keys 242-249
// in warp 3's tile 3) and 200 (13 tiles: warp 0 4 tiles, holding keys 192-199 in its tile 3;
// warps 1-3 3 tiles, one late), and 3000 (8 splits: warps of 6 tiles), page 64.
AttnShape paired_ring_case(int num_kv_heads, int group = 4);

struct DeviceAttention {
  ref::AttentionCase c;
  DeviceBuffer<uint16_t> q, k, v, out;
  DeviceBuffer<int32_t> seqlens, page_table, splits;
  DeviceBuffer<float> lse, sinks, alibi;
  DeviceBuffer<unsigned char> workspace;
  DeviceBuffer<int32_t> merge_counters;  // single launch
  DecodeAttentionArgs args;

  explicit DeviceAttention(AttnShape const& s);
  Workspace ws() { return {workspace.get(), workspace.size()}; }
  // Poisons out and lse (NaN) and the workspace: NaN, or at every other call (the first with an
  // odd seed) a finite 3.4e38 (0x7F bytes), as stale partials of a larger call would be finite;
  // the single-launch counters stay as the last call left them (0), as a caller's would.
  void poison();
  // The single-launch counters, as the last call left them.
  std::vector<int32_t> counters() const { return merge_counters.download(); }
  // Uploads new lengths (same batch), a fresh page assignment and new split counts.
  void reshuffle(std::vector<int> const& lens, std::vector<int> const& splits, uint64_t seed);
  // The op's outputs against the fp64 reference, per row (token, head): |err| <= 2 x the row's
  // largest naive (float) error + 4 x 2^-8 (bf16) or 2^-11 (fp16) x the row's largest |ref|;
  // NaN fails, a row with no visible key must be exactly 0. lse too unless check_lse is false
  // (a call that did not request it): |err| <= 2 x the float lse's error + lse_atol + lse_rtol
  // |lse|, -inf exactly. docs/numerics.md.
  ::testing::AssertionResult matches_reference(bool check_lse = true, double lse_atol = 2e-5,
                                               double lse_rtol = 1e-6) const;
  // Device inputs as given, for values the host never checks (out of range lengths, split
  // counts, page ids); the reference case c stays as it is.
  void upload_device_inputs(std::vector<int32_t> const& seqlens, std::vector<int32_t> const& page_table_rows,
                            std::vector<int32_t> const& split_counts);
  // Uploads c.q, c.k and c.v (values the dtype holds exactly), after a test changed them.
  void upload_qkv();
  // A pool page that no request's pages use, its K and V (padding included) zeroed in c and on
  // the device; returns its id.
  int32_t zero_spare_page();
  int64_t pool_pages() const { return pool_pages_; }
  int page_table_cols() const { return c.pt_stride - 1; }  // the columns args.page_table shows
  std::vector<uint16_t> out_bits() const;  // out's logical elements [token][head][dim], padding skipped
  // Every element of out's and lse's buffers outside the views still holds the poison.
  bool padding_untouched() const;
  std::vector<float> lse_values() const;   // lse's logical elements [token][head]
  std::vector<unsigned char> output_bytes() const;  // out's bits, then lse's
  // One call of args as they stand (early reads included) over poisoned outputs, with two
  // kernels or single launch (merge_counters as the last call left them), synchronised;
  // returns output_bytes(). A failed call or sync is a test failure.
  std::vector<unsigned char> call_bytes(bool single, PdlMode pdl, cudaStream_t stream = nullptr);
  // A graph of `calls` calls of args captured on `stream` (a non-blocking one): its kernel
  // nodes, its edges, and how many of those are programmatic (PDL) edges.
  struct Captured {
    size_t nodes = 0, edges = 0, programmatic = 0;
    bool operator==(Captured const& o) const {
      return nodes == o.nodes && edges == o.edges && programmatic == o.programmatic;
    }
    friend void PrintTo(Captured const& c, std::ostream* os) {
      *os << c.nodes << " nodes, " << c.edges << " edges, " << c.programmatic << " programmatic";
    }
  };
  Captured captured(cudaStream_t stream, PdlMode pdl, int calls);
  // The kernels one call of args launches: 1 when single launch is taken, 2 for producer +
  // reducer.
  size_t kernels_per_call(cudaStream_t stream) { return captured(stream, PdlMode::kOn, 1).nodes; }

 private:
  AttnShape shape_;
  int64_t pool_pages_ = 0;
  int poison_calls_ = 0;
  int64_t out_stride_token_ = 0, out_stride_head_ = 0, lse_stride_token_ = 0;  // as constructed
  void fill_pages(uint64_t seed);
};

}  // namespace baton::test
