// A real etcd cluster for the tests: `members` etcd processes (Debian's
// etcd-server) on 127.0.0.1 with free ports, each with its data directory on
// disk under `dir` (durability is what the tests check: not a tmpfs), short
// Raft timeouts (heartbeat 100 ms, election 1 s) so a lost member is replaced
// within the tests' patience. Members are ChildProcesses: they die with the
// test. Without the etcd binary the constructor skips the test loudly
// (GTEST_SKIP from the caller: see available()). With `tls`, the members
// serve their clients over TLS with client-certificate authentication
// (--cert-file, --key-file, --trusted-ca-file, --client-cert-auth; certificates
// made by openssl in `dir`/tls: a CA, the members' with IP 127.0.0.1, and a
// client's), and etcdctl is given the client's.
//
// Thread-safety: one thread owns a cluster.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "testutil/child_process.hpp"

namespace zkfleet::testing {

class EtcdCluster {
 public:
  // Whether the etcd binary is installed (scripts/install-deps.sh installs it).
  static bool available();

  EtcdCluster(const std::string& dir, int members = 3, bool tls = false);
  ~EtcdCluster();

  // Starts every member and waits until the cluster has a leader and takes
  // writes; false (with the members' logs in `why`) after `timeout`.
  bool Start(std::chrono::milliseconds timeout, std::string* why);

  int size() const { return static_cast<int>(members_.size()); }
  // "127.0.0.1:PORT" of each member's client URL.
  std::vector<std::string> endpoints() const;
  // "etcd://127.0.0.1:P1,127.0.0.1:P2,.../PREFIX".
  std::string Url(const std::string& prefix = "zkfleet/") const;

  // kill -9 of member `i`; Restart(i) starts it again on its data directory.
  void Kill(int i);
  void Restart(int i);
  void Stop(int i);    // SIGSTOP
  void Resume(int i);  // SIGCONT
  bool running(int i) const;
  // Waits until member `i` answers a linearizable read (it has joined the
  // quorum again); false after `timeout`.
  bool WaitHealthy(int i, std::chrono::milliseconds timeout) const;
  // The index of the member that is the Raft leader now (-1: none answered).
  int Leader() const;
  // etcdctl against the cluster; its exit code, output in `output`.
  int Etcdctl(const std::vector<std::string>& args, std::string* output) const;
  std::string Logs() const;

  // With tls: PEM files of the CA, and of a client certificate it signed.
  std::string tls_ca() const { return tls_dir_ + "/ca.pem"; }
  std::string tls_client_cert() const { return tls_dir_ + "/client.pem"; }
  std::string tls_client_key() const { return tls_dir_ + "/client.key"; }

 private:
  struct Member {
    std::string name;
    int client_port;
    int peer_port;
    std::string data_dir;
    std::string log;
    std::unique_ptr<ChildProcess> process;
    bool stopped = false;
  };
  void Launch(Member& member, bool initial);
  void MakeCertificates();
  // etcdctl with the cluster's TLS flags, for `endpoints` (comma-separated).
  std::vector<std::string> EtcdctlArgv(const std::string& endpoints) const;

  std::string dir_;
  bool tls_ = false;
  std::string tls_dir_;
  std::string initial_cluster_;
  std::vector<Member> members_;
};

// How many keys start with `prefix` (etcdctl get --prefix -w json's count);
// -1 when etcdctl fails.
int CountKeys(const EtcdCluster& cluster, const std::string& prefix);

}  // namespace zkfleet::testing
