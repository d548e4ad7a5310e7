// The broker's allow-lists: which CURVE public keys may connect, under which
// name, as what kind of peer (worker or client) and, for clients, with which
// role. The ZapHandler (zap_handler.hpp) consults one at every handshake.
//
// On-disk layout (the directory given to PeerAllowList::Load, e.g. /etc/zkfleet/keys):
//
//   DIR/workers/NAME[.ext]   one file per worker key
//   DIR/clients/NAME[.ext]   one file per client key
//
// Each file is a key file in the one grammar of every key file
// (fleet::ParseKeyFile, fleet/curve_keys.hpp, which also reads the peers'
// NAME.pub and NAME.secret): it holds exactly one 40-character Z85 CURVE
// *public* key, alone on a line or as `public-key = <key>` (optionally
// quoted), so the NAME.pub files that `zkctl keygen` writes can be copied in
// as they are; comments as there. A client file may also hold one line
// `role = submit|observe|admin` (default submit); a worker file may not (a
// role there means the file is in the wrong directory), and no file may hold
// a secret-key line. NAME, the file name
// without its last extension, is the peer's identity in logs, metrics and the
// broker (ZMQ "User-Id"); it must match [A-Za-z0-9_.-]+. Example,
// DIR/clients/ci-runner.pub:
//
//   # CI pipeline, rotated 2024-05
//   public-key = rG!x...(40 characters)...
//   role = submit
//
// Entries whose name starts with '.' are skipped silently (editor backups,
// Kubernetes secret mounts' `..data` links); symbolic links are followed.
// A missing workers/ or clients/ directory counts as empty (with a warning).
//
// Validation never throws for a bad entry: a file that is unreadable, holds no
// key, several keys, a malformed key, an unknown `x = y` line, a bad role, a
// bad name, or whose name says it is a secret key ("*secret*") is skipped and
// reported in LoadResult::warnings with its path. A key listed twice (in one
// directory or both) is kept only for the first file in load order (workers
// before clients, file names in byte order) and the later file is reported;
// a name used twice within one kind likewise. Callers decide whether warnings
// are fatal (e.g. at start) or only logged (e.g. on SIGHUP).
//
// Thread-safety: an PeerAllowList is an immutable snapshot; copies share it and
// may be read from any thread. Load is reentrant.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace zkfleet::broker {

// What a client key may do. Workers have no role.
enum class Role {
  kSubmit,   // submit, await, cancel and read its own jobs
  kObserve,  // status and worker listings
  kAdmin,    // everything: drain, cancel any job, ...
};

// Which port a key may speak on.
enum class PeerKind { kWorker, kClient };

const char* RoleName(Role role);          // "submit", "observe", "admin"
const char* PeerKindName(PeerKind kind);  // "worker", "client"
std::optional<Role> ParseRole(std::string_view name);

using CurveKey = std::array<uint8_t, 32>;

// Z85 text (exactly 40 characters) -> binary key; nullopt when malformed.
std::optional<CurveKey> DecodeZ85Key(std::string_view z85);
// Binary key -> its 40-character Z85 text.
std::string EncodeZ85Key(const CurveKey& key);

// One allowed key.
struct AllowedPeer {
  std::string name;  // file name without extension
  PeerKind kind = PeerKind::kClient;
  Role role = Role::kSubmit;  // meaningful for clients only
  CurveKey key{};
  std::string z85;                 // canonical Z85 text of `key`
  std::filesystem::path file;      // where it was read from
};

class PeerAllowList {
 public:
  struct LoadResult;

  // An empty list: every key is unknown.
  PeerAllowList();

  // Reads DIR/workers and DIR/clients (layout above). Throws Error
  // (kNotFound) when `dir` does not exist or is not a directory; everything
  // else is a warning.
  static LoadResult Load(const std::filesystem::path& dir);

  // Builds a list from peers already in memory (tests, a future single-file
  // format). Duplicates are handled as in Load; warnings are appended.
  static PeerAllowList FromPeers(std::vector<AllowedPeer> peers, std::vector<std::string>* warnings = nullptr);

  // The peer for a key, or nullptr. The pointer stays valid as long as any
  // copy of this PeerAllowList lives.
  const AllowedPeer* Find(const CurveKey& key) const;
  const AllowedPeer* Find(const uint8_t* key, size_t size) const;  // size must be 32, else nullptr
  const AllowedPeer* FindZ85(std::string_view z85) const;

  size_t size() const;
  size_t count(PeerKind kind) const;
  // All peers, workers first, in load order.
  const std::vector<AllowedPeer>& peers() const;

 private:
  struct Snapshot;
  explicit PeerAllowList(std::shared_ptr<const Snapshot> snapshot);
  std::shared_ptr<const Snapshot> snapshot_;
};

struct PeerAllowList::LoadResult {
  PeerAllowList list;
  std::vector<std::string> warnings;  // one line each, naming the file
};

}  // namespace zkfleet::broker
