#include "zkfleet/broker/ingress_guard.hpp"

#include <arpa/inet.h>
#include <linux/tcp.h>  // struct tcp_info with tcpi_bytes_received (glibc's lacks it)
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include <spdlog/spdlog.h>

#include "zkfleet/common/error.hpp"
#include "zkfleet/metrics/broker_metrics.hpp"

namespace zkfleet::broker {
namespace {

using SteadyClock = std::chrono::steady_clock;

// How fast a peer could fill a connection's headroom (loopback with CURVE
// decrypts at about 1 GB/s in one libzmq I/O thread; 4 GB/s leaves room):
// a connection is looked at again before it could have crossed its bound.
constexpr double kFastestPeerBytesPerSecond = 4e9;
constexpr auto kShortestLook = std::chrono::milliseconds(1);
constexpr auto kLongestLook = std::chrono::milliseconds(50);
constexpr auto kIdleLook = std::chrono::seconds(1);

// What the kernel has received on TCP connection `fd` since it opened.
bool KernelReceived(int fd, uint64_t* received) {
  struct tcp_info info {};
  socklen_t length = sizeof info;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) return false;
  if (length < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof info.tcpi_bytes_received) return false;
  *received = info.tcpi_bytes_received;
  return true;
}

std::string PeerAddress(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return "unknown address";
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
    inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
    return std::string(text) + ":" + std::to_string(ntohs(v4->sin_port));
  }
  if (address.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
    inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
    // (Appended, not "[" + ... : GCC 12 warns falsely on that, -Wrestrict.)
    std::string out(1, '[');
    out.append(text).append("]:").append(std::to_string(ntohs(v6->sin6_port)));
    return out;
  }
  return "a non-IP address";
}

const char* EndpointName(PeerKind endpoint) { return endpoint == PeerKind::kWorker ? "workers" : "clients"; }

int MakeEventFd(const char* what) {
  int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) throw Error(ErrorCode::kInternal, std::string("ingress guard: eventfd (") + what + "): " + std::strerror(errno));
  return fd;
}

void Signal(int fd) {
  uint64_t one = 1;
  while (write(fd, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

}  // namespace

uint64_t IngressGuard::WireBytes(size_t payload_bytes, bool curve) {
  const uint64_t body = payload_bytes + (curve ? 33 : 0);
  return body + (body > 255 ? 9 : 2);
}

IngressGuard::IngressGuard(zmq::context_t& context, zmq::socket_t& clients, zmq::socket_t& workers,
                           IngressBounds bounds, bool curve, metrics::BrokerMetrics* metrics)
    : bounds_(bounds), curve_(curve), metrics_(metrics) {
  auto monitor = [&](zmq::socket_t& router, zmq::socket_t& pair, const char* name) {
    const std::string address = "inproc://zkbroker-monitor-" + std::string(name) + "-" +
                                std::to_string(reinterpret_cast<uintptr_t>(this));
    constexpr int kEvents = ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_CLOSED |
                            ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL;
    if (zmq_socket_monitor(router.handle(), address.c_str(), kEvents) != 0) {
      throw Error(ErrorCode::kInternal, "cannot monitor the broker's " + std::string(name) + " socket: " +
                                            zmq_strerror(zmq_errno()));
    }
    pair = zmq::socket_t(context, zmq::socket_type::pair);
    pair.set(zmq::sockopt::linger, 0);
    pair.connect(address);
  };
  monitor(clients, client_monitor_, "clients");
  monitor(workers, worker_monitor_, "workers");
  stop_fd_ = MakeEventFd("stop");
  if (metrics_) metrics_->SetHeldBytes(0);
  thread_ = std::thread([this] { Run(); });
}

IngressGuard::~IngressGuard() {
  Signal(stop_fd_);
  thread_.join();
  close(stop_fd_);
}

void IngressGuard::Taken(int fd, uint64_t wire_bytes) {
  if (fd < 0) return;
  std::lock_guard lock(mutex_);
  taken_[fd] += wire_bytes;
}

std::vector<HandshakeFailure> IngressGuard::TakeHandshakeFailures() {
  std::deque<HandshakeFailure> taken = failures_.TakeAll();
  return {std::make_move_iterator(taken.begin()), std::make_move_iterator(taken.end())};
}

void IngressGuard::Run() {
  zmq::pollitem_t items[3] = {
      {client_monitor_.handle(), 0, ZMQ_POLLIN, 0},
      {worker_monitor_.handle(), 0, ZMQ_POLLIN, 0},
      {nullptr, stop_fd_, ZMQ_POLLIN, 0},
  };
  for (;;) {
    const auto next = CutRequested(LookAtConnections());
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - SteadyClock::now());
    wait = std::max(wait, std::chrono::milliseconds(kShortestLook));
    try {
      zmq::poll(items, 3, wait);
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) return;
      if (e.num() != EINTR) spdlog::error("ingress guard: poll failed: {}", e.what());
      continue;
    }
    if (items[2].revents & ZMQ_POLLIN) return;
    if (items[0].revents & ZMQ_POLLIN) OnMonitorEvents(client_monitor_, PeerKind::kClient);
    if (items[1].revents & ZMQ_POLLIN) OnMonitorEvents(worker_monitor_, PeerKind::kWorker);
  }
}

