// What a failed CUDA call leaves behind for the caller (src/runtime/cuda_failure.h): the
// failure comes back as a Status, and the runtime's last-error slot is cleared, so the caller's
// next cudaGetLastError() after an unrelated launch does not report it again. Needs a working
// driver: without one every CUDA call, cudaGetLastError() included, returns the init error.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <string>

#include "baton/device_info.h"
#include "common/gpu.h"

namespace baton::test {
namespace {

using RuntimeErrors = GpuTest;

TEST_F(RuntimeErrors, FailedQueryLeavesNoPendingError) {
  DeviceInfo info;
  Status const s = get_device_info(&info, 4096);  // no such device
  EXPECT_EQ(s.code(), StatusCode::kCudaError) << s.to_string();
  EXPECT_NE(s.message().find("device 4096"), std::string::npos) << s.message();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_TRUE(get_device_info(&info).is_ok());  // the current device still answers
}

}  // namespace
}  // namespace baton::test
