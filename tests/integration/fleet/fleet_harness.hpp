// Test harness for the multi-process fleet tests: starts the real binaries on
// 127.0.0.1 with free ports, captures their logs, and always kills them:
// children get PR_SET_PDEATHSIG(SIGKILL) (they die with the test process, even
// on a ctest timeout) and their own process group, killed in ~Process.
//
// Thread-safety: a Fleet and its Processes belong to the test's main thread.
// BrokerClients made by Fleet::Client() are one-thread objects.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "testutil/child_process.hpp"
#include "testutil/test_support.hpp"
#include "zkfleet/client/broker_client.hpp"

namespace fleet_test {

using namespace std::chrono_literals;

using zkfleet::testing::FreePort;
using zkfleet::testing::ReadFile;
using Process = zkfleet::testing::ChildProcess;

std::string Fixture(const std::string& name);  // tests/fixtures/<name>
std::string BinaryPath(const std::string& tool);  // build/cmd/<tool>/<tool>

// Runs a command to completion (stdout+stderr into `output`); exit code.
int RunCommand(const std::vector<std::string>& argv, std::string* output = nullptr);

// One broker and its workers in a temporary directory.
class Fleet {
 public:
  // The client identity of Client() and Zkctl() (unless args name another):
  // the name of their CURVE key, an admin, in plaintext mode their declared id.
  static constexpr const char* kClientId = "fleet-test";
  // Every fleet has CURVE keys in dir()/keys (made at construction): the
  // broker's, a worker key "fleet-worker" (used by every worker), and client
  // keys "fleet-test" (admin), "alice", "bob" (submit), "watcher" (observe),
  // all in the broker's allow-lists (dir()/keys/allow) — plus "stranger"
  // (submit role, in no allow-list). A broker started with
  // --insecure-plaintext turns the whole fleet plaintext.
  // `heartbeat_ms` goes to the broker and every worker (--heartbeat-ms); a
  // peer is declared gone after 3 silent intervals.
  explicit Fleet(const std::string& test_name, int heartbeat_ms = kHeartbeatMs);
  // Kills every process; removes the directory unless the test failed (the
  // logs stay for the post-mortem).
  ~Fleet();

  // Starts zkbroker on this fleet's ports with its journal in
  // broker_data_dir() (unless `extra_args` names another --data-dir), so a
  // broker started again resumes from it.
  // `slot`: which of the broker addresses (SetBrokerSlots) it binds.
  Process& StartBroker(std::vector<std::string> extra_args = {}, int slot = 0);
  // The same zkbroker command, without waiting for it to serve (a broker
  // expected to refuse to start, or a standby).
  Process& LaunchBroker(std::vector<std::string> extra_args = {}, int slot = 0);
  // Brokers on etcd at addresses of their own: `n` pairs of ports, broker i
  // binding pair i; client_endpoint() and worker_endpoint() then list every
  // pair's, so clients, zkctl and workers follow the leader.
  void SetBrokerSlots(int n);
  // zkworker with --broker (every slot's worker endpoint, unless `args`
  // name one), the worker key and a key-check cache in this fleet.
  Process& StartWorker(const std::string& worker_id, std::vector<std::string> args);
  // Waits until the broker lists `worker_id` as READY.
  void WaitWorkerReady(const std::string& worker_id, std::chrono::milliseconds timeout = 20s);

  std::unique_ptr<zkfleet::client::internal::BrokerClient> Client(const zkfleet::fleet::SocketLimits& limits = {},
                                                       const std::string& key_name = kClientId);
  zkfleet::proto::StatusReply Status();
  // zkctl with --broker and the "fleet-test" key filled in (unless args name
  // a --curve-secret-key); exit code, output captured.
  int Zkctl(std::vector<std::string> args, std::string* output);
  // zkctl's connection arguments for client key `key_name`: --broker and the
  // CURVE options (or --insecure-plaintext).
  std::vector<std::string> ZkctlConnection(const std::string& key_name = kClientId) const;
  // The security of a client or worker using key `key_name`.
  zkfleet::fleet::ClientSecurity Security(const std::string& key_name = kClientId) const;
  std::string key_dir() const { return dir_ + "/keys"; }
  std::string allow_dir() const { return key_dir() + "/allow"; }
  std::string SecretKeyFile(const std::string& name) const { return key_dir() + "/" + name + ".secret"; }
  std::string broker_public_key() const { return key_dir() + "/broker.pub"; }
  bool plaintext() const { return plaintext_; }

  const std::string& dir() const { return dir_; }
  std::string broker_data_dir() const { return dir_ + "/broker-data"; }
  // Every slot's endpoint, comma-separated (one, unless SetBrokerSlots).
  std::string client_endpoint() const { return Endpoints(client_ports_); }
  std::string worker_endpoint() const { return Endpoints(worker_ports_); }
  zmq::context_t& context() { return context_; }

  static constexpr int kHeartbeatMs = 100;
  int heartbeat_ms() const { return heartbeat_ms_; }

