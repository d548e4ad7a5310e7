// A witness (.wtns) ready to prove: the header fields and the values as
// canonical little-endian field elements.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zkfleet::engine {

class Witness {
 public:
  // Parses and validates a .wtns file. Throws zkfleet::Error naming the file
  // and the faulty field (magic, version, section sizes, n8, count).
  static Witness FromFile(const std::string& path);
  // Same, from the bytes of a .wtns file received over the network; `origin`
  // names it in error messages.
  static Witness FromBytes(std::string bytes, const std::string& origin);

  uint32_t n8() const { return n8_; }
  const std::vector<uint8_t>& prime() const { return prime_; }  // LE, n8 bytes
  uint32_t count() const { return count_; }
  // count() values of n8() bytes each, little-endian, canonical (< prime).
  const uint8_t* values() const { return values_.data(); }
  const std::string& origin() const { return origin_; }

 private:
  uint32_t n8_ = 0;
  uint32_t count_ = 0;
  std::vector<uint8_t> prime_;
  std::vector<uint8_t> values_;
  std::string origin_;
};

}  // namespace zkfleet::engine
