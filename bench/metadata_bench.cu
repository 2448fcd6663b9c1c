// baton-bench metadata: build_decode_metadata against the multi-launch path engines run
// today, at the shapes of ../shared/BENCHMARKS.md (batch 1/8/64/256, context 1K/4K/16K,
// page 1/64, seq_lens and req_pool_indices int64 as frameworks hold them).
//
// Baseline (7 graph nodes, written here with plain kernels and CUB, the same work as the
// framework ops): add+cast -> CUB inclusive scan (2 kernels) -> memset cu_seqlens_k[0] ->
// gather req_to_token[pool, j * page] -> shift -> copy into the page table.
//
// bytes_moved (fused): 4 B per page-table entry written + one 32-byte sector per entry read
// for page_size >= 8 (4 B per entry at page 1, where rows are contiguous) + 16 B per request.
// Buffers rotate across up to 8 sets so that the working set of a graph is >= 3x the L2 where
// 8 sets suffice (a call moving >= 3/8 of the L2, ~22 MB on an H200); a smaller call's sets
// stay partly or wholly L2-resident, as a decode step's small metadata mostly is.
//
// Plan columns: "+ plan" is build_decode_metadata with baton's balanced split plan
// (num_kv_splits) at the attention bench's settings, "plan alone" plan_kv_splits over the same
// lengths; both in graphs, PDL on. They time the planner's cost per decode step.
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "baton/attention.h"
#include "baton/metadata.h"
#include "harness.h"
#include "bench_options.h"
#include "report.h"

namespace baton::bench {
namespace {

__global__ void add_cast(int64_t const* seq_lens, int64_t delta, int32_t* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<int32_t>(seq_lens[i] + delta);
}

__global__ void gather(int32_t const* req_to_token, int64_t rt_stride, int64_t const* pool,
                       int64_t const* strided_indices, int32_t* out, int batch, int64_t cols) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= batch * cols) return;
  int64_t b = i / cols, j = i % cols;
  out[i] = req_to_token[pool[b] * rt_stride + strided_indices[j]];
}

__global__ void shift_right(int32_t const* in, int32_t* out, int64_t n, int shift) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = in[i] >> shift;
}

__global__ void copy_into(int32_t const* in, int32_t* out, int64_t n) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = in[i];
}

template <class T>
T* device_alloc(size_t n) {
  T* p = nullptr;
  cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T));
  return p;
}

struct Set {  // one rotation set: inputs and outputs of one call
  int64_t *seq_lens, *pool;
  int32_t *req_to_token, *cache_seqlens, *cu_seqlens, *page_table;
  int32_t *tmp_gather, *tmp_shift;  // baseline intermediates
  int32_t* num_kv_splits;           // the split plan's output (plan columns)
};

struct Shape {
  int batch;
  int64_t context;
  int page;
};

int unsigned_blocks(int64_t n, int threads = 256) { return static_cast<int>((n + threads - 1) / threads); }

}  // namespace

