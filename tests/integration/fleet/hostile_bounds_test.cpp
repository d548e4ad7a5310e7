// Hostile peers' oversized messages: a 600-byte request id, and huge multipart messages on both broker ports.
#include <sys/types.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "zkfleet/fleet/curve_keys.hpp"
#include "zkfleet/fleet/frames.hpp"
#include "zkfleet/wire/protocol.hpp"
#include "hostile_test_support.hpp"

namespace fleet_test {
namespace {

// ------------------------------------------------------------------ client bounds

// 9. A 600-byte request id is refused (zkctl checks it, and the broker
// refuses it when a client sends it anyway); the broker keeps serving.
TEST(FleetHostile, LongRequestIdDoesNotStopTheBroker) {
  Fleet fleet("hostile_request_id");
  Process& broker = fleet.StartBroker(VerifyingBroker());
  StartHonest(fleet, "honest");
  fleet.WaitWorkerReady("honest");
  const std::string long_id(600, 'r');
  std::string out;

  EXPECT_NE(fleet.Zkctl({"submit", "--circuit", kCircuit, "--request-id", long_id, FixtureWitness()}, &out), 0) << out;
  EXPECT_TRUE(out.find("BAD_REQUEST") != std::string::npos || out.find("request_id") != std::string::npos ||
              out.find("request id") != std::string::npos)
      << out;
  EXPECT_NE(out.find("128"), std::string::npos) << out;

  // Past the client's own check, straight to the broker.
  {
    auto client = fleet.Client();
    zkfleet::proto::Envelope envelope;
    auto* submit = envelope.mutable_submit();
    submit->set_circuit_id(kCircuit);
    submit->set_request_id(long_id);
    const std::string witness = ReadFile(FixtureWitness());
    submit->add_witness_bytes(witness.size());
    zkfleet::fleet::Frames frames;
    frames.push_back(zkfleet::fleet::FrameFromString(witness));
    try {
      client->Call(envelope, Scaled(10s), std::move(frames));
      ADD_FAILURE() << "the broker accepted a 600-byte request id";
    } catch (const zkfleet::client::internal::BrokerError& e) {
      EXPECT_EQ(e.kind(), zkfleet::proto::ERROR_KIND_BAD_REQUEST) << e.what();
      EXPECT_NE(std::string(e.what()).find("128"), std::string::npos) << e.what();
    }
  }

  EXPECT_TRUE(broker.running());
  StatusReply status = fleet.Status();
  EXPECT_EQ(status.jobs_submitted(), 0u) << status.DebugString();
  ASSERT_EQ(fleet.Zkctl({"--timeout", "30", "submit", "--circuit", kCircuit, "--request-id", "ordinary", "--wait",
                         "--out", fleet.dir() + "/out", FixtureWitness()},
                        &out),
            0)
      << out;
  EXPECT_NE(out.find("SUCCEEDED"), std::string::npos) << out;
  EXPECT_TRUE(SnarkjsVerifies(FixtureVk(), ReadFile(fleet.dir() + "/out/proof_0.json"),
                              ReadFile(fleet.dir() + "/out/public_0.json"), fleet.dir()));
  EXPECT_TRUE(broker.running());
}

// What /proc says of process `pid`: "VmRSS" (resident now) or "VmHWM" (its
// peak), in bytes.
uint64_t ProcStatusBytes(pid_t pid, const std::string& field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1)) * 1024;
  }
  ADD_FAILURE() << "no " << field << " in /proc/" << pid << "/status";
  return 0;
}

