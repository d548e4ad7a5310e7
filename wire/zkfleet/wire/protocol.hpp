// Envelope encoding and decoding with the protocol-version check. Every
// message on every zkfleet socket is one serialized proto::Envelope (after the
// routing identity on ROUTER sockets); docs/protocol.md has the conversations.
//
// Thread-safety: free functions without shared state.
#pragma once

#include <cstddef>
#include <string>

#include "zkfleet.pb.h"

namespace zkfleet::wire {

inline constexpr proto::ProtocolVersion kProtocolVersion = proto::PROTOCOL_VERSION_CURRENT;

// Why a received frame was (or was not) accepted.
enum class DecodeStatus {
  kOk,
  kMalformed,     // not a protobuf Envelope, or an Envelope without a body
  kWrongVersion,  // a valid Envelope of another protocol version
  kOversized,     // larger than the application limit
};

const char* DecodeStatusName(DecodeStatus status);

// Parses `size` bytes into `out` (cleared first) and checks the version and
// the size limit. `max_bytes` == 0 means no application limit.
DecodeStatus DecodeEnvelope(const void* data, size_t size, size_t max_bytes, proto::Envelope& out);

// Stamps the current protocol version into `envelope` and serializes it.
std::string EncodeEnvelope(proto::Envelope& envelope);

// Builds an ErrorReply envelope answering `correlation_id`.
proto::Envelope MakeErrorReply(proto::ErrorKind kind, const std::string& message, uint64_t correlation_id);

}  // namespace zkfleet::wire
