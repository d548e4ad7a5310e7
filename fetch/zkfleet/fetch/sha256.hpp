// Incremental SHA-256 of a fetched witness, fed chunk by chunk as the bytes
// land in their buffer (one pass: the bytes are never read a second time).
// OpenSSL's EVP implementation uses the CPU's SHA extensions where present.
//
// Thread-safety: one thread uses a Sha256 at a time.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

struct evp_md_ctx_st;

namespace zkfleet::fetch {

class Sha256 {
 public:
  Sha256();  // throws zkfleet::Error (kInternal) if OpenSSL cannot start a digest
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  // The digest of `bytes` in one call (zkctl's local witnesses, tests).
  static std::string Of(std::span<const uint8_t> bytes);
  static std::string Of(std::string_view bytes);

  void Update(std::span<const uint8_t> bytes);
  // The 32 raw bytes of the digest of everything since construction or the
  // last Finish/Reset; the object then starts over.
  std::string Finish();
  void Reset();

 private:
  evp_md_ctx_st* ctx_;
};

}  // namespace zkfleet::fetch
