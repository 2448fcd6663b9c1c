#include "common/race_harness.h"

#include <cstdlib>
#include <string>

#include "common/gpu.h"
#include "runtime/launch.h"

namespace baton::test {
namespace {

struct CopyJob {
  void* dst;
  void const* src;
  size_t bytes;
};
constexpr int kMaxJobs = 64;
struct ProducerParams {
  CopyJob jobs[kMaxJobs];
  int num_jobs;
  uint64_t stall_ns;
};

__global__ void stall_then_copy(ProducerParams const p) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");  // let the consumer start now
#endif
  if (threadIdx.x == 0) {
    uint64_t start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
      __nanosleep(1000);
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < p.stall_ns);
  }
  __syncthreads();
  size_t const tid = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  size_t const nthreads = size_t(gridDim.x) * blockDim.x;
  for (int j = 0; j < p.num_jobs; ++j) {
    auto* d = static_cast<unsigned char*>(p.jobs[j].dst);
    auto const* s = static_cast<unsigned char const*>(p.jobs[j].src);
    for (size_t i = tid; i < p.jobs[j].bytes; i += nthreads) d[i] = s[i];
  }
}

struct OverlapParams {
  int* flag;  // set by the dependent before its wait
  int* seen;  // the primary's verdict: 1 if the flag came while it still ran
  uint64_t timeout_ns;
};

__global__ void overlap_primary(OverlapParams const p) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  uint64_t start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  int seen = 0;
  do {
    if (*static_cast<int volatile*>(p.flag) != 0) {
      seen = 1;
      break;
    }
    __nanosleep(500);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < p.timeout_ns);
  *p.seen = seen;
}

__global__ void overlap_dependent(OverlapParams const p) {
  *static_cast<int volatile*>(p.flag) = 1;
  __threadfence();
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

OverlapProbe probe_overlap() {
  OverlapProbe r;
  DeviceBuffer<int> flags(2);
  if (flags.get() == nullptr) return {false, "cudaMalloc of the probe's flags failed"};
  OverlapParams const p{flags.get(), flags.get() + 1, 20'000'000};
  cudaStream_t stream;
  cudaError_t err = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (err != cudaSuccess) return {false, std::string("cudaStreamCreate: ") + cudaGetErrorString(err)};
  // The primary by a plain launch, as the harness's stalled kernel (no PDL attribute needed,
  // and no BATON_DEBUG_SYNC synchronisation after it); the dependent through the library's
  // helper with PDL on, as the ops under test. The first chain loads both kernels' module and
  // may serialise; later ones overlap if PDL does.
  for (int attempt = 0; attempt < 3 && !r.overlap && r.error.empty(); ++attempt) {
    int seen = 0;
    err = cudaMemsetAsync(flags.get(), 0, 2 * sizeof(int), stream);
    if (err == cudaSuccess) {
      overlap_primary<<<1, 1, 0, stream>>>(p);
      err = cudaGetLastError();
    }
    if (err != cudaSuccess) {
      r.error = std::string("primary: ") + cudaGetErrorString(err);
      break;
    }
    Status const st = detail::launch(overlap_dependent, {"overlap_dependent", true}, {dim3(1), dim3(1)},
                                     {stream, PdlMode::kOn}, p);
    if (!st.is_ok()) {
      r.error = "dependent: " + st.to_string();
      break;
    }
    err = cudaMemcpyAsync(&seen, p.seen, sizeof(int), cudaMemcpyDeviceToHost, stream);
    if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
    if (err != cudaSuccess) r.error = std::string("stream: ") + cudaGetErrorString(err);
    r.overlap = err == cudaSuccess && seen == 1;
  }
  cudaStreamSynchronize(stream);
  cudaStreamDestroy(stream);
  cudaGetLastError();  // leave no error behind for the harness's own checks
  return r;
}

}  // namespace

Status launch_predecessor(cudaStream_t stream, uint64_t stall_ns) {
  ProducerParams p{};
  p.num_jobs = 0;  // nothing copied: the kernel only stalls
  p.stall_ns = stall_ns;
  stall_then_copy<<<1, 32, 0, stream>>>(p);
  cudaError_t const err = cudaGetLastError();
  return err == cudaSuccess ? Status::ok() : Status::cuda_error(std::string("predecessor: ") + cudaGetErrorString(err));
}

