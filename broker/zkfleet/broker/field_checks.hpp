// Bounds and shape checks of every field a peer sends (FieldLimits, in
// options.hpp), applied before a message costs the broker anything: a journal
// key (LMDB keys are at most 511 bytes), a log line, memory.
//
// Each check returns why the message is refused, naming the field and the
// bound ("request_id is 600 bytes; at most 128"), or nullopt when it passes.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "zkfleet.pb.h"
#include "zkfleet/broker/options.hpp"

namespace zkfleet::broker {

// A name (an id): at most `max_bytes`, no control bytes (NUL included: ids
// are parts of journal keys), not empty unless `may_be_empty`.
std::optional<std::string> NameProblem(std::string_view field, std::string_view value, size_t max_bytes,
                                       bool may_be_empty = false);

// A client request (any body a client may send), its client_id included
// unless `authenticated` (then the key's name is the identity and the
// declared id is ignored, so it is not checked either).
std::optional<std::string> ClientRequestProblem(const proto::Envelope& message, const FieldLimits& limits,
                                                bool authenticated = false);

// A worker message (READY, STARTED, CREDIT, HEARTBEAT, RESULT, HANDBACK,
// DISCONNECT).
std::optional<std::string> WorkerMessageProblem(const proto::Envelope& message, const FieldLimits& limits);

// Why a request is refused, and how the client is told (its ErrorKind).
struct Refusal {
  proto::ErrorKind kind = proto::ERROR_KIND_BAD_REQUEST;
  std::string why;
};

// A SUBMIT's shape, before anything is looked up: a request id; inline
// witnesses, witnesses by reference or inputs, one of them for every
// partition; each input an input.json within --max-input-bytes; each witness
// within --max-witness-bytes; the inline bytes within --max-inline-job-bytes
// and what a connection may hold. `has_frames`: witness frames came with it.
std::optional<Refusal> SubmitShapeProblem(const proto::SubmitRequest& request, bool has_frames,
                                          const BrokerOptions& options);

// A SUBMIT that would make a new job (not a lookup of a known request id),
// on its own terms: a circuit, 1..--max-partitions partitions, a known
// priority, a deadline that is a time (or 0).
std::optional<Refusal> NewJobShapeProblem(const proto::SubmitRequest& request, size_t partitions,
                                          const BrokerOptions& options);

}  // namespace zkfleet::broker
