#pragma once

#include <string>

namespace baton::bench {

struct BenchOptions {
  std::string json_path;  // JSON lines written here when set
  bool quick = false;     // a few representative shapes
};

int run_metadata_bench(BenchOptions const& options);

}  // namespace baton::bench
