// CircuitSet's load of a bellperson .params circuit: the load progress the
// worker turns into zkfleet_worker_key_load_bytes (ending at the file's
// size), the "loaded ..." log line saying how fast and how the points were
// checked (checked, then remembered on the next start with the same
// key-check cache), and NOT checked under --no-key-check.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "testutil/test_support.hpp"
#include "unit/bellman/bellman_test_util.hpp"
#include "zkfleet/worker/circuit_set.hpp"

namespace zkfleet::worker {
namespace {

using zkfleet::testing::TempDir;

// Captures what spdlog logs while it lives.
class CapturedLog {
 public:
  CapturedLog() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(text_);
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", sink));
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  std::string text() const { return text_.str(); }

 private:
  std::shared_ptr<spdlog::logger> previous_;
  std::ostringstream text_;
};

class CircuitSetBellman : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(3);
    bellman::ThreadPool pool(2);
    bellman::WriteParameters(path_, bellman::testing::SmallParameters(rng), pool);
    cache_ = engine::CheckedKeys(dir_.path() / "checked-keys");
    cache_.set_min_file_age(std::chrono::nanoseconds(0));  // just written: recorded all the same
  }

  // Loads the circuit as a worker start does; returns the log and the
  // progress calls.
  std::pair<std::string, std::vector<std::pair<uint64_t, uint64_t>>> Start(bool validate_key = true,
                                                                            std::vector<Device> devices = {}) {
    CapturedLog log;
    engine::EngineOptions options{engine::Backend::kCpu, 2};
    options.validate_key = validate_key;
    CircuitSpec spec;
    spec.id = "porep";
    spec.zkey_path = path_;
    spec.kind = proto::CIRCUIT_KIND_BELLMAN;
    CircuitSet set({spec}, options, std::chrono::milliseconds(0), true, cache_, std::move(devices));
    std::vector<std::pair<uint64_t, uint64_t>> calls;
    set.set_load_progress([&](const std::string& id, uint64_t done, uint64_t total) {
      EXPECT_EQ(id, "porep");
      calls.emplace_back(done, total);
    });
    set.Load();
    EXPECT_GT(set.resident_bytes(), 0u);
    return {log.text(), calls};
  }

  TempDir dir_;
  std::string path_ = dir_.file("porep.params");
  engine::CheckedKeys cache_;
};

TEST_F(CircuitSetBellman, LoadReportsProgressAndHowThePointsWereChecked) {
  const uint64_t size = std::filesystem::file_size(path_);
  auto [first_log, calls] = Start();
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.back(), std::make_pair(size, size)) << "the gauge ends at the file's size";
  for (size_t i = 1; i < calls.size(); ++i) EXPECT_LE(calls[i - 1].first, calls[i].first);
  EXPECT_NE(first_log.find("circuit porep: loaded bellman parameters " + path_), std::string::npos) << first_log;
  EXPECT_NE(first_log.find("MB/s, points checked;"), std::string::npos) << first_log;

  auto [second_log, second_calls] = Start();
  EXPECT_NE(second_log.find("MB/s, points remembered: this file checked before on this host (" +
                            cache_.dir().string() + ")"),
            std::string::npos)
      << second_log;
  EXPECT_EQ(second_calls.back(), std::make_pair(size, size));

  auto [unchecked_log, unchecked_calls] = Start(/*validate_key=*/false);
  EXPECT_NE(unchecked_log.find("points NOT checked (--no-key-check)"), std::string::npos) << unchecked_log;
}

// With several devices (--gpus; here two CPU copies, as --test-fake-devices
// makes them) the first device's load checks the file (or finds it checked)
// and the others load it unchecked, saying so; the progress is the first's.
TEST_F(CircuitSetBellman, OnlyTheFirstDeviceChecks) {
  const uint64_t size = std::filesystem::file_size(path_);
  auto [log, calls] = Start(true, {{0, "fake0"}, {1, "fake1"}});
  EXPECT_NE(log.find("MB/s, points checked;"), std::string::npos) << log;
  EXPECT_NE(log.find("points checked at the load on device fake0"), std::string::npos) << log;
  EXPECT_NE(log.find(" on device fake1"), std::string::npos) << log;
  EXPECT_EQ(calls.back(), std::make_pair(size, size));
  for (const auto& call : calls) EXPECT_EQ(call.second, size) << "one file's progress";
}

}  // namespace
}  // namespace zkfleet::worker
