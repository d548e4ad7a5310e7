#include "zkfleet/wire/protocol.hpp"

#include <google/protobuf/stubs/common.h>
#if GOOGLE_PROTOBUF_VERSION < 4022000
#include <google/protobuf/stubs/logging.h>  // LogSilencer (gone since protobuf 22, which logs via Abseil)
#endif

namespace zkfleet::wire {

const char* DecodeStatusName(DecodeStatus status) {
  switch (status) {
    case DecodeStatus::kOk: return "ok";
    case DecodeStatus::kMalformed: return "malformed";
    case DecodeStatus::kWrongVersion: return "wrong_version";
    case DecodeStatus::kOversized: return "oversized";
  }
  return "unknown";
}

DecodeStatus DecodeEnvelope(const void* data, size_t size, size_t max_bytes, proto::Envelope& out) {
  out.Clear();
  // The size check comes first so an oversized frame is never parsed.
  if (max_bytes != 0 && size > max_bytes) return DecodeStatus::kOversized;
  if (size > static_cast<size_t>(INT32_MAX)) return DecodeStatus::kOversized;
  {
#if GOOGLE_PROTOBUF_VERSION < 4022000
    // libprotobuf writes an ERROR line to stderr for every string field with
    // invalid UTF-8, so any peer could flood stderr past our logger. The
    // callers already count and log malformed frames.
    const google::protobuf::LogSilencer quiet;
#endif
    if (!out.ParseFromArray(data, static_cast<int>(size))) return DecodeStatus::kMalformed;
  }
  // Random bytes sometimes parse as a protobuf with unknown fields only; an
  // envelope without a version is not one of ours.
  if (out.version() == proto::PROTOCOL_VERSION_UNSPECIFIED) return DecodeStatus::kMalformed;
  // The version is checked before the body: a newer peer may use bodies we do
  // not know, which would otherwise look malformed.
  if (out.version() != kProtocolVersion) return DecodeStatus::kWrongVersion;
  if (out.body_case() == proto::Envelope::BODY_NOT_SET) return DecodeStatus::kMalformed;
  return DecodeStatus::kOk;
}

std::string EncodeEnvelope(proto::Envelope& envelope) {
  envelope.set_version(kProtocolVersion);
  return envelope.SerializeAsString();
}

proto::Envelope MakeErrorReply(proto::ErrorKind kind, const std::string& message, uint64_t correlation_id) {
  proto::Envelope envelope;
  envelope.set_correlation_id(correlation_id);
  auto* error = envelope.mutable_error();
  error->set_kind(kind);
  error->set_message(message);
  return envelope;
}

}  // namespace zkfleet::wire
