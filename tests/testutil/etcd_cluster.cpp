#include "testutil/etcd_cluster.hpp"

#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace zkfleet::testing {
namespace {

constexpr const char* kEtcd = "/usr/bin/etcd";
constexpr const char* kEtcdctl = "/usr/bin/etcdctl";

}  // namespace

bool EtcdCluster::available() { return access(kEtcd, X_OK) == 0 && access(kEtcdctl, X_OK) == 0; }

EtcdCluster::EtcdCluster(const std::string& dir, int members, bool tls)
    : dir_(dir), tls_(tls), tls_dir_(dir + "/tls") {
  std::filesystem::create_directories(dir_);
  if (tls_) MakeCertificates();
  for (int i = 0; i < members; ++i) {
    Member member;
    member.name = "m" + std::to_string(i);
    member.client_port = FreePort();
    do {
      member.peer_port = FreePort();
    } while (member.peer_port == member.client_port);
    member.data_dir = dir_ + "/" + member.name + ".etcd";
    member.log = dir_ + "/" + member.name + ".log";
    if (!initial_cluster_.empty()) initial_cluster_ += ",";
    initial_cluster_ += member.name + "=http://127.0.0.1:" + std::to_string(member.peer_port);
    members_.push_back(std::move(member));
  }
}

void EtcdCluster::MakeCertificates() {
  std::filesystem::create_directories(tls_dir_);
  const std::string d = tls_dir_;
  auto run = [](const std::vector<std::string>& argv) {
    std::string output;
    if (RunProcess(argv, &output) != 0) {
      throw std::runtime_error("etcd test certificates: " + argv[0] + " " + argv[1] + " failed: " + output);
    }
  };
  const std::vector<std::string> ec = {"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"};
  auto req = [&](const std::string& name, const std::string& cn, std::vector<std::string> extra) {
    std::vector<std::string> argv = {"/usr/bin/openssl", "req"};
    argv.insert(argv.end(), ec.begin(), ec.end());
    argv.insert(argv.end(), {"-keyout", d + "/" + name + ".key", "-subj", "/CN=" + cn});
    argv.insert(argv.end(), extra.begin(), extra.end());
    run(argv);
  };
  req("ca", "zkfleet-test-ca", {"-x509", "-days", "2", "-out", d + "/ca.pem"});
  auto sign = [&](const std::string& name, const std::string& cn, const std::string& ext) {
    req(name, cn, {"-out", d + "/" + name + ".csr"});
    std::ofstream(d + "/" + name + ".ext") << ext;
    run({"/usr/bin/openssl", "x509", "-req", "-in", d + "/" + name + ".csr", "-CA", d + "/ca.pem", "-CAkey",
         d + "/ca.key", "-CAcreateserial", "-days", "2", "-out", d + "/" + name + ".pem", "-extfile",
         d + "/" + name + ".ext"});
  };
  sign("server", "127.0.0.1", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n");
  sign("client", "zkfleet-broker", "extendedKeyUsage=clientAuth\n");
}

std::vector<std::string> EtcdCluster::EtcdctlArgv(const std::string& endpoints) const {
  std::vector<std::string> argv = {kEtcdctl, "--endpoints=" + endpoints};
  if (tls_) {
    argv.insert(argv.end(), {"--cacert=" + tls_ca(), "--cert=" + tls_client_cert(), "--key=" + tls_client_key()});
  }
  return argv;
}

EtcdCluster::~EtcdCluster() {
  for (Member& member : members_) {
    if (member.process && member.stopped) member.process->Signal(SIGCONT);
    member.process.reset();
  }
  // The members' data (a 64 MB preallocated WAL each) is kept only for a
  // test that failed, to read; a passing run leaves nothing behind.
  if (!::testing::Test::HasFailure()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
}

void EtcdCluster::Launch(Member& member, bool initial) {
  const std::string client = (tls_ ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(member.client_port);
  const std::string peer = "http://127.0.0.1:" + std::to_string(member.peer_port);
  std::vector<std::string> argv = {kEtcd,
                                   "--name", member.name,
                                   "--data-dir", member.data_dir,
                                   "--listen-client-urls", client,
                                   "--advertise-client-urls", client,
                                   "--listen-peer-urls", peer,
                                   "--initial-advertise-peer-urls", peer,
                                   "--initial-cluster", initial_cluster_,
                                   "--initial-cluster-token", "zkfleet-test",
                                   "--initial-cluster-state", initial ? "new" : "existing",
                                   "--heartbeat-interval", "100",
                                   "--election-timeout", "1000",
                                   // The bounds docs/operations.md asks of a broker's cluster.
                                   "--max-txn-ops", "1024",
                                   "--max-request-bytes", "4194304",
                                   "--logger", "zap",
                                   "--log-level", "warn"};
  if (tls_) {
    argv.insert(argv.end(), {"--cert-file", tls_dir_ + "/server.pem", "--key-file", tls_dir_ + "/server.key",
                             "--trusted-ca-file", tls_ca(), "--client-cert-auth"});
  }
  member.process = std::make_unique<ChildProcess>(argv, member.log);
  member.stopped = false;
}

bool EtcdCluster::Start(std::chrono::milliseconds timeout, std::string* why) {
  for (Member& member : members_) Launch(member, true);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::string output;
    if (Etcdctl({"put", "zkfleet-test-cluster-up", "1"}, &output) == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  *why = "the etcd cluster took no write within " + std::to_string(timeout.count()) + " ms:\n" + Logs();
  return false;
}

std::vector<std::string> EtcdCluster::endpoints() const {
  std::vector<std::string> out;
  for (const Member& member : members_) out.push_back("127.0.0.1:" + std::to_string(member.client_port));
  return out;
}

std::string EtcdCluster::Url(const std::string& prefix) const {
  std::string url = "etcd://";
  for (const std::string& endpoint : endpoints()) url += (url.size() > 7 ? "," : "") + endpoint;
  return url + "/" + prefix;
}

void EtcdCluster::Kill(int i) {
  Member& member = members_.at(static_cast<size_t>(i));
  if (member.process) member.process->Kill9();
  member.process.reset();
  member.stopped = false;
}

void EtcdCluster::Restart(int i) {
  Member& member = members_.at(static_cast<size_t>(i));
  Kill(i);
  Launch(member, false);
}

void EtcdCluster::Stop(int i) {
  Member& member = members_.at(static_cast<size_t>(i));
  if (member.process) member.process->Signal(SIGSTOP);
  member.stopped = true;
}

void EtcdCluster::Resume(int i) {
  Member& member = members_.at(static_cast<size_t>(i));
  if (member.process) member.process->Signal(SIGCONT);
  member.stopped = false;
}

bool EtcdCluster::running(int i) const {
  const Member& member = members_.at(static_cast<size_t>(i));
  return member.process && !member.stopped;
}

bool EtcdCluster::WaitHealthy(int i, std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::string output;
    std::vector<std::string> argv = EtcdctlArgv(endpoints()[static_cast<size_t>(i)]);
    argv.insert(argv.end(), {"--command-timeout=1s", "endpoint", "health"});
    if (RunProcess(argv, &output) == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

int EtcdCluster::Leader() const {
  for (size_t i = 0; i < members_.size(); ++i) {
    if (!running(static_cast<int>(i))) continue;
    std::string output;
    std::vector<std::string> argv = EtcdctlArgv(endpoints()[i]);
    argv.insert(argv.end(), {"--command-timeout=1s", "endpoint", "status", "-w", "fields"});
    if (RunProcess(argv, &output) != 0) continue;
    // The member is the leader when its "MemberID" is the "Leader" it reports.
    auto field = [&](const std::string& name) {
      const size_t at = output.find("\"" + name + "\" : ");
      return at == std::string::npos ? std::string() : output.substr(at + name.size() + 5, output.find('\n', at) - at - name.size() - 5);
    };
    const std::string member = field("MemberID");
    if (!member.empty() && member == field("Leader")) return static_cast<int>(i);
  }
  return -1;
}

int EtcdCluster::Etcdctl(const std::vector<std::string>& args, std::string* output) const {
  std::string list;
  for (const std::string& endpoint : endpoints()) list += (list.empty() ? "" : ",") + endpoint;
  std::vector<std::string> argv = EtcdctlArgv(list);
  argv.push_back("--command-timeout=2s");
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, output);
}

std::string EtcdCluster::Logs() const {
  std::string logs;
  for (const Member& member : members_) {
    logs += "--- " + member.name + " (" + member.log + ")\n";
    if (member.process) logs += member.process->Log();
  }
  return logs;
}

int CountKeys(const EtcdCluster& cluster, const std::string& prefix) {
  std::string output;
  if (cluster.Etcdctl({"get", "--prefix", "--keys-only", "-w", "json", prefix}, &output) != 0) return -1;
  const size_t at = output.find("\"count\":");
  return at == std::string::npos ? 0 : std::atoi(output.c_str() + at + 8);
}

}  // namespace zkfleet::testing