char const* serialising_environment() {
  if (std::getenv("NV_SANITIZER_INJECTION_TRANSPORT_TYPE") != nullptr ||
      std::getenv("NV_SANITIZER_INJECTION_PORT_BASE") != nullptr) {
    return "compute-sanitizer";
  }
  char const* const blocking = std::getenv("CUDA_LAUNCH_BLOCKING");
  if (blocking != nullptr && std::string(blocking) == "1") return "CUDA_LAUNCH_BLOCKING=1";
  return nullptr;
}

OverlapProbe const& pdl_overlap_probe() {
  static OverlapProbe const probe = probe_overlap();
  return probe;
}

::testing::AssertionResult RaceHarness::run(Outcome* outcome) const {
  Outcome ignored;
  Outcome& how = outcome != nullptr ? *outcome : ignored;
  how = Outcome::kError;
  if (inputs.size() > static_cast<size_t>(kMaxJobs)) {
    return ::testing::AssertionFailure() << "race harness: at most " << kMaxJobs << " staged inputs";
  }
  ProducerParams params{};
  for (size_t j = 0; j < inputs.size(); ++j) params.jobs[j] = {inputs[j].dst, inputs[j].src, inputs[j].bytes};
  params.num_jobs = static_cast<int>(inputs.size());
  params.stall_ns = uint64_t(stall_us) * 1000;

  cudaStream_t stream;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    return ::testing::AssertionFailure() << "race harness: cudaStreamCreate failed";
  }
  auto enqueue = [&]() -> std::string {
    for (auto const& in : inputs) {
      if (cudaMemsetAsync(in.dst, in.poison, in.bytes, stream) != cudaSuccess) return "memset of a staged input";
    }
    for (auto const& out : outputs) {
      if (cudaMemsetAsync(out.ptr, out.poison, out.bytes, stream) != cudaSuccess) return "memset of an output";
    }
    stall_then_copy<<<16, 256, 0, stream>>>(params);
    if (cudaGetLastError() != cudaSuccess) return "producer launch";
    Status st = consumer(stream);
    if (!st.is_ok()) return "consumer: " + st.to_string();
    return "";
  };
  auto finish = [&](char const* mode, int rep) -> ::testing::AssertionResult {
    cudaError_t err = cudaStreamSynchronize(stream);
    if (err != cudaSuccess) {
      return ::testing::AssertionFailure() << mode << " run " << rep << ": " << cudaGetErrorString(err);
    }
    ::testing::AssertionResult r = check();
    if (!r) {
      how = Outcome::kCheckFailed;
      return ::testing::AssertionFailure() << mode << " run " << rep << ": " << r.message();
    }
    return ::testing::AssertionSuccess();
  };

  ::testing::AssertionResult result = ::testing::AssertionSuccess();
  // Warm-up: loads both modules so the measured chains are real PDL overlaps.
  std::string err = enqueue();
  if (err.empty() && cudaStreamSynchronize(stream) != cudaSuccess) err = "warm-up failed";
  for (int rep = 0; err.empty() && result && rep < runs; ++rep) {
    err = enqueue();
    if (err.empty()) result = finish("eager", rep);
  }
  for (int rep = 0; err.empty() && result && rep < runs; ++rep) {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
      err = "begin capture";
      break;
    }
    err = enqueue();
    cudaError_t cap = cudaStreamEndCapture(stream, &graph);
    if (err.empty() && cap != cudaSuccess) err = std::string("end capture: ") + cudaGetErrorString(cap);
    if (err.empty() && cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) err = "graph instantiate";
    if (err.empty() && cudaGraphLaunch(exec, stream) != cudaSuccess) err = "graph launch";
    if (err.empty()) result = finish("graph", rep);
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
  cudaStreamSynchronize(stream);
  cudaStreamDestroy(stream);
  if (!err.empty()) {
    how = Outcome::kError;
    return ::testing::AssertionFailure() << "race harness setup: " << err;
  }
  if (result) how = Outcome::kPassed;
  return result;
}

}  // namespace baton::test
