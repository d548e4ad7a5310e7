// BrokerCore with jobs whose witnesses the broker does not hold: witnesses by
// reference (routed to workers that fetch their URL) and jobs from inputs
// (routed to workers that generate their circuit's witnesses).
#include "unit/broker/broker_core_test_support.hpp"

namespace zkfleet::broker {
namespace {

// ---------------------------------------------------------------- witnesses by reference

// The broker journals the reference, never bytes: the JOB carries it and no
// frame; a restarted broker still has it; a resubmission is the same job, and
// the same request id with another digest is refused.
// Issue 49, item 3: a worker without --fetch-allow was handed a reference,
// gave it back, was handed it again: three attempts in 7 ms, DEAD_LETTERED.
// Workers announce their fetch prefixes; a job by reference goes only to a
// worker whose prefixes cover its URL, and waits for one otherwise.
TEST_F(BrokerCoreTest, AReferenceGoesOnlyToAWorkerThatFetchesItsUrl) {
  proto::Envelope e;
  auto* ready = e.mutable_ready();
  ready->set_worker_id("blind");
  ready->add_circuits("c1");
  ready->set_capacity(100);
  ready->set_state(proto::WORKER_STATE_READY);
  core_->HandleWorker("w-blind", e, now_);  // no fetch prefixes
  Credit("w-blind", 4);
  // No worker of the circuit fetches there: refused at once, nothing accepted.
  auto refused = SubmitRefs(*core_, now_, "r0", {MakeRef("https://store.internal/w/0.wtns", 4096)});
  ASSERT_EQ(refused.size(), 1u);
  ASSERT_TRUE(refused[0].envelope.has_error()) << refused[0].envelope.DebugString();
  EXPECT_NE(refused[0].envelope.error().message().find("no worker of circuit 'c1' fetches https://store.internal/w/0.wtns"),
            std::string::npos)
      << refused[0].envelope.error().message();
  EXPECT_EQ(core_->jobs().size(), 0u);
  // One that does, without credit yet: accepted, and not given to the blind one meanwhile.
  Ready("w-sees", "sees", {"c1"}, 0);  // fetches https://store.internal/ (the fixture's Ready)
  auto accepted = SubmitRefs(*core_, now_, "r1", {MakeRef("https://store.internal/w/0.wtns", 4096)});
  ASSERT_TRUE(accepted[0].envelope.has_submit_reply()) << accepted[0].envelope.DebugString();
  EXPECT_TRUE(Dispatch().empty()) << "a reference went to a worker that fetches nothing";
  Credit("w-sees", 1);
  const auto jobs = Dispatch();
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(std::get<0>(jobs[0]), "w-sees");
  // The hint's rule: scheme and host without case or userinfo, the path as a directory.
  EXPECT_TRUE(FetchPrefixCovers("https://Store.Internal/w", "https://u:p@store.internal/w/0.wtns"));
  EXPECT_FALSE(FetchPrefixCovers("https://store.internal/w", "https://store.internal/wx/0.wtns"));
  EXPECT_FALSE(FetchPrefixCovers("https://store.internal/", "http://store.internal/0.wtns"));
  EXPECT_FALSE(FetchPrefixCovers("file:///srv/a/", "file:///srv/b/0.wtns"));
  EXPECT_TRUE(FetchPrefixCovers("file:///srv/a", "file:///srv/a/0.wtns"));
}

TEST_F(BrokerCoreTest, AWitnessByReferenceIsJournaledAndSentInItsJobWithoutBytes) {
  Ready("w", "w", {"c1"}, 2);
  const std::vector<proto::WitnessRef> refs = {
      MakeRef("https://user:pw@store.internal/w/0.wtns?X-Amz-Signature=secret", 4096),
      MakeRef("file:///mnt/witnesses/1.wtns", 8192, 'b')};
  auto out = SubmitRefs(*core_, now_, "r1", refs);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].envelope.has_submit_reply()) << out[0].envelope.DebugString();
  Commit();
  std::string fault;
  EXPECT_FALSE(journal_->ReadWitness(1, 0, &fault));  // no bytes journaled
  EXPECT_EQ(core_->Status(now_).queued_witness_bytes(), 0u);

