#include "report.h"

#include <cuda_runtime_api.h>

#include <algorithm>

namespace baton::bench {

int finish_report(Table const& table, FILE* json) {
  table.print();
  if (json) std::fclose(json);
  cudaError_t const err = cudaGetLastError();
  if (err != cudaSuccess) {
    std::fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(err));
    return 1;
  }
  return 0;
}

void Table::print(FILE* out) const {
  std::vector<size_t> width;
  for (auto const& row : rows_) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  for (size_t r = 0; r < rows_.size(); ++r) {
    std::string line = "|";
    for (size_t i = 0; i < rows_[r].size(); ++i) {
      line += " " + rows_[r][i] + std::string(width[i] - rows_[r][i].size(), ' ') + " |";
    }
    std::fprintf(out, "%s\n", line.c_str());
    if (r == 0) {
      std::string sep = "|";
      for (size_t w : width) sep += std::string(w + 2, '-') + "|";
      std::fprintf(out, "%s\n", sep.c_str());
    }
  }
}

JsonLine& JsonLine::str(char const* key, std::string const& value) {
  std::string escaped;
  for (char c : value) {
    if (c == '"' || c == '\\') escaped += '\\';
    escaped += c;
  }
  body_ += (body_.empty() ? "" : ",") + std::string("\"") + key + "\":\"" + escaped + "\"";
  return *this;
}

JsonLine& JsonLine::num(char const* key, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4f", value);
  body_ += (body_.empty() ? "" : ",") + std::string("\"") + key + "\":" + buf;
  return *this;
}

}  // namespace baton::bench
