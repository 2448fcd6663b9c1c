// Paged split-K decode attention (../shared/specs/decode-attention.md): a producer that
// streams each request's paged KV cache in splits, and a reducer that merges the partial
// results, chained with PDL. One call launches both (the reducer only when some request may
// use more than one split), or the producer alone with DecodeAttentionArgs::single_launch.
#pragma once

#include <cstddef>
#include <cstdint>

#include "baton/launch.h"
#include "baton/status.h"
#include "baton/tensor.h"

namespace baton {

enum class KvLayout {
  kNHD,  // [num_pages, page_size, num_kv_heads, head_dim]
  kHND,  // [num_pages, num_kv_heads, page_size, head_dim]
};

// Device-resident values that the host cannot check are clamped, so that no input makes a
// kernel read or write out of bounds: a length below 0 counts as 0 and one past the page
// table's columns x page_size as that many keys; a split count below 1 as 1 and one past
// max_splits as max_splits; a page id outside [0, num_pages) reads zeros for its keys (they
// still count as keys with K = V = 0). AttentionInputs.OutOfRangeDeviceValuesAreClamped checks
// that these give the same bits as the clamped inputs. Not checked, as no kernel can tell them
// from valid values: merge_counters that are not all 0 (single_launch) leave out and lse
// wrong, in bounds. What the call writes (out, lse,
// merge_counters) must not overlap any other argument or the workspace (out may be the same
// view as q); misaligned views are rejected too.
struct DecodeAttentionArgs {
  TensorView q;              // [batch_size * q_len, num_q_heads, head_dim] bf16 | fp16; batch_size in [1, 65535]
  TensorView k_cache;        // paged pool, layout below, same dtype as q, head_dim contiguous
  TensorView v_cache;        // same shape, dtype and layout as k_cache
  KvLayout layout = KvLayout::kNHD;
  TensorView cache_seqlens;  // [batch_size] int32, KV length including this step's tokens
  TensorView page_table;     // [batch_size, max_pages] int32 (any row stride)
  TensorView num_kv_splits;  // optional [batch_size] int32 (plan_kv_splits); absent: max_splits
  int max_splits = 1;        // capture-time bound in [1, 1024]; the grid is sized by it
  int q_len = 1;             // query tokens per request (1..8), causal over the draft tokens
  float softmax_scale = 0;   // 0: 1 / sqrt(head_dim)
  int window_left = -1;      // sliding window: keys p >= pos - window_left; -1: off
  float softcap = 0;         // s = softcap * tanh(s / softcap); 0: off
  TensorView sinks;          // optional [num_q_heads] float32, one logit per head (natural log)
  TensorView alibi_slopes;   // optional [num_q_heads] float32
  TensorView out;            // [batch_size * q_len, num_q_heads, head_dim], q's dtype; may be q itself (in place)
  TensorView lse;            // optional [batch_size * q_len, num_q_heads] float32, natural log
  // PDL prologue reads. false (default): the producer reads nothing before its PDL wait, so
  // any earlier kernel of the step may write any input. true: the caller asserts that
  // cache_seqlens, page_table and num_kv_splits were written before this step's PDL chain
  // started (filled before the decode graph is launched, or by kernels not PDL-chained to
  // this one); the producer then loads them, and the K/V rows of tokens before the last q_len
  // positions (pages nothing in the step writes), while the previous kernel finishes. q and
  // this step's new K/V rows are still read after the wait. Outputs are the same bit for bit.
  // When no reducer follows (single_launch, or max_splits 1), or the reducer is a small grid
  // (at most 2 rows per SM) that fits on the SMs beside the producer's, the producer then also
  // lets the next kernels launch right after its own wait, so that their early reads overlap it.
  bool inputs_written_before_chain = false;
  // Single launch (decode-attention.md "Single-launch variant"): no reducer kernel. The last
  // producer CTA to finish for a (request, kv head, row chunk) merges the splits itself, found
  // by an atomic counter in merge_counters that the same CTA resets to 0. Outputs are the same bit
  // for bit as the two-kernel path. Used when a CTA's rows of partials fit its shared memory
  // (min(group * q_len, R) * max_splits * (head_dim + 1) floats in 50 / 100 / 200 KB at
  // head_dim 64 / 128 / 256, R the rows per producer CTA: 16, or 32 past 16 rows at head_dim
  // <= 128; max_splits <= 49 at 4 rows and 6 at 32 rows, head_dim 128); otherwise the call
  // takes the two-kernel path (same results, counters untouched).
  bool single_launch = false;
  // With single_launch: [>= batch_size * q_len * num_q_heads] int32, all 0 before the first
  // call (allocate it zeroed once, for the largest batch); every call leaves it 0, so one
  // buffer serves calls of any shape. Separate from the workspace, which partial results of
  // any shape overwrite (an overlap is rejected). 4-byte aligned. Two calls in flight at
  // once must not share it.
  TensorView merge_counters;
};

// Scratch for partial results of requests that use more than one split (0 when max_splits
// is 1): rows = batch_size * max_splits * q_len * num_q_heads; rows * head_dim floats of
// partial outputs, then rows floats of partial lse rounded up to 16 bytes. It needs no
// initialisation. Before it knows a row's split count, the reducer loads the partial lse of up
// to min(max_splits, 32) splits and the partial outputs of up to 8, and discards those past the
// count; so on scratch that no call has written yet, compute-sanitizer's initcheck reports
// those loads (their values are never used): memset the workspace once after allocating it to
// keep initcheck quiet. A call's partial results live there until its reducer (or its last
// CTA) has merged them, so two calls that may run at once (on different streams, or in graphs
// launched on different streams) must not share a workspace; calls in one stream may.
// Arguments decode_attention rejects (a batch_size, q_len, head_dim or
// max_splits outside its ranges) give 0, as does max_splits 1; the call then names the argument.
size_t decode_attention_workspace_bytes(int batch_size, int q_len, int num_q_heads, int head_dim,
                                        int max_splits);

// Producer CTAs of this head_dim that run at once on the current device (SMs x CTAs per SM):
// the value for SplitPlanParams::ctas_per_wave, so that plan_kv_splits / build_decode_metadata
// cut the batch into one wave of equal-work CTAs. Errors: unsupported head_dim, CUDA errors.
Status decode_attention_ctas_per_wave(int head_dim, int* ctas);

Status decode_attention_supported(DecodeAttentionArgs const& args);
Status decode_attention(DecodeAttentionArgs const& args, Workspace workspace, LaunchOptions const& options = {});

}  // namespace baton