  Restart();
  Ready("w", "w", {"c1"}, 2);
  core_->Dispatch(now_);
  std::vector<Outgoing> jobs;
  for (auto& o : Take()) {
    if (o.envelope.has_job()) jobs.push_back(std::move(o));
  }
  ASSERT_EQ(jobs.size(), 2u);
  for (const Outgoing& job : jobs) {
    const uint32_t p = job.envelope.job().item().partition();
    EXPECT_TRUE(job.frames.empty());
    EXPECT_EQ(job.envelope.job().witness_bytes(), 0u);
    EXPECT_EQ(job.envelope.job().witness_ref().SerializeAsString(), refs[p].SerializeAsString());
    EXPECT_TRUE(job.envelope.job().public_signals_sha256().empty());
  }
  // The same references: the same job. Another digest under the same id: refused.
  out = SubmitRefs(*core_, now_, "r1", refs);
  ASSERT_TRUE(out[0].envelope.has_submit_reply());
  EXPECT_TRUE(out[0].envelope.submit_reply().duplicate());
  EXPECT_EQ(out[0].envelope.submit_reply().job_seq(), 1u);
  auto changed = refs;
  changed[1].set_sha256(std::string(32, 'c'));
  out = SubmitRefs(*core_, now_, "r1", changed);
  ASSERT_TRUE(out[0].envelope.has_error());
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_REQUEST_ID_REUSED);
}

// Every field of a reference is bounded and checked before anything is
// accepted; messages name the URL redacted (no userinfo, no query).
TEST_F(BrokerCoreTest, ABadReferenceIsRefusedNamingItsRedactedUrlAndNothingIsAccepted) {
  BrokerOptions options;
  options.limits.max_witness_bytes = 1 << 20;
  Make(options);
  Ready("w", "w", {"c1"}, 1);
  auto refused = [&](const std::vector<proto::WitnessRef>& refs, proto::ErrorKind kind, const std::string& says,
                     fleet::Frames frames = {}) {
    auto out = SubmitRefs(*core_, now_, "r", refs, {}, std::move(frames));
    ASSERT_EQ(out.size(), 1u);
    ASSERT_TRUE(out[0].envelope.has_error()) << out[0].envelope.DebugString();
    EXPECT_EQ(out[0].envelope.error().kind(), kind) << out[0].envelope.error().message();
    EXPECT_NE(out[0].envelope.error().message().find(says), std::string::npos) << out[0].envelope.error().message();
    EXPECT_EQ(out[0].envelope.error().message().find("secret"), std::string::npos) << out[0].envelope.error().message();
  };
  const std::string url = "https://u:secret@store.internal/w.wtns?sig=secret";
  refused({MakeRef("ftp://store.internal/w.wtns?sig=secret", 100)}, proto::ERROR_KIND_BAD_REQUEST,
          "not file://, http:// or https://");
  refused({MakeRef(url, 0)}, proto::ERROR_KIND_BAD_REQUEST, "size 0");
  auto short_digest = MakeRef(url, 100);
  short_digest.set_sha256(std::string(31, 'a'));
  refused({short_digest}, proto::ERROR_KIND_BAD_REQUEST, "32");
  refused({MakeRef("https://store.internal/" + std::string(5000, 'x'), 100)}, proto::ERROR_KIND_BAD_REQUEST,
          "at most 4096");
  refused({MakeRef("https://store.internal/a b", 100)}, proto::ERROR_KIND_BAD_REQUEST, "space");
  refused({MakeRef(url, (1 << 20) + 1)}, proto::ERROR_KIND_TOO_LARGE, "https://store.internal/w.wtns");
  fleet::Frames inline_too;
  inline_too.push_back(fleet::FrameFromString("w0"));
  refused({MakeRef(url, 100)}, proto::ERROR_KIND_BAD_REQUEST, "not both", std::move(inline_too));
  EXPECT_EQ(core_->jobs().size(), 0u);
  EXPECT_EQ(core_->counters().jobs_submitted, 0u);
}

// ---------------------------------------------------------------- jobs from inputs (issue 31)

