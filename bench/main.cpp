// baton-bench: performance of baton's ops, measured by the methods of ../shared/BENCHMARKS.md.
//
//   baton-bench metadata  [--json FILE] [--quick] [--shape BATCH,CONTEXT,PAGE]
//   baton-bench attention [--json FILE] [--quick] [--shape BATCH,CONTEXT,PAGE [--len-step N]] [--only NAME] [--min-keys N] [--max-splits N] [--wave N] [--q-len N] [--plan-q-len N] [--sglang] [--hnd] [--page N] [--head-dim N] [--heads Q,KV] [--len-delta N] [--pools N] [--calls N] [--graph-only] [--seq-pages] [--profile] [--trace]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench_options.h"

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: baton-bench <subcommand> [--json FILE] [--quick] [--shape BATCH,CONTEXT,PAGE]\n"
               "       attention: --shape is one batch of CTX keys per request (PAGE 0: --page's),\n"
               "                  or CTX - b x N for request b with [--len-step N]\n"
               "       attention only: [--only NAME] [--min-keys N] [--max-splits N] [--wave N] [--sglang]\n"
               "                       [--q-len N] [--plan-q-len N]  (draft tokens per request; the plan's q_len)\n"
               "                   [--hnd] [--page N] [--head-dim N] [--heads Q,KV]  (model shape; default page 64, 128, 32,8)\n"
               "                   [--len-delta N]  (added to every length: -23 gives 1001, 8169, ...)\n"
               "                   [--pools N] [--calls N] [--graph-only] [--seq-pages] [--profile] [--trace]\n"
               "                   (--calls N: calls per in-graph graph, 20..256, default 20, each on its own pool)\n"
               "subcommands:\n"
               "  metadata   build_decode_metadata vs the multi-launch baseline\n"
               "  attention  paged split-K decode attention (producer + reducer)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  std::string const sub = argv[1];
  baton::bench::BenchOptions opt;
  for (int i = 2; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) {
      opt.json_path = argv[++i];
    } else if (!std::strcmp(argv[i], "--len-step") && i + 1 < argc) {
      opt.len_step = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--shape") && i + 1 < argc) {
      if (std::sscanf(argv[++i], "%d,%d,%d", &opt.shape[0], &opt.shape[1], &opt.shape[2]) != 3) return usage();
    } else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) {
      opt.only = argv[++i];
    } else if (!std::strcmp(argv[i], "--min-keys") && i + 1 < argc) {
      opt.min_keys = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--max-splits") && i + 1 < argc) {
      opt.max_splits = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--wave") && i + 1 < argc) {
      opt.wave = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--q-len") && i + 1 < argc) {
      opt.q_len = std::atoi(argv[++i]);
      if (opt.q_len < 1 || opt.q_len > 8) return usage();
    } else if (!std::strcmp(argv[i], "--plan-q-len") && i + 1 < argc) {
      opt.plan_q_len = std::atoi(argv[++i]);
      if (opt.plan_q_len < 1 || opt.plan_q_len > 8) return usage();
    } else if (!std::strcmp(argv[i], "--hnd")) {
      opt.hnd = true;
    } else if (!std::strcmp(argv[i], "--page") && i + 1 < argc) {
      opt.page_size = std::atoi(argv[++i]);
      if (opt.page_size < 1 || opt.page_size > 256 || (opt.page_size & (opt.page_size - 1)) != 0) return usage();
    } else if (!std::strcmp(argv[i], "--head-dim") && i + 1 < argc) {
      opt.head_dim = std::atoi(argv[++i]);
      if (opt.head_dim != 64 && opt.head_dim != 128 && opt.head_dim != 256) return usage();
    } else if (!std::strcmp(argv[i], "--len-delta") && i + 1 < argc) {
      opt.len_delta = std::atoi(argv[++i]);
      if (opt.len_delta < -32767 || opt.len_delta > 32768) return usage();
    } else if (!std::strcmp(argv[i], "--heads") && i + 1 < argc) {
      if (std::sscanf(argv[++i], "%d,%d", &opt.num_q_heads, &opt.num_kv_heads) != 2 || opt.num_kv_heads < 1 ||
          opt.num_q_heads < opt.num_kv_heads || opt.num_q_heads % opt.num_kv_heads != 0 ||
          opt.num_q_heads / opt.num_kv_heads > 16)
        return usage();
    } else if (!std::strcmp(argv[i], "--pools") && i + 1 < argc) {
      opt.pools = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--calls") && i + 1 < argc) {
      opt.calls = std::atoi(argv[++i]);
      if (opt.calls < 20 || opt.calls > 256) {
        std::fprintf(stderr, "--calls %d: must be in [20, 256] (the in-graph method captures at least 20 calls)\n", opt.calls);
        return 2;
      }
    } else if (!std::strcmp(argv[i], "--graph-only")) {
      opt.graph_only = true;
    } else if (!std::strcmp(argv[i], "--seq-pages")) {
      opt.seq_pages = true;
    } else if (!std::strcmp(argv[i], "--sglang")) {
      opt.sglang_plan = true;
    } else if (!std::strcmp(argv[i], "--profile")) {
      opt.profile = true;
    } else if (!std::strcmp(argv[i], "--trace")) {
      opt.trace = true;
    } else if (!std::strcmp(argv[i], "--quick")) {
      opt.quick = true;
    } else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return usage();
    }
  }
#if defined(BATON_HAS_METADATA)
  if (sub == "metadata") return baton::bench::run_metadata_bench(opt);
#endif
#if defined(BATON_HAS_ATTENTION)
  if (sub == "attention") return baton::bench::run_attention_bench(opt);
#endif
  std::fprintf(stderr, "unknown subcommand %s\n", sub.c_str());
  return usage();
}
