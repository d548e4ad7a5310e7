// A minimal blocking HTTP/1.1 GET client for tests (metrics endpoints and
// Prometheus's HTTP API): one request per connection, "Connection: close",
// reads to EOF. No chunked decoding beyond what these servers send; the body
// is returned as received after the headers.
//
// Thread-safety: free functions, no shared state.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>

namespace zkfleet::testing {

struct HttpResponse {
  int status = 0;           // 0: no connection or no valid reply
  std::string body;
  std::string error;        // why status is 0
};

// Decodes a "Transfer-Encoding: chunked" body.
inline std::string Unchunk(const std::string& raw) {
  std::string out;
  size_t pos = 0;
  while (pos < raw.size()) {
    size_t eol = raw.find("\r\n", pos);
    if (eol == std::string::npos) break;
    size_t size = std::stoul(raw.substr(pos, eol - pos), nullptr, 16);
    if (size == 0) break;
    out.append(raw, eol + 2, size);
    pos = eol + 2 + size + 2;
  }
  return out;
}

inline HttpResponse HttpGet(int port, const std::string& path, std::chrono::milliseconds timeout =
                                                                    std::chrono::seconds(5)) {
  HttpResponse response;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    response.error = std::string("connect: ") + std::strerror(errno);
    close(fd);
    return response;
  }
  std::string request = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                        "\r\nConnection: close\r\n\r\n";
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
    response.error = "send failed";
    close(fd);
    return response;
  }
  std::string raw;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  char buffer[16384];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      response.error = "timed out";
      break;
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) break;  // EOF: the server closed after the reply
    raw.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  size_t header_end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || header_end == std::string::npos) {
    if (response.error.empty()) response.error = "not an HTTP reply: '" + raw.substr(0, 80) + "'";
    return response;
  }
  response.status = std::stoi(raw.substr(9, 3));
  std::string headers = raw.substr(0, header_end);
  response.body = raw.substr(header_end + 4);
  for (char& c : headers) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (headers.find("transfer-encoding: chunked") != std::string::npos) response.body = Unchunk(response.body);
  return response;
}

}  // namespace zkfleet::testing