// Issue 47, item 5: a job from inputs is STARTED when it enters the
// worker's witness generation, and the broker's overrun limit (600 s) was
// shorter than the worker's own generation limit (900 s wall): slow honest
// generations were reclaimed and struck as hoarding. At the real ratio,
// with the limits the worker announces: four generations on two slots may
// take two rounds of 900 s on top of the 600 s overrun floor, and no more.
TEST_F(BrokerCoreTest, AJobFromInputsGetsTheWorkersGenerationTimeBeforeItsLeaseOverruns) {
  BrokerOptions options;  // lease_overrun_min 600 s: the default
  Make(options);
  proto::Envelope e;
  auto* ready = e.mutable_ready();
  ready->set_worker_id("w");
  ready->add_circuits("c1");
  ready->add_generates("c1");
  ready->set_capacity(100);
  ready->set_state(proto::WORKER_STATE_READY);
  ready->set_generation_wall_s(900);  // zkworker's default --witgen-wall-seconds
  ready->set_generation_slots(2);     // and --witgen-threads
  core_->HandleWorker("w", e, now_);
  Credit("w", 4);
  for (int i = 0; i < 4; ++i) ASSERT_FALSE(SubmitInputs(*core_, now_, "r" + std::to_string(i), {kInputs[0]}).empty());
  const auto jobs = DispatchedJobs(*core_, now_);
  ASSERT_EQ(jobs.size(), 4u);
  for (const Outgoing& job : jobs) {
    proto::Envelope started;
    *started.mutable_started()->add_items() = job.envelope.job().item();  // with its lease
    core_->HandleWorker("w", started, now_);
  }
  const auto started = now_;
  auto advance_to = [&](std::chrono::seconds since_start) {
    while (now_ < started + since_start) {
      now_ = std::min(now_ + std::chrono::seconds(50), started + since_start);
      Heartbeat("w", proto::WORKER_STATE_READY);
      core_->Tick(now_);
    }
    Take();
  };
  advance_to(std::chrono::seconds(600 + 2 * 900 - 5));
  EXPECT_EQ(core_->counters().leases_reclaimed, 0u) << "an honest generation taken for a hoarder";
  EXPECT_EQ(core_->workers().all().at("w").state, proto::WORKER_STATE_READY);
  advance_to(std::chrono::seconds(600 + 2 * 900 + 5));
  // Past every limit it announced: taken back, each a strike; the third
  // faults the worker and returns the fourth with it.
  EXPECT_EQ(core_->counters().leases_reclaimed, 3u);
  EXPECT_EQ(core_->workers().all().at("w").state, proto::WORKER_STATE_FAULTED);
  EXPECT_TRUE(core_->workers().all().at("w").leased.empty());
}

