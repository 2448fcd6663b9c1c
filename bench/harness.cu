#include "harness.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "baton_build_info.h"  // generated: BATON_BUILD_INFO (cmake/build_info.cmake)
#include "common/pdl.cuh"
#include "runtime/launch.h"

namespace baton::bench {
namespace {

constexpr size_t kFlushBytes = size_t(256) << 20;

__global__ void overwrite(int4* p, size_t n, int v) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    p[i] = make_int4(v, v, v, v);
  }
}

// Reads n int4 and writes nothing (unless the xor of all is a value no fill produces): a flush
// that leaves L2 full of clean lines (BATON_BENCH_FLUSH=read, a diagnostic of the cold method).
__global__ void read_all(int4 const* p, size_t n, int4* sink) {
  int acc = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    int4 const v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x7f3a91c5) sink[0] = make_int4(acc, 0, 0, 0);
}

// Holds the stream for ~`ns` nanoseconds: queued before a replay's start event so that the
// host's submission of the graph overlaps it, and the events time the graph alone.
__global__ void hold(unsigned long long ns) {
  unsigned long long const t0 = clock64();
  unsigned long long const cycles = ns * 2;  // >= 1 GHz clocks; the H200 runs ~2 GHz
  while (static_cast<unsigned long long>(clock64()) - t0 < cycles) {
  }
}
// Host submission of a 20-call graph takes a few us; of a larger one (--calls up to 256) more,
// which this hold may not cover: the excess is timed, so larger graphs can only look slower.
constexpr unsigned long long kHoldNs = 20000;

struct EmptyParams {
  int unused;
};
__global__ void empty_kernel(__grid_constant__ EmptyParams const) {
  wait_on_prior_grid();
  allow_next_grid();
}

Timing summarize(std::vector<double> v) {
  Timing t;
  if (v.empty()) return t;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5))]; };
  t.median_us = at(0.5);
  t.p10_us = at(0.1);
  t.p90_us = at(0.9);
  t.ok = true;
  return t;
}

bool capture(cudaStream_t stream, Enqueue const& call, int calls, cudaGraphExec_t* exec) {
  cudaGraph_t graph = nullptr;
  if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return false;
  bool ok = true;
  for (int i = 0; i < calls && ok; ++i) ok = call(stream, i);
  cudaError_t end = cudaStreamEndCapture(stream, &graph);
  if (end == cudaSuccess && !ok) cudaGraphDestroy(graph);
  if (!ok || end != cudaSuccess) return false;
  ok = cudaGraphInstantiate(exec, graph, 0) == cudaSuccess;
  if (!ok) *exec = nullptr;
  cudaGraphDestroy(graph);
  return ok;
}

}  // namespace

Timer::Timer() {
  cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
  cudaEventCreate(&start_);
  cudaEventCreate(&stop_);
  cudaMalloc(&flush_, kFlushBytes);
  char const* mode = std::getenv("BATON_BENCH_FLUSH");
  flush_read_ = mode != nullptr && std::string(mode) == "read";
  if (char const* block = std::getenv("BATON_BENCH_BLOCK")) block_ = std::atoi(block);
  char const* idle = std::getenv("BATON_BENCH_IDLE_START");
  idle_start_ = idle != nullptr && std::string(idle) == "1";
  cudaMemset(flush_, 0, kFlushBytes);
  cudaDeviceSynchronize();         // the memset ran on the legacy stream, the reads run on stream_
  for (int i = 0; i < 10; ++i) {  // the quiet device's read time, before the benches allocate
    float const ms = read_ms();
    if (ms > 0 && (best_read_ms_ == 0 || ms < best_read_ms_)) best_read_ms_ = ms;
  }
}

Timer::~Timer() {
  cudaFree(flush_);
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
  cudaStreamDestroy(stream_);
}

float Timer::read_ms() {
  cudaEventRecord(start_, stream_);
  read_all<<<1024, 256, 0, stream_>>>(static_cast<int4 const*>(flush_), kFlushBytes / sizeof(int4),
                                      static_cast<int4*>(flush_));
  cudaEventRecord(stop_, stream_);
  float ms = 0;
  if (cudaEventSynchronize(stop_) != cudaSuccess || cudaEventElapsedTime(&ms, start_, stop_) != cudaSuccess) return 0;
  return ms;
}

double Timer::settle() {
  auto const t0 = std::chrono::steady_clock::now();
  auto waited = [&] { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(); };
  int quiet = 0;
  while (quiet < 3 && waited() < 5000.0) {
    float const ms = read_ms();
    if (ms <= 0) break;
    if (best_read_ms_ == 0 || ms < best_read_ms_) best_read_ms_ = ms;
    quiet = ms <= 1.03f * best_read_ms_ ? quiet + 1 : 0;
  }
  return waited();
}

