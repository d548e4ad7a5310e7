#include "zkfleet/broker/verification_keys.hpp"

#include <sodium.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
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


std::vector<std::string> VerificationKeys::SpecsInDirectory(const std::filesystem::path& dir,
                                                            std::vector<std::string>* skipped) {
  std::error_code error;
  std::filesystem::directory_iterator it(dir, error);
  if (error) {
    throw Error(error == std::errc::no_such_file_or_directory ? ErrorCode::kNotFound : ErrorCode::kIo,
                "verification key directory " + dir.string() + ": " + error.message());
  }
  std::map<std::string, std::string> by_name;  // file name -> spec
  for (const auto& entry : it) {
    const std::string name = entry.path().filename().string();
    const std::string extension = entry.path().extension().string();
    const std::string circuit = entry.path().stem().string();
    if (name[0] == '.') {  // an editor's or a copy's temporary file
      if (skipped) skipped->push_back(name + ": a hidden file");
      continue;
    }
    if (extension != ".json" && extension != ".vk") {
      if (skipped) skipped->push_back(name + ": not CIRCUIT.json or CIRCUIT.vk");
      continue;
    }
    if (!entry.is_regular_file(error)) {
      if (skipped) skipped->push_back(name + ": not a regular file");
      continue;
    }
    by_name[name] = circuit + "=" + entry.path().string();
  }
  std::vector<std::string> specs;
  for (auto& [name, spec] : by_name) specs.push_back(std::move(spec));
  return specs;
}

VerificationKeys VerificationKeys::LoadAll(const std::vector<std::string>& specs, const std::filesystem::path& dir,
                                           std::map<std::string, std::string>* failed,
                                           std::vector<std::string>* notes) {
  VerificationKeys keys = Load(specs);
  if (dir.empty()) return keys;
  for (const std::string& spec : SpecsInDirectory(dir, notes)) {
    const std::string circuit = spec.substr(0, spec.find('='));
    if (keys.Find(circuit)) {
      if (notes) notes->push_back(spec.substr(circuit.size() + 1) + ": circuit " + circuit +
                                  " has a --verification-key, which it keeps");
      continue;
    }
    try {
      VerificationKeys one = Load({spec});
      keys.index_.emplace(circuit, keys.entries_.size());
      keys.entries_.push_back(std::move(one.entries_.front()));
    } catch (const Error& e) {
      if (failed) (*failed)[circuit] = e.what();
    }
  }
  return keys;
}

VerificationKeys VerificationKeys::Merge(const VerificationKeys& current, const VerificationKeys& loaded,
                                         const std::function<std::optional<std::string>(const std::string&)>& keep,
                                         Change* change) {
  Change local;
  Change& out = change ? *change : local;
  VerificationKeys merged;
  auto add = [&merged](const Entry& entry) {
    merged.index_.emplace(entry.circuit, merged.entries_.size());
    merged.entries_.push_back(entry);
  };
  for (const Entry& now : current) {
    const Entry* next = loaded.Find(now.circuit);
    if (next && next->sha256 == now.sha256) {
      add(*next);  // the same key (perhaps at another path)
    } else if (auto why = keep(now.circuit)) {
      add(now);
      out.kept.push_back(now.circuit + ": " + *why);
    } else if (next) {
      add(*next);
      out.changed.push_back(now.circuit);
    } else {
      out.removed.push_back(now.circuit);
    }
  }
  for (const Entry& next : loaded) {
    if (current.Find(next.circuit)) continue;
    if (auto why = keep(next.circuit)) {  // e.g. jobs submitted unverified, in a bench
      out.kept.push_back(next.circuit + ": " + *why);
      continue;
    }
    add(next);
    out.added.push_back(next.circuit);
  }
  return merged;
}

}  // namespace zkfleet::broker