// The inputs are journaled with the job (no witness bytes), counted by
// admission, recovered after a restart and sent in each JOB as input_json
// (no frame, witness_bytes 0, no reference); the same inputs under the same
// request id are the same job, other inputs are refused.
TEST_F(BrokerCoreTest, AJobFromInputsIsJournaledRecoveredAndSentAsInputJson) {
  ReadyGenerating(*core_, now_, "w", "w", {"c1"}, {"c1"}, 0);
  auto out = SubmitInputs(*core_, now_, "r1", kInputs);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].envelope.has_submit_reply()) << out[0].envelope.DebugString();
  EXPECT_EQ(out[0].envelope.submit_reply().job_seq(), 1u);
  Commit();
  const uint64_t input_bytes = kInputs[0].size() + kInputs[1].size();
  EXPECT_EQ(core_->Status(now_).queued_witness_bytes(), input_bytes);
  EXPECT_EQ(core_->admission().witness_bytes(), input_bytes);
  std::string fault;
  EXPECT_FALSE(journal_->ReadWitness(1, 0, &fault));  // no witness journaled
  auto stored = journal_->GetJob(1);
  ASSERT_TRUE(stored);
  ASSERT_EQ(stored->inputs_size(), 2);
  EXPECT_EQ(stored->inputs(1), kInputs[1]);

  Restart();
  EXPECT_EQ(core_->admission().witness_bytes(), input_bytes);
  ReadyGenerating(*core_, now_, "w", "w", {"c1"}, {"c1"}, 2);
  auto jobs = DispatchedJobs(*core_, now_);
  ASSERT_EQ(jobs.size(), 2u);
  for (const Outgoing& job : jobs) {
    const uint32_t p = job.envelope.job().item().partition();
    EXPECT_TRUE(job.frames.empty());
    EXPECT_EQ(job.envelope.job().witness_bytes(), 0u);
    EXPECT_FALSE(job.envelope.job().has_witness_ref());
    EXPECT_EQ(job.envelope.job().input_json(), kInputs[p]);
    EXPECT_TRUE(job.envelope.job().public_signals_sha256().empty());
    EXPECT_EQ(job.envelope.job().partitions(), 2u);
  }
  // The same inputs: the same job. Other inputs (or fewer) under the same id: refused.
  out = SubmitInputs(*core_, now_, "r1", kInputs);
  ASSERT_TRUE(out[0].envelope.has_submit_reply()) << out[0].envelope.DebugString();
  EXPECT_TRUE(out[0].envelope.submit_reply().duplicate());
  EXPECT_EQ(out[0].envelope.submit_reply().job_seq(), 1u);
  for (const std::vector<std::string>& other :
       {std::vector<std::string>{kInputs[0], R"({"a": "5", "b": ["7", "12"]})"}, std::vector<std::string>{kInputs[0]},
        std::vector<std::string>{kInputs[1], kInputs[0]}}) {
    out = SubmitInputs(*core_, now_, "r1", other);
    ASSERT_EQ(out.size(), 1u);
    ASSERT_TRUE(out[0].envelope.has_error()) << out[0].envelope.DebugString();
    EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_REQUEST_ID_REUSED);
  }
  // Inline witnesses with the same bytes are another payload too.
  EXPECT_EQ(core_->counters().jobs_submitted, 0u);  // this life accepted nothing new
  EXPECT_EQ(core_->jobs().size(), 1u);
}

