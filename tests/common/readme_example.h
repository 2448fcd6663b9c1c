// README.md's decode_attention example (plan_kv_splits, then decode_attention): the bodies of
// readme_setup and readme_step are the README's two code blocks, line for line.
// AttentionReadme.ExampleIsTheHeadersCode (tests/cpu) checks that they match;
// AttentionReadmeGpu.ExampleRunsAgainstTheReference (tests/gpu) runs them on real buffers.
// At global scope, so that the code compiles here only with every name qualified, as in a
// user's code.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "baton/baton.h"

namespace {

struct Planned {
  int ctas_per_wave = 0, max_splits = 0;
  size_t ws_bytes = 0;
};

baton::Status readme_setup(int batch, int num_q_heads, int num_kv_heads, Planned* out) {
  // Once per device, before capture: the plan's bounds (max_splits: see below) and the scratch,
  // sized for the largest batch captured (cudaMalloc it: the call never allocates).
  int ctas_per_wave = 0;
  baton::Status s = baton::decode_attention_ctas_per_wave(/*head_dim=*/128, &ctas_per_wave);  // 264 on an H200
  if (!s.is_ok()) return s;  // s.message() says what failed
  int const max_splits = std::min(32, (ctas_per_wave + num_kv_heads - 1) / num_kv_heads);  // group x q_len <= 16
  size_t const ws_bytes = baton::decode_attention_workspace_bytes(batch, /*q_len=*/1, num_q_heads, 128, max_splits);
  *out = {ctas_per_wave, max_splits, ws_bytes};
  return baton::Status::ok();
}

baton::Status readme_step(int batch, int num_q_heads, int num_kv_heads, int64_t num_pages, int64_t max_pages,
                   int ctas_per_wave, int max_splits, void* q, void* k_pool, void* v_pool, int32_t* seqlens,
                   int32_t* page_table, int32_t* splits, void* out, void* ws, size_t ws_bytes, cudaStream_t stream) {
  // Every step, inside the decode graph: split counts on the device once per step (every
  // layer's attention reuses them), then each layer's attention.
  baton::PlanKvSplitsArgs plan;
  plan.cache_seqlens = baton::TensorView::contiguous(seqlens, baton::DType::kInt32, {batch});  // incl. this token
  plan.num_kv_splits = baton::TensorView::contiguous(splits, baton::DType::kInt32, {batch});
  plan.params.num_q_heads = num_q_heads;
  plan.params.num_kv_heads = num_kv_heads;
  plan.params.max_splits = max_splits;
  plan.params.min_keys_per_split = 128;
  plan.params.ctas_per_wave = ctas_per_wave;  // baton's balanced plan: one wave of equal work
  baton::Status s = baton::plan_kv_splits(plan, {stream});
  if (!s.is_ok()) return s;  // e.g. "plan_kv_splits: cache_seqlens ..." before any launch

  baton::DecodeAttentionArgs a;
  a.q = baton::TensorView::contiguous(q, baton::DType::kBFloat16, {batch, num_q_heads, 128});
  a.k_cache = baton::TensorView::contiguous(k_pool, baton::DType::kBFloat16, {num_pages, 64, num_kv_heads, 128});
  a.v_cache = baton::TensorView::contiguous(v_pool, baton::DType::kBFloat16, {num_pages, 64, num_kv_heads, 128});
  a.layout = baton::KvLayout::kNHD;  // [pages, page_size 64, kv heads, head_dim]
  a.cache_seqlens = plan.cache_seqlens;
  a.page_table = baton::TensorView::contiguous(page_table, baton::DType::kInt32, {batch, max_pages});
  a.num_kv_splits = plan.num_kv_splits;
  a.max_splits = max_splits;
  // inputs_written_before_chain stays false: plan_kv_splits writes num_kv_splits in this chain.
  a.out = baton::TensorView::contiguous(out, baton::DType::kBFloat16, {batch, num_q_heads, 128});
  return baton::decode_attention(a, {ws, ws_bytes}, {stream});
}

}  // namespace
