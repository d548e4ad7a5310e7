// fetch_bench: how fast zkfleet_fetch moves witnesses by reference. T threads,
// one Fetcher each, fetch objects 0..N-1 (thread t takes t, t+T, ...) from a
// URL template into one preallocated buffer per thread (pre-faulted, and
// page-locked with --mlock, as the worker's pinned pool is), checking size
// and SHA-256 as the worker does. Prints one JSON line:
//   {"scheme":..,"threads":T,"count":N,"size":S,"seconds":..,"aggregate_GBps":..,
//    "per_stream_GBps":[..],"failures":k,"first_failure":".."}
// GB = 1e9 bytes. per-stream = a thread's bytes / the time it spent in Fetch.
//
//   fetch_bench --url 'http://127.0.0.1:8080/w/obj-{i}.wtns' --count 8 --size 67108864
//               --sha256-file obj.sha256 [--threads 4] [--rounds 1] [--mlock]
//               [--allow PREFIX] [--ca ca.crt] [--cert c.crt --key c.key]
//
// --sha256-file: sha256sum output; one line = the digest of every object,
// N lines = line i for object i. --allow defaults to the template up to its
// last '/' before "{i}".
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "zkfleet/fetch/fetcher.hpp"

namespace {

using zkfleet::fetch::FetchConfig;
using zkfleet::fetch::Fetcher;
using zkfleet::fetch::FetchOptions;
using zkfleet::fetch::FetchRequest;
using zkfleet::fetch::FetchResult;
using zkfleet::fetch::FetchStatus;

std::string Unhex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    if (static_cast<unsigned char>(c) >= 0x20) out.push_back(c);
  }
  return out + "\"";
}

// The buffer a worker would fetch into. The GPU build may swap this for
// cudaHostAlloc; here: anonymous memory, pre-faulted, optionally mlock'ed.
uint8_t* AllocateBuffer(size_t size, bool lock) {
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::perror("mmap");
    std::exit(2);
  }
  madvise(p, size, MADV_HUGEPAGE);
  if (lock && mlock(p, size) != 0) {
    std::perror("mlock (raise ulimit -l)");
    std::exit(2);
  }
  std::fill_n(static_cast<uint8_t*>(p), size, uint8_t{0});  // fault it in before timing
  return static_cast<uint8_t*>(p);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fetch_bench: GB/s of zkfleet_fetch (witnesses by reference)"};
  std::string url_template, sha_file, allow, ca, cert, key;
  unsigned count = 8, threads = 1, rounds = 1;
  uint64_t size = 0;
  bool lock = false;
  app.add_option("--url", url_template, "URL template; {i} is the object's index")->required();
  app.add_option("--count", count, "objects");
  app.add_option("--size", size, "bytes per object")->required();
  app.add_option("--sha256-file", sha_file, "sha256sum output (1 line, or 1 per object)")->required();
  app.add_option("--threads", threads, "threads, one Fetcher each");
  app.add_option("--rounds", rounds, "passes over the objects");
  app.add_option("--allow", allow, "--fetch-allow prefix (default: the template's directory)");
  app.add_option("--ca", ca, "CA bundle");
  app.add_option("--cert", cert, "client certificate");
  app.add_option("--key", key, "client key");
  app.add_flag("--mlock", lock, "page-lock the buffers");
  CLI11_PARSE(app, argc, argv);

  const size_t brace = url_template.find("{i}");
  if (allow.empty()) allow = url_template.substr(0, url_template.rfind('/', brace) + 1);
  std::vector<std::string> digests;
  {
    std::ifstream in(sha_file);
    std::string line;
    while (std::getline(in, line)) {
      if (line.size() >= 64) digests.push_back(Unhex(line.substr(0, 64)));
    }
  }
  if (digests.empty() || (digests.size() != 1 && digests.size() < count)) {
    std::fprintf(stderr, "fetch_bench: %s has %zu digests for %u objects\n", sha_file.c_str(), digests.size(), count);
    return 2;
  }
  auto url_of = [&](unsigned i) {
    std::string url = url_template;
    if (brace != std::string::npos) url.replace(brace, 3, std::to_string(i));
    return url;
  };

  FetchOptions options;
  options.allow = {allow};
  options.ca_bundle = ca;
  options.client_cert = cert;
  options.client_key = key;
  options.max_attempts = 1;  // a benchmark reports failures, it does not hide them
  auto config = std::make_shared<const FetchConfig>(options);

  std::vector<uint8_t*> buffers;
  for (unsigned t = 0; t < threads; ++t) buffers.push_back(AllocateBuffer(size, lock));
  std::vector<double> busy(threads, 0.0);
  std::vector<uint64_t> moved(threads, 0);
  std::atomic<unsigned> failures{0};
  std::string first_failure;
  std::mutex failure_mutex;
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      Fetcher fetcher(config);
      for (unsigned round = 0; round < rounds; ++round) {
        for (unsigned i = t; i < count; i += threads) {
          FetchRequest request{url_of(i), size, digests.size() == 1 ? digests[0] : digests[i]};
          const FetchResult result = fetcher.Fetch(request, {buffers[t], size});
          busy[t] += result.seconds;
          if (result.status == FetchStatus::kOk) {
            moved[t] += result.bytes;
          } else if (failures.fetch_add(1) == 0) {
            std::lock_guard<std::mutex> hold(failure_mutex);
            first_failure = std::string(zkfleet::fetch::FetchStatusName(result.status)) + ": " + result.why;
          }
        }
      }
    });
  }
  for (auto& w : workers) w.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  uint64_t total = 0;
  std::string per_stream;
  for (unsigned t = 0; t < threads; ++t) {
    total += moved[t];
    char item[32];
    std::snprintf(item, sizeof item, "%s%.3f", t ? "," : "", busy[t] > 0 ? moved[t] / busy[t] / 1e9 : 0.0);
    per_stream += item;
  }
  const size_t colon = url_template.find("://");
  std::printf(
      "{\"scheme\":%s,\"threads\":%u,\"count\":%u,\"rounds\":%u,\"size\":%llu,\"mlock\":%s,\"seconds\":%.4f,"
      "\"aggregate_GBps\":%.3f,\"per_stream_GBps\":[%s],\"failures\":%u,\"first_failure\":%s}\n",
      JsonString(url_template.substr(0, colon == std::string::npos ? 0 : colon)).c_str(), threads, count, rounds,
      static_cast<unsigned long long>(size), lock ? "true" : "false", seconds, total / seconds / 1e9,
      per_stream.c_str(), failures.load(), JsonString(first_failure).c_str());
  return failures.load() == 0 ? 0 : 1;
}
