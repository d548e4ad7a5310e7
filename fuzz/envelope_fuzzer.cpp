// Fuzzes the wire envelope decoder (wire::DecodeEnvelope), which the broker,
// the worker and the client library run on every frame they receive.
//
// Properties: the decoder never crashes, throws or logs; the status does
// not depend on the application size limit except for kOversized; an
// accepted envelope carries the current version and a body, and survives
// EncodeEnvelope -> DecodeEnvelope unchanged.
#include <cstddef>
#include <cstdint>
#include <string>

#include <google/protobuf/stubs/common.h>

#include "fuzz_common.hpp"
#include "zkfleet/wire/protocol.hpp"

namespace {

using zkfleet::wire::DecodeEnvelope;
using zkfleet::wire::DecodeStatus;
using zkfleet::fuzz::Check;

// A small limit so that both sides of the size check get exercised.
constexpr size_t kSmallLimit = 64;

#if GOOGLE_PROTOBUF_VERSION < 4022000
// Decoding must not write to stderr behind our logger's back (a peer could
// flood it: libprotobuf logs each string field with invalid UTF-8).
void AbortOnProtobufLog(google::protobuf::LogLevel, const char* file, int line, const std::string& message) {
  std::fprintf(stderr, "libprotobuf logged while decoding (%s:%d): %s\n", file, line, message.c_str());
  std::abort();
}
#endif

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
#if GOOGLE_PROTOBUF_VERSION < 4022000
  google::protobuf::SetLogHandler(AbortOnProtobufLog);
#endif
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zkfleet::proto::Envelope envelope;
  const DecodeStatus status = DecodeEnvelope(data, size, 0, envelope);

  zkfleet::proto::Envelope limited;
  const DecodeStatus limited_status = DecodeEnvelope(data, size, kSmallLimit, limited);
  Check(size > kSmallLimit ? limited_status == DecodeStatus::kOversized : limited_status == status,
        "the size limit changed the verdict on a frame within it");
  Check(std::string(zkfleet::wire::DecodeStatusName(status)) != "unknown", "status without a name");

  if (status != DecodeStatus::kOk) return 0;
  Check(envelope.version() == zkfleet::wire::kProtocolVersion, "accepted another version");
  Check(envelope.body_case() != zkfleet::proto::Envelope::BODY_NOT_SET, "accepted an envelope without a body");

  // What a broker does when it forwards or answers: re-encode and decode.
  const std::string encoded = zkfleet::wire::EncodeEnvelope(envelope);
  zkfleet::proto::Envelope again;
  Check(DecodeEnvelope(encoded.data(), encoded.size(), 0, again) == DecodeStatus::kOk, "re-encoded envelope rejected");
  Check(again.SerializeAsString() == encoded, "re-encoded envelope changed");
  return 0;
}
