#include "zkfleet/broker/peer_allow_list.hpp"

#include <zmq.h>

#include <algorithm>
#include <cstring>
#include <system_error>

#include "zkfleet/common/error.hpp"
#include "zkfleet/fleet/curve_keys.hpp"

namespace zkfleet::broker {

namespace fs = std::filesystem;

const char* RoleName(Role role) {
  switch (role) {
    case Role::kSubmit: return "submit";
    case Role::kObserve: return "observe";
    case Role::kAdmin: return "admin";
  }
  return "unknown";
}

const char* PeerKindName(PeerKind kind) {
  switch (kind) {
    case PeerKind::kWorker: return "worker";
    case PeerKind::kClient: return "client";
  }
  return "unknown";
}

std::optional<Role> ParseRole(std::string_view name) {
  if (name == "submit") return Role::kSubmit;
  if (name == "observe") return Role::kObserve;
  if (name == "admin") return Role::kAdmin;
  return std::nullopt;
}

std::optional<CurveKey> DecodeZ85Key(std::string_view z85) {
  if (z85.size() != 40) return std::nullopt;
  char text[41];
  std::memcpy(text, z85.data(), 40);
  text[40] = '\0';
  CurveKey key;
  if (zmq_z85_decode(key.data(), text) == nullptr) return std::nullopt;
  return key;
}

std::string EncodeZ85Key(const CurveKey& key) {
  char text[41];
  zmq_z85_encode(text, key.data(), key.size());
  return std::string(text, 40);
}

struct PeerAllowList::Snapshot {
  std::vector<AllowedPeer> peers;
  std::unordered_map<std::string, size_t> by_key;  // 32 binary bytes -> index in peers
  size_t workers = 0;
  size_t clients = 0;
};

namespace {

std::string KeyString(const CurveKey& key) { return std::string(reinterpret_cast<const char*>(key.data()), key.size()); }

bool ValidName(std::string_view name) {
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '-';
  });
}

// Reads one allow-list entry: a key file in the one grammar of key files
// (fleet::ReadKeyFile) that holds a public key, no secret key, and a role
// only in clients/. On failure returns nullopt and sets `why`, naming the file.
std::optional<AllowedPeer> ReadAllowedPeer(const fs::path& file, PeerKind kind, std::string& why) {
  const std::string path = file.string();
  std::string name = file.stem().string();
  if (!ValidName(name)) {
    why = path + ": the name '" + name + "' (file name without extension) must match [A-Za-z0-9_.-]+";
    return std::nullopt;
  }
  if (file.filename().string().find("secret") != std::string::npos) {
    why = path + ": looks like a secret key file; only public keys belong in an allow-list (remove it from this "
                 "directory)";
    return std::nullopt;
  }
  fleet::KeyFile parsed;
  try {
    parsed = fleet::ReadKeyFile(file);
  } catch (const Error& e) {
    why = e.what();
    return std::nullopt;
  }
  auto at = [&](int line) { return path + ":" + std::to_string(line) + ": "; };
  if (parsed.secret_z85) {
    why = at(parsed.secret_line) + "holds a secret key; only public keys belong in an allow-list";
    return std::nullopt;
  }
  std::optional<Role> role;
  if (parsed.role) {
    if (kind == PeerKind::kWorker) {
      why = at(parsed.role_line) + "a worker key has no role (is this a client key in the workers/ directory?)";
      return std::nullopt;
    }
    role = ParseRole(*parsed.role);
    if (!role) {
      why = at(parsed.role_line) + "role '" + *parsed.role + "' is not one of submit, observe, admin";
      return std::nullopt;
    }
  }
  if (!parsed.public_z85) {
    why = path + std::string(fleet::kNoKey);
    return std::nullopt;
  }
  std::optional<CurveKey> key = DecodeZ85Key(*parsed.public_z85);
  if (!key) {  // ReadKeyFile checked it; kept so that no unchecked key is ever listed
    why = at(parsed.public_line) + "'" + *parsed.public_z85 + "' is not valid Z85";
    return std::nullopt;
  }
  AllowedPeer peer;
  peer.name = std::move(name);
  peer.kind = kind;
  peer.role = role.value_or(Role::kSubmit);
  peer.key = *key;
  peer.z85 = EncodeZ85Key(*key);
  peer.file = file;
  return peer;
}

