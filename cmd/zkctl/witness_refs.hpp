// zkctl submit --witness-url: the witness references of a submit, built and
// checked from the command line (docs/clients.md, "Witnesses by reference").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zkfleet/client.h"

namespace zkctl {

struct WitnessRefArgs {
  std::vector<std::string> urls;         // --witness-url, one per partition
  std::vector<std::string> sha256_hex;   // --sha256, by position (none, or one per URL)
  std::vector<uint64_t> sizes;           // --size, by position (none, or one per URL)
  uint32_t n_public = 0;                 // --n-public: >0 reads the expected public signals from file:// witnesses
  bool has_n_public = false;
  bool has_public_files = false;         // --public-signals given: the digests come from those files
};

// The references for `args` (and, with --n-public, the public.json of each
// file:// witness in `public_json`), or false with a one-line reason in
// `*why` (a usage error: nothing was sent). A file:// URL without --sha256 and
// --size is read here, once: its size, SHA-256 and (with --n-public) public
// signals w[1..n_public]. Every message shows URLs redacted.
bool BuildWitnessRefs(const WitnessRefArgs& args, std::vector<zkfleet::client::WitnessRef>* refs,
                      std::vector<std::string>* public_json, std::string* why);

// The local path of a file:// URL ("file:///a/b" or "file://localhost/a/b",
// %XX decoded), or "" when it is not one this host can open.
std::string LocalPathOfFileUrl(const std::string& url);

// 64 hex digits -> 32 bytes; false otherwise.
bool ParseSha256Hex(const std::string& hex, std::string* bytes);

}  // namespace zkctl
