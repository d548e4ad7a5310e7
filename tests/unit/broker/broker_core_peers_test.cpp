// BrokerCore against peers that misbehave: hostile fields, ids bound to keys,
// strikes per key and per worker id, verdicts confirmed by another key,
// credit caps, leases not started or overrunning, drains and undrains,
// revoked keys.
#include "unit/broker/broker_core_test_support.hpp"

namespace zkfleet::broker {
namespace {

// ---------------------------------------------------------------- hostile peers (issue 27)

TEST_F(BrokerCoreTest, ALongRequestIdIsRefusedNamingItsBoundAndTheBrokerGoesOn) {
  // On 712f740 a 507-byte request id made the journal throw MDB_BAD_VALSIZE.
  Ready("wA", "A", {"c1"}, 4);
  for (const std::string& bad : {std::string(600, 'r'), std::string("r\0x", 3), std::string(129, 'r')}) {
    auto out = Submit("cl", bad, proto::PRIORITY_NORMAL, 1);
    ASSERT_EQ(out.size(), 1u);
    ASSERT_TRUE(out[0].envelope.has_error());
    EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_BAD_REQUEST);
    EXPECT_NE(out[0].envelope.error().message().find("request_id"), std::string::npos)
        << out[0].envelope.error().message();
  }
  EXPECT_NO_THROW(Commit());
  auto out = Submit("cl", std::string(128, 'r'), proto::PRIORITY_NORMAL, 1);
  ASSERT_TRUE(out[0].envelope.has_submit_reply());
  EXPECT_EQ(out[0].envelope.submit_reply().job_seq(), 1u);
  EXPECT_NO_THROW(Commit());
  // A long circuit id and a long declared client id too.
  out = Submit("cl", "r2", proto::PRIORITY_NORMAL, 1, std::string(200, 'c'));
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_BAD_REQUEST);
  EXPECT_NE(out[0].envelope.error().message().find("at most 128"), std::string::npos);
  out = Submit("cl", "r3", proto::PRIORITY_NORMAL, 1, "c1", 1, std::string(300, 'k'));
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_BAD_REQUEST);
}

// Hostile inputs (issue 31): the largest input the broker takes, made of
// nothing but open brackets, or of deep objects, costs one bounded scan:
// refused at once, never a deep recursion, and the broker goes on.
TEST_F(BrokerCoreTest, HostileInputsAreRefusedQuicklyAndTheBrokerGoesOn) {
  proto::Envelope ready;
  ready.mutable_ready()->set_worker_id("w");
  ready.mutable_ready()->add_circuits("c1");
  ready.mutable_ready()->add_generates("c1");
  ready.mutable_ready()->set_state(proto::WORKER_STATE_READY);
  core_->HandleWorker("w", ready, now_);
  const size_t max = options_.max_input_bytes;
  ASSERT_EQ(max, 1u << 20);  // the default
  std::vector<std::string> hostile = {"{\"a\": " + std::string(max - 6, '['),
                                      "{\"a\": " + std::string(max - 6, '{'),
                                      std::string(max, '{'),
                                      "{\"a\": \"" + std::string(max - 8, '\\'),
                                      std::string(max / 2, ' ') + "{}" + std::string(max / 2 - 2, '\x01')};
  std::string nested_objects = "{";
  while (nested_objects.size() + 12 < max) nested_objects += "\"a\":{";
  hostile.push_back(nested_objects);
  const auto began = std::chrono::steady_clock::now();
  for (size_t i = 0; i < hostile.size(); ++i) {
    ASSERT_LE(hostile[i].size(), max);
    proto::Envelope e;
    e.set_correlation_id(1);
    e.mutable_submit()->set_request_id("h" + std::to_string(i));
    e.mutable_submit()->set_circuit_id("c1");
    e.mutable_submit()->add_inputs(R"({"a": "1"})");
    e.mutable_submit()->add_inputs(hostile[i]);
    core_->HandleClient("cl", e, now_);
    auto out = Take();
    ASSERT_EQ(out.size(), 1u) << i;
    ASSERT_TRUE(out[0].envelope.has_error()) << i;
    EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_BAD_REQUEST) << i;
    EXPECT_NE(out[0].envelope.error().message().find("input of partition 1"), std::string::npos)
        << i << ": " << out[0].envelope.error().message();
  }
  // Generous for sanitizer builds on a shared machine: the scan is linear.
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(20));
  EXPECT_EQ(core_->jobs().size(), 0u);
  EXPECT_NO_THROW(Commit());
  // A hostile READY: generates lists circuits it does not hold.
  proto::Envelope liar = ready;
  liar.mutable_ready()->set_worker_id("liar");
  liar.mutable_ready()->add_generates("c-secret");
  core_->HandleWorker("w-liar", liar, now_);
  auto out = Take();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].envelope.has_disconnect());
  EXPECT_EQ(core_->workers().all().count("w-liar"), 0u);
  EXPECT_EQ(core_->counters().fields_refused, 1u);
}

