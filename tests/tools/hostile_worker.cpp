// hostile_worker: a worker that holds a valid CURVE key and lies (issue 27),
// for the process tests in tests/integration/fleet/hostile_*_test.cpp.
//
// It speaks the worker protocol as zkworker does (a DEALER socket, CURVE with
// its own key and the broker's public key, one Envelope per message), but
// behaves as --mode says:
//   forge        each JOB: STARTED, then RESULT ok with --proof whose pi_a has one digit changed
//                (still JSON, no longer a proof) and --public
//   replay       each JOB: STARTED, then RESULT ok with --proof and --public unchanged (another
//                job's valid proof)
//                (replay --decorate: a byte-order mark before both files, and the public signals
//                zero-padded: still the same numbers to a lenient parser)
//                (forge, replay: --proof-bytes FILE also sends FILE's bytes as Result.proof_bytes,
//                a bellman proof's 192 bytes or garbled ones; --bellman announces the circuits as
//                bellman circuits)
//                (--generates C: it is sent C's jobs from inputs, and the broker's signals checks
//                (signals_only JOBs), which it answers with --public too: the lie of a checker)
//   notjson      each JOB: STARTED, then RESULT ok with proof_json "this is not json"
//   hoard        announce --credit, heartbeat READY, never send STARTED or RESULT
//   undrain      hoard, and answer every DRAIN with a READY message (and CREDIT) again; its
//                heartbeats say READY throughout
//   impersonate  send READY (with another worker's --id) on a new connection every second and
//                log what the broker answers
//   refuse       each JOB: STARTED, then RESULT not ok, not retryable, "the witness is invalid":
//                it calls every job the client's fault, to fail them for good
//   vanish       each JOB: STARTED, then (once every JOB of the batch is started) DISCONNECT and
//                READY on a new connection under a new worker id (--id-1, --id-2, ...) at once:
//                it starts other clients' jobs and leaves, to use up their attempts
// After a RESULT it grants one more credit, to be sent more work. After a
// DISCONNECT it registers again on a new connection one second later (as a
// restarted worker would); after silence from the broker, at once. With
// --stay it never does: it keeps its connection and its heartbeats.
//
// Every message received is logged to stdout, one line each ("received JOB
// job_seq=...", "received DISCONNECT reason=..."), as is everything sent
// that matters. SIGTERM or SIGINT: DISCONNECT, exit 0.
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <zmq.hpp>

#include "zkfleet.pb.h"
#include "zkfleet/fleet/curve_keys.hpp"
#include "zkfleet/wire/protocol.hpp"
#include "zkfleet/fleet/sockets.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
namespace proto = zkfleet::proto;
namespace fleet = zkfleet::fleet;
namespace wire = zkfleet::wire;

struct Options {
  std::string broker;
  std::string secret_key;
  std::string broker_public_key;
  bool plaintext = false;
  std::string id;
  std::vector<std::string> circuits;  // ids (a "ID=path" argument counts as ID)
  uint32_t capacity = 4;
  uint32_t credit = 0;
  int64_t heartbeat_ms = 1000;
  std::string mode;
  std::string proof_file;
  std::string public_file;
  std::string proof_bytes_file;  // sent as Result.proof_bytes (a bellman circuit's 192 bytes, possibly garbled)
  bool bellman = false;          // announce its circuits as CIRCUIT_KIND_BELLMAN
  bool decorate = false;         // replay: a BOM before each file, zero-padded signals
  std::vector<std::string> fetch_prefixes;  // announced in READY: it is sent jobs by reference there
  std::vector<std::string> generates;       // announced in READY: it is sent jobs from inputs of these
  bool stay = false;                        // never registers again: keeps its connection and heartbeats
};

// public.json with every decimal signal zero-padded ("123" -> "000123").
std::string PadSignals(const std::string& text) {
  std::string out;
  bool open = false;
  for (char c : text) {
    out += c;
    if (c == '"') {
      open = !open;
      if (open) out += "000";
    }
  }
  return out;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// `proof` with the last digit of pi_a's first coordinate changed: still a
// syntactically valid proof.json, but pi_a is no longer the prover's point.
std::string AlterPiA(std::string proof) {
  const size_t key = proof.find("\"pi_a\"");
  const size_t bracket = key == std::string::npos ? key : proof.find('[', key);
  const size_t open = bracket == std::string::npos ? bracket : proof.find('"', bracket);
  const size_t close = open == std::string::npos ? open : proof.find('"', open + 1);
  if (close == std::string::npos || close == open + 1 || !std::isdigit(static_cast<unsigned char>(proof[close - 1]))) {
    throw std::runtime_error("--proof: no decimal pi_a coordinate found");
  }
  char& digit = proof[close - 1];
  digit = digit == '9' ? '8' : static_cast<char>(digit + 1);
  return proof;
}

// "JOB", "HEARTBEAT", ... : the Envelope body's field name, upper case.
std::string BodyName(const proto::Envelope& envelope) {
  const auto* field = proto::Envelope::descriptor()->FindFieldByNumber(static_cast<int>(envelope.body_case()));
  std::string name = field ? std::string(field->name()) : "(no body)";
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::toupper(c); });
  return name;
}

