#pragma once

#include <string>

namespace baton::bench {

struct BenchOptions {
  std::string json_path;  // JSON lines written here when set
  bool quick = false;     // a few representative shapes
  int shape[3] = {0, 0, 0};  // --shape B,CTX,PAGE: that one shape only
};

int run_metadata_bench(BenchOptions const& options);
int run_attention_bench(BenchOptions const& options);

}  // namespace baton::bench
