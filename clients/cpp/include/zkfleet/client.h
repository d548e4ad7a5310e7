// zkfleet/client.h: the public C++ client of a zkfleet broker.
//
// An application submits proving jobs and collects their proofs through a
// zkfleet::client::Client; `zkctl` is built on it. The wire protocol it speaks
// is docs/protocol.md; docs/clients.md shows it in ten lines.
//
//   zkfleet::client::Options options;
//   options.endpoint = "tcp://broker:5555";
//   options.curve_secret_key_file = "keys/me.secret";       // zkctl keygen --out keys/me
//   options.broker_public_key_file = "keys/broker.pub";
//   std::unique_ptr<zkfleet::client::Client> client;
//   zkfleet::client::Status s = zkfleet::client::Client::Open(options, &client);
//   zkfleet::client::Job job;
//   if (s.ok()) s = client->Submit({.circuit = "transfer"}, {zkfleet::client::Witness::FromFile("w.wtns")}, &job);
//   zkfleet::proto::JobResult result;
//   if (s.ok()) s = client->WaitResult(job.job_seq, std::chrono::minutes(5), &result);
//   if (!s.ok()) std::cerr << s.ToString() << '\n';   // e.g. "job failed: ..."
//
// Errors are values: every operation returns a Status (never throws for a
// broker refusal, a timeout or a failed job; only std::bad_alloc escapes).
// The Status code says what went wrong, the message says it with context
// (the broker's own words, the endpoint, the job).
//
// Guarantees it keeps for the application (docs/protocol.md, "Guarantees"):
//  * A SUBMIT refused BUSY (over a queue limit) or UNAVAILABLE (the broker
//    cannot write its journal) is retried with the same request id after the
//    broker's retry-after hint, doubling per refusal up to 30 s, with +-25 %
//    jitter, until Options::busy_timeout; then kBusy / kUnavailable.
//  * When the connection is re-established (a broker restart, a network cut)
//    every SUBMIT without a reply is resent with its request id (the broker
//    answers with the existing job if it had made it durable: never two jobs)
//    and every job whose result is awaited is awaited again; a result that
//    arrives twice is handed out once. A request the broker refused
//    (kBadRequest, kTooLarge, kAuth, kRequestIdReused, ...) is reported once
//    and never resent.
//  * A SUCCEEDED result whose proof or public signals are not JSON is
//    kInvalidResult, never handed out as text.
//  * Names above the broker's bounds (kMaxRequestIdBytes, ... below) are
//    kInvalidArgument before anything is sent.
//  * A submit that ends in kTimeout has an unknown outcome (the broker may
//    have accepted it): submit again with the same request_id to find out.
//
// Security: CurveZMQ by default (the client's own keypair from `zkctl keygen`
// and the broker's public key); Options::insecure_plaintext only against a
// broker run with --insecure-plaintext. With CURVE the broker knows the client
// by its key's name in its allow-list (that name scopes request ids and owns
// jobs); in plaintext mode by Options::client_id.
//
// Ownership: Open() hands the caller a Client it owns; the Client owns its
// ZeroMQ context and socket and closes them when destroyed. Witness frames
// are referenced, not copied, until their SUBMIT is answered.
//
// Thread-safety: a Client is not thread-safe (ZeroMQ sockets must not be
// shared): one thread at a time, or one Client per thread. Status, Job and
// Witness are plain values.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "zkfleet.pb.h"  // the protocol's messages (schema/zkfleet.proto): results, status

