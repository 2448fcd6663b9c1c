// Output of baton-bench: an aligned table for people and JSON lines for machines.
#pragma once

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace baton::bench {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : rows_{std::move(header)} {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(FILE* out = stdout) const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

// The end of every subcommand: prints the table, closes the JSON file (if any) and returns
// the exit code: 1 when a CUDA error is pending, else 0.
int finish_report(Table const& table, FILE* json);

// One JSON object per line.
class JsonLine {
 public:
  JsonLine& str(char const* key, std::string const& value);
  JsonLine& num(char const* key, double value);
  std::string done() const { return "{" + body_ + "}"; }

 private:
  std::string body_;
};

}  // namespace baton::bench
