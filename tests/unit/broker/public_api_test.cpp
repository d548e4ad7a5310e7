// The public gRPC API's messages (zkfleet.v1) and the internal schema's
// (zkfleet.proto), mapped by field name (public_api.hpp): every public field
// has its internal twin, and a message filled in every field (every nested
// message, repeated field and enum value) survives the way out and back.
#include <gtest/gtest.h>

#include <google/protobuf/util/message_differencer.h>

#include <string>
#include <vector>

#include "grpc/zkfleet_v1.pb.h"
#include "zkfleet.pb.h"
#include "zkfleet/broker/public_api.hpp"

namespace zkfleet::broker::public_api {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// Every field set to a value that is not its default, `depth` levels of
// nested messages deep, two entries in each repeated field; enums to their
// last value.
void Fill(Message* message, int depth, int seed) {
  const Descriptor& type = *message->GetDescriptor();
  const auto& r = *message->GetReflection();
  for (int i = 0; i < type.field_count(); ++i) {
    const FieldDescriptor& f = *type.field(i);
    const int v = seed + i + 1;
    const int count = f.is_repeated() ? 2 : 1;
    for (int k = 0; k < count; ++k) {
      switch (f.cpp_type()) {
        case FieldDescriptor::CPPTYPE_INT32:
          f.is_repeated() ? r.AddInt32(message, &f, v + k) : r.SetInt32(message, &f, v);
          break;
        case FieldDescriptor::CPPTYPE_INT64:
          f.is_repeated() ? r.AddInt64(message, &f, v + k) : r.SetInt64(message, &f, v);
          break;
        case FieldDescriptor::CPPTYPE_UINT32:
          f.is_repeated() ? r.AddUInt32(message, &f, v + k) : r.SetUInt32(message, &f, v);
          break;
        case FieldDescriptor::CPPTYPE_UINT64:
          f.is_repeated() ? r.AddUInt64(message, &f, v + k) : r.SetUInt64(message, &f, v);
          break;
        case FieldDescriptor::CPPTYPE_DOUBLE:
          f.is_repeated() ? r.AddDouble(message, &f, v + 0.5 + k) : r.SetDouble(message, &f, v + 0.5);
          break;
        case FieldDescriptor::CPPTYPE_FLOAT:
          f.is_repeated() ? r.AddFloat(message, &f, v + 0.25f + k) : r.SetFloat(message, &f, v + 0.25f);
          break;
        case FieldDescriptor::CPPTYPE_BOOL:
          f.is_repeated() ? r.AddBool(message, &f, true) : r.SetBool(message, &f, true);
          break;
        case FieldDescriptor::CPPTYPE_STRING: {
          const std::string text = f.name() + "-" + std::to_string(v + k);
          f.is_repeated() ? r.AddString(message, &f, text) : r.SetString(message, &f, text);
          break;
        }
        case FieldDescriptor::CPPTYPE_ENUM: {
          const auto* last = f.enum_type()->value(f.enum_type()->value_count() - 1 - k % 2);
          f.is_repeated() ? r.AddEnum(message, &f, last) : r.SetEnum(message, &f, last);
          break;
        }
        case FieldDescriptor::CPPTYPE_MESSAGE:
          if (depth > 0) Fill(f.is_repeated() ? r.AddMessage(message, &f) : r.MutableMessage(message, &f), depth - 1, v);
          break;
      }
    }
  }
}

template <class Public, class Internal>
void ExpectTwins(const char* name) {
  const std::vector<std::string> unmapped = UnmappedFields(*Public::descriptor(), *Internal::descriptor());
  EXPECT_TRUE(unmapped.empty()) << name << ": public fields without an internal twin: " << ::testing::PrintToString(unmapped);
  Internal internal;
  Fill(&internal, 4, 0);
  const Public out = Convert<Public>(internal);
  const Internal back = Convert<Internal>(out);
  std::string diff;
  google::protobuf::util::MessageDifferencer differ;
  differ.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differ.Compare(internal, back)) << name << ": " << diff;
  // Both ways: a public message filled in every field reaches the broker whole.
  Public filled;
  Fill(&filled, 4, 7);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(filled, Convert<Public>(Convert<Internal>(filled))))
      << name;
}

TEST(PublicApi, EveryPublicMessageMapsToItsInternalTwinFieldByField) {
  ExpectTwins<v1::JobInfo, proto::JobInfo>("JobInfo");
  ExpectTwins<v1::JobResult, proto::JobResult>("JobResult");
  ExpectTwins<v1::CancelReply, proto::CancelReply>("CancelReply");
  ExpectTwins<v1::ListJobsRequest, proto::ListJobsRequest>("ListJobsRequest");
  ExpectTwins<v1::ListJobsReply, proto::ListJobsReply>("ListJobsReply");
  ExpectTwins<v1::RetryJobRequest, proto::RetryJobRequest>("RetryJobRequest");
  ExpectTwins<v1::StatusReply, proto::StatusReply>("StatusReply");
  ExpectTwins<v1::WorkerInfo, proto::WorkerInfo>("WorkerInfo");
  ExpectTwins<v1::DrainWorkerRequest, proto::DrainWorkerRequest>("DrainWorkerRequest");
  ExpectTwins<v1::DrainWorkerReply, proto::DrainWorkerReply>("DrainWorkerReply");
  ExpectTwins<v1::WitnessRef, proto::WitnessRef>("WitnessRef");
}

TEST(PublicApi, AFieldOrEnumValueWithoutATwinIsFoundAndLeftAtItsDefault) {
  // proto::SubmitRequest has fields v1::SubmitJobRequest has not (witness_bytes: the frames' sizes).
  const std::vector<std::string> unmapped =
      UnmappedFields(*proto::SubmitRequest::descriptor(), *v1::SubmitJobRequest::descriptor());
  EXPECT_NE(std::find(unmapped.begin(), unmapped.end(), "witness_bytes"), unmapped.end())
      << ::testing::PrintToString(unmapped);
  v1::SubmitJobRequest request;
  request.set_request_id("r");
  request.set_priority(v1::PRIORITY_HIGH);
  request.add_inputs("{}");
  const proto::SubmitRequest submit = Convert<proto::SubmitRequest>(request);
  EXPECT_EQ(submit.request_id(), "r");
  EXPECT_EQ(submit.priority(), proto::PRIORITY_HIGH);
  EXPECT_EQ(submit.inputs_size(), 1);
  EXPECT_EQ(submit.witness_bytes_size(), 0);
  // A value by name, never by number: a public enum renumbered still maps.
  proto::JobInfo info;
  info.set_state(proto::JOB_STATE_EXPIRED);
  EXPECT_EQ(Convert<v1::JobInfo>(info).state(), v1::JOB_STATE_EXPIRED);
}

}  // namespace
}  // namespace zkfleet::broker::public_api
