// A .params file's points are checked once per file (engine::BellmanKey::Load
// with EngineOptions::checked_keys, engine/checked_keys.hpp "parameter
// files"): remembered by the identity of the open file (device, inode, size,
// mtime, ctime), read again without the curve and subgroup tests (the
// encoding checks stay),
// checked again whenever the file changed, even to the same bytes with its
// mtime set back, and when it changes while a remembered read runs. Also the
// chunked decoder's progress reports and its first-bad-point-in-file-order
// error across chunks.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "bellman_test_util.hpp"
#include "testutil/test_support.hpp"
#include "zkfleet/bellman/parameters.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/engine/bellman.hpp"
#include "zkfleet/engine/checked_keys.hpp"
#include "zkfleet/engine/proving_key.hpp"

namespace zkfleet::bellman {
namespace {

namespace fs = std::filesystem;
using namespace testing;
using engine::BellmanKey;
using engine::CheckedKeys;
using engine::EngineOptions;
using engine::FileIdentity;
using engine::KeyCheck;
using zkfleet::testing::TempDir;

// Where point `index` of array `name` starts in a file of `p`'s counts.
size_t PointOffset(const Parameters& p, const std::string& name, size_t index) {
  size_t at = 3 * 96 + 3 * 192;  // the vk's single points
  const std::pair<const char*, std::pair<size_t, size_t>> arrays[] = {
      {"ic", {p.vk.ic.size(), 96}}, {"h", {p.h.size(), 96}},       {"l", {p.l.size(), 96}},
      {"a", {p.a.size(), 96}},      {"b_g1", {p.b_g1.size(), 96}}, {"b_g2", {p.b_g2.size(), 192}}};
  for (const auto& [array, shape] : arrays) {
    if (name == array) return at + 4 + index * shape.second;
    at += 4 + shape.first * shape.second;
  }
  throw std::out_of_range(name);
}

// Writes `bytes` at `offset` into the existing file, in place (same inode).
void WriteInPlace(const std::string& path, size_t offset, const uint8_t* bytes, size_t n) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(pwrite(fd, bytes, n, static_cast<off_t>(offset)), static_cast<ssize_t>(n));
  close(fd);
}

struct timespec MtimeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(stat(path.c_str(), &st), 0);
  return st.st_mtim;
}

// Sets the file's mtime (and atime) back to `mtime`: what `touch -r` can do;
// the ctime it cannot.
void SetMtime(const std::string& path, const struct timespec& mtime) {
  const struct timespec times[2] = {mtime, mtime};
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

class BellmanCheckCache : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(11);
    params_ = SmallParameters(rng);
    path_ = dir_.file("k.params");
    WriteParameters(path_, params_, pool_);
    options_ = EngineOptions{engine::Backend::kCpu, 2};
    options_.checked_keys = CheckedKeys(dir_.path() / "checked-keys");
    // Files written a moment ago are recorded (the 2 s rule has its own test).
    options_.checked_keys.set_min_file_age(std::chrono::nanoseconds(0));
  }

  KeyCheck LoadOutcome(const engine::BellmanLoadProgress& progress = {}) {
    return BellmanKey::Load(path_, options_, progress)->key_check().outcome;
  }

  // Loading throws kBadFormat with `expected` in its message.
  void ExpectRefused(const std::string& expected, const engine::BellmanLoadProgress& progress = {}) {
    try {
      BellmanKey::Load(path_, options_, progress);
      ADD_FAILURE() << "loaded; expected: " << expected;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadFormat) << e.what();
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }

  // The file as it is now is recorded as checked, without a check: stands
  // for "passed before" in the tests where the file holds a point a check
  // would refuse.
  void RecordAsChecked() {
    const ParametersFile file = ParametersFile::Open(path_);
    ASSERT_EQ(options_.checked_keys.RecordFile(file.identity(), path_), "");
  }

  void WritePoint(const std::string& array, size_t index, const G1Affine& p) {
    uint8_t bytes[kG1UncompressedBytes];
    EncodeG1Uncompressed(p, bytes);
    WriteInPlace(path_, PointOffset(params_, array, index), bytes, sizeof(bytes));
  }

  ThreadPool pool_{2};
  TempDir dir_;
  Parameters params_;
  std::string path_;
  EngineOptions options_;
};

