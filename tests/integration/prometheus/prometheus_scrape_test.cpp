// A real Prometheus server on 127.0.0.1 scrapes a real broker and worker
// (benchmark-instant mode) every second during a short job stream; the test
// then asks Prometheus's HTTP API for the job counters and a histogram
// quantile and compares them with what the run did. It also loads
// deploy/prometheus/alerts.yml into that server (every rule must evaluate
// cleanly, none may fire on a healthy run) and runs every query of the
// Grafana dashboard against the live data (each must return series).
//
// Fails (never skips) when the prometheus binary is missing (the install
// script, ./scripts/install-deps.sh, provides it) or when zkbroker / zkworker
// no longer offer --metrics-listen (docs/metrics.md, "Wiring"): either would
// otherwise hide that nothing was checked.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testutil/child_process.hpp"
#include "testutil/test_support.hpp"
#include "prometheus_api.hpp"
#include "unit/metrics/http_client.hpp"

namespace zkfleet::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr int kHeartbeatMs = 200;
// Every proof "takes" 30 ms (--instant-delay-ms): all observations of
// prove_total fall in the (25 ms, 50 ms] bucket.
constexpr int kInstantDelayMs = 30;
constexpr int kNormalJobs = 8;
constexpr int kHighJobs = 4;

std::string Binary(const std::string& tool) { return std::string(ZKFLEET_BINARY_DIR) + "/cmd/" + tool + "/" + tool; }

template <typename Predicate>
bool WaitFor(Predicate predicate, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (predicate()) return true;
    std::this_thread::sleep_for(100ms);
  }
  return predicate();
}

class PrometheusScrapeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("zkfleet-prometheus-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }

  void TearDown() override {
    children_.clear();  // kills and reaps every child
    if (HasFailure()) {
      std::fprintf(stderr, "logs kept in %s\n", dir_.c_str());
    } else {
      fs::remove_all(dir_);
    }
  }

  // Whether `tool --help` exits 0 and mentions --metrics-listen.
  ::testing::AssertionResult SupportsMetricsListen(const std::string& tool) {
    std::string help;
    int code = RunProcess({Binary(tool), "--help"}, &help, dir_ / (tool + "-help.log"));
    if (code == 0 && help.find("--metrics-listen") != std::string::npos) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << tool << " --help (exit " << code << ") does not offer --metrics-listen:\n"
                                         << help;
  }

  ChildProcess& Start(const std::vector<std::string>& argv, const std::string& name) {
    children_.push_back(std::make_unique<ChildProcess>(argv, dir_ / (name + ".log")));
    return *children_.back();
  }

  int Zkctl(const std::vector<std::string>& args, std::string* output) {
    // Plaintext: this test is about metrics; the CURVE fleet tests are in tests/integration/fleet.
    std::vector<std::string> argv = {Binary("zkctl"), "--broker", "tcp://127.0.0.1:" + std::to_string(client_port_),
                                     "--insecure-plaintext"};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProcess(argv, output, dir_ / ("zkctl-" + std::to_string(zkctl_runs_++) + ".log"));
  }

  std::string WritePrometheusConfig(int broker_metrics, int worker_metrics) {
    fs::path config = dir_ / "prometheus.yml";
    std::ofstream out(config);
    out << "global:\n"
           "  scrape_interval: 1s\n"
           "  scrape_timeout: 900ms\n"
           "  evaluation_interval: 1s\n"
           "rule_files:\n"
           "  - "
        << ZKFLEET_SOURCE_DIR
        << "/deploy/prometheus/alerts.yml\n"
           "scrape_configs:\n"
           "  - job_name: zkfleet-broker\n"
           "    static_configs:\n"
           "      - targets: ['127.0.0.1:"
        << broker_metrics
        << "']\n"
           "  - job_name: zkfleet-worker\n"
           "    static_configs:\n"
           "      - targets: ['127.0.0.1:"
        << worker_metrics << "']\n";
    return config.string();
  }

  fs::path dir_;
  int client_port_ = 0;
  int zkctl_runs_ = 0;
  std::vector<std::unique_ptr<ChildProcess>> children_;
};

