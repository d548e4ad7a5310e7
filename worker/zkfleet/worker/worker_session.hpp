// The worker's session with the broker: the ZeroMQ side of a worker process
// (worker_core.hpp describes the session / core / pipeline split). It owns
// the DEALER connected to the broker, the heartbeat timer, liveness and
// reconnects (Paranoid Pirate: a broker silent for `liveness` heartbeats is
// presumed gone; the silence allowed doubles per fruitless reconnect), the
// multipart receive, the signalfd and the poll loop. Everything that arrives
// is decoded and handed to the WorkerCore (a JOB's witness as byte spans
// over the received frames); the core's outbox is sent after each call.
// The session itself only handles DISCONNECT (reconnect, or retry a refused
// registration a heartbeat later).
//
// Brokers on etcd: given several endpoints, the session talks to one at a
// time and, when it falls silent, tries the next, registering afresh with
// whichever answers as it would with a restarted broker (its running proofs
// listed in READY, their results sent to the broker it then talks to). A
// standby that answers "not the leader" (DISCONNECT not_leader, naming the
// leader's worker endpoint) sends it to the leader at once when the list
// holds that endpoint, else to the next broker a heartbeat later.
//
// Ownership: the session owns the core (and through it the pipeline) and
// its socket, in a ZeroMQ context of its own, so that Run() can terminate it
// (flushing DISCONNECT, up to the linger) even when an abandoned lane still
// runs. The WorkerMetrics is not owned.
//
// Thread-safety: not thread-safe; construct and Run() on one thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <zmq.hpp>

#include "zkfleet/fleet/curve_keys.hpp"
#include "zkfleet/fleet/frames.hpp"
#include "zkfleet/fleet/sockets.hpp"
#include "zkfleet/metrics/worker_metrics.hpp"
#include "zkfleet/worker/worker_core.hpp"

namespace zkfleet::worker {

// How the worker reaches the broker.
struct ConnectionOptions {
  // The broker's worker ROUTER, or every broker's, comma-separated (brokers
  // sharing an etcd journal).
  std::string broker_endpoint = "tcp://127.0.0.1:5556";
  // Heartbeat period; a broker silent for `liveness` periods is presumed gone
  // and the worker reconnects.
  std::chrono::milliseconds heartbeat_interval{1000};
  int liveness = 3;
  fleet::SocketLimits limits;
  // CURVE keys for the broker connection, or plaintext (--insecure-plaintext).
  fleet::ClientSecurity security;
};

class WorkerSession {
 public:
  using Clock = std::chrono::steady_clock;

  // `metrics` may be null (nothing exported); otherwise it is not owned and
  // must outlive the session.
  WorkerSession(ConnectionOptions connection, WorkerOptions options, std::unique_ptr<CircuitSet> circuits,
                std::unique_ptr<MemorySource> memory, metrics::WorkerMetrics* metrics = nullptr);

  // Serves until the worker has drained and left (returns 0) or could not
  // start or lost its device (returns 1). `signal_fd` is a signalfd for
  // SIGINT/SIGTERM, each of which starts (or continues) the drain, and
  // SIGHUP, which reads the circuits again (set_circuit_reader) and hands
  // them to WorkerCore::ReloadCircuits; -1: none.
  int Run(int signal_fd);

  // What SIGHUP reads the circuits with (zkworker: its circuit flags and
  // --config, read again). It throws std::exception saying why it cannot;
  // nothing changes then. Without one, SIGHUP is logged and ignored.
  using CircuitReader = std::function<std::vector<CircuitSpec>()>;
  void set_circuit_reader(CircuitReader reader) { circuit_reader_ = std::move(reader); }

  // True when Run() returned while a lane was still inside an aborted proof:
  // the process must end with std::_Exit, not by unwinding.
  bool pipeline_abandoned() const { return core_.pipeline_abandoned(); }

 private:
  // Connects to endpoints_[current_].
  void Connect();
  // A new socket, to the next endpoint when `next` (the broker fell silent).
  void Reconnect(const std::string& why, bool next = false);
  // A new socket, to endpoints_[to].
  void ReconnectTo(const std::string& why, size_t to);
  // Sends the core's outbox, in order, and clears it.
  void Flush();
  // Reads every message waiting on the DEALER and hands it to the core.
  void ReceiveAll();
  void OnMessage(proto::Envelope& message, fleet::Frames& frames);
  void OnDisconnect(const std::string& reason);
  // A standby answered (DISCONNECT not_leader): to the leader it names when
  // it is in our list, at once; else to the next broker a heartbeat later.
  void OnNotLeader(const proto::Disconnect& disconnect);
  // SIGHUP: the circuits read again (circuit_reader_) and handed to the core.
  void ReloadCircuits();

  ConnectionOptions connection_;
  std::vector<std::string> endpoints_;  // connection_.broker_endpoint, parsed
  size_t current_ = 0;                  // the one talked to
  metrics::WorkerMetrics* metrics_;  // not owned; may be null
  WorkerCore core_;
  CircuitReader circuit_reader_;
  zmq::context_t broker_context_{1};
  zmq::socket_t dealer_;
  Clock::time_point broker_last_seen_;
  Clock::time_point next_send_failure_log_{};  // rate limit of Flush()'s warning
  // Silence after which we reconnect: liveness x heartbeat, doubled after
  // each fruitless reconnect (each fruitless round of a list) up to
  // kMaxSilence, back to the start once the broker speaks.
  Clock::duration silence_limit_{};
  // A registration the broker refused (another live process with our id, or
  // an id bound to another key): we try again once, a heartbeat later, not in
  // a tight loop, and ignore the DISCONNECTs our old connection still gets.
  // A standby's answer sets it too, naming the broker to go to.
  struct RetryAt {
    Clock::time_point at;
    std::string why;
    size_t to;  // index into endpoints_
  };
  std::optional<RetryAt> retry_registration_;
  Clock::time_point next_not_leader_log_{};  // rate limit of OnNotLeader's line
};

}  // namespace zkfleet::worker
