#include "zkfleet/fleet/curve_keys.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <system_error>

#include "zkfleet/common/error.hpp"

namespace zkfleet::fleet {
namespace {

constexpr size_t kZ85KeyChars = 40;
constexpr size_t kMaxKeyFileBytes = 64 * 1024;
constexpr std::string_view kZ85Alphabet =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

std::string Quote(const std::filesystem::path& path) { return path.string(); }

std::string ModeOctal(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

void RequireCurve() {
  if (!zmq_has("curve")) {
    throw Error(ErrorCode::kUnsupported, "libzmq was built without CURVE security (zmq_has(\"curve\") is false)");
  }
}

// Closes the descriptor on every path.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

struct RawFile {
  std::string text;
  mode_t mode = 0;
};

// Reads a key file (its mode is returned, fstat'ed on the descriptor read, so
// the mode checked is the file's whose text was read).
// `what`: "secret key file", "public key file" or "key file", for errors.
RawFile ReadSmallFile(const std::filesystem::path& path, const char* what) {
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (f.fd < 0) {
    int err = errno;
    throw Error(err == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo,
                std::string(what) + " " + Quote(path) + ": cannot open: " + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) {
    throw Error(ErrorCode::kIo, "key file " + Quote(path) + ": fstat: " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    throw Error(ErrorCode::kBadFormat, "key file " + Quote(path) + ": not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxKeyFileBytes) {
    throw Error(ErrorCode::kBadFormat, "key file " + Quote(path) + ": " + std::to_string(st.st_size) +
                                           " bytes, more than a key file holds (limit " +
                                           std::to_string(kMaxKeyFileBytes) + ")");
  }
  RawFile out;
  out.mode = st.st_mode;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(f.fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(ErrorCode::kIo, "key file " + Quote(path) + ": read: " + std::strerror(errno));
    }
    if (n == 0) break;
    out.text.append(buf, static_cast<size_t>(n));
    if (out.text.size() > kMaxKeyFileBytes) {
      throw Error(ErrorCode::kBadFormat, "key file " + Quote(path) + ": larger than a key file (limit " +
                                             std::to_string(kMaxKeyFileBytes) + " bytes)");
    }
  }
  return out;
}

std::string_view Trim(std::string_view s) {
  const char* ws = " \t\r\n\v\f";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

// Describes why `value` is not a key, for an error message.
std::string WhyNotKey(std::string_view value) {
  if (value.size() != kZ85KeyChars) {
    return std::to_string(value.size()) + " chars, a Z85 key has " + std::to_string(kZ85KeyChars) +
           " (truncated or not a key?)";
  }
  return "not valid Z85";
}

// `line` without a comment: none when it starts with '#', else what precedes
// a '#' that follows a blank.
std::string_view WithoutComment(std::string_view line) {
  if (line.starts_with('#')) return {};
  for (size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '#' && (line[i - 1] == ' ' || line[i - 1] == '\t')) return Trim(line.substr(0, i));
  }
  return line;
}

std::string PublicOf(const std::string& secret_z85) {
  char pub[kZ85KeyChars + 1] = {};
  if (zmq_curve_public(pub, secret_z85.c_str()) != 0) {
    throw Error(ErrorCode::kInternal, std::string("zmq_curve_public failed: ") + zmq_strerror(zmq_errno()));
  }
  return std::string(pub, kZ85KeyChars);
}

void RequireKey(std::string_view key, const char* what) {
  if (!IsZ85Key(key)) {
    throw Error(ErrorCode::kInvalidArgument, std::string(what) + " is " + WhyNotKey(key));
  }
}

// Writes all of `text` to a descriptor created by CreateExclusive, then fsyncs it.
void WriteAllAndSync(int fd, const std::filesystem::path& path, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(ErrorCode::kIo, "writing " + Quote(path) + ": " + std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) throw Error(ErrorCode::kIo, "fsync " + Quote(path) + ": " + std::strerror(errno));
}

int CreateExclusive(const std::filesystem::path& path, mode_t mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) {
    int err = errno;
    if (err == EEXIST) {
      throw Error(ErrorCode::kInvalidArgument, Quote(path) + " already exists; refusing to overwrite a key file");
    }
    throw Error(err == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo,
                "cannot create " + Quote(path) + ": " + std::strerror(err));
  }
  // The umask may have removed bits; set exactly the mode we mean.
  if (::fchmod(fd, mode) != 0) {
    int err = errno;
    ::close(fd);
    ::unlink(path.c_str());
    throw Error(ErrorCode::kIo, "chmod " + Quote(path) + ": " + std::strerror(err));
  }
  return fd;
}

// Parses a key file's text, then wipes it (it may hold a secret key), also
// when parsing throws.
KeyFile ParseAndWipe(const std::filesystem::path& path, std::string& text) {
  struct Wipe {
    std::string& text;
    ~Wipe() { std::memset(text.data(), 0, text.size()); }
  } wipe{text};
  return ParseKeyFile(path, text);
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

bool IsZ85Key(std::string_view key) {
  if (key.size() != kZ85KeyChars) return false;
  // Every char in the alphabet, and every 5-char group a value below 2^32
  // (otherwise it is not the encoding of 4 bytes).
  for (size_t g = 0; g < kZ85KeyChars; g += 5) {
    uint64_t value = 0;
    for (size_t i = g; i < g + 5; ++i) {
      size_t digit = kZ85Alphabet.find(key[i]);
      if (digit == std::string_view::npos) return false;
      value = value * 85 + digit;
    }
    if (value > UINT32_MAX) return false;
  }
  std::string z(key);
  uint8_t bytes[32];
  return zmq_z85_decode(bytes, z.c_str()) != nullptr;
}

KeyFile ParseKeyFile(const std::filesystem::path& path, std::string_view text) {
  KeyFile keys;
  int line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view raw = text.substr(pos, (nl == std::string_view::npos ? text.size() : nl) - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++line_no;
    std::string_view line = WithoutComment(Trim(raw));
    if (line.empty()) continue;
    const std::string where = Quote(path) + ":" + std::to_string(line_no);

    // A known name before '=' makes a setting; else a line of 40 chars
    // without blanks is a bare key ('=' is a Z85 character), valid or not;
    // else a blank-free name before '=' is an unknown one; anything else is
    // a bare key of the wrong length.
    std::string_view name, value;
    size_t eq = line.find('=');
    std::string_view before_eq = eq == std::string_view::npos ? line : Trim(line.substr(0, eq));
    if (eq != std::string_view::npos && (before_eq == "public-key" || before_eq == "secret-key" || before_eq == "role")) {
      name = before_eq;
      value = Trim(line.substr(eq + 1));
      if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
    } else if (eq != std::string_view::npos && before_eq.find_first_of(" \t") == std::string_view::npos &&
               !before_eq.empty() && line.size() != kZ85KeyChars) {
      throw Error(ErrorCode::kBadFormat, where + ": unknown name '" + std::string(before_eq) +
                                             "' (expected public-key, secret-key or role)");
    } else {
      name = "public-key";
      value = line;
    }
    std::optional<std::string>* slot = &keys.public_z85;
    int* slot_line = &keys.public_line;
    if (name == "secret-key") {
      slot = &keys.secret_z85;
      slot_line = &keys.secret_line;
    } else if (name == "role") {
      slot = &keys.role;
      slot_line = &keys.role_line;
    }
    if (*slot) {
      throw Error(ErrorCode::kBadFormat, where + ": a second " + std::string(name) + " (the first is on line " +
                                             std::to_string(*slot_line) + ")");
    }
    if (name != "role" && !IsZ85Key(value)) {
      throw Error(ErrorCode::kBadFormat, where + ": " + std::string(name) + " is " + WhyNotKey(value));
    }
    *slot = std::string(value);
    *slot_line = line_no;
  }
  return keys;
}

KeyFile ReadKeyFile(const std::filesystem::path& path) {
  RawFile raw = ReadSmallFile(path, "key file");
  return ParseAndWipe(path, raw.text);
}

CurveKeyPair GenerateCurveKeyPair() {
  RequireCurve();
  char pub[kZ85KeyChars + 1] = {};
  char sec[kZ85KeyChars + 1] = {};
  if (zmq_curve_keypair(pub, sec) != 0) {
    throw Error(ErrorCode::kInternal, std::string("zmq_curve_keypair failed: ") + zmq_strerror(zmq_errno()));
  }
  CurveKeyPair keys{std::string(pub, kZ85KeyChars), std::string(sec, kZ85KeyChars)};
  std::memset(sec, 0, sizeof(sec));
  return keys;
}

void WriteKeyPair(const std::filesystem::path& dir, const std::string& name, const CurveKeyPair& keys) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    throw Error(ErrorCode::kInvalidArgument, "keypair name '" + name + "' must be a plain file name");
  }
  if (EndsWith(name, ".pub") || EndsWith(name, ".secret")) {
    throw Error(ErrorCode::kInvalidArgument, "keypair name '" + name +
                                                 "' must not end in .pub or .secret (NAME.pub and NAME.secret "
                                                 "are added)");
  }
  RequireKey(keys.public_z85, "the public key");
  RequireKey(keys.secret_z85, "the secret key");
  if (PublicOf(keys.secret_z85) != keys.public_z85) {
    throw Error(ErrorCode::kMismatch, "the public key is not the one the secret key yields");
  }
  const std::filesystem::path pub_path = dir / (name + ".pub");
  const std::filesystem::path sec_path = dir / (name + ".secret");
  // Refuse before creating anything, so a refusal leaves both files as they were.
  for (const auto& p : {pub_path, sec_path}) {
    std::error_code ec;
    if (std::filesystem::exists(std::filesystem::symlink_status(p, ec))) {
      throw Error(ErrorCode::kInvalidArgument, Quote(p) + " already exists; refusing to overwrite a key file");
    }
  }

  // O_EXCL closes the race with another writer; if the second create loses
  // it, the first file (which we made) is removed again.
  Fd sec_fd;
  sec_fd.fd = CreateExclusive(sec_path, 0600);
  Fd pub_fd;
  try {
    pub_fd.fd = CreateExclusive(pub_path, 0644);
    WriteAllAndSync(sec_fd.fd, sec_path,
                    "# zkfleet CURVE secret key: keep private (mode 0600); its public half is in " + name +
                        ".pub\npublic-key = " + keys.public_z85 + "\nsecret-key = " + keys.secret_z85 + "\n");
    WriteAllAndSync(pub_fd.fd, pub_path,
                    "# zkfleet CURVE public key (its secret half is in " + name + ".secret)\npublic-key = " +
                        keys.public_z85 + "\n");
  } catch (...) {
    ::unlink(sec_path.c_str());
    if (pub_fd.fd >= 0) ::unlink(pub_path.c_str());
    throw;
  }
  // Make the new directory entries durable too (best effort).
  Fd dir_fd;
  dir_fd.fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd.fd >= 0) (void)::fsync(dir_fd.fd);
}

CurveKeyPair ReadSecretKeyFile(const std::filesystem::path& path) {
  RawFile raw = ReadSmallFile(path, "secret key file");
  const KeyFile keys = ParseAndWipe(path, raw.text);
  if (keys.role) {
    throw Error(ErrorCode::kInvalidArgument,
                "secret key file " + Quote(path) + ":" + std::to_string(keys.role_line) +
                    ": a role line; roles are given by the broker's allow-list (its clients/NAME.pub), not by a "
                    "peer's own key file");
  }
  if (!keys.secret_z85) {
    if (keys.public_z85) {
      // The commonest mistake: NAME.pub where NAME.secret belongs.
      throw Error(ErrorCode::kInvalidArgument,
                  "secret key file " + Quote(path) +
                      " holds only a public key: give this peer's NAME.secret (zkctl keygen writes NAME.pub and "
                      "NAME.secret)");
    }
    throw Error(ErrorCode::kBadFormat, "secret key file " + Quote(path) + " has no 'secret-key = <z85>' line");
  }
  // Only a file that does hold a secret is judged by its mode.
  if ((raw.mode & 0077) != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "secret key file " + Quote(path) + " is accessible by group or others (mode " + ModeOctal(raw.mode) +
                    "); refusing to use it: chmod 600 " + Quote(path));
  }
  if (!keys.public_z85) {
    throw Error(ErrorCode::kBadFormat, "secret key file " + Quote(path) + " has no 'public-key = <z85>' line");
  }
  std::string derived = PublicOf(*keys.secret_z85);
  if (derived != *keys.public_z85) {
    throw Error(ErrorCode::kMismatch, "secret key file " + Quote(path) + ": public-key (line " +
                                          std::to_string(keys.public_line) +
                                          ") is not the public half of its secret-key (which is " + derived + ")");
  }
  return CurveKeyPair{*keys.public_z85, *keys.secret_z85};
}

std::string ReadPublicKeyFile(const std::filesystem::path& path) {
  RawFile raw = ReadSmallFile(path, "public key file");
  const KeyFile keys = ParseAndWipe(path, raw.text);
  if (keys.secret_z85) {
    // Another peer's secret (broker.secret as --broker-public-key) must never
    // be copied to this host: refuse it rather than use its public half.
    throw Error(ErrorCode::kInvalidArgument,
                "public key file " + Quote(path) +
                    " holds a secret key: give the peer's NAME.pub instead (a secret key stays on the host it "
                    "belongs to; if this one was copied here, remove the copy)");
  }
  if (!keys.public_z85) {
    throw Error(ErrorCode::kBadFormat, "public key file " + Quote(path) + std::string(kNoKey));
  }
  return *keys.public_z85;
}

void ConfigureCurveServer(zmq::socket_t& socket, const CurveKeyPair& server, const char* zap_domain) {
  RequireCurve();
  RequireKey(server.public_z85, "the server's public key");
  RequireKey(server.secret_z85, "the server's secret key");
  socket.set(zmq::sockopt::zap_domain, zap_domain);
  socket.set(zmq::sockopt::curve_server, 1);
  socket.set(zmq::sockopt::curve_publickey, server.public_z85);
  socket.set(zmq::sockopt::curve_secretkey, server.secret_z85);
}

void ConfigureCurveClient(zmq::socket_t& socket, const CurveKeyPair& mine, const std::string& server_public_z85) {
  RequireCurve();
  RequireKey(mine.public_z85, "the client's public key");
  RequireKey(mine.secret_z85, "the client's secret key");
  RequireKey(server_public_z85, "the server's public key");
  socket.set(zmq::sockopt::curve_serverkey, server_public_z85);
  socket.set(zmq::sockopt::curve_publickey, mine.public_z85);
  socket.set(zmq::sockopt::curve_secretkey, mine.secret_z85);
}

ClientSecurity ClientSecurity::Load(bool plaintext, const std::string& secret_key_file,
                                   const std::string& broker_public_file) {
  ClientSecurity security;
  security.plaintext = plaintext;
  if (plaintext) return security;
  if (secret_key_file.empty() || broker_public_file.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                "CURVE is on by default: give --curve-secret-key (this peer's NAME.secret, from zkctl keygen) and "
                "--broker-public-key (the broker's NAME.pub), or --insecure-plaintext on a trusted network");
  }
  security.mine = ReadSecretKeyFile(secret_key_file);
  // One file, or one per broker endpoint: FILE,FILE,...
  size_t start = 0;
  while (start <= broker_public_file.size()) {
    const size_t comma = std::min(broker_public_file.find(',', start), broker_public_file.size());
    const std::string file = broker_public_file.substr(start, comma - start);
    if (file.empty()) {
      throw Error(ErrorCode::kInvalidArgument, "--broker-public-key \"" + broker_public_file +
                                                   "\": an empty entry (a list is FILE,FILE,... in --broker's order)");
    }
    security.broker_public_z85.push_back(ReadPublicKeyFile(file));
    start = comma + 1;
  }
  return security;
}

void ClientSecurity::CheckFits(size_t endpoints) const {
  if (plaintext || broker_public_z85.size() == 1 || broker_public_z85.size() == endpoints) return;
  throw Error(ErrorCode::kInvalidArgument,
              "--broker-public-key names " + std::to_string(broker_public_z85.size()) + " keys for " +
                  std::to_string(endpoints) +
                  " broker endpoints: give one key (brokers sharing a key pair) or one per endpoint, in --broker's "
                  "order");
}

void ClientSecurity::Apply(zmq::socket_t& socket, size_t index) const {
  if (plaintext) return;
  if (broker_public_z85.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "no --broker-public-key: CURVE needs the broker's public key");
  }
  const size_t key = broker_public_z85.size() == 1 ? 0 : index;
  if (key >= broker_public_z85.size()) CheckFits(index + 1);  // throws, in words
  ConfigureCurveClient(socket, mine, broker_public_z85[key]);
}

}  // namespace zkfleet::fleet
