#include "zkfleet/broker/zap_handler.hpp"

#include <cstring>

#include <spdlog/spdlog.h>

#include "zkfleet/common/error.hpp"

namespace zkfleet::broker {

namespace {

constexpr size_t kMaxRequestFrames = 16;  // ZAP 1.0 needs at most 8 (PLAIN)

size_t KindIndex(PeerKind kind) { return kind == PeerKind::kWorker ? 0 : 1; }

std::string_view View(const zmq::message_t& m) { return std::string_view(static_cast<const char*>(m.data()), m.size()); }

// ZMTP metadata: per property, 1-byte name length, name, 4-byte big-endian
// value length, value.
void AppendProperty(std::string& out, std::string_view name, std::string_view value) {
  out.push_back(static_cast<char>(name.size()));
  out.append(name);
  uint32_t n = static_cast<uint32_t>(value.size());
  out.push_back(static_cast<char>((n >> 24) & 0xff));
  out.push_back(static_cast<char>((n >> 16) & 0xff));
  out.push_back(static_cast<char>((n >> 8) & 0xff));
  out.push_back(static_cast<char>(n & 0xff));
  out.append(value);
}

// Printable form of a string from the wire, for logs.
std::string Printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 64)) out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  if (s.size() > 64) out += "...";
  return out;
}

}  // namespace

const char* ZapDomain(PeerKind endpoint) {
  return endpoint == PeerKind::kWorker ? kWorkerZapDomain : kClientZapDomain;
}

std::optional<PeerKind> EndpointForZapDomain(std::string_view domain) {
  if (domain == kWorkerZapDomain) return PeerKind::kWorker;
  if (domain == kClientZapDomain) return PeerKind::kClient;
  return std::nullopt;
}

const char* RejectReasonName(RejectReason reason) {
  switch (reason) {
    case RejectReason::kUnknownKey: return "unknown_key";
    case RejectReason::kWrongEndpoint: return "wrong_endpoint";
    case RejectReason::kMechanism: return "mechanism";
  }
  return "unknown";
}

struct ZapHandler::Verdict {
  std::string status_code;  // "200", "400", "500"
  std::string status_text;
  std::string user_id;
  std::string metadata;
};

ZapHandler::ZapHandler(zmq::context_t& context, PeerAllowList allow_list, ZapOptions options)
    : socket_(context, zmq::socket_type::rep), allow_list_(std::move(allow_list)), options_(options) {
  socket_.set(zmq::sockopt::linger, 0);
  try {
    socket_.bind(kZapEndpoint);
  } catch (const zmq::error_t& e) {
    throw Error(ErrorCode::kInvalidArgument, std::string("ZAP handler: cannot bind ") + kZapEndpoint + ": " +
                                                 e.what() + " (is another ZAP handler bound in this context?)");
  }
  spdlog::info("ZAP handler: {} worker keys, {} client keys allowed{}", allow_list_.count(PeerKind::kWorker),
               allow_list_.count(PeerKind::kClient),
               options_.allow_plaintext ? "; plaintext (NULL/PLAIN) connections accepted as anonymous" : "");
}

ZapHandler::~ZapHandler() {
  // Unbinding an inproc endpoint frees its name at once; a close alone frees
  // it only when the socket is reaped, so a handler made next in the same
  // context (a standby's, then the leader's) could not bind it.
  try {
    socket_.unbind(kZapEndpoint);
  } catch (const zmq::error_t&) {
  }
}

void ZapHandler::Reload(PeerAllowList allow_list) {
  allow_list_ = std::move(allow_list);
  spdlog::info("ZAP handler: allow-list reloaded: {} worker keys, {} client keys",
               allow_list_.count(PeerKind::kWorker), allow_list_.count(PeerKind::kClient));
}

uint64_t ZapHandler::rejected(PeerKind endpoint, RejectReason reason) const {
  return rejected_[KindIndex(endpoint)][static_cast<size_t>(reason)];
}

uint64_t ZapHandler::accepted(PeerKind endpoint) const { return accepted_[KindIndex(endpoint)]; }

size_t ZapHandler::HandleAll() {
  size_t n = 0;
  while (HandleOne()) ++n;
  return n;
}

bool ZapHandler::HandleOne() {
  std::vector<zmq::message_t> frames;
  zmq::message_t first;
  if (!socket_.recv(first, zmq::recv_flags::dontwait)) return false;
  bool more = first.more();
  frames.push_back(std::move(first));
  while (more) {
    zmq::message_t part;
    (void)socket_.recv(part);  // the rest of a multipart message is already here
    more = part.more();
    if (frames.size() < kMaxRequestFrames) frames.push_back(std::move(part));
  }

  Verdict verdict;
  std::string request_id;
  // version, request id, domain, address, identity, mechanism, credentials...
  if (frames.size() < 6 || View(frames[0]) != "1.0") {
    ++other_rejections_;
    if (frames.size() >= 2) request_id = std::string(View(frames[1]));
    verdict.status_code = "500";
    verdict.status_text = "malformed ZAP request";
    spdlog::error("ZAP handler: malformed request ({} frames, version '{}'); answered 500", frames.size(),
                  Printable(View(frames[0])));
  } else {
    request_id = std::string(View(frames[1]));
    std::vector<zmq::message_t> credentials;
    for (size_t i = 6; i < frames.size(); ++i) credentials.push_back(std::move(frames[i]));
    verdict = Decide(View(frames[2]), View(frames[3]), View(frames[5]), credentials);
  }

  socket_.send(zmq::buffer(std::string_view("1.0")), zmq::send_flags::sndmore);
  socket_.send(zmq::buffer(request_id), zmq::send_flags::sndmore);
  socket_.send(zmq::buffer(verdict.status_code), zmq::send_flags::sndmore);
  socket_.send(zmq::buffer(verdict.status_text), zmq::send_flags::sndmore);
  socket_.send(zmq::buffer(verdict.user_id), zmq::send_flags::sndmore);
  socket_.send(zmq::buffer(verdict.metadata), zmq::send_flags::none);
  return true;
}