TEST_F(BrokerCoreTest, AWorkerIdBelongsToTheKeyThatRegisteredIt) {
  proto::Envelope ready;
  ready.mutable_ready()->set_worker_id("victim");
  ready.mutable_ready()->add_circuits("c1");
  ready.mutable_ready()->set_state(proto::WORKER_STATE_READY);
  core_->HandleWorker("w-victim", ready, now_, KeyPeer("w1"));
  Credit("w-victim", 1);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
  ASSERT_EQ(Dispatch().size(), 1u);
  // Another key claims the id: refused, the victim keeps its lease.
  core_->HandleWorker("w-thief", ready, now_, KeyPeer("w2"));
  auto out = Take();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].identity, "w-thief");
  ASSERT_TRUE(out[0].envelope.has_disconnect());
  EXPECT_NE(out[0].envelope.disconnect().reason().find("belongs to another key"), std::string::npos);
  ASSERT_NE(core_->workers().all().count("w-victim"), 0u);
  EXPECT_EQ(core_->workers().all().at("w-victim").leased.size(), 1u);
  EXPECT_EQ(core_->workers().all().count("w-thief"), 0u);
  EXPECT_EQ(core_->counters().registrations_refused, 1u);
  // The thief's answer for the victim's lease is stale.
  Result("w-thief", 1, 0);
  EXPECT_EQ(core_->jobs().Find(1)->items[0].state, WorkItem::State::kLeased);
}

TEST_F(BrokerCoreTest, ASecondLiveProcessWithTheSameIdIsRefusedNotSwapped) {
  proto::Envelope ready;
  ready.mutable_ready()->set_worker_id("A");
  ready.mutable_ready()->add_circuits("c1");
  ready.mutable_ready()->set_state(proto::WORKER_STATE_READY);
  core_->HandleWorker("w-first", ready, now_, KeyPeer("w1"));
  Take();
  for (int round = 0; round < 5; ++round) {
    now_ += milliseconds(50);
    Heartbeat("w-first", proto::WORKER_STATE_READY);
    core_->HandleWorker("w-second", ready, now_, KeyPeer("w1"));
    auto out = Take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(out[0].envelope.has_disconnect()) << "round " << round;
    EXPECT_NE(out[0].envelope.disconnect().reason().find("already connected"), std::string::npos);
    EXPECT_NE(core_->workers().all().count("w-first"), 0u);
  }
  // The first one goes silent (killed): a restarted process takes over.
  now_ += milliseconds(200);
  core_->HandleWorker("w-second", ready, now_, KeyPeer("w1"));
  EXPECT_NE(core_->workers().all().count("w-second"), 0u);
  EXPECT_EQ(core_->workers().all().count("w-first"), 0u);
}

// A READY from `identity` as worker `id`, authenticated with key `key`, and `credit`.
void KeyedReady(BrokerCore& core, const std::string& identity, const std::string& id, const std::string& key,
                uint32_t credit, Clock::time_point now, const std::vector<std::string>& circuits = {"c1"}) {
  proto::Envelope ready;
  ready.mutable_ready()->set_worker_id(id);
  for (const std::string& circuit : circuits) ready.mutable_ready()->add_circuits(circuit);
  ready.mutable_ready()->set_capacity(100);
  ready.mutable_ready()->set_state(proto::WORKER_STATE_READY);
  core.HandleWorker(identity, ready, now, KeyPeer(key));
  if (credit > 0) {
    proto::Envelope e;
    e.mutable_credit()->set_credits(credit);
    core.HandleWorker(identity, e, now);
  }
}

