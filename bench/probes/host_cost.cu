// Host-cost probe: what one eager decode_attention call costs the calling CPU thread, beside
// the bare launches it is made of. Eager callers (no CUDA graph) are bound by this when the
// kernels are short (1x1K: two kernels of a few us each); docs/benchmarking.md, "host cost
// per call". Standalone; not part of the library.
//
//   baton-host-cost [ROUNDS]
//
// Prints per call, in us of host time (min and median over repetitions of 200 calls, the
// stream never full): decode_attention at 1x1K (bf16, 32/8 heads, head_dim 128, page 64,
// 8 splits, PDL on: producer + reducer), its validation alone (decode_attention_supported),
// two bare PDL launches of an empty kernel with a 256-byte parameter through the runtime
// (cudaLaunchKernelExC) and through the driver (cuLaunchKernelEx with the kernel's context-free
// handle, the library's path; CUDA >= 12.5, which the build checks). Then, to place the rest:
// the call without its launches (attention::planned_trigger_after_wait: validation, parameters,
// device facts, the producer's form and trigger, nothing launched); two launches of the empty
// kernel through the library's launch helper (detail::launch); and two bare driver launches of
// the empty kernel in the call's own launch shapes (the producer's 2-D grid and ~100 KB of
// dynamic shared memory, then the reducer's grid). Then the GPU time per call of an eager loop
// (events around 200 calls).
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "attention/trigger_plan.h"
#include "baton/attention.h"
#include "runtime/launch.h"

namespace {

struct Params256 {  // the size of the attention kernels' parameter block
  unsigned char bytes[256];
};

__global__ void empty_kernel(Params256 p) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  if (p.bytes[0] == 255) asm volatile("trap;");  // never: the probe passes zeros
}

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Stat {
  double min, median;
};

template <class F>
Stat host_per_call(F const& f, int calls = 200, int reps = 40) {
  std::vector<double> v;
  for (int r = 0; r < reps; ++r) {
    cudaDeviceSynchronize();
    double const t0 = now_us();
    for (int i = 0; i < calls; ++i) f();
    v.push_back((now_us() - t0) / calls);
  }
  cudaDeviceSynchronize();
  std::sort(v.begin(), v.end());
  return {v.front(), v[v.size() / 2]};
}