class HostileWorker {
 public:
  HostileWorker(Options options, fleet::ClientSecurity security)
      : options_(std::move(options)), security_(std::move(security)), context_(1) {
    if (options_.mode == "forge" || options_.mode == "replay") {
      proof_ = ReadText(options_.proof_file);
      public_ = ReadText(options_.public_file);
      if (options_.mode == "forge") proof_ = AlterPiA(proof_);
      if (options_.decorate) {
        proof_ = "\xEF\xBB\xBF" + proof_;
        public_ = "\xEF\xBB\xBF" + PadSignals(public_);
      }
      if (!options_.proof_bytes_file.empty()) proof_bytes_ = ReadText(options_.proof_bytes_file);
    } else if (options_.mode == "notjson") {
      proof_ = "this is not json";
      public_ = options_.public_file.empty() ? "this is not json" : ReadText(options_.public_file);
    }
  }

  int Run(int signal_fd) {
    const milliseconds heartbeat(options_.heartbeat_ms);
    // The broker's heartbeats may be slower than ours: a silence limit of at least 2 s.
    const milliseconds silence_limit = std::max(heartbeat * 3, milliseconds(2000));
    Register("start");
    auto next_heartbeat = Clock::now() + heartbeat;
    while (true) {
      auto wake = next_heartbeat;
      if (reregister_at_) wake = std::min(wake, *reregister_at_);
      auto wait = std::chrono::duration_cast<milliseconds>(wake - Clock::now());
      zmq::pollitem_t items[2] = {{dealer_.handle(), 0, ZMQ_POLLIN, 0}, {nullptr, signal_fd, ZMQ_POLLIN, 0}};
      zmq::poll(items, 2, std::max(wait, milliseconds(0)));
      if (items[1].revents & ZMQ_POLLIN) {
        signalfd_siginfo info{};
        (void)!read(signal_fd, &info, sizeof(info));
        LogAs("signal " + std::to_string(info.ssi_signo) + ": sending DISCONNECT and leaving");
        proto::Envelope bye;
        bye.mutable_disconnect()->set_reason("hostile worker stopping");
        Send(bye);
        dealer_.set(zmq::sockopt::linger, 200);
        dealer_.close();
        context_.close();
        return 0;
      }
      ReceiveAll();
      if (vanish_pending_) Vanish();
      const auto now = Clock::now();
      if (reregister_at_ && now >= *reregister_at_) {
        Register("retry after DISCONNECT");
      } else if (options_.mode == "impersonate" && now - registered_at_ >= milliseconds(1000)) {
        Register("impersonating again");
      } else if (!reregister_at_ && !options_.stay && now - last_heard_ > silence_limit) {
        Register("no message from the broker for " + std::to_string(silence_limit.count()) + " ms");
      }
      if (now >= next_heartbeat) {
        if (!reregister_at_) {
          proto::Envelope beat;
          beat.mutable_heartbeat()->set_state(proto::WORKER_STATE_READY);
          Send(beat);
        }
        next_heartbeat = now + heartbeat;
      }
    }
  }

 private:
  static void Log(const std::string& line) { std::printf("%s\n", line.c_str()); }
  void LogAs(const std::string& line) const { Log("hostile " + options_.id + " (" + options_.mode + "): " + line); }

  void Send(proto::Envelope& envelope) {
    // Never block: without a connection (refused at the handshake) the message is dropped.
    if (!dealer_.send(zmq::buffer(wire::EncodeEnvelope(envelope)), zmq::send_flags::dontwait)) {
      LogAs("could not send " + BodyName(envelope) + " (no connection)");
    }
  }

  // vanish: DISCONNECT (the started jobs go with it), then a new connection
  // under a new worker id.
  void Vanish() {
    vanish_pending_ = false;
    proto::Envelope bye;
    bye.mutable_disconnect()->set_reason("vanishing with started work");
    Send(bye);
    dealer_.set(zmq::sockopt::linger, 200);  // the DISCONNECT leaves before the socket closes
    options_.id = base_id_ + "-" + std::to_string(++incarnation_);
    Register("vanished; back as " + options_.id);
  }