void IngressGuard::OnMonitorEvents(zmq::socket_t& monitor, PeerKind endpoint) {
  zmq::message_t event;
  zmq::message_t address;
  while (monitor.recv(event, zmq::recv_flags::dontwait)) {
    if (event.more()) (void)monitor.recv(address, zmq::recv_flags::none);
    if (event.size() < 6) continue;
    uint16_t id = 0;
    uint32_t value = 0;
    std::memcpy(&id, event.data(), sizeof id);
    std::memcpy(&value, static_cast<const char*>(event.data()) + sizeof id, sizeof value);
    const int fd = static_cast<int>(value);
    switch (id) {
      case ZMQ_EVENT_ACCEPTED: {
        Watched watched{endpoint};
        watched.measurable = KernelReceived(fd, &watched.received);
        if (!watched.measurable && !warned_unmeasurable_) {
          warned_unmeasurable_ = true;
          spdlog::warn("the {} endpoint has connections that are not TCP: what they send before the broker reads "
                       "it cannot be bounded there (--max-held-bytes applies to TCP connections)",
                       endpoint == PeerKind::kWorker ? "worker" : "client");
        }
        watched.serial = ++accepted_;
        watched_[fd] = watched;
        break;
      }
      case ZMQ_EVENT_DISCONNECTED:
      case ZMQ_EVENT_CLOSED: {
        watched_.erase(fd);
        std::lock_guard lock(mutex_);
        taken_.erase(fd);
        break;
      }
      case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
      case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL: {
        failures_.Post({endpoint, address.to_string()});
        break;
      }
      default:
        break;
    }
  }
}

SteadyClock::time_point IngressGuard::LookAtConnections() {
  const auto now = SteadyClock::now();
  auto next = now + kIdleLook;
  struct Held {
    int fd;
    uint64_t bytes;
  };
  std::vector<Held> held;
  held.reserve(watched_.size());
  uint64_t total = 0;
  std::vector<std::pair<int, uint64_t>> over;  // fd, held: over their connection's bound
  for (auto& [fd, watched] : watched_) {
    if (!watched.measurable) continue;
    if (watched.next_look <= now) {
      // The kernel's count is read under the lock: everything the loop has
      // credited by then was received before it, so the clamp below only
      // drops credit left by a connection that had this fd before. (Read
      // before the lock, a Taken() landing between the two was clamped away
      // for good and the connection's estimate drifted up.)
      std::lock_guard lock(mutex_);
      uint64_t received = 0;
      if (!KernelReceived(fd, &received)) continue;  // closing; its event follows
      uint64_t& taken = taken_[fd];
      taken = std::min(taken, received);
      watched.received = received;
      watched.held = received - taken;
    }
    const uint64_t bytes = watched.held;
    const uint64_t bound =
        watched.endpoint == PeerKind::kWorker ? bounds_.per_worker_connection : bounds_.per_client_connection;
    if (watched.next_look <= now) {
      const double headroom = bytes < bound ? static_cast<double>(bound - bytes) : 0.0;
      auto look_in = std::chrono::duration_cast<SteadyClock::duration>(
          std::chrono::duration<double>(headroom / kFastestPeerBytesPerSecond));
      watched.next_look = now + std::clamp<SteadyClock::duration>(look_in, kShortestLook, kLongestLook);
    }
    next = std::min(next, watched.next_look);
    if (bytes > bound) {
      over.emplace_back(fd, bytes);
      continue;
    }
    held.push_back({fd, bytes});
    total += bytes;
  }
  for (const auto& [fd, bytes] : over) {
    auto it = watched_.find(fd);
    Cut(fd, it->second, bytes, false);
    watched_.erase(it);
  }
  // All connections together: cut the ones holding most until the rest fit.
  if (total > bounds_.total) {
    std::sort(held.begin(), held.end(), [](const Held& a, const Held& b) { return a.bytes > b.bytes; });
    for (const Held& h : held) {
      if (total <= bounds_.total) break;
      auto it = watched_.find(h.fd);
      Cut(h.fd, it->second, h.bytes, true);
      watched_.erase(it);
      total -= h.bytes;
    }
  }
  held_bytes_.store(total);
  if (metrics_) metrics_->SetHeldBytes(total);
  return next;
}

