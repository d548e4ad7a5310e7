// zkbroker's flags (broker_flags.hpp): declared once, sizes with units, a
// config file under flags, exactly one journal, etcd's bounds fitted, and
// every bad value refused with the flag's name before the journal opens.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "zkfleet/broker/broker_flags.hpp"
#include "zkfleet/broker/verification_keys.hpp"
#include "zkfleet/fleet/curve_keys.hpp"

namespace zkfleet::broker {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

BrokerSetup Resolve(std::vector<std::string> args) {
  BrokerFlags flags;
  CLI::App app;
  DeclareBrokerFlags(app, flags);
  std::reverse(args.begin(), args.end());  // CLI11 takes a vector last first
  app.parse(args);
  return ResolveBrokerFlags(flags);
}

std::string Refusal(std::vector<std::string> args) {
  try {
    Resolve(std::move(args));
  } catch (const FlagError& e) {
    return e.what();
  }
  return "";
}

std::string Fixture(const std::string& file) { return std::string(ZKFLEET_FIXTURES_DIR) + "/bn128_k12/" + file; }

const std::vector<std::string> kMinimal = {"--insecure-plaintext", "--data-dir", "/tmp/unused-journal"};

std::vector<std::string> With(std::vector<std::string> more) {
  std::vector<std::string> args = kMinimal;
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST(BrokerFlags, TheDefaultsResolveToTheBrokersOwn) {
  const BrokerSetup setup = Resolve(kMinimal);
  const BrokerOptions defaults;
  EXPECT_EQ(setup.options.journal.dir, "/tmp/unused-journal");
  EXPECT_FALSE(setup.options.journal.etcd.has_value());
  EXPECT_FALSE(setup.leadership.has_value());
  EXPECT_EQ(setup.options.heartbeat_interval, defaults.heartbeat_interval);
  EXPECT_EQ(setup.options.result_ttl, defaults.result_ttl);
  EXPECT_EQ(setup.options.dedup_window, defaults.dedup_window);
  EXPECT_EQ(setup.options.lease_start_timeout, defaults.lease_start_timeout);
  EXPECT_EQ(setup.options.strike_window, defaults.strike_window);
  EXPECT_EQ(setup.options.lease_overrun_min, defaults.lease_overrun_min);
  EXPECT_EQ(setup.options.max_partitions, defaults.max_partitions);
  EXPECT_TRUE(setup.options.security.plaintext);
  ASSERT_NE(setup.options.verification_keys, nullptr);
}

TEST(BrokerFlags, SizesTakeUnitsAndSecondsBecomeDurations) {
  const BrokerSetup setup =
      Resolve(With({"--max-witness-bytes", "64MiB", "--max-message-bytes", "2MiB", "--max-live-witness-bytes", "1GiB",
                    "--result-ttl", "1.5", "--lease-start-timeout", "30", "--heartbeat-ms", "200"}));
  EXPECT_EQ(setup.options.limits.max_witness_bytes, 64 * kMiB);
  EXPECT_EQ(setup.options.limits.max_message_bytes, 2 * kMiB);
  EXPECT_EQ(setup.options.admission.max_witness_bytes, 1024 * kMiB);
  EXPECT_EQ(setup.options.result_ttl, std::chrono::milliseconds(1500));
  EXPECT_EQ(setup.options.lease_start_timeout, std::chrono::milliseconds(30000));
  EXPECT_EQ(setup.options.heartbeat_interval, std::chrono::milliseconds(200));
  EXPECT_THROW(Resolve(With({"--max-witness-bytes", "3parsecs"})), CLI::ValidationError);
}

TEST(BrokerFlags, ExactlyOneJournal) {
  const std::string both = Refusal({"--insecure-plaintext", "--data-dir", "/tmp/j", "--journal", "etcd://127.0.0.1:2379/p"});
  EXPECT_NE(both.find("exactly one"), std::string::npos) << both;
  EXPECT_NE(Refusal({"--insecure-plaintext"}).find("exactly one"), std::string::npos);
  EXPECT_NE(Refusal({"--insecure-plaintext", "--journal", "http://127.0.0.1:2379"}), "");
}

TEST(BrokerFlags, AnEtcdJournalCampaignsUnderItsNameWithBoundsThatFitATransaction) {
  const BrokerSetup setup = Resolve({"--insecure-plaintext", "--journal", "etcd://127.0.0.1:2379,127.0.0.1:2479/fleet/",
                                     "--advertise", "broker-a", "--etcd-lease-ttl", "8", "--clients",
                                     "tcp://0.0.0.0:7000", "--workers", "tcp://10.1.2.3:7001", "--grpc-listen",
                                     "0.0.0.0:7443", "--grpc-insecure-plaintext"});
  ASSERT_TRUE(setup.leadership.has_value());
  // The leader key's value: the name, and where standbys send clients and
  // workers (a wildcard host becomes this host's name).
  const LeaderAddress self = LeaderAddress::Decode(setup.leadership->name);
  EXPECT_EQ(self, setup.self);
  EXPECT_EQ(self.name, "broker-a");
  EXPECT_EQ(self.clients.rfind("tcp://", 0), 0u);
  EXPECT_EQ(self.clients.find("0.0.0.0"), std::string::npos) << self.clients;
  EXPECT_EQ(self.clients.substr(self.clients.size() - 5), ":7000");
  EXPECT_EQ(self.workers, "tcp://10.1.2.3:7001");
  EXPECT_EQ(self.grpc.substr(self.grpc.size() - 5), ":7443");
  EXPECT_EQ(self.grpc.find("0.0.0.0"), std::string::npos) << self.grpc;
  const BrokerSetup told = Resolve({"--insecure-plaintext", "--journal", "etcd://127.0.0.1:2379/p",
                                    "--advertise-clients", "tcp://broker-0.zk:7000", "--advertise-workers",
                                    "tcp://broker-0.zk:7001"});
  EXPECT_EQ(told.self.clients, "tcp://broker-0.zk:7000");
  EXPECT_EQ(told.self.workers, "tcp://broker-0.zk:7001");
  EXPECT_EQ(setup.leadership->ttl, std::chrono::seconds(8));
  EXPECT_EQ(setup.leadership->client.call_timeout, std::chrono::milliseconds(2000));
  EXPECT_EQ(setup.leadership->client.endpoints.size(), 2u);
  ASSERT_TRUE(setup.options.journal.etcd.has_value());
  EXPECT_GT(setup.options.max_inline_job_bytes, 0u);  // etcd's default: larger witnesses by reference
  // A bound given that no transaction can hold is refused, saying what to change.
  EXPECT_NE(Refusal({"--insecure-plaintext", "--journal", "etcd://127.0.0.1:2379/p", "--max-inline-job-bytes", "64MiB"}),
            "");
}

TEST(BrokerFlags, CurveNeedsItsKeyAndTheAllowListsUnlessPlaintext) {
  EXPECT_NE(Refusal({"--data-dir", "/tmp/j"}).find("CURVE is on by default"), std::string::npos);
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("broker_flags_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  fleet::WriteKeyPair(dir, "broker", fleet::GenerateCurveKeyPair());
  const BrokerSetup setup = Resolve({"--data-dir", "/tmp/j", "--curve-secret-key", (dir / "broker.secret").string(),
                                     "--allow-dir", dir.string()});
  EXPECT_FALSE(setup.options.security.plaintext);
  EXPECT_EQ(setup.options.security.allow_dir, dir.string());
  EXPECT_FALSE(Refusal({"--data-dir", "/tmp/j", "--curve-secret-key", (dir / "missing.secret").string(),
                        "--allow-dir", dir.string()})
                   .empty());
  std::filesystem::remove_all(dir);
}

TEST(BrokerFlags, VerificationKeysAreReadAtStartAndABadOneIsRefused) {
  const BrokerSetup setup = Resolve(With({"--verification-key", "transfer=" + Fixture("verification_key.json")}));
  ASSERT_NE(setup.options.verification_keys, nullptr);
  EXPECT_NE(setup.options.verification_keys->Find("transfer"), nullptr);
  const std::string bad = Refusal(With({"--verification-key", "transfer=" + Fixture("proof.json")}));
  EXPECT_EQ(bad.rfind("--verification-key: ", 0), 0u) << bad;
}

TEST(BrokerFlags, AConfigFileSetsWhatFlagsDoNotOverride) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("broker_flags_test_" + std::to_string(::getpid()) + ".toml");
  {
    std::ofstream out(file);
    out << "insecure-plaintext = true\ndata-dir = \"/tmp/from-file\"\nmax-attempts = 7\nmax-witness-bytes = \"8MiB\"\n";
  }
  const BrokerSetup from_file = Resolve({"--config", file.string()});
  EXPECT_EQ(from_file.options.journal.dir, "/tmp/from-file");
  EXPECT_EQ(from_file.options.max_attempts, 7u);
  EXPECT_EQ(from_file.options.limits.max_witness_bytes, 8 * kMiB);
  EXPECT_EQ(Resolve({"--config", file.string(), "--max-attempts", "2"}).options.max_attempts, 2u);
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace zkfleet::broker
