// The BrokerCore tests' fixture (broker_core_*_test.cpp): BrokerCore
// without sockets, envelopes in, outbox out, over a real journal in a temporary
// directory; the core updates a BrokerMetrics (read back through
// MetricsServer::Collect, no HTTP) in every test but one. Also the helpers
// several of those files share (peers with keys, witnesses by reference,
// jobs from inputs) and the fixture of the tests with verification keys.
#pragma once

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include <gtest/gtest.h>

#include "unit/metrics/collected.hpp"
#include "zkfleet/broker/broker_core.hpp"
#include "zkfleet/broker/verification_keys.hpp"
#include "zkfleet/wire/input_json.hpp"
#include "zkfleet/wire/public_digest.hpp"
#include "zkfleet/fleet/sockets.hpp"
#include "zkfleet/metrics/broker_metrics.hpp"
#include "zkfleet/metrics/metrics_server.hpp"
#include "zkfleet/wire/unix_time.hpp"

namespace zkfleet::broker {

using std::chrono::milliseconds;

class BrokerCoreTest : public ::testing::Test {
 protected:
  BrokerCoreTest() { Make({}); }
  // Every move of every work item went by the table (job_table.hpp,
  // ItemNext), in every broker life of the test.
  void TearDown() override {
    CountInvalidMoves();
    EXPECT_EQ(invalid_item_moves_, 0u) << "a work item moved against its state table (the log names it)";
  }
  void CountInvalidMoves() {
    if (core_) invalid_item_moves_ += std::exchange(core_->counters().invalid_item_moves, 0);
  }
  ~BrokerCoreTest() override {
    core_.reset();
    journal_.reset();
    std::filesystem::remove_all(dir_);
  }

  // A fresh core on a fresh journal.
  void Make(BrokerOptions options, bool with_metrics = true) {
    options.heartbeat_interval = milliseconds(100);
    // These tests' workers send no real proofs (the verification tests set keys).
    if (!options.verification_keys) options.unverified_circuits.insert("*");
    options.liveness = 3;
    CountInvalidMoves();
    core_.reset();  // before the metrics and the journal it points to
    journal_.reset();
    std::filesystem::remove_all(dir_);
    options.journal.dir = dir_;
    options_ = options;
    journal_ = Journal::Open(options.journal);
    metrics_.reset();
    server_ = std::make_unique<metrics::MetricsServer>();
    if (with_metrics) metrics_ = std::make_unique<metrics::BrokerMetrics>(*server_);
    core_ = std::make_unique<BrokerCore>(options, *journal_, metrics_.get());
    now_ = Clock::time_point{} + std::chrono::hours(1);
  }

  // The server's end of a loop turn: the journal commits.
  void Commit() { journal_->Commit(); }

  // The broker process dies (what was not committed is lost) and starts
  // again on the same data directory.
  void Restart() {
    CountInvalidMoves();
    core_.reset();
    journal_.reset();
    journal_ = Journal::Open(options_.journal);
    core_ = std::make_unique<BrokerCore>(options_, *journal_, metrics_.get());
    leases_.clear();
  }

  // A counter or gauge (a histogram's count), -1 when the series is absent.
  double Metric(const std::string& name, const testing::LabelMap& labels = {}) const {
    return testing::ValueOf(server_->Collect(), name, labels);
  }
  double HistogramSum(const std::string& name, const testing::LabelMap& labels) const {
    auto series = testing::FindSeries(server_->Collect(), name, labels);
    return series ? series->histogram.sample_sum : -1;
  }

  std::vector<Outgoing> Take() {
    std::vector<Outgoing> out;
    out.swap(core_->outbox());
    return out;
  }

