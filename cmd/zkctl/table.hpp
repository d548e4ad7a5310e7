// A plain text table for zkctl's human-readable output: columns padded to the
// widest cell, two spaces apart.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace zkctl {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : rows_{std::move(header)} {}
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void Print(std::ostream& out) const;
  bool empty() const { return rows_.size() <= 1; }  // the header only

 private:
  std::vector<std::vector<std::string>> rows_;
};

// Fixed-point seconds ("0.123"), or "-" for a negative value.
std::string FormatSeconds(double seconds, int decimals = 3);
// Bytes with a binary unit ("512 MiB").
std::string FormatBytes(uint64_t bytes);

}  // namespace zkctl
