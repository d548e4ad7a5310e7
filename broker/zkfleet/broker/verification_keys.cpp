#include "zkfleet/broker/verification_keys.hpp"

#include <sodium.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "zkfleet/engine/bellman_format.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/engine/snarkjs.hpp"

namespace zkfleet::broker {
namespace {

constexpr std::string_view kPinPrefix = "@sha256:";

std::string Hex(const unsigned char* bytes, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * size);
  for (size_t i = 0; i < size; ++i) {
    hex += kDigits[bytes[i] >> 4];
    hex += kDigits[bytes[i] & 15];
  }
  return hex;
}

struct Spec {
  std::string circuit;
  std::string path;
  std::string pin;  // lower-case hex, empty when not pinned
};

Spec ParseSpec(const std::string& spec) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos) {
    throw Error(ErrorCode::kInvalidArgument,
                "verification key '" + spec + "': expected CIRCUIT=PATH or CIRCUIT=PATH@sha256:HEX");
  }
  Spec parsed;
  parsed.circuit = spec.substr(0, eq);
  parsed.path = spec.substr(eq + 1);
  if (parsed.circuit.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "verification key '" + spec + "': empty circuit id");
  }
  const size_t at = parsed.path.rfind(kPinPrefix);
  if (at != std::string::npos) {
    std::string hex = parsed.path.substr(at + kPinPrefix.size());
    parsed.path.resize(at);
    bool ok = hex.size() == 2 * crypto_hash_sha256_BYTES;
    for (char& c : hex) {
      if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
      ok = ok && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
    }
    if (!ok) {
      throw Error(ErrorCode::kInvalidArgument, "verification key for circuit '" + parsed.circuit +
                                                   "': sha256 pin: expected 64 hex digits, found '" + hex + "'");
    }
    parsed.pin = std::move(hex);
  }
  if (parsed.path.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                "verification key for circuit '" + parsed.circuit + "': empty path");
  }
  return parsed;
}

std::string ReadWholeFile(const std::string& circuit, const std::string& path) {
  const auto fail = [&](int err) {
    throw Error(err == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo,
                "verification key for circuit '" + circuit + "': " + path + ": " + std::strerror(err));
  };
  FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) fail(errno);
  std::string bytes;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, file)) > 0) bytes.append(buf, n);
  // A directory opens but cannot be read (EISDIR).
  const bool failed = std::ferror(file);
  const int err = errno;
  std::fclose(file);
  if (failed) fail(err ? err : EIO);
  return bytes;
}

}  // namespace

VerificationKeys VerificationKeys::Load(const std::vector<std::string>& specs) {
  if (sodium_init() < 0) throw Error(ErrorCode::kInternal, "libsodium failed to initialise");
  VerificationKeys keys;
  for (const std::string& text : specs) {
    Spec spec = ParseSpec(text);
    const std::string context = "verification key for circuit '" + spec.circuit + "' (" + spec.path + ")";
    if (keys.index_.count(spec.circuit)) {
      throw Error(ErrorCode::kInvalidArgument, context + ": circuit already has a key (" +
                                                   keys.entries_[keys.index_.find(spec.circuit)->second].path + ")");
    }
    const std::string bytes = ReadWholeFile(spec.circuit, spec.path);
    unsigned char digest[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(digest, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
    std::string sha256 = Hex(digest, sizeof digest);
    if (!spec.pin.empty() && spec.pin != sha256) {
      throw Error(ErrorCode::kMismatch,
                  context + ": sha256 mismatch: expected " + spec.pin + ", found " + sha256);
    }
    Entry entry;
    engine::VerificationKey vk;
    const size_t first = bytes.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && bytes[first] != '{') {
      // Not JSON: a bellperson .vk.
      try {
        vk = engine::ParseBellmanVerifyingKey({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, spec.path);
      } catch (const Error& e) {
        throw Error(ErrorCode::kBadFormat,
                    context + ": not a snarkjs verification_key.json, nor a bellperson .vk: " + e.what());
      }
      entry.kind = proto::CIRCUIT_KIND_BELLMAN;
    } else {
      try {
        vk = engine::ParseVerificationKeyJson(bytes, spec.path);
      } catch (const Error& e) {
        // The reader's message names the path and the field; add the circuit.
        throw Error(e.code(), "verification key for circuit '" + spec.circuit + "': " + e.what());
      }
    }
    try {
      entry.verifier = std::make_shared<const engine::PreparedVerifier>(vk);
    } catch (const Error& e) {
      throw Error(e.code(), context + ": " + e.what());
    }
    entry.curve = vk.curve;
    entry.n_public = vk.n_public;
    entry.circuit = spec.circuit;
    entry.path = std::move(spec.path);
    entry.sha256 = std::move(sha256);
    keys.index_.emplace(entry.circuit, keys.entries_.size());
    keys.entries_.push_back(std::move(entry));
  }
  return keys;
}

const VerificationKeys::Entry* VerificationKeys::Find(std::string_view circuit) const {
  const auto it = index_.find(circuit);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

}  // namespace zkfleet::broker