  void Ready(const std::string& identity, const std::string& id, std::vector<std::string> circuits, uint32_t credit,
             uint32_t capacity = 100) {
    proto::Envelope e;
    auto* ready = e.mutable_ready();
    ready->set_worker_id(id);
    for (auto& c : circuits) ready->add_circuits(c);
    ready->set_capacity(capacity);
    ready->set_state(proto::WORKER_STATE_READY);
    // Where these tests' witnesses by reference live.
    for (const char* prefix : {"https://store.internal/", "file:///mnt/witnesses/", "file:///srv/", "http://127.0.0.1:1/"}) {
      ready->add_fetch_prefixes(prefix);
    }
    core_->HandleWorker(identity, e, now_);
    if (credit > 0) Credit(identity, credit);
  }

  void Credit(const std::string& identity, uint32_t n) {
    proto::Envelope e;
    e.mutable_credit()->set_credits(n);
    core_->HandleWorker(identity, e, now_);
  }

  void Heartbeat(const std::string& identity, proto::WorkerState state) {
    proto::Envelope e;
    e.mutable_heartbeat()->set_state(state);
    core_->HandleWorker(identity, e, now_);
  }

  // An admin's UNDRAIN of `worker_id`: the state the broker answers with.
  proto::WorkerState UndrainAsAdmin(const std::string& worker_id) {
    proto::Envelope undrain;
    undrain.mutable_undrain_worker()->set_worker_id(worker_id);
    core_->HandleClient("admin", undrain, now_);
    auto out = Take();
    EXPECT_EQ(out.size(), 1u);
    if (out.size() != 1 || !out[0].envelope.has_undrain_worker_reply()) {
      ADD_FAILURE() << "no UNDRAIN reply";
      return proto::WORKER_STATE_UNSPECIFIED;
    }
    return out[0].envelope.undrain_worker_reply().state();
  }

  // Submits and returns the reply envelope(s) sent to `client` (a routing
  // identity; `client_id` is the client identity, "" = anonymous).
  std::vector<Outgoing> Submit(const std::string& client, const std::string& request_id, proto::Priority priority,
                               int partitions, const std::string& circuit = "c1", uint64_t correlation = 1,
                               const std::string& client_id = "", const std::string& witness_tag = "w") {
    proto::Envelope e;
    e.set_correlation_id(correlation);
    e.set_client_id(client_id);
    auto* submit = e.mutable_submit();
    submit->set_request_id(request_id);
    submit->set_circuit_id(circuit);
    submit->set_priority(priority);
    fleet::Frames frames;
    for (int p = 0; p < partitions; ++p) frames.push_back(fleet::FrameFromString(witness_tag + std::to_string(p)));
    for (const auto& frame : frames) submit->add_witness_bytes(frame.size());
    core_->HandleClient(client, e, now_, {}, std::move(frames));
    return Take();
  }

  // Submits these witnesses (circuit c1) from connection `client`; returns what was sent to it.
  std::vector<Outgoing> SubmitWitnesses(const std::string& client, const std::string& request_id,
                                        const std::vector<std::string>& witnesses, double deadline_unix_s = 0) {
    proto::Envelope e;
    e.set_correlation_id(1);
    auto* submit = e.mutable_submit();
    submit->set_request_id(request_id);
    submit->set_circuit_id("c1");
    fleet::Frames frames;
    for (const auto& witness : witnesses) frames.push_back(fleet::FrameFromString(witness));
    for (const auto& frame : frames) submit->add_witness_bytes(frame.size());
    submit->set_deadline_unix_s(deadline_unix_s);
    core_->HandleClient(client, e, now_, {}, std::move(frames));
    return Take();
  }

  // The worker reports it started proving the item.
  void Started(const std::string& identity, uint64_t seq, uint32_t partition) {
    proto::Envelope e;
    *e.mutable_started()->add_items() = Ref(seq, partition);
    core_->HandleWorker(identity, e, now_);
  }

  // The item with the lease it was last sent under (from Dispatch()).
  proto::WorkItemRef Ref(uint64_t seq, uint32_t partition) {
    proto::WorkItemRef ref;
    ref.set_job_seq(seq);
    ref.set_partition(partition);
    if (auto it = leases_.find({seq, partition}); it != leases_.end()) *ref.mutable_lease() = it->second.item().lease();
    return ref;
  }