TEST_F(BellmanCheckCache, SecondLoadIsRememberedByTheFileIdentity) {
  const auto first = BellmanKey::Load(path_, options_);
  EXPECT_EQ(first->key_check().outcome, KeyCheck::kChecked);
  EXPECT_TRUE(first->key_check().cache_warning.empty()) << first->key_check().cache_warning;
  const FileIdentity identity = ParametersFile::Open(path_).identity();
  EXPECT_EQ(first->key_check().digest, identity.Digest());
  EXPECT_TRUE(options_.checked_keys.ContainsFile(identity));
  // The record: params-<identity digest>.checked, naming the file for people.
  const fs::path record = options_.checked_keys.FileRecordPath(identity);
  EXPECT_EQ(record.filename().string(), "params-" + identity.Digest() + ".checked");
  EXPECT_NE(zkfleet::testing::ReadFile(record.string()).find(fs::canonical(path_).string()), std::string::npos);

  const auto second = BellmanKey::Load(path_, options_);
  EXPECT_EQ(second->key_check().outcome, KeyCheck::kRemembered);
  EXPECT_EQ(second->verifying_key_bytes(), first->verifying_key_bytes());
  EXPECT_GT(second->load_timings().total_s, 0.0);

  // validate_key off: nothing checked, nothing looked up.
  EngineOptions unchecked = options_;
  unchecked.validate_key = false;
  const auto third = BellmanKey::Load(path_, unchecked);
  EXPECT_EQ(third->key_check().outcome, KeyCheck::kSkipped);
  EXPECT_TRUE(third->key_check().digest.empty());

  // No cache: checked every time.
  EngineOptions no_cache{engine::Backend::kCpu, 2};
  EXPECT_EQ(BellmanKey::Load(path_, no_cache)->key_check().outcome, KeyCheck::kChecked);
}

// A remembered file is read without the curve and subgroup tests (that is
// the saving): a point outside the subgroup, or off the curve, in a file
// recorded as checked loads. The encoding checks stay: a coordinate not
// below q is refused all the same.
TEST_F(BellmanCheckCache, RememberedReadSkipsThePointTests) {
  WritePoint("a", 4, G1OutsideSubgroup());
  ExpectRefused(path_ + ": a[4]: not in the prime-order subgroup");
  RecordAsChecked();
  EXPECT_EQ(LoadOutcome(), KeyCheck::kRemembered);

  const G1Affine p = params_.l[2];
  WritePoint("l", 2, G1Affine{p.x, p.y + Fq::one()});
  ExpectRefused(path_ + ": l[2]: not on the curve");
  RecordAsChecked();
  EXPECT_EQ(LoadOutcome(), KeyCheck::kRemembered);

  uint8_t q_bytes[48];  // q itself as x
  const uint8_t q_be[48] = {0x1a, 0x01, 0x11, 0xea, 0x39, 0x7f, 0xe6, 0x9a, 0x4b, 0x1b, 0xa7, 0xb6,
                            0x43, 0x4b, 0xac, 0xd7, 0x64, 0x77, 0x4b, 0x84, 0xf3, 0x85, 0x12, 0xbf,
                            0x67, 0x30, 0xd2, 0xa0, 0xf6, 0xb0, 0xf6, 0x24, 0x1e, 0xab, 0xff, 0xfe,
                            0xb1, 0x53, 0xff, 0xff, 0xb9, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xaa, 0xab};
  std::memcpy(q_bytes, q_be, sizeof(q_bytes));
  WriteInPlace(path_, PointOffset(params_, "h", 3), q_bytes, sizeof(q_bytes));
  RecordAsChecked();
  ExpectRefused(path_ + ": h[3]: coordinate not below q");
}

