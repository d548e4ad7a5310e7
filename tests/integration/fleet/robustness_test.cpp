// Unknown circuits, malformed, wrong-version and oversized frames.
#include <gtest/gtest.h>

#include "fleet_harness.hpp"
#include "zkfleet/fleet/protocol.hpp"

namespace fleet_test {
namespace {

namespace proto = zkfleet::proto;

proto::SubmitRequest Request(const std::string& id, const std::string& circuit, size_t witness_bytes = 16) {
  proto::SubmitRequest request;
  request.set_request_id(id);
  request.set_circuit_id(circuit);
  request.add_witnesses(std::string(witness_bytes, 'w'));
  return request;
}

TEST(FleetRobustness, UnknownCircuitIsRefusedUnlessAcceptUnrouted) {
  Fleet fleet("unrouted");
  fleet.StartBroker();
  fleet.StartWorker("w", {"--instant", "--circuit", "known"});
  fleet.WaitWorkerReady("w");
  std::string output;
  int code = fleet.Zkctl({"submit", "--circuit", "unknown", Fixture("bn128_k12/witness.wtns")}, &output);
  EXPECT_EQ(code, 1);
  EXPECT_NE(output.find("UNKNOWN_CIRCUIT"), std::string::npos) << output;
  EXPECT_NE(output.find("'unknown'"), std::string::npos) << output;
  EXPECT_EQ(fleet.Status().jobs_submitted(), 0u);

  Fleet lenient("unrouted-ok");
  lenient.StartBroker({"--accept-unrouted"});
  code = lenient.Zkctl({"submit", "--circuit", "unknown", Fixture("bn128_k12/witness.wtns")}, &output);
  EXPECT_EQ(code, 0) << output;
  auto status = lenient.Status();
  EXPECT_EQ(status.jobs_submitted(), 1u);
  EXPECT_EQ(status.queues(2).priority(), proto::PRIORITY_NORMAL);
  EXPECT_EQ(status.queues(2).depth(), 1u);  // waits for a worker that holds it
}

TEST(FleetRobustness, MalformedAndWrongVersionFramesAreDroppedAndCounted) {
  Fleet fleet("malformed");
  fleet.StartBroker();
  fleet.StartWorker("w", {"--instant", "--circuit", "c1"});
  fleet.WaitWorkerReady("w");
  auto client = fleet.Client();

  client->SendRaw("\xff\xfe this is not a protobuf envelope");
  auto reply = client->Receive(5s);
  ASSERT_TRUE(reply);
  ASSERT_TRUE(reply->has_error());
  EXPECT_EQ(reply->error().kind(), proto::ERROR_KIND_BAD_REQUEST);

  proto::Envelope future;
  future.set_version(static_cast<proto::ProtocolVersion>(7));
  future.set_correlation_id(99);
  future.mutable_status();
  client->SendRaw(future.SerializeAsString());
  reply = client->Receive(5s);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->error().kind(), proto::ERROR_KIND_VERSION_MISMATCH);
  EXPECT_EQ(reply->correlation_id(), 99u);

  // Garbage on the worker socket too (no reply there, just counted).
  zmq::socket_t rogue(fleet.context(), zmq::socket_type::dealer);
  rogue.set(zmq::sockopt::linger, 0);
  rogue.connect(fleet.worker_endpoint());
  rogue.send(zmq::buffer(std::string("junk")), zmq::send_flags::none);
  rogue.send(zmq::buffer(std::string("two")), zmq::send_flags::sndmore);
  rogue.send(zmq::buffer(std::string("frames")), zmq::send_flags::none);

  // The broker keeps serving: a real job still completes.
  auto submitted = client->Submit(Request("after-garbage", "c1"), 5s);
  auto result = client->NextJobResult(5s);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->job_seq(), submitted.job_seq());
  EXPECT_EQ(result->state(), proto::JOB_STATE_SUCCEEDED);
  auto status = fleet.Status();
  EXPECT_EQ(status.frames_malformed(), 3u);
  EXPECT_EQ(status.frames_wrong_version(), 1u);
}

TEST(FleetRobustness, OversizedFramesAreDroppedAndCounted) {
  Fleet fleet("oversized");
  fleet.StartBroker({"--max-message-bytes", "1048576"});
  fleet.StartWorker("w", {"--instant", "--circuit", "c1"});
  fleet.WaitWorkerReady("w");

  // Above the application limit: dropped, counted, and the client is told.
  zkfleet::fleet::SocketLimits big;
  big.max_message_bytes = 16 << 20;
  auto client = fleet.Client(big);
  EXPECT_THROW(
      {
        try {
          client->Submit(Request("too-big", "c1", 1536 * 1024), 5s);
        } catch (const zkfleet::fleet::BrokerError& e) {
          EXPECT_EQ(e.kind(), proto::ERROR_KIND_TOO_LARGE);
          throw;
        }
      },
      zkfleet::fleet::BrokerError);
  EXPECT_EQ(fleet.Status().frames_oversized(), 1u);

  // Above libzmq's limit (twice the application's, plus 1 MiB): the broker
  // drops the connection before buffering the frame, and keeps serving.
  auto hostile = fleet.Client(big);
  hostile->SendRaw(std::string(4 << 20, 'x'));
  EXPECT_FALSE(hostile->Receive(500ms).has_value());

  auto fresh = fleet.Client();
  auto submitted = fresh->Submit(Request("normal", "c1"), 5s);
  auto result = fresh->NextJobResult(5s);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->job_seq(), submitted.job_seq());
  EXPECT_EQ(result->state(), proto::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(fleet.Status().jobs_submitted(), 1u);
}

}  // namespace
}  // namespace fleet_test
