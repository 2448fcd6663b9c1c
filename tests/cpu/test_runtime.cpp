// Status, TensorView and the launch decision: what needs no GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "baton/baton.h"
#include "runtime/launch.h"
#include "runtime/thread_memo.h"

namespace baton {
namespace {

TEST(Status, CarriesCodeAndMessage) {
  Status ok = Status::ok();
  EXPECT_TRUE(ok.is_ok());
  EXPECT_EQ(ok.to_string(), "ok");
  Status bad = Status::invalid_argument("page_size 48 is not a power of two");
  EXPECT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.to_string(), "invalid_argument: page_size 48 is not a power of two");
  EXPECT_STREQ(status_code_name(StatusCode::kUnsupported), "unsupported");
}

Status fails_then_never_reached(bool* reached) {
  BATON_RETURN_IF_ERROR(Status::unsupported("head_dim 96"));
  *reached = true;
  return Status::ok();
}

TEST(Status, ReturnIfErrorPropagates) {
  bool reached = false;
  Status s = fails_then_never_reached(&reached);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_FALSE(reached);
}

TEST(TensorView, ContiguousStridesAndDescribe) {
  int dummy;
  TensorView t = TensorView::contiguous(&dummy, DType::kInt32, {4, 3, 2});
  EXPECT_EQ(t.rank, 3);
  EXPECT_EQ(t.stride[0], 6);
  EXPECT_EQ(t.stride[1], 2);
  EXPECT_EQ(t.stride[2], 1);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.describe(), "[4, 3, 2] int32 strides [6, 2, 1]");
  TensorView s = TensorView::strided(&dummy, DType::kBFloat16, {4, 8}, {16, 1});
  EXPECT_FALSE(s.is_contiguous());
  EXPECT_EQ(dtype_bytes(DType::kBFloat16), 2u);
  EXPECT_FALSE(TensorView{}.defined());
}

// More sizes than the view holds: the rank is kept (validation rejects the view by name) and
// nothing is written past the arrays (a 5-dim shape once overran them). The view is built in
// place, in front of a canary (the return value is constructed there, as nvcc's host compiler
// does for a named return value), so an overrun would land on the canary.
TEST(TensorView, RankPastTheArraysIsKeptNotStored) {
  int dummy;
  constexpr size_t kCanary = 64;
  alignas(TensorView) unsigned char buf[sizeof(TensorView) + kCanary];
  std::memset(buf + sizeof(TensorView), 0x5a, kCanary);
  auto canary_intact = [&] {
    for (size_t i = 0; i < kCanary; ++i) {
      if (buf[sizeof(TensorView) + i] != 0x5a) return false;
    }
    return true;
  };
  TensorView* t = new (buf) TensorView(TensorView::contiguous(&dummy, DType::kInt32, {2, 3, 4, 5, 6}));
  EXPECT_TRUE(canary_intact());
  EXPECT_EQ(t->rank, 5);
  EXPECT_EQ(t->shape[3], 5);
  EXPECT_EQ(t->stride[3], 1);  // strides of the held dims only
  EXPECT_EQ(t->describe(), "rank 5 (outside [0, 4]) int32");
  t = new (buf) TensorView(TensorView::strided(&dummy, DType::kInt32, {2, 3, 4, 5, 6}, {720, 240, 60, 12, 2}));
  EXPECT_TRUE(canary_intact());
  EXPECT_EQ(t->stride[3], 12);
}

// Sizes whose product overflows int64: the strides saturate (no signed overflow), so the view
// fails validation as one that reaches past the address space, not as an overlap.
TEST(TensorView, OverflowingExtentSaturates) {
  int dummy;
  int64_t const huge = int64_t(1) << 40;
  TensorView const t = TensorView::contiguous(&dummy, DType::kInt32, {4, huge, huge});
  EXPECT_EQ(t.stride[2], 1);
  EXPECT_EQ(t.stride[1], huge);
  EXPECT_EQ(t.stride[0], INT64_MAX);
  EXPECT_EQ(t.numel(), INT64_MAX);
}

TEST(ThreadMemo, FindsWhatWasPutAndOverwritesAKnownKey) {
  detail::ThreadMemo<int, int> memo;
  EXPECT_EQ(memo.find(1), nullptr);
  for (int k = 0; k < 100; ++k) memo.put(k, 10 * k);  // nothing is evicted
  for (int k = 0; k < 100; ++k) {
    ASSERT_NE(memo.find(k), nullptr) << k;
    EXPECT_EQ(*memo.find(k), 10 * k);
  }
  memo.put(7, 71);  // overwritten in place, not appended
  EXPECT_EQ(*memo.find(7), 71);
  EXPECT_EQ(memo.find(100), nullptr);
}

__attribute__((noinline)) void not_a_kernel() {}

TEST(LaunchHelper, PdlOffOrUndeclaredWaitNeverRequestsPdl) {
  bool use = true;
  detail::KernelTraits waits{"k", true}, no_wait{"k", false};
  // Neither case touches CUDA: the decision ends before any device query.
  ASSERT_TRUE(detail::pdl_decision(reinterpret_cast<void const*>(&not_a_kernel), waits, {nullptr, PdlMode::kOff}, &use).is_ok());
  EXPECT_FALSE(use);
  use = true;
  ASSERT_TRUE(detail::pdl_decision(reinterpret_cast<void const*>(&not_a_kernel), no_wait, {nullptr, PdlMode::kOn}, &use).is_ok());
  EXPECT_FALSE(use);
}

// A mode cast from an int is rejected by name before any CUDA call, not read as "on".
TEST(LaunchHelper, PdlModeOutsideTheEnumIsRejected) {
  bool use = true;
  detail::KernelTraits waits{"k", true};
  Status const s = detail::pdl_decision(reinterpret_cast<void const*>(&not_a_kernel), waits,
                                        {nullptr, static_cast<PdlMode>(5)}, &use);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("LaunchOptions::pdl 5 is not kAuto, kOn or kOff"), std::string::npos) << s.message();
  EXPECT_FALSE(use);
}

// ctest runs this binary a second time with BATON_PDL=0 (test cpu_pdl_kill_switch).
TEST(LaunchHelper, KillSwitchFollowsEnvironment) {
  char const* v = std::getenv("BATON_PDL");
  bool const expect_disabled = v != nullptr && std::strcmp(v, "0") == 0;
  EXPECT_EQ(pdl_disabled_by_env(), expect_disabled);
  if (expect_disabled) {
    bool use = true;
    detail::KernelTraits waits{"k", true};
    ASSERT_TRUE(detail::pdl_decision(reinterpret_cast<void const*>(&not_a_kernel), waits, {nullptr, PdlMode::kOn}, &use).is_ok());
    EXPECT_FALSE(use) << "BATON_PDL=0 must win over PdlMode::kOn";
  }
}

}  // namespace
}  // namespace baton