// Issue 47, item 1: a key that takes jobs, sends STARTED and disconnects,
// coming back under a new worker id each time, used up other clients'
// attempts (9 of 30 jobs dead-lettered) while an honest worker waited, and
// took no strike. Now the lost work is a strike against the key, whatever
// the id; the retry goes to another key; the strike that faults the key
// refunds the attempts it lost.
TEST_F(BrokerCoreTest, AKeyThatStartsJobsAndLeavesIsStruckUnderEveryIdAndDeadLettersNothing) {
  BrokerOptions options;
  options.max_attempts = 2;
  options.strikes_to_fault = 2;
  Make(options);
  KeyedReady(*core_, "w-honest", "honest", "honest-key", 1, now_);
  KeyedReady(*core_, "w-v0", "v0", "evil-key", 4, now_, {"c1", "c2"});
  for (int i = 1; i <= 6; ++i) Submit("cl", "r" + std::to_string(i), proto::PRIORITY_NORMAL, 1);
  auto leased_to = [&](const std::string& identity) {
    std::vector<uint64_t> seqs;
    for (const auto& [who, seq, partition] : Dispatch()) {
      if (who == identity) seqs.push_back(seq);
    }
    return seqs;
  };
  auto start_and_leave = [&](const std::string& identity, const std::vector<uint64_t>& seqs) {
    for (uint64_t seq : seqs) Started(identity, seq, 0);
    proto::Envelope bye;
    bye.mutable_disconnect()->set_reason("gone");
    core_->HandleWorker(identity, bye, now_);
    Take();
  };
  const std::vector<uint64_t> first = leased_to("w-v0");
  ASSERT_EQ(first.size(), 4u);
  start_and_leave("w-v0", first);
  for (uint64_t seq : first) EXPECT_EQ(core_->jobs().Find(seq)->items[0].failed_on, "key evil-key");
  // A new id of the same key: the four lost items are not its (another
  // key's READY worker serves the circuit); a job of a circuit only the
  // evil key serves is.
  KeyedReady(*core_, "w-v1", "v1", "evil-key", 4, now_, {"c1", "c2"});
  EXPECT_TRUE(leased_to("w-v1").empty());
  Submit("cl", "r7", proto::PRIORITY_NORMAL, 1, "c2");
  const std::vector<uint64_t> second = leased_to("w-v1");
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0], 7u);
  start_and_leave("w-v1", second);
  // Two strikes: the key is FAULTED, under any id, and its last loss is refunded.
  KeyedReady(*core_, "w-v2", "v2", "evil-key", 4, now_);
  EXPECT_EQ(core_->workers().all().at("w-v2").state, proto::WORKER_STATE_FAULTED);
  EXPECT_TRUE(leased_to("w-v2").empty());
  EXPECT_EQ(core_->jobs().Find(second[0])->items[0].attempts, 0u);
  for (uint64_t seq : first) EXPECT_EQ(core_->jobs().Find(seq)->items[0].attempts, 1u) << seq;
  // The honest worker proves every job, one at a time: none dead-lettered.
  for (int done = 0; done < 6; ++done) {
    const auto& leased = core_->workers().all().at("w-honest").leased;
    if (leased.empty()) ASSERT_EQ(leased_to("w-honest").size(), 1u) << done;
    const uint64_t seq = core_->workers().all().at("w-honest").leased.begin()->job_seq;
    Started("w-honest", seq, 0);
    Result("w-honest", seq, 0);
    Credit("w-honest", 1);
    Take();
  }
  EXPECT_EQ(core_->counters().jobs_completed, 6u);
  EXPECT_EQ(core_->counters().jobs_dead_lettered, 0u);
  EXPECT_EQ(core_->jobs().Find(7)->items[0].state, WorkItem::State::kQueued);  // waits for an honest c2 worker
}

// A worker leaving with two started partitions of one job whose last
// attempt each was: the first loss dead-letters the job, and the second
// partition's loss finds no job (no crash; nothing struck: the job is the
// likelier culprit).
TEST_F(BrokerCoreTest, LosingTwoPartitionsOfAJobOnTheirLastAttemptDeadLettersItOnce) {
  BrokerOptions options;
  options.max_attempts = 1;
  Make(options);
  KeyedReady(*core_, "w-1", "w-1", "fleet-key", 2, now_);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 2);
  ASSERT_EQ(Dispatch().size(), 2u);
  Started("w-1", 1, 0);
  Started("w-1", 1, 1);
  proto::Envelope bye;
  bye.mutable_disconnect()->set_reason("crashed");
  core_->HandleWorker("w-1", bye, now_);
  Take();
  EXPECT_EQ(core_->counters().jobs_dead_lettered, 1u);
  EXPECT_EQ(core_->jobs().Find(1), nullptr);
  KeyedReady(*core_, "w-2", "w-2", "fleet-key", 1, now_);
  EXPECT_EQ(core_->workers().all().at("w-2").state, proto::WORKER_STATE_READY);
}

// Strikes are the key's: a new READY or a new worker id does not wipe them
// (on 80a94a0 every READY reset the count: 67 forged proofs, never FAULTED).
TEST_F(BrokerCoreTest, StrikesBelongToTheKeyNotToTheIdOrTheReady) {
  BrokerOptions options;
  options.lease_start_timeout = milliseconds(100);
  Make(options);  // three strikes to fault
  const char* rounds[][2] = {{"w-a", "a"}, {"w-a", "a"}, {"w-b", "b"}};  // READY again, then a new id
  for (auto [identity, id] : rounds) {
    KeyedReady(*core_, identity, id, "hoarder-key", 1, now_);
    if (core_->jobs().Find(1) == nullptr) Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
    ASSERT_EQ(core_->workers().all().at(identity).state, proto::WORKER_STATE_READY) << id;
    ASSERT_EQ(Dispatch().size(), 1u) << id;
    now_ += milliseconds(200);  // never started: taken back, a strike
    Heartbeat(identity, proto::WORKER_STATE_READY);
    core_->Tick(now_);
    Take();
  }
  EXPECT_EQ(core_->counters().leases_reclaimed, 3u);
  EXPECT_EQ(core_->workers().all().at("w-b").state, proto::WORKER_STATE_FAULTED);
  KeyedReady(*core_, "w-c", "c", "hoarder-key", 1, now_);
  EXPECT_EQ(core_->workers().all().at("w-c").state, proto::WORKER_STATE_FAULTED);
  // An admin's undrain pardons the key: its strikes start again from zero.
  proto::Envelope undrain;
  undrain.mutable_undrain_worker()->set_worker_id("c");
  core_->HandleClient("admin", undrain, now_);
  Take();
  EXPECT_EQ(core_->workers().all().at("w-c").state, proto::WORKER_STATE_READY);
  ASSERT_EQ(Dispatch().size(), 1u);
  now_ += milliseconds(200);
  Heartbeat("w-c", proto::WORKER_STATE_READY);
  core_->Tick(now_);
  EXPECT_EQ(core_->workers().all().at("w-c").state, proto::WORKER_STATE_READY) << "one strike after the pardon";
}

