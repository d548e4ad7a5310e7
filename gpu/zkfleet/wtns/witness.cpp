// Parsing and validation of .wtns files (spec §5).
#include "zkfleet/wtns/witness.hpp"

#include <algorithm>
#include <span>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "zkfleet/common/error.hpp"
#include "zkfleet/io/binfile.hpp"
#include "zkfleet/io/curve_primes.hpp"
#include "zkfleet/io/mapped_file.hpp"
#include "zkfleet/wtns/wtns_writer.hpp"

namespace zkfleet::engine {
namespace {

using io::BadFormat;

// The header fields and where the values are (inside the parsed bytes).
struct ParsedWitness {
  uint32_t n8 = 0;
  uint32_t count = 0;
  std::vector<uint8_t> prime;
  std::span<const uint8_t> values;
};

// Index of the first value in [begin, end) that is not below `prime`, or
// end. kN8 is n8 when known at compile time (0: use `n8`), so the common
// 32-byte case gets a constant stride.
//
// A value whose most significant 64-bit limb is below the prime's is below
// the prime; only the rare value whose top limb is >= the prime's needs the
// full comparison. So each block first ORs "top limb >= prime's" over all
// its values (branch-free, one unaligned 8-byte load each: the payload is
// only 4-byte aligned) and is looked at value by value only when that is set.
// (A prime whose top limb is 0 sends every block down the exact path:
// correct, just slower; no snarkjs curve has one.)
template <uint32_t kN8>
uint64_t FirstNotBelowPrime(const uint8_t* values, uint32_t n8, const uint8_t* prime, uint64_t begin, uint64_t end) {
  const uint64_t stride = kN8 ? kN8 : n8;
  const uint64_t top = stride - 8;
  const uint64_t prime_top = io::LoadU64(prime + top);
  constexpr uint64_t kBlock = 512;
  for (uint64_t b = begin; b < end; b += kBlock) {
    const uint64_t e = std::min(end, b + kBlock);
    const uint8_t* v = values + b * stride + top;
    uint64_t suspect = 0;
    for (uint64_t i = b; i < e; ++i, v += stride) suspect |= io::LoadU64(v) >= prime_top;
    if (!suspect) continue;
    for (uint64_t i = b; i < e; ++i) {
      if (!io::LessThanLe(values + i * stride, prime, stride)) return i;
    }
  }
  return end;
}

uint64_t FirstNotBelowPrimeIn(const uint8_t* values, uint32_t n8, const uint8_t* prime, uint64_t begin, uint64_t end) {
  return n8 == 32 ? FirstNotBelowPrime<32>(values, n8, prime, begin, end)
                  : FirstNotBelowPrime<0>(values, n8, prime, begin, end);
}

// Index of the lowest value not below `prime`, or count. Large witnesses are
// split into contiguous chunks checked on their own threads; the minimum of
// the chunks' first failures is the lowest overall, so the error names the
// same index however the work was split.
uint64_t FirstNotBelowPrime(const uint8_t* values, uint32_t n8, const uint8_t* prime, uint64_t count) {
  if (count < Witness::kParallelCheckMin) return FirstNotBelowPrimeIn(values, n8, prime, 0, count);
  // At least two parts so the split is exercised even on one core; at most
  // four: the check is memory-bound well before that.
  const unsigned parts = std::clamp(std::thread::hardware_concurrency(), 2u, 4u);
  const uint64_t chunk = (count + parts - 1) / parts;
  std::vector<uint64_t> first(parts, count);  // count: none in that chunk
  auto check = [&](unsigned p) {
    const uint64_t begin = std::min(count, p * chunk), end = std::min(count, begin + chunk);
    const uint64_t i = FirstNotBelowPrimeIn(values, n8, prime, begin, end);
    if (i < end) first[p] = i;
  };
  std::vector<std::thread> threads;
  threads.reserve(parts);
  for (unsigned p = 1; p < parts; ++p) {
    try {
      threads.emplace_back(check, p);
    } catch (const std::system_error&) {
      check(p);  // no thread to be had: check this chunk here
    }
  }
  check(0);
  for (std::thread& t : threads) t.join();
  return *std::min_element(first.begin(), first.end());
}

// Parses `bytes`, a whole .wtns file. Checks, in order: container,
// section 1 (n8 a multiple of 8 in [8, 64], odd prime > 1, exact size),
// section 2 size == n8 * nWitness (the size field is not trusted beyond that:
// circom's writer can get it wrong above 4 GiB, spec §5), w[0] == 1, and
// every value < prime (the lowest failing index is reported).
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
  const uint64_t bad = FirstNotBelowPrime(data.data, n8, prime.data(), count);
  if (bad < count) {
    const uint8_t* v = data.data + bad * n8;
    BadFormat(name + ": section 2 (witness values): w[" + std::to_string(bad) + "]: expected < prime " +
              io::HexLe(prime) + ", found " + io::HexLe({v, n8}));
  }
  parsed.values = {data.data, expected};
  return parsed;
}

}  // namespace

Witness Witness::FromFile(const std::string& path) {
  const io::MappedFile file = io::MappedFile::Open(path);
  // The mapping ends with this call: own a copy.
  Witness w = View(file.bytes(), path);
  w.owned_.assign(w.view_, w.view_ + uint64_t{w.count_} * w.n8_);
  w.view_ = nullptr;
  return w;
}

Witness Witness::FromBytes(std::string_view bytes, const std::string& origin) {
  Witness w = View({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, origin);
  w.owned_.assign(w.view_, w.view_ + uint64_t{w.count_} * w.n8_);
  w.view_ = nullptr;
  return w;
}

Witness Witness::View(std::span<const uint8_t> wtns_bytes, std::string origin) {
  ParsedWitness parsed = Parse(wtns_bytes, origin);
  Witness w;
  w.n8_ = parsed.n8;
  w.count_ = parsed.count;
  w.prime_ = std::move(parsed.prime);
  w.view_ = parsed.values.data();
  w.origin_ = std::move(origin);
  return w;
}

}  // namespace zkfleet::engine
