#pragma once

#include <string>

namespace baton::bench {

struct BenchOptions {
  std::string json_path;  // JSON lines written here when set
  bool quick = false;     // a few representative shapes
  int shape[3] = {0, 0, 0};  // --shape B,CTX,PAGE: that one shape only
  std::string only;          // --only A,B: attention shapes with these names
  int min_keys = -1;         // --min-keys N: SplitPlanParams.min_keys_per_split (-1: default)
  int max_splits = -1;       // --max-splits N: SplitPlanParams.max_splits and grid (-1: default)
  int wave = -1;             // --wave N: SplitPlanParams.ctas_per_wave (-1: decode_attention_ctas_per_wave)
  int q_len = 1;             // --q-len N: query tokens per request (draft tokens), 1..8
  int plan_q_len = 0;        // --plan-q-len N: SplitPlanParams.q_len (0: the same as q_len)
  bool sglang_plan = false;  // --sglang: SGLang's split heuristic instead of the balanced plan
  bool hnd = false;          // --hnd: KV pools in HND layout instead of NHD
  int page_size = 64;        // --page N: KV page size (power of two, 1..256)
  int head_dim = 128;        // --head-dim N: 64, 128 or 256
  int num_q_heads = 32, num_kv_heads = 8;  // --heads Q,KV
  int len_step = 0;          // --len-step N: with --shape, request b gets CTX - b x N keys (at least 1)
  int len_delta = 0;         // --len-delta N: added to every request's length, at least 1 (e.g. -23: 1001, 8169, ...)
  int pools = 0;             // --pools N: KV pools for every case, rotating if fewer than the calls (0: one per call)
  int calls = 0;             // --calls N: attention calls per in-graph graph, 20..256 (0: 20), each on its own pool
  bool profile = false;      // --profile: a few eager calls per shape, no timing (for ncu/nsys)
  bool graph_only = false;   // --graph-only: in-graph timings only (quick A/B runs)
  bool seq_pages = false;    // --seq-pages: page table in pool order instead of shuffled
  bool trace = false;        // --trace: kernel timelines of one in-graph and one cold call (BATON_TRACE builds)
};

int run_metadata_bench(BenchOptions const& options);
int run_attention_bench(BenchOptions const& options);

}  // namespace baton::bench
