#include "common/gpu.h"

#include <cmath>
#include <cstdio>

namespace baton::test {

std::string gpu_skip_reason() {
  static std::string const reason = [] {
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
      return std::string("no CUDA device (") + (err != cudaSuccess ? cudaGetErrorString(err) : "0 devices") +
             "): GPU tests need an sm_90 GPU";
    }
    int major = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
    if (major < 9) return "device 0 is sm_" + std::to_string(major) + "x: GPU tests need sm_90+";
    return std::string();
  }();
  return reason;
}

::testing::AssertionResult bitwise_equal(void const* a, void const* b, size_t bytes, char const* what) {
  auto const* x = static_cast<unsigned char const*>(a);
  auto const* y = static_cast<unsigned char const*>(b);
  for (size_t i = 0; i < bytes; ++i) {
    if (x[i] != y[i]) {
      return ::testing::AssertionFailure() << what << ": first differing byte at offset " << i << " of " << bytes;
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult all_close(std::vector<float> const& got, std::vector<float> const& want, double rtol,
                                     double atol, char const* what) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << what << ": size " << got.size() << " vs " << want.size();
  }
  size_t bad = 0;
  std::string msg;
  for (size_t i = 0; i < got.size(); ++i) {
    double const g = got[i], w = want[i];
    bool ok;
    if (std::isnan(w) || std::isnan(g)) {
      ok = std::isnan(w) && std::isnan(g);
    } else if (std::isinf(w) || std::isinf(g)) {
      ok = g == w;
    } else {
      ok = std::fabs(g - w) <= atol + rtol * std::fabs(w);
    }
    if (!ok) {
      if (bad < 8) {
        char line[128];
        std::snprintf(line, sizeof line, "\n  [%zu] got %.8g want %.8g", i, g, w);
        msg += line;
      }
      ++bad;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << bad << " of " << got.size() << " outside tolerance" << msg;
}

constexpr uint64_t kPredecessorNs = 20000;  // the op's launch and prologue fit well inside it

std::vector<std::vector<unsigned char>> run_pdl_and_graph_configs(
    std::function<Status(cudaStream_t, PdlMode)> const& op, std::function<void()> const& poison,
    std::function<std::vector<unsigned char>()> const& snapshot, cudaStream_t stream) {
  std::vector<std::vector<unsigned char>> out;
  bool const own = stream == nullptr;
  if (own && cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    ADD_FAILURE() << "cudaStreamCreate failed";
    return out;
  }
  for (bool graph : {false, true}) {
    for (PdlMode pdl : {PdlMode::kOff, PdlMode::kOn}) {
      poison();
      if (graph) {
        cudaGraph_t g = nullptr;
        cudaGraphExec_t e = nullptr;
        EXPECT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
        EXPECT_TRUE(launch_predecessor(stream, kPredecessorNs).is_ok());
        Status st = op(stream, pdl);
        EXPECT_TRUE(st.is_ok()) << st.to_string();
        EXPECT_EQ(cudaStreamEndCapture(stream, &g), cudaSuccess);
        EXPECT_EQ(cudaGraphInstantiate(&e, g, 0), cudaSuccess);
        EXPECT_EQ(cudaGraphLaunch(e, stream), cudaSuccess);
        EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
        if (e) cudaGraphExecDestroy(e);
        if (g) cudaGraphDestroy(g);
      } else {
        EXPECT_TRUE(launch_predecessor(stream, kPredecessorNs).is_ok());
        Status st = op(stream, pdl);
        EXPECT_TRUE(st.is_ok()) << st.to_string();
        EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      }
      out.push_back(snapshot());
    }
  }
  if (own) cudaStreamDestroy(stream);
  return out;
}

}  // namespace baton::test
