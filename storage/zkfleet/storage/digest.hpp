// XXH3-128 digests in canonical (big-endian) form, 16 bytes: the broker's
// payload hashes (idempotency) and the journal's witness hashes (storage
// faults). Not a cryptographic hash: it detects damage and accidents, while
// the transport (CURVE) and the allow-lists keep adversaries out.
//
// Thread-safety: a Digest128 is one-thread state; the free function is pure.
#pragma once

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t's definition: the state lives on the stack, no allocation
#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace zkfleet::storage {

class Digest128 {
 public:
  Digest128() { XXH3_128bits_reset(&state_); }
  Digest128& Add(const void* data, size_t size) {
    XXH3_128bits_update(&state_, data, size);
    return *this;
  }
  Digest128& AddSize(uint64_t size) { return Add(&size, sizeof(size)); }
  // The bytes of `chunks` in order (a witness as the frames it came in).
  Digest128& Add(std::span<const std::string_view> chunks) {
    for (std::string_view chunk : chunks) Add(chunk.data(), chunk.size());
    return *this;
  }
  std::string Finish() const {
    XXH128_canonical_t canonical;
    XXH128_canonicalFromHash(&canonical, XXH3_128bits_digest(&state_));
    return std::string(reinterpret_cast<const char*>(canonical.digest), sizeof(canonical.digest));
  }

 private:
  XXH3_state_t state_;
};

inline std::string Digest128Of(const void* data, size_t size) { return Digest128().Add(data, size).Finish(); }

}  // namespace zkfleet::storage
