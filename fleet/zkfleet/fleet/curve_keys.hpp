// CurveZMQ key files and the socket options that use them (issue 14).
//
// A keypair NAME is two ordinary text files, written by `zkctl keygen --out NAME`
// (or WriteKeyPair):
//
//   NAME.pub     (mode 0644; safe to copy to the broker's allow-list)
//       # zkfleet CURVE public key
//       public-key = <40-char Z85>
//
//   NAME.secret  (mode 0600; never leaves the machine that uses it)
//       # zkfleet CURVE secret key: keep private (mode 0600)
//       public-key = <40-char Z85>
//       secret-key = <40-char Z85>
//
// One grammar for every key file: NAME.pub, NAME.secret and the broker's
// allow-list entries (broker/peer_allow_list.hpp), all read by ParseKeyFile:
// one `name = value` per line, names public-key, secret-key and role (the
// last only meaningful in a broker allow-list's clients/ file); whitespace
// around the name and the value is ignored (Z85 has no whitespace), and so
// are double quotes around the value; blank lines, lines whose first
// non-blank character is '#', and anything after a blank followed by '#'
// are comments ('#' and '=' are Z85 characters, but a key has no blanks and
// never starts with '#'). A file may instead hold the bare 40-char public key
// on a line of its own (what `zkctl keygen` prints), but a bare key that
// starts with '#', or with 'role=', 'public-key=' or 'secret-key=', reads as
// a comment or a setting: write such a key as `public-key = ...` (the writer
// always does). An unknown name, a name given twice, a key that
// is not 40 chars of valid Z85 (every 5-char group below 2^32) are refused
// (kBadFormat), naming the file and the line; what a file must hold (a
// secret key, no secret key, no role) is up to its reader (below, and the
// allow-list's), and a secret file whose public key is not the one its
// secret key yields is kMismatch.
//
// Secret files: written with open(O_CREAT|O_EXCL, 0600), so an existing file
// is never overwritten; read only if the file's mode gives group and others no
// access at all (otherwise: "chmod 600 PATH"). Read files are limited to 64 KiB.
//
// Socket helpers: CURVE needs a TCP (or IPC) transport; inproc has no
// handshake. ConfigureCurveServer also sets the ZAP domain "zkfleet": with a
// ZAP handler bound at inproc://zeromq.zap.01 in the socket's context, that
// handler decides who may connect; with none bound (libzmq 4.3, ZAP domain not
// enforced), every client that knows the server's public key is accepted —
// encryption and server authentication without client authentication.
//
// Errors: zkfleet::Error with the file path and what was wrong in the message:
//   kNotFound (missing file), kIo (read/write failure), kBadFormat, kMismatch,
//   kInvalidArgument (bad key passed in, refusing to overwrite, secret file
//   readable by others, bad keypair name), kUnsupported (libzmq built without CURVE).
//
// Thread-safety: the functions hold no state and may be called from any
// thread; the socket helpers, like every use of a zmq::socket_t, only from the
// thread that owns the socket, before it binds or connects.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>
#include <string_view>

#include <zmq.hpp>

namespace zkfleet::fleet {

// A CURVE keypair in Z85 (40 chars each). The secret half is plain memory:
// keep copies few and short-lived.
struct CurveKeyPair {
  std::string public_z85;
  std::string secret_z85;
};

// The ZAP domain ConfigureCurveServer sets; a ZAP handler sees it in every request.
inline constexpr const char* kZapDomain = "zkfleet";

// True when `key` is 40 chars of valid Z85 (the encoding of 32 bytes).
bool IsZ85Key(std::string_view key);

// A fresh keypair from libzmq (zmq_curve_keypair, libsodium's RNG).
CurveKeyPair GenerateCurveKeyPair();

// Writes DIR/NAME.pub and DIR/NAME.secret (mode 0600). Refuses (kInvalidArgument,
// naming the file) if either exists; then neither is touched. `dir` must exist.
// `name` must be a plain file name, and must not end in .pub or .secret.
void WriteKeyPair(const std::filesystem::path& dir, const std::string& name, const CurveKeyPair& keys);

// What one key file says (the grammar above); each line number is where the
// value was given (0: not given). The role is its text, checked by the reader
// that gives roles meaning (the broker's allow-list).
struct KeyFile {
  std::optional<std::string> public_z85;
  std::optional<std::string> secret_z85;
  std::optional<std::string> role;
  int public_line = 0;
  int secret_line = 0;
  int role_line = 0;
};

// How a reader that needs a public key says a file holds none, after its path.
inline constexpr std::string_view kNoKey =
    " has no key (expected 'public-key = <z85>'; a bare key starting with '#' reads as a comment)";

// Parses `text`, the contents of `path` (named in errors). Throws Error
// (kBadFormat) "PATH:LINE: ..." on the first line that breaks the grammar.
KeyFile ParseKeyFile(const std::filesystem::path& path, std::string_view text);

// Reads (a regular file of at most 64 KiB) and parses a key file; its text
// is wiped from memory once parsed. Errors as ParseKeyFile, plus kNotFound
// and kIo for a file that cannot be read, naming it.
KeyFile ReadKeyFile(const std::filesystem::path& path);

// Reads and validates a secret key file (format, public matches secret, mode
// 0600 or tighter). A file holding only a public key (NAME.pub given by
// mistake) is kInvalidArgument saying so; so is a role line (roles are the
// broker's allow-list's to give).
CurveKeyPair ReadSecretKeyFile(const std::filesystem::path& path);

// The public key of a .pub file (or a bare Z85 key; a role line, as in an
// allow-list entry, is read past). A file holding a secret key is refused
// (kInvalidArgument): a peer's secret never belongs here.
std::string ReadPublicKeyFile(const std::filesystem::path& path);

// A CURVE server socket (the broker's ROUTERs): curve_server = 1, its secret
// and public key, ZAP domain `zap_domain` (the broker's ZAP handler tells
// its two ports apart by it). Call before bind().
void ConfigureCurveServer(zmq::socket_t& socket, const CurveKeyPair& server, const char* zap_domain = kZapDomain);

// A CURVE client socket: its own keypair and the server's public key, which
// the handshake authenticates (a wrong one never completes). Call before connect().
void ConfigureCurveClient(zmq::socket_t& socket, const CurveKeyPair& mine, const std::string& server_public_z85);

// How a worker or a client protects its connection to the broker: CURVE with
// its own keypair and the broker's public key (the default), or plaintext
// (--insecure-plaintext, for a trusted network only). Brokers that share an
// etcd journal may share one key pair or each have their own: then
// --broker-public-key lists one key file per --broker endpoint, in order.
struct ClientSecurity {
  bool plaintext = false;
  CurveKeyPair mine;
  // The brokers' public keys: one for every endpoint, or one per endpoint.
  std::vector<std::string> broker_public_z85;

  // From --curve-secret-key and --broker-public-key (either may be empty in
  // plaintext mode; the latter may be a comma-separated list of files).
  // Throws Error saying which option is missing or what is wrong with the file.
  static ClientSecurity Load(bool plaintext, const std::string& secret_key_file, const std::string& broker_public_file);
  // Throws Error (kInvalidArgument) unless there is one key, or one per
  // endpoint, for `endpoints` broker endpoints (nothing to check in plaintext).
  void CheckFits(size_t endpoints) const;
  // CURVE client options on `socket` for broker endpoint `index` (before its
  // connect()); nothing in plaintext mode.
  void Apply(zmq::socket_t& socket, size_t index = 0) const;
};

}  // namespace zkfleet::fleet
