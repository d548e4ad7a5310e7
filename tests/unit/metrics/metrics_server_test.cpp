// MetricsServer: /metrics, /ready, /healthz over real HTTP, errors naming the
// address, and immediate rebinding of the same port after a restart while a
// connection of the previous server is in TIME_WAIT (SO_REUSEADDR).
#include "zkfleet/metrics/metrics_server.hpp"

#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "unit/metrics/http_client.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/metrics/build_info.hpp"

namespace zkfleet::metrics {
namespace {

using testing::HttpGet;

TEST(MetricsServerTest, ServesMetricsWithBuildInfoOnAnyFreePort) {
  MetricsServer server;
  server.Listen("127.0.0.1:0");
  ASSERT_GT(server.port(), 0);
  auto reply = HttpGet(server.port(), "/metrics");
  ASSERT_EQ(reply.status, 200) << reply.error;
  EXPECT_NE(reply.body.find("# TYPE zkfleet_build_info gauge"), std::string::npos) << reply.body;
  std::string series = "zkfleet_build_info{commit=\"" + BuildCommit() + "\",version=\"" + BuildVersion() + "\"} 1";
  EXPECT_NE(reply.body.find(series), std::string::npos) << reply.body;
  EXPECT_FALSE(BuildVersion().empty());
  EXPECT_FALSE(BuildCommit().empty());
}

TEST(MetricsServerTest, ReadyFollowsReadinessAndHealthzAlwaysAnswers) {
  MetricsServer server;
  server.Listen("127.0.0.1:0");
  auto ready = HttpGet(server.port(), "/ready");
  EXPECT_EQ(ready.status, 503) << ready.error;
  EXPECT_EQ(ready.body, "starting\n");

  server.SetReadiness(true, "READY");
  ready = HttpGet(server.port(), "/ready");
  EXPECT_EQ(ready.status, 200);
  EXPECT_EQ(ready.body, "READY\n");

  server.SetReadiness(false, "DRAINING");
  ready = HttpGet(server.port(), "/ready");
  EXPECT_EQ(ready.status, 503);
  EXPECT_EQ(ready.body, "DRAINING\n");

  auto health = HttpGet(server.port(), "/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "ok\n");
  EXPECT_EQ(HttpGet(server.port(), "/nothing-here").status, 404);
}

TEST(MetricsServerTest, TwoServersInOneProcessKeepTheirOwnReadiness) {
  MetricsServer a;
  MetricsServer b;
  a.Listen("127.0.0.1:0");
  b.Listen("127.0.0.1:0");
  a.SetReadiness(true, "READY");
  b.SetReadiness(false, "LOADING");
  EXPECT_EQ(HttpGet(a.port(), "/ready").status, 200);
  EXPECT_EQ(HttpGet(b.port(), "/ready").body, "LOADING\n");
}

TEST(MetricsServerTest, ErrorsNameTheAddress) {
  MetricsServer first;
  first.Listen("127.0.0.1:0");
  std::string taken = "127.0.0.1:" + std::to_string(first.port());
  MetricsServer second;
  try {
    second.Listen(taken);
    FAIL() << "a second server bound " << taken;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find(taken), std::string::npos) << e.what();
  }
  EXPECT_FALSE(second.listening());
  EXPECT_THROW(second.Listen(""), Error);
  EXPECT_THROW(second.Listen("127.0.0.1:1,127.0.0.1:2"), Error);
  EXPECT_THROW(first.Listen("127.0.0.1:0"), Error);  // already listening
}

// main() may keep its MetricsServer in a static (it must outlive everything
// else): destroying it during exit must be clean.
TEST(MetricsServerDeathTest, StaticServerIsDestroyedCleanlyAtExit) {
  EXPECT_EXIT(
      {
        static MetricsServer server;
        server.Listen("127.0.0.1:0");
        server.SetReadiness(true, "READY");
        testing::HttpGet(server.port(), "/ready");
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

// The listening socket of this process bound to `port`, or -1.
int ListeningSocketOnPort(int port) {
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return -1;
  int found = -1;
  while (dirent* entry = readdir(dir)) {
    int fd = std::atoi(entry->d_name);
    if (fd <= 2) continue;
    sockaddr_in address{};
    socklen_t length = sizeof(address);
    int listening = 0;
    socklen_t opt_length = sizeof(listening);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0 || address.sin_family != AF_INET) continue;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &opt_length) != 0 || !listening) continue;
    if (ntohs(address.sin_port) == port) found = fd;
  }
  closedir(dir);
  return found;
}

TEST(MetricsServerTest, ListeningSocketHasSoReuseaddr) {
  MetricsServer server;
  server.Listen("127.0.0.1:0");
  int fd = ListeningSocketOnPort(server.port());
  ASSERT_GE(fd, 0) << "no listening socket on port " << server.port();
  int reuse = 0;
  socklen_t length = sizeof(reuse);
  ASSERT_EQ(getsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, &length), 0);
  EXPECT_NE(reuse, 0) << "civetweb no longer sets SO_REUSEADDR: a restarted process could not rebind at once";
}

// Connections in TIME_WAIT whose local port is `port` (/proc/net/tcp, state 06).
int TimeWaitOnLocalPort(int port) {
  std::ifstream table("/proc/net/tcp");
  std::string line;
  std::getline(table, line);  // header
  int count = 0;
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state;
    fields >> slot >> local >> remote >> state;
    if (state != "06") continue;
    int local_port = std::stoi(local.substr(local.find(':') + 1), nullptr, 16);
    if (local_port == port) ++count;
  }
  return count;
}

TEST(MetricsServerTest, RestartedServerRebindsAtOnceWhileAConnectionIsInTimeWait) {
  int port = 0;
  {
    MetricsServer old_server;
    old_server.Listen("127.0.0.1:0");
    port = old_server.port();
    // "Connection: close": the server closes first, so the server side of the
    // connection (local port = the metrics port) goes to TIME_WAIT.
    ASSERT_EQ(HttpGet(port, "/metrics").status, 200);
    for (int i = 0; i < 200 && TimeWaitOnLocalPort(port) == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_GT(TimeWaitOnLocalPort(port), 0) << "no TIME_WAIT on port " << port << ": the test proves nothing";
  }

  // Control: a socket without SO_REUSEADDR cannot bind the port now, so the
  // TIME_WAIT really is in the way.
  int plain = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int bound = bind(plain, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  int bind_errno = errno;
  close(plain);
  ASSERT_NE(bound, 0) << "plain bind succeeded: no TIME_WAIT blocking the port";
  ASSERT_EQ(bind_errno, EADDRINUSE);

  MetricsServer restarted;
  ASSERT_NO_THROW(restarted.Listen("127.0.0.1:" + std::to_string(port)));
  EXPECT_EQ(restarted.port(), port);
  EXPECT_EQ(HttpGet(port, "/metrics").status, 200);
}

}  // namespace
}  // namespace zkfleet::metrics