 private:
  std::string dir_;
  int broker_starts_ = 0;
  bool plaintext_ = false;
  int heartbeat_ms_;
  static std::string Endpoints(const std::vector<int>& ports);
  std::vector<int> client_ports_;  // one per broker slot
  std::vector<int> worker_ports_;
  zmq::context_t context_;
  std::vector<std::unique_ptr<Process>> processes_;  // destroyed (killed) with the Fleet
};

// A generated circuit large enough that one CPU proof with one thread takes
// over a second in this build (bn128, domain 2^16 or 2^17 in a release build
// on the 2-core CI machine: 1.3-2.8 s; smaller in a slower sanitizer build),
// sized by timing proofs of a 2^14 circuit, made once per build directory with zkfleet-dev
// gen-circuit + setup --insecure and snarkjs' verification key, and shared by
// every case (in any process) that asks for it: build/.../test-cache/. Empty
// paths (and a test failure) when it could not be made.
struct SlowCircuit {
  std::string zkey;     // circuit.zkey
  std::string witness;  // witness.wtns (satisfies it)
  std::string vk;       // verification_key.json
  bool ok() const { return !zkey.empty(); }
};
SlowCircuit GetSlowCircuit();

// Every job's result as `client` receives them, by job_seq, until `count`
// came or `timeout` (scaled on sanitizer builds) passed; a failure each for
// a second result of one job, for results missing, and for a result copy the
// client dropped (ExpectNoResultCopies: no broker restart in its callers).
std::map<uint64_t, zkfleet::proto::JobResult> CollectResults(zkfleet::client::internal::BrokerClient& client,
                                                             size_t count, std::chrono::seconds timeout);

// Fails unless `client` dropped no JobResult copy: no job's result came to it
// twice. BrokerClient drops a repeated JobResult before Receive() and
// NextJobResult() return it (after a reconnection its re-AWAITs may be
// answered again), so a test that counts the results it gets can never see a
// second one; only this count can. Listens `settle` first, keeping whatever
// arrives for later calls, so that a copy sent right after the last result
// is counted too. For a broker that was not restarted: with a restart, a
// test bounds duplicate_results_dropped() itself and says why.
void ExpectNoResultCopies(zkfleet::client::internal::BrokerClient& client,
                          std::chrono::milliseconds settle = std::chrono::milliseconds(0));

// Verifies proof/public JSON with snarkjs against `vk_path`; true on "OK".
// A failure (with the reason, e.g. "snarkjs not found at ...") otherwise.
bool SnarkjsVerifies(const std::string& vk_path, const std::string& proof_json, const std::string& public_json,
                     const std::string& scratch_dir);

// The same for many proofs in one node process (tests/tools/snarkjs_verify_batch.mjs):
// each case's JSON is written under `dir` as NAME.proof.json and
// NAME.public.json. A failure, with the reason, for each proof that does not
// verify and for a batch that could not run. Returns how many verified.
struct ProofToVerify {
  std::string name;  // unique among the cases (e.g. the job_seq)
  std::string vk_path;
  std::string proof_json;
  std::string public_json;
};
size_t SnarkjsVerifyBatch(const std::vector<ProofToVerify>& proofs, const std::string& dir);

// The "processing ..." lines of a worker log, as (priority name, job_seq, partition).
struct Processed {
  std::string priority;
  uint64_t job_seq;
  uint32_t partition;
};
std::vector<Processed> ProcessingLines(const std::string& log);

// Waits until the broker's journal counts `attempts` started attempts for
// item (job_seq, partition) (read with `zkctl journal`, read-only): a test
// that kills a worker "mid-proof" must first know its STARTED arrived, or
// the lease is not an attempt yet.
bool WaitForAttempts(Fleet& fleet, uint64_t job_seq, uint32_t partition, uint32_t attempts,
                     std::chrono::milliseconds timeout);

// Starts worker `id` with ZKFLEET_FAULT_INJECT set to `inject` ("" = unset)
// in its environment only.
Process& StartWorkerWithFaults(Fleet& fleet, const std::string& id, const std::string& inject,
                               std::vector<std::string> args);

// A worker key `name` more in the broker's worker allow-list (read at the
// broker's start, or on SIGHUP); its secret key at fleet.SecretKeyFile(name).
// Workers of one key are one owner to the broker (its strikes, its
// opinions): the fleet's own workers share "fleet-worker".
void AddWorkerKey(Fleet& fleet, const std::string& name);

// The value of `series` (name{labels} exactly as exported) in a Prometheus
// text-format body; -1 when absent.
double SampleValue(const std::string& body, const std::string& series);

// The same on the /metrics of 127.0.0.1:port.
double Sample(int port, const std::string& series);

// Sample(), polled until it reads `expected` (at most 5 s, stretched on
// sanitizer builds): a worker sends a result before it updates its counters,
// so a client can hold the result a moment before /metrics shows it.
double SampleWhen(int port, const std::string& series, double expected);

}  // namespace fleet_test