// Everything is checked before anything is accepted, and each refusal names
// the partition: all-or-nothing (no mix with frames or references), the
// size (TOO_LARGE over --max-input-bytes), a JSON object of bounded depth
// (hostile bytes neither crash nor hang the broker), the digests' count.
TEST_F(BrokerCoreTest, InputsAreCheckedBeforeAnythingIsAcceptedNamingThePartition) {
  BrokerOptions options;
  options.max_input_bytes = 4096;
  options.max_partitions = 4;
  Make(options);
  ReadyGenerating(*core_, now_, "w", "w", {"c1"}, {"c1"}, 1);
  int round = 0;  // each refusal under its own request id
  auto refused = [&](const std::vector<std::string>& inputs, proto::ErrorKind kind,
                     const std::vector<std::string>& says, fleet::Frames frames = {},
                     const std::vector<proto::WitnessRef>& refs = {}, const std::vector<std::string>& digests = {}) {
    auto out = SubmitInputs(*core_, now_, "r" + std::to_string(++round), inputs, digests, std::move(frames), refs);
    ASSERT_EQ(out.size(), 1u);
    ASSERT_TRUE(out[0].envelope.has_error()) << "refusal " << round << ": " << out[0].envelope.DebugString();
    EXPECT_EQ(out[0].envelope.error().kind(), kind) << out[0].envelope.error().message();
    for (const std::string& word : says) {
      EXPECT_NE(out[0].envelope.error().message().find(word), std::string::npos) << out[0].envelope.error().message();
    }
  };
  const std::string good = kInputs[0];
  fleet::Frames frame;
  frame.push_back(fleet::FrameFromString("w0"));
  refused({good}, proto::ERROR_KIND_BAD_REQUEST, {"not a mix"}, std::move(frame));
  refused({good}, proto::ERROR_KIND_BAD_REQUEST, {"not a mix"}, {}, {MakeRef("file:///w/0.wtns", 100)});
  std::string big = R"({"a": ")" + std::string(4096, '1') + R"("})";
  refused({good, big}, proto::ERROR_KIND_TOO_LARGE, {"partition 1", "--max-input-bytes", "4096"});
  refused({good, "[1, 2]"}, proto::ERROR_KIND_BAD_REQUEST, {"partition 1", "JSON object"});
  refused({"\"a\""}, proto::ERROR_KIND_BAD_REQUEST, {"partition 0", "JSON object"});
  refused({""}, proto::ERROR_KIND_BAD_REQUEST, {"partition 0", "empty"});
  refused({good, good, R"({"a": )"}, proto::ERROR_KIND_BAD_REQUEST, {"partition 2", "not valid JSON"});
  refused({R"({"a": "1"} {"b": "2"})"}, proto::ERROR_KIND_BAD_REQUEST, {"partition 0", "not valid JSON"});
  refused({R"({"a": NaN})"}, proto::ERROR_KIND_BAD_REQUEST, {"partition 0"});
  refused({"{\"a\": \"\xff\xfe\"}"}, proto::ERROR_KIND_BAD_REQUEST, {"partition 0"});  // not UTF-8
  refused({std::string("{\"a\": \"1\"}\0", 11)}, proto::ERROR_KIND_BAD_REQUEST, {"partition 0"});
  // Nesting: 32 levels are fine, 33 are not; 4000 open brackets are refused at once.
  auto nested = [](int depth) {
    std::string json = "{\"a\": ";
    for (int d = 1; d < depth; ++d) json += "[";
    json += "\"1\"";
    for (int d = 1; d < depth; ++d) json += "]";
    return json + "}";
  };
  refused({nested(33)}, proto::ERROR_KIND_BAD_REQUEST, {"partition 0", "deeper than 32"});
  refused({"{\"a\": " + std::string(4000, '[')}, proto::ERROR_KIND_BAD_REQUEST, {"partition 0", "deeper than 32"});
  // Random bytes: never a crash, never accepted.
  uint64_t state = 0x9e3779b97f4a7c15;
  for (int round = 0; round < 200; ++round) {
    std::string noise(1 + round * 7 % 300, '\0');
    for (char& c : noise) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      c = static_cast<char>(state >> 56);
    }
    noise[0] = static_cast<char>(round % 2 ? '{' : noise[0]);
    auto out = SubmitInputs(*core_, now_, "noise" + std::to_string(round), {noise});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(out[0].envelope.has_error()) << round;
  }
  refused({good, good, good, good, good}, proto::ERROR_KIND_BAD_REQUEST, {"5 inputs", "at most 4"});
  refused({good, good}, proto::ERROR_KIND_BAD_REQUEST, {"one per partition"}, {}, {}, {std::string(32, 'd')});
  refused({good}, proto::ERROR_KIND_BAD_REQUEST, {"partition 0", "32"}, {}, {}, {std::string(31, 'd')});
  EXPECT_EQ(core_->jobs().size(), 0u);
  EXPECT_EQ(core_->counters().jobs_submitted, 0u);
  EXPECT_NO_THROW(Commit());
  // The bounds themselves pass.
  auto out = SubmitInputs(*core_, now_, "ok", {nested(32), R"({"a": ")" + std::string(4096 - 10, '1') + R"("})"});
  ASSERT_TRUE(out[0].envelope.has_submit_reply()) << out[0].envelope.DebugString();
}

