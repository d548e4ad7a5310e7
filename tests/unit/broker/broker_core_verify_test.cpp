// BrokerCore checks every proof before it stores it: the client's public
// signals digests, forged and foreign proofs, circuits without a key, the
// signals check of jobs from inputs, and the admin's RELOAD of the keys.
#include "unit/broker/broker_core_test_support.hpp"

namespace zkfleet::broker {
namespace {

// A client that knows the public signals it expects sends their digest with
// the SUBMIT: a witness committing to others is refused before anything is
// proved (the broker reads w[1..nPublic] with the key's nPublic); a digest
// count or size that does not fit is refused too; the right one is accepted.
TEST_F(BrokerVerifyTest, PublicSignalsDigestFromTheClientIsCheckedAgainstTheWitness) {
  MakeVerifying();
  Ready("w", "w", {"c1"}, 1);
  const std::string witness = Slurp(Fixture("witness.wtns"));
  std::string why;
  const auto right = wire::PublicSignalsDigestOfJson(Slurp(Fixture("public.json")), &why);
  ASSERT_TRUE(right) << why;
  auto submit = [&](const std::string& id, std::vector<std::string> digests) {
    proto::Envelope e;
    e.set_correlation_id(1);
    auto* request = e.mutable_submit();
    request->set_request_id(id);
    request->set_circuit_id("c1");
    request->add_witness_bytes(witness.size());
    for (auto& digest : digests) request->add_public_signals_sha256(digest);
    fleet::Frames frames;
    frames.push_back(fleet::FrameFromString(witness));
    core_->HandleClient("cl", e, now_, {}, std::move(frames));
    auto out = Take();
    EXPECT_EQ(out.size(), 1u);
    return out.empty() ? proto::Envelope{} : out[0].envelope;
  };
  std::string other = *right;
  other[0] = static_cast<char>(other[0] ^ 1);
  proto::Envelope refused = submit("other", {other});
  ASSERT_TRUE(refused.has_error());
  EXPECT_EQ(refused.error().kind(), proto::ERROR_KIND_BAD_REQUEST);
  EXPECT_NE(refused.error().message().find("other public signals"), std::string::npos) << refused.error().message();
  refused = submit("two", {*right, *right});
  EXPECT_EQ(refused.error().kind(), proto::ERROR_KIND_BAD_REQUEST);
  EXPECT_NE(refused.error().message().find("one per partition"), std::string::npos) << refused.error().message();
  refused = submit("short", {right->substr(0, 31)});
  EXPECT_EQ(refused.error().kind(), proto::ERROR_KIND_BAD_REQUEST);
  EXPECT_EQ(core_->jobs().size(), 0u);
  proto::Envelope accepted = submit("right", {*right});
  EXPECT_TRUE(accepted.has_submit_reply()) << accepted.DebugString();
  EXPECT_EQ(core_->jobs().size(), 1u);
}

TEST_F(BrokerVerifyTest, AForgedOrForeignProofNeverReachesTheClient) {
  MakeVerifying();
  const std::string witness = Slurp(Fixture("witness.wtns"));
  const std::string proof = Slurp(Fixture("proof.json")), pub = Slurp(Fixture("public.json"));
  Ready("w-evil", "evil", {"c1"}, 1);
  SubmitWitnesses("cl", "r1", {witness});
  ASSERT_EQ(Dispatch().size(), 1u);
  // 1. A forged proof: one digit of pi_a changed.
  std::string forged = proof;
  size_t digit = forged.find_first_of("123456789", forged.find("pi_a"));
  forged[digit] = forged[digit] == '1' ? '2' : '1';
  SendResult("w-evil", 1, forged, pub);
  EXPECT_TRUE(ResultsTo(Take(), "cl").empty());  // nothing before the verdict
  auto out = VerifyPending();
  EXPECT_TRUE(ResultsTo(out, "cl").empty());
  EXPECT_EQ(core_->counters().results_rejected, 1u);
  EXPECT_EQ(core_->jobs().Find(1)->items[0].state, WorkItem::State::kQueued);
  EXPECT_EQ(core_->jobs().Find(1)->items[0].attempts, 0u);  // refunded: the worker's fault
  // 2. Text that is not JSON.
  Credit("w-evil", 1);
  ASSERT_EQ(Dispatch().size(), 1u);
  SendResult("w-evil", 1, "not json", "[]");
  VerifyPending();
  EXPECT_EQ(core_->counters().results_rejected, 2u);
  // An honest worker's valid proof is delivered.
  Ready("w-good", "good", {"c1"}, 1);
  auto jobs = Dispatch();
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(std::get<0>(jobs[0]), "w-good");
  SendResult("w-good", 1, proof, pub);
  out = VerifyPending();
  auto results = ResultsTo(out, "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(results[0].partitions(0).worker_id(), "good");
}

TEST_F(BrokerVerifyTest, AValidProofOfAnotherWitnessIsRejected) {
  MakeVerifying();
  // The job's witness differs from the fixture's in its first public signal:
  // the fixture's proof is valid, but not for this job.
  std::string witness = Slurp(Fixture("witness.wtns"));
  const std::string proof = Slurp(Fixture("proof.json")), pub = Slurp(Fixture("public.json"));
  // w[1] sits after the header (magic, version, sections) and w[0]: find w[0] = 1 and bump the byte after it.
  const size_t n8 = 32;
  // Section 2's values end the file: w[1] is at size - n8 * (nWitness - 1).
  uint32_t n_witness = 0;
  std::memcpy(&n_witness, witness.data() + 12 + 12 + 4 + n8, 4);
  witness[witness.size() - n8 * (n_witness - 1)] ^= 1;
  Ready("w-evil", "evil", {"c1"}, 1);
  SubmitWitnesses("cl", "r1", {witness});
  ASSERT_EQ(Dispatch().size(), 1u);
  SendResult("w-evil", 1, proof, pub);
  auto out = VerifyPending();
  EXPECT_TRUE(ResultsTo(out, "cl").empty());
  EXPECT_EQ(core_->counters().results_rejected, 1u);
  EXPECT_EQ(Metric("zkfleet_broker_results_rejected_total", {{"reason", "wrong_public_signals"}}), 1);
}

TEST_F(BrokerVerifyTest, ACircuitWithoutAVerificationKeyIsRefusedAtSubmit) {
  MakeVerifying();
  Ready("wA", "A", {"c2"}, 1);
  auto out = Submit("cl", "r1", proto::PRIORITY_NORMAL, 1, "c2");
  ASSERT_TRUE(out[0].envelope.has_error());
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_UNKNOWN_CIRCUIT);
  EXPECT_NE(out[0].envelope.error().message().find("--verification-key"), std::string::npos);
}

// The broker cannot read a referenced witness: with the circuit's key it
// requires the client's public-signals digests, and a proof whose public
// signals hash to anything else never reaches the client.
TEST_F(BrokerVerifyTest, AReferenceIsBoundToItsProofByTheClientsPublicSignalsDigest) {
  MakeVerifying();
  Ready("w", "w", {"c1"}, 2);
  const std::string witness = Slurp(Fixture("witness.wtns"));
  const std::string proof = Slurp(Fixture("proof.json")), pub = Slurp(Fixture("public.json"));
  std::string why;
  const auto right = wire::PublicSignalsDigestOfJson(pub, &why);
  ASSERT_TRUE(right) << why;
  const proto::WitnessRef ref = MakeRef("http://127.0.0.1:1/w.wtns", witness.size());
  auto out = SubmitRefs(*core_, now_, "none", {ref});
  ASSERT_TRUE(out[0].envelope.has_error());
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_BAD_REQUEST);
  EXPECT_NE(out[0].envelope.error().message().find("public_signals_sha256"), std::string::npos);
  EXPECT_EQ(core_->jobs().size(), 0u);