// Issue 49, item 2: a host whose workers share one key, one of them a bad
// GPU. Its strikes all come from its own worker id, so the verdict holds that
// id (also when it comes back) and the key's other workers keep working; a
// third strike from a second id would hold the key whole (the test above).
TEST_F(BrokerCoreTest, AFaultedWorkerOfASharedKeyIsHeldAloneAndItsNeighboursKeepWorking) {
  BrokerOptions options;
  options.lease_start_timeout = milliseconds(100);
  Make(options);  // three strikes to fault
  KeyedReady(*core_, "w-gpu1", "gpu1", "host-key", 0, now_);  // no credit: takes nothing yet
  for (int strike = 0; strike < 3; ++strike) {
    KeyedReady(*core_, "w-gpu0", "gpu0", "host-key", 1, now_);
    if (core_->jobs().Find(1) == nullptr) Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
    ASSERT_EQ(core_->workers().all().at("w-gpu0").state, proto::WORKER_STATE_READY) << strike;
    ASSERT_EQ(Dispatch().size(), 1u) << strike;
    now_ += milliseconds(200);  // never started: taken back, a strike
    Heartbeat("w-gpu0", proto::WORKER_STATE_READY);
    Heartbeat("w-gpu1", proto::WORKER_STATE_READY);
    core_->Tick(now_);
    Take();
  }
  EXPECT_EQ(core_->workers().all().at("w-gpu0").state, proto::WORKER_STATE_FAULTED);
  EXPECT_EQ(core_->workers().all().at("w-gpu1").state, proto::WORKER_STATE_READY);
  // gpu0 restarted (a new connection, the same id): still held.
  proto::Envelope bye;
  bye.mutable_disconnect()->set_reason("restarting");
  core_->HandleWorker("w-gpu0", bye, now_);
  KeyedReady(*core_, "w-gpu0-again", "gpu0", "host-key", 1, now_);
  EXPECT_EQ(core_->workers().all().at("w-gpu0-again").state, proto::WORKER_STATE_FAULTED);
  // A new worker of the key, and the neighbour, take the job.
  KeyedReady(*core_, "w-gpu2", "gpu2", "host-key", 1, now_);
  EXPECT_EQ(core_->workers().all().at("w-gpu2").state, proto::WORKER_STATE_READY);
  KeyedReady(*core_, "w-gpu1", "gpu1", "host-key", 1, now_);
  const auto leased = Dispatch();
  ASSERT_EQ(leased.size(), 1u);
  EXPECT_NE(std::get<0>(leased[0]), "w-gpu0-again");
  // A neighbour's single strike now is its own, not a third id's on top of
  // gpu0's three: the key is not held whole for it.
  now_ += milliseconds(200);  // the lease just made is never started: a strike
  Heartbeat("w-gpu1", proto::WORKER_STATE_READY);
  Heartbeat("w-gpu2", proto::WORKER_STATE_READY);
  core_->Tick(now_);
  Take();
  EXPECT_EQ(core_->workers().all().at("w-gpu1").state, proto::WORKER_STATE_READY);
  EXPECT_EQ(core_->workers().all().at("w-gpu2").state, proto::WORKER_STATE_READY);
}

// A READY again on the registering connection, same id (zkworker's SIGHUP
// changed its circuits): an update. Its lease and credit stay; routing
// follows the new list.
TEST_F(BrokerCoreTest, AWorkerAnnouncingNewCircuitsKeepsItsLeasesAndCredit) {
  Ready("w", "w", {"c1"}, 3);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
  ASSERT_EQ(Dispatch().size(), 1u);
  Started("w", 1, 0);
  const uint32_t credit = core_->workers().all().at("w").credit;
  Ready("w", "w", {"c1", "c2"}, 0);
  const WorkerRecord& w = core_->workers().all().at("w");
  EXPECT_EQ(w.leased.size(), 1u);
  EXPECT_EQ(w.credit, credit);
  EXPECT_TRUE(w.circuits.count("c2"));
  EXPECT_EQ(core_->counters().workers_lost, 0u);
  Submit("cl", "r2", proto::PRIORITY_NORMAL, 1, "c2");
  EXPECT_EQ(Dispatch().size(), 1u) << "c2 is routed to it now";
  // c1 dropped: its running item still answers; no new c1 work comes.
  Ready("w", "w", {"c2"}, 0);
  Result("w", 1, 0);
  Take();
  EXPECT_EQ(core_->counters().jobs_completed, 1u);
  Submit("cl", "r3", proto::PRIORITY_NORMAL, 1, "c1");
  EXPECT_TRUE(Dispatch().empty());
}

