// grpc_bench: drives the broker's gRPC front door (zkfleet.v1.Fleet, mTLS)
// with tiny jobs, as fleet_bench drives its ZeroMQ port, and times ListJobs.
//
//   submit: SubmitJob of a 32-byte inline witness; "accept" is the call sent
//           -> its reply (the job is durable). --window W: closed loop, W calls
//           outstanding per client; --rate R: open loop, R calls/s in all.
//   list:   --list-circuit C: ListJobs pages of --page-size jobs of circuit C,
//           --list-calls times; their latencies.
// Prints one JSON object per run.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <grpcpp/grpcpp.h>

#include "grpc/zkfleet_v1.grpc.pb.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace v1 = zkfleet::v1;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5))];
}

struct Config {
  std::string addr, ca, cert, key, circuit = "bench", label;
  int clients = 1;
  size_t jobs = 10000, window = 1000;
  double rate = 0;
  std::string list_circuit;
  uint32_t page_size = 100;
  int list_calls = 50;
};

std::shared_ptr<grpc::Channel> Channel(const Config& c) {
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ReadFile(c.ca);
  ssl.pem_cert_chain = ReadFile(c.cert);
  ssl.pem_private_key = ReadFile(c.key);
  return grpc::CreateChannel(c.addr, grpc::SslCredentials(ssl));
}

struct Pending {
  grpc::ClientContext context;
  v1::SubmitJobReply reply;
  grpc::Status status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<v1::SubmitJobReply>> call;
  Clock::time_point sent;
};

// One client: its own channel and completion queue; closed or open loop.
void RunClient(const Config& c, int index, size_t jobs, const std::string& run, std::vector<double>* accept,
               std::atomic<size_t>* errors) {
  auto stub = v1::Fleet::NewStub(Channel(c));
  grpc::CompletionQueue cq;
  const double per_client_rate = c.rate / c.clients;
  const std::string witness(32, 'w');
  size_t next = 0, done = 0;
  const Clock::time_point start = Clock::now();
  auto due = [&](size_t i) {
    return start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(i / per_client_rate));
  };
  while (done < jobs) {
    Clock::time_point now = Clock::now();
    while (next < jobs && next - done < c.window && (c.rate == 0 || due(next) <= now)) {
      auto* p = new Pending;
      v1::SubmitJobRequest request;
      request.set_circuit_id(c.circuit);
      request.set_request_id(run + "-" + std::to_string(index) + "-" + std::to_string(next));
      request.add_witnesses(witness);
      p->sent = Clock::now();
      p->call = stub->AsyncSubmitJob(&p->context, request, &cq);
      p->call->Finish(&p->reply, &p->status, p);
      ++next;
    }
    // Open loop: wake at least every 200 us to send what has come due.
    auto deadline = std::chrono::system_clock::now() +
                    (c.rate > 0 && next < jobs ? std::chrono::microseconds(200) : std::chrono::microseconds(100000));
    void* tag;
    bool ok;
    while (cq.AsyncNext(&tag, &ok, deadline) == grpc::CompletionQueue::GOT_EVENT) {
      auto* p = static_cast<Pending*>(tag);
      accept->push_back(std::chrono::duration<double>(Clock::now() - p->sent).count());
      if (!ok || !p->status.ok()) {
        if (errors->fetch_add(1) == 0) std::fprintf(stderr, "grpc_bench: SubmitJob: %s\n", p->status.error_message().c_str());
      }
      ++done;
      delete p;
      deadline = std::chrono::system_clock::now();  // drain what is ready, then send again
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  CLI::App app{"grpc_bench: tiny jobs through the broker's gRPC front door; ListJobs latency"};
  app.add_option("--addr", c.addr, "host:port of --grpc-listen")->required();
  app.add_option("--ca", c.ca, "CA of the broker's certificate")->required();
  app.add_option("--cert", c.cert, "client certificate (CN: an allow-listed client)")->required();
  app.add_option("--key", c.key, "its key")->required();
  app.add_option("--circuit", c.circuit, "a circuit the --instant workers announce")->capture_default_str();
  app.add_option("--clients", c.clients, "client channels (one thread each)")->capture_default_str();
  app.add_option("--jobs", c.jobs, "jobs in total")->capture_default_str();
  app.add_option("--window", c.window, "calls outstanding per client")->capture_default_str();
  app.add_option("--rate", c.rate, "open loop: calls/s in total (0 = closed loop)")->capture_default_str();
  app.add_option("--list-circuit", c.list_circuit, "time ListJobs of this circuit instead of submitting");
  app.add_option("--page-size", c.page_size, "ListJobs page size")->capture_default_str();
  app.add_option("--list-calls", c.list_calls, "ListJobs calls")->capture_default_str();
  app.add_option("--label", c.label, "name of this run in the output");
  CLI11_PARSE(app, argc, argv);

  if (!c.list_circuit.empty()) {
    auto stub = v1::Fleet::NewStub(Channel(c));
    std::vector<double> ms;
    size_t listed = 0;
    for (int i = 0; i < c.list_calls; ++i) {
      v1::ListJobsRequest request;
      request.set_circuit_id(c.list_circuit);
      request.set_page_size(c.page_size);
      v1::ListJobsReply reply;
      grpc::ClientContext context;
      auto t0 = Clock::now();
      grpc::Status s = stub->ListJobs(&context, request, &reply);
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      if (!s.ok()) {
        std::fprintf(stderr, "ListJobs: %s\n", s.error_message().c_str());
        return 1;
      }
      listed = reply.jobs_size();
    }
    std::printf("{\"label\":\"%s\",\"list_calls\":%d,\"jobs_per_page\":%zu,\"p50_ms\":%.3f,\"p99_ms\":%.3f,"
                "\"max_ms\":%.3f}\n",
                c.label.c_str(), c.list_calls, listed, Percentile(ms, 0.5), Percentile(ms, 0.99),
                Percentile(ms, 1.0));
    return 0;
  }

  const std::string run = std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  std::vector<std::vector<double>> accept(c.clients);
  std::atomic<size_t> errors{0};
  std::vector<std::thread> threads;
  const auto t0 = Clock::now();
  for (int i = 0; i < c.clients; ++i) {
    size_t share = c.jobs / c.clients + (static_cast<size_t>(i) < c.jobs % c.clients ? 1 : 0);
    threads.emplace_back(RunClient, std::cref(c), i, share, run, &accept[i], &errors);
  }
  for (auto& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  std::vector<double> all;
  for (auto& a : accept) all.insert(all.end(), a.begin(), a.end());
  std::printf("{\"label\":\"%s\",\"jobs\":%zu,\"errors\":%zu,\"clients\":%d,\"window\":%zu,\"rate\":%g,"
              "\"jobs_per_s\":%.0f,\"accept_p50_ms\":%.3f,\"accept_p99_ms\":%.3f,\"accept_max_ms\":%.3f}\n",
              c.label.c_str(), all.size(), errors.load(), c.clients, c.window, c.rate, all.size() / seconds,
              Percentile(all, 0.5) * 1e3, Percentile(all, 0.99) * 1e3, Percentile(all, 1.0) * 1e3);
  return errors.load() == 0 ? 0 : 1;
}
