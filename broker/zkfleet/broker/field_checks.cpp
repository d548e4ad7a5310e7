#include "zkfleet/broker/field_checks.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "zkfleet/engine/bellman_format.hpp"
#include "zkfleet/wire/input_json.hpp"
#include "zkfleet/wire/witness_ref.hpp"

namespace zkfleet::broker {
namespace {

std::optional<std::string> TooLong(std::string_view field, size_t size, size_t max_bytes) {
  if (size <= max_bytes) return std::nullopt;
  return std::string(field) + " is " + std::to_string(size) + " bytes; at most " + std::to_string(max_bytes);
}

std::optional<std::string> TooMany(std::string_view field, int count, size_t max_count) {
  if (static_cast<size_t>(count) <= max_count) return std::nullopt;
  return std::string(field) + " lists " + std::to_string(count) + " entries; at most " + std::to_string(max_count);
}

}  // namespace

std::optional<std::string> NameProblem(std::string_view field, std::string_view value, size_t max_bytes,
                                       bool may_be_empty) {
  if (value.empty()) {
    if (may_be_empty) return std::nullopt;
    return std::string(field) + " is empty";
  }
  if (auto why = TooLong(field, value.size(), max_bytes)) return why;
  for (size_t i = 0; i < value.size(); ++i) {
    const auto byte = static_cast<unsigned char>(value[i]);
    if (byte < 0x20 || byte == 0x7f) {
      return std::string(field) + " holds a control byte (0x" + "0123456789abcdef"[byte >> 4] +
             "0123456789abcdef"[byte & 15] + ") at offset " + std::to_string(i) + "; names must be printable";
    }
  }
  return std::nullopt;
}

std::optional<std::string> ClientRequestProblem(const proto::Envelope& message, const FieldLimits& limits,
                                                bool authenticated) {
  if (!authenticated) {
    if (auto why = NameProblem("client_id", message.client_id(), limits.max_client_id_bytes, true)) return why;
  }
  switch (message.body_case()) {
    case proto::Envelope::kSubmit: {
      const auto& submit = message.submit();
      // An empty request id or circuit id gets its own, more specific answer.
      if (auto why = NameProblem("request_id", submit.request_id(), limits.max_request_id_bytes, true)) return why;
      if (auto why = NameProblem("circuit_id", submit.circuit_id(), limits.max_circuit_id_bytes, true)) return why;
      if (auto why = TooMany("witness_refs", submit.witness_refs_size(), limits.max_items_per_message)) return why;
      // Their sizes (--max-input-bytes, TOO_LARGE) and shape come later, per partition.
      if (auto why = TooMany("inputs", submit.inputs_size(), limits.max_items_per_message)) return why;
      if (auto why = TooMany("public_signals_sha256", submit.public_signals_sha256_size(), limits.max_items_per_message)) {
        return why;
      }
      // Sizes against --max-witness-bytes come later, with their own answer (TOO_LARGE).
      for (int p = 0; p < submit.witness_refs_size(); ++p) {
        if (auto why = wire::WitnessRefProblem(submit.witness_refs(p), std::numeric_limits<uint64_t>::max())) {
          return "witness_refs[" + std::to_string(p) + "]: " + *why;
        }
      }
      return std::nullopt;
    }
    case proto::Envelope::kDrainWorker:
      return NameProblem("worker_id", message.drain_worker().worker_id(), limits.max_worker_id_bytes, true);
    case proto::Envelope::kUndrainWorker:
      return NameProblem("worker_id", message.undrain_worker().worker_id(), limits.max_worker_id_bytes, true);
    default: return std::nullopt;
  }
}

std::optional<std::string> WorkerMessageProblem(const proto::Envelope& message, const FieldLimits& limits) {
  const size_t max_items = limits.max_items_per_message;
  switch (message.body_case()) {
    case proto::Envelope::kReady: {
      const auto& ready = message.ready();
      if (auto why = NameProblem("worker_id", ready.worker_id(), limits.max_worker_id_bytes)) return why;
      if (auto why = NameProblem("host", ready.host(), limits.max_host_bytes, true)) return why;
      if (auto why = NameProblem("backend", ready.backend(), limits.max_backend_bytes, true)) return why;
      if (auto why = TooMany("circuits", ready.circuits_size(), limits.max_circuits_per_worker)) return why;
      for (const std::string& circuit : ready.circuits()) {
        if (auto why = NameProblem("a circuit id", circuit, limits.max_circuit_id_bytes)) return why;
      }
      // Circuits it computes witnesses for from inputs: some of those it holds.
      if (auto why = TooMany("generates", ready.generates_size(), limits.max_circuits_per_worker)) return why;
      for (const std::string& circuit : ready.generates()) {
        if (auto why = NameProblem("a generated circuit id", circuit, limits.max_circuit_id_bytes)) return why;
        if (std::find(ready.circuits().begin(), ready.circuits().end(), circuit) == ready.circuits().end()) {
          return "generates lists circuit '" + circuit + "', which is not among its circuits";
        }
      }
      // One kind per circuit, in its order, or none (all circom).
      if (ready.circuit_kinds_size() != 0 && ready.circuit_kinds_size() != ready.circuits_size()) {
        return "circuit_kinds: " + std::to_string(ready.circuit_kinds_size()) + " kinds for " +
               std::to_string(ready.circuits_size()) + " circuits (one each, or none)";
      }
      for (const int kind : ready.circuit_kinds()) {
        if (kind != proto::CIRCUIT_KIND_CIRCOM && kind != proto::CIRCUIT_KIND_BELLMAN &&
            kind != proto::CIRCUIT_KIND_UNSPECIFIED) {
          return "circuit_kinds: unknown kind " + std::to_string(kind);
        }
      }
      return TooMany("in_progress", ready.in_progress_size(), max_items);
    }
    case proto::Envelope::kStarted: return TooMany("started items", message.started().items_size(), max_items);
    case proto::Envelope::kHandback: {
      const auto& handback = message.handback();
      if (auto why = TooMany("handback items", handback.items_size() + handback.aborted_size(), max_items)) return why;
      return TooLong("handback reason", handback.reason().size(), limits.max_text_bytes);
    }
    case proto::Envelope::kResult: {
      const auto& result = message.result();
      if (auto why = TooLong("proof_json", result.proof_json().size(), limits.max_proof_json_bytes)) return why;
      if (auto why = TooLong("public_json", result.public_json().size(), limits.max_public_json_bytes)) return why;
      // Exactly 192 for a bellman circuit (the verifier's check); more is never one.
      if (auto why = TooLong("proof_bytes", result.proof_bytes().size(), engine::kBellmanProofBytes)) return why;
      if (auto why = TooLong("error", result.error().size(), limits.max_text_bytes)) return why;
      if (auto why = TooLong("circuit_id", result.circuit_id().size(), limits.max_circuit_id_bytes)) return why;
      return TooLong("request_id", result.request_id().size(), limits.max_request_id_bytes);
    }
    case proto::Envelope::kDisconnect:
      return TooLong("disconnect reason", message.disconnect().reason().size(), limits.max_text_bytes);
    default: return std::nullopt;
  }
}

std::optional<Refusal> SubmitShapeProblem(const proto::SubmitRequest& request, bool has_frames,
                                          const BrokerOptions& options) {
  if (request.request_id().empty()) return Refusal{proto::ERROR_KIND_BAD_REQUEST, "SUBMIT without request_id"};
  const bool by_reference = request.witness_refs_size() > 0;
  const bool from_inputs = request.inputs_size() > 0;
  if (from_inputs && (by_reference || request.witness_bytes_size() > 0 || has_frames)) {
    return Refusal{proto::ERROR_KIND_BAD_REQUEST,
                   "a SUBMIT carries inputs (one input.json per partition), witnesses inline (witness_bytes and "
                   "frames) or witnesses by reference (witness_refs): one of them for all its partitions, not a mix"};
  }
  for (int p = 0; p < request.inputs_size(); ++p) {
    const std::string& input = request.inputs(p);
    if (input.size() > options.max_input_bytes) {
      return Refusal{proto::ERROR_KIND_TOO_LARGE, "input of partition " + std::to_string(p) + " is " +
                                                      std::to_string(input.size()) +
                                                      " bytes; the broker accepts at most " +
                                                      std::to_string(options.max_input_bytes) + " (--max-input-bytes)"};
    }
    if (auto why = wire::InputJsonProblem(input)) {
      return Refusal{proto::ERROR_KIND_BAD_REQUEST, "input of partition " + std::to_string(p) +
                                                        " is not an input.json: " + *why + " (nothing was accepted)"};
    }
  }
  if (by_reference && (request.witness_bytes_size() > 0 || has_frames)) {
    return Refusal{proto::ERROR_KIND_BAD_REQUEST,
                   "a SUBMIT carries its witnesses inline (witness_bytes and frames) or by reference (witness_refs), "
                   "not both"};
  }
  for (int p = 0; p < request.witness_refs_size(); ++p) {
    if (request.witness_refs(p).size() > options.limits.max_witness_bytes) {
      return Refusal{proto::ERROR_KIND_TOO_LARGE,
                     "witness of partition " + std::to_string(p) + " (" +
                         wire::RedactUrl(request.witness_refs(p).url()) + ") is " +
                         std::to_string(request.witness_refs(p).size()) + " bytes; the broker accepts at most " +
                         std::to_string(options.limits.max_witness_bytes) + " (--max-witness-bytes)"};
    }
  }
  for (int p = 0; p < request.witness_bytes_size(); ++p) {
    if (request.witness_bytes(p) > options.limits.max_witness_bytes) {
      return Refusal{proto::ERROR_KIND_TOO_LARGE,
                     "witness of partition " + std::to_string(p) + " is " + std::to_string(request.witness_bytes(p)) +
                         " bytes; the broker accepts at most " + std::to_string(options.limits.max_witness_bytes) +
                         " (--max-witness-bytes)"};
    }
  }
  uint64_t submit_bytes = 0;
  for (uint64_t bytes : request.witness_bytes()) submit_bytes += bytes;
  if (options.max_inline_job_bytes > 0) {
    uint64_t inline_bytes = submit_bytes;
    for (const std::string& input : request.inputs()) inline_bytes += input.size();
    if (inline_bytes > options.max_inline_job_bytes) {
      return Refusal{proto::ERROR_KIND_TOO_LARGE,
                     "SUBMIT carries " + std::to_string(inline_bytes) +
                         " bytes of witnesses or inputs inline; this "
                         "broker journals in etcd, which replicates every byte it keeps, and takes at most " +
                         std::to_string(options.max_inline_job_bytes) +
                         " inline (--max-inline-job-bytes): send the witnesses by reference (witness_refs, "
                         "docs/protocol.md)"};
    }
  }
  if (const uint64_t bound = IngressBounds::From(options).per_client_connection; submit_bytes > bound) {
    // Larger ones cannot even arrive whole: the ingress guard cuts the
    // connection first. This answer is for one that slipped between its looks.
    return Refusal{proto::ERROR_KIND_TOO_LARGE,
                   "SUBMIT carries " + std::to_string(submit_bytes) + " witness bytes; a connection may hold at most " +
                       std::to_string(bound) + " unread (--max-held-bytes-per-connection): split the job"};
  }
  return std::nullopt;
}

std::optional<Refusal> NewJobShapeProblem(const proto::SubmitRequest& request, size_t partitions,
                                          const BrokerOptions& options) {
  if (request.circuit_id().empty()) return Refusal{proto::ERROR_KIND_BAD_REQUEST, "SUBMIT without circuit_id"};
  if (partitions == 0) return Refusal{proto::ERROR_KIND_BAD_REQUEST, "SUBMIT without witnesses"};
  if (partitions > options.max_partitions) {
    return Refusal{proto::ERROR_KIND_BAD_REQUEST, "SUBMIT with " + std::to_string(partitions) +
                                                      (request.inputs_size() > 0 ? " inputs" : " witnesses") +
                                                      "; at most " + std::to_string(options.max_partitions) +
                                                      " (--max-partitions)"};
  }
  const proto::Priority priority = request.priority();
  if (!proto::Priority_IsValid(priority)) {
    return Refusal{proto::ERROR_KIND_BAD_REQUEST, "unknown priority value " + std::to_string(priority)};
  }
  if (!std::isfinite(request.deadline_unix_s()) || request.deadline_unix_s() < 0) {
    return Refusal{proto::ERROR_KIND_BAD_REQUEST, "deadline_unix_s must be a time since the epoch, or 0 for none"};
  }
  return std::nullopt;
}

}  // namespace zkfleet::broker