  std::string other = *right;
  other[0] = static_cast<char>(other[0] ^ 1);
  ASSERT_TRUE(SubmitRefs(*core_, now_, "right", {ref}, {*right})[0].envelope.has_submit_reply());
  ASSERT_TRUE(SubmitRefs(*core_, now_, "other", {ref}, {other})[0].envelope.has_submit_reply());
  ASSERT_EQ(Dispatch().size(), 2u);
  // The worker gets the digest to check the witness against before proving.
  EXPECT_EQ((leases_[{1, 0}].public_signals_sha256()), *right);
  EXPECT_EQ((leases_[{2, 0}].public_signals_sha256()), other);
  SendResult("w", 1, proof, pub);
  SendResult("w", 2, proof, pub);
  out = VerifyPending();
  auto results = ResultsTo(out, "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].job_seq(), 1u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(core_->counters().results_rejected, 1u);
  EXPECT_EQ(Metric("zkfleet_broker_results_rejected_total", {{"reason", "wrong_public_signals"}}), 1);
  EXPECT_EQ(core_->jobs().Find(2)->items[0].state, WorkItem::State::kQueued);
}

// A job from inputs with the circuit's key: without digests every proof is
// still verified (for the public signals it carries); with them each
// proof's public signals must also hash to the client's digest, which the
// JOB carries to the worker.
TEST_F(BrokerVerifyTest, AJobFromInputsIsVerifiedAndBoundToTheDigestWhenGiven) {
  MakeVerifying();
  ReadyGenerating(*core_, now_, "w", "w", {"c1"}, {"c1"}, 4);
  const std::string proof = Slurp(Fixture("proof.json")), pub = Slurp(Fixture("public.json"));
  std::string why;
  const auto right = wire::PublicSignalsDigestOfJson(pub, &why);
  ASSERT_TRUE(right) << why;
  std::string other = *right;
  other[0] = static_cast<char>(other[0] ^ 1);
  ASSERT_TRUE(SubmitInputs(*core_, now_, "none", {kInputs[0]})[0].envelope.has_submit_reply());         // 1
  ASSERT_TRUE(SubmitInputs(*core_, now_, "right", {kInputs[0]}, {*right})[0].envelope.has_submit_reply());  // 2
  ASSERT_TRUE(SubmitInputs(*core_, now_, "other", {kInputs[0]}, {other})[0].envelope.has_submit_reply());   // 3
  ASSERT_TRUE(SubmitInputs(*core_, now_, "forged", {kInputs[1]})[0].envelope.has_submit_reply());       // 4
  ASSERT_EQ(Dispatch().size(), 4u);
  EXPECT_TRUE((leases_[{1, 0}].public_signals_sha256().empty()));
  EXPECT_EQ((leases_[{2, 0}].public_signals_sha256()), *right);
  EXPECT_EQ((leases_[{3, 0}].public_signals_sha256()), other);
  SendResult("w", 1, proof, pub);
  SendResult("w", 2, proof, pub);
  SendResult("w", 3, proof, pub);
  std::string forged = proof;
  size_t digit = forged.find_first_of("123456789", forged.find("pi_a"));
  forged[digit] = forged[digit] == '1' ? '2' : '1';
  SendResult("w", 4, forged, pub);
  auto results = ResultsTo(VerifyPending(), "cl");
  ASSERT_EQ(results.size(), 2u);
  std::set<uint64_t> succeeded;
  for (const auto& result : results) {
    EXPECT_EQ(result.state(), proto::JOB_STATE_SUCCEEDED);
    succeeded.insert(result.job_seq());
  }
  EXPECT_EQ(succeeded, (std::set<uint64_t>{1, 2}));
  EXPECT_EQ(core_->counters().results_rejected, 2u);
  EXPECT_EQ(Metric("zkfleet_broker_results_rejected_total", {{"reason", "wrong_public_signals"}}), 1);
  EXPECT_EQ(core_->jobs().Find(3)->items[0].state, WorkItem::State::kQueued);
  EXPECT_EQ(core_->jobs().Find(4)->items[0].state, WorkItem::State::kQueued);
}

// Issue 47, item 4: a job from inputs without the client's digest. A
// verified proof shows only that its prover knows *a* witness for the
// signals it carries (another job's proof verifies too), so the broker holds
// it and asks a worker of another key for the signals of the same inputs (a
// signals_only lease): agreeing keys deliver it (signals_keys = 2), two keys
// outvoting the prover get it struck and the item proved again bound to
// their signals, two keys that disagree with nobody to decide fail the job,
// and a fleet of one key delivers at once on its word (signals_keys = 1).
class SignalsCheckTest : public BrokerVerifyTest {
 protected:
  void SetUp() override {
    BrokerOptions options;
    options.verification_keys = std::make_shared<VerificationKeys>(
        VerificationKeys::Load({"c1=" + Fixture("verification_key.json")}));
    options.verdict_confirm_wait = std::chrono::milliseconds(1000);
    Make(options);
    proof_ = Slurp(Fixture("proof.json"));
    pub_ = Slurp(Fixture("public.json"));
    std::string why;
    auto digest = wire::PublicSignalsDigestOfJson(pub_, &why);
    ASSERT_TRUE(digest) << why;
    digest_ = *digest;
  }
  // The one JOB a Dispatch() sends: its worker, or "" when none went out.
  std::string LeaseHolder(uint64_t seq) {
    auto jobs = Dispatch();
    for (const auto& [identity, job_seq, partition] : jobs) {
      if (job_seq == seq) return identity;
    }
    return "";
  }
  void SendSignals(const std::string& identity, uint64_t seq, const std::string& pub) {
    proto::Envelope e;
    auto* result = e.mutable_result();
    *result->mutable_item() = Ref(seq, 0);
    result->set_circuit_id("c1");
    result->set_request_id(leases_[{seq, 0}].request_id());
    result->set_ok(true);
    result->set_public_json(pub);
    core_->HandleWorker(identity, e, now_);
  }
  // Two keys' workers "a" and "b" generating c1; job 1 from inputs, proved
  // by one of them, held; its signals check leased to the other. Returns
  // {prover, checker}.
  std::pair<std::string, std::string> ProvedAndHeld() {
    ReadyGenerating(*core_, now_, "a", "a", {"c1"}, {"c1"}, 4);
    ReadyGenerating(*core_, now_, "b", "b", {"c1"}, {"c1"}, 4);
    EXPECT_TRUE(SubmitInputs(*core_, now_, "j", {kInputs[0]})[0].envelope.has_submit_reply());
    const std::string prover = LeaseHolder(1);
    EXPECT_FALSE((leases_[{1, 0}].signals_only()));
    SendResult(prover, 1, proof_, pub_);
    EXPECT_TRUE(ResultsTo(VerifyPending(), "cl").empty());  // verified, but held
    const std::string checker = LeaseHolder(1);
    EXPECT_FALSE(checker.empty());
    return {prover, checker};
  }
  std::string proof_, pub_, digest_;
  const std::string other_pub_ = "[\"1\",\"2\"]";  // other signals, as many as the fixture's nPublic (2)
};

TEST_F(SignalsCheckTest, AnotherKeysAgreeingSignalsDeliverTheProof) {
  const auto [prover, checker] = ProvedAndHeld();
  ASSERT_FALSE(checker.empty());
  EXPECT_NE(checker, prover);  // never the prover's key
  EXPECT_TRUE((leases_[{1, 0}].signals_only()));
  EXPECT_TRUE((leases_[{1, 0}].public_signals_sha256().empty()));
  SendSignals(checker, 1, pub_);
  auto results = ResultsTo(Take(), "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_SUCCEEDED);
  ASSERT_EQ(results[0].partitions_size(), 1);
  EXPECT_EQ(results[0].partitions(0).signals_keys(), 2u);
  EXPECT_EQ(results[0].partitions(0).worker_id(), prover);
  EXPECT_EQ(core_->counters().signals_confirmed, 1u);
}

TEST_F(SignalsCheckTest, TwoKeysThatDisagreeWithNobodyToDecideFailTheJobWithoutAProof) {
  const auto [prover, checker] = ProvedAndHeld();
  ASSERT_FALSE(checker.empty());
  SendSignals(checker, 1, other_pub_);
  auto results = ResultsTo(Take(), "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_FAILED);
  EXPECT_EQ(results[0].partitions_size(), 0);
  EXPECT_NE(results[0].error().find("different public signals"), std::string::npos) << results[0].error();
  EXPECT_EQ(core_->counters().signals_confirmed, 0u);
}

TEST_F(SignalsCheckTest, TwoKeysOutvotingTheProverGetItStruckAndTheItemProvedAgainBoundToTheirSignals) {
  for (const char* id : {"a", "b", "c"}) ReadyGenerating(*core_, now_, id, id, {"c1"}, {"c1"}, 4);
  ASSERT_TRUE(SubmitInputs(*core_, now_, "j", {kInputs[0]})[0].envelope.has_submit_reply());
  // The prover answers with a valid proof of other signals (another job's).
  const std::string prover = LeaseHolder(1);
  SendResult(prover, 1, proof_, pub_);
  EXPECT_TRUE(ResultsTo(VerifyPending(), "cl").empty());
  std::set<std::string> checkers;
  for (int round = 0; round < 2; ++round) {
    const std::string checker = LeaseHolder(1);
    ASSERT_FALSE(checker.empty()) << round;
    EXPECT_NE(checker, prover);
    EXPECT_TRUE(checkers.insert(checker).second) << "asked twice: " << checker;
    EXPECT_TRUE((leases_[{1, 0}].signals_only()));
    SendSignals(checker, 1, other_pub_);
    EXPECT_TRUE(ResultsTo(Take(), "cl").empty()) << round;
  }
  // Proved again, bound to the two keys' signals, not by the struck prover.
  std::string why;
  const auto agreed = wire::PublicSignalsDigestOfJson(other_pub_, &why);
  ASSERT_TRUE(agreed) << why;
  const std::string again = LeaseHolder(1);
  ASSERT_FALSE(again.empty());
  EXPECT_NE(again, prover);
  EXPECT_FALSE((leases_[{1, 0}].signals_only()));
  EXPECT_EQ((leases_[{1, 0}].public_signals_sha256()), *agreed);
  EXPECT_EQ(core_->counters().signals_disputed, 2u);
  auto owner = [](const std::string& id) { return StrikeOwner("", id); };  // plaintext: the worker id
  EXPECT_EQ(core_->strikes(owner(prover), now_), 1u);
  for (const std::string& checker : checkers) EXPECT_EQ(core_->strikes(owner(checker), now_), 0u);
  // The old proof again is refused now: its signals are not the agreed ones.
  SendResult(again, 1, proof_, pub_);
  EXPECT_TRUE(ResultsTo(VerifyPending(), "cl").empty());
  EXPECT_EQ(core_->counters().results_rejected, 1u);
}

// A checker that takes the lease and never answers holds nothing up: once
// the wait is over and its lease comes back (here: it leaves), the proof is
// delivered on one key's word, never left waiting in the queue.
TEST_F(SignalsCheckTest, ACheckerThatNeverAnswersPastTheWaitDoesNotStrandTheProof) {
  const auto [prover, checker] = ProvedAndHeld();
  ASSERT_FALSE(checker.empty());
  // Past the wait in steps the workers' heartbeats keep them alive through,
  // the checker's lease still out.
  for (int step = 0; step < 11; ++step) {
    now_ += std::chrono::milliseconds(100);
    Heartbeat("a", proto::WORKER_STATE_READY);
    Heartbeat("b", proto::WORKER_STATE_READY);
    core_->Tick(now_);
  }
  EXPECT_TRUE(ResultsTo(Take(), "cl").empty());
  proto::Envelope bye;
  bye.mutable_disconnect()->set_reason("leaving");
  core_->HandleWorker(checker, bye, now_);
  for (int step = 0; step < 11; ++step) {
    now_ += std::chrono::milliseconds(100);
    Heartbeat(prover, proto::WORKER_STATE_READY);
    core_->Tick(now_);
  }
  core_->Dispatch(now_);
  auto results = ResultsTo(Take(), "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(results[0].partitions(0).signals_keys(), 1u);
}

TEST_F(SignalsCheckTest, OneKeyVouchesWhereNoOtherServesTheCircuitOrNoneComesInTime) {
  ReadyGenerating(*core_, now_, "a", "a", {"c1"}, {"c1"}, 4);
  ASSERT_TRUE(SubmitInputs(*core_, now_, "alone", {kInputs[0]})[0].envelope.has_submit_reply());
  ASSERT_EQ(LeaseHolder(1), "a");
  SendResult("a", 1, proof_, pub_);
  auto results = ResultsTo(VerifyPending(), "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(results[0].partitions(0).signals_keys(), 1u);

  // A second key served the circuit, then went: the wait ends the check.
  ReadyGenerating(*core_, now_, "b", "b", {"c1"}, {"c1"}, 4);
  Heartbeat("b", proto::WORKER_STATE_DRAINING);
  ASSERT_TRUE(SubmitInputs(*core_, now_, "waited", {kInputs[1]})[0].envelope.has_submit_reply());
  ASSERT_EQ(LeaseHolder(2), "a");
  SendResult("a", 2, proof_, pub_);
  EXPECT_TRUE(ResultsTo(VerifyPending(), "cl").empty());
  EXPECT_EQ(LeaseHolder(2), "");  // only the prover's key is READY: nobody to ask
  now_ += std::chrono::milliseconds(1001);
  core_->Tick(now_);
  results = ResultsTo(Take(), "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(results[0].partitions(0).signals_keys(), 1u);

  // With the client's digest nothing is asked: the digest binds the signals.
  ReadyGenerating(*core_, now_, "c", "c", {"c1"}, {"c1"}, 4);
  ASSERT_TRUE(SubmitInputs(*core_, now_, "bound", {kInputs[0]}, {digest_})[0].envelope.has_submit_reply());
  const std::string prover = LeaseHolder(3);
  SendResult(prover, 3, proof_, pub_);
  results = ResultsTo(VerifyPending(), "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].partitions(0).signals_keys(), 0u);
}

// Issue 49, item 4: an admin's RELOAD is answered with what the server's
// reload did; other roles are refused, and a core given no reloader says so.
// LiveJobsByCircuit is what the reload keeps busy circuits' keys by.
TEST_F(BrokerCoreTest, AReloadIsAnAdminsAndCountsTheLiveJobsOfEachCircuit) {
  proto::Envelope reload;
  reload.set_correlation_id(7);
  reload.mutable_reload();
  core_->HandleClient("admin", reload, now_);
  auto out = Take();
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].envelope.has_error());
  EXPECT_NE(out[0].envelope.error().message().find("nothing to reload"), std::string::npos);

  int reloads = 0;
  core_->set_reloader([&reloads] {
    ++reloads;
    proto::ReloadReply reply;
    reply.add_circuits_added("new-circuit");
    return reply;
  });
  core_->HandleClient("submitter", reload, now_, KeyPeer("submitter", Role::kSubmit));
  out = Take();
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].envelope.has_error());
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_FORBIDDEN);
  core_->HandleClient("observer", reload, now_, KeyPeer("observer", Role::kObserve));
  out = Take();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_FORBIDDEN);
  EXPECT_EQ(reloads, 0);
  core_->HandleClient("ops", reload, now_, KeyPeer("ops", Role::kAdmin));
  out = Take();
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].envelope.has_reload_reply()) << out[0].envelope.DebugString();
  EXPECT_EQ(out[0].envelope.correlation_id(), 7u);
  EXPECT_EQ(out[0].envelope.reload_reply().circuits_added(0), "new-circuit");
  EXPECT_EQ(reloads, 1);