template <class F>
double gpu_per_call(F const& f, cudaStream_t s, int calls = 200, int reps = 20) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<double> v;
  for (int r = 0; r < reps; ++r) {
    cudaEventRecord(a, s);
    for (int i = 0; i < calls; ++i) f();
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    v.push_back(1000.0 * ms / calls);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace baton;
  int const rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  constexpr int kBatch = 1, kHq = 32, kHkv = 8, kD = 128, kPage = 64, kLen = 1024, kPages = kLen / kPage;
  constexpr int kMaxSplits = 32, kSplits = 8;
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  size_t const kv_bytes = size_t(kPages) * kPage * kHkv * kD * 2;
  void *q, *k, *v, *out, *lse, *ws;
  int32_t *lens, *table, *splits;
  cudaMalloc(&q, kBatch * kHq * kD * 2);
  cudaMalloc(&k, kv_bytes);
  cudaMalloc(&v, kv_bytes);
  cudaMemset(q, 0x3c, kBatch * kHq * kD * 2);  // bf16 ~0.0116: finite scores
  cudaMemset(k, 0x3c, kv_bytes);
  cudaMemset(v, 0x3c, kv_bytes);
  cudaMalloc(&out, kBatch * kHq * kD * 2);
  cudaMalloc(&lse, kBatch * kHq * 4);
  cudaMalloc(&lens, 4);
  cudaMalloc(&table, kPages * 4);
  cudaMalloc(&splits, 4);
  std::vector<int32_t> pages(kPages);
  for (int i = 0; i < kPages; ++i) pages[i] = i;
  int32_t const len = kLen, n = kSplits;
  cudaMemcpy(table, pages.data(), kPages * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(lens, &len, 4, cudaMemcpyHostToDevice);
  cudaMemcpy(splits, &n, 4, cudaMemcpyHostToDevice);
  size_t const ws_bytes = decode_attention_workspace_bytes(kBatch, 1, kHq, kD, kMaxSplits);
  cudaMalloc(&ws, ws_bytes);

  DecodeAttentionArgs a;
  a.q = TensorView::contiguous(q, DType::kBFloat16, {kBatch, kHq, kD});
  a.k_cache = TensorView::contiguous(k, DType::kBFloat16, {kPages, kPage, kHkv, kD});
  a.v_cache = TensorView::contiguous(v, DType::kBFloat16, {kPages, kPage, kHkv, kD});
  a.cache_seqlens = TensorView::contiguous(lens, DType::kInt32, {kBatch});
  a.page_table = TensorView::contiguous(table, DType::kInt32, {kBatch, kPages});
  a.num_kv_splits = TensorView::contiguous(splits, DType::kInt32, {kBatch});
  a.max_splits = kMaxSplits;
  a.out = TensorView::contiguous(out, DType::kBFloat16, {kBatch, kHq, kD});
  a.lse = TensorView::contiguous(lse, DType::kFloat32, {kBatch, kHq});
  Workspace const w{ws, ws_bytes};
  bool ok = true;
  auto call = [&] { ok = decode_attention(a, w, {s, PdlMode::kOn}).is_ok() && ok; };
  auto validate = [&] { ok = decode_attention_supported(a).is_ok() && ok; };

  Params256 p{};
  auto runtime_launch = [&](unsigned grid) {
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(128);
    cfg.stream = s;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    void* args[] = {&p};
    cudaLaunchKernelExC(&cfg, reinterpret_cast<void const*>(empty_kernel), args);
  };
  using DriverLaunch = CUresult (*)(CUlaunchConfig const*, CUfunction, void**, void**);
  void* entry = nullptr;
  cudaDriverEntryPointQueryResult found{};
  cudaGetDriverEntryPointByVersion("cuLaunchKernelEx", &entry, 12000, cudaEnableDefault, &found);
  cudaKernel_t handle = nullptr;  // context-free, as the library launches
  cudaGetKernel(&handle, reinterpret_cast<void const*>(empty_kernel));
  if (entry == nullptr || handle == nullptr) {
    std::fprintf(stderr, "no driver entry point or kernel handle\n");
    return 1;
  }
  // A bare driver launch of the empty kernel (grid, dynamic shared memory), as the library's.
  auto driver_launch = [&](dim3 grid, unsigned smem) {
    CUlaunchAttribute attr{};
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig cfg{};
    cfg.gridDimX = grid.x;
    cfg.gridDimY = grid.y;
    cfg.gridDimZ = 1;
    cfg.blockDimX = 128;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.sharedMemBytes = smem;
    cfg.hStream = reinterpret_cast<CUstream>(s);
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    void* args[] = {&p};
    // A refused launch returns here and would leave a column timing nothing: fold it into ok.
    ok = reinterpret_cast<DriverLaunch>(entry)(&cfg, reinterpret_cast<CUfunction>(handle), args, nullptr) ==
             CUDA_SUCCESS &&
         ok;
  };
  auto runtime_pair = [&] { runtime_launch(64), runtime_launch(32); };
  auto driver_pair = [&] { driver_launch(dim3(64), 0), driver_launch(dim3(32), 0); };
  bool planned = false;
  auto plan_only = [&] { ok = attention::planned_trigger_after_wait(a, &planned).is_ok() && ok; };
  detail::KernelTraits const traits{"host_cost.empty", /*waits_on_prior_grid=*/true};
  auto helper_pair = [&] {
    for (unsigned grid : {64u, 32u}) {
      ok = detail::launch(empty_kernel, traits, {dim3(grid), dim3(128)}, {s, PdlMode::kOn}, p).is_ok() && ok;
    }
  };
  // The call's launch shapes at 1x1K: the producer's (kv heads, CTAs per kv head) grid with its
  // dynamic shared memory, then the small reducer's CTA per row of head_dim threads.
  constexpr unsigned kProducerSmem = 100 * 1024;
  if (cudaFuncSetAttribute(reinterpret_cast<void const*>(empty_kernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                           kProducerSmem) != cudaSuccess) {
    std::fprintf(stderr, "cannot allow %u bytes of dynamic shared memory\n", kProducerSmem);
    return 1;
  }
  auto shaped_pair = [&] { driver_launch(dim3(kHkv, kMaxSplits), kProducerSmem), driver_launch(dim3(kHq), 0); };
  for (int i = 0; i < 100; ++i)
    call(), runtime_pair(), driver_pair(), plan_only(), helper_pair(), shaped_pair();  // warm-up
  cudaDeviceSynchronize();

  std::printf("host us per call (min / median of 40 x 200 calls), 1x1K bf16 32/8 heads d128 page 64, %d splits\n",
              kSplits);
  std::printf(
      "| round | decode_attention | validation only | all but the launches | 2 runtime launches | 2 driver launches | "
      "2 helper launches | 2 driver launches, the call's shapes |\n|---|---|---|---|---|---|---|---|\n");
  for (int r = 0; r < rounds; ++r) {
    Stat const c = host_per_call(call), va = host_per_call(validate), pl = host_per_call(plan_only),
               rt = host_per_call(runtime_pair), dr = host_per_call(driver_pair), he = host_per_call(helper_pair),
               sh = host_per_call(shaped_pair);
    std::printf(
        "| %d | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f |\n", r,
        c.min, c.median, va.min, va.median, pl.min, pl.median, rt.min, rt.median, dr.min, dr.median, he.min, he.median,
        sh.min, sh.median);
  }
  std::printf(
      "GPU us per call of an eager loop: decode_attention %.2f, 2 runtime launches %.2f, 2 driver launches %.2f\n",
      gpu_per_call(call, s), gpu_per_call(runtime_pair, s), gpu_per_call(driver_pair, s));
  cudaError_t const err = cudaDeviceSynchronize();
  std::printf("%s\n", ok && err == cudaSuccess ? "ok" : "FAILED");
  return ok && err == cudaSuccess ? 0 : 1;
}