// Sends one message: `head` and then `frames` frames of 4 MiB, all pointing
// at one buffer (the sender holds none of them).
void SendHugeMessage(zmq::socket_t& dealer, const std::string& head, int frames) {
  static const std::string chunk(4 << 20, 'w');
  dealer.send(zmq::buffer(head), zmq::send_flags::sndmore);
  for (int i = 0; i < frames; ++i) {
    zmq::message_t frame(const_cast<char*>(chunk.data()), chunk.size(), [](void*, void*) {});
    dealer.send(frame, i + 1 < frames ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
}

// 10. A SUBMIT announcing a 1.2 GB witness in 300 frames of 4 MiB, to a
// broker with --max-witness-bytes 100000, and a 400 MB message on the worker
// port: libzmq buffers a message whole before the broker reads any of it,
// so before issue 27's ingress guard the broker's RSS grew by 1.2 GB. Now
// each connection is cut past its bound (the Envelope limit and two
// witnesses; two Envelopes for a worker) and the broker's peak RSS stays
// within 64 MiB of what it was idle. It goes on serving.
TEST(FleetHostile, HugeMultipartMessagesCannotGrowTheBroker) {
  Fleet fleet("hostile_multipart");
  Process& broker = fleet.StartBroker({"--max-witness-bytes", "100000"});
  fleet.StartWorker("w", {"--instant", "--circuit", "c1"});
  fleet.WaitWorkerReady("w");
  auto client = fleet.Client();
  zkfleet::client::internal::JobSubmission warm;
  warm.request.set_request_id("warm-up");
  warm.request.set_circuit_id("c1");
  warm.witnesses.push_back(std::string(50000, 'w'));
  client->Submit(warm, Scaled(10s));
  ASSERT_TRUE(client->NextJobResult(Scaled(10s)));
  const uint64_t idle = ProcStatusBytes(broker.pid(), "VmRSS");

  zmq::socket_t hostile_client(fleet.context(), zmq::socket_type::dealer);
  hostile_client.set(zmq::sockopt::linger, 0);
  fleet.Security("alice").Apply(hostile_client);
  hostile_client.connect(fleet.client_endpoint());
  zkfleet::proto::Envelope envelope;
  envelope.set_version(zkfleet::wire::kProtocolVersion);
  envelope.set_correlation_id(1);
  envelope.mutable_submit()->set_request_id("huge");
  envelope.mutable_submit()->set_circuit_id("c1");
  envelope.mutable_submit()->add_witness_bytes(300ull * (4 << 20));
  SendHugeMessage(hostile_client, envelope.SerializeAsString(), 300);
  EXPECT_TRUE(broker.WaitForLog("cut a client connection", Scaled(30s))) << broker.Log();

  zmq::socket_t hostile_worker(fleet.context(), zmq::socket_type::dealer);
  hostile_worker.set(zmq::sockopt::linger, 0);
  fleet.Security("fleet-worker").Apply(hostile_worker);
  hostile_worker.connect(fleet.worker_endpoint());
  SendHugeMessage(hostile_worker, "not an envelope", 100);
  EXPECT_TRUE(broker.WaitForLog("cut a worker connection", Scaled(30s))) << broker.Log();

  const uint64_t peak = ProcStatusBytes(broker.pid(), "VmHWM");
  std::printf("broker RSS idle %.1f MiB, peak %.1f MiB (+%.1f MiB) under the two messages\n", idle / 1048576.0,
              peak / 1048576.0, (static_cast<double>(peak) - static_cast<double>(idle)) / 1048576.0);
  EXPECT_LE(peak, idle + (64ull << 20)) << "idle RSS " << idle << " bytes, peak " << peak;
  EXPECT_TRUE(broker.running());

  zkfleet::client::internal::JobSubmission after = warm;
  after.request.set_request_id("after");
  auto submitted = client->Submit(after, Scaled(10s));
  auto result = client->NextJobResult(Scaled(10s));
  ASSERT_TRUE(result);
  EXPECT_EQ(result->job_seq(), submitted.job_seq());
  EXPECT_EQ(result->state(), zkfleet::proto::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(fleet.Status().jobs_submitted(), 2u) << "the huge SUBMIT was accepted";
}

}  // namespace
}  // namespace fleet_test