void IngressGuard::CutConnection(int fd, PeerKind endpoint, std::string peer_ip, std::string why) {
  if (fd < 0) return;
  std::lock_guard lock(mutex_);
  for (const CutRequest& request : cut_requests_) {
    if (request.fd == fd) return;  // asked already (a flood of messages)
  }
  cut_requests_.push_back({fd, endpoint, std::move(peer_ip), std::move(why)});
}

SteadyClock::time_point IngressGuard::CutRequested(SteadyClock::time_point next) {
  const auto now = SteadyClock::now();
  std::vector<CutRequest> fresh;
  {
    std::lock_guard lock(mutex_);
    fresh.swap(cut_requests_);
  }
  for (CutRequest& request : fresh) {
    auto it = watched_.find(request.fd);
    // Closed already, or the fd is another peer's now: nothing to cut.
    if (it == watched_.end() || it->second.endpoint != request.endpoint) continue;
    if (!request.peer_ip.empty() && PeerAddress(request.fd).find(request.peer_ip) == std::string::npos) continue;
    const bool pending = std::any_of(cuts_.begin(), cuts_.end(), [&](const CutRequest& c) {
      return c.fd == request.fd && c.serial == it->second.serial;
    });
    if (pending) continue;
    request.serial = it->second.serial;
    request.due = now + kCutGrace;
    cuts_.push_back(std::move(request));
  }
  std::vector<CutRequest> waiting;
  for (CutRequest& cut : cuts_) {
    if (cut.due > now) {
      next = std::min(next, cut.due);
      waiting.push_back(std::move(cut));
      continue;
    }
    auto it = watched_.find(cut.fd);
    if (it == watched_.end() || it->second.serial != cut.serial) continue;  // closed meanwhile
    const std::string address = PeerAddress(cut.fd);
    if (shutdown(cut.fd, SHUT_RDWR) != 0) continue;
    watched_.erase(it);
    connections_cut_.fetch_add(1);
    if (metrics_) metrics_->ConnectionCut(EndpointName(cut.endpoint));
    spdlog::warn("closed a {} connection from {}: {}", cut.endpoint == PeerKind::kWorker ? "worker" : "client",
                 address, cut.why);
  }
  cuts_ = std::move(waiting);
  // A request may come while the guard sleeps: look again soon enough.
  return std::min(next, now + kCutGrace);
}

void IngressGuard::Cut(int fd, const Watched& watched, uint64_t held, bool over_total) {
  uint64_t received = 0;
  // The fd may have been closed and given to a new connection since it was
  // measured: that one has received less.
  if (!KernelReceived(fd, &received) || received < watched.received) return;
  const std::string address = PeerAddress(fd);
  if (shutdown(fd, SHUT_RDWR) != 0) return;
  connections_cut_.fetch_add(1);
  if (metrics_) metrics_->ConnectionCut(EndpointName(watched.endpoint));
  const auto now = SteadyClock::now();
  auto& next_log = next_cut_log_[watched.endpoint == PeerKind::kWorker ? 1 : 0];
  if (now < next_log) return;
  next_log = now + std::chrono::seconds(1);
  const uint64_t bound = over_total ? bounds_.total
                                    : (watched.endpoint == PeerKind::kWorker ? bounds_.per_worker_connection
                                                                             : bounds_.per_client_connection);
  spdlog::warn("cut a {} connection from {}: it had sent {} bytes the broker had not read yet, over {} ({} bytes, "
               "{}); a message is buffered whole before the broker sees it, so a larger one cannot be taken "
               "(logged at most once a second per port)",
               watched.endpoint == PeerKind::kWorker ? "worker" : "client", address, held,
               over_total ? "the bound for all connections together" : "the bound for one connection", bound,
               over_total ? "--max-held-bytes"
                          : (watched.endpoint == PeerKind::kWorker ? "two Envelopes at --max-message-bytes"
                                                                   : "--max-held-bytes-per-connection"));
}

}  // namespace zkfleet::broker
