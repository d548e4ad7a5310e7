// VerificationKeys read from a directory (--verification-key-dir) and merged
// at a reload: which files count, what one bad file costs, and which
// circuits keep the key they have (jobs not yet done, a file that failed).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "testutil/test_support.hpp"
#include "zkfleet/broker/verification_keys.hpp"
#include "zkfleet/common/error.hpp"

namespace zkfleet::broker {
namespace {

using zkfleet::testing::ReadFile;
using zkfleet::testing::TempDir;
using zkfleet::testing::WriteFile;

std::string Fixture(const std::string& circuit) {
  return std::string(ZKFLEET_FIXTURES_DIR) + "/" + circuit + "/verification_key.json";
}

const std::string kBnKey = ReadFile(Fixture("bn128_k12"));
const std::string kBlsKey = ReadFile(Fixture("bls12381_k12"));

std::optional<std::string> Never(const std::string&) { return std::nullopt; }

TEST(VerificationKeyDirectory, CircuitJsonAndVkFilesCountAndTheRestIsNamed) {
  TempDir dir;
  WriteFile(dir.file("transfer.json"), kBnKey);
  WriteFile(dir.file("porep.vk"), "not read here");
  WriteFile(dir.file("README"), "notes");
  WriteFile(dir.file(".json"), kBnKey);
  std::filesystem::create_directory(dir.path() / "nested.json");
  std::vector<std::string> skipped;
  const auto specs = VerificationKeys::SpecsInDirectory(dir.path(), &skipped);
  EXPECT_EQ(specs, (std::vector<std::string>{"porep=" + dir.file("porep.vk"), "transfer=" + dir.file("transfer.json")}));
  ASSERT_EQ(skipped.size(), 3u);
  std::string all;
  for (const auto& s : skipped) all += s + "\n";
  EXPECT_NE(all.find("README: not CIRCUIT.json or CIRCUIT.vk"), std::string::npos) << all;
  EXPECT_NE(all.find("nested.json: not a regular file"), std::string::npos) << all;
  EXPECT_NE(all.find(".json: a hidden file"), std::string::npos) << all;
  try {
    VerificationKeys::SpecsInDirectory(dir.path() / "missing", nullptr);
    FAIL() << "a missing directory was listed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos) << e.what();
  }
}

TEST(VerificationKeyDirectory, OneBadFileCostsOneCircuitAndASpecWinsOverAFile) {
  TempDir dir;
  WriteFile(dir.file("a.json"), kBnKey);
  WriteFile(dir.file("b.json"), "{ \"protocol\": \"groth16\" ");  // cut short
  WriteFile(dir.file("c.json"), kBlsKey);
  std::map<std::string, std::string> failed;
  std::vector<std::string> notes;
  const VerificationKeys keys =
      VerificationKeys::LoadAll({"c=" + Fixture("bn128_k12")}, dir.path(), &failed, &notes);
  ASSERT_NE(keys.Find("a"), nullptr);
  EXPECT_EQ(keys.Find("b"), nullptr);
  ASSERT_NE(keys.Find("c"), nullptr);
  EXPECT_EQ(keys.Find("c")->path, Fixture("bn128_k12"));  // the spec's, not c.json (BLS)
  ASSERT_EQ(failed.count("b"), 1u);
  EXPECT_NE(failed["b"].find("b.json"), std::string::npos) << failed["b"];
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("has a --verification-key"), std::string::npos) << notes[0];
}

TEST(VerificationKeyReload, BusyCircuitsKeepTheirKeyTheRestFollowTheFiles) {
  TempDir dir;
  const VerificationKeys current = VerificationKeys::Load(
      {"same=" + Fixture("bn128_k12"), "changed=" + Fixture("bn128_k12"), "gone=" + Fixture("bn128_k12"),
       "busy-changed=" + Fixture("bn128_k12"), "busy-gone=" + Fixture("bn128_k12")});
  WriteFile(dir.file("same.json"), kBnKey);  // the same bytes at another path: no change
  WriteFile(dir.file("changed.json"), kBlsKey);
  WriteFile(dir.file("busy-changed.json"), kBlsKey);
  WriteFile(dir.file("new.json"), kBlsKey);
  const VerificationKeys loaded = VerificationKeys::LoadAll({}, dir.path(), nullptr, nullptr);
  auto keep = [](const std::string& circuit) -> std::optional<std::string> {
    if (circuit.rfind("busy", 0) == 0) return "2 job(s) not yet done";
    return std::nullopt;
  };
  VerificationKeys::Change change;
  const VerificationKeys merged = VerificationKeys::Merge(current, loaded, keep, &change);
  EXPECT_EQ(change.added, (std::vector<std::string>{"new"}));
  EXPECT_EQ(change.changed, (std::vector<std::string>{"changed"}));
  EXPECT_EQ(change.removed, (std::vector<std::string>{"gone"}));
  EXPECT_EQ(change.kept, (std::vector<std::string>{"busy-changed: 2 job(s) not yet done",
                                                   "busy-gone: 2 job(s) not yet done"}));
  EXPECT_EQ(merged.Find("gone"), nullptr);
  ASSERT_NE(merged.Find("changed"), nullptr);
  EXPECT_EQ(merged.Find("changed")->curve, engine::Curve::kBls12_381);
  ASSERT_NE(merged.Find("busy-changed"), nullptr);
  EXPECT_EQ(merged.Find("busy-changed")->curve, engine::Curve::kBn254);  // as it was
  EXPECT_NE(merged.Find("busy-gone"), nullptr);
  EXPECT_EQ(merged.Find("same")->path, dir.file("same.json"));
  EXPECT_NE(merged.Find("new"), nullptr);
  EXPECT_EQ(merged.size(), 5u);
  // Nothing busy any more: the next reload applies the rest.
  VerificationKeys::Change later;
  const VerificationKeys settled = VerificationKeys::Merge(merged, loaded, Never, &later);
  EXPECT_EQ(later.changed, (std::vector<std::string>{"busy-changed"}));
  EXPECT_EQ(later.removed, (std::vector<std::string>{"busy-gone"}));
  EXPECT_TRUE(later.kept.empty());
  EXPECT_EQ(settled.size(), 4u);
  VerificationKeys::Change none;
  VerificationKeys::Merge(settled, loaded, Never, &none);
  EXPECT_TRUE(none.empty());
}

}  // namespace
}  // namespace zkfleet::broker
