// Shared by the fetch tests: the bodies misbehaving_server.py serves, digests,
// and a Fetcher built from options in one line.
#pragma once

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "zkfleet/fetch/fetcher.hpp"
#include "zkfleet/fetch/sha256.hpp"

namespace zkfleet::fetch::testing {

inline constexpr uint64_t kBodySize = 256 * 1024;

// What misbehaving_server.py serves: bytes (i * 7 + shift) % 251.
inline std::string Body(uint64_t size = kBodySize, int shift = 3) {
  std::string out(size, '\0');
  for (uint64_t i = 0; i < size; ++i) out[i] = static_cast<char>((i * 7 + shift) % 251);
  return out;
}

inline std::string DigestOf(const std::string& bytes) {
  Sha256 sha;
  sha.Update({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  return sha.Finish();
}

// Options fast enough for tests: short back-off, a short stall limit.
inline FetchOptions QuickOptions(std::vector<std::string> allow) {
  FetchOptions o;
  o.allow = std::move(allow);
  o.connect_timeout = std::chrono::milliseconds(2000);
  o.low_speed_bytes_per_s = 1000;
  o.low_speed_time = std::chrono::seconds(1);
  o.total_timeout = std::chrono::seconds(20);
  o.max_attempts = 3;
  o.backoff_initial = std::chrono::milliseconds(10);
  o.backoff_max = std::chrono::milliseconds(40);
  return o;
}

// A fetch of `url` said to hold `expected` (its size and digest), into a
// buffer of that size that the result's `bytes` can be compared with.
struct Fetched {
  FetchResult result;
  std::string buffer;
};
inline Fetched FetchAs(Fetcher& fetcher, const std::string& url, const std::string& expected,
                       const std::atomic<bool>* cancel = nullptr) {
  Fetched out;
  out.buffer.assign(expected.size(), '\xee');
  FetchRequest request{url, expected.size(), DigestOf(expected)};
  out.result = fetcher.Fetch(request, {reinterpret_cast<uint8_t*>(out.buffer.data()), out.buffer.size()}, cancel);
  return out;
}

// Waits until something accepts TCP connections on 127.0.0.1:port.
inline bool WaitListening(int port, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    if (ok) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace zkfleet::fetch::testing
