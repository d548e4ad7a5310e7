// zkworker's flags (worker_flags.hpp): declared once, every size with units,
// a config file under flags, TEST ONLY flags out of --help, and every bad
// value refused with the flag's name before anything starts.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "zkfleet/worker/worker_flags.hpp"

namespace zkfleet::worker {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

// Parses `args` (no program name) as zkworker would, into `flags`.
void Parse(std::vector<std::string> args, WorkerFlags& flags, CLI::App& app) {
  DeclareWorkerFlags(app, flags);
  std::reverse(args.begin(), args.end());  // CLI11 takes a vector last first
  app.parse(args);
}

WorkerSetup Resolve(std::vector<std::string> args) {
  WorkerFlags flags;
  CLI::App app;
  Parse(std::move(args), flags, app);
  return ResolveWorkerFlags(flags);
}

// The message of the FlagError `args` earn ("" when they resolve).
std::string Refusal(std::vector<std::string> args) {
  try {
    Resolve(std::move(args));
  } catch (const FlagError& e) {
    return e.what();
  }
  return "";
}

const std::vector<std::string> kMinimal = {"--insecure-plaintext", "--instant", "--circuit", "a", "--id", "w1"};

std::vector<std::string> With(std::vector<std::string> more) {
  std::vector<std::string> args = kMinimal;
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST(WorkerFlags, TheDefaultsResolveToTheWorkersOwn) {
  const WorkerSetup setup = Resolve(kMinimal);
  const WorkerOptions defaults;
  EXPECT_EQ(setup.options.worker_id, "w1");
  ASSERT_EQ(setup.specs.size(), 1u);
  EXPECT_TRUE(setup.specs[0].instant);
  EXPECT_EQ(setup.options.capacity, defaults.capacity);
  EXPECT_EQ(setup.options.drain_timeout, defaults.drain_timeout);
  EXPECT_EQ(setup.options.fault_window, defaults.fault_window);
  EXPECT_EQ(setup.options.fetch.max_attempts, defaults.fetch.max_attempts);
  EXPECT_EQ(setup.options.fetch.total_timeout, defaults.fetch.total_timeout);
  EXPECT_EQ(setup.options.max_fetch_bytes, 4 * kGiB);
  EXPECT_EQ(setup.options.memory_margin, 256 * kMiB);
  EXPECT_EQ(setup.options.witgen.limits.memory_bytes, 16 * kGiB);
  EXPECT_EQ(setup.connection.heartbeat_interval, ConnectionOptions{}.heartbeat_interval);
  EXPECT_EQ(setup.engine.device_memory_budget, 0u);
  EXPECT_TRUE(setup.verify);
  EXPECT_TRUE(setup.engine.validate_key);
  ASSERT_NE(setup.memory, nullptr);
  EXPECT_FALSE(setup.devices.empty());
}

TEST(WorkerFlags, EverySizeTakesUnits) {
  const WorkerSetup setup =
      Resolve(With({"--memory-margin", "1GiB", "--pool-chunk", "64MiB", "--pool-ready", "128MiB", "--max-fetch-bytes",
                    "3MiB", "--witgen-memory", "2GiB", "--device-memory-budget", "24GiB", "--max-message-bytes", "8MiB",
                    "--max-witness-bytes", "1GiB", "--drain-timeout", "2.5", "--heartbeat-ms", "250"}));
  EXPECT_EQ(setup.options.memory_margin, kGiB);
  EXPECT_EQ(setup.options.pool_chunk_bytes, 64 * kMiB);
  EXPECT_EQ(setup.options.pool_ready_bytes, 128 * kMiB);
  EXPECT_EQ(setup.options.max_fetch_bytes, 3 * kMiB);
  EXPECT_EQ(setup.options.witgen.limits.memory_bytes, 2 * kGiB);
  EXPECT_EQ(setup.engine.device_memory_budget, 24 * kGiB);
  EXPECT_EQ(setup.connection.limits.max_message_bytes, 8 * kMiB);
  EXPECT_EQ(setup.connection.limits.max_witness_bytes, kGiB);
  EXPECT_EQ(setup.options.drain_timeout, std::chrono::milliseconds(2500));
  EXPECT_EQ(setup.connection.heartbeat_interval, std::chrono::milliseconds(250));
}

TEST(WorkerFlags, ABadValueIsRefusedNamingItsFlag) {
  EXPECT_EQ(Refusal(With({"--memory-margin", "3parsecs"})), "--memory-margin 3parsecs is not a size (e.g. 256MiB)");
  EXPECT_NE(Refusal(With({"--pinned-budget", "lots"})).find("--pinned-budget lots is not a size"), std::string::npos);
  EXPECT_NE(Refusal(With({"--max-fetch-bytes", "0"})).find("--max-fetch-bytes 0 is not a size"), std::string::npos);
  EXPECT_NE(Refusal(With({"--witgen-memory", "0"})).find("--witgen-memory 0"), std::string::npos);
  EXPECT_NE(Refusal(With({"--device-memory-budget", "big"})).find("--device-memory-budget big"), std::string::npos);
  EXPECT_EQ(Refusal(With({"--pool-mode", "turbo"})), "--pool-mode turbo: expected auto, hugepage, cuda-host or mmap");
  EXPECT_NE(Refusal(With({"--backend", "abacus"})).find("--backend: "), std::string::npos);
  EXPECT_EQ(Refusal(With({"--test-memory-limit", "1GiB"})), "--test-memory-limit and --test-memory-ledger go together");
  // Without CURVE keys and without --insecure-plaintext there is no connection to make.
  EXPECT_FALSE(Refusal({"--instant", "--circuit", "a"}).empty());
}

TEST(WorkerFlags, CircuitFlagsAreCheckedBeforeAnythingStarts) {
  EXPECT_NE(Refusal({"--insecure-plaintext", "--circuit", "a=/nonexistent/a.zkey"})
                .find("--circuit a=/nonexistent/a.zkey: no such file: /nonexistent/a.zkey"),
            std::string::npos);
  EXPECT_NE(Refusal({"--insecure-plaintext", "--circuit", "=x.zkey"}).find("expected ID=PATH.zkey"), std::string::npos);
  EXPECT_NE(Refusal(With({"--instant-circuit", "a"})).find("circuit a is given twice"), std::string::npos);
  EXPECT_NE(Refusal(With({"--generator", "b=/x/circuit.wasm"})).find("for a circuit given with --circuit"),
            std::string::npos);
  EXPECT_NE(Refusal({"--insecure-plaintext"}).find("give at least one --circuit"), std::string::npos);
  EXPECT_NE(Refusal({"--insecure-plaintext", "--bellman-circuit", "f=/nonexistent.params"}).find("no such file"),
            std::string::npos);
}

TEST(WorkerFlags, AConfigFileSetsWhatFlagsDoNotOverride) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("worker_flags_test_" + std::to_string(::getpid()) + ".toml");
  {
    std::ofstream out(file);
    out << "insecure-plaintext = true\ninstant = true\ncircuit = [\"a\", \"b\"]\ncapacity = 7\n"
           "pinned-budget = \"1GiB\"\nfetch-attempts = 3\n";
  }
  const WorkerSetup from_file = Resolve({"--config", file.string()});
  EXPECT_EQ(from_file.specs.size(), 2u);
  EXPECT_EQ(from_file.options.capacity, 7);
  EXPECT_EQ(from_file.options.pinned_budget.Resolve(0), kGiB);
  EXPECT_EQ(from_file.options.fetch.max_attempts, 3u);
  const WorkerSetup overridden = Resolve({"--config", file.string(), "--capacity", "9"});
  EXPECT_EQ(overridden.options.capacity, 9);
  std::filesystem::remove(file);
}

TEST(WorkerFlags, TestOnlyFlagsAreHiddenFromHelpAndRefusedInAConfigFile) {
  WorkerFlags flags;
  CLI::App app;
  DeclareWorkerFlags(app, flags);
  const std::string help = app.help();
  EXPECT_NE(help.find("--pinned-budget"), std::string::npos);
  for (const char* hidden : {"--test-hold-result-ms", "--test-memory-limit", "--test-fake-devices",
                             "--dispatch-start-delay-ms"}) {
    EXPECT_EQ(help.find(hidden), std::string::npos) << hidden;
    EXPECT_FALSE(app.get_option(hidden)->get_configurable()) << hidden;
  }
}

}  // namespace
}  // namespace zkfleet::worker