ZapHandler::Verdict ZapHandler::Decide(std::string_view domain, std::string_view address, std::string_view mechanism,
                                       const std::vector<zmq::message_t>& credentials) {
  Verdict v;
  std::optional<PeerKind> endpoint = EndpointForZapDomain(domain);
  if (!endpoint) {
    ++other_rejections_;
    if (ShouldLog("domain|" + std::string(domain))) {
      spdlog::error("ZAP handler: refused a {} handshake from {} on ZAP domain '{}', which is neither {} nor {} "
                    "(a socket in the broker's context is not wired for authentication)",
                    Printable(mechanism), Printable(address), Printable(domain), kWorkerZapDomain, kClientZapDomain);
    }
    v.status_code = "400";
    v.status_text = "unknown ZAP domain";
    return v;
  }
  const char* endpoint_name = PeerKindName(*endpoint);

  auto reject = [&](RejectReason reason, const std::string& log_key, const std::string& detail) {
    CountRejection(*endpoint, reason);
    if (ShouldLog(std::string(endpoint_name) + "|" + log_key)) {
      spdlog::warn("ZAP handler: refused {} on the {} endpoint from {}: {} (logged at most once per {} s for this key)", detail,
                   endpoint_name, Printable(address), RejectReasonName(reason),
                   std::chrono::duration_cast<std::chrono::seconds>(options_.log_interval).count());
    }
    v.status_code = "400";
    v.status_text = RejectReasonName(reason);
  };

  if (mechanism == "CURVE") {
    if (credentials.size() != 1 || credentials[0].size() != 32) {
      ++other_rejections_;
      v.status_code = "500";
      v.status_text = "malformed CURVE credentials";
      return v;
    }
    CurveKey key;
    std::memcpy(key.data(), credentials[0].data(), key.size());
    std::string z85 = EncodeZ85Key(key);
    const AllowedPeer* peer = allow_list_.Find(key);
    if (peer == nullptr) {
      reject(RejectReason::kUnknownKey, z85, "CURVE key " + z85 + " (in no allow-list)");
      return v;
    }
    if (peer->kind != *endpoint) {
      reject(RejectReason::kWrongEndpoint, z85,
             "CURVE key " + z85 + " (" + PeerKindName(peer->kind) + " '" + peer->name + "', allowed only on the " +
                 PeerKindName(peer->kind) + " endpoint)");
      return v;
    }
    ++accepted_[KindIndex(*endpoint)];
    spdlog::debug("ZAP handler: {} '{}' ({}) authenticated from {}", endpoint_name, peer->name, z85,
                  Printable(address));
    v.status_code = "200";
    v.status_text = "OK";
    v.user_id = peer->name;
    AppendProperty(v.metadata, "Kind", PeerKindName(peer->kind));
    if (peer->kind == PeerKind::kClient) AppendProperty(v.metadata, "Role", RoleName(peer->role));
    return v;
  }

  bool plaintext = mechanism == "NULL" || mechanism == "PLAIN";
  if (plaintext && options_.allow_plaintext) {
    ++accepted_[KindIndex(*endpoint)];
    v.status_code = "200";
    v.status_text = "OK";
    v.user_id = "anonymous";
    AppendProperty(v.metadata, "Kind", endpoint_name);
    if (*endpoint == PeerKind::kClient) AppendProperty(v.metadata, "Role", RoleName(Role::kAdmin));
    return v;
  }
  std::string m = Printable(mechanism);
  reject(RejectReason::kMechanism, "mech|" + m + "|" + std::string(address),
         "a " + m + " handshake" + (plaintext ? " (plaintext is off; CURVE is required)" : " (only CURVE is supported)"));
  return v;
}

void ZapHandler::CountRejection(PeerKind endpoint, RejectReason reason) {
  ++rejected_[KindIndex(endpoint)][static_cast<size_t>(reason)];
  if (on_rejected_) on_rejected_(endpoint, reason);
}

bool ZapHandler::ShouldLog(const std::string& what) {
  auto now = std::chrono::steady_clock::now();
  auto it = last_logged_.find(what);
  if (it != last_logged_.end()) {
    if (now - it->second < options_.log_interval) return false;
    it->second = now;
    ++rejection_logs_;
    return true;
  }
  if (last_logged_.size() >= options_.max_log_entries) {
    std::erase_if(last_logged_, [&](const auto& e) { return now - e.second >= options_.log_interval; });
  }
  if (last_logged_.size() >= options_.max_log_entries) {
    // Many distinct keys within one interval (a scan): summarise instead.
    ++suppressed_;
    if (now - last_suppressed_summary_ >= options_.log_interval) {
      spdlog::warn("ZAP handler: {} refused handshakes from more than {} distinct keys/addresses were not logged "
                   "individually in the last {} s",
                   suppressed_, options_.max_log_entries,
                   std::chrono::duration_cast<std::chrono::seconds>(options_.log_interval).count());
      last_suppressed_summary_ = now;
      suppressed_ = 0;
      ++rejection_logs_;
    }
    return false;
  }
  last_logged_.emplace(what, now);
  ++rejection_logs_;
  return true;
}

}  // namespace zkfleet::broker