  // JOBs in the outbox (dispatch runs first), as (identity, seq, partition).
  std::vector<std::tuple<std::string, uint64_t, uint32_t>> Dispatch() {
    core_->Dispatch(now_);
    std::vector<std::tuple<std::string, uint64_t, uint32_t>> jobs;
    for (auto& out : Take()) {
      if (out.envelope.has_job()) {
        const auto& job = out.envelope.job();
        jobs.emplace_back(out.identity, job.item().job_seq(), job.item().partition());
        leases_[{job.item().job_seq(), job.item().partition()}] = job;
      }
    }
    return jobs;
  }

  void Result(const std::string& identity, uint64_t seq, uint32_t partition, bool ok = true, bool retryable = false) {
    proto::Envelope e;
    auto* result = e.mutable_result();
    *result->mutable_item() = Ref(seq, partition);
    if (auto it = leases_.find({seq, partition}); it != leases_.end()) {
      result->set_circuit_id(it->second.circuit_id());
      result->set_request_id(it->second.request_id());
    }
    result->set_ok(ok);
    result->set_retryable(retryable);
    result->set_proof_json("proof-" + std::to_string(seq) + "-" + std::to_string(partition));
    result->set_error(ok ? "" : "boom");
    core_->HandleWorker(identity, e, now_);
  }

  // `client` AWAITs job `seq`: the results the core sends it at once.
  std::vector<proto::JobResult> Await(const std::string& client, uint64_t seq) {
    proto::Envelope await;
    await.mutable_await()->set_job_seq(seq);
    core_->HandleClient(client, await, now_);
    return ResultsTo(Take(), client);
  }

  static std::vector<proto::JobResult> ResultsTo(const std::vector<Outgoing>& out, const std::string& client) {
    std::vector<proto::JobResult> results;
    for (auto& o : out) {
      if (o.to == Outgoing::To::kClient && o.identity == client && o.envelope.has_job_result()) {
        results.push_back(o.envelope.job_result());
      }
    }
    return results;
  }