// A job whose circuit has no key any more (the broker restarted without it)
// is never completed from an unchecked proof: it fails, saying why, and the
// worker is not struck.
TEST_F(BrokerCoreTest, AResultForACircuitThatLostItsKeyFailsTheJobUnchecked) {
  Ready("w", "w", {"c1"}, 1);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
  Commit();
  options_.unverified_circuits.clear();  // no key for c1, and not unverified any more
  options_.verification_keys = std::make_shared<VerificationKeys>();
  Restart();
  Ready("w2", "w", {"c1"}, 1);
  ASSERT_EQ(Dispatch().size(), 1u);
  Started("w2", 1, 0);
  Result("w2", 1, 0);
  Take();
  EXPECT_EQ(core_->counters().jobs_completed, 0u);
  EXPECT_EQ(core_->counters().jobs_failed, 1u);
  EXPECT_EQ(core_->strikes("w", now_), 0u);
}

// A witness that crashes every prover is the job's fault, not the key's: in
// a fleet of one key the job is dead-lettered and the key stays READY; a
// crash that loses work is forgiven by the key's next verified proof.
TEST_F(BrokerCoreTest, APoisonJobDoesNotFaultAFleetOfOneKey) {
  BrokerOptions options;
  options.max_attempts = 2;
  options.strikes_to_fault = 3;  // the poison's first crash, then two more without forgiveness would fault it
  Make(options);
  for (const char* identity : {"w-1", "w-2"}) {
    KeyedReady(*core_, identity, identity, "fleet-key", 1, now_);
    if (core_->jobs().Find(1) == nullptr) Submit("cl", "poison", proto::PRIORITY_NORMAL, 1);
    ASSERT_EQ(Dispatch().size(), 1u) << identity;
    Started(identity, 1, 0);
    proto::Envelope bye;
    bye.mutable_disconnect()->set_reason("crashed");
    core_->HandleWorker(identity, bye, now_);
    Take();
  }
  EXPECT_EQ(core_->counters().jobs_dead_lettered, 1u);
  KeyedReady(*core_, "w-3", "w-3", "fleet-key", 1, now_);
  EXPECT_EQ(core_->workers().all().at("w-3").state, proto::WORKER_STATE_READY);
  // One crash with a good job (a strike), a verified proof (forgiven), another crash: still READY.
  for (int i = 0; i < 2; ++i) {
    Submit("cl", "good" + std::to_string(i), proto::PRIORITY_NORMAL, 1);
    const std::string identity = "w-g" + std::to_string(i);
    KeyedReady(*core_, identity, identity, "fleet-key", 2, now_);
    const auto leased = Dispatch();
    ASSERT_FALSE(leased.empty());
    const auto [who, seq, partition] = leased[0];
    Started(who, seq, 0);
    proto::Envelope bye;
    bye.mutable_disconnect()->set_reason("crashed");
    core_->HandleWorker(who, bye, now_);
    Take();
    const auto again = Dispatch();
    ASSERT_FALSE(again.empty());
    Started(std::get<0>(again[0]), std::get<1>(again[0]), 0);
    Result(std::get<0>(again[0]), std::get<1>(again[0]), 0);
    Credit(std::get<0>(again[0]), 1);
    Take();
  }
  for (const auto& [identity, worker] : core_->workers().all()) {
    EXPECT_NE(worker.state, proto::WORKER_STATE_FAULTED) << identity;
  }
}

// Issue 47, item 9: one key could fill the 4,096-entry table (then real
// circuits lost the restart grace). Each key may add at most 512 names, and
// only circuits the broker takes jobs for are remembered at all.
TEST_F(BrokerCoreTest, OneKeyCannotFillTheRememberedCircuits) {
  for (int w = 0; w < 20; ++w) {  // one key, 20 worker ids x 256 circuits
    proto::Envelope ready;
    ready.mutable_ready()->set_worker_id("greedy" + std::to_string(w));
    for (int c = 0; c < 256; ++c) ready.mutable_ready()->add_circuits("g" + std::to_string(w) + "-" + std::to_string(c));
    ready.mutable_ready()->set_state(proto::WORKER_STATE_READY);
    core_->HandleWorker("greedy-conn" + std::to_string(w), ready, now_, KeyPeer("greedy-key"));
  }
  KeyedReady(*core_, "honest-conn", "honest", "honest-key", 0, now_, {"real-circuit"});
  Commit();
  const auto known = journal_->KnownCircuitOwners();
  size_t greedy = 0, honest = 0;
  for (const auto& [circuit, owner] : known) {
    if (owner == "key greedy-key") ++greedy;
    if (owner == "key honest-key" && circuit == "real-circuit") ++honest;
  }
  EXPECT_EQ(greedy, 512u);
  EXPECT_EQ(honest, 1u);
  // After a restart the shares are counted again from the journal: still no room for more.
  Restart();
  KeyedReady(*core_, "greedy-again", "greedy-more", "greedy-key", 0, now_, {"one-more"});
  Commit();
  EXPECT_EQ(journal_->KnownCircuits().size(), 513u);
}

