// README.md's decode_attention example (tests/common/readme_example.h) without a GPU: its step
// reports missing buffers before any launch, and the README shows the header's code as it
// is. Needs both areas.
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
#include "common/readme_example.h"

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

// The body of `signature`'s function in `src`, one indentation level removed.
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

// The README shows the header's code: its setup block is readme_setup's body up to the
// hand-back of the results, its step block readme_step's body.
TEST(AttentionReadme, ExampleIsTheHeadersCode) {
  std::string const src_path = BATON_SOURCE_DIR "/tests/common/readme_example.h";
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
  EXPECT_EQ(blocks[0], setup) << "README.md's setup block differs from readme_setup in tests/common/readme_example.h";
  EXPECT_EQ(blocks[1], step) << "README.md's step block differs from readme_step in tests/common/readme_example.h";
}

}  // namespace
}  // namespace baton