// Rewritten in place with the very same bytes, its mtime set back: the
// ctime moved, so it is another file identity, checked again.
TEST_F(BellmanCheckCache, RewrittenFileIsCheckedAgainEvenWithItsMtimeSetBack) {
  ASSERT_EQ(LoadOutcome(), KeyCheck::kChecked);
  ASSERT_EQ(LoadOutcome(), KeyCheck::kRemembered);
  const struct timespec mtime = MtimeOf(path_);
  const FileIdentity before = ParametersFile::Open(path_).identity();
  const std::string bytes = zkfleet::testing::ReadFile(path_);
  WriteInPlace(path_, 0, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  SetMtime(path_, mtime);
  const FileIdentity after = ParametersFile::Open(path_).identity();
  ASSERT_EQ(zkfleet::testing::ReadFile(path_), bytes);
  EXPECT_EQ(after.inode, before.inode);
  EXPECT_EQ(after.size, before.size);
  EXPECT_EQ(after.mtime_ns, before.mtime_ns);
  EXPECT_NE(after.ctime_ns, before.ctime_ns);
  EXPECT_FALSE(after.Same(before));
  EXPECT_EQ(LoadOutcome(), KeyCheck::kChecked);
  EXPECT_EQ(LoadOutcome(), KeyCheck::kRemembered);

  // Only touched (no byte written): checked again too.
  SetMtime(path_, mtime);
  EXPECT_EQ(LoadOutcome(), KeyCheck::kChecked);

  // Replaced by a copy (another inode), same bytes: checked once.
  fs::copy_file(path_, path_ + ".copy");
  fs::rename(path_ + ".copy", path_);
  EXPECT_EQ(LoadOutcome(), KeyCheck::kChecked);
  EXPECT_EQ(LoadOutcome(), KeyCheck::kRemembered);
}

// A point corrupted in place after a remembered load (mtime set back): the
// file's identity changed, so it is checked and refused, naming the point.
TEST_F(BellmanCheckCache, CorruptedInPlaceAfterARememberedLoadIsRefused) {
  ASSERT_EQ(LoadOutcome(), KeyCheck::kChecked);
  ASSERT_EQ(LoadOutcome(), KeyCheck::kRemembered);
  const struct timespec mtime = MtimeOf(path_);
  WritePoint("a", 4, G1OutsideSubgroup());
  SetMtime(path_, mtime);
  ExpectRefused(path_ + ": a[4]: not in the prime-order subgroup");
  EXPECT_FALSE(options_.checked_keys.ContainsFile(ParametersFile::Open(path_).identity()));
}

// A cache directory others can write is not trusted: nothing is read from
// it or written to it.
TEST_F(BellmanCheckCache, UntrustedCacheDirectoryIsNotUsed) {
  ASSERT_EQ(LoadOutcome(), KeyCheck::kChecked);
  ASSERT_EQ(LoadOutcome(), KeyCheck::kRemembered);
  fs::permissions(options_.checked_keys.dir(), fs::perms::owner_all | fs::perms::group_all, fs::perm_options::replace);
  const auto key = BellmanKey::Load(path_, options_);
  EXPECT_EQ(key->key_check().outcome, KeyCheck::kChecked) << "a group-writable directory";
  EXPECT_NE(key->key_check().cache_warning.find("writable by group or others"), std::string::npos)
      << key->key_check().cache_warning;
  EXPECT_EQ(LoadOutcome(), KeyCheck::kChecked);

  // A record that is a symbolic link does not count either.
  fs::permissions(options_.checked_keys.dir(), fs::perms::owner_all, fs::perm_options::replace);
  const FileIdentity identity = ParametersFile::Open(path_).identity();
  const fs::path record = options_.checked_keys.FileRecordPath(identity);
  ASSERT_TRUE(fs::exists(record));
  fs::remove(record);
  zkfleet::testing::WriteFile(dir_.file("elsewhere"), "parameters checked\n");
  fs::create_symlink(dir_.file("elsewhere"), record);
  EXPECT_FALSE(options_.checked_keys.ContainsFile(identity));
}

// The file changes while a remembered read runs (here: from the progress
// call before the first point): the identity taken after the read differs,
// so the file is read again, with every check. A point moved out of the
// subgroup is then refused -- the remembered read alone would have taken it.
TEST_F(BellmanCheckCache, ChangeDuringARememberedReadRereadsWithEveryCheck) {
  ASSERT_EQ(LoadOutcome(), KeyCheck::kChecked);
  ASSERT_EQ(LoadOutcome(), KeyCheck::kRemembered);
  const struct timespec mtime = MtimeOf(path_);
  int starts = 0;
  bool corrupted = false;
  ExpectRefused(path_ + ": a[4]: not in the prime-order subgroup", [&](uint64_t done, uint64_t total) {
    if (done < total) ++starts;
    if (!std::exchange(corrupted, true)) {
      WritePoint("a", 4, G1OutsideSubgroup());
      SetMtime(path_, mtime);
    }
  });
  EXPECT_EQ(starts, 2) << "read twice: remembered, then checked";

  // Only touched during the read: read again, checked, and that file recorded.
  std::mt19937_64 rng(11);
  WriteParameters(path_, SmallParameters(rng), pool_);
  ASSERT_EQ(LoadOutcome(), KeyCheck::kChecked);
  ASSERT_EQ(LoadOutcome(), KeyCheck::kRemembered);
  bool touched = false;
  const auto key = BellmanKey::Load(path_, options_, [&](uint64_t, uint64_t) {
    if (!std::exchange(touched, true)) SetMtime(path_, MtimeOf(path_));
  });
  EXPECT_EQ(key->key_check().outcome, KeyCheck::kChecked);
  EXPECT_EQ(LoadOutcome(), KeyCheck::kRemembered);

  // A change during the full check: passed, but not recorded.
  WriteParameters(path_, SmallParameters(rng), pool_);
  bool changed = false;
  const auto unrecorded = BellmanKey::Load(path_, options_, [&](uint64_t, uint64_t) {
    if (!std::exchange(changed, true)) SetMtime(path_, MtimeOf(path_));
  });
  EXPECT_EQ(unrecorded->key_check().outcome, KeyCheck::kChecked);
  EXPECT_EQ(unrecorded->key_check().cache_warning, "the file changed while it was checked");
  EXPECT_EQ(LoadOutcome(), KeyCheck::kChecked);
}

// A file changed less than 2 s before it was opened is checked but not
// recorded (a write within the same clock tick might not move its ctime).
TEST_F(BellmanCheckCache, FreshlyWrittenFileIsNotRecorded) {
  options_.checked_keys.set_min_file_age(std::chrono::seconds(2));
  const auto key = BellmanKey::Load(path_, options_);
  EXPECT_EQ(key->key_check().outcome, KeyCheck::kChecked);
  EXPECT_EQ(key->key_check().cache_warning.rfind(CheckedKeys::kTooRecent, 0), 0u) << key->key_check().cache_warning;
  EXPECT_EQ(LoadOutcome(), KeyCheck::kChecked);
  options_.checked_keys.set_min_file_age(std::chrono::nanoseconds(0));
  EXPECT_EQ(LoadOutcome(), KeyCheck::kChecked);
  EXPECT_EQ(LoadOutcome(), KeyCheck::kRemembered);
}

// A CUDA key tests the proving arrays' points on the device: the CPU read
// then checks only the verifying key's points and ic (and every encoding).
TEST(BellmanDeviceChecked, ArraysLeftToTheDeviceVkAndIcCheckedHere) {
  std::mt19937_64 rng(9);
  Parameters p = SmallParameters(rng);
  ThreadPool pool(2);
  const ReadOptions device{.check_points = true, .arrays_checked_on_device = true};
  auto bytes_of = [&](const Parameters& params) {
    TempDir dir;
    WriteParameters(dir.file("d.params"), params, pool);
    return zkfleet::testing::ReadFile(dir.file("d.params"));
  };
  auto parse = [&](const std::string& bytes, const ReadOptions& options) {
    return ParseParameters({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, "d", pool, options);
  };
  auto expect_bad = [&](const std::string& bytes, const std::string& expected) {
    try {
      parse(bytes, device);
      ADD_FAILURE() << "accepted; expected " << expected;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), "d: " + expected);
    }
  };
  Parameters bad = p;
  bad.a[4] = G1OutsideSubgroup();
  bad.b_g2[1] = G2OutsideSubgroup();
  const std::string arrays_bad = bytes_of(bad);
  EXPECT_NO_THROW(parse(arrays_bad, device));
  EXPECT_THROW(parse(arrays_bad, {}), Error);
  bad = p;
  bad.vk.ic[1] = G1OutsideSubgroup();
  expect_bad(bytes_of(bad), "ic[1]: not in the prime-order subgroup");
  bad = p;
  bad.vk.delta_g2 = G2OutsideSubgroup();
  expect_bad(bytes_of(bad), "delta_g2: not in the prime-order subgroup");
  std::string flags = bytes_of(p);
  flags[PointOffset(p, "l", 2)] |= 0x80;
  expect_bad(flags, "l[2]: bad flag bits");
}

