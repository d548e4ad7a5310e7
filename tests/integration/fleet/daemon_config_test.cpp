// The daemons' configuration files (common/zkfleet/common/daemon_options.hpp, docs/operations.md
// "Configuration files"): --print-config writes a file --config reads back
// unchanged, flags override the file, sizes take units, mistakes exit 2 in
// words, test aids stay out of --help and out of files, and a broker and a
// worker configured by files alone serve a job.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "fleet_harness.hpp"

namespace fleet_test {
namespace {

void WriteFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// The lines of a printed config that set something (not comments).
std::string Settings(const std::string& printed) {
  std::string out, line;
  std::istringstream in(printed);
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#') out += line + "\n";
  }
  return out;
}

TEST(DaemonConfig, PrintedConfigReadsBackAndFlagsOverrideIt) {
  Fleet fleet("daemon_config");
  const std::string broker = BinaryPath("zkbroker"), worker = BinaryPath("zkworker");
  const std::string file = fleet.dir() + "/broker.toml";
  std::string printed;
  ASSERT_EQ(RunCommand({broker, "--data-dir", fleet.dir() + "/journal", "--insecure-plaintext", "--max-message-bytes",
                        "16MiB", "--verification-key", "c1=a.json", "--verification-key", "c2=b.json",
                        "--unverified-circuits", "x,y", "--print-config"},
                       &printed),
            0)
      << printed;
  EXPECT_EQ(Settings(printed), "data-dir=\"" + fleet.dir() + "/journal\"\ninsecure-plaintext=true\n"
                               "max-message-bytes=16777216\nverification-key=[\"c1=a.json\", \"c2=b.json\"]\n"
                               "unverified-circuits=[\"x\", \"y\"]\n")
      << printed;
  // Defaults are there, commented out, with each option's help.
  EXPECT_NE(printed.find("# heartbeat-ms=1000\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find("# sync=\"batch\"\n"), std::string::npos) << printed;
  WriteFile(file, printed);
  std::string again;
  ASSERT_EQ(RunCommand({broker, "--config", file, "--print-config"}, &again), 0) << again;
  EXPECT_EQ(again, printed);
  // A flag overrides the file.
  ASSERT_EQ(RunCommand({broker, "--config", file, "--max-message-bytes", "1K", "--print-config"}, &again), 0) << again;
  EXPECT_NE(again.find("\nmax-message-bytes=1024\n"), std::string::npos) << again;

  // Mistakes: exit 2, in words, naming what is wrong.
  std::string out;
  WriteFile(fleet.dir() + "/misspelt.toml", "data-dir = \"/tmp/x\"\nmax-mesage-bytes = 3\n");
  EXPECT_EQ(RunCommand({broker, "--config", fleet.dir() + "/misspelt.toml"}, &out), 2) << out;
  EXPECT_NE(out.find("--config: no option is called 'max-mesage-bytes'"), std::string::npos) << out;
  EXPECT_EQ(RunCommand({broker, "--data-dir", fleet.dir() + "/j", "--max-witness-bytes", "3parsecs"}, &out), 2) << out;
  EXPECT_NE(out.find("'3parsecs' is not a size"), std::string::npos) << out;
  EXPECT_EQ(RunCommand({broker, "--config", fleet.dir() + "/nowhere.toml"}, &out), 2) << out;
  EXPECT_NE(out.find("nowhere.toml"), std::string::npos) << out;
  WriteFile(fleet.dir() + "/test-aid.toml", "test-hold-result-ms = 5\n");
  EXPECT_EQ(RunCommand({worker, "--config", fleet.dir() + "/test-aid.toml"}, &out), 2) << out;
  EXPECT_NE(out.find("test-hold-result-ms"), std::string::npos) << out;

  // Test aids are not in --help (they still work as flags, for the tests).
  ASSERT_EQ(RunCommand({worker, "--help"}, &out), 0) << out;
  EXPECT_EQ(out.find("TEST ONLY"), std::string::npos) << out;
  EXPECT_EQ(out.find("--test-"), std::string::npos) << out;
  EXPECT_NE(out.find("--config"), std::string::npos) << out;
  ASSERT_EQ(RunCommand({worker, "--print-config"}, &out), 0) << out;
  EXPECT_EQ(out.find("test-"), std::string::npos) << out;
}

// A broker and a worker whose settings come from files: the worker's
// circuits and mode are only in its file, the broker's bounds only in its.
TEST(DaemonConfig, ABrokerAndAWorkerConfiguredByFilesServeAJob) {
  Fleet fleet("daemon_config_run");
  WriteFile(fleet.dir() + "/broker.toml", "max-attempts = 5\nmax-witness-bytes = \"64MiB\"\n");
  fleet.StartBroker({"--config", fleet.dir() + "/broker.toml"});
  WriteFile(fleet.dir() + "/worker.toml", "instant = true\ncircuit = [\"c1\"]\ncapacity = 2\n");
  fleet.StartWorker("w1", {"--config", fleet.dir() + "/worker.toml"});
  fleet.WaitWorkerReady("w1");
  std::string out;
  ASSERT_EQ(fleet.Zkctl({"submit", "--circuit", "c1", "--wait", Fixture("bn128_k12/witness.wtns")}, &out), 0) << out;
  EXPECT_NE(out.find("SUCCEEDED"), std::string::npos) << out;
}

}  // namespace
}  // namespace fleet_test
