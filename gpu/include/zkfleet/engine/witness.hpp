// engine::Witness: a witness (.wtns) ready to prove, the header fields and
// the values as canonical little-endian field elements. Part of the engine's
// public API; the parser is internal (wtns/witness.cpp).
//
// Ownership: FromFile and FromBytes copy the values into storage the Witness
// owns. View does not copy: values() then points into the caller's bytes,
// which must stay alive and unchanged for as long as the Witness (or any
// copy of it) is used -- through the end of every Prove() it is passed to.
// View is the zero-copy path for a witness received over the network: the
// CUDA backend uploads straight from those bytes (a true async DMA when they
// are page-locked, e.g. from the worker's pinned pool).
//
// Thread-safety: immutable after construction; any number of threads may
// read one Witness (and prove it) at once.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace zkfleet::engine {

class Witness {
 public:
  // From this many values on, the "every value < prime" check runs on a few
  // threads (below it, starting them costs more than it saves).
  static constexpr uint32_t kParallelCheckMin = 1u << 20;

  // Parses and validates a .wtns file. Throws zkfleet::Error naming the file
  // and the faulty field (magic, version, section sizes, n8, count, w[0],
  // the lowest index of a value not below the prime).
  static Witness FromFile(const std::string& path);
  // Same, from the bytes of a .wtns file received over the network; `origin`
  // names it in error messages. Copies the values once (into the Witness).
  static Witness FromBytes(std::string_view bytes, const std::string& origin);
  // Same checks and errors as FromBytes, without copying: the result is a
  // non-owning view into `wtns_bytes` (see the top of this file).
  static Witness View(std::span<const uint8_t> wtns_bytes, std::string origin);

  uint32_t n8() const { return n8_; }
  const std::vector<uint8_t>& prime() const { return prime_; }  // LE, n8 bytes
  uint32_t count() const { return count_; }
  // count() values of n8() bytes each, little-endian, canonical (< prime).
  // Only 4-byte aligned for a view (snarkjs payloads are): load with memcpy.
  const uint8_t* values() const { return owned_.empty() ? view_ : owned_.data(); }
  // False for a View: values() points into bytes the caller owns.
  bool owns_values() const { return !owned_.empty(); }
  const std::string& origin() const { return origin_; }

 private:
  uint32_t n8_ = 0;
  uint32_t count_ = 0;
  std::vector<uint8_t> prime_;
  // Either owned_ holds the values (FromFile, FromBytes) or view_ points at
  // the caller's (View; owned_ empty). values() picks, so copies and moves
  // need no fix-up. A valid witness has count >= 1, so owned_ is never empty
  // when it owns.
  std::vector<uint8_t> owned_;
  const uint8_t* view_ = nullptr;
  std::string origin_;
};

}  // namespace zkfleet::engine
