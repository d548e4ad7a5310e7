// Parsing and validation of .wtns files (spec §5).
#include "zkfleet/engine/witness.hpp"

#include <algorithm>
#include <span>
#include <utility>
#include <vector>
#include <string>

#include "zkfleet/common/error.hpp"
#include "zkfleet/io/binfile.hpp"
#include "zkfleet/io/curve_primes.hpp"
#include "zkfleet/io/mapped_file.hpp"
#include "zkfleet/io/wtns_writer.hpp"

namespace zkfleet::engine {
namespace {

[[noreturn]] void BadFormat(const std::string& message) { throw Error(ErrorCode::kBadFormat, message); }

struct ParsedWitness {
  uint32_t n8 = 0;
  uint32_t count = 0;
  std::vector<uint8_t> prime;
  std::vector<uint8_t> values;
};

// Parses `bytes`, a whole .wtns file. Checks, in order: container,
// section 1 (n8 a multiple of 8 in [8, 64], odd prime > 1, exact size),
// section 2 size == n8 * nWitness (the size field is not trusted beyond that:
// circom's writer can get it wrong above 4 GiB, spec §5), w[0] == 1, and
// every value < prime.
ParsedWitness Parse(std::span<const uint8_t> bytes, const std::string& name) {
  ParsedWitness parsed;
  uint32_t& n8 = parsed.n8;
  uint32_t& count = parsed.count;
  std::vector<uint8_t>& prime = parsed.prime;
  const io::BinFile bin = io::BinFile::Parse(bytes, "wtns", io::kWtnsMaxVersion, name);

  io::SectionReader header(bin.Get(1, "header"), name, "1 (header)");
  n8 = header.U32("n8");
  if (n8 < 8 || n8 > 64 || n8 % 8 != 0) {
    BadFormat(name + ": header: n8: expected a multiple of 8 in [8, 64], found " + std::to_string(n8));
  }
  const uint8_t* p = header.Bytes(n8, "prime");
  prime.assign(p, p + n8);
  count = header.U32("nWitness");
  header.ExpectEnd();
  bool prime_above_one = false;
  for (uint32_t i = 1; i < n8; ++i) prime_above_one |= prime[i] != 0;
  prime_above_one |= prime[0] > 1;
  if ((prime[0] & 1) == 0 || !prime_above_one) {
    BadFormat(name + ": header: prime: expected an odd prime, found " + io::HexLe(prime));
  }
  if (count == 0) BadFormat(name + ": header: nWitness: expected >= 1 (w[0] = 1), found 0");

  const io::Section data = bin.Get(2, "witness values");
  const uint64_t expected = uint64_t{n8} * count;
  if (data.size != expected) {
    BadFormat(name + ": section 2 (witness values): size: expected n8 * nWitness = " +
              std::to_string(n8) + " * " + std::to_string(count) + " = " + std::to_string(expected) +
              " bytes, found " + std::to_string(data.size));
  }
  // w[0] is the constant signal; anything else means a garbled witness.
  if (data.data[0] != 1 || std::any_of(data.data + 1, data.data + n8, [](uint8_t b) { return b != 0; })) {
    BadFormat(name + ": section 2 (witness values): w[0]: expected 1, found " +
              io::HexLe({data.data, n8}));
  }
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t* v = data.data + i * n8;
    if (!io::LessThanLe(v, prime.data(), n8)) {
      BadFormat(name + ": section 2 (witness values): w[" + std::to_string(i) + "]: expected < prime " +
                io::HexLe(prime) + ", found " + io::HexLe({v, n8}));
    }
  }
  parsed.values.assign(data.data, data.data + expected);
  return parsed;
}

}  // namespace

Witness Witness::FromFile(const std::string& path) {
  const io::MappedFile file = io::MappedFile::Open(path);
  ParsedWitness parsed = Parse(file.bytes(), path);
  Witness w;
  w.n8_ = parsed.n8;
  w.count_ = parsed.count;
  w.prime_ = std::move(parsed.prime);
  w.values_ = std::move(parsed.values);
  w.origin_ = path;
  return w;
}

Witness Witness::FromBytes(std::string bytes, const std::string& origin) {
  ParsedWitness parsed =
      Parse({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, origin);
  Witness w;
  w.n8_ = parsed.n8;
  w.count_ = parsed.count;
  w.prime_ = std::move(parsed.prime);
  w.values_ = std::move(parsed.values);
  w.origin_ = origin;
  return w;
}

}  // namespace zkfleet::engine