// Circuits without a verification key (and not listed unverified) take no
// jobs: they are not remembered.
TEST_F(BrokerCoreTest, OnlyCircuitsWithJobsAreRemembered) {
  BrokerOptions options;
  options.unverified_circuits = {"bench"};
  options.verification_keys = std::make_shared<VerificationKeys>(VerificationKeys::Load({}));
  Make(options);
  Ready("conn", "w", {"bench", "junk-1", "junk-2"}, 0);
  Commit();
  EXPECT_EQ(journal_->KnownCircuits(), (std::vector<std::string>{"bench"}));
}

// Issue 47, item 2: one worker could fail any job for good with a
// non-retryable RESULT carrying its own text. Its verdict is now a claim: the
// item goes to another key's worker; a proof there is a strike against the
// claimant; two keys agreeing (or no other key) make the failure final.
TEST_F(BrokerCoreTest, AClientFaultVerdictIsConfirmedByAnotherKeyBeforeItIsFinal) {
  BrokerOptions options;
  options.strikes_to_fault = 1;  // one false verdict shows as FAULTED
  Make(options);
  KeyedReady(*core_, "w-liar", "liar", "liar-key", 1, now_);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
  ASSERT_EQ(Dispatch().size(), 1u);
  KeyedReady(*core_, "w-honest", "honest", "honest-key", 1, now_);
  Started("w-liar", 1, 0);
  Result("w-liar", 1, 0, /*ok=*/false, /*retryable=*/false);
  Take();
  ASSERT_NE(core_->jobs().Find(1), nullptr) << "one key's verdict failed the job";
  EXPECT_EQ(core_->jobs().Find(1)->items[0].attempts, 0u);  // refunded
  const auto second = Dispatch();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(std::get<0>(second[0]), "w-honest");
  Started("w-honest", 1, 0);
  Result("w-honest", 1, 0);
  Take();
  EXPECT_EQ(core_->counters().jobs_completed, 1u);
  EXPECT_EQ(core_->workers().all().at("w-liar").state, proto::WORKER_STATE_FAULTED);
  EXPECT_EQ(core_->workers().all().at("w-honest").state, proto::WORKER_STATE_READY);

  // Both keys say so: FAILED, with the first verdict's words.
  Credit("w-honest", 1);
  KeyedReady(*core_, "w-other", "other", "other-key", 1, now_);
  Submit("cl", "r2", proto::PRIORITY_NORMAL, 1);
  auto leased = Dispatch();
  ASSERT_EQ(leased.size(), 1u);
  const std::string first = std::get<0>(leased[0]);
  Started(first, 2, 0);
  Result(first, 2, 0, false, false);
  Take();
  leased = Dispatch();
  ASSERT_EQ(leased.size(), 1u);
  EXPECT_NE(std::get<0>(leased[0]), first);
  Started(std::get<0>(leased[0]), 2, 0);
  Result(std::get<0>(leased[0]), 2, 0, false, false);
  Take();
  EXPECT_EQ(core_->jobs().Find(2), nullptr);
  EXPECT_EQ(core_->counters().jobs_failed, 1u);
  EXPECT_EQ(core_->workers().all().at("w-other").state, proto::WORKER_STATE_READY);
}

// With no other key's worker at hand, the item waits (never leased to the
// claimant's key again) for --verdict-confirm-wait, then the verdict is final.
// (A fleet of one key, where no other key ever served the circuit, fails it
// at once: RetryableFailureRetriesFinalFailureFails.)
TEST_F(BrokerCoreTest, AClientFaultVerdictWaitsForAnotherKeyThenIsFinal) {
  BrokerOptions options;
  options.verdict_confirm_wait = milliseconds(1000);
  Make(options);
  KeyedReady(*core_, "w-only", "only", "only-key", 2, now_);
  // Another key served the circuit in this broker life, and is gone now.
  KeyedReady(*core_, "w-gone", "gone", "other-key", 0, now_);
  proto::Envelope bye;
  bye.mutable_disconnect()->set_reason("restarting");
  core_->HandleWorker("w-gone", bye, now_);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
  ASSERT_EQ(Dispatch().size(), 1u);
  Started("w-only", 1, 0);
  Result("w-only", 1, 0, false, false);
  Take();
  ASSERT_NE(core_->jobs().Find(1), nullptr);
  // Another worker of the same key is no second opinion.
  KeyedReady(*core_, "w-same", "same", "only-key", 1, now_);
  EXPECT_TRUE(Dispatch().empty());
  now_ += milliseconds(500);
  core_->Tick(now_);
  ASSERT_NE(core_->jobs().Find(1), nullptr);
  now_ += milliseconds(600);
  core_->Tick(now_);
  Take();
  EXPECT_EQ(core_->jobs().Find(1), nullptr);
  EXPECT_EQ(core_->counters().jobs_failed, 1u);
  const auto stored = journal_->GetJob(1);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->state(), proto::JOB_STATE_FAILED);
  EXPECT_NE(stored->error().find("failed on worker only"), std::string::npos) << stored->error();
}

