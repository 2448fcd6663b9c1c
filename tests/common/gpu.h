// GPU test helpers: skip logic, RAII device buffers, poisoning, and comparisons that print
// the first mismatches. Test-only code; it may print and abort.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "baton/launch.h"
#include "baton/status.h"

#define CUDA_CHECK(expr)                                                              \
  do {                                                                                \
    cudaError_t err_ = (expr);                                                        \
    ASSERT_EQ(err_, cudaSuccess) << #expr << ": " << cudaGetErrorString(err_);        \
  } while (0)

#define BATON_ASSERT_OK(expr)                                                         \
  do {                                                                                \
    ::baton::Status st_ = (expr);                                                     \
    ASSERT_TRUE(st_.is_ok()) << #expr << ": " << st_.to_string();                     \
  } while (0)

namespace baton::test {

// Empty when an sm_90+ device is present, else the reason the GPU tests skip.
std::string gpu_skip_reason();

// GPU tests derive from this: SetUp skips with the reason when there is no sm_90 device.
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string const reason = gpu_skip_reason();
    if (!reason.empty()) GTEST_SKIP() << reason;
  }
};

// Owning device allocation of n elements of T.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t n) { resize(n); }
  DeviceBuffer(DeviceBuffer const&) = delete;
  DeviceBuffer& operator=(DeviceBuffer const&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), n_(o.n_) { o.ptr_ = nullptr; o.n_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(n_, o.n_);
    return *this;
  }
  ~DeviceBuffer() { if (ptr_) cudaFree(ptr_); }

  void resize(size_t n) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = nullptr;
    n_ = n;
    if (n > 0 && cudaMalloc(reinterpret_cast<void**>(&ptr_), n * sizeof(T)) != cudaSuccess) {
      ADD_FAILURE() << "cudaMalloc of " << n * sizeof(T) << " bytes failed";
      ptr_ = nullptr;
      n_ = 0;
    }
  }
  static DeviceBuffer from(std::vector<T> const& host) {
    DeviceBuffer b(host.size());
    b.upload(host);
    return b;
  }
  void upload(std::vector<T> const& host) {
    if (host.size() != n_) resize(host.size());
    if (n_) EXPECT_EQ(cudaMemcpy(ptr_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  std::vector<T> download() const {
    std::vector<T> host(n_);
    if (n_) EXPECT_EQ(cudaMemcpy(host.data(), ptr_, n_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }
  // Every byte set to `byte` (0xFF: int -1, float NaN); complete when this returns, so it
  // is ordered before work on any stream.
  void poison(uint8_t byte = 0xFF) {
    if (n_) EXPECT_EQ(cudaMemset(ptr_, byte, n_ * sizeof(T)), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  T* get() const { return ptr_; }
  size_t size() const { return n_; }
  size_t bytes() const { return n_ * sizeof(T); }

 private:
  T* ptr_ = nullptr;
  size_t n_ = 0;
};

// Exact element-wise compare; prints up to 8 mismatches with their index.
template <class T>
::testing::AssertionResult equal_exact(std::vector<T> const& got, std::vector<T> const& want,
                                       char const* what) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << what << ": size " << got.size() << " vs " << want.size();
  }
  size_t bad = 0;
  std::string msg;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      if (bad < 8) msg += "\n  [" + std::to_string(i) + "] got " + std::to_string(got[i]) + " want " + std::to_string(want[i]);
      ++bad;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << bad << " of " << got.size() << " differ" << msg;
}

// Bitwise compare of two buffers of any type.
::testing::AssertionResult bitwise_equal(void const* a, void const* b, size_t bytes, char const* what);

// |got - want| <= atol + rtol * |want|, with NaN and +-inf required at the same positions.
::testing::AssertionResult all_close(std::vector<float> const& got, std::vector<float> const& want,
                                     double rtol, double atol, char const* what);

}  // namespace baton::test

namespace baton::test {

// A kernel that lets its dependents launch at once, stalls ~stall_ns and writes nothing
// (tests/common/race_harness.cu): put ahead of an op, it gives PDL something to overlap.
Status launch_predecessor(cudaStream_t stream, uint64_t stall_ns);

// Runs `op` four times -- PDL off/on x eager/captured graph -- on a fresh non-blocking
// stream (or on `stream`, a non-blocking one the caller owns), each behind a 20 us
// launch_predecessor (in the graph too), so that with PDL on the op's first kernel really
// starts while another kernel runs; calls `poison` before and `snapshot` after each run;
// returns the snapshots in the order (off, eager), (on, eager), (off, graph), (on, graph).
// pdl-contract.md rule 7: every public op must give the same bits in all four.
std::vector<std::vector<unsigned char>> run_pdl_and_graph_configs(
    std::function<Status(cudaStream_t, PdlMode)> const& op, std::function<void()> const& poison,
    std::function<std::vector<unsigned char>()> const& snapshot, cudaStream_t stream = nullptr);

}  // namespace baton::test
