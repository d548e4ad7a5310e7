// fleet_bench: drives a zkbroker with tiny jobs and measures throughput and
// the latency the fleet adds (SUBMIT sent -> JobResult received; the workers
// run in benchmark mode, zkworker --instant, so proving costs nothing).
//
// Two ways to load it:
//   --window W         closed loop: each client keeps W jobs outstanding
//                      (throughput; latency then includes queueing)
//   --rate R           open loop: R jobs/s in total, spread over the clients
//                      (latency at a given load)
// Prints one human line and, with --json, one JSON object.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <CLI/CLI.hpp>

#include "zkfleet/client/broker_client.hpp"
#include "zkfleet/fleet/frames.hpp"

namespace {

using Clock = std::chrono::steady_clock;
namespace proto = zkfleet::proto;

struct ClientStats {
  std::vector<double> latencies_s;         // SUBMIT sent -> JobResult received
  std::vector<double> accept_latencies_s;  // SUBMIT sent -> SubmitReply received (the job is durable)
  size_t errors = 0;
  Clock::time_point first_send{};
  Clock::time_point last_result{};
};

struct Config {
  std::string endpoint = "tcp://127.0.0.1:5555";
  std::string circuit = "bench";
  int clients = 4;
  size_t jobs = 100000;  // in total
  size_t window = 1000;  // per client, closed loop
  double rate = 0;       // jobs/s in total, open loop (0 = closed loop)
  size_t witness_bytes = 32;
  zkfleet::fleet::ClientSecurity security;
};

void RunClient(zmq::context_t& context, const Config& config, int index, size_t jobs, const std::string& run_id,
               ClientStats& stats) {
  zkfleet::client::internal::BrokerClient client(context, config.endpoint, config.security);
  std::vector<Clock::time_point> sent(jobs);
  stats.latencies_s.reserve(jobs);
  stats.accept_latencies_s.reserve(jobs);
  std::vector<uint64_t> correlation_of(jobs);
  std::unordered_map<uint64_t, size_t> job_of_correlation;
  const std::string prefix = run_id + "-" + std::to_string(index) + "-";
  zmq::message_t witness_frame = zkfleet::fleet::FrameFromString(std::string(config.witness_bytes, 'w'));
  double per_client_rate = config.rate / config.clients;
  size_t next = 0;
  size_t done = 0;
  Clock::time_point start = Clock::now();
  stats.first_send = start;
  while (done < jobs) {
    Clock::time_point now = Clock::now();
    auto due = [&](size_t i) {
      return start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(i / per_client_rate));
    };
    while (next < jobs && next - done < config.window && (config.rate == 0 || due(next) <= now)) {
      proto::Envelope envelope;
      auto* submit = envelope.mutable_submit();
      submit->set_request_id(prefix + std::to_string(next));
      submit->set_circuit_id(config.circuit);
      submit->set_priority(proto::PRIORITY_NORMAL);
      submit->add_witness_bytes(witness_frame.size());
      zkfleet::fleet::Frames frames;
      frames.push_back(zkfleet::fleet::ShareFrame(witness_frame));
      sent[next] = Clock::now();
      job_of_correlation[client.Send(std::move(envelope), std::move(frames))] = next;
      ++next;
    }
    // Open loop: wake at least every millisecond and send what has come due
    // (zmq_poll has millisecond resolution; spinning would steal the cores
    // the broker is measured on).
    std::chrono::milliseconds wait(config.rate > 0 && next < jobs ? 1 : 100);
    auto envelope = client.Receive(wait);
    while (envelope) {
      if (envelope->has_submit_reply()) {
        auto it = job_of_correlation.find(envelope->correlation_id());
        if (it != job_of_correlation.end()) {
          stats.accept_latencies_s.push_back(std::chrono::duration<double>(Clock::now() - sent[it->second]).count());
          job_of_correlation.erase(it);
        }
      } else if (envelope->has_job_result()) {
        const auto& result = envelope->job_result();
        size_t i = std::stoull(result.request_id().substr(prefix.size()));
        Clock::time_point arrived = Clock::now();
        stats.latencies_s.push_back(std::chrono::duration<double>(arrived - sent[i]).count());
        stats.last_result = arrived;
        if (result.state() != proto::JOB_STATE_SUCCEEDED) ++stats.errors;
        ++done;
      } else if (envelope->has_error()) {
        ++stats.errors;
        ++done;  // a refused SUBMIT gets no result
      }
      envelope = client.Receive(std::chrono::milliseconds(0));
    }
  }
}

