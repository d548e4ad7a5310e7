// A witness store for tests of witnesses by reference: nginx (Debian's
// /usr/sbin/nginx, or $ZKFLEET_TEST_NGINX) serving a directory over HTTP and
// HTTPS on 127.0.0.1, with a certificate from a test CA made here by the
// openssl CLI, plus a few fixed misbehaving locations:
//   /error/...   always 500 (transient: retried, then retryable elsewhere)
//   /away/...    302 to http://169.254.169.254/ (off any allow-list)
//   /slow/...    the files under root()/slow, sent at 256 KiB/s
// A missing nginx or openssl is a test failure (CI installs both), never a
// skip. The server dies with the test (ChildProcess).
//
// Thread-safety: one test thread.
#pragma once

#include <memory>
#include <string>

#include "testutil/child_process.hpp"

namespace zkfleet::testing {

class WitnessStore {
 public:
  // Everything lives under `dir` (created): www/ (the served root), the CA
  // and server certificates, nginx's config and logs. Starts nginx and waits
  // until both ports answer; on failure ok() is false and error() says why.
  explicit WitnessStore(const std::string& dir);
  ~WitnessStore();

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  std::string root() const { return dir_ + "/www"; }
  std::string ca_pem() const { return dir_ + "/ca.pem"; }
  std::string http_prefix() const { return "http://127.0.0.1:" + std::to_string(http_port_) + "/"; }
  std::string https_prefix() const { return "https://127.0.0.1:" + std::to_string(https_port_) + "/"; }
  std::string file_prefix() const { return "file://" + root() + "/"; }
  // Writes `bytes` to root()/name (subdirectories made as needed).
  void Put(const std::string& name, const std::string& bytes) const;
  std::string Log() const;

 private:
  std::string dir_;
  int http_port_ = 0;
  int https_port_ = 0;
  std::string error_;
  std::unique_ptr<ChildProcess> nginx_;
};

}  // namespace zkfleet::testing
