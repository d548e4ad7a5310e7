// Multi-device workers (--gpus): parsing the device list, the worker
// core's device set (who is still in, per-device engine-fault threshold),
// and a CircuitSet with one key copy per device, freed device by device.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "zkfleet/worker/circuit_set.hpp"
#include "zkfleet/worker/devices.hpp"

namespace zkfleet::worker {
namespace {

using std::chrono::seconds;

std::vector<int> Parse(std::string_view spec, int visible, std::string* why = nullptr) {
  std::string error;
  std::vector<int> ordinals = ParseGpuList(spec, visible, &error);
  if (why) *why = error;
  return ordinals;
}

TEST(ParseGpuList, AllIsEveryVisibleDevice) {
  EXPECT_EQ(Parse("all", 2), (std::vector<int>{0, 1}));
  EXPECT_EQ(Parse("all", 1), (std::vector<int>{0}));
}

TEST(ParseGpuList, AListKeepsItsOrder) {
  EXPECT_EQ(Parse("0", 2), (std::vector<int>{0}));
  EXPECT_EQ(Parse("1", 2), (std::vector<int>{1}));
  EXPECT_EQ(Parse("1,0", 2), (std::vector<int>{1, 0}));
  EXPECT_EQ(Parse("0,2,3", 4), (std::vector<int>{0, 2, 3}));
}

TEST(ParseGpuList, RefusesBadListsSayingWhy) {
  std::string why;
  EXPECT_TRUE(Parse("all", 0, &why).empty());
  EXPECT_NE(why.find("no CUDA device"), std::string::npos) << why;
  EXPECT_TRUE(Parse("0", 0, &why).empty());
  EXPECT_TRUE(Parse("2", 2, &why).empty());
  EXPECT_NE(why.find("device 2 does not exist"), std::string::npos) << why;
  EXPECT_TRUE(Parse("0,0", 2, &why).empty());
  EXPECT_NE(why.find("listed twice"), std::string::npos) << why;
  for (const char* bad : {"", "x", "0,", ",1", "-1", "0;1", "1.0", " 0", "0,,1", "ALL"}) {
    EXPECT_TRUE(Parse(bad, 4, &why).empty()) << "'" << bad << "'";
    EXPECT_FALSE(why.empty()) << "'" << bad << "'";
  }
}

TEST(DeviceSet, ADeviceThatFaultsLeavesOnceAndTheOthersStay) {
  DeviceSet set({{0, "0"}, {1, "1"}}, 3, seconds(600));
  EXPECT_EQ(set.size(), 2u);
  EXPECT_EQ(set.live(), 2u);
  EXPECT_TRUE(set.Fault(1, "fatal device error: x", /*lost=*/true));
  EXPECT_FALSE(set.Fault(1, "again", /*lost=*/false)) << "a device leaves once";
  EXPECT_EQ(set.live(), 1u);
  EXPECT_TRUE(set.ok(0));
  EXPECT_FALSE(set.ok(1));
  EXPECT_EQ(set.why(1), "fatal device error: x");
  EXPECT_TRUE(set.any_lost());
  EXPECT_STREQ(DeviceStateName(set.state(1)), "faulted");
  EXPECT_TRUE(set.Fault(0, "3 engine faults", /*lost=*/false));
  EXPECT_EQ(set.live(), 0u);

  DeviceSet one({{0, "0"}}, 3, seconds(600));
  EXPECT_TRUE(one.Fault(0, "3 engine faults", /*lost=*/false));
  EXPECT_FALSE(one.any_lost());
  EXPECT_FALSE(one.Fault(0, "fatal device error: y", /*lost=*/true));
  EXPECT_TRUE(one.any_lost()) << "a fatal error after it left is remembered";
  EXPECT_EQ(one.why(0), "3 engine faults");
}

TEST(DeviceSet, EngineFaultsCountPerDeviceWithinTheWindow) {
  DeviceSet set({{0, "0"}, {1, "1"}}, 2, seconds(10));
  const auto t0 = DeviceSet::Clock::now();
  EXPECT_FALSE(set.CountEngineFault(0, t0));
  EXPECT_FALSE(set.CountEngineFault(1, t0)) << "another device's fault does not count for device 0";
  EXPECT_FALSE(set.CountEngineFault(0, t0 + seconds(11))) << "the first fault is out of the window";
  EXPECT_TRUE(set.CountEngineFault(0, t0 + seconds(12)));
  EXPECT_EQ(set.recent_faults(0), 2u);
  EXPECT_FALSE(set.any_lost());

  DeviceSet never({{0, "0"}}, 0, seconds(10));
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(never.CountEngineFault(0, t0)) << "threshold 0: never";
}

std::string Fixture(const std::string& name) { return std::string(ZKFLEET_FIXTURES_DIR) + "/bn128_k12/" + name; }

// One key copy per device; a device's copies are freed on their own and the
// other device goes on proving.
TEST(CircuitSetDevices, EveryDeviceHasItsOwnKeysFreedOnTheirOwn) {
  engine::EngineOptions options;
  options.backend = engine::Backend::kCpu;
  options.threads = 1;
  CircuitSet set({{"c", Fixture("circuit_final.zkey"), false}}, options, std::chrono::milliseconds(0), true,
                 engine::CheckedKeys(), {{0, "fake0"}, {1, "fake1"}});
  ASSERT_EQ(set.device_count(), 2u);
  set.Load();
  const uint64_t one = set.resident_bytes(0);
  EXPECT_GT(one, 0u);
  EXPECT_EQ(set.resident_bytes(1), one);
  EXPECT_EQ(set.resident_bytes(), 2 * one);

  std::ifstream in(Fixture("witness.wtns"), std::ios::binary);
  const std::vector<uint8_t> witness((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(witness.empty());
  proto::Job job;
  job.set_circuit_id("c");
  EXPECT_EQ(set.Release(0), one);
  EXPECT_EQ(set.resident_bytes(), one);
  ProveOutcome gone = set.Prove(job, witness, 0);
  EXPECT_FALSE(gone.ok) << "device 0's keys are freed";
  ProveOutcome proved = set.Prove(job, witness, 1);
  EXPECT_TRUE(proved.ok) << proved.error;
  EXPECT_NE(proved.proof_json.find("pi_a"), std::string::npos);
  EXPECT_EQ(set.Release(), one);
  EXPECT_EQ(set.resident_bytes(), 0u);
}

}  // namespace
}  // namespace zkfleet::worker
