// engine::PublicSignalsOfWtns (engine/wtns.hpp): the public signals of a
// .wtns whose bytes arrive in pieces (the broker's RESULT check), read in
// place without assembling the witness.
#include "zkfleet/engine/wtns.hpp"

#include <algorithm>
#include <cstring>

#include "zkfleet/io/binfile.hpp"
#include "zkfleet/io/curve_primes.hpp"
#include "zkfleet/wtns/wtns_writer.hpp"

namespace zkfleet::engine {
namespace {

// Random access to the bytes of a witness held in chunks.
class ChunkedBytes {
 public:
  explicit ChunkedBytes(std::span<const std::span<const uint8_t>> chunks) : chunks_(chunks) {
    starts_.reserve(chunks.size());
    for (const std::span<const uint8_t> chunk : chunks) {
      starts_.push_back(size_);
      size_ += chunk.size();
    }
  }
  uint64_t size() const { return size_; }

  // Copies [offset, offset + n) to `out`; false when that is past the end.
  bool Read(uint64_t offset, void* out, uint64_t n) const {
    if (offset > size_ || n > size_ - offset) return false;
    if (n == 0) return true;
    // The last chunk starting at or before `offset` (empty ones are skipped below).
    size_t i = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin()) - 1;
    auto* dst = static_cast<uint8_t*>(out);
    while (n > 0) {
      const std::span<const uint8_t> chunk = chunks_[i];
      const uint64_t skip = offset - starts_[i];
      const uint64_t take = std::min<uint64_t>(n, chunk.size() - skip);
      std::memcpy(dst, chunk.data() + skip, take);
      dst += take;
      offset += take;
      n -= take;
      ++i;
    }
    return true;
  }
  bool U32(uint64_t offset, uint32_t* out) const {
    uint8_t b[4];
    if (!Read(offset, b, 4)) return false;
    *out = io::LoadU32(b);
    return true;
  }
  bool U64(uint64_t offset, uint64_t* out) const {
    uint8_t b[8];
    if (!Read(offset, b, 8)) return false;
    *out = io::LoadU64(b);
    return true;
  }

 private:
  std::span<const std::span<const uint8_t>> chunks_;
  std::vector<uint64_t> starts_;
  uint64_t size_ = 0;
};

}  // namespace

std::optional<std::vector<BigInt>> PublicSignalsOfWtns(std::span<const std::span<const uint8_t>> chunks, uint32_t n_public,
                                                       std::string* why) {
  const auto fail = [&](const std::string& message) -> std::optional<std::vector<BigInt>> {
    if (why) *why = "witness: " + message;
    return std::nullopt;
  };
  const ChunkedBytes bytes(chunks);
  char magic[4];
  uint32_t version = 0, n_sections = 0;
  if (!bytes.Read(0, magic, 4) || !bytes.U32(4, &version) || !bytes.U32(8, &n_sections)) {
    return fail("truncated: " + std::to_string(bytes.size()) + " bytes, no container header");
  }
  if (std::memcmp(magic, "wtns", 4) != 0) return fail("bad magic: expected \"wtns\"");
  if (version == 0 || version > io::kWtnsMaxVersion) {
    return fail("unsupported version " + std::to_string(version));
  }
  // The section table (sections come in any order, spec §2); each entry
  // advances by at least 12 bytes, so a huge nSections ends at the file's end.
  struct Located {
    bool found = false;
    uint64_t offset = 0, size = 0;
  } header, values;
  uint64_t pos = io::BinFile::kHeaderSize;
  for (uint32_t s = 0; s < n_sections; ++s) {
    uint32_t id = 0;
    uint64_t size = 0;
    if (!bytes.U32(pos, &id) || !bytes.U64(pos + 4, &size)) {
      return fail("truncated: section table entry " + std::to_string(s) + " at byte " + std::to_string(pos));
    }
    const uint64_t payload = pos + io::BinFile::kSectionHeaderSize;
    if (size > bytes.size() - payload) {
      return fail("truncated: section " + std::to_string(id) + " needs " + std::to_string(size) +
                  " bytes at byte " + std::to_string(payload) + ", the witness has " + std::to_string(bytes.size()));
    }
    if (id == 1 || id == 2) {
      Located& located = id == 1 ? header : values;
      if (located.found) return fail("section " + std::to_string(id) + " duplicated");
      located = {true, payload, size};
    }
    pos = payload + size;
  }
  if (pos != bytes.size()) {
    return fail(std::to_string(bytes.size() - pos) + " bytes after the last section");
  }
  if (!header.found) return fail("no section 1 (header)");
  if (!values.found) return fail("no section 2 (witness values)");

  uint32_t n8 = 0, n_witness = 0;
  if (!bytes.U32(header.offset, &n8)) return fail("section 1 (header): truncated");
  // 48 bytes: the widest field a BigInt holds (BLS12-381's r needs 32).
  if (n8 < 8 || n8 > 48 || n8 % 8 != 0) {
    return fail("header: n8: expected a multiple of 8 in [8, 48], found " + std::to_string(n8));
  }
  if (header.size != 8ull + n8) {
    return fail("section 1 (header): size: expected " + std::to_string(8 + n8) + ", found " +
                std::to_string(header.size));
  }
  uint8_t prime[48];
  bytes.Read(header.offset + 4, prime, n8);
  bytes.U32(header.offset + 4 + n8, &n_witness);
  if (values.size != uint64_t{n8} * n_witness) {
    return fail("section 2 (witness values): size: expected n8 * nWitness = " + std::to_string(uint64_t{n8} * n_witness) +
                ", found " + std::to_string(values.size));
  }
  if (n_witness < uint64_t{n_public} + 1) {
    return fail("nWitness " + std::to_string(n_witness) + " is too small for w[0] and " + std::to_string(n_public) +
                " public signals");
  }
  // Only w[0..n_public] are copied, never the rest of the witness.
  std::vector<uint8_t> head((uint64_t{n_public} + 1) * n8);
  bytes.Read(values.offset, head.data(), head.size());
  if (head[0] != 1 || std::any_of(head.begin() + 1, head.begin() + n8, [](uint8_t b) { return b != 0; })) {
    return fail("w[0]: expected 1, found " + io::HexLe({head.data(), n8}));
  }
  std::vector<BigInt> out(n_public);
  for (uint32_t i = 0; i < n_public; ++i) {
    const uint8_t* value = head.data() + uint64_t{i + 1} * n8;
    if (!io::LessThanLe(value, prime, n8)) {
      return fail("w[" + std::to_string(i + 1) + "]: expected < prime " + io::HexLe({prime, n8}) + ", found " +
                  io::HexLe({value, n8}));
    }
    for (uint32_t limb = 0; limb < n8 / 8; ++limb) out[i][limb] = io::LoadU64(value + 8 * limb);
  }
  return out;
}

}  // namespace zkfleet::engine