  // A new connection, READY, and the credit it announces.
  void Register(const std::string& why) {
    if (dealer_.handle() != nullptr) dealer_.close();
    dealer_ = zmq::socket_t(context_, zmq::socket_type::dealer);
    fleet::ConfigureDealer(dealer_, fleet::SocketLimits{}, 0);
    security_.Apply(dealer_);
    dealer_.connect(options_.broker);
    last_heard_ = registered_at_ = Clock::now();
    reregister_at_.reset();
    SendReady("new connection: " + why);
  }

  void SendReady(const std::string& why) {
    proto::Envelope envelope;
    auto* ready = envelope.mutable_ready();
    ready->set_worker_id(options_.id);
    ready->set_host("hostile");
    ready->set_backend("cpu");
    for (const std::string& circuit : options_.circuits) {
      ready->add_circuits(circuit);
      if (options_.bellman) ready->add_circuit_kinds(proto::CIRCUIT_KIND_BELLMAN);
    }
    ready->set_capacity(options_.capacity);
    ready->set_state(proto::WORKER_STATE_READY);
    for (const std::string& prefix : options_.fetch_prefixes) ready->add_fetch_prefixes(prefix);
    for (const std::string& circuit : options_.generates) ready->add_generates(circuit);
    Send(envelope);
    LogAs("sent READY (" + why + ")");
    if (options_.credit > 0) SendCredit(options_.credit);
  }

  void SendCredit(uint32_t credits) {
    proto::Envelope envelope;
    envelope.mutable_credit()->set_credits(credits);
    Send(envelope);
    LogAs("sent CREDIT " + std::to_string(credits));
  }

  void ReceiveAll() {
    zmq::message_t payload;
    while (dealer_.recv(payload, zmq::recv_flags::dontwait)) {
      last_heard_ = Clock::now();
      size_t frames = 0;
      bool more = payload.more();
      while (more) {  // a JOB's witness: read and dropped
        zmq::message_t frame;
        (void)dealer_.recv(frame, zmq::recv_flags::none);
        more = frame.more();
        ++frames;
      }
      proto::Envelope message;
      const wire::DecodeStatus status = wire::DecodeEnvelope(payload.data(), payload.size(), 0, message);
      if (status != wire::DecodeStatus::kOk) {
        LogAs(std::string("received a ") + wire::DecodeStatusName(status) + " message");
        continue;
      }
      OnMessage(message, frames);
    }
  }

  void OnMessage(const proto::Envelope& message, size_t witness_frames) {
    switch (message.body_case()) {
      case proto::Envelope::kHeartbeat: return;  // not logged: one per interval
      case proto::Envelope::kJob: return OnJob(message.job(), witness_frames);
      case proto::Envelope::kDisconnect:
        LogAs("received DISCONNECT reason=" + message.disconnect().reason());
        if (!reregister_at_ && !options_.stay) reregister_at_ = Clock::now() + milliseconds(1000);
        return;
      case proto::Envelope::kDrain:
        LogAs("received DRAIN reason=" + message.drain().reason());
        if (options_.mode == "undrain") {
          SendReady("answering DRAIN: READY again");
          LogAs("answered DRAIN with READY");
        }
        return;
      default: LogAs("received " + BodyName(message));
    }
  }

  void OnJob(const proto::Job& job, size_t witness_frames) {
    const proto::WorkItemRef& item = job.item();
    LogAs("received JOB job_seq=" + std::to_string(item.job_seq()) + " partition=" + std::to_string(item.partition()) +
          " lease=" + std::to_string(item.lease().epoch()) + "/" + std::to_string(item.lease().number()) +
          " attempt=" + std::to_string(job.attempt()) + " circuit=" + job.circuit_id() +
          " witness_bytes=" + std::to_string(job.witness_bytes()) + " frames=" + std::to_string(witness_frames) +
          (job.signals_only() ? " signals_only" : ""));
    if (options_.mode == "vanish") {
      proto::Envelope started;
      *started.mutable_started()->add_items() = item;
      Send(started);
      LogAs("sent STARTED for job_seq=" + std::to_string(item.job_seq()) + "; leaving with it");
      vanish_pending_ = true;
      return;
    }
    if (options_.mode == "refuse") {
      proto::Envelope started;
      *started.mutable_started()->add_items() = item;
      Send(started);
      proto::Envelope envelope;
      auto* result = envelope.mutable_result();
      *result->mutable_item() = item;
      result->set_attempt(job.attempt());
      result->set_ok(false);
      result->set_retryable(false);
      result->set_error("the witness is invalid (says the hostile worker)");
      result->set_circuit_id(job.circuit_id());
      result->set_request_id(job.request_id());
      Send(envelope);
      LogAs("sent STARTED and RESULT refused for job_seq=" + std::to_string(item.job_seq()));
      SendCredit(1);
      return;
    }
    if (options_.mode != "forge" && options_.mode != "replay" && options_.mode != "notjson") {
      LogAs("holding job_seq=" + std::to_string(item.job_seq()) + " (never started)");
      return;
    }
    proto::Envelope started;
    *started.mutable_started()->add_items() = item;
    Send(started);
    proto::Envelope envelope;
    auto* result = envelope.mutable_result();
    *result->mutable_item() = item;
    result->set_attempt(job.attempt());
    result->set_ok(true);
    result->set_proof_json(proof_);
    result->set_public_json(public_);
    result->set_proof_bytes(proof_bytes_);
    result->set_circuit_id(job.circuit_id());
    result->set_request_id(job.request_id());
    Send(envelope);
    LogAs("sent STARTED and RESULT ok for job_seq=" + std::to_string(item.job_seq()) +
          " partition=" + std::to_string(item.partition()));
    SendCredit(1);
  }