// Replays each variant's graph of `calls` captured calls `replays` times, events around each
// replay only; `flush` (if set) overwrites 256 MB before each replay. With several variants the
// replays go in blocks of block_ consecutive replays of one graph, the variants in turn block by
// block; the first replay of a block is not timed (3 in a variant's first block, as a single
// variant has). Median etc. per call, one Timing per variant.
std::vector<Timing> Timer::replay(std::vector<Enqueue> const& variants, int calls, int replays, bool flush) {
  size_t const v = variants.size();
  std::vector<cudaGraphExec_t> exec(v, nullptr);
  std::vector<bool> ok(v, false);
  for (size_t i = 0; i < v; ++i) {
    ok[i] = capture(stream_, variants[i], calls, &exec[i]);
    if (cudaGetLastError() != cudaSuccess) ok[i] = false;  // and clear it for the next variant
  }
  std::vector<std::vector<double>> us(v);
  size_t const n = kFlushBytes / sizeof(int4);
  int const per_block = v > 1 ? std::max(1, block_) : std::max(1, replays);
  int flushes = 0;
  for (int done = 0; done < replays; done += per_block) {
    int const timed = std::min(per_block, replays - done);
    int const warm = done == 0 ? 3 : 1;
    for (size_t i = 0; i < v; ++i) {
      for (int r = 0; r < warm + timed && ok[i]; ++r) {
        if (flush && flush_read_) {
          read_all<<<1024, 256, 0, stream_>>>(static_cast<int4 const*>(flush_), n, static_cast<int4*>(flush_));
        } else if (flush) {
          overwrite<<<1024, 256, 0, stream_>>>(static_cast<int4*>(flush_), n, flushes++);
        } else if (!idle_start_) {
          hold<<<1, 1, 0, stream_>>>(kHoldNs);  // the flush does this for the cold method
        }
        cudaEventRecord(start_, stream_);
        bool const launched = cudaGraphLaunch(exec[i], stream_) == cudaSuccess;
        cudaEventRecord(stop_, stream_);
        float ms = 0;
        if (!launched || cudaEventSynchronize(stop_) != cudaSuccess ||
            cudaEventElapsedTime(&ms, start_, stop_) != cudaSuccess || cudaGetLastError() != cudaSuccess) {
          ok[i] = false;  // this variant only (a sticky error fails the others' next calls too)
          break;
        }
        if (r >= warm) us[i].push_back(1000.0 * ms / calls);
      }
    }
  }
  std::vector<Timing> out(v);
  for (size_t i = 0; i < v; ++i) {
    if (exec[i] != nullptr) cudaGraphExecDestroy(exec[i]);
    if (ok[i]) out[i] = summarize(us[i]);
  }
  return out;
}

std::vector<Timing> Timer::in_graph_per_call(std::vector<Enqueue> const& calls, int calls_per_graph, int replays) {
  return replay(calls, calls_per_graph, replays, /*flush=*/false);
}

std::vector<Timing> Timer::cold_single_call(std::vector<Enqueue> const& calls, int replays) {
  return replay(calls, 1, replays, /*flush=*/true);
}

Timing Timer::in_graph_per_call(Enqueue const& call, int calls_per_graph, int replays) {
  return in_graph_per_call(std::vector<Enqueue>{call}, calls_per_graph, replays)[0];
}

Timing Timer::cold_single_call(Enqueue const& call, int replays) {
  return cold_single_call(std::vector<Enqueue>{call}, replays)[0];
}

// Each variant warmed up, then `repeats` rounds in which every variant, in turn, times `calls`
// back-to-back launches: a drift during the run reaches every variant alike (the variant timed
// first right after the cold method's flushes read slower).
std::vector<Timing> Timer::eager(std::vector<Enqueue> const& variants, int calls, int repeats) {
  size_t const v = variants.size();
  std::vector<bool> ok(v, true);
  for (size_t k = 0; k < v; ++k) {
    for (int i = 0; i < 20 && ok[k]; ++i) ok[k] = variants[k](stream_, i);  // warm-up
  }
  cudaStreamSynchronize(stream_);
  std::vector<std::vector<double>> us(v);
  for (int r = 0; r < repeats; ++r) {
    for (size_t k = 0; k < v; ++k) {
      if (!ok[k]) continue;
      cudaEventRecord(start_, stream_);
      for (int i = 0; i < calls && ok[k]; ++i) ok[k] = variants[k](stream_, i);
      cudaEventRecord(stop_, stream_);
      float ms = 0;
      if (!ok[k] || cudaEventSynchronize(stop_) != cudaSuccess || cudaEventElapsedTime(&ms, start_, stop_) != cudaSuccess) {
        ok[k] = false;
        continue;
      }
      us[k].push_back(1000.0 * ms / calls);
    }
  }
  bool const clean = cudaGetLastError() == cudaSuccess;
  std::vector<Timing> out(v);
  for (size_t k = 0; k < v; ++k) {
    if (ok[k] && clean) out[k] = summarize(us[k]);
  }
  return out;
}

GpuReport describe_gpu() {
  GpuReport r;
  int dev = 0;
  cudaGetDevice(&dev);
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, dev) == cudaSuccess) {
    r.name = prop.name;
    r.num_sms = prop.multiProcessorCount;
    r.l2_bytes = prop.l2CacheSize;
  }
  r.clocks = "n/a";
  if (FILE* f = popen("nvidia-smi --query-gpu=clocks.sm,clocks.mem,clocks.max.sm --format=csv,noheader 2>/dev/null", "r")) {
    char buf[256] = {};
    if (fgets(buf, sizeof buf, f)) {
      r.clocks = buf;
      while (!r.clocks.empty() && (r.clocks.back() == '\n' || r.clocks.back() == '\r')) r.clocks.pop_back();
      r.clocks = "sm, mem, max sm: " + r.clocks;
    }
    pclose(f);
  }
  r.revision = BATON_BUILD_INFO;
  return r;
}

Enqueue empty_kernels(PdlMode pdl, int kernels, int ctas) {
  return [=](cudaStream_t stream, int) {
    for (int k = 0; k < kernels; ++k) {
      Status const s = detail::launch(empty_kernel, {"empty", true}, {dim3(static_cast<unsigned>(ctas)), dim3(32)},
                                      {stream, pdl}, EmptyParams{});
      if (!s.is_ok()) return false;
    }
    return true;
  };
}

std::string fmt(double value, int digits) {
  if (value <= 0) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

}  // namespace baton::bench
