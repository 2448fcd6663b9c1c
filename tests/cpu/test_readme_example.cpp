// README.md's decode_attention example (plan_kv_splits, then decode_attention), kept
// compiling: the bodies of the two functions below are the README's two code blocks, line for
// line, which AttentionReadme.ExampleIsThisFilesCode checks. Needs both areas.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "baton/baton.h"

namespace {

// At global scope, so that the README's code compiles here only with every name qualified,
// as in a user's code.
struct Planned {
  int ctas_per_wave = 0, max_splits = 0;
  size_t ws_bytes = 0;
};

baton::Status readme_setup(int batch, int num_q_heads, int num_kv_heads, Planned* out) {
  // Once per device, before capture: the plan's bounds (max_splits: see below) and the scratch,
  // sized for the largest batch captured (cudaMalloc it: the call never allocates).
  int ctas_per_wave = 0;
  baton::Status s = baton::decode_attention_ctas_per_wave(/*head_dim=*/128, &ctas_per_wave);  // 264 on an H200
  if (!s.is_ok()) return s;  // s.message() says what failed
  int const max_splits = std::min(32, (ctas_per_wave + num_kv_heads - 1) / num_kv_heads);  // group x q_len <= 16
  size_t const ws_bytes = baton::decode_attention_workspace_bytes(batch, /*q_len=*/1, num_q_heads, 128, max_splits);
  *out = {ctas_per_wave, max_splits, ws_bytes};
  return baton::Status::ok();
}

baton::Status readme_step(int batch, int num_q_heads, int num_kv_heads, int64_t num_pages, int64_t max_pages,
                   int ctas_per_wave, int max_splits, void* q, void* k_pool, void* v_pool, int32_t* seqlens,
                   int32_t* page_table, int32_t* splits, void* out, void* ws, size_t ws_bytes, cudaStream_t stream) {
  // Every step, inside the decode graph: split counts on the device once per step (every
  // layer's attention reuses them), then each layer's attention.
  baton::PlanKvSplitsArgs plan;
  plan.cache_seqlens = baton::TensorView::contiguous(seqlens, baton::DType::kInt32, {batch});  // incl. this token
  plan.num_kv_splits = baton::TensorView::contiguous(splits, baton::DType::kInt32, {batch});
  plan.params.num_q_heads = num_q_heads;
  plan.params.num_kv_heads = num_kv_heads;
  plan.params.max_splits = max_splits;
  plan.params.min_keys_per_split = 128;
  plan.params.ctas_per_wave = ctas_per_wave;  // baton's balanced plan: one wave of equal work
  baton::Status s = baton::plan_kv_splits(plan, {stream});
  if (!s.is_ok()) return s;  // e.g. "plan_kv_splits: cache_seqlens ..." before any launch

  baton::DecodeAttentionArgs a;
  a.q = baton::TensorView::contiguous(q, baton::DType::kBFloat16, {batch, num_q_heads, 128});
  a.k_cache = baton::TensorView::contiguous(k_pool, baton::DType::kBFloat16, {num_pages, 64, num_kv_heads, 128});
  a.v_cache = baton::TensorView::contiguous(v_pool, baton::DType::kBFloat16, {num_pages, 64, num_kv_heads, 128});
  a.layout = baton::KvLayout::kNHD;  // [pages, page_size 64, kv heads, head_dim]
  a.cache_seqlens = plan.cache_seqlens;
  a.page_table = baton::TensorView::contiguous(page_table, baton::DType::kInt32, {batch, max_pages});
  a.num_kv_splits = plan.num_kv_splits;
  a.max_splits = max_splits;
  // inputs_written_before_chain stays false: plan_kv_splits writes num_kv_splits in this chain.
  a.out = baton::TensorView::contiguous(out, baton::DType::kBFloat16, {batch, num_q_heads, 128});
  return baton::decode_attention(a, {ws, ws_bytes}, {stream});
}

}  // namespace

namespace baton {
namespace {

// The step with no buffers: reported before any launch, naming the argument. The setup: on a
// GPU its wave, a max_splits in [1, 32] and the scratch for it; without one, a CUDA Status.
TEST(AttentionReadme, ExampleReportsNullBuffersBeforeAnyLaunch) {
  size_t const ws_bytes = decode_attention_workspace_bytes(8, 1, 32, 128, 32);
  EXPECT_GT(ws_bytes, 0u);
  Status const s = readme_step(8, 32, 8, 1024, 16, 264, 32, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                               nullptr, nullptr, ws_bytes, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  EXPECT_NE(s.message().find("cache_seqlens"), std::string::npos) << s.message();
  Planned planned;
  Status const st = readme_setup(8, 32, 8, &planned);
  if (st.is_ok()) {
    EXPECT_GT(planned.ctas_per_wave, 0);
    EXPECT_GE(planned.max_splits, 1);
    EXPECT_LE(planned.max_splits, 32);
    EXPECT_EQ(planned.ws_bytes, decode_attention_workspace_bytes(8, 1, 32, 128, planned.max_splits));
  } else {
    EXPECT_EQ(st.code(), StatusCode::kCudaError) << st.to_string();
  }
}

std::string read_file(std::string const& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The body of `signature`'s function in this file, one indentation level removed.
std::string function_body(std::string const& src, std::string const& signature) {
  size_t const at = src.find(signature);
  if (at == std::string::npos) return {};
  size_t const open = src.find("{\n", at) + 2, close = src.find("\n}\n", open);
  std::istringstream in(src.substr(open, close + 1 - open));
  std::string line, out;
  while (std::getline(in, line)) out += (line.rfind("  ", 0) == 0 ? line.substr(2) : line) + "\n";
  return out;
}

// The README's code blocks after `marker`, in order.
std::vector<std::string> cpp_blocks_after(std::string const& readme, std::string const& marker, int count) {
  std::vector<std::string> blocks;
  size_t pos = readme.find(marker);
  while (pos != std::string::npos && int(blocks.size()) < count) {
    size_t const open = readme.find("```cpp\n", pos);
    if (open == std::string::npos) break;
    size_t const close = readme.find("```\n", open + 7);
    blocks.push_back(readme.substr(open + 7, close - open - 7));
    pos = close + 4;
  }
  return blocks;
}

// The README sentence that introduces the example's two code blocks.
constexpr char kReadmeMarker[] = "An attention step, with the split counts planned on the device";

// The README shows this file's code: its setup block is readme_setup's body up to the
// hand-back of the results, its step block readme_step's body.
TEST(AttentionReadme, ExampleIsThisFilesCode) {
  std::string const src_path = BATON_SOURCE_DIR "/tests/cpu/test_readme_example.cpp";
  std::string const readme_path = BATON_SOURCE_DIR "/README.md";
  std::string const src = read_file(src_path), readme = read_file(readme_path);
  ASSERT_FALSE(src.empty()) << src_path;
  ASSERT_FALSE(readme.empty()) << readme_path;
  std::string setup = function_body(src, "baton::Status readme_setup(");
  setup = setup.substr(0, setup.find("*out = {"));
  std::string const step = function_body(src, "baton::Status readme_step(");
  std::vector<std::string> const blocks = cpp_blocks_after(readme, kReadmeMarker, 2);
  ASSERT_EQ(blocks.size(), 2u) << "README.md: no two code blocks after \"" << kReadmeMarker
                               << "\" (was that sentence reworded? keep it in step with this test)";
  EXPECT_EQ(blocks[0], setup) << "README.md's setup block differs from readme_setup in this file";
  EXPECT_EQ(blocks[1], step) << "README.md's step block differs from readme_step in this file";
}

}  // namespace
}  // namespace baton