namespace zkfleet::client {

// Bounds the broker puts on names in requests (it refuses longer ones, or
// ones holding a control byte, with BAD_REQUEST); the client checks them
// before sending and answers kInvalidArgument. The broker is the authority:
// these are the values of the version this client was built with (the
// Python client holds the same ones).
inline constexpr size_t kMaxRequestIdBytes = 128;  // SubmitOptions::request_id
inline constexpr size_t kMaxCircuitIdBytes = 128;  // SubmitOptions::circuit
inline constexpr size_t kMaxClientIdBytes = 128;   // Options::client_id (plaintext mode)
inline constexpr size_t kMaxWorkerIdBytes = 128;   // Drain / Undrain
inline constexpr size_t kMaxWitnessUrlBytes = 4096;  // WitnessRef::url
inline constexpr size_t kWitnessSha256Bytes = 32;    // WitnessRef::sha256
inline constexpr size_t kMaxInputJsonDepth = 32;     // SubmitOptions::inputs: nesting of one input.json

// What went wrong, by kind. Codes the broker sends map from its ErrorKind
// (docs/protocol.md, "Error kinds"); the others are the client's own.
enum class Code {
  kOk = 0,
  kBusy,             // BUSY refusals outlasted Options::busy_timeout; nothing was queued
  kUnknownCircuit,   // no registered worker holds the circuit
  kUnknownJob,       // never submitted by this client, or forgotten (past the dedup window)
  kJobFailed,        // the job ended but not SUCCEEDED (failed, dead-lettered, cancelled, expired)
  kTimeout,          // no reply (or no result) in time; is the broker running there?
  kAuth,             // FORBIDDEN by the key's role, or the CURVE handshake keeps failing: the key is in
                     // no allow-list, or the broker public key is wrong (reported at once, the message
                     // says which)
  kBadRequest,       // the broker could not accept the request (e.g. no witnesses, bad field)
  kRequestIdReused,  // this client used the request id before with another payload
  kForeignJob,       // another client's job (older brokers; newer ones answer kUnknownJob)
  kTooLarge,         // a frame above the broker's limits
  kUnknownWorker,    // drain or undrain of an unregistered worker
  kVersionMismatch,  // the broker speaks another protocol version
  kInvalidArgument,  // bad input on this side (missing witness file, bad key file, ...)
  kIo,               // local I/O or socket failure
  kInternal,         // anything else (e.g. the broker answered with the wrong message type)
  kUnavailable,      // UNAVAILABLE (the broker cannot write its journal; nothing was accepted)
                     // outlasted Options::busy_timeout
  kInvalidResult,    // a SUCCEEDED result that is not a proof (proof_json or public_json not JSON)
  kResultExpired,    // the job ended but its result passed the broker's retention (--result-ttl):
                     // Submit the same request id with the same witnesses to prove it again
  kNotLeader,        // a standby broker answered (brokers on etcd): the message names the leader's
                     // client endpoint; give it, or every broker's endpoint (a list follows the leader)
};

// "BUSY", "UNKNOWN_CIRCUIT", ... "OK".
const char* CodeName(Code code);

// The result of an operation: ok(), or a code and a message with context.
class Status {
 public:
  Status() = default;  // OK
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  // For errors from the broker: "broker: <KIND>: <its message>"; otherwise
  // what failed, where.
  const std::string& message() const { return message_; }
  // "OK", or "<CODE>: <message>".
  std::string ToString() const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

struct Options {
  // The broker's client endpoint, or every broker's of a fleet whose brokers
  // share an etcd journal, comma-separated ("tcp://b1:5555,tcp://b2:5555"):
  // the client follows whichever leads, resending what a lost one held.
  std::string endpoint = "tcp://127.0.0.1:5555";
  // CURVE (the default): this client's NAME.secret and the broker's NAME.pub
  // (brokers with keys of their own: one file per endpoint, comma-separated).
  std::string curve_secret_key_file;
  std::string broker_public_key_file;
  // No CURVE: neither encrypted nor authenticated. Trusted networks only.
  bool insecure_plaintext = false;
  // Plaintext mode only: the declared identity ("" = the broker's "anonymous";
  // at most kMaxClientIdBytes). Not sent with CURVE, where the key is the identity.
  std::string client_id;
  // How long one request waits for its reply.
  std::chrono::milliseconds reply_timeout{10000};
  // How long BUSY and UNAVAILABLE refusals of a SUBMIT are retried before
  // kBusy / kUnavailable.
  std::chrono::milliseconds busy_timeout{300000};
  // Random request ids (SubmitOptions::request_id left empty) start with this.
  std::string request_id_prefix = "zkfleet-";
  // Called before each wait on a BUSY or UNAVAILABLE refusal: (the broker's
  // words, "broker: BUSY: ..." or "broker: UNAVAILABLE: ...", seconds to
  // wait). For progress messages; must not throw.
  std::function<void(const std::string& what, double wait_s)> on_busy;
};

// One partition's witness: a whole .wtns file (what circom's witness
// calculator writes), mapped from disk or held in memory.
class Witness {
 public:
  // The file at `path`, mapped read-only when submitted (not copied).
  static Witness FromFile(std::string path);
  // The bytes of a .wtns file (moved into the frame, not copied).
  static Witness FromBytes(std::string bytes);