// ---- the decoder: chunks, progress --------------------------------------------

// Arrays over several 2 MiB chunks: the error is the first bad point in
// file order, whichever thread finds which first; progress is reported from
// the bytes before the arrays to the whole file.
TEST(BellmanChunkedRead, FirstBadPointInFileOrderAndProgress) {
  std::mt19937_64 rng(5);
  Parameters p = SmallParameters(rng, 2, 7, 3, 3, 2);
  p.h.resize((1u << 16) - 1);  // 6 MiB of h: three chunks
  for (size_t i = 7; i < p.h.size(); ++i) p.h[i] = p.h[i % 7];
  ThreadPool pool(2);
  TempDir dir;
  const std::string path = dir.file("big.params");
  WriteParameters(path, p, pool);
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  ReadOptions read;
  read.check_points = false;  // 65535 subgroup tests would take seconds; the decode is what is tested
  read.progress = [&](uint64_t done, uint64_t total) { calls.emplace_back(done, total); };
  read.progress_interval = std::chrono::milliseconds(0);
  EXPECT_TRUE(SameParameters(ReadParameters(path, pool, read), p));
  const uint64_t size = fs::file_size(path);
  ASSERT_GE(calls.size(), 3u) << "before, during, after";
  EXPECT_EQ(calls.front().first, static_cast<uint64_t>(PointOffset(p, "ic", 0) - 4 + 4 * 6));
  EXPECT_EQ(calls.back(), std::make_pair(size, size));
  for (size_t i = 1; i < calls.size(); ++i) {
    EXPECT_LE(calls[i - 1].first, calls[i].first);
    EXPECT_EQ(calls[i].second, size);
  }

  // Bad flag bits (the compression bit in an uncompressed point): refused
  // by every read, checked or not.
  std::string bytes = zkfleet::testing::ReadFile(path);
  auto put = [&](const std::string& array, size_t index) { bytes[PointOffset(p, array, index)] |= 0x80; };
  auto expect_bad = [&](const std::string& expected) {
    try {
      ParseParameters({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, "big", pool,
                      {.check_points = false});
      ADD_FAILURE() << "accepted; expected " << expected;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), "big: " + expected + ": bad flag bits");
    }
  };
  put("l", 1);
  expect_bad("l[1]");
  put("h", 60000);  // in a later chunk than h[5], earlier in the file than l
  expect_bad("h[60000]");
  put("h", 5);
  expect_bad("h[5]");
}

}  // namespace
}  // namespace zkfleet::bellman