double Percentile(std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  size_t i = static_cast<size_t>(q * (sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
  Config config;
  bool json = false;
  std::string label;
  CLI::App app{"fleet_bench: broker throughput and added latency with benchmark-mode (--instant) workers"};
  app.add_option("--broker", config.endpoint, "the broker's client endpoint")->capture_default_str();
  app.add_option("--circuit", config.circuit, "a circuit the --instant workers announce")->capture_default_str();
  app.add_option("--clients", config.clients, "client connections (one thread each)")->capture_default_str();
  app.add_option("--jobs", config.jobs, "jobs in total")->capture_default_str();
  app.add_option("--window", config.window, "outstanding jobs per client (closed loop)")->capture_default_str();
  app.add_option("--rate", config.rate, "offered load in jobs/s, all clients together (open loop; 0 = closed loop)")
      ->capture_default_str();
  app.add_option("--witness-bytes", config.witness_bytes, "size of the dummy witness")->capture_default_str();
  app.add_option("--label", label, "name of this run in the output");
  app.add_flag("--json", json, "also print a JSON line");
  std::string curve_secret_key, broker_public_key;
  bool insecure_plaintext = false;
  app.add_option("--curve-secret-key", curve_secret_key, "the clients' NAME.secret (CURVE)");
  app.add_option("--broker-public-key", broker_public_key, "the broker's NAME.pub (CURVE)");
  app.add_flag("--insecure-plaintext", insecure_plaintext, "no CURVE (against a broker run with it)");
  CLI11_PARSE(app, argc, argv);
  config.security = zkfleet::fleet::ClientSecurity::Load(insecure_plaintext, curve_secret_key, broker_public_key);

  zmq::context_t context(2);
  std::string run_id = "bench" + std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  std::vector<ClientStats> stats(config.clients);
  std::vector<std::thread> threads;
  for (int c = 0; c < config.clients; ++c) {
    size_t jobs = config.jobs / config.clients + (static_cast<size_t>(c) < config.jobs % config.clients ? 1 : 0);
    threads.emplace_back([&, c, jobs] { RunClient(context, config, c, jobs, run_id, stats[c]); });
  }
  for (auto& t : threads) t.join();

  std::vector<double> all;
  std::vector<double> accept;
  size_t errors = 0;
  Clock::time_point first = stats[0].first_send;
  Clock::time_point last = stats[0].last_result;
  for (const auto& s : stats) {
    all.insert(all.end(), s.latencies_s.begin(), s.latencies_s.end());
    accept.insert(accept.end(), s.accept_latencies_s.begin(), s.accept_latencies_s.end());
    errors += s.errors;
    first = std::min(first, s.first_send);
    last = std::max(last, s.last_result);
  }
  std::sort(all.begin(), all.end());
  std::sort(accept.begin(), accept.end());
  double accept_p50 = Percentile(accept, 0.50) * 1e3, accept_p99 = Percentile(accept, 0.99) * 1e3;
  double seconds = std::chrono::duration<double>(last - first).count();
  double throughput = all.size() / seconds;
  double p50 = Percentile(all, 0.50) * 1e3, p99 = Percentile(all, 0.99) * 1e3, p999 = Percentile(all, 0.999) * 1e3;
  std::printf("%s%sjobs=%zu errors=%zu clients=%d %s=%g  throughput=%.0f jobs/s  accept p50=%.3f ms p99=%.3f ms  "
              "result latency p50=%.3f ms p99=%.3f ms p99.9=%.3f ms max=%.3f ms\n",
              label.c_str(), label.empty() ? "" : ": ", all.size(), errors, config.clients,
              config.rate > 0 ? "rate" : "window", config.rate > 0 ? config.rate : static_cast<double>(config.window),
              throughput, accept_p50, accept_p99, p50, p99, p999, all.empty() ? 0 : all.back() * 1e3);
  if (json) {
    std::printf("{\"label\":\"%s\",\"jobs\":%zu,\"errors\":%zu,\"clients\":%d,\"window\":%zu,\"rate\":%g,"
                "\"throughput_jobs_per_s\":%.1f,\"accept_ms\":{\"p50\":%.4f,\"p99\":%.4f},"
                "\"latency_ms\":{\"p50\":%.4f,\"p99\":%.4f,\"p999\":%.4f,\"max\":%.4f}}\n",
                label.c_str(), all.size(), errors, config.clients, config.window, config.rate, throughput, accept_p50,
                accept_p99, p50, p99, p999, all.empty() ? 0 : all.back() * 1e3);
  }
  return errors == 0 ? 0 : 1;
}
