// The operator's verification keys, by circuit id: the keys the broker checks
// every worker RESULT against before it stores it (no unverified proof reaches
// a client). Each key is a snarkjs verification_key.json named on the command
// line as
//
//   CIRCUIT=PATH                 e.g. transfer=/etc/zkfleet/vk/transfer.json
//   CIRCUIT=PATH@sha256:HEX      the same, pinned to the file's SHA-256 (64 hex digits)
//
// (the last "@sha256:" in a spec starts the pin, so a PATH may hold '@').
// A file that does not start with '{' (after white space) is read as a
// bellperson .vk instead (zkfleet-dev bellman-params --vk, bellperson's
// VerifyingKey::write): its circuit is then CIRCUIT_KIND_BELLMAN, whose
// results carry the 192-byte proof (engine/bellman_format.hpp).
// Load reads each file once, hashes it (libsodium SHA-256, the digest
// `sha256sum` prints), parses it (engine::ParseVerificationKeyJson) and prepares
// a engine::PreparedVerifier, whose constructor checks the key itself (IC
// length, coordinates < q, points on their curves and in their subgroups), so
// a bad key stops the broker at start rather than failing every result.
//
// A directory of keys (zkbroker --verification-key-dir) holds one file per
// circuit, CIRCUIT.json (snarkjs) or CIRCUIT.vk (bellperson), unpinned: its
// name is the circuit id. The broker reads it at start and again on SIGHUP
// or `zkctl reload`; Merge decides what a reload may change.
//
// Ownership: a VerificationKeys owns its entries; each entry's verifier is
// shared (a VerifyTask holds it while a ResultVerifier thread uses it, so a
// set replaced at run time stays valid for the tasks already submitted).
// Thread-safety: immutable after Load; Find, size and iteration may be called
// from any thread at once. Load is reentrant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zkfleet.pb.h"
#include "zkfleet/engine/curve.hpp"
#include "zkfleet/engine/verify.hpp"

namespace zkfleet::broker {

class VerificationKeys {
 public:
  struct Entry {
    std::string circuit;
    std::string path;
    std::string sha256;  // of the file, 64 lower-case hex digits
    engine::Curve curve = engine::Curve::kBn254;
    uint32_t n_public = 0;
    proto::CircuitKind kind = proto::CIRCUIT_KIND_CIRCOM;  // BELLMAN for a .vk file
    std::shared_ptr<const engine::PreparedVerifier> verifier;  // never null
  };

  // No keys.
  VerificationKeys() = default;

  // One entry per spec, in the order given. Throws zkfleet::Error, the message
  // naming the spec's circuit and path:
  //   kInvalidArgument  malformed spec (no '=', empty circuit id or path, a pin
  //                     that is not 64 hex digits), a circuit named twice;
  //   kNotFound / kIo   the file cannot be read;
  //   kMismatch         the file's SHA-256 is not the pinned one (both named);
  //   kBadFormat / kUnsupported  not a valid Groth16 verification key.
  static VerificationKeys Load(const std::vector<std::string>& specs);

  // Specs (CIRCUIT=PATH) for the keys in `dir`: every regular file named
  // CIRCUIT.json or CIRCUIT.vk, in name order. Other entries are skipped and
  // named in `skipped` (with why). Throws zkfleet::Error (kNotFound, kIo)
  // when `dir` cannot be listed.
  static std::vector<std::string> SpecsInDirectory(const std::filesystem::path& dir,
                                                   std::vector<std::string>* skipped);

  // What Merge did, circuit ids in order; `kept` as "CIRCUIT: why".
  struct Change {
    std::vector<std::string> added, removed, changed, kept;
    bool empty() const { return added.empty() && removed.empty() && changed.empty() && kept.empty(); }
  };
  // The keys of `specs` and of the files in `dir` (empty: none), a circuit
  // named in both taking the spec's. A spec that fails throws (as Load); a
  // file of `dir` that fails is left out and its circuit named in `failed`
  // with why ("CIRCUIT: message"), so one bad file costs one circuit.
  // `notes` gets the skipped directory entries and shadowed files.
  static VerificationKeys LoadAll(const std::vector<std::string>& specs, const std::filesystem::path& dir,
                                  std::map<std::string, std::string>* failed, std::vector<std::string>* notes);

  // The set that replaces `current` after a reload read `loaded`. A circuit
  // for which `keep` gives a reason keeps the key it has: one with jobs not
  // yet done (their proofs are checked against the key they were submitted
  // under, and a worker proving an old job must not be struck for it), or
  // whose new file failed to load; a later reload applies the change.
  // Everything else becomes as `loaded` says.
  static VerificationKeys Merge(const VerificationKeys& current, const VerificationKeys& loaded,
                                const std::function<std::optional<std::string>(const std::string& circuit)>& keep,
                                Change* change);

  // The entry for `circuit`, or null. The pointer lives as long as this set.
  const Entry* Find(std::string_view circuit) const;

  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  // In spec order (for the start-up log).
  const std::vector<Entry>& entries() const { return entries_; }
  std::vector<Entry>::const_iterator begin() const { return entries_.begin(); }
  std::vector<Entry>::const_iterator end() const { return entries_.end(); }

 private:
  std::vector<Entry> entries_;
  std::map<std::string, size_t, std::less<>> index_;  // circuit -> entries_ index
};

}  // namespace zkfleet::broker