// A job from inputs goes only to a worker that announced its circuit in
// Ready.generates: one that only holds the circuit never gets it (and is not
// blocked by it: witnesses of the same circuit go on), and a generating
// worker that dies has the same inputs sent again to another.
TEST_F(BrokerCoreTest, AJobFromInputsGoesOnlyToWorkersThatGenerateItsCircuit) {
  ReadyGenerating(*core_, now_, "w-prove", "prove-only", {"c1"}, {}, 4);
  ReadyGenerating(*core_, now_, "w-gen", "gen", {"c1", "c2"}, {"c1"}, 0);
  Take();
  auto out = SubmitInputs(*core_, now_, "in", {kInputs[0]});  // seq 1
  ASSERT_TRUE(out[0].envelope.has_submit_reply()) << out[0].envelope.DebugString();
  Submit("cl", "wit", proto::PRIORITY_NORMAL, 1);  // seq 2, inline witness of c1
  auto jobs = Dispatch();
  using J = std::tuple<std::string, uint64_t, uint32_t>;
  EXPECT_EQ(jobs, (std::vector<J>{{"w-prove", 2, 0}}));  // the witness job; the inputs wait
  EXPECT_EQ(core_->queue().size(), 1u);
  Credit("w-gen", 1);
  ASSERT_EQ(Dispatch(), (std::vector<J>{{"w-gen", 1, 0}}));
  EXPECT_EQ((leases_[{1, 0}].input_json()), kInputs[0]);
  Started("w-gen", 1, 0);
  // w-gen dies; another generating worker gets the same inputs again.
  ReadyGenerating(*core_, now_, "w-gen2", "gen2", {"c1"}, {"c1"}, 1);
  for (int i = 0; i < 5; ++i) {
    now_ += options_.heartbeat_interval;
    Heartbeat("w-prove", proto::WORKER_STATE_READY);
    Heartbeat("w-gen2", proto::WORKER_STATE_READY);
    core_->Tick(now_);
  }
  Take();
  EXPECT_EQ(core_->workers().all().count("w-gen"), 0u);
  jobs = Dispatch();
  ASSERT_EQ(jobs, (std::vector<J>{{"w-gen2", 1, 0}}));
  EXPECT_EQ((leases_[{1, 0}].input_json()), kInputs[0]);
  EXPECT_EQ((leases_[{1, 0}].attempt()), 2u);
  Result("w-gen2", 1, 0);
  auto results = ResultsTo(Take(), "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].job_seq(), 1u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_SUCCEEDED);
  // A finished job's inputs leave the journal (as a witness's bytes do).
  Commit();
  auto stored = journal_->GetJob(1);
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->state(), proto::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(stored->inputs_size(), 0);
  // Status shows what each worker generates.
  auto status = core_->Status(now_);
  bool seen = false;
  for (const auto& info : status.workers()) {
    if (info.worker_id() == "gen2") {
      seen = true;
      ASSERT_EQ(info.generates_size(), 1);
      EXPECT_EQ(info.generates(0), "c1");
    } else {
      EXPECT_EQ(info.generates_size(), 0) << info.worker_id();
    }
  }
  EXPECT_TRUE(seen);
}

// No worker generates the circuit: refused as a circuit no worker holds is
// (UNKNOWN_CIRCUIT), queued with --accept-unrouted, and just after a restart
// queued for a circuit some worker generated in an earlier life.
TEST_F(BrokerCoreTest, AJobFromInputsForACircuitNobodyGeneratesIsHandledLikeAnUnroutedCircuit) {
  ReadyGenerating(*core_, now_, "w", "w", {"c1"}, {}, 1);
  auto out = SubmitInputs(*core_, now_, "r1", {kInputs[0]});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].envelope.has_error());
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_UNKNOWN_CIRCUIT);
  EXPECT_NE(out[0].envelope.error().message().find("generates witnesses for circuit 'c1'"), std::string::npos)
      << out[0].envelope.error().message();
  EXPECT_EQ(core_->jobs().size(), 0u);

  // An earlier life's generator is remembered: within the grace the job waits for it.
  ReadyGenerating(*core_, now_, "w", "w", {"c1"}, {"c1"}, 1);
  Commit();
  Restart();
  core_->Tick(now_);
  out = SubmitInputs(*core_, now_, "r2", {kInputs[0]});
  ASSERT_TRUE(out[0].envelope.has_submit_reply()) << out[0].envelope.DebugString();
  // It reconnects without the generator: nothing is sent to it.
  ReadyGenerating(*core_, now_, "w", "w", {"c1"}, {}, 1);
  EXPECT_TRUE(Dispatch().empty());
  now_ += 2 * options_.liveness * options_.heartbeat_interval + std::chrono::milliseconds(1);
  Heartbeat("w", proto::WORKER_STATE_READY);
  core_->Tick(now_);
  Take();
  out = SubmitInputs(*core_, now_, "r3", {kInputs[0]});
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_UNKNOWN_CIRCUIT);

  BrokerOptions options;
  options.accept_unrouted = true;
  Make(options);
  out = SubmitInputs(*core_, now_, "r1", {kInputs[0]}, {}, {}, {}, "nobody-has-it");
  ASSERT_TRUE(out[0].envelope.has_submit_reply()) << out[0].envelope.DebugString();
  EXPECT_EQ(core_->queue().size(), 1u);
}

