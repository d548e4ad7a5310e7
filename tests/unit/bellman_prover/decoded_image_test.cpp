// A .params file's decoded image (bellman/decoded_image.hpp, kept with
// EngineOptions::keep_decoded_params): written by the load that checked the
// file, mapped by the next instead of decoding it, and the proofs from a
// mapped key are the same bytes and verify. An image of another version of
// the file, or a damaged one, is not used: the file is read as before and
// a good image written again.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>

#include "testutil/test_support.hpp"
#include "zkfleet/bellman/constraint_system.hpp"
#include "zkfleet/bellman/decoded_image.hpp"
#include "zkfleet/bellman/parameters.hpp"
#include "zkfleet/devtools/seeded_parameters.hpp"
#include "zkfleet/engine/bellman.hpp"
#include "zkfleet/engine/checked_keys.hpp"
#include "zkfleet/engine/proving_key.hpp"
#include "zkfleet/groth16/assignment_key.hpp"

namespace zkfleet {
namespace {

namespace fs = std::filesystem;
using engine::BellmanKey;
using engine::KeyCheck;
using zkfleet::testing::TempDir;

engine::ProveOptions Fixed() {
  engine::ProveOptions options;
  options.r.emplace();
  options.s.emplace();
  options.r->fill(0);
  options.s->fill(0);
  (*options.r)[0] = 7;
  (*options.s)[0] = 9;
  return options;
}

// One synthetic circuit of 2^15 rows for the suite: h and l over 2 MiB each,
// so their images are mapped (a smaller array is copied).
struct Circuit {
  bellman::SyntheticCircuit circuit;
  bellman::Assignment assignment;
  bellman::Parameters params;
};

const Circuit& TheCircuit() {
  static const Circuit* c = [] {
    cpu::ThreadPool pool(2);
    auto* out = new Circuit{bellman::MakeSyntheticCircuit(15, 3, 21), {}, {}};
    out->params = devtools::SynthesizeParameters(out->circuit.cs, 22, pool);
    out->assignment = bellman::Synthesize(out->circuit.cs, out->circuit.values, pool);
    return out;
  }();
  return *c;
}

class DecodedImage : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("k.params");
    bellman::WriteParameters(path_, TheCircuit().params, pool_);
    options_ = engine::EngineOptions{engine::Backend::kCpu, 2};
    options_.checked_keys = engine::CheckedKeys(dir_.path() / "checked-keys");
    options_.checked_keys.set_min_file_age(std::chrono::nanoseconds(0));
    options_.keep_decoded_params = true;
  }

  std::unique_ptr<BellmanKey> Load() { return BellmanKey::Load(path_, options_); }

  std::string ImagePath() const {
    return options_.checked_keys.FileImagePath(bellman::ParametersFile::Open(path_).identity()).string();
  }

  // The key's proof with fixed r and s: verified, and the same bytes as the
  // proof from a key built from the parameters in memory.
  void ExpectSameProof(const BellmanKey& key) {
    const engine::BellmanProof proof = key.Prove(TheCircuit().assignment.View(), Fixed());
    EXPECT_TRUE(proof.check.verified);
    EXPECT_TRUE(proof.check.engine_fault.empty()) << proof.check.engine_fault;
    static const auto reference = [] {
      const bellman::Parameters& params = TheCircuit().params;
      const BellmanKey in_memory(groth16::MakeCpuAssignmentKey(params, engine::EngineOptions{engine::Backend::kCpu, 2}),
                                 bellman::SerializeVerifyingKey(params.vk), bellman::ToEngineKey(params.vk));
      return in_memory.Prove(TheCircuit().assignment.View(), Fixed()).bytes;
    }();
    EXPECT_EQ(proof.bytes, reference);
  }

  // The file as it is now recorded as checked, without the check (seconds
  // at this size): stands for a load that checked it.
  void Remember() {
    ASSERT_EQ(options_.checked_keys.RecordFile(bellman::ParametersFile::Open(path_).identity(), path_), "");
  }

  void Damage(const std::string& file, off_t offset, const std::string& bytes) {
    const int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0) << file;
    ASSERT_EQ(::pwrite(fd, bytes.data(), bytes.size(), offset), static_cast<ssize_t>(bytes.size()));
    ::close(fd);
  }

  cpu::ThreadPool pool_{2};
  TempDir dir_;
  std::string path_;
  engine::EngineOptions options_;
};