void LoadKind(const fs::path& dir, PeerKind kind, std::vector<AllowedPeer>& peers, std::vector<std::string>& warnings) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    warnings.push_back(dir.string() + ": no such directory; no " + PeerKindName(kind) + " keys are allowed");
    return;
  }
  if (!fs::is_directory(dir, ec)) {
    warnings.push_back(dir.string() + ": not a directory; no " + PeerKindName(kind) + " keys are allowed");
    return;
  }
  std::vector<fs::path> files;
  fs::directory_iterator it(dir, ec);
  if (ec) {
    warnings.push_back(dir.string() + ": cannot be listed (" + ec.message() + "); no " + PeerKindName(kind) +
                       " keys are allowed");
    return;
  }
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) {
      warnings.push_back(dir.string() + ": listing failed (" + ec.message() + ")");
      break;
    }
    const fs::path& path = it->path();
    if (path.filename().string().starts_with(".")) continue;
    std::error_code type_ec;
    if (fs::is_directory(path, type_ec)) {
      warnings.push_back(path.string() + ": a directory inside an allow-list directory; skipped");
      continue;
    }
    files.push_back(path);
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    std::string why;
    if (auto peer = ReadAllowedPeer(file, kind, why)) {
      peers.push_back(std::move(*peer));
    } else {
      warnings.push_back(why + "; skipped");
    }
  }
}

}  // namespace

PeerAllowList::PeerAllowList() : snapshot_(std::make_shared<Snapshot>()) {}

PeerAllowList::PeerAllowList(std::shared_ptr<const Snapshot> snapshot) : snapshot_(std::move(snapshot)) {}

PeerAllowList::LoadResult PeerAllowList::Load(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw Error(ErrorCode::kNotFound, "allow-list directory " + dir.string() +
                                          " does not exist or is not a directory (expected " + dir.string() +
                                          "/workers and " + dir.string() + "/clients of Z85 public key files)");
  }
  LoadResult result;
  std::vector<AllowedPeer> peers;
  LoadKind(dir / "workers", PeerKind::kWorker, peers, result.warnings);
  LoadKind(dir / "clients", PeerKind::kClient, peers, result.warnings);
  result.list = FromPeers(std::move(peers), &result.warnings);
  return result;
}

PeerAllowList PeerAllowList::FromPeers(std::vector<AllowedPeer> peers, std::vector<std::string>* warnings) {
  auto snapshot = std::make_shared<Snapshot>();
  std::unordered_map<std::string, size_t> names[2];  // per kind: name -> index
  auto where = [](const AllowedPeer& p) { return p.file.empty() ? "'" + p.name + "'" : p.file.string(); };
  for (AllowedPeer& peer : peers) {
    peer.z85 = EncodeZ85Key(peer.key);
    std::string key = KeyString(peer.key);
    if (auto it = snapshot->by_key.find(key); it != snapshot->by_key.end()) {
      const AllowedPeer& first = snapshot->peers[it->second];
      if (warnings) {
        warnings->push_back(where(peer) + ": key " + peer.z85 + " is already listed as " + PeerKindName(first.kind) +
                            " '" + first.name + "' (" + where(first) + "); skipped");
      }
      continue;
    }
    auto& by_name = names[peer.kind == PeerKind::kWorker ? 0 : 1];
    if (auto it = by_name.find(peer.name); it != by_name.end()) {
      const AllowedPeer& first = snapshot->peers[it->second];
      if (warnings) {
        warnings->push_back(where(peer) + ": " + PeerKindName(peer.kind) + " name '" + peer.name +
                            "' is already used by " + where(first) + "; skipped");
      }
      continue;
    }
    size_t index = snapshot->peers.size();
    by_name.emplace(peer.name, index);
    snapshot->by_key.emplace(std::move(key), index);
    (peer.kind == PeerKind::kWorker ? snapshot->workers : snapshot->clients)++;
    snapshot->peers.push_back(std::move(peer));
  }
  return PeerAllowList(std::move(snapshot));
}

const AllowedPeer* PeerAllowList::Find(const CurveKey& key) const { return Find(key.data(), key.size()); }

const AllowedPeer* PeerAllowList::Find(const uint8_t* key, size_t size) const {
  if (size != 32) return nullptr;
  auto it = snapshot_->by_key.find(std::string(reinterpret_cast<const char*>(key), size));
  return it == snapshot_->by_key.end() ? nullptr : &snapshot_->peers[it->second];
}

const AllowedPeer* PeerAllowList::FindZ85(std::string_view z85) const {
  std::optional<CurveKey> key = DecodeZ85Key(z85);
  return key ? Find(*key) : nullptr;
}

size_t PeerAllowList::size() const { return snapshot_->peers.size(); }

size_t PeerAllowList::count(PeerKind kind) const {
  return kind == PeerKind::kWorker ? snapshot_->workers : snapshot_->clients;
}

const std::vector<AllowedPeer>& PeerAllowList::peers() const { return snapshot_->peers; }

}  // namespace zkfleet::broker