  // Workers named in the RELOAD are sent a ReloadCommand; unknown ids are said.
  Ready("w", "w", {"c1", "c2"}, 0);  // no credit: the jobs stay queued
  proto::Envelope with_workers;
  with_workers.mutable_reload()->add_workers("w");
  with_workers.mutable_reload()->add_workers("ghost");
  core_->HandleClient("ops", with_workers, now_, KeyPeer("ops", Role::kAdmin));
  out = Take();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].identity, "w");
  EXPECT_TRUE(out[0].envelope.has_reload_command());
  ASSERT_TRUE(out[1].envelope.has_reload_reply());
  EXPECT_EQ(out[1].envelope.reload_reply().workers_told(0), "w");
  EXPECT_EQ(out[1].envelope.reload_reply().workers_unknown(0), "ghost");
  proto::Envelope too_many;
  for (int i = 0; i < 4097; ++i) too_many.mutable_reload()->add_workers("w" + std::to_string(i));
  core_->HandleClient("ops", too_many, now_, KeyPeer("ops", Role::kAdmin));
  out = Take();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_BAD_REQUEST);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 2);
  Submit("cl", "r2", proto::PRIORITY_NORMAL, 1);
  Submit("cl", "r3", proto::PRIORITY_NORMAL, 1, "c2");
  Take();
  EXPECT_EQ(core_->LiveJobsByCircuit(), (std::map<std::string, size_t>{{"c1", 2}, {"c2", 1}}));
}

}  // namespace
}  // namespace zkfleet::broker