// Cancel and deadlines work on jobs from inputs as on any job: their items
// leave the queue of jobs from inputs, admission gives their bytes back.
TEST_F(BrokerCoreTest, AJobFromInputsIsCancelledAndExpiresLikeAnyJob) {
  ReadyGenerating(*core_, now_, "w", "w", {"c1"}, {"c1"}, 1);
  ASSERT_TRUE(SubmitInputs(*core_, now_, "r1", kInputs)[0].envelope.has_submit_reply());
  ASSERT_EQ(DispatchedJobs(*core_, now_).size(), 1u);
  EXPECT_EQ(core_->queue().size(), 1u);
  proto::Envelope cancel;
  cancel.mutable_cancel()->set_job_seq(1);
  core_->HandleClient("cl", cancel, now_);
  auto results = ResultsTo(Take(), "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_CANCELLED);
  EXPECT_EQ(core_->queue().size(), 0u);
  EXPECT_EQ(core_->admission().witness_bytes(), 0u);

  proto::Envelope e;
  e.set_correlation_id(2);
  e.mutable_submit()->set_request_id("stale-soon");
  e.mutable_submit()->set_circuit_id("c1");
  e.mutable_submit()->add_inputs(kInputs[0]);
  e.mutable_submit()->set_deadline_unix_s(wire::UnixNow() + 0.2);
  core_->HandleClient("cl", e, now_);
  ASSERT_TRUE(Take()[0].envelope.has_submit_reply());
  std::this_thread::sleep_for(milliseconds(300));  // deadlines are wall-clock times
  now_ += options_.heartbeat_interval;
  Heartbeat("w", proto::WORKER_STATE_READY);
  core_->Tick(now_);
  auto out = Take();
  for (auto& o : out) EXPECT_FALSE(o.envelope.has_job()) << "an expired job is never leased";
  results = ResultsTo(out, "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_EXPIRED);
  EXPECT_EQ(core_->queue().size(), 0u);
  EXPECT_EQ(core_->admission().witness_bytes(), 0u);
  EXPECT_TRUE(DispatchedJobs(*core_, now_).empty());
}

// Ready.generates is bounded like Ready.circuits and must name circuits the
// worker holds; otherwise the READY is refused.
TEST_F(BrokerCoreTest, AReadyWhoseGeneratesIsNotASubsetOfItsCircuitsIsRefused) {
  auto refused = [&](const std::vector<std::string>& circuits, const std::vector<std::string>& generates,
                     const std::string& says) {
    ReadyGenerating(*core_, now_, "w", "w", circuits, generates, 0);
    auto out = Take();
    ASSERT_EQ(out.size(), 1u);
    ASSERT_TRUE(out[0].envelope.has_disconnect());
    EXPECT_NE(out[0].envelope.disconnect().reason().find(says), std::string::npos)
        << out[0].envelope.disconnect().reason();
    EXPECT_EQ(core_->workers().all().count("w"), 0u);
  };
  refused({"c1"}, {"c2"}, "not among its circuits");
  refused({"c1"}, {std::string(200, 'c')}, "at most 128");
  refused({"c1"}, {std::string("c\0x", 3)}, "control byte");
  refused({"c1"}, std::vector<std::string>(257, "c1"), "generates lists 257 entries");
  EXPECT_EQ(core_->counters().registrations_refused, 4u);
  ReadyGenerating(*core_, now_, "w", "w", {"c1", "c2"}, {"c2"}, 0);
  EXPECT_TRUE(Take().empty());
  ASSERT_EQ(core_->workers().all().count("w"), 1u);
  EXPECT_EQ(core_->workers().all().at("w").generates, (std::set<std::string>{"c2"}));
}

}  // namespace
}  // namespace zkfleet::broker