TEST_F(BrokerCoreTest, CreditIsCappedByTheBrokerAndDispatchIsFair) {
  BrokerOptions options;
  options.max_credit_per_worker = 3;
  Make(options);
  Ready("w-hoard", "hoarder", {"c1"}, 100000, 100000);
  Ready("w-honest", "honest", {"c1"}, 1, 1);
  EXPECT_EQ(core_->workers().all().at("w-hoard").credit, 3u);
  for (int i = 0; i < 5; ++i) Submit("cl", "r" + std::to_string(i), proto::PRIORITY_NORMAL, 1);
  auto jobs = Dispatch();
  ASSERT_EQ(jobs.size(), 4u);  // 3 for the hoarder (its cap), 1 for the honest worker
  size_t honest = 0;
  for (auto& [identity, seq, partition] : jobs) honest += identity == "w-honest";
  EXPECT_EQ(honest, 1u);
}

TEST_F(BrokerCoreTest, ALeaseNotStartedInTimeGoesBackAndCountsAgainstItsWorker) {
  BrokerOptions options;
  options.lease_start_timeout = milliseconds(2000);
  options.strikes_to_fault = 2;
  Make(options);
  Ready("w-hoard", "hoarder", {"c1"}, 5, 5);
  for (int i = 0; i < 2; ++i) Submit("cl", "r" + std::to_string(i), proto::PRIORITY_NORMAL, 1);
  ASSERT_EQ(Dispatch().size(), 2u);
  // The hoarder keeps its heartbeats but never starts them.
  for (int t = 0; t < 19; ++t) {
    now_ += milliseconds(100);
    Heartbeat("w-hoard", proto::WORKER_STATE_READY);
    core_->Tick(now_);
  }
  EXPECT_EQ(core_->workers().all().at("w-hoard").leased.size(), 2u);  // not yet
  now_ += milliseconds(200);
  Heartbeat("w-hoard", proto::WORKER_STATE_READY);
  core_->Tick(now_);
  Take();
  EXPECT_EQ(core_->counters().leases_reclaimed, 2u);
  EXPECT_EQ(core_->workers().all().at("w-hoard").state, proto::WORKER_STATE_FAULTED);
  // An honest worker gets both at once.
  Ready("w-honest", "honest", {"c1"}, 2, 2);
  auto jobs = Dispatch();
  ASSERT_EQ(jobs.size(), 2u);
  for (auto& job : jobs) EXPECT_EQ(std::get<0>(job), "w-honest");
  // The hoarder cannot clear FAULTED by registering again, not even under a new id.
  proto::Envelope ready;
  ready.mutable_ready()->set_worker_id("hoarder");
  ready.mutable_ready()->add_circuits("c1");
  ready.mutable_ready()->set_state(proto::WORKER_STATE_READY);
  now_ += milliseconds(1000);
  core_->HandleWorker("w-hoard2", ready, now_);
  EXPECT_EQ(core_->workers().all().at("w-hoard2").state, proto::WORKER_STATE_FAULTED);
}

TEST_F(BrokerCoreTest, AStartedLeaseThatOverrunsIsTakenBack) {
  BrokerOptions options;
  options.lease_overrun_min = milliseconds(1000);
  Make(options);
  Ready("wA", "A", {"c1"}, 1);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
  ASSERT_EQ(Dispatch().size(), 1u);
  Started("wA", 1, 0);
  for (int t = 0; t < 9; ++t) {
    now_ += milliseconds(100);
    Heartbeat("wA", proto::WORKER_STATE_READY);
    core_->Tick(now_);
  }
  EXPECT_EQ(core_->counters().leases_reclaimed, 0u);
  now_ += milliseconds(200);
  Heartbeat("wA", proto::WORKER_STATE_READY);
  core_->Tick(now_);
  EXPECT_EQ(core_->counters().leases_reclaimed, 1u);
  EXPECT_EQ(core_->jobs().Find(1)->items[0].state, WorkItem::State::kQueued);
  EXPECT_EQ(core_->jobs().Find(1)->items[0].failed_on, "worker A");  // plaintext: the owner is the id
}