TEST_F(PrometheusScrapeTest, PrometheusSeesTheJobCountersAndPhaseHistogramOfARun) {
  ASSERT_TRUE(RequireOnPath("prometheus"));
  const std::string prometheus_binary = FindOnPath("prometheus");
  for (const char* tool : {"zkbroker", "zkworker", "zkctl"}) {
    ASSERT_EQ(access(Binary(tool).c_str(), X_OK), 0) << Binary(tool) << " is not built";
  }
  for (const char* tool : {"zkbroker", "zkworker"}) ASSERT_TRUE(SupportsMetricsListen(tool));

  client_port_ = FreePort();
  int worker_port = FreePort();
  int broker_metrics = FreePort();
  int worker_metrics = FreePort();
  int prometheus_port = FreePort();
  std::string heartbeat = std::to_string(kHeartbeatMs);

  ChildProcess& broker = Start({Binary("zkbroker"), "--clients", "tcp://127.0.0.1:" + std::to_string(client_port_), "--workers",
         "tcp://127.0.0.1:" + std::to_string(worker_port), "--heartbeat-ms", heartbeat, "--metrics-listen",
         "127.0.0.1:" + std::to_string(broker_metrics), "--data-dir", (dir_ / "broker-data").string(),
         "--insecure-plaintext", "--unverified-circuits", "mul"},
        "broker");
  ChildProcess& worker =
      Start({Binary("zkworker"), "--broker", "tcp://127.0.0.1:" + std::to_string(worker_port), "--insecure-plaintext",
             "--id", "itest-worker",
             "--instant", "--circuit", "mul", "--instant-delay-ms", std::to_string(kInstantDelayMs), "--heartbeat-ms",
             heartbeat, "--metrics-listen", "127.0.0.1:" + std::to_string(worker_metrics)},
            "worker");

  // The readiness contract (docs/operations.md): /ready is 200 once READY.
  ASSERT_TRUE(WaitFor([&] { return HttpGet(worker_metrics, "/ready").status == 200; }, 15s))
      << "worker /ready never answered 200:\n"
      << worker.Log();
  // An --instant worker is READY without its broker (it has no key to load),
  // so the broker may still be starting: wait for it too.
  ASSERT_TRUE(WaitFor([&] { return HttpGet(broker_metrics, "/healthz").status == 200; }, 15s))
      << "broker /healthz never answered 200:\n"
      << broker.Log();

  Start({prometheus_binary, "--config.file=" + WritePrometheusConfig(broker_metrics, worker_metrics),
         "--storage.tsdb.path=" + (dir_ / "tsdb").string(),
         "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port), "--log.level=warn"},
        "prometheus");
  PrometheusApi api(prometheus_port);
  ASSERT_TRUE(WaitFor([&] { return HttpGet(prometheus_port, "/-/ready").status == 200; }, 30s))
      << "prometheus did not become ready:\n"
      << ReadFile(dir_ / "prometheus.log");
  ASSERT_TRUE(WaitFor([&] { return api.Scalar("sum(up)") == 2.0; }, 15s))
      << "prometheus does not scrape both targets: " << api.Query("up").dump();

  // The job stream: HIGH and NORMAL jobs, each waited for.
  std::string witness = std::string(ZKFLEET_FIXTURES_DIR) + "/bn128_k12/witness.wtns";
  for (int i = 0; i < kNormalJobs + kHighJobs; ++i) {
    std::string output;
    const char* priority = i < kHighJobs ? "high" : "normal";
    ASSERT_EQ(Zkctl({"submit", "--circuit", "mul", "--priority", priority, "--wait", witness}, &output), 0) << output;
  }
  const double jobs = kNormalJobs + kHighJobs;

  // Prometheus scrapes every second; wait until it has seen the last result.
  ASSERT_TRUE(WaitFor([&] { return api.Scalar("sum(zkfleet_jobs_completed_total)") == jobs; }, 15s))
      << api.Query("zkfleet_jobs_completed_total").dump();
  ASSERT_TRUE(WaitFor([&] { return api.Scalar("sum(zkfleet_worker_jobs_total{outcome=\"succeeded\"})") == jobs; }, 15s))
      << api.Query("zkfleet_worker_jobs_total").dump();

  // Broker counters by priority and circuit.
  auto completed = api.ByLabel("sum by (priority) (zkfleet_jobs_completed_total{circuit=\"mul\"})", "priority");
  EXPECT_EQ(completed["HIGH"], kHighJobs);
  EXPECT_EQ(completed["NORMAL"], kNormalJobs);
  EXPECT_EQ(completed["LOW"], 0);
  EXPECT_EQ(api.Scalar("sum(zkfleet_jobs_submitted_total{circuit=\"mul\"})"), jobs);
  EXPECT_EQ(api.Scalar("sum(zkfleet_jobs_failed_total)"), 0.0);
  EXPECT_EQ(api.Scalar("sum(zkfleet_jobs_dead_lettered_total)"), 0.0);
  EXPECT_EQ(api.Scalar("sum(zkfleet_queue_depth)"), 0.0);
  EXPECT_EQ(api.Scalar("sum(zkfleet_broker_queue_wait_seconds_count)"), jobs);

  // Worker: one observation per job; every one 30 ms, so all in (25, 50] ms,
  // and histogram_quantile interpolates linearly inside that bucket.
  EXPECT_EQ(api.Scalar("zkfleet_job_phase_seconds_count{phase=\"prove_total\",circuit=\"mul\"}"), jobs);
  EXPECT_EQ(api.Scalar("zkfleet_job_phase_seconds_bucket{phase=\"prove_total\",circuit=\"mul\",le=\"0.025\"}"), 0.0);
  EXPECT_EQ(api.Scalar("zkfleet_job_phase_seconds_bucket{phase=\"prove_total\",circuit=\"mul\",le=\"0.05\"}"), jobs);
  auto sum = api.Scalar("zkfleet_job_phase_seconds_sum{phase=\"prove_total\",circuit=\"mul\"}");
  ASSERT_TRUE(sum);
  EXPECT_NEAR(*sum, jobs * kInstantDelayMs / 1000.0, 1e-9);
  for (double q : {0.5, 0.9}) {
    auto quantile = api.Scalar("histogram_quantile(" + std::to_string(q) +
                               ", sum by (le) (zkfleet_job_phase_seconds_bucket{phase=\"prove_total\"}))");
    ASSERT_TRUE(quantile) << q;
    EXPECT_NEAR(*quantile, 0.025 + 0.025 * q, 1e-9) << "quantile " << q;
  }

  // States, as the worker and as the broker see them; build info.
  EXPECT_EQ(api.Scalar("zkfleet_worker_state{state=\"READY\"}"), 1.0);
  EXPECT_EQ(api.Scalar("sum(zkfleet_worker_state)"), 1.0);
  EXPECT_EQ(api.Scalar("zkfleet_broker_workers{state=\"READY\"}"), 1.0);
  EXPECT_EQ(api.Scalar("count(zkfleet_build_info{version!=\"\",commit!=\"\"})"), 2.0);

  // Every dashboard query runs and returns series on this live data
  // (Grafana's variables replaced by "everything").
  std::ifstream dashboard_file(std::string(ZKFLEET_SOURCE_DIR) + "/deploy/grafana/zkfleet.json");
  auto dashboard = nlohmann::json::parse(dashboard_file);
  int queries = 0;
  for (const auto& panel : dashboard["panels"]) {
    if (!panel.contains("targets")) continue;
    for (const auto& target : panel["targets"]) {
      std::string expr = target["expr"];
      expr = std::regex_replace(expr, std::regex(R"(\$__rate_interval)"), "1m");
      expr = std::regex_replace(expr, std::regex(R"(\$\w+)"), ".*");
      // rate() needs two samples in its window: a series born a moment ago
      // may take a scrape or two to show.
      nlohmann::json reply;
      WaitFor(
          [&] {
            reply = api.Query(expr);
            return reply.value("status", "") == "success" && !reply["data"]["result"].empty();
          },
          5s);
      EXPECT_EQ(reply.value("status", ""), "success") << panel["title"] << ": " << expr << "\n" << reply.dump();
      EXPECT_FALSE(reply["data"]["result"].empty()) << panel["title"] << ": no series for " << expr;
      ++queries;
    }
  }
  EXPECT_GT(queries, 20);

  // The alert rules evaluate cleanly on real data, and none fires.
  ASSERT_TRUE(WaitFor(
      [&] {
        auto rules = api.Get("/api/v1/rules");
        if (rules.value("status", "") != "success") return false;
        for (const auto& group : rules["data"]["groups"]) {
          for (const auto& rule : group["rules"]) {
            if (rule.value("health", "") != "ok") return false;
          }
        }
        return !rules["data"]["groups"].empty();
      },
      10s))
      << api.Get("/api/v1/rules").dump(2);
  auto alerts = api.Get("/api/v1/alerts");
  for (const auto& alert : alerts["data"]["alerts"]) {
    EXPECT_NE(alert.value("state", ""), "firing") << alert.dump();
  }

  // A drain: the worker leaves and exits 0 (its metrics server must not keep
  // it alive), and the broker's view follows.
  std::string output;
  EXPECT_EQ(Zkctl({"drain", "itest-worker", "--wait"}, &output), 0) << output;
  EXPECT_EQ(worker.WaitExit(15s), std::optional<int>(0)) << worker.Log();
  EXPECT_TRUE(WaitFor([&] { return api.Scalar("zkfleet_broker_workers{state=\"READY\"}") == 0.0; }, 10s))
      << api.Query("zkfleet_broker_workers").dump();
}

}  // namespace
}  // namespace zkfleet::testing