int run_metadata_bench(BenchOptions const& opt) {
  GpuReport gpu = describe_gpu();
  std::printf("baton-bench metadata | %s | %d SMs | L2 %zu MB | %s | rev %s\n", gpu.name.c_str(), gpu.num_sms,
              gpu.l2_bytes >> 20, gpu.clocks.c_str(), gpu.revision.c_str());
  FILE* json = opt.json_path.empty() ? nullptr : std::fopen(opt.json_path.c_str(), "w");

  std::vector<Shape> shapes;
  for (int batch : {1, 8, 64, 256})
    for (int64_t context : {1024, 4096, 16384})
      for (int page : {1, 64}) shapes.push_back({batch, context, page});
  if (opt.quick) shapes = {{1, 1024, 1}, {8, 4096, 1}, {256, 4096, 64}, {256, 16384, 1}};
  if (opt.shape[0] > 0) shapes = {{opt.shape[0], opt.shape[1], opt.shape[2]}};

  Timer timer;
  std::vector<Timing> const floor = timer.in_graph_per_call({empty_kernels(PdlMode::kOn), empty_kernels(PdlMode::kOff)}, 48);
  Timing const &floor_on = floor[0], &floor_off = floor[1];
  std::printf("floor: empty kernel in-graph per call %s us with PDL, %s us without\n", fmt(floor_on.median_us).c_str(),
              fmt(floor_off.median_us).c_str());

  // The plan columns: baton's balanced split plan at the attention bench's settings (32/8
  // heads, head_dim 128, max_splits 32, a 128-key floor, one wave of the producer's CTAs),
  // inside build_decode_metadata ("+ plan") and as plan_kv_splits alone over written lengths.
  int wave = 0;
  if (Status const st = decode_attention_ctas_per_wave(128, &wave); !st.is_ok()) {
    std::fprintf(stderr, "decode_attention_ctas_per_wave: %s; the plan columns time the SGLang heuristic\n",
                 st.to_string().c_str());
  }
  SplitPlanParams const plan_params{32, 8, 32, 0, 128, wave, 1, 128};
  Table table({"batch", "ctx", "page", "fused graph us", "PDL off", "prologue reads", "+ plan", "plan alone", "cold us",
               "eager us", "eager PDL off", "baseline graph us", "speedup", "GB/s", "target us"});
  std::mt19937_64 rng(1);
  for (Shape const& s : shapes) {
    int64_t const max_pages = s.context / s.page;
    int64_t const entries = s.batch * max_pages;
    double const read_bytes = double(entries) * (s.page == 1 ? 4 : std::min(32, 4 * s.page));
    double const bytes_moved = read_bytes + entries * 4.0 + s.batch * 16.0;
    int const num_sets = std::clamp(static_cast<int>(3.0 * gpu.l2_bytes / bytes_moved) + 1, 1, 8);
    int const calls = 48;  // a multiple of every set count up to 8 but 5 and 7: rotation still even enough

    std::vector<Set> sets(num_sets);
    std::vector<int64_t> lens(s.batch, s.context), pool(s.batch), strided(max_pages);
    for (int b = 0; b < s.batch; ++b) pool[b] = b;
    std::shuffle(pool.begin(), pool.end(), rng);
    for (int64_t j = 0; j < max_pages; ++j) strided[j] = j * s.page;
    std::vector<int32_t> rt(size_t(s.batch) * s.context);
    for (auto& v : rt) v = static_cast<int32_t>(rng() % (1u << 30));
    int64_t* strided_d = device_alloc<int64_t>(max_pages);
    cudaMemcpy(strided_d, strided.data(), max_pages * 8, cudaMemcpyHostToDevice);
    for (Set& set : sets) {
      set.seq_lens = device_alloc<int64_t>(s.batch);
      set.pool = device_alloc<int64_t>(s.batch);
      set.req_to_token = device_alloc<int32_t>(rt.size());
      set.cache_seqlens = device_alloc<int32_t>(s.batch);
      set.cu_seqlens = device_alloc<int32_t>(s.batch + 1);
      set.page_table = device_alloc<int32_t>(entries);
      set.tmp_gather = device_alloc<int32_t>(entries);
      set.tmp_shift = device_alloc<int32_t>(entries);
      set.num_kv_splits = device_alloc<int32_t>(s.batch);
      cudaMemcpy(set.seq_lens, lens.data(), s.batch * 8, cudaMemcpyHostToDevice);
      cudaMemcpy(set.pool, pool.data(), s.batch * 8, cudaMemcpyHostToDevice);
      cudaMemcpy(set.req_to_token, rt.data(), rt.size() * 4, cudaMemcpyHostToDevice);
      std::vector<int32_t> const lens32(s.batch, static_cast<int32_t>(s.context));  // plan alone reads these
      cudaMemcpy(set.cache_seqlens, lens32.data(), s.batch * 4, cudaMemcpyHostToDevice);
    }
    size_t scan_bytes = 0;
    cub::DeviceScan::InclusiveSum(nullptr, scan_bytes, sets[0].cache_seqlens, sets[0].cu_seqlens + 1, s.batch);
    void* scan_tmp = device_alloc<char>(scan_bytes);

    auto fused = [&](PdlMode pdl, bool early_reads = false, bool plan = false) {
      return [&, pdl, early_reads, plan](cudaStream_t stream, int i) {
        Set const& set = sets[i % num_sets];
        DecodeMetadataArgs a;
        a.seq_lens = TensorView::contiguous(set.seq_lens, DType::kInt64, {s.batch});
        a.req_pool_indices = TensorView::contiguous(set.pool, DType::kInt64, {s.batch});
        a.req_to_token = TensorView::contiguous(set.req_to_token, DType::kInt32, {s.batch, s.context});
        a.page_size = s.page;
        a.cache_seqlens = TensorView::contiguous(set.cache_seqlens, DType::kInt32, {s.batch});
        a.cu_seqlens_k = TensorView::contiguous(set.cu_seqlens, DType::kInt32, {s.batch + 1});
        a.page_table = TensorView::contiguous(set.page_table, DType::kInt32, {s.batch, max_pages});
        a.inputs_written_before_chain = early_reads;
        if (plan) {
          a.num_kv_splits = TensorView::contiguous(set.num_kv_splits, DType::kInt32, {s.batch});
          a.split_plan = plan_params;
        }
        Status st = build_decode_metadata(a, {stream, pdl});
        if (!st.is_ok()) std::fprintf(stderr, "build_decode_metadata: %s\n", st.to_string().c_str());
        return st.is_ok();
      };
    };
    auto plan_alone = [&](cudaStream_t stream, int i) {
      Set const& set = sets[i % num_sets];
      PlanKvSplitsArgs a;
      a.cache_seqlens = TensorView::contiguous(set.cache_seqlens, DType::kInt32, {s.batch});
      a.num_kv_splits = TensorView::contiguous(set.num_kv_splits, DType::kInt32, {s.batch});
      a.params = plan_params;
      Status st = plan_kv_splits(a, {stream, PdlMode::kOn});
      if (!st.is_ok()) std::fprintf(stderr, "plan_kv_splits: %s\n", st.to_string().c_str());
      return st.is_ok();
    };
    auto baseline = [&](cudaStream_t stream, int i) {
      Set const& set = sets[i % num_sets];
      add_cast<<<unsigned_blocks(s.batch), 256, 0, stream>>>(set.seq_lens, 0, set.cache_seqlens, s.batch);
      size_t bytes = scan_bytes;
      cub::DeviceScan::InclusiveSum(scan_tmp, bytes, set.cache_seqlens, set.cu_seqlens + 1, s.batch, stream);
      cudaMemsetAsync(set.cu_seqlens, 0, 4, stream);
      gather<<<unsigned_blocks(entries), 256, 0, stream>>>(set.req_to_token, s.context, set.pool, strided_d,
                                                           set.tmp_gather, s.batch, max_pages);
      int shift = 0;
      while ((1 << shift) < s.page) ++shift;
      shift_right<<<unsigned_blocks(entries), 256, 0, stream>>>(set.tmp_gather, set.tmp_shift, entries, shift);
      copy_into<<<unsigned_blocks(entries), 256, 0, stream>>>(set.tmp_shift, set.page_table, entries);
      return cudaGetLastError() == cudaSuccess;
    };

    // Replayed in turn (Timer), so that a drift during the case reaches the three alike.
    std::vector<Timing> const g = timer.in_graph_per_call(
        {fused(PdlMode::kOn), fused(PdlMode::kOff), fused(PdlMode::kOn, true), fused(PdlMode::kOn, false, true),
         plan_alone},
        calls);
    Timing const &g_on = g[0], &g_off = g[1], &g_early = g[2], &g_plan = g[3], &g_plan_alone = g[4];
    Timing cold = timer.cold_single_call(fused(PdlMode::kAuto));
    std::vector<Timing> const eager = timer.eager({fused(PdlMode::kOn), fused(PdlMode::kOff)});
    Timing const &e_on = eager[0], &e_off = eager[1];
    Timing base = entries > 0 ? timer.in_graph_per_call(baseline, calls) : Timing{};  // --shape B,0,1: scan only

    std::string target = "-";
    if (s.batch <= 8) target = "<= 1.3";
    if (s.batch == 256 && s.page == 64) target = "<= 2.5";
    if (s.batch == 256 && s.context == 16384 && s.page == 1) target = "<= 10";
    double const speedup = g_on.ok && base.ok ? base.median_us / g_on.median_us : 0;
    table.add({std::to_string(s.batch), std::to_string(s.context), std::to_string(s.page), fmt(g_on.median_us),
               fmt(g_off.median_us), fmt(g_early.median_us), fmt(g_plan.median_us), fmt(g_plan_alone.median_us),
               fmt(cold.median_us), fmt(e_on.median_us), fmt(e_off.median_us),
               fmt(base.median_us), fmt(speedup, 1) + "x", fmt(bytes_moved / (g_on.median_us * 1e3), 0), target});
    if (json) {
      auto line = [&](char const* variant, char const* method, char const* pdl, Timing const& t) {
        if (!t.ok) return;
        JsonLine j;
        j.str("bench", "metadata").num("batch", s.batch).num("context", double(s.context)).num("page", s.page);
        j.str("variant", variant).str("method", method).str("pdl", pdl);
        j.num("median_us", t.median_us).num("p10_us", t.p10_us).num("p90_us", t.p90_us);
        j.num("bytes_moved", bytes_moved).num("rotation_sets", num_sets);
        j.str("gpu", gpu.name).str("clocks", gpu.clocks).str("rev", gpu.revision);
        std::fprintf(json, "%s\n", j.done().c_str());
      };
      line("fused", "graph", "on", g_on);
      line("fused", "graph", "off", g_off);
      line("fused_prologue_reads", "graph", "on", g_early);
      line("fused_balanced_plan", "graph", "on", g_plan);
      line("plan_kv_splits", "graph", "on", g_plan_alone);
      line("fused", "cold", "auto", cold);
      line("fused", "eager", "on", e_on);
      line("fused", "eager", "off", e_off);
      line("baseline", "graph", "off", base);
    }
    for (Set& set : sets) {
      for (void* p : {(void*)set.seq_lens, (void*)set.pool, (void*)set.req_to_token, (void*)set.cache_seqlens,
                      (void*)set.cu_seqlens, (void*)set.page_table, (void*)set.tmp_gather, (void*)set.tmp_shift,
                      (void*)set.num_kv_splits}) {
        cudaFree(p);
      }
    }
    cudaFree(strided_d);
    cudaFree(scan_tmp);
  }
  std::printf("\nin-graph per call (median of 30 replays of %d calls, %s), PDL on unless noted; prologue reads =\n"
              "inputs_written_before_chain (loads before the PDL wait); + plan = with baton's balanced split plan\n"
              "(num_kv_splits; 32/8 heads, head_dim 128, max_splits 32, 128-key floor, one wave); plan alone =\n"
              "plan_kv_splits over the same lengths; cold = single-call replay after a 256 MB overwrite (median\n"
              "of 200); eager = per call over 200 back-to-back C++ launches; baseline = 7-node graph (add,\n"
              "scan x2, memset, gather, shift, copy); speedup = baseline / fused graph.\n\n",
              48, timer.replay_start());
  return finish_report(table, json);
}

}  // namespace baton::bench
