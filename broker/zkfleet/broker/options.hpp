// Broker configuration (zkbroker's command line fills it in).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "zkfleet/broker/admission.hpp"
#include "zkfleet/fleet/curve_keys.hpp"
#include "zkfleet/fleet/sockets.hpp"
#include "zkfleet/storage/journal.hpp"

namespace zkfleet::broker {

// The broker's journal is zkfleet_storage's (storage/zkfleet/storage/journal.hpp).
using storage::Journal;
using storage::JobIndex;
using storage::JournalOptions;
using storage::SyncMode;
using storage::ParseSyncMode;
using storage::SyncModeName;

class VerificationKeys;

// Bounds on every field a peer sends: a message over one is refused
// (BAD_REQUEST to a client, naming the bound) or dropped and counted (a
// worker), before it costs anything. Names (ids) must also be printable: no
// control bytes, no NUL (they are parts of journal keys).
struct FieldLimits {
  size_t max_request_id_bytes = 128;
  size_t max_circuit_id_bytes = 128;
  size_t max_client_id_bytes = 128;  // a plaintext client's declared id
  size_t max_worker_id_bytes = 128;
  size_t max_host_bytes = 256;
  size_t max_backend_bytes = 32;
  size_t max_circuits_per_worker = 256;
  size_t max_items_per_message = 4096;  // READY in_progress, STARTED, HANDBACK
  size_t max_text_bytes = 4096;         // errors, reasons
  size_t max_proof_json_bytes = 16 << 10;
  size_t max_public_json_bytes = 4 << 20;
};

// The gRPC front door (grpc_front_door.hpp, docs/grpc.md).
struct GrpcOptions {
  std::string listen;               // host:port ("" = no gRPC)
  std::string cert_file, key_file;  // the broker's certificate chain and key (PEM)
  std::string client_ca_file;       // CAs whose client certificates are accepted (PEM)
  bool insecure_plaintext = false;  // no TLS: callers name themselves (zkfleet-client-id)
  uint64_t max_inline_bytes = 16ull << 20;  // inline witnesses per SubmitJob, all partitions
  // Per caller (a client key, or a plaintext client id): calls open at once
  // (AwaitJob streams included), and inline witness bytes of its SubmitJobs
  // not yet answered. Beyond either a call is refused RESOURCE_EXHAUSTED:
  // one caller cannot hold the broker's memory (issue 47).
  uint32_t max_calls_per_caller = 1024;
  uint64_t max_inflight_bytes_per_caller = 256ull << 20;
};

struct BrokerOptions {
  std::string client_endpoint = "tcp://127.0.0.1:5555";  // ROUTER for clients (bind)
  std::string worker_endpoint = "tcp://127.0.0.1:5556";  // ROUTER for workers (bind)
  // Heartbeat period; a worker silent for `liveness` periods is dead. After a
  // restart, leases recovered from the journal wait as long for their worker.
  std::chrono::milliseconds heartbeat_interval{1000};
  int liveness = 3;
  // Started leases per work item before the job is dead-lettered.
  uint32_t max_attempts = 3;
  // How long finished jobs' results stay retrievable (AWAIT, duplicate SUBMIT).
  std::chrono::milliseconds result_ttl{std::chrono::minutes(10)};
  // How long a (client, request id) is remembered, from submission: a
  // resubmission within it never runs the job again. Durable.
  std::chrono::milliseconds dedup_window{std::chrono::hours(24)};
  // Accept jobs for circuits no registered worker has announced.
  bool accept_unrouted = false;
  // For this long after the broker starts, a SUBMIT for a circuit some worker
  // announced in an earlier life (the journal remembers) is accepted and
  // queued although no worker holds it yet: the fleet is still reconnecting.
  // 0 = 2 x liveness x heartbeat_interval (KnownCircuitGrace()).
  std::chrono::milliseconds known_circuit_grace{0};
  std::chrono::milliseconds KnownCircuitGrace() const {
    return known_circuit_grace.count() > 0 ? known_circuit_grace : 2 * liveness * heartbeat_interval;
  }
  uint32_t max_partitions = 1024;
  // Largest input.json of a job from inputs (SubmitRequest.inputs), each
  // partition's (--max-input-bytes): above it a SUBMIT is refused TOO_LARGE.
  // The inputs travel inside the SUBMIT envelope, so --max-message-bytes
  // bounds them all together too.
  uint64_t max_input_bytes = 1 << 20;
  // Suggested wait before retrying a SUBMIT refused as BUSY.
  std::chrono::milliseconds busy_retry_after{1000};
  AdmissionLimits admission;
  FieldLimits fields;
  // Credit the broker grants one worker at most, whatever it announces:
  // JOBs leased to it and not yet answered.
  uint32_t max_credit_per_worker = 16;
  // A lease its worker has not STARTED within this (while the worker proves
  // nothing else) goes back to the queue and counts against the worker.
  std::chrono::milliseconds lease_start_timeout{std::chrono::seconds(30)};
  // A started lease running longer than max(lease_overrun_min,
  // lease_overrun_factor x the longest proof of its circuit seen so far) is
  // taken back and counts against the worker.
  std::chrono::milliseconds lease_overrun_min{std::chrono::minutes(10)};
  double lease_overrun_factor = 10;
  // Strikes (rejected RESULTs, reclaimed leases, started work lost to a
  // disconnect, messages over a bound) within `strike_window` that make a
  // worker's key FAULTED: nothing more is routed to any worker of the key
  // until `zkctl undrain` (broker/strike_book.hpp).
  uint32_t strikes_to_fault = 3;
  std::chrono::milliseconds strike_window{std::chrono::hours(1)};
  // A worker's "the client's fault" (a RESULT not ok, not retryable) is
  // final only when a worker of another key agrees; with none to ask, the
  // item waits this long for one (never leased to a claimant's key again),
  // then fails with the first verdict.
  std::chrono::milliseconds verdict_confirm_wait{std::chrono::seconds(30)};
  // Verification keys by circuit (--verification-key); every RESULT of such
  // a circuit is verified before it is stored. A SUBMIT for a circuit without
  // one is refused unless the circuit is listed in unverified_circuits (or
  // "*" is): benchmark circuits whose workers do not prove (--instant).
  std::shared_ptr<const VerificationKeys> verification_keys;
  // Where those keys come from, read again by a reload (SIGHUP, zkctl
  // reload): the --verification-key specs (fixed for the process's life)
  // and --verification-key-dir (its CIRCUIT.json / CIRCUIT.vk files; empty:
  // none). A circuit named in both takes the spec's key.
  std::vector<std::string> verification_key_specs;
  std::filesystem::path verification_key_dir;
  std::set<std::string> unverified_circuits;
  unsigned verify_threads = 2;
  JournalOptions journal;  // journal.dir is --data-dir, or journal.etcd is --journal etcd://...
  // Inline witness and input bytes one SUBMIT may carry (0: no bound beyond
  // the others). The etcd journal sets it: etcd replicates every byte it
  // keeps through its log, so large witnesses travel by reference there.
  uint64_t max_inline_job_bytes = 0;
  // CURVE on both ROUTERs with this keypair, peers checked against the
  // allow-lists in allow_dir (workers/, clients/) by the ZAP handler; or
  // plaintext (--insecure-plaintext, a trusted network only).
  struct Security {
    bool plaintext = false;
    fleet::CurveKeyPair server;
    std::filesystem::path allow_dir;
  } security;
  GrpcOptions grpc;
  fleet::SocketLimits limits;
  // Bytes a connection (and all of them together) may make the broker hold
  // before the broker has read them: libzmq buffers a multipart message whole
  // (IngressGuard cuts a connection over its bound). 0: derived from
  // `limits` (IngressBounds::From). A SUBMIT larger than the per-connection
  // bound is refused as TOO_LARGE, or its connection is cut before it is read.
  uint64_t max_held_bytes_per_connection = 0;
  uint64_t max_held_bytes = 0;
  // ZeroMQ I/O threads for zkbroker's context (transfers and CURVE
  // encryption run there). BrokerServer reads the count from the context it
  // is given: with 2 or more, the worker ROUTER's connections get the first
  // half and the client ROUTER's the rest, so encrypting JOBs never queues
  // behind decrypting SUBMITs.
  int io_threads = 4;
};

// The bounds IngressGuard enforces, from the options: bytes received on a
// connection (all connections together) that the broker has not read yet.
struct IngressBounds {
  uint64_t per_client_connection = 0;
  uint64_t per_worker_connection = 0;
  uint64_t total = 0;

  // Clients: --max-held-bytes-per-connection, or one Envelope at
  // --max-message-bytes and two witnesses at --max-witness-bytes (a SUBMIT
  // with the next one behind it) plus 64 KiB of handshake and framing.
  // Workers send single-frame messages only: two Envelopes plus 64 KiB.
  // Total: --max-held-bytes, or twice the client bound.
  static IngressBounds From(const BrokerOptions& options) {
    constexpr uint64_t kHandshakeAndFraming = 64 << 10;
    const uint64_t message = options.limits.max_message_bytes;
    IngressBounds bounds;
    bounds.per_client_connection = options.max_held_bytes_per_connection
                                       ? options.max_held_bytes_per_connection
                                       : message + 2 * uint64_t{options.limits.max_witness_bytes} + kHandshakeAndFraming;
    bounds.per_worker_connection = 2 * message + kHandshakeAndFraming;
    bounds.total = options.max_held_bytes ? options.max_held_bytes : 2 * bounds.per_client_connection;
    return bounds;
  }
};

}  // namespace zkfleet::broker
