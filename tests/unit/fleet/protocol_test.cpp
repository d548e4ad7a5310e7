// Envelope encoding, the version and size checks, enum names, key ordering.
#include <gtest/gtest.h>

#include <set>

#include "zkfleet/wire/names.hpp"
#include "zkfleet/fleet/frames.hpp"
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

namespace zkfleet::fleet {
namespace {

TEST(WitnessFrames, ChunksPointIntoOneBufferAndSplitBackBySize) {
  std::string a(kWitnessChunkBytes * 2 + 3, 'a');
  const char* a_data = nullptr;
  std::vector<WitnessFrames> witnesses;
  {
    zmq::message_t whole = FrameFromString(a);
    a_data = static_cast<const char*>(whole.data());
    witnesses.push_back(ChunkWitness(std::move(whole)));
  }
  witnesses.push_back(ChunkWitness(FrameFromString("bb")));
  ASSERT_EQ(witnesses[0].chunks.size(), 3u);
  // No copy: the chunks are views into the one buffer, kept alive by them.
  EXPECT_EQ(static_cast<const char*>(witnesses[0].chunks[1].data()), a_data + kWitnessChunkBytes);
  EXPECT_EQ(witnesses[0].size(), a.size());

  std::string why;
  auto split = SplitWitnesses(FlattenWitnesses(std::move(witnesses)), {a.size(), 2}, &why);
  ASSERT_TRUE(split) << why;
  ASSERT_EQ(split->size(), 2u);
  EXPECT_EQ((*split)[0].chunks.size(), 3u);
  EXPECT_EQ((*split)[1].chunks[0].to_string(), "bb");
}

TEST(WitnessFrames, FramesThatDoNotMatchTheSizesAreRefused) {
  auto frames = [] {
    Frames f;
    f.push_back(FrameFromString("1234"));
    f.push_back(FrameFromString("56"));
    return f;
  };
  std::string why;
  EXPECT_TRUE(SplitWitnesses(frames(), {6}, &why));
  EXPECT_TRUE(SplitWitnesses(frames(), {4, 2}, &why));
  EXPECT_FALSE(SplitWitnesses(frames(), {5, 1}, &why));  // a frame would straddle two witnesses
  EXPECT_NE(why.find("straddles"), std::string::npos) << why;
  EXPECT_FALSE(SplitWitnesses(frames(), {7}, &why));     // too few bytes
  EXPECT_FALSE(SplitWitnesses(frames(), {4}, &why));     // frames left over
  EXPECT_FALSE(SplitWitnesses(frames(), {0, 6}, &why));  // empty witness
  Frames huge;
  huge.push_back(FrameFromString(std::string(kMaxWitnessChunkBytes + 1, 'x')));
  EXPECT_FALSE(SplitWitnesses(std::move(huge), {kMaxWitnessChunkBytes + 1}, &why));  // frame above the chunk limit
  EXPECT_NE(why.find("frames must hold"), std::string::npos) << why;
}

}  // namespace
}  // namespace zkfleet::fleet
