// IngressGuard against real libzmq: two CURVE ROUTERs on TCP, a DEALER
// peer, and this thread reading like the broker loop does (calling Taken()).
// - The accounting is exact: after thousands of frames of every size class
//   (around the 255-byte header step too), what the guard says the
//   connection holds is the handshake's few hundred bytes, not a drift.
// - A multipart message far over the bound is cut before it is buffered
//   whole, the peer's next message still arrives, and nothing was read of
//   the cut one.
// - A connection on the worker socket has the (smaller) worker bound.
#include <zmq.h>

#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <zmq.hpp>

#include "zkfleet/broker/ingress_guard.hpp"
#include "new_keys.hpp"

namespace zkfleet::broker {
namespace {

using namespace std::chrono_literals;

// Two CURVE ROUTERs (no ZAP: any client key is let in) watched by a guard.
class GuardedRouters {
 public:
  explicit GuardedRouters(IngressBounds bounds)
      : clients_(context_, zmq::socket_type::router), workers_(context_, zmq::socket_type::router) {
    for (zmq::socket_t* router : {&clients_, &workers_}) {
      router->set(zmq::sockopt::curve_server, 1);
      router->set(zmq::sockopt::curve_secretkey, server_.sec);
      router->set(zmq::sockopt::linger, 0);
    }
    guard_ = std::make_unique<IngressGuard>(context_, clients_, workers_, bounds, true, nullptr);
    clients_.bind("tcp://127.0.0.1:*");
    workers_.bind("tcp://127.0.0.1:*");
  }
  ~GuardedRouters() { guard_.reset(); }

  // A DEALER peer of the client (or worker) ROUTER.
  zmq::socket_t Peer(bool worker) {
    zmq::socket_t dealer(context_, zmq::socket_type::dealer);
    Keys keys = NewKeys();
    dealer.set(zmq::sockopt::curve_serverkey, server_.pub);
    dealer.set(zmq::sockopt::curve_publickey, keys.pub);
    dealer.set(zmq::sockopt::curve_secretkey, keys.sec);
    dealer.set(zmq::sockopt::linger, 0);
    dealer.connect((worker ? workers_ : clients_).get(zmq::sockopt::last_endpoint));
    return dealer;
  }

  // Reads one message like BrokerServer::DrainSocket and tells the guard;
  // returns its frames after the routing id, or none after `timeout`.
  std::vector<zmq::message_t> Read(bool worker, std::chrono::milliseconds timeout) {
    zmq::socket_t& router = worker ? workers_ : clients_;
    zmq::pollitem_t item{router.handle(), 0, ZMQ_POLLIN, 0};
    std::vector<zmq::message_t> frames;
    if (zmq::poll(&item, 1, timeout) == 0) return frames;
    zmq::message_t identity;
    EXPECT_TRUE(router.recv(identity, zmq::recv_flags::none));
    uint64_t wire = 0;
    bool more = identity.more();
    while (more) {
      zmq::message_t frame;
      EXPECT_TRUE(router.recv(frame, zmq::recv_flags::none));
      more = frame.more();
      wire += IngressGuard::WireBytes(frame.size(), true);
      frames.push_back(std::move(frame));
    }
    if (!frames.empty()) guard_->Taken(zmq_msg_get(frames.front().handle(), ZMQ_SRCFD), wire);
    return frames;
  }

  IngressGuard& guard() { return *guard_; }

