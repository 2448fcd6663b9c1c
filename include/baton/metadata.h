// Decode metadata: the int32 views of the batch that a decode step needs before attention
// (../docs/architecture.md). Three ops, each one graph-safe launch: fixed grid from the
// capacities in the views, no host synchronisation, no allocation.
//
// Data-dependent faults (a length past the row, a pool index outside req_to_token) are
// clamped, never read out of bounds, and reported by OR-ing bits into an optional device
// flag (MetadataError).
//
// A batch of 0 is valid: build_decode_metadata and build_spec_page_table then write
// cu_seqlens_k[0] = 0 and nothing else, plan_kv_splits writes nothing, and the empty views
// may have null data (as PyTorch's empty tensors do). So may a view with an empty dim at any
// batch (req_to_token of 0 columns, say).
#pragma once

#include <cstdint>

#include "baton/launch.h"
#include "baton/status.h"
#include "baton/tensor.h"

namespace baton {

// Bits OR-ed into the optional `error_flags` int32 by the metadata kernels.
enum MetadataError : int32_t {
  kMetadataLengthNegative = 1 << 0,    // a length < 0 was clamped to 0
  kMetadataLengthClamped = 1 << 1,     // a length past the row / table capacity was clamped
  kMetadataPoolIndexInvalid = 1 << 2,  // req_pool_indices[b] outside [0, num_rows): row 0 read
  kMetadataSwaSlotInvalid = 1 << 3,    // a slot outside full_to_swa: swa page 0 written
};

// The split heuristic's inputs (decode-metadata.md section 3).
struct SplitPlanParams {
  int num_q_heads = 0;
  int num_kv_heads = 0;
  int max_splits = 0;  // capture-time bound; the attention grid is sized by it
  int num_sms = 0;     // 0: the current device's SM count
  // 0: exactly the SGLang baseline. > 0: a key floor (per-split and merge costs dominate short
  // splits): with the SGLang heuristic a request takes at most ceil(len / min_keys_per_split)
  // splits; with the balanced plan (ctas_per_wave > 0) at most floor(len / min_keys_per_split),
  // except that a request this floor already cuts into 2 or more keeps its rounded-up count
  // while that is at most 8 (splits of about this many keys, at least half of it, the last one
  // shorter: the attention reducer merges 8 splits in one round trip, and a short request cut
  // finer gives each producer warp fewer tiles).
  int min_keys_per_split = 0;
  // 0: the SGLang heuristic above. > 0: baton's balanced plan instead, about ctas_per_wave
  // producer CTAs of equal work (one wave of the GPU when ctas_per_wave is
  // decode_attention_ctas_per_wave()). chunk = max(min_keys_per_split, ceil(sum of lengths *
  // CTAs per request / ctas_per_wave)); every request takes at least one CTA per kv head, and
  // the CTAs left over share the keys of the requests longer than chunk: the bound chunk2 =
  // max(chunk, ceil(their keys * CTAs per request / (ctas_per_wave - batch * CTAs per
  // request))) always fits, and 8 bisection steps over [chunk, chunk2] find about the smallest
  // chunk c whose splits fit the wave; request b gets ceil(len_b / c) splits (at least 1, at
  // most max_splits and, with a key floor, at most floor(len_b / min_keys_per_split), or the rounded-up count up to 8 when that floor is 2 or more). When the batch
  // alone fills the wave, or c > 2 x chunk (too few CTAs left over: the fit would starve the
  // long requests): floor(len_b / chunk_over), past the wave, with chunk_over the chunk for
  // two waves (ceil(sum of lengths x CTAs per request / (2 x ctas_per_wave)), at least the key
  // floor): the producer's CTAs loop over the items past the wave, and finer items even out
  // their loops. Ragged batches give long requests many splits and short ones one. Within
  // one wave no request gets more than max(1, floor(ctas_per_wave / CTAs per request)) splits,
  // past it up to about twice that; max_splits caps both. The 8 bisection steps may stop
  // above the exact smallest fitting chunk, so near c = 2 x chunk the choice between the two
  // rules can differ from what an exact search would pick. CTAs per request: the attention
  // producer's, num_kv_heads * ceil(group * q_len / R) with R packed rows -- draft token x
  // query head -- of a kv head per CTA: 16 up to 16 rows, 32 past them at head_dim <= 128
  // (head_dim below); with q_len 1 that is SGLang's rule (num_q_heads for group 1, else
  // ceil(num_q_heads / min(16, group))).
  // Ragged batches: when the longest length is more than twice the shortest, batch x CTAs per
  // request < ctas_per_wave, and the two-wave chunk is at least 512 keys, all of the above runs
  // with 2 x ctas_per_wave: about two items per producer CTA, whose loops even out what one
  // wave's whole splits cannot (a short request still takes a whole CTA); a request may then
  // get up to about twice the one-wave bound below (max_splits caps it). Measured on the H200
  // (same machine, four runs each): 1 x 32K among 15 x 1K 58.1-58.4 -> 55.8-56.1 us, a mix of
  // 64..16K 92.6-98.3 -> 88.4-91.2 in graphs. Uniform batches keep one wave (two lost at 32 x
  // 8K and 8 x 1K; 16 x 32K was not conclusive). Doubling is skipped past ctas_per_wave 2^29.
  // Poor fits: a batch that is not ragged, with a two-wave chunk of at least 512 keys, goes
  // past the wave when its one-wave fit is poor, with the two-wave fit (the bisection above
  // with 2 x ctas_per_wave, from chunk_over: about the smallest chunk whose splits fit two
  // waves). Poor: the busiest producer CTA past the wave, bounded by ceil(items per kv head /
  // CTAs per kv head) x the longest item, has less than 19/20 of the fit's longest split, or
  // the fit uses fewer than 5/6 of ctas_per_wave and the bound is no more than its longest
  // split. Whole splits per request leave such fits short of the wave (12 x 32K: 2 splits, 192
  // of 264 CTAs) or uneven (12 requests of 32750 - 250 b keys: splits of 10.9K and 15.2K
  // keys); past the wave: 12 x 32K 410 -> 369 us, 17 x 32K 581-591 -> 526, the 12 uneven
  // requests 366 -> 353 in graphs (floor(len_b / chunk_over) splits past the wave), and with
  // the two-wave fit instead, on another machine, the 12 uneven requests 344 -> 339 and 22 x
  // 32K 705 -> 644 (the floor gave it 2 splits: a third of the CTAs streamed two 16K items)
  // (bf16, 32 / 8 heads, head_dim 128; docs/benchmarking.md, forty-fourth and forty-fifth
  // sessions).
  int ctas_per_wave = 0;
  // Query tokens per request (1..8), as DecodeAttentionArgs::q_len: the balanced plan counts
  // the producer's CTAs per request with it, so that speculative decoding with group * q_len
  // > 16 (e.g. group 8, 4 draft tokens: 2 CTAs per kv head) still plans one wave. The SGLang
  // heuristic (ctas_per_wave 0) ignores it.
  int q_len = 1;
  // The attention's head_dim (64, 128 or 256; 0 counts as 128): where group * q_len > 16 the
  // producer packs 32 rows of a kv head per CTA at head_dim <= 128 and 16 at 256, and the
  // balanced plan counts its CTAs the same way. The SGLang heuristic ignores it.
  int head_dim = 0;
};

// ---- build_decode_metadata ------------------------------------------------------------
struct DecodeMetadataArgs {
  // inputs
  TensorView seq_lens;          // [batch_size] int32 | int64, any stride, tokens already cached
  int64_t seq_len_delta = 0;    // added to every length (draft step + 1 in spec decoding); the
                                // sum saturates at the int64 limits before it is clamped
  TensorView req_pool_indices;  // [batch_size] int32 | int64, any stride, row of req_to_token
  TensorView req_to_token;      // [num_rows, max_context] int32, any strides
  int page_size = 1;            // power of two in [1, 256]
  TensorView full_to_swa;       // optional [pool_size] int64, stride 1, full slot -> SWA slot; a negative
                                // slot indexes from the end as in PyTorch (-1: last entry), a
                                // slot outside [-pool_size, pool_size) sets kMetadataSwaSlotInvalid
  // outputs (int32, caller-owned, fixed addresses; no two outputs and no output and input may
  // overlap -- so not in place over seq_lens -- and no two table elements may share an address)
  TensorView cache_seqlens;     // [batch_size], stride 1
  TensorView cu_seqlens_k;      // [batch_size + 1], stride 1
  TensorView page_table;        // [batch_size, max_pages], any strides, max_pages >= ceil(max_context / page_size)
  TensorView swa_page_table;    // optional, [batch_size, max_pages], any strides (with full_to_swa)
  TensorView num_kv_splits;     // optional [batch_size], stride 1; needs split_plan
  SplitPlanParams split_plan;
  // Columns past a request's page count are left untouched; with fill_columns > 0 they are
  // written with 0 up to column fill_columns (exclusive, <= max_pages).
  int64_t fill_columns = 0;
  TensorView error_flags;       // optional [1] int32, MetadataError bits OR-ed in
  // PDL prologue reads. false (default): the kernel reads nothing before its PDL wait, so any
  // earlier kernel of the step may write the inputs. true: the caller asserts that seq_lens,
  // req_pool_indices, req_to_token and full_to_swa were written before this step's PDL chain
  // started (H2D copies, or kernels not PDL-chained to this one); the kernel then loads them
  // while the previous kernel finishes and waits only before its first write. Outputs are the
  // same bit for bit; only the overlap changes.
  bool inputs_written_before_chain = false;
};

Status build_decode_metadata_supported(DecodeMetadataArgs const& args);
Status build_decode_metadata(DecodeMetadataArgs const& args, LaunchOptions const& options = {});

// ---- build_spec_page_table ------------------------------------------------------------
// Row m of B*R rows (R draft tokens per request):
//   A[m / R][start[m] : start[m] + lenA] ++ draft[m][0 : len_draft[m]]
// A source column outside [0, width) of its row (a negative or large start, lengths past the
// width) reads 0; columns past lenA + len_draft are untouched. Lengths are clamped to [0, the
// columns left] and reported (MetadataError).
struct SpecPageTableArgs {
  int num_draft_tokens = 1;     // R
  TensorView committed;         // A: [batch_size, width_a] int32, any strides
  TensorView committed_lens;    // [batch_size] or [batch_size * R] int32 | int64 (lenA)
  TensorView start;             // optional [batch_size * R] int32 | int64; default 0; may be < 0
  TensorView draft;             // [batch_size * R, width_b] int32, any strides
  TensorView draft_lens;        // [batch_size * R] int32 | int64
  // outputs (int32; none may overlap another output or an input)
  TensorView page_table;        // [batch_size * R, max_cols], any strides
  TensorView cache_seqlens;     // [batch_size * R], stride 1: lenA + len_draft (clamped to max_cols)
  TensorView cu_seqlens_k;      // [batch_size * R + 1], stride 1
  TensorView error_flags;       // optional [1] int32
};

Status build_spec_page_table_supported(SpecPageTableArgs const& args);
Status build_spec_page_table(SpecPageTableArgs const& args, LaunchOptions const& options = {});

// ---- plan_kv_splits -------------------------------------------------------------------
// The split plan on device, SGLang's heuristic or baton's balanced plan (SplitPlanParams::
// ctas_per_wave): num_kv_splits[b] in [1, max_splits].
// A length of 0 plans as 1 token (one split; the attention writes a zero row for it).
// Cost (one CTA; `baton-bench metadata`'s "plan alone" and "+ plan" columns, the balanced plan
// at 32/8 heads, in graphs): 1.5-1.6 us at batches that fill the wave (64 x 4K, 256 x 4K), 1.7
// at 1 x 1K, 3.0 at 8 x 1K and 4.1 at 8 x 16K (the fit's bisection runs 3 levels per round,
// ~0.45 us a round), and 6.7 us where the poor-fit test needs the two-wave fit too (22 x 32K).
// build_decode_metadata with the plan ("+ plan") takes 0.3-0.7 us more than the plan alone
// where its page-table copy is small, and saves a launch. Once per decode step
// (docs/benchmarking.md, forty-sixth session).
struct PlanKvSplitsArgs {
  TensorView cache_seqlens;  // [batch_size] int32, stride 1
  TensorView num_kv_splits;  // [batch_size] int32 (output; not over cache_seqlens)
  SplitPlanParams params;
};

Status plan_kv_splits_supported(PlanKvSplitsArgs const& args);
Status plan_kv_splits(PlanKvSplitsArgs const& args, LaunchOptions const& options = {});

}  // namespace baton
