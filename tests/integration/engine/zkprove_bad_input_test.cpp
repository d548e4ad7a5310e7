// zkprove on bad input: exit code 1, exactly one line on stderr naming the
// file and what is wrong, and no proof files written.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "testutil/test_support.hpp"

namespace zkfleet {
namespace {

using testing::Fixture;
using testing::Quote;
using testing::RunCommand;
using testing::TempDir;

std::string Zkprove() { return std::string(ZKFLEET_BINARY_DIR) + "/cmd/zkprove/zkprove"; }

class ZkproveBadInput : public ::testing::Test {
 protected:
  // Runs zkprove and checks the failure contract; returns the message.
  std::string ExpectFailure(const std::string& zkey, const std::string& wtns) {
    auto run = RunCommand(Quote(Zkprove()) + " " + Quote(zkey) + " " + Quote(wtns) + " " + dir_.file("proof.json") +
                          " " + dir_.file("public.json"));
    EXPECT_EQ(run.exit_code, 1) << run.output;
    EXPECT_FALSE(std::filesystem::exists(dir_.file("proof.json"))) << "a proof was written despite the error";
    EXPECT_FALSE(std::filesystem::exists(dir_.file("public.json")));
    // One line: the message and its trailing newline.
    EXPECT_EQ(std::count(run.output.begin(), run.output.end(), '\n'), 1) << run.output;
    EXPECT_EQ(run.output.rfind("zkprove: error: ", 0), 0u) << run.output;
    return run.output;
  }

  std::string Corrupt(const std::string& name, std::string bytes) {
    testing::WriteFile(dir_.file(name), bytes);
    return dir_.file(name);
  }

  std::string zkey_ = Fixture("bn128_k12", "circuit_final.zkey");
  std::string wtns_ = Fixture("bn128_k12", "witness.wtns");
  TempDir dir_;
};

TEST_F(ZkproveBadInput, MissingZkey) {
  std::string msg = ExpectFailure(dir_.file("nope.zkey"), wtns_);
  EXPECT_NE(msg.find("nope.zkey"), std::string::npos) << msg;
}

TEST_F(ZkproveBadInput, MissingWitness) {
  std::string msg = ExpectFailure(zkey_, dir_.file("nope.wtns"));
  EXPECT_NE(msg.find("nope.wtns"), std::string::npos) << msg;
}

TEST_F(ZkproveBadInput, TruncatedZkeyAtSeveralOffsets) {
  std::string bytes = testing::ReadFile(zkey_);
  for (size_t cut : {size_t{3}, size_t{20}, size_t{100}, size_t{700}, bytes.size() / 2, bytes.size() - 1}) {
    std::string path = Corrupt("cut" + std::to_string(cut) + ".zkey", bytes.substr(0, cut));
    std::string msg = ExpectFailure(path, wtns_);
    EXPECT_NE(msg.find(path), std::string::npos) << "cut at " << cut << ": " << msg;
  }
}

TEST_F(ZkproveBadInput, WrongMagic) {
  std::string bytes = testing::ReadFile(zkey_);
  bytes[0] = 'x';
  std::string msg = ExpectFailure(Corrupt("magic.zkey", bytes), wtns_);
  EXPECT_NE(msg.find("magic"), std::string::npos) << msg;
}

TEST_F(ZkproveBadInput, PlonkZkeyIsNotGroth16) {
  std::string bytes = testing::ReadFile(zkey_);
  // Section 1 (protocol) is the first section: its u32 payload is at byte 24.
  ASSERT_EQ(bytes[24], 1);
  bytes[24] = 2;
  std::string msg = ExpectFailure(Corrupt("plonk.zkey", bytes), wtns_);
  EXPECT_NE(msg.find("plonk"), std::string::npos) << msg;
}

TEST_F(ZkproveBadInput, CorruptedSectionSize) {
  std::string bytes = testing::ReadFile(zkey_);
  bytes[16] = 5;  // section 1's size field: 4 -> 5
  const std::string path = Corrupt("size.zkey", bytes);
  std::string msg = ExpectFailure(path, wtns_);
  // The section table is walked by the sizes: one byte too many puts entry 1's
  // header at offset 12 + 12 + 5 = 29 and its payload at 41, where the bytes
  // read as its size run past the end. The message names that entry, its
  // offset and the file's end, not merely "an error".
  EXPECT_NE(msg.find(path + ": truncated: section "), std::string::npos) << msg;
  EXPECT_NE(msg.find("(entry 1) has payload at offset 41 of size "), std::string::npos) << msg;
  EXPECT_NE(msg.find(", but the file ends at " + std::to_string(bytes.size()) + "\n"), std::string::npos) << msg;
}

TEST_F(ZkproveBadInput, WitnessForAnotherCurve) {
  std::string msg = ExpectFailure(zkey_, Fixture("bls12381_k12", "witness.wtns"));
  EXPECT_NE(msg.find("prime"), std::string::npos) << msg;
}

TEST_F(ZkproveBadInput, WitnessForAnotherCircuit) {
  // Drop the last signal: a well-formed wtns with nWitness - 1 values.
  std::string bytes = testing::ReadFile(wtns_);
  uint32_t count;
  std::memcpy(&count, bytes.data() + 24 + 4 + 32, 4);
  count -= 1;
  std::memcpy(bytes.data() + 24 + 4 + 32, &count, 4);
  uint64_t size = uint64_t{count} * 32;
  std::memcpy(bytes.data() + 64 + 4, &size, 8);
  bytes.resize(bytes.size() - 32);
  std::string msg = ExpectFailure(zkey_, Corrupt("short.wtns", bytes));
  EXPECT_NE(msg.find("4094"), std::string::npos) << msg;
}

TEST_F(ZkproveBadInput, UnknownBackendIsRejected) {
  auto run = RunCommand(Quote(Zkprove()) + " " + zkey_ + " " + wtns_ + " " + dir_.file("p.json") + " " +
                        dir_.file("q.json") + " --backend tpu");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("tpu"), std::string::npos) << run.output;
}

TEST_F(ZkproveBadInput, MsmTablesOutOfRangeIsRejected) {
  for (const char* copies : {"0", "17", "many"}) {
    auto run = RunCommand(Quote(Zkprove()) + " " + zkey_ + " " + wtns_ + " " + dir_.file("p.json") + " " +
                          dir_.file("q.json") + " --msm-tables " + copies);
    EXPECT_NE(run.exit_code, 0) << copies;
    EXPECT_NE(run.output.find("--msm-tables"), std::string::npos) << run.output;
    EXPECT_FALSE(std::filesystem::exists(dir_.file("p.json"))) << "a proof was written despite --msm-tables " << copies;
  }
}

}  // namespace
}  // namespace zkfleet