 private:
  zmq::context_t context_;
  Keys server_ = NewKeys();
  zmq::socket_t clients_;
  zmq::socket_t workers_;
  std::unique_ptr<IngressGuard> guard_;
};

// Waits until `ok` holds, up to `timeout`.
template <typename Ok>
bool WaitFor(Ok ok, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (!ok()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

TEST(IngressGuard, WireBytesFollowZmtpFraming) {
  // ZMTP: 1 flags byte + 1 size byte up to 255, else 8 size bytes.
  EXPECT_EQ(IngressGuard::WireBytes(0, false), 2u);
  EXPECT_EQ(IngressGuard::WireBytes(255, false), 257u);
  EXPECT_EQ(IngressGuard::WireBytes(256, false), 265u);
  // CURVE wraps each frame in a MESSAGE command of 33 more bytes.
  EXPECT_EQ(IngressGuard::WireBytes(222, true), 257u);
  EXPECT_EQ(IngressGuard::WireBytes(223, true), 265u);
}

TEST(IngressGuard, HonestTrafficLeavesOnlyTheHandshakeHeld) {
  IngressBounds bounds{16 << 20, 16 << 20, 64 << 20};
  GuardedRouters routers(bounds);
  zmq::socket_t peer = routers.Peer(false);
  std::mt19937 random(7);
  const size_t sizes[] = {0, 1, 221, 222, 223, 255, 256, 4096, 70000, 300000};
  size_t messages = 0;
  for (; messages < 1000; ++messages) {
    // Read as the broker does, one message behind the sender at most (a
    // burst of them would be held, and this bound is small).
    const int parts = 1 + static_cast<int>(random() % 3);
    for (int p = 0; p < parts; ++p) {
      std::string frame(sizes[random() % std::size(sizes)], 'x');
      peer.send(zmq::buffer(frame), p + 1 < parts ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
    ASSERT_EQ(routers.Read(false, 10s).size(), static_cast<size_t>(parts)) << "message " << messages;
  }
  // Everything sent was read: the connection holds its handshake only.
  // A per-frame error of one byte would show as 2,000 or more.
  EXPECT_TRUE(WaitFor([&] { return routers.guard().held_bytes() < 1024; }, 5s))
      << "held " << routers.guard().held_bytes() << " bytes after " << messages << " messages were read";
  EXPECT_EQ(routers.guard().connections_cut(), 0u);
}

TEST(IngressGuard, HugeMultipartMessageIsCutBeforeItIsWhole) {
  IngressBounds bounds{8 << 20, 8 << 20, 64 << 20};
  GuardedRouters routers(bounds);
  zmq::socket_t peer = routers.Peer(false);
  peer.send(zmq::str_buffer("hello"), zmq::send_flags::none);
  ASSERT_FALSE(routers.Read(false, 10s).empty());

  // 400 frames of 4 MiB (1.6 GiB), all pointing at one buffer so the sender
  // does not hold them either.
  static const std::string chunk(4 << 20, 'w');
  peer.send(zmq::str_buffer("envelope"), zmq::send_flags::sndmore);
  for (int i = 0; i < 400; ++i) {
    zmq::message_t frame(const_cast<char*>(chunk.data()), chunk.size(), [](void*, void*) {});
    peer.send(frame, i + 1 < 400 ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
  EXPECT_TRUE(WaitFor([&] { return routers.guard().connections_cut() == 1; }, 20s));
  // The peer reconnects; its next message arrives, the cut one never does.
  peer.send(zmq::str_buffer("after"), zmq::send_flags::none);
  std::vector<zmq::message_t> next = routers.Read(false, 10s);
  ASSERT_EQ(next.size(), 1u) << "the cut message arrived, or nothing did";
  EXPECT_EQ(next[0].to_string(), "after");
}

// Sends one message of `frames` frames of 1 MiB (one shared buffer: the
// sender holds none of them).
void SendMebibytes(zmq::socket_t& peer, int frames) {
  static const std::string chunk(1 << 20, 'w');
  for (int i = 0; i < frames; ++i) {
    zmq::message_t frame(const_cast<char*>(chunk.data()), chunk.size(), [](void*, void*) {});
    peer.send(frame, i + 1 < frames ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
}

TEST(IngressGuard, WorkerConnectionsHaveTheWorkerBound) {
  IngressBounds bounds{1ull << 30, 2 << 20, 2ull << 30};
  GuardedRouters routers(bounds);
  zmq::socket_t worker = routers.Peer(true);
  zmq::socket_t client = routers.Peer(false);
  // 8 MiB: under the client bound.
  SendMebibytes(client, 8);
  ASSERT_EQ(routers.Read(false, 10s).size(), 8u);
  // 128 MiB: far over the worker bound; cut long before it is whole.
  SendMebibytes(worker, 128);
  EXPECT_TRUE(WaitFor([&] { return routers.guard().connections_cut() == 1; }, 10s));
  EXPECT_TRUE(routers.Read(true, 500ms).empty()) << "the worker's oversized message was read";
}

TEST(IngressGuard, TotalBoundCutsTheConnectionHoldingMost) {
  // Each connection is under its own bound; together they are over the total.
  IngressBounds bounds{512 << 20, 512 << 20, 24 << 20};
  GuardedRouters routers(bounds);
  zmq::socket_t small = routers.Peer(false);
  zmq::socket_t large = routers.Peer(false);
  // 10 MiB, whole, left unread: held.
  SendMebibytes(small, 10);
  ASSERT_TRUE(WaitFor([&] { return routers.guard().held_bytes() >= (10u << 20); }, 10s))
      << "held " << routers.guard().held_bytes();
  // 256 MiB more: the total crosses 24 MiB while this one holds more than 14.
  SendMebibytes(large, 256);
  EXPECT_TRUE(WaitFor([&] { return routers.guard().connections_cut() == 1; }, 10s));
  // The small one was left whole; the large one never arrives.
  EXPECT_EQ(routers.Read(false, 10s).size(), 10u);
  EXPECT_TRUE(routers.Read(false, 500ms).empty()) << "the large message was read";
  EXPECT_EQ(routers.guard().connections_cut(), 1u);
}

}  // namespace
}  // namespace zkfleet::broker