TEST_F(BrokerCoreTest, DrainingIsTheBrokersStateToLeaveNotTheWorkers) {
  Ready("wA", "A", {"c1"}, 2);
  proto::Envelope drain;
  drain.mutable_drain_worker()->set_worker_id("A");
  core_->HandleClient("admin", drain, now_);
  Take();
  // The worker answers READY (a new READY and a READY heartbeat): it stays DRAINING.
  Ready("wA", "A", {"c1"}, 2);
  Heartbeat("wA", proto::WORKER_STATE_READY);
  EXPECT_EQ(core_->workers().all().at("wA").state, proto::WORKER_STATE_DRAINING);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
  EXPECT_EQ(Dispatch().size(), 0u);
  // An admin undrains it.
  EXPECT_EQ(UndrainAsAdmin("A"), proto::WORKER_STATE_READY);
  EXPECT_EQ(Dispatch().size(), 1u);
  // Only an admin may.
  proto::Envelope undrain;
  undrain.mutable_undrain_worker()->set_worker_id("A");
  core_->HandleClient("bob", undrain, now_, KeyPeer("bob", Role::kSubmit));
  auto out = Take();
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_FORBIDDEN);
}

// A worker that reported its own engine FAULTED takes no work whatever the
// broker says: an admin's undrain clears the broker's part and answers
// FAULTED (zkctl then says a restart of that worker is needed), and nothing
// is routed to it; restarted (a READY without FAULTED), it serves again.
TEST_F(BrokerCoreTest, UndrainOfAWorkerThatFaultedItselfLeavesItFaulted) {
  Ready("wA", "A", {"c1"}, 2);
  Heartbeat("wA", proto::WORKER_STATE_FAULTED);
  EXPECT_EQ(core_->workers().all().at("wA").state, proto::WORKER_STATE_FAULTED);
  EXPECT_EQ(UndrainAsAdmin("A"), proto::WORKER_STATE_FAULTED);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
  EXPECT_EQ(Dispatch().size(), 0u);
  // The restarted process (a new connection, the old one silent) registers READY: work flows again.
  now_ += 2 * options_.heartbeat_interval;
  Ready("wA-restarted", "A", {"c1"}, 2);
  EXPECT_EQ(core_->workers().all().at("wA-restarted").state, proto::WORKER_STATE_READY);
  EXPECT_EQ(Dispatch().size(), 1u);
}

// A drained worker exits; an UNDRAIN of it afterwards says it left, when and
// why, and that it is started again, not only "unknown"; once it registers
// again it is an ordinary worker.
TEST_F(BrokerCoreTest, UndrainOfAWorkerThatLeftSaysSoAndHowToBringItBack) {
  Ready("wA", "A", {"c1"}, 2);
  proto::Envelope bye;
  bye.mutable_disconnect()->set_reason("drained");
  core_->HandleWorker("wA", bye, now_);
  Take();
  proto::Envelope undrain;
  undrain.mutable_undrain_worker()->set_worker_id("A");
  core_->HandleClient("admin", undrain, now_);
  auto out = Take();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_UNKNOWN_WORKER);
  const std::string& message = out[0].envelope.error().message();
  EXPECT_NE(message.find("worker 'A' is not connected: it left (disconnected: drained, at 20"), std::string::npos)
      << message;
  EXPECT_NE(message.find("start it again"), std::string::npos) << message;
  // An id never seen is unknown, plainly.
  undrain.mutable_undrain_worker()->set_worker_id("never");
  core_->HandleClient("admin", undrain, now_);
  out = Take();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].envelope.error().message(), "no worker 'never' is registered or held (see zkctl workers)");
  // Back again: an ordinary worker.
  Ready("wA2", "A", {"c1"}, 2);
  EXPECT_EQ(UndrainAsAdmin("A"), proto::WORKER_STATE_READY);
}

TEST_F(BrokerCoreTest, ARemovedWorkerKeyIsCutOffAndItsLeasesRequeue) {
  proto::Envelope ready;
  ready.mutable_ready()->set_worker_id("A");
  ready.mutable_ready()->add_circuits("c1");
  ready.mutable_ready()->set_state(proto::WORKER_STATE_READY);
  core_->HandleWorker("wA", ready, now_, KeyPeer("w1"));
  proto::Envelope credit;
  credit.mutable_credit()->set_credits(2);
  core_->HandleWorker("wA", credit, now_, KeyPeer("w1"));
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
  ASSERT_EQ(Dispatch().size(), 1u);
  core_->SetAllowedKeys({"w2"}, {"alice"}, now_);
  auto out = Take();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].envelope.has_disconnect());
  EXPECT_EQ(core_->workers().all().count("wA"), 0u);
  EXPECT_EQ(core_->jobs().Find(1)->items[0].state, WorkItem::State::kQueued);
  // Its connection is still open: anything it sends is refused.
  core_->HandleWorker("wA", ready, now_, KeyPeer("w1"));
  out = Take();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].envelope.has_disconnect());
  EXPECT_EQ(core_->workers().all().count("wA"), 0u);
  // A removed client key too.
  proto::Envelope status;
  status.mutable_status();
  core_->HandleClient("cl-bob", status, now_, KeyPeer("bob", Role::kAdmin));
  out = Take();
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_FORBIDDEN);
}

}  // namespace
}  // namespace zkfleet::broker
