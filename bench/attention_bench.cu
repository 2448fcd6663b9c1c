// baton-bench attention: paged split-K decode attention at the shapes of ../shared/BENCHMARKS.md
// (bf16, 32 query heads, 8 KV heads, head_dim 128, page 64, NHD; --heads, --head-dim, --page and
// --hnd change them) plus two ragged batches.
// Split counts come from plan_kv_splits, run once per shape before capture: baton's balanced
// plan (ctas_per_wave = decode_attention_ctas_per_wave, max_splits = its bound
// ceil(ctas_per_wave / 8), 128-key floor per split), or SGLang's heuristic with --sglang
// (max_splits 64). Each of the calls in a graph (20, or --calls N: 32 are a Llama-3-8B step's
// layers) reads its own KV pool, as each layer of a model has its own (../shared/BENCHMARKS.md). Not fewer pools in rotation: the
// K/V stream's evict-first L2 policy keeps part of a rotating working set resident across
// calls (a scan-resistant cache), so 2-6 pools flattered 1x8K, 8x1K and 1x32K by 0.4-1.1 us
// (docs/benchmarking.md, twenty-fifth session).
//
// bytes_moved: K and V of every cached token once, L * KV heads * head_dim * 2 B * 2. q and out
// are < 1% of it at every shape here; the split scratch (written once, read once by the merge)
// is up to ~6% at 1x1K and 8x1K and under 1% at the large shapes. None of them is counted, so
// TB/s understates the traffic a little at the small shapes.
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "baton/attention.h"
#include "baton/metadata.h"
#include "attention/row_chunks.h"
#include "attention_trace.h"
#include "bench_options.h"
#include "harness.h"
#include "read_floor.h"
#include "report.h"

namespace baton::bench {
namespace {

constexpr int kDefaultMaxSplits = 32;  // the reducer merges up to 32 splits in two round trips
constexpr int kDefaultMinKeysPerSplit = 128;  // SplitPlanParams::min_keys_per_split
constexpr double kTargetTBs = 4.4;

__global__ void fill_random_bf16(uint16_t* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    uint32_t x = uint32_t(i) * 2654435761u ^ seed;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    float const f = (x & 0xFFFF) / 32768.0f - 1.0f;  // [-1, 1)
    uint32_t bits;
    memcpy(&bits, &f, 4);
    p[i] = uint16_t(bits >> 16);  // truncation to bf16 is fine for timing data
  }
}

struct Case {
  std::string name;
  std::vector<int> lens;
};

struct Pool {
  uint16_t *k = nullptr, *v = nullptr;
};

constexpr int kCallsPerGraph = 20;  // in-graph: calls per graph unless --calls, and the default pool count

}  // namespace

