#include "zkfleet/broker/broker_server.hpp"

#include <malloc.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <exception>
#include <string_view>
#include <thread>

#include <spdlog/spdlog.h>

#include "zkfleet/common/error.hpp"
#include "zkfleet/wire/local_paths.hpp"
#include "zkfleet/wire/names.hpp"
#include "zkfleet/wire/protocol.hpp"
#include "zkfleet/fleet/sockets.hpp"

namespace zkfleet::broker {
namespace {

// Messages taken from one socket per loop turn, so neither side starves the other.
constexpr int kReceiveBudget = 512;
// While the journal cannot be written: how often it is probed, what a refused
// client is told to wait, and how often repeated faults are logged.
constexpr auto kProbeInterval = std::chrono::seconds(1);
constexpr uint32_t kUnavailableRetryAfterMs = 1000;
constexpr auto kFaultLogInterval = std::chrono::seconds(30);
// How often freed memory is handed back to the system (malloc_trim: a few ms).
constexpr auto kTrimInterval = std::chrono::seconds(10);
// How often a broker leading through etcd looks whether its lease ended.
constexpr auto kLeadershipCheck = std::chrono::milliseconds(200);
// How long a new leader waits for a port its predecessor still holds.
constexpr auto kBindWaitWhileLeading = std::chrono::seconds(30);

// A journal error without its "journal: " prefix (the callers name the journal).
std::string FaultText(std::string text) {
  constexpr std::string_view kPrefix = "journal: ";
  if (text.rfind(kPrefix, 0) == 0) text.erase(0, kPrefix.size());
  return text;
}
std::string FaultText(const Error& e) { return FaultText(std::string(e.what())); }

}  // namespace

BrokerServer::BrokerServer(zmq::context_t& context, BrokerOptions options, metrics::BrokerMetrics* metrics)
    : options_(std::move(options)),
      metrics_(metrics),
      clients_(context, zmq::socket_type::router),
      workers_(context, zmq::socket_type::router) {
  verifier_ = std::make_unique<ResultVerifier>(options_.verify_threads);
  // The journal opens in Bind(), once everything a flag can get wrong (the
  // allow-lists, the keys, the endpoints) has been checked: a broker that
  // cannot start leaves the journal and its epoch as they were.
  fleet::ConfigureRouter(clients_, options_.limits);
  fleet::ConfigureRouter(workers_, options_.limits);
  // The context's own I/O thread count (an affinity naming a thread it does
  // not have would leave a connection without one).
  const int io_threads = zmq_ctx_get(context.handle(), ZMQ_IO_THREADS);
  if (io_threads >= 2 && io_threads <= 64) {
    // Witness frames are large: workers' and clients' connections get I/O
    // threads of their own (ZMQ_AFFINITY, set before bind).
    const int for_workers = io_threads / 2;
    const uint64_t all = io_threads == 64 ? ~0ull : (1ull << io_threads) - 1;
    const uint64_t workers_mask = (1ull << for_workers) - 1;
    workers_.set(zmq::sockopt::affinity, workers_mask);
    clients_.set(zmq::sockopt::affinity, all & ~workers_mask);
  }
  // Monitors both ROUTERs (set before they bind); CURVE adds 33 bytes a frame.
  guard_ = std::make_unique<IngressGuard>(context, clients_, workers_, IngressBounds::From(options_),
                                          !options_.security.plaintext, metrics_);
  if (options_.security.plaintext) {
    spdlog::warn("--insecure-plaintext: the broker's ports are neither authenticated nor encrypted; anyone who "
                 "reaches them can submit, drain and act as a worker");
    return;
  }
  auto loaded = PeerAllowList::Load(options_.security.allow_dir);
  for (const auto& warning : loaded.warnings) spdlog::warn("allow-list: {}", warning);
  spdlog::info("allow-lists from {}: {} worker keys, {} client keys", options_.security.allow_dir.string(),
               loaded.list.count(PeerKind::kWorker), loaded.list.count(PeerKind::kClient));
  initial_allow_list_ = loaded.list;  // applied to the core when it starts (Bind)
  zap_ = std::make_unique<ZapHandler>(context, std::move(loaded.list));
  zap_->set_on_rejected([this](PeerKind endpoint, RejectReason reason) {
    BrokerCounters& counters = core_->counters();
    switch (reason) {
      case RejectReason::kUnknownKey: ++counters.auth_rejected_unknown_key; break;
      case RejectReason::kWrongEndpoint: ++counters.auth_rejected_wrong_endpoint; break;
      default: ++counters.auth_rejected_mechanism; break;
    }
    if (metrics_) metrics_->AuthRejected(endpoint == PeerKind::kWorker ? "workers" : "clients", RejectReasonName(reason));
  });
  fleet::ConfigureCurveServer(clients_, options_.security.server, kClientZapDomain);
  fleet::ConfigureCurveServer(workers_, options_.security.server, kWorkerZapDomain);
}

void BrokerServer::StartCore() {
  std::string fault;
  try {
    core_ = std::make_unique<BrokerCore>(options_, *journal_, metrics_);
    core_->set_reloader([this] { return Reload(); });
    return;
  } catch (const Error& e) {
    // Reads that fail fail again below; this is for a start that cannot be
    // written (the new epoch's commit): a full disk, a refused write.
    if (e.code() != ErrorCode::kIo) throw;
    fault = FaultText(e);
  }
  journal_->Abort();
  BrokerCore::Resume resume;
  // The epoch BeginLife took, in memory only until a commit succeeds.
  resume.epoch = journal_->epoch();
  spdlog::error("the journal in {} cannot be written at start ({}); the broker starts in epoch {} (not yet "
                "persisted) from what the journal holds, and takes no new work until it can write",
                options_.journal.dir.string(), fault, resume.epoch);
  core_ = std::make_unique<BrokerCore>(options_, *journal_, metrics_, resume);
  core_->set_reloader([this] { return Reload(); });
  ++core_->counters().storage_faults;
  if (metrics_) metrics_->StorageFault(metrics::StorageFaultKind::kWrite);
  EnterUnavailable(fault);
}

void BrokerServer::EnterUnavailable(const std::string& fault) {
  const auto now = Clock::now();
  core_->SetUnavailable("the journal in " + options_.journal.dir.string() + " cannot be written: " + fault);
  if (metrics_) metrics_->SetUnavailable(true);
  if (!unavailable_since_) unavailable_since_ = now;
  next_probe_ = now + kProbeInterval;
}

void BrokerServer::OnStorageFault(const Error& error) {
  const std::string fault = FaultText(error);
  journal_->Abort();
  // Another broker leads: nothing more may be written or answered here.
  if (error.code() == ErrorCode::kNotLeader) throw error;
  // None of the turn's client replies went out (they wait for the commit),
  // and none of them may now: what they report is not durable. Each becomes
  // UNAVAILABLE; a client retries with the same request id, which is safe
  // whatever the request was. Messages to workers are dropped: the rebuilt
  // core does not know the leases they carry.
  std::vector<ReplyTo> refused;
  auto add = [&](ReplyTo to) {
    for (const ReplyTo& r : refused) {
      if (r.identity == to.identity && r.correlation_id == to.correlation_id) return;
    }
    refused.push_back(std::move(to));
  };
  for (const Outgoing& out : core_->outbox()) {
    if (out.to == Outgoing::To::kClient) add({out.identity, out.envelope.correlation_id()});
  }
  if (handling_client_) add(*handling_client_);
  handling_client_.reset();
  size_t dropped = 0;
  for (const Outgoing& out : core_->outbox()) dropped += out.to == Outgoing::To::kWorker ? 1 : 0;
  core_->outbox().clear();

  // The core's memory holds the dropped turn: rebuild it from the journal
  // (reads only). Throws when the journal cannot be read: the broker exits.
  const BrokerCore::Resume resume = core_->ResumeState();
  core_ = std::make_unique<BrokerCore>(options_, *journal_, metrics_, resume);
  core_->set_reloader([this] { return Reload(); });
  ++core_->counters().storage_faults;
  if (metrics_) metrics_->StorageFault(metrics::StorageFaultKind::kWrite);
  const bool first = !unavailable_since_;
  EnterUnavailable(fault);

  const auto now = Clock::now();
  if (first || now >= next_fault_log_) {
    spdlog::error("journal write failed: {}. The loop turn was dropped (the journal is as last committed), {} "
                  "client replies became UNAVAILABLE, {} messages to workers were dropped; the broker rebuilt its "
                  "state from the journal and takes no new work until the journal can be written (probed every "
                  "{} s){}",
                  fault, refused.size(), dropped, std::chrono::duration_cast<std::chrono::seconds>(kProbeInterval).count(),
                  faults_not_logged_ ? "; " + std::to_string(faults_not_logged_) + " more faults since the last line"
                                     : std::string());
    next_fault_log_ = now + kFaultLogInterval;
    faults_not_logged_ = 0;
  } else {
    ++faults_not_logged_;
  }

  const std::string message = "the broker could not write its journal (" + wire::WithoutLocalPaths(fault) +
                              "); nothing of this request was accepted; retry with the same request id";
  for (const ReplyTo& to : refused) {
    proto::Envelope reply = wire::MakeErrorReply(proto::ERROR_KIND_UNAVAILABLE, message, to.correlation_id);
    reply.mutable_error()->set_retry_after_ms(kUnavailableRetryAfterMs);
    if (SendToClient(to.identity, reply, wire::EncodeEnvelope(reply), nullptr) != fleet::SendStatus::kOk) {
      ++core_->counters().replies_undeliverable;
    }
  }
}

void BrokerServer::ProbeJournal(Clock::time_point now) {
  if (!core_->unavailable() || now < next_probe_) return;
  next_probe_ = now + kProbeInterval;
  std::string why;
  if (journal_->ProbeWritable(&why)) {
    const double seconds =
        unavailable_since_ ? std::chrono::duration<double>(now - *unavailable_since_).count() : 0.0;
    core_->SetUnavailable(std::nullopt);
    if (metrics_) metrics_->SetUnavailable(false);
    unavailable_since_.reset();
    faults_not_logged_ = 0;
    next_fault_log_ = {};
    spdlog::info("journal writable again: {} (after {:.1f} s); the broker takes new work", options_.journal.dir.string(),
                 seconds);
    return;
  }
  if (now >= next_fault_log_) {
    spdlog::warn("the journal still cannot be written ({}); new work is refused as UNAVAILABLE (logged every {} s)",
                 FaultText(why), std::chrono::duration_cast<std::chrono::seconds>(kFaultLogInterval).count());
    next_fault_log_ = now + kFaultLogInterval;
  }
}

void BrokerServer::OnHandshakeFailures() {
  for (const HandshakeFailure& failure : guard_->TakeHandshakeFailures()) {
    // Plaintext: no handshake is authenticated, so none is counted as refused.
    if (!zap_) continue;
    // A failed handshake that never reached ZAP: no CURVE (plaintext) or not ZMTP.
    ++core_->counters().auth_rejected_mechanism;
    if (metrics_) metrics_->AuthRejected(failure.endpoint == PeerKind::kWorker ? "workers" : "clients", "mechanism");
    auto now = Clock::now();
    if (now >= next_mechanism_log_) {
      next_mechanism_log_ = now + std::chrono::minutes(1);
      spdlog::warn("refused a peer on the {} port ({}): its handshake failed before authentication (no CURVE, "
                   "or the wrong broker public key?); logged at most once a minute",
                   failure.endpoint == PeerKind::kWorker ? "worker" : "client", failure.address);
    }
  }
}

void BrokerServer::ApplyAllowList(const PeerAllowList& list) {
  std::set<std::string> workers, clients;
  for (const AllowedPeer& peer : list.peers()) (peer.kind == PeerKind::kWorker ? workers : clients).insert(peer.name);
  core_->SetAllowedKeys(std::move(workers), std::move(clients), Clock::now());
}

void BrokerServer::VerifyResults(Clock::time_point now) {
  for (VerifyTask& task : core_->verify_outbox()) verifier_->Submit(std::move(task));
  core_->verify_outbox().clear();
  for (const VerifyVerdict& verdict : verifier_->TakeFinished()) core_->OnVerified(verdict, now);
}

Peer BrokerServer::PeerOf(const zmq::message_t& payload) const {
  Peer peer;
  if (!zap_) return peer;  // plaintext: unauthenticated
  const char* user = zmq_msg_gets(payload.handle(), "User-Id");
  const char* role = zmq_msg_gets(payload.handle(), "Role");
  peer.authenticated = true;
  peer.key_name = user ? user : "";
  peer.role = role ? ParseRole(role).value_or(Role::kSubmit) : Role::kSubmit;
  return peer;
}

void BrokerServer::Bind() {
  auto bind = [this](zmq::socket_t& socket, const std::string& endpoint, const char* what) {
    // A broker that has just become the leader may find its ports still held
    // by the ex-leader it replaces on the same address (paused, about to
    // find itself fenced, or about to be killed): it waits for them while it
    // leads, rather than exiting and campaigning again in a loop.
    const auto give_up = Clock::now() + kBindWaitWhileLeading;
    for (bool logged = false;;) {
      try {
        socket.bind(endpoint);
        return;
      } catch (const zmq::error_t& e) {
        const bool wait = leadership_ && e.num() == EADDRINUSE && !leadership_->lost() && Clock::now() < give_up;
        if (!wait) {
          throw Error(ErrorCode::kIo, std::string("cannot bind the ") + what + " socket to " + endpoint + ": " +
                                          e.what());
        }
        if (!logged) {
          spdlog::warn("the {} port {} is still in use (by the broker that led before?); waiting for it", what,
                       endpoint);
          logged = true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
  };
  bind(clients_, options_.client_endpoint, "client");
  bind(workers_, options_.worker_endpoint, "worker");
  journal_ = Journal::Open(options_.journal);
  StartCore();
  if (!options_.grpc.listen.empty()) {
    if (options_.grpc.insecure_plaintext != options_.security.plaintext) {
      throw Error(ErrorCode::kInvalidArgument,
                  options_.security.plaintext
                      ? "--insecure-plaintext needs --grpc-insecure-plaintext too: ZeroMQ clients are not "
                        "authenticated, so gRPC callers would be trusted more than they"
                      : "--grpc-insecure-plaintext needs --insecure-plaintext: CURVE clients are "
                        "authenticated, and a plaintext gRPC caller could claim any of their names");
    }
    grpc_ = std::make_unique<GrpcFrontDoor>(options_.grpc, initial_allow_list_.value_or(PeerAllowList()), metrics_);
  }
  if (initial_allow_list_) {
    ApplyAllowList(*initial_allow_list_);
    initial_allow_list_.reset();
  }
}

std::string BrokerServer::client_endpoint() const { return clients_.get(zmq::sockopt::last_endpoint); }
std::string BrokerServer::worker_endpoint() const { return workers_.get(zmq::sockopt::last_endpoint); }

void BrokerServer::Run(int signal_fd) {
  spdlog::info("broker serving: clients on {}, workers on {}, heartbeat {} ms, max attempts {}, result ttl {} s, "
               "dedup window {} s, journal {} (--sync {}){}",
               client_endpoint(), worker_endpoint(), options_.heartbeat_interval.count(), options_.max_attempts,
               std::chrono::duration_cast<std::chrono::seconds>(options_.result_ttl).count(),
               std::chrono::duration_cast<std::chrono::seconds>(options_.dedup_window).count(),
               options_.journal.dir.string(), SyncModeName(options_.journal.sync),
               options_.accept_unrouted ? ", accepting unrouted circuits" : "");
  zmq::pollitem_t items[7] = {
      {workers_.handle(), 0, ZMQ_POLLIN, 0},
      {clients_.handle(), 0, ZMQ_POLLIN, 0},
      {zap_ ? zap_->socket().handle() : nullptr, -1, ZMQ_POLLIN, 0},
      {nullptr, signal_fd, ZMQ_POLLIN, 0},
      {nullptr, guard_->wake_fd(), ZMQ_POLLIN, 0},
      {nullptr, verifier_->wake_fd(), ZMQ_POLLIN, 0},
      {nullptr, grpc_ ? grpc_->wake_fd() : -1, ZMQ_POLLIN, 0},
  };
  Clock::time_point next_tick = Clock::now();  // the first turn ticks
  Clock::time_point next_trim = Clock::now() + kTrimInterval;
  for (;;) {
    Clock::time_point wake = next_tick;
    if (core_->unavailable()) wake = std::min(wake, next_probe_);
    // The keep-alive thread's verdict is looked at every few hundred ms.
    if (leadership_) wake = std::min(wake, Clock::now() + kLeadershipCheck);
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(wake - Clock::now());
    if (wait.count() < 0) wait = std::chrono::milliseconds(0);
    zmq::poll(items, 7, wait);
    if (items[3].revents & ZMQ_POLLIN) {
      signalfd_siginfo info{};
      if (read(signal_fd, &info, sizeof(info)) == sizeof(info) && info.ssi_signo == SIGHUP) {
        Reload();
      } else {
        break;
      }
    }
    // Handshakes wait for these answers; they are cheap.
    if (zap_ && (items[2].revents & ZMQ_POLLIN)) zap_->HandleAll();
    if (items[4].revents & ZMQ_POLLIN) OnHandshakeFailures();
    if (leadership_ && leadership_->options().stop_on_lease_loss) {
      if (auto why = leadership_->lost()) {
        journal_->Abort();
        throw Error(ErrorCode::kNotLeader, "this broker no longer leads: " + *why + "; it stops without answering "
                                           "anything more (a standby takes over from etcd)");
      }
    }
    Clock::time_point now = Clock::now();
    size_t received = 0;
    try {
      // Workers first: their results and credits make room for client work.
      if (items[0].revents & ZMQ_POLLIN) received += DrainSocket(workers_, true, kReceiveBudget, now);
      if (items[1].revents & ZMQ_POLLIN) received += DrainSocket(clients_, false, kReceiveBudget, now);
      if (items[6].revents & ZMQ_POLLIN) HandleGrpcRequests(now);
      // Verdicts of RESULTs (their proofs stored now), then new RESULTs' checks.
      VerifyResults(now);
      // Nothing is leased while the journal cannot be written: the worker's
      // STARTED could not be recorded.
      if (!core_->unavailable()) core_->Dispatch(now);
      if (now >= next_tick) next_tick = core_->Tick(now);
      Flush(now);
      // Memory freed after a burst (large SUBMITs, thousands of gRPC
      // streams) stays with the allocator's arenas unless it is handed back:
      // 3.1 GB stayed resident after a 4.2 GB SUBMIT burst (issue 47).
      if (now >= next_trim) {
        ::malloc_trim(0);
        next_trim = now + kTrimInterval;
      }
    } catch (const Error& e) {
      OnStorageFault(e);
      // The rebuilt core's first tick, not at once: a tick that writes while
      // the disk refuses fails again, and each failure rebuilds the core.
      next_tick = Clock::now() + kProbeInterval;
    }
    ProbeJournal(Clock::now());
    if (received > 0) turns_.Record(Clock::now() - now, received);
  }
  spdlog::info("broker loop turns with messages: {}", turns_.Summary());
  try {
    Commit();
  } catch (const Error& e) {
    journal_->Abort();
    spdlog::error("the last turn could not be committed ({}); nothing of it was acknowledged", FaultText(e));
    if (e.code() == ErrorCode::kNotLeader) throw;
  }
  spdlog::info("broker stopping: {} jobs submitted, {} completed this life; {} live jobs stay in the journal; "
               "{} journal commits ({:.3f} s)",
               core_->counters().jobs_submitted, core_->counters().jobs_completed, core_->jobs().size(),
               journal_->stats().commits, journal_->stats().commit_seconds);
}

void BrokerServer::HandleGrpcRequests(Clock::time_point now) {
  std::vector<GrpcRequest> requests = grpc_->TakeRequests();
  for (size_t i = 0; i < requests.size(); ++i) {
    GrpcRequest& request = requests[i];
    try {
      handling_client_ = ReplyTo{request.identity, request.envelope.correlation_id()};
      core_->HandleClient(request.identity, request.envelope, now, request.peer, std::move(request.frames));
      handling_client_.reset();
      if (journal_->dirty() && (options_.journal.sync == SyncMode::kAlways || journal_->full())) Commit();
    } catch (...) {
      // A storage fault: this request is answered UNAVAILABLE with the
      // turn's (OnStorageFault); the ones after it wait for the next turn,
      // as unread messages wait in a socket.
      grpc_->Requeue(std::vector<GrpcRequest>(std::make_move_iterator(requests.begin() + i + 1),
                                              std::make_move_iterator(requests.end())));
      throw;
    }
  }
}

fleet::SendStatus BrokerServer::SendToClient(const std::string& identity, const proto::Envelope& envelope,
                                             const std::string& bytes, fleet::Frames* frames) {
  if (IsGrpcIdentity(identity)) {
    if (!grpc_) return fleet::SendStatus::kUnroutable;
    grpc_->Deliver(identity, envelope);
    return fleet::SendStatus::kOk;
  }
  return fleet::SendToPeer(clients_, identity, bytes, frames);
}

size_t BrokerServer::DrainSocket(zmq::socket_t& socket, bool from_workers, int budget, Clock::time_point now) {
  zmq::message_t identity;
  for (int i = 0; i < budget; ++i) {
    // The routing id, then the Envelope, then the frames after it: a
    // SUBMIT's witnesses, received once and handed on without a copy (the
    // journal writes them, JOBs share them).
    fleet::Frames frames;
    if (!fleet::ReceiveMultipart(socket, identity, frames, zmq::recv_flags::dontwait)) return static_cast<size_t>(i);
    const bool has_payload = !frames.empty();
    zmq::message_t payload;
    if (has_payload) {
      payload = std::move(frames.front());
      frames.erase(frames.begin());
    }
    // What the message took on the wire, for the ingress guard (the routing
    // id is the ROUTER's own, never sent).
    uint64_t wire = has_payload ? IngressGuard::WireBytes(payload.size(), guard_->curve()) : 0;
    for (const zmq::message_t& frame : frames) wire += IngressGuard::WireBytes(frame.size(), guard_->curve());
    if (has_payload) guard_->Taken(zmq_msg_get(payload.handle(), ZMQ_SRCFD), wire);
    if (metrics_) {
      uint64_t bytes = payload.size();
      for (const zmq::message_t& frame : frames) bytes += frame.size();
      metrics_->Received(from_workers, bytes);
    }
    const Peer peer = has_payload ? PeerOf(payload) : Peer();
    HandleFrame(from_workers, identity.to_string(), payload, has_payload, std::move(frames), peer, now);
    if (has_payload && core_->KeyRemoved(from_workers, peer)) {
      // Answered once (DISCONNECT, FORBIDDEN); then its connection goes, or
      // every message on it would be answered (issue 47).
      const char* ip = zmq_msg_gets(payload.handle(), "Peer-Address");
      guard_->CutConnection(zmq_msg_get(payload.handle(), ZMQ_SRCFD),
                            from_workers ? PeerKind::kWorker : PeerKind::kClient, ip ? ip : "",
                            "its key '" + peer.key_name + "' was removed from the broker's allow-list");
    }
    // --sync always: every message that wrote is durable on its own.
    if (journal_->dirty() && (options_.journal.sync == SyncMode::kAlways || journal_->full())) Commit();
  }
  return static_cast<size_t>(budget);
}

void BrokerServer::HandleFrame(bool from_workers, const std::string& identity, const zmq::message_t& payload,
                               bool has_payload, fleet::Frames frames, const Peer& peer, Clock::time_point now) {
  const char* side = from_workers ? "worker" : "client";
  if (!from_workers && IsGrpcIdentity(identity)) {
    // libzmq lets no socket set an identity that starts with a zero byte,
    // but a peer with its own ZMTP stack can announce one: with a gRPC
    // call's identity the core's replies to it would reach that call.
    core_->CountDroppedFrame(metrics::DropReason::kMalformed);
    spdlog::warn("dropped a client message whose routing identity is a gRPC call's (a forged ZMTP identity)");
    return;
  }
  wire::DecodeStatus status = wire::DecodeStatus::kMalformed;
  // Workers send single-frame messages; clients may add witness frames.
  if (has_payload && (frames.empty() || !from_workers)) {
    status = wire::DecodeEnvelope(payload.data(), payload.size(), options_.limits.max_message_bytes, scratch_);
  }
  switch (status) {
    case wire::DecodeStatus::kOk:
      if (from_workers) {
        core_->HandleWorker(identity, scratch_, now, peer);
      } else {
        handling_client_ = ReplyTo{identity, scratch_.correlation_id()};
        core_->HandleClient(identity, scratch_, now, peer, std::move(frames));
        handling_client_.reset();
      }
      return;
    case wire::DecodeStatus::kOversized:
      core_->CountDroppedFrame(metrics::DropReason::kOversized);
      spdlog::warn("dropped an oversized {} frame: {} bytes > --max-message-bytes {}", side, payload.size(),
                   options_.limits.max_message_bytes);
      if (!from_workers) {
        core_->outbox().push_back({Outgoing::To::kClient, identity,
                                  wire::MakeErrorReply(proto::ERROR_KIND_TOO_LARGE,
                                                        "message of " + std::to_string(payload.size()) +
                                                            " bytes exceeds the broker limit of " +
                                                            std::to_string(options_.limits.max_message_bytes),
                                                        0)});
      }
      return;
    case wire::DecodeStatus::kWrongVersion:
      core_->CountDroppedFrame(metrics::DropReason::kVersion);
      spdlog::warn("dropped a {} frame of protocol version {} (this broker speaks {})", side,
                   static_cast<int>(scratch_.version()), static_cast<int>(wire::kProtocolVersion));
      if (!from_workers) {
        core_->outbox().push_back(
            {Outgoing::To::kClient, identity,
             wire::MakeErrorReply(proto::ERROR_KIND_VERSION_MISMATCH,
                                   "protocol version " + std::to_string(scratch_.version()) + " is not supported; " +
                                       "this broker speaks " + std::to_string(wire::kProtocolVersion),
                                   scratch_.correlation_id())});
      }
      return;
    case wire::DecodeStatus::kMalformed:
      core_->CountDroppedFrame(metrics::DropReason::kMalformed);
      spdlog::warn("dropped a malformed {} message ({} frames, {} payload bytes)", side,
                   1 + (has_payload ? 1 : 0) + frames.size(), payload.size());
      if (!from_workers) {
        core_->outbox().push_back({Outgoing::To::kClient, identity,
                                  wire::MakeErrorReply(proto::ERROR_KIND_BAD_REQUEST,
                                                        "message is not a zkfleet Envelope (followed only by "
                                                        "the witness frames a SUBMIT announces)",
                                                        0)});
      }
      return;
  }
}

void BrokerServer::Commit() {
  if (!journal_->dirty()) return journal_->Commit();  // ends the read-only transaction
  auto started = Clock::now();
  journal_->Commit();
  if (metrics_) metrics_->JournalCommitted(std::chrono::duration<double>(Clock::now() - started).count());
}

void BrokerServer::Flush(Clock::time_point now) {
  // Messages to workers leave before the commit: they promise nothing to a
  // client (after a crash, a JOB whose job never became durable is answered
  // under a lease the next life refuses as stale), and a worker can prove
  // while the disk syncs this turn's witnesses. Replies to clients wait for
  // the commit (group commit): a job is accepted only once it is durable.
  SendOutbox(/*workers_only=*/true, now);
  Commit();
  SendOutbox(/*workers_only=*/false, now);
  // Each round removes the workers it settles, so this ends; the bound only
  // guards against a peer that keeps coming back under the same id.
  for (int round = 0; round < 8 && SettleUnroutableWorkers(now); ++round) {
    SendOutbox(/*workers_only=*/true, now);
    Commit();
    SendOutbox(/*workers_only=*/false, now);
  }
}

bool BrokerServer::SettleUnroutableWorkers(Clock::time_point now) {
  if (unroutable_workers_.empty()) return false;
  std::set<std::string> ids;
  ids.swap(unroutable_workers_);
  // libzmq drops a peer's route at its disconnect but keeps what it had
  // received from it: a worker that sent its last RESULT, FAULTED, handback
  // and DISCONNECT and closed is unroutable before those are read. Read them
  // first, so that the worker's own account of its end counts, not a lost
  // connection (its leases would requeue as unreachable and its FAULTED go
  // unseen).
  DrainSocket(workers_, /*from_workers=*/true, kReceiveBudget, now);
  bool removed = false;
  for (const std::string& id : ids) {
    if (!core_->workers().all().count(id)) continue;  // it said goodbye itself
    spdlog::warn("send to a worker failed (unroutable); removing it");
    core_->WorkerUnreachable(id, now);
    removed = true;
  }
  if (removed && !core_->unavailable()) core_->Dispatch(now);
  return true;
}

void BrokerServer::SendOutbox(bool workers_only, Clock::time_point now) {
  std::vector<Outgoing> batch;
  std::vector<Outgoing> held;  // client replies kept for after the commit, in order
  while (!core_->outbox().empty()) {
    batch.clear();
    batch.swap(core_->outbox());
    bool lost_worker = false;
    size_t next = 0;
    // A journal error (removing an unreachable worker writes) leaves the
    // client replies not yet sent in the outbox, for OnStorageFault.
    struct KeepUnsent {
      std::vector<Outgoing>& batch;
      std::vector<Outgoing>& held;
      size_t& next;
      std::vector<Outgoing>& outbox;
      ~KeepUnsent() {
        if (std::uncaught_exceptions() == 0) return;
        for (Outgoing& out : held) outbox.push_back(std::move(out));
        for (size_t i = next; i < batch.size(); ++i) outbox.push_back(std::move(batch[i]));
      }
    } keep{batch, held, next, core_->outbox()};
    for (; next < batch.size(); ++next) {
      Outgoing& out = batch[next];
      bool to_worker = out.to == Outgoing::To::kWorker;
      if (workers_only && !to_worker) {
        held.push_back(std::move(out));
        continue;
      }
      std::string bytes = wire::EncodeEnvelope(out.envelope);
      uint64_t frame_bytes = 0;
      for (const auto& frame : out.frames) frame_bytes += frame.size();
      fleet::SendStatus sent = to_worker ? fleet::SendToPeer(workers_, out.identity, bytes, &out.frames)
                                         : SendToClient(out.identity, out.envelope, bytes, &out.frames);
      if (sent == fleet::SendStatus::kOk) {
        if (metrics_) metrics_->Sent(to_worker, bytes.size() + frame_bytes);
        continue;
      }
      if (to_worker) {
        // A JOB that did not go out must not stay leased: drop the worker
        // (its leases requeue) and let it register again.
        if (!core_->workers().all().count(out.identity)) continue;
        if (sent != fleet::SendStatus::kFull) {
          unroutable_workers_.insert(out.identity);  // settled once its last messages are read (Flush)
          continue;
        }
        spdlog::warn("send to a worker failed (queue full); removing it");
        core_->WorkerUnreachable(out.identity, now);
        lost_worker = true;
      } else {
        ++core_->counters().replies_undeliverable;
      }
    }
    if (lost_worker) {
      if (!core_->unavailable()) core_->Dispatch(now);
      if (!workers_only) Commit();
    }
  }
  core_->outbox() = std::move(held);
}
}  // namespace zkfleet::broker