  bool from_file() const { return from_file_; }
  const std::string& path() const { return data_; }

 private:
  friend class Client;
  bool from_file_ = false;
  std::string data_;  // the path, or the bytes
};

// One partition's witness by reference (docs/clients.md, "Witnesses by
// reference"): the worker fetches the .wtns from `url` itself, so its bytes
// never pass through the client or the broker. The worker proves only if
// what it fetched is exactly `size` bytes with this SHA-256; the store must
// keep the object unchanged until the job's result arrives. The URL may carry
// a credential (a presigned query string, userinfo): the broker, the workers
// and zkctl show it redacted (no userinfo, query or fragment).
struct WitnessRef {
  std::string url;      // file:///..., http://... or https://...; at most kMaxWitnessUrlBytes
  uint64_t size = 0;    // the object's exact size in bytes (> 0)
  std::string sha256;   // SHA-256 of those bytes: kWitnessSha256Bytes raw bytes (not hex)
};

// What a submit asks for. Empty request_id: the client makes a random one
// (returned in Job::request_id); pass your own to make retries idempotent
// across process restarts.
struct SubmitOptions {
  std::string circuit;
  zkfleet::proto::Priority priority = zkfleet::proto::PRIORITY_NORMAL;
  std::string request_id;
  double deadline_unix_s = 0;  // 0 = none; else the broker expires the job after it
  // Optional, none or one per witness: the public signals the client expects
  // each partition's proof to carry, as snarkjs writes public.json (a JSON
  // array of decimal strings). Their digests go with the SUBMIT, and a broker
  // holding the circuit's verification key refuses (kBadRequest) a witness
  // that commits to others, and checks every proof against them.
  std::vector<std::string> expected_public_json;
  // Witnesses by reference, one per partition, instead of Witness values
  // (a submit carries one or the other, never both: kInvalidArgument). No
  // frame follows the SUBMIT. A broker holding the circuit's verification key
  // cannot read a referenced witness, so it then requires
  // expected_public_json (one per reference) and refuses the SUBMIT
  // (kBadRequest) without it. Each reference is checked before anything is
  // sent (kInvalidArgument): a URL that is empty, above kMaxWitnessUrlBytes,
  // holds a space or a control byte, or is not file://, http:// or https://;
  // a size of 0; a sha256 that is not kWitnessSha256Bytes bytes.
  std::vector<WitnessRef> witness_refs;
  // A job from inputs (docs/clients.md, "Jobs from inputs"): one circom
  // input.json per partition (its text: a JSON object), instead of Witness
  // values or witness_refs (a submit carries exactly one of the three:
  // kInvalidArgument otherwise). The workers compute the witnesses; the
  // broker routes the job only to workers that generate the circuit's
  // witnesses (kUnknownCircuit when none does). Each input is checked before
  // anything is sent (kInvalidArgument, naming the partition): strict JSON
  // whose top-level value is an object, nested at most kMaxInputJsonDepth.
  // The broker bounds each one's size (its --max-input-bytes, 1 MiB by
  // default: kTooLarge above). expected_public_json is optional here (none,
  // or one per input): without it the broker (holding the circuit's key)
  // verifies each proof for the public signals it carries, but cannot tell
  // whether they came from these inputs.
  std::vector<std::string> inputs;
};

// An accepted job, as the broker acknowledged it.
struct Job {
  uint64_t job_seq = 0;
  std::string request_id;
  bool duplicate = false;       // the request id was known: the existing job
  zkfleet::proto::JobState state = zkfleet::proto::JOB_STATE_UNSPECIFIED;  // at acknowledgement
  bool result_expired = false;  // set with kResultExpired (a lookup, or a broker older than
                                // this client): it ran, but its proofs passed the retention
};

class Client {
 public:
  // Connects to options.endpoint (ZeroMQ connects lazily: an absent broker
  // shows as kTimeout on the first request). Fails only on bad options
  // (kInvalidArgument, e.g. a client_id above kMaxClientIdBytes) or key files
  // (kInvalidArgument / kIo, naming the file).
  static Status Open(const Options& options, std::unique_ptr<Client>* client);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Submits one job, one witness per partition (or one reference per
  // partition in options.witness_refs, or one input.json per partition in
  // options.inputs, with `witnesses` empty), and waits for
  // the broker's acknowledgement (the job is durable once this returns OK;
  // for references: the references are, the bytes are the store's to keep).
  // No witnesses, references or inputs: only looks up `options.request_id`. The job's result is pushed to this
  // client when it ends: collect it with WaitResult(). kInvalidArgument,
  // nothing sent, for a request id or circuit above kMaxRequestIdBytes /
  // kMaxCircuitIdBytes or holding a control byte. kResultExpired (`*job`
  // set) for a lookup of a request whose result passed the broker's
  // retention; with the same witnesses the broker proves it again instead.
  Status Submit(const SubmitOptions& options, std::vector<Witness> witnesses, Job* job);

  // The result of a job this Client submitted (pushed by the broker), or of
  // any job after Await(). OK only for a SUCCEEDED job; kJobFailed (the state
  // and the reason in the message) when it ended otherwise: `*result` is set
  // in both cases. kTimeout when it has not ended within `timeout`.
  // kInvalidResult (`*result` untouched) for a SUCCEEDED result whose proof or
  // public signals are not JSON.
  Status WaitResult(uint64_t job_seq, std::chrono::milliseconds timeout, zkfleet::proto::JobResult* result);

  // Asks the broker for a job's result (e.g. one submitted by an earlier
  // process under the same key) and waits for it, as WaitResult().
  Status Await(uint64_t job_seq, std::chrono::milliseconds timeout, zkfleet::proto::JobResult* result);

  // Cancels a job this client submitted; `*reply` says whether it was still
  // running (cancelled) or had already ended.
  Status Cancel(uint64_t job_seq, zkfleet::proto::CancelReply* reply);

  // One job's state (its own jobs; observe and admin keys read every client's).
  Status GetJob(uint64_t job_seq, zkfleet::proto::JobInfo* info);
  // A new round of a FAILED or DEAD_LETTERED job (docs/grpc.md, "RetryJob"):
  // `attempt` is the retry to make (1 for the first); one already made
  // returns the job as it is. Await the round with Await().
  Status RetryJob(uint64_t job_seq, uint32_t attempt, zkfleet::proto::JobInfo* info);
  // One page of jobs, newest first (docs/grpc.md, "Listing"): its own jobs,
  // or, for observe and admin keys, every client's.
  Status ListJobs(const zkfleet::proto::ListJobsRequest& request, zkfleet::proto::ListJobsReply* reply);

  // Queues, workers and counters (needs the observe or admin role).
  Status GetStatus(zkfleet::proto::StatusReply* status);
  // The registered workers (needs the observe or admin role).
  Status Workers(std::vector<zkfleet::proto::WorkerInfo>* workers);

  // Drains a worker (admin role). With `wait`, returns when it has left
  // (reply->finished, with its phases), waiting at most `timeout`.
  Status Drain(const std::string& worker_id, bool wait, std::chrono::milliseconds timeout,
               zkfleet::proto::DrainWorkerReply* reply);

  // Lets a worker the broker holds DRAINING (zkctl drain) or FAULTED take
  // work again (admin role); `reply->state()` is its state now. kUnknownWorker
  // for an unregistered worker; kBadRequest from a broker that predates
  // UNDRAIN (it cannot read the request).
  Status Undrain(const std::string& worker_id, zkfleet::proto::UndrainWorkerReply* reply);
  // The broker reads its allow-lists and verification keys again, as on
  // SIGHUP (admin role); `reply` says which circuits were added, removed,
  // changed or kept, and what failed to load. `workers` (ids, or "*" for
  // every connected one) are told to read their circuits again too
  // (`reply->workers_told()`). kBadRequest from a broker that predates RELOAD.
  Status Reload(const std::vector<std::string>& workers, zkfleet::proto::ReloadReply* reply);

  const Options& options() const;
  // Times the connection was re-established and requests were resent.
  uint64_t reconnections() const;
  // JobResult copies dropped because the job's result was already handed
  // out: the broker answers every wait (a re-AWAIT after a reconnection, a
  // second Submit of one request id), a result is handed out once. The
  // Python client's duplicate_results_dropped; tests read it to see copies.
  uint64_t duplicate_results_dropped() const;

 private:
  struct Impl;
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace zkfleet::client
