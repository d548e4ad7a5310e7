// Envelope encoding, the version and size checks, enum names, key ordering.
#include <gtest/gtest.h>

#include <set>

#include "zkfleet/wire/names.hpp"
#include "zkfleet/wire/protocol.hpp"
#include "zkfleet/wire/work_key.hpp"

namespace zkfleet::wire {
namespace {

TEST(Protocol, RoundTripStampsTheVersion) {
  proto::Envelope out;
  out.set_correlation_id(42);
  out.mutable_submit()->set_request_id("r1");
  std::string bytes = EncodeEnvelope(out);
  proto::Envelope in;
  ASSERT_EQ(DecodeEnvelope(bytes.data(), bytes.size(), 0, in), DecodeStatus::kOk);
  EXPECT_EQ(in.version(), kProtocolVersion);
  EXPECT_EQ(in.correlation_id(), 42u);
  EXPECT_EQ(in.submit().request_id(), "r1");
}

TEST(Protocol, OtherVersionIsRejected) {
  proto::Envelope out;
  out.mutable_status();
  out.set_version(static_cast<proto::ProtocolVersion>(1));
  std::string bytes = out.SerializeAsString();
  proto::Envelope in;
  EXPECT_EQ(DecodeEnvelope(bytes.data(), bytes.size(), 0, in), DecodeStatus::kWrongVersion);
}

TEST(Protocol, GarbageMissingVersionAndEmptyBodyAreMalformed) {
  proto::Envelope in;
  std::string garbage = "\xff\xff\xff\xff\xff this is not protobuf";
  EXPECT_EQ(DecodeEnvelope(garbage.data(), garbage.size(), 0, in), DecodeStatus::kMalformed);

  proto::Envelope no_version;
  no_version.mutable_status();
  std::string bytes = no_version.SerializeAsString();
  EXPECT_EQ(DecodeEnvelope(bytes.data(), bytes.size(), 0, in), DecodeStatus::kMalformed);

  proto::Envelope no_body;
  no_body.set_version(kProtocolVersion);
  bytes = no_body.SerializeAsString();
  EXPECT_EQ(DecodeEnvelope(bytes.data(), bytes.size(), 0, in), DecodeStatus::kMalformed);
}

TEST(Protocol, OversizedIsRejectedBeforeParsing) {
  proto::Envelope out;
  out.mutable_submit()->set_request_id(std::string(1000, 'x'));
  std::string bytes = EncodeEnvelope(out);
  proto::Envelope in;
  EXPECT_EQ(DecodeEnvelope(bytes.data(), bytes.size(), 100, in), DecodeStatus::kOversized);
  EXPECT_EQ(DecodeEnvelope(bytes.data(), bytes.size(), bytes.size(), in), DecodeStatus::kOk);
}

TEST(Names, OneSpellingEverywhere) {
  EXPECT_EQ(WorkerStateName(proto::WORKER_STATE_WAITING_FOR_MEMORY), "WAITING_FOR_MEMORY");
  EXPECT_EQ(WorkerStateName(proto::WORKER_STATE_DRAINING), "DRAINING");
  EXPECT_EQ(PriorityName(proto::PRIORITY_CRITICAL), "CRITICAL");
  EXPECT_EQ(JobStateName(proto::JOB_STATE_DEAD_LETTERED), "DEAD_LETTERED");
  EXPECT_EQ(ParsePriority("high"), proto::PRIORITY_HIGH);
  EXPECT_EQ(ParsePriority("PRIORITY_LOW"), proto::PRIORITY_LOW);
  EXPECT_FALSE(ParsePriority("urgent").has_value());
  EXPECT_FALSE(ParsePriority("unspecified").has_value());
  EXPECT_EQ(ParseWorkerState("releasing"), proto::WORKER_STATE_RELEASING);
}

TEST(WorkKey, PriorityThenSeqThenPartition) {
  std::set<WorkKey> keys = {
      {proto::PRIORITY_LOW, 1, 0},      {proto::PRIORITY_CRITICAL, 9, 1}, {proto::PRIORITY_CRITICAL, 9, 0},
      {proto::PRIORITY_NORMAL, 3, 0},   {proto::PRIORITY_CRITICAL, 4, 2}, {proto::PRIORITY_HIGH, 2, 0},
  };
  std::vector<WorkKey> expected = {
      {proto::PRIORITY_CRITICAL, 4, 2}, {proto::PRIORITY_CRITICAL, 9, 0}, {proto::PRIORITY_CRITICAL, 9, 1},
      {proto::PRIORITY_HIGH, 2, 0},     {proto::PRIORITY_NORMAL, 3, 0},   {proto::PRIORITY_LOW, 1, 0},
  };
  EXPECT_EQ(std::vector<WorkKey>(keys.begin(), keys.end()), expected);
}

}  // namespace
}  // namespace zkfleet::wire