  Options options_;
  fleet::ClientSecurity security_;
  zmq::context_t context_;
  zmq::socket_t dealer_;
  std::string proof_;
  std::string public_;
  std::string proof_bytes_;
  Clock::time_point last_heard_;
  Clock::time_point registered_at_;
  std::optional<Clock::time_point> reregister_at_;
  bool vanish_pending_ = false;
  std::string base_id_ = options_.id;  // vanish: the ids are base_id_-1, -2, ...
  int incarnation_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // the tests read the log as it grows
  Options options;
  CLI::App app{"hostile zkfleet worker for tests: holds a valid key and lies (see the header of its source)"};
  app.add_option("--broker", options.broker, "the broker's worker endpoint")->required();
  app.add_option("--curve-secret-key", options.secret_key, "this worker's CURVE secret key file");
  app.add_option("--broker-public-key", options.broker_public_key, "the broker's CURVE public key file");
  app.add_flag("--insecure-plaintext", options.plaintext, "no CURVE");
  app.add_option("--id", options.id, "worker id")->required();
  app.add_option("--circuit", options.circuits, "circuit id it announces (ID or ID=path; repeatable)")->required();
  app.add_option("--capacity", options.capacity, "capacity announced in READY")->capture_default_str();
  app.add_option("--credit", options.credit, "CREDIT sent after each READY (0: none)")->capture_default_str();
  app.add_option("--heartbeat-ms", options.heartbeat_ms, "heartbeat interval")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--mode", options.mode, "forge | replay | notjson | hoard | undrain | impersonate | vanish | refuse")
      ->required()
      ->check(CLI::IsMember({"forge", "replay", "notjson", "hoard", "undrain", "impersonate", "vanish", "refuse"}));
  app.add_option("--proof", options.proof_file, "proof.json to forge from or replay");
  app.add_option("--public", options.public_file, "public.json sent with the proof");
  app.add_option("--proof-bytes", options.proof_bytes_file,
                 "forge, replay: a file whose bytes go in Result.proof_bytes (a bellman proof's 192, or garbled ones)");
  app.add_flag("--bellman", options.bellman, "announce its circuits as bellman circuits (READY circuit_kinds)");
  app.add_option("--fetch-prefix", options.fetch_prefixes,
                 "a URL prefix announced in READY as fetched (jobs by reference there are sent to it; repeatable)");
  app.add_option("--generates", options.generates,
                 "a circuit announced in READY as computed from inputs (it is sent jobs from inputs, and the "
                 "broker's signals checks (signals_only JOBs), which replay answers with --public; repeatable)");
  app.add_flag("--stay", options.stay,
               "after a DISCONNECT (or a silent broker) keep the connection and go on sending heartbeats on it, "
               "never registering again (a revoked key flooding its old connection)");
  app.add_flag("--decorate", options.decorate, "replay: a BOM before proof.json and public.json, zero-padded signals");
  CLI11_PARSE(app, argc, argv);
  for (std::string& circuit : options.circuits) circuit = circuit.substr(0, circuit.find('='));
  if ((options.mode == "forge" || options.mode == "replay") &&
      (options.proof_file.empty() || options.public_file.empty())) {
    std::fprintf(stderr, "hostile_worker: --mode %s needs --proof and --public\n", options.mode.c_str());
    return 2;
  }

  // SIGTERM/SIGINT through a signalfd in the poll loop; blocked before the
  // ZeroMQ context starts its threads, so they inherit the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  const int signal_fd = signalfd(-1, &signals, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signal_fd < 0) {
    std::perror("hostile_worker: signalfd");
    return 1;
  }
  try {
    auto security = fleet::ClientSecurity::Load(options.plaintext, options.secret_key, options.broker_public_key);
    HostileWorker worker(options, std::move(security));
    return worker.Run(signal_fd);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hostile_worker: %s\n", e.what());
    return 1;
  }
}