  std::string dir_ = ::testing::TempDir() + "zkfleet-broker-core-" + std::to_string(getpid()) + "-" +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name();
  BrokerOptions options_;
  std::unique_ptr<metrics::MetricsServer> server_;
  std::unique_ptr<metrics::BrokerMetrics> metrics_;
  std::unique_ptr<Journal> journal_;
  std::unique_ptr<BrokerCore> core_;
  uint64_t invalid_item_moves_ = 0;  // summed over the test's broker lives (CountInvalidMoves)
  Clock::time_point now_;
  std::map<std::pair<uint64_t, uint32_t>, proto::Job> leases_;  // last JOB sent per item
};

inline Peer KeyPeer(const std::string& name, Role role = Role::kSubmit) {
  Peer peer;
  peer.authenticated = true;
  peer.key_name = name;
  peer.role = role;
  return peer;
}

// Witnesses by reference.

inline proto::WitnessRef MakeRef(const std::string& url, uint64_t size, char fill = 'a') {
  proto::WitnessRef ref;
  ref.set_url(url);
  ref.set_size(size);
  ref.set_sha256(std::string(32, fill));
  return ref;
}

// A SUBMIT of references (no frames) from connection `client`; returns what was sent to it.
inline std::vector<Outgoing> SubmitRefs(BrokerCore& core, Clock::time_point now, const std::string& request_id,
                                 const std::vector<proto::WitnessRef>& refs, const std::vector<std::string>& digests = {},
                                 fleet::Frames frames = {}) {
  proto::Envelope e;
  e.set_correlation_id(1);
  auto* submit = e.mutable_submit();
  submit->set_request_id(request_id);
  submit->set_circuit_id("c1");
  for (const auto& ref : refs) *submit->add_witness_refs() = ref;
  for (const auto& digest : digests) submit->add_public_signals_sha256(digest);
  for (const auto& frame : frames) submit->add_witness_bytes(frame.size());
  core.HandleClient("cl", e, now, {}, std::move(frames));
  std::vector<Outgoing> out;
  out.swap(core.outbox());
  return out;
}

// Jobs from inputs.

// A worker that holds `circuits` and computes witnesses from inputs for `generates`.
inline void ReadyGenerating(BrokerCore& core, Clock::time_point now, const std::string& identity, const std::string& id,
                     const std::vector<std::string>& circuits, const std::vector<std::string>& generates,
                     uint32_t credit) {
  proto::Envelope e;
  auto* ready = e.mutable_ready();
  ready->set_worker_id(id);
  for (const auto& c : circuits) ready->add_circuits(c);
  for (const auto& c : generates) ready->add_generates(c);
  ready->set_capacity(100);
  ready->set_state(proto::WORKER_STATE_READY);
  core.HandleWorker(identity, e, now);
  if (credit > 0) {
    proto::Envelope more;
    more.mutable_credit()->set_credits(credit);
    core.HandleWorker(identity, more, now);
  }
}

// A SUBMIT of inputs (one input.json per partition, no frames) from
// connection "cl"; returns what was sent to it.
inline std::vector<Outgoing> SubmitInputs(BrokerCore& core, Clock::time_point now, const std::string& request_id,
                                   const std::vector<std::string>& inputs, const std::vector<std::string>& digests = {},
                                   fleet::Frames frames = {}, const std::vector<proto::WitnessRef>& refs = {},
                                   const std::string& circuit = "c1") {
  proto::Envelope e;
  e.set_correlation_id(1);
  auto* submit = e.mutable_submit();
  submit->set_request_id(request_id);
  submit->set_circuit_id(circuit);
  for (const auto& input : inputs) submit->add_inputs(input);
  for (const auto& digest : digests) submit->add_public_signals_sha256(digest);
  for (const auto& ref : refs) *submit->add_witness_refs() = ref;
  for (const auto& frame : frames) submit->add_witness_bytes(frame.size());
  core.HandleClient("cl", e, now, {}, std::move(frames));
  std::vector<Outgoing> out;
  out.swap(core.outbox());
  return out;
}

// The JOBs a Dispatch() sends, whole.
inline std::vector<Outgoing> DispatchedJobs(BrokerCore& core, Clock::time_point now) {
  core.Dispatch(now);
  std::vector<Outgoing> jobs;
  for (auto& o : core.outbox()) {
    if (o.envelope.has_job()) jobs.push_back(std::move(o));
  }
  core.outbox().clear();
  return jobs;
}

inline const std::vector<std::string> kInputs = {R"({"a": "3", "b": ["1", "2"]})", R"({"a": "5", "b": ["7", "11"]})"};

// The tests with verification keys (BrokerVerifyTest) check real proofs
// of the bn128_k12 fixture.
class BrokerVerifyTest : public BrokerCoreTest {
 protected:
  static std::string Fixture(const std::string& file) {
    return std::string(ZKFLEET_FIXTURES_DIR) + "/bn128_k12/" + file;
  }
  void MakeVerifying() {
    BrokerOptions options;
    options.verification_keys = std::make_shared<VerificationKeys>(
        VerificationKeys::Load({"c1=" + Fixture("verification_key.json")}));
    Make(options);
  }
  static std::string Slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  void SendResult(const std::string& identity, uint64_t seq, const std::string& proof, const std::string& pub) {
    proto::Envelope e;
    auto* result = e.mutable_result();
    *result->mutable_item() = Ref(seq, 0);
    result->set_circuit_id(leases_[{seq, 0}].circuit_id());
    result->set_request_id(leases_[{seq, 0}].request_id());
    result->set_ok(true);
    result->set_proof_json(proof);
    result->set_public_json(pub);
    core_->HandleWorker(identity, e, now_);
  }
  // Runs the broker's pending verifications here (the server runs them on
  // its verifier threads); returns what the core sent then.
  std::vector<Outgoing> VerifyPending() {
    std::vector<VerifyTask> tasks;
    tasks.swap(core_->verify_outbox());
    for (const VerifyTask& task : tasks) core_->OnVerified(VerifyResultNow(task), now_);
    return Take();
  }
};

}  // namespace zkfleet::broker