int run_attention_bench(BenchOptions const& opt) {
  // The model's attention shape: ../shared/BENCHMARKS.md's (32 query / 8 KV heads, head_dim
  // 128, page 64, NHD) unless --heads / --head-dim / --page / --hnd say otherwise; the targets
  // apply to it, at the shapes' own lengths (no --len-delta), only.
  int const kHq = opt.num_q_heads, kHkv = opt.num_kv_heads, kD = opt.head_dim;
  int const kPage = opt.shape[0] > 0 && opt.shape[2] > 0 ? opt.shape[2] : opt.page_size;  // --shape B,CTX,PAGE
  int const calls = opt.calls > 0 ? opt.calls : kCallsPerGraph;  // in-graph calls per graph, a pool each
  // The method and the default plan too: one draft token, a pool per call, shuffled pages,
  // baton's balanced split plan with its defaults (--q-len, --pools, --seq-pages, --sglang,
  // --min-keys, --max-splits, --wave and --plan-q-len are diagnostics, and empty the target
  // column; --calls keeps it: the method captures N >= 20 calls, each on its own pool).
  bool const standard = kHq == 32 && kHkv == 8 && kD == 128 && kPage == 64 && !opt.hnd && opt.len_delta == 0 &&
                        opt.q_len == 1 && opt.pools == 0 && !opt.seq_pages && !opt.sglang_plan && opt.min_keys < 0 &&
                        opt.max_splits <= 0 && opt.wave < 0 && opt.plan_q_len == 0 && opt.shape[0] == 0;
  if (opt.trace && !trace_supported()) {
    std::fprintf(stderr, "--trace needs a build with -DBATON_TRACE=ON (e.g. cmake --preset trace)\n");
    return 2;
  }
  GpuReport gpu = describe_gpu();
  std::printf("baton-bench attention | %s | %d SMs | L2 %zu MB | %s | rev %s\n", gpu.name.c_str(), gpu.num_sms,
              gpu.l2_bytes >> 20, gpu.clocks.c_str(), gpu.revision.c_str());
  if (pdl_disabled_by_env()) std::printf("BATON_PDL=0: every column runs without PDL (the kill switch wins)\n");
  FILE* json = opt.json_path.empty() ? nullptr : std::fopen(opt.json_path.c_str(), "w");
  std::vector<Case> cases;
  auto uniform = [](int b, int l) { return std::vector<int>(b, l); };
  for (auto [b, l] : std::vector<std::pair<int, int>>{{1, 1024}, {1, 8192}, {8, 1024}, {32, 8192}, {64, 4096},
                                                       {128, 2048}, {1, 32768}, {16, 32768}}) {
    cases.push_back({std::to_string(b) + "x" + std::to_string(l / 1024) + "K", uniform(b, l)});
  }
  std::vector<int> one_long(16, 1024);
  one_long[0] = 32768;
  cases.push_back({"1x32K+15x1K", one_long});
  std::vector<int> mix;
  for (int l = 64; l <= 16384; l *= 2) mix.push_back(l), mix.push_back(l + l / 3);
  cases.push_back({"mix64..16K", mix});
  if (opt.len_delta != 0) {  // lengths off the powers of two (a split's keys then start mid-tile), at least 1
    for (Case& c : cases)
      for (int& l : c.lens) l = std::max(1, l + opt.len_delta);
  }
  if (opt.shape[0] > 0) {  // --shape B,CTX,PAGE: one batch of B requests of CTX keys (diagnostic)
    int const b = opt.shape[0], l = opt.shape[1];  // --len-step N: request i gets CTX - i x N
    if (l < 1) {
      std::fprintf(stderr, "--shape: context %d must be at least 1\n", l);
      if (json != nullptr) std::fclose(json);
      return 2;
    }
    std::string name = std::to_string(b) + "x" + (l % 1024 == 0 ? std::to_string(l / 1024) + "K" : std::to_string(l));
    std::vector<int> lens = uniform(b, l);
    if (opt.len_step != 0) {
      for (int i = 0; i < b; ++i) lens[i] = std::max(1, l - i * opt.len_step);
      name += "-" + std::to_string(opt.len_step) + "i";
    }
    cases = {{name, lens}};
  } else if (opt.quick) cases = {cases[0], cases[3], cases[6], cases[8]};
  if (!opt.only.empty()) {
    std::vector<Case> kept;
    for (Case const& c : cases)  // --only a,b: exact names
      if (("," + opt.only + ",").find("," + c.name + ",") != std::string::npos) kept.push_back(c);
    cases = kept;
  }
  int const min_keys = opt.min_keys >= 0 ? opt.min_keys : kDefaultMinKeysPerSplit;
  int wave = 0;  // SplitPlanParams::ctas_per_wave: baton's balanced plan unless --sglang
  if (!opt.sglang_plan) {
    Status const st = decode_attention_ctas_per_wave(kD, &wave);
    if (!st.is_ok()) std::fprintf(stderr, "decode_attention_ctas_per_wave: %s\n", st.to_string().c_str());
    if (opt.wave >= 0) wave = opt.wave;
  }
  // Within one wave the balanced plan gives a request at most ctas_per_wave / CTAs-per-request
  // splits (8 kv heads x the producer's row chunks): the capture-time bound (rounded up, and at
  // most the reducer's 32); past the wave, and for ragged batches (planned for two waves), it
  // may want up to about twice that and max_splits caps it. SGLang's default is 64.
  int const q_len = opt.q_len, plan_q_len = opt.plan_q_len > 0 ? opt.plan_q_len : q_len;
  int const ctas_per_request = kHkv * static_cast<int>(attention::row_chunks(kHq / kHkv, q_len, kD));
  int const max_splits = opt.max_splits > 0 ? opt.max_splits
                         : wave > 0 ? std::min(kDefaultMaxSplits, (wave + ctas_per_request - 1) / ctas_per_request)
                                    : kDefaultMaxSplits;
  std::printf("split plan: %s, max_splits %d, min_keys_per_split %d, ctas_per_wave %d, q_len %d (plan's %d)\n",
              wave > 0 ? "balanced" : "SGLang", max_splits, min_keys, wave, q_len, plan_q_len);

  // The methods' floor: a producer and a reducer that do nothing (two empty kernels of one CTA
  // per SM, PDL-chained), so the small shapes' columns read as floor + work.
  {
    Timer floor_timer;
    Timing const g = floor_timer.in_graph_per_call(empty_kernels(PdlMode::kOn, 2, gpu.num_sms), calls);
    Timing const cold = floor_timer.cold_single_call(empty_kernels(PdlMode::kOn, 2, gpu.num_sms));
    Timing const cold1 = floor_timer.cold_single_call(empty_kernels(PdlMode::kOn, 1, gpu.num_sms));
    std::printf("floor: two empty kernels (producer + reducer) in-graph %s us per call, single-call cold %s us "
                "(one kernel: %s us)\n",
                fmt(g.median_us).c_str(), fmt(cold.median_us).c_str(), fmt(cold1.median_us).c_str());
  }
  Table table({"shape", "KV MB", "graph us", "PDL off", "early", "1-launch", "early 1L", "TB/s", "of 4.4", "cold us",
               "cold PDL off", "cold early", "cold 1-launch", "cold early 1L", "eager us", "eager PDL off",
               "eager 1-launch", "PDL saves", "read floor", "floor no-wait", "cold floor", "target"});
  Timer timer;  // before the pools: its reference read time is the quiet device's (Timer::settle)
  // Pages per case: the sum over requests of ceil(len / page).
  auto pages_of = [kPage](Case const& c) {
    int64_t n = 0;
    for (int l : c.lens) n += (l + kPage - 1) / kPage;
    return n;
  };
  // The KV pools, one per call of a graph unless --pools, allocated and filled once for the
  // largest case: every case uses a prefix of each. Pools allocated per case, and the tens of
  // GB freed between cases, slowed the next case's first timings by 10-12% (1x32K in graphs
  // 36.3 -> 40.5 us after 128x2K; docs/benchmarking.md, twenty-fifth session). Fewer pools
  // only if the device memory runs out (said on stderr).
  size_t max_elems = 0;
  for (Case const& c : cases) max_elems = std::max(max_elems, size_t(pages_of(c)) * kPage * kHkv * kD);
  size_t const pool_bytes = max_elems * 2 * 2;  // K and V, bf16
  int const wanted_pools = opt.pools > 0 ? opt.pools : calls;
  // As many as fit with 4 GB left for the cases' other buffers and the graphs.
  size_t free_bytes = 0, total_bytes = 0;
  cudaMemGetInfo(&free_bytes, &total_bytes);
  size_t const reserve = size_t(4) << 30;
  int const fit = pool_bytes == 0 ? wanted_pools
                  : free_bytes > reserve ? static_cast<int>(std::min<size_t>((free_bytes - reserve) / pool_bytes, 1 << 20))
                                         : 0;
  std::vector<Pool> pools;
  for (int i = 0; i < std::min(wanted_pools, fit) && max_elems > 0; ++i) {
    Pool p;
    if (cudaMalloc(&p.k, max_elems * 2) != cudaSuccess || cudaMalloc(&p.v, max_elems * 2) != cudaSuccess) {
      cudaFree(p.k);  // null or the K half
      cudaGetLastError();
      break;
    }
    fill_random_bf16<<<1024, 256>>>(p.k, max_elems, 2 * i + 1);
    fill_random_bf16<<<1024, 256>>>(p.v, max_elems, 2 * i + 2);
    pools.push_back(p);
  }
  int const num_pools = static_cast<int>(pools.size());
  if (max_elems > 0 && num_pools == 0) {
    std::fprintf(stderr, "attention: not enough device memory for a KV pool of %zu MB\n", pool_bytes >> 20);
    if (json != nullptr) std::fclose(json);
    return 1;
  }
  if (max_elems > 0 && num_pools < wanted_pools) {
    std::fprintf(stderr,
                 "attention: device memory for %d of %d KV pools only: calls rotate over them, and the K/V "
                 "stream's evict-first L2 policy then keeps part of them in L2 (in-graph times flattered)\n",
                 num_pools, wanted_pools);
  }
  cudaDeviceSynchronize();  // the fills (legacy stream) before the settle's reads (the timer's stream)
  double const settled_ms = timer.settle();
  std::fprintf(stderr, "attention: %d KV pools of %zu MB, device quiet %.0f ms after their fill\n", num_pools,
               pool_bytes >> 20, settled_ms);
  std::vector<void const*> k_pools, v_pools;  // the pools as read_floor takes them
  for (Pool const& p : pools) k_pools.push_back(p.k), v_pools.push_back(p.v);
  void* floor_sink = nullptr;  // read_floor's never-taken store, one int4 per reader CTA
  if (cudaMalloc(&floor_sink, read_floor_sink_bytes(gpu.num_sms)) != cudaSuccess) {
    std::fprintf(stderr, "attention: cudaMalloc of the read floor's sink failed\n");
    for (Pool& p : pools) cudaFree(p.k), cudaFree(p.v);
    if (json != nullptr) std::fclose(json);
    return 1;
  }
  std::mt19937_64 rng(7);
  for (Case const& c : cases) {
    int const batch = static_cast<int>(c.lens.size());
    int64_t total_tokens = 0, max_pages = 0;
    for (int l : c.lens) {
      total_tokens += l;
      max_pages = std::max<int64_t>(max_pages, (l + kPage - 1) / kPage);
    }
    double const kv_bytes = double(total_tokens) * kHkv * kD * 2 * 2;
    int64_t const num_pages = pages_of(c);
    std::vector<int32_t> pages(num_pages);
    std::iota(pages.begin(), pages.end(), 0);
    if (!opt.seq_pages) std::shuffle(pages.begin(), pages.end(), rng);
    std::vector<int32_t> table_host(size_t(batch) * max_pages, 0);
    size_t next = 0;
    for (int b = 0; b < batch; ++b)
      for (int64_t j = 0; j < (c.lens[b] + kPage - 1) / kPage; ++j) table_host[b * max_pages + j] = pages[next++];
    uint16_t *q, *out;
    int32_t *lens_d, *table_d, *splits_d;
    float* lse;
    void* ws;
    size_t const ws_bytes = decode_attention_workspace_bytes(batch, q_len, kHq, kD, max_splits);
    int64_t const tokens = int64_t(batch) * q_len;
    cudaMalloc(&q, size_t(tokens) * kHq * kD * 2);
    cudaMalloc(&out, size_t(tokens) * kHq * kD * 2);
    cudaMalloc(&lse, size_t(tokens) * kHq * 4);
    cudaMalloc(&lens_d, batch * 4);
    cudaMalloc(&table_d, table_host.size() * 4);
    cudaMalloc(&splits_d, batch * 4);
    cudaMalloc(&ws, std::max<size_t>(ws_bytes, 16));
    int32_t* counters;  // single launch: zeroed once, every call leaves it 0
    cudaMalloc(&counters, size_t(tokens) * kHq * 4);
    cudaMemset(counters, 0, size_t(tokens) * kHq * 4);
    fill_random_bf16<<<64, 256>>>(q, size_t(tokens) * kHq * kD, 99);
    cudaMemcpy(lens_d, c.lens.data(), batch * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(table_d, table_host.data(), table_host.size() * 4, cudaMemcpyHostToDevice);

    PlanKvSplitsArgs plan;
    plan.cache_seqlens = TensorView::contiguous(lens_d, DType::kInt32, {batch});
    plan.num_kv_splits = TensorView::contiguous(splits_d, DType::kInt32, {batch});
    plan.params = {kHq, kHkv, max_splits, 0, min_keys, wave, plan_q_len, kD};
    Status st = plan_kv_splits(plan);
    std::vector<int32_t> splits(batch);
    cudaMemcpy(splits.data(), splits_d, batch * 4, cudaMemcpyDeviceToHost);
    if (!st.is_ok()) std::fprintf(stderr, "plan_kv_splits: %s\n", st.to_string().c_str());

    // The arguments of each pool's calls, built once (an engine keeps them between steps):
    // the eager columns then time the library's host work, not the harness's.
    std::vector<DecodeAttentionArgs> pool_args(num_pools);
    for (int k = 0; k < num_pools; ++k) {
      DecodeAttentionArgs& a = pool_args[k];
      a.q = TensorView::contiguous(q, DType::kBFloat16, {tokens, kHq, kD});
      a.q_len = q_len;
      std::vector<int64_t> const dims = opt.hnd ? std::vector<int64_t>{num_pages, kHkv, kPage, kD}
                                                : std::vector<int64_t>{num_pages, kPage, kHkv, kD};
      a.layout = opt.hnd ? KvLayout::kHND : KvLayout::kNHD;
      a.k_cache = TensorView::contiguous(pools[k].k, DType::kBFloat16, {dims[0], dims[1], dims[2], dims[3]});
      a.v_cache = TensorView::contiguous(pools[k].v, DType::kBFloat16, {dims[0], dims[1], dims[2], dims[3]});
      a.cache_seqlens = TensorView::contiguous(lens_d, DType::kInt32, {batch});
      a.page_table = TensorView::contiguous(table_d, DType::kInt32, {batch, max_pages});
      a.num_kv_splits = TensorView::contiguous(splits_d, DType::kInt32, {batch});
      a.max_splits = max_splits;
      a.out = TensorView::contiguous(out, DType::kBFloat16, {tokens, kHq, kD});
      a.lse = TensorView::contiguous(lse, DType::kFloat32, {tokens, kHq});
      a.merge_counters = TensorView::contiguous(counters, DType::kInt32, {tokens * kHq});  // used with single_launch
    }
    auto call = [&](PdlMode pdl, bool early = false, bool single = false) {
      return [&, pdl, early, single](cudaStream_t stream, int i) {
        DecodeAttentionArgs a = pool_args[i % num_pools];
        a.inputs_written_before_chain = early;  // true here: metadata is written before capture
        a.single_launch = single;
        Status s = decode_attention(a, {ws, ws_bytes}, {stream, pdl});
        if (!s.is_ok()) std::fprintf(stderr, "decode_attention: %s\n", s.to_string().c_str());
        return s.is_ok();
      };
    };
    if (opt.profile || opt.trace) {  // a few eager calls for a profiler, or traced calls; no timing
      if (opt.trace) {
        // One graph of `calls` calls in a mode, then its summary: the last call's (trace_print), or
        // with `pair` the focused last two calls' (trace_print_pair). The records are cleared
        // first: a mode's reducer CTAs leave records that the next mode's CTAs may not overwrite
        // (single launch has none, and its last CTAs mark the same kernel row).
        auto traced = [&](std::string const& what, bool early, bool single, bool pair) {
          trace_clear();
          timer.in_graph_per_call(call(PdlMode::kOn, early, single), calls, 3);
          std::string const label = c.name + ", in-graph" + what;
          if (pair) {
            trace_print_pair(label.c_str(), single);
          } else {
            trace_print(label.c_str(), single);
          }
        };
        traced(" (last of " + std::to_string(calls) + " calls)", false, false, false);
        traced(", early reads", true, false, false);
        traced(", single launch", false, true, false);
        traced(", early reads + single launch", true, true, false);
        trace_clear();
        timer.cold_single_call(call(PdlMode::kOn), 3);
        trace_print((c.name + ", cold single call").c_str());
        if (num_pools >= 2) {  // the last two calls (18 and 19 of 20): a call and the next one beside its tail
          trace_focus(pools[(calls - 2) % num_pools].k, pools[(calls - 1) % num_pools].k);
          std::string const pair = " calls " + std::to_string(calls - 2) + " and " + std::to_string(calls - 1);
          traced("," + pair, false, false, true);
          traced(", early reads," + pair, true, false, true);
          traced(", early reads + single launch," + pair, true, true, true);
          trace_focus(nullptr, nullptr);
        }
      } else {
        for (int i = 0; i < 6; ++i) call(PdlMode::kOn)(timer.stream(), i);
      }
      cudaStreamSynchronize(timer.stream());
      std::fprintf(stderr, "%s: %s, splits %d\n", c.name.c_str(), opt.trace ? "traced" : "profiled", splits[0]);
      for (void* p : {(void*)q, (void*)out, (void*)lse, (void*)lens_d, (void*)table_d, (void*)splits_d, ws, (void*)counters}) cudaFree(p);
      continue;
    }
    bool const all = !opt.graph_only;
    // The five variants' graphs replayed in turn (Timer), so that a drift of the DRAM's speed
    // during the case reaches every column alike.
    std::vector<Enqueue> const variants = {call(PdlMode::kOn), call(PdlMode::kOff), call(PdlMode::kOn, true),
                                           call(PdlMode::kOn, false, true), call(PdlMode::kOn, true, true)};
    std::vector<Timing> const g = timer.in_graph_per_call(variants, calls);
    std::vector<Timing> const cold = all ? timer.cold_single_call(variants) : std::vector<Timing>(variants.size());
    Timing const &g_on = g[0], &g_off = g[1], &g_early = g[2], &g_single = g[3], &g_early_single = g[4];
    Timing const &c_on = cold[0], &c_off = cold[1], &c_early = cold[2], &c_single = cold[3], &c_early_single = cold[4];
    std::vector<Timing> const eager =
        all ? timer.eager({call(PdlMode::kOn), call(PdlMode::kOff), call(PdlMode::kOn, false, true)})
            : std::vector<Timing>(3);
    Timing const &e_on = eager[0], &e_off = eager[1], &e_single = eager[2];
    double const tbs = g_on.ok ? kv_bytes / (g_on.median_us * 1e6) : 0;
    // The read floor of the same bytes, pools and methods (read_floor.h).
    size_t const floor_bytes = static_cast<size_t>(kv_bytes / 2);  // per tensor
    ReadFloorTimes const floor =
        time_read_floor(timer, k_pools, v_pools, floor_bytes, calls, gpu.num_sms, floor_sink, all);

    std::string target = "-";  // BENCHMARKS.md's targets hold for its shape only
    if (standard) {
      if (c.name == "1x1K") target = "<= 3.4 / cold 8.6 / eager 10";
      if (c.name == "8x1K") target = "<= 6.4 / cold 15.5";
      if (c.name == "1x8K") target = "<= 7 / cold 15.9";
      if (c.name == "1x32K") target = ">= 4.0 TB/s";
      if (kv_bytes >= 256e6) target = ">= 4.4 TB/s";
      if (c.name.find('+') != std::string::npos || c.name.find("mix") != std::string::npos) {
        target = "<= " + fmt(1.2 * kv_bytes / (kTargetTBs * 1e6), 1) + " us";
      }
    }
    auto us = [](Timing const& t) { return t.ok ? fmt(t.median_us) : std::string("-"); };
    // PDL's saving, (off - on) / off, per method (graph / cold / eager); negative: PDL costs.
    auto saves = [](Timing const& on, Timing const& off) {
      if (!on.ok || !off.ok) return std::string("-");
      char buf[32];  // fmt() prints values <= 0 as missing; a saving may be 0 or negative
      std::snprintf(buf, sizeof buf, "%.1f%%", 100 * (off.median_us - on.median_us) / off.median_us);
      return std::string(buf);
    };
    std::string const pdl_saves = saves(g_on, g_off) + (all ? " / " + saves(c_on, c_off) + " / " + saves(e_on, e_off) : "");
    table.add({c.name, fmt(kv_bytes / 1e6, 1), us(g_on), us(g_off), us(g_early), us(g_single), us(g_early_single),
               fmt(tbs, 2), fmt(100 * tbs / kTargetTBs, 0) + "%", us(c_on), us(c_off), us(c_early), us(c_single),
               us(c_early_single), us(e_on), us(e_off), us(e_single), pdl_saves, us(floor.graph),
               us(floor.graph_nowait), us(floor.cold), target});
    if (json) {
      auto line = [&](char const* method, char const* pdl, Timing const& t, std::string const& reader = "") {
        if (!t.ok) return;
        JsonLine j;
        j.str("bench", "attention").str("shape", c.name).num("batch", batch).num("kv_bytes", kv_bytes);
        j.str("method", method).str("pdl", pdl);
        if (!reader.empty()) j.str("reader", reader);  // the read floor's columns: which reader won
        j.num("median_us", t.median_us).num("p10_us", t.p10_us);
        j.num("p90_us", t.p90_us).num("pools", num_pools).num("calls", calls).str("gpu", gpu.name).str("rev", gpu.revision);
        j.num("q_len", q_len).num("plan_q_len", plan_q_len).num("max_splits", max_splits);
        j.num("num_q_heads", kHq).num("num_kv_heads", kHkv).num("head_dim", kD).num("page_size", kPage);
        j.str("layout", opt.hnd ? "HND" : "NHD").num("len_delta", opt.len_delta);
        std::fprintf(json, "%s\n", j.done().c_str());
      };
      line("graph", "on", g_on);
      line("graph", "off", g_off);
      line("cold", "on", c_on);
      line("cold", "off", c_off);
      line("graph", "early", g_early);
      line("cold", "early", c_early);
      line("graph", "single", g_single);
      line("cold", "single", c_single);
      line("graph", "early_single", g_early_single);
      line("cold", "early_single", c_early_single);
      line("eager", "single", e_single);
      line("eager", "on", e_on);
      line("eager", "off", e_off);
      line("graph", "read_floor", floor.graph, floor.graph_reader);
      line("graph", "read_floor_nowait", floor.graph_nowait, floor.nowait_reader);
      line("cold", "read_floor", floor.cold, floor.cold_reader);
    }
    std::string splits_str;
    for (int i = 0; i < std::min(batch, 4); ++i) splits_str += std::to_string(splits[i]) + " ";
    std::fprintf(stderr, "%s: %d pools, splits %s\n", c.name.c_str(), num_pools, splits_str.c_str());
    for (void* p : {(void*)q, (void*)out, (void*)lse, (void*)lens_d, (void*)table_d, (void*)splits_d, ws, (void*)counters}) cudaFree(p);
  }
  std::string const pools_label = num_pools >= calls
                                      ? std::string("each on its own KV pool")
                                      : "on " + std::to_string(num_pools) + " KV pools in rotation (not the method)";
  std::printf("\nin-graph per call: %d calls per graph, %s, median of 30 replays, each behind\n"
              "a 20 us hold kernel (%s);\n"
              "cold: single-call graph after a 256 MB overwrite, median of 200; eager: per call over 200\n"
              "back-to-back C++ launches, median of 10, the three eager variants' rounds interleaved.\n"
              "early: PDL on with inputs_written_before_chain (lengths, page table, splits and old KV read\n"
              "before the wait); 1-launch: PDL on, DecodeAttentionArgs::single_launch (no reducer kernel);\n"
              "early 1L: both.\n"
              "TB/s = K+V bytes / in-graph time (PDL on, default reads, producer + reducer).\n"
              "PDL saves: (PDL off - PDL on) / PDL off, in graphs / cold / eager (negative: PDL costs).\n"
              "read floor: a kernel that only reads the same K/V bytes from the same pools, in graphs\n"
              "(waiting at entry on the previous call; no-wait: not waiting, calls overlapping) and cold;\n"
              "the fastest of its shapes (bench/read_floor.h); every attention call reads these bytes too.\n"
              "bf16, %d/%d heads, head_dim %d, page %d, %s%s.\n\n",
              calls, pools_label.c_str(), timer.replay_start(), kHq, kHkv, kD, kPage, opt.hnd ? "HND" : "NHD",
              opt.len_delta != 0 ? (", every length " + std::to_string(opt.len_delta) + " off the shape's").c_str() : "");
  cudaFree(floor_sink);
  for (Pool& p : pools) {
    cudaFree(p.k);
    cudaFree(p.v);
  }
  return finish_report(table, json);
}

}  // namespace baton::bench