TEST_F(DecodedImage, TheCheckingLoadWritesItAndTheNextMapsItAndProvesTheSameBytes) {
  const auto first = Load();
  EXPECT_EQ(first->key_check().outcome, KeyCheck::kChecked);
  EXPECT_EQ(first->key_check().image_written, ImagePath());
  EXPECT_TRUE(first->key_check().image_mapped.empty());
  EXPECT_TRUE(first->key_check().cache_warning.empty()) << first->key_check().cache_warning;
  EXPECT_TRUE(first->key_check().image_warning.empty()) << first->key_check().image_warning;
  ASSERT_TRUE(fs::exists(ImagePath()));
  EXPECT_EQ(bellman::DecodedImageSource(ImagePath()), fs::canonical(path_).string());
  ExpectSameProof(*first);

  const auto second = Load();
  EXPECT_EQ(second->key_check().outcome, KeyCheck::kRemembered);
  EXPECT_EQ(second->key_check().image_mapped, ImagePath());
  EXPECT_TRUE(second->key_check().image_written.empty());
  EXPECT_EQ(second->verifying_key_bytes(), first->verifying_key_bytes());
  EXPECT_EQ(second->info().domain_size, first->info().domain_size);
  ExpectSameProof(*second);

  // The image's points are the decoded file's, every one.
  std::string why;
  const auto mapped = bellman::MapDecodedImage(ImagePath(), bellman::ParametersFile::Open(path_).identity(), pool_, &why);
  ASSERT_TRUE(mapped) << why;
  const bellman::Parameters& p = TheCircuit().params;
  auto same = [](const auto& x, const auto& y) {
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(x[0])) == 0;
  };
  EXPECT_TRUE(same(mapped->h, p.h) && same(mapped->l, p.l) && same(mapped->a, p.a) && same(mapped->b_g1, p.b_g1) &&
              same(mapped->b_g2, p.b_g2) && same(mapped->vk.ic, p.vk.ic));

  // Without the option the image is neither used nor written.
  options_.keep_decoded_params = false;
  const auto third = Load();
  EXPECT_EQ(third->key_check().outcome, KeyCheck::kRemembered);
  EXPECT_TRUE(third->key_check().image_mapped.empty());
  EXPECT_TRUE(third->key_check().image_written.empty());
}

// A file rewritten (same bytes, new ctime) is another identity: checked
// again, a new image written and the old one removed.
TEST_F(DecodedImage, AChangedFileIsCheckedAgainAndItsOldImageRemoved) {
  Remember();
  ASSERT_EQ(Load()->key_check().image_written, ImagePath());
  const std::string old_image = ImagePath();
  ASSERT_TRUE(fs::exists(old_image));
  const std::string bytes = zkfleet::testing::ReadFile(path_);
  Damage(path_, 0, bytes);  // in place, the same bytes
  const std::string new_image = ImagePath();
  ASSERT_NE(new_image, old_image);
  Remember();  // stands for the check the changed file gets
  const auto again = Load();
  EXPECT_EQ(again->key_check().outcome, KeyCheck::kRemembered);
  EXPECT_TRUE(again->key_check().image_mapped.empty());
  EXPECT_EQ(again->key_check().image_written, new_image);
  EXPECT_FALSE(fs::exists(old_image));
  EXPECT_EQ(Load()->key_check().image_mapped, new_image);
}

// Damaged images: not used (the load says why), the file is read as a
// remembered one, a good image is written in its place, and the proofs are
// right all along.
TEST_F(DecodedImage, ADamagedImageIsNotUsedAndIsWrittenAgain) {
  Remember();
  ASSERT_EQ(Load()->key_check().image_written, ImagePath());
  const std::string image = ImagePath();
  const uint64_t size = fs::file_size(image);
  const struct {
    const char* name;
    std::function<void()> damage;
    const char* expected;
  } cases[] = {
      {"a header byte", [&] { Damage(image, 20, "\x55"); }, "its header is damaged"},
      {"truncated", [&] { fs::resize_file(image, size - 4096); }, "its size is"},
      {"points overwritten", [&] { Damage(image, 8192, std::string(size - 8192, '\xff')); },
       "a sampled point is not on its curve"},
      {"not an image", [&] { Damage(image, 0, "garbage!"); }, "not a decoded image"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    c.damage();
    const auto key = Load();
    EXPECT_EQ(key->key_check().outcome, KeyCheck::kRemembered);
    EXPECT_TRUE(key->key_check().image_mapped.empty());
    EXPECT_NE(key->key_check().image_warning.find(c.expected), std::string::npos) << key->key_check().image_warning;
    EXPECT_EQ(key->key_check().image_written, image);
    ExpectSameProof(*key);
    const auto next = Load();
    EXPECT_EQ(next->key_check().image_mapped, image) << next->key_check().image_warning;
  }
}

// An image is only used next to the record that the file passed its check:
// with the record gone the file is checked again (a small circuit: the
// check takes seconds at 2^15), and its image written again.
TEST_F(DecodedImage, AnImageWithoutItsRecordIsNotUsed) {
  const bellman::SyntheticCircuit small = bellman::MakeSyntheticCircuit(6, 2, 5);
  bellman::WriteParameters(path_, devtools::SynthesizeParameters(small.cs, 6, pool_), pool_);
  Remember();
  ASSERT_EQ(Load()->key_check().image_written, ImagePath());
  ASSERT_EQ(Load()->key_check().image_mapped, ImagePath());
  fs::remove(options_.checked_keys.FileRecordPath(bellman::ParametersFile::Open(path_).identity()));
  const auto key = Load();
  EXPECT_EQ(key->key_check().outcome, KeyCheck::kChecked);
  EXPECT_TRUE(key->key_check().image_mapped.empty());
  EXPECT_EQ(key->key_check().image_written, ImagePath());
  EXPECT_EQ(Load()->key_check().image_mapped, ImagePath());
}

}  // namespace
}  // namespace zkfleet
