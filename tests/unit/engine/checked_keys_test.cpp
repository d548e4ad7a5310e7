// The key-check cache (engine/checked_keys.hpp) and its use by
// ProvingKey::Load: a content digest of fixed format (the records written by
// earlier workers stay valid), remembered only once a key passed, trusted
// only in a directory of this user that nobody else can write, and a cache
// that cannot be written never fails a load (one warning per cache).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include <fstream>

#include "testutil/test_support.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/engine/checked_keys.hpp"
#include "zkfleet/engine/proving_key.hpp"
#include "zkfleet/zkey/zkey.hpp"

namespace zkfleet::engine {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::string BundledKey() { return std::string(ZKFLEET_FIXTURES_DIR) + "/bn128_k12/circuit_final.zkey"; }

std::span<const uint8_t> Bytes(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

// Sets (or unsets, nullopt) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// The format is fixed: BLAKE2b-256 over le64(size) and the BLAKE2b-256 of each
// 4 MiB piece (python: hashlib.blake2b(struct.pack('<Q', n) + b''.join(...),
// digest_size=32)). The one-piece digests are those the worker's cache
// recorded before the cache moved into the engine; the 9 MiB one pins the
// piece size and order.
TEST(CheckedKeys, DigestFormatIsFixed) {
  EXPECT_EQ(CheckedKeys::Digest(Bytes("abc")), "e2e18671483448dead35b1246bd76130d23fca0e61204de498d49387a7140d54");
  EXPECT_EQ(CheckedKeys::Digest(Bytes("")), "97bc9330d3666ce19ddc7ac14182338bba63e2a37ec2462e1863e71444d1aefa");
  EXPECT_EQ(CheckedKeys::Digest(BundledKey()), "d73459931a33030e15adea2f638aa9891e27f093ba9b0c9f2d90ffc91e20dc51");
  const io::ZkeyFile zkey = io::ZkeyFile::Open(BundledKey());
  EXPECT_EQ(CheckedKeys::Digest(zkey.bytes(), 0), CheckedKeys::Digest(BundledKey()));
  std::vector<uint8_t> pieces((9u << 20) + 777, 0);
  for (size_t i = 0; i < pieces.size(); i += 4099) pieces[i] = static_cast<uint8_t>(i >> 10);
  for (unsigned threads : {1u, 2u, 8u}) {
    EXPECT_EQ(CheckedKeys::Digest(pieces, threads), "ab2c83ee9f6479d7eeed7200487c80d2ffe8ddd4b1e804d3b596c63c4d9cfa99");
  }
}

TEST(CheckedKeys, RemembersAContentDigestOnlyOnceRecorded) {
  TempDir dir;
  const std::string file = dir.file("key.zkey");
  // Above one piece, so the threaded pieces and their order count.
  std::string bytes((8u << 20) + 12345, '\0');
  for (size_t i = 0; i < bytes.size(); i += 4099) bytes[i] = static_cast<char>(i >> 10);
  testing::WriteFile(file, bytes);
  const std::string digest = CheckedKeys::Digest(file, 8);
  EXPECT_EQ(digest.size(), 64u);
  EXPECT_EQ(CheckedKeys::Digest(file, 1), digest);  // threads do not change it
  EXPECT_EQ(CheckedKeys::Digest(Bytes(bytes), 2), digest);

  CheckedKeys cache(dir.path() / "cache" / "checked");
  EXPECT_FALSE(cache.Contains(digest));
  EXPECT_EQ(cache.Record(digest, file), "");
  EXPECT_TRUE(cache.Contains(digest));
  EXPECT_EQ(fs::status(dir.path() / "cache" / "checked").permissions() & fs::perms::all, fs::perms::owner_all);

  bytes[(4u << 20) + 7] ^= 1;  // one bit in the second piece: another key
  testing::WriteFile(file, bytes);
  EXPECT_NE(CheckedKeys::Digest(file), digest);
  EXPECT_FALSE(cache.Contains(CheckedKeys::Digest(file)));
  EXPECT_FALSE(CheckedKeys().Contains(digest));  // disabled: nothing remembered
  EXPECT_FALSE(CheckedKeys::FromSetting("off").enabled());
  EXPECT_FALSE(CheckedKeys::FromSetting("").enabled());
  EXPECT_EQ(CheckedKeys::FromSetting("/x/y").dir(), fs::path("/x/y"));
  EXPECT_THROW(CheckedKeys::Digest((dir.path() / "missing.zkey").string()), Error);
  EXPECT_FALSE(cache.Contains("../../etc/passwd"));  // only digests name records
  EXPECT_NE(cache.Record("not-a-digest", file), "");
}

// Records in a directory others can write, or records that are links, are
// not trusted; nothing is written into such a directory.
TEST(CheckedKeys, OnlyATrustedDirectoryCounts) {
  TempDir dir;
  const std::string digest = CheckedKeys::Digest(Bytes("a key"));
  const fs::path open_dir = dir.path() / "open";
  CheckedKeys cache(open_dir);
  ASSERT_EQ(cache.Record(digest, "k.zkey"), "");
  ASSERT_TRUE(cache.Contains(digest));
  fs::permissions(open_dir, fs::perms::owner_all | fs::perms::group_all, fs::perm_options::replace);
  EXPECT_FALSE(cache.Contains(digest)) << "a group-writable directory";
  const std::string why = cache.Record(CheckedKeys::Digest(Bytes("another key")), "k.zkey");
  EXPECT_NE(why.find("writable by group or others"), std::string::npos) << why;
  EXPECT_EQ(fs::status(open_dir).permissions() & fs::perms::all, fs::perms::owner_all | fs::perms::group_all)
      << "an existing directory's mode is left alone";

  const fs::path linked_dir = dir.path() / "linked";
  CheckedKeys linked(linked_dir);
  ASSERT_EQ(linked.Record(digest, "k.zkey"), "");
  fs::remove(linked_dir / (digest + ".checked"));
  testing::WriteFile(dir.file("elsewhere"), "points checked\n");
  fs::create_symlink(dir.file("elsewhere"), linked_dir / (digest + ".checked"));
  EXPECT_FALSE(linked.Contains(digest)) << "a record that is a symbolic link";
}

TEST(CheckedKeys, DefaultDirectoryRules) {
  ScopedEnv home("HOME", "/home/someone");
  ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
  ScopedEnv systemd("CACHE_DIRECTORY", std::nullopt);
  ScopedEnv setting("ZKFLEET_KEY_CHECK_CACHE", std::nullopt);
  EXPECT_EQ(CheckedKeys::DefaultDir(), fs::path("/home/someone/.cache/zkfleet/checked-keys"));
  {
    ScopedEnv relative("XDG_CACHE_HOME", "relative/cache");  // not absolute: ignored, as the XDG spec says
    EXPECT_EQ(CheckedKeys::DefaultDir(), fs::path("/home/someone/.cache/zkfleet/checked-keys"));
  }
  ScopedEnv xdg_set("XDG_CACHE_HOME", "/var/xdg");
  EXPECT_EQ(CheckedKeys::DefaultDir(), fs::path("/var/xdg/zkfleet/checked-keys"));
  ScopedEnv systemd_set("CACHE_DIRECTORY", "/var/cache/zkworker:/var/cache/other");
  EXPECT_EQ(CheckedKeys::DefaultDir(), fs::path("/var/cache/zkworker/checked-keys"));
  {
    ScopedEnv off("ZKFLEET_KEY_CHECK_CACHE", "off");
    EXPECT_EQ(CheckedKeys::DefaultDir(), fs::path());
  }
  {
    ScopedEnv empty("ZKFLEET_KEY_CHECK_CACHE", "");
    EXPECT_EQ(CheckedKeys::DefaultDir(), fs::path());
  }
  ScopedEnv moved("ZKFLEET_KEY_CHECK_CACHE", "/srv/keys-checked");
  EXPECT_EQ(CheckedKeys::DefaultDir(), fs::path("/srv/keys-checked"));
  ScopedEnv no_home("HOME", std::nullopt);
  ScopedEnv no_xdg("XDG_CACHE_HOME", std::nullopt);
  ScopedEnv no_systemd("CACHE_DIRECTORY", std::nullopt);
  ScopedEnv no_setting("ZKFLEET_KEY_CHECK_CACHE", std::nullopt);
  EXPECT_EQ(CheckedKeys::DefaultDir(), fs::path());
}

TEST(CheckedKeys, FirstWarningIsSharedByCopies) {
  CheckedKeys cache("/somewhere");
  const CheckedKeys copy = cache;
  EXPECT_TRUE(copy.FirstWarning());
  EXPECT_FALSE(cache.FirstWarning());
  EXPECT_FALSE(copy.FirstWarning());
  EXPECT_TRUE(CheckedKeys("/elsewhere").FirstWarning());
}

// Parameter files are remembered by the identity of the open file, not by a
// digest of their content: the record name is fixed (python:
// hashlib.blake2b(b'zkfleet bellman params identity v1\0' + struct.pack('<5Q',
// dev, ino, size, mtime_ns, ctime_ns), digest_size=32)), prefixed so that it
// never collides with a content digest's record.
TEST(CheckedKeys, FileIdentityDigestFormatIsFixed) {
  FileIdentity id;
  id.device = 2049;
  id.inode = 1234;
  id.size = 96;
  id.mtime_ns = 1700000000123456789;
  id.ctime_ns = 1700000001987654321;
  id.observed_ns = 42;  // not part of the identity
  EXPECT_EQ(id.Digest(), "ae20011b9a25ce4b81133bc6e3840301eda7051e1b1e922eb56cc98969b7b689");
  FileIdentity other = id;
  other.observed_ns = 7;
  EXPECT_TRUE(other.Same(id));
  EXPECT_EQ(other.Digest(), id.Digest());
  for (int field = 0; field < 5; ++field) {
    FileIdentity changed = id;
    uint64_t* fields[] = {&changed.device, &changed.inode, &changed.size,
                          reinterpret_cast<uint64_t*>(&changed.mtime_ns), reinterpret_cast<uint64_t*>(&changed.ctime_ns)};
    *fields[field] += 1;
    EXPECT_FALSE(changed.Same(id)) << field;
    EXPECT_NE(changed.Digest(), id.Digest()) << field;
  }
  EXPECT_EQ(CheckedKeys("/c").FileRecordPath(id), fs::path("/c/params-" + id.Digest() + ".checked"));
  EXPECT_NE(id.Describe().find("inode 1234"), std::string::npos) << id.Describe();
  EXPECT_NE(id.Describe().find("ctime 1700000001.987654321"), std::string::npos) << id.Describe();
}

TEST(CheckedKeys, RecordsAFileIdentityApartFromContentDigests) {
  TempDir dir;
  const std::string file = dir.file("p.params");
  testing::WriteFile(file, "parameters");
  const int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const FileIdentity id = FileIdentity::OfDescriptor(fd, file);
  close(fd);
  struct stat st {};
  ASSERT_EQ(stat(file.c_str(), &st), 0);
  EXPECT_EQ(id.inode, static_cast<uint64_t>(st.st_ino));
  EXPECT_EQ(id.size, 10u);
  EXPECT_EQ(id.ctime_ns, static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec);
  EXPECT_GE(id.observed_ns, id.ctime_ns);
  EXPECT_THROW(FileIdentity::OfDescriptor(-1, file), Error);

  CheckedKeys cache(dir.path() / "checked");
  EXPECT_FALSE(cache.ContainsFile(id));
  // Just written: not recorded under the default 2 s rule.
  EXPECT_EQ(cache.min_file_age(), std::chrono::seconds(2));
  const std::string why = cache.RecordFile(id, file);
  EXPECT_EQ(why.rfind(CheckedKeys::kTooRecent, 0), 0u) << why;
  EXPECT_FALSE(cache.ContainsFile(id));
  FileIdentity settled = id;
  settled.observed_ns = id.ctime_ns + 2'000'000'000;
  EXPECT_EQ(cache.RecordFile(settled, file), "");
  EXPECT_TRUE(cache.ContainsFile(id));
  EXPECT_TRUE(fs::is_regular_file(cache.FileRecordPath(id)));
  // Not a content digest's record, and the other way round.
  EXPECT_FALSE(cache.Contains(id.Digest()));
  ASSERT_EQ(cache.Record(CheckedKeys::Digest(Bytes("parameters")), file), "");
  FileIdentity named_like_it = id;
  named_like_it.inode += 1;
  EXPECT_FALSE(cache.ContainsFile(named_like_it));
  EXPECT_FALSE(CheckedKeys().ContainsFile(id));  // disabled
  EXPECT_EQ(CheckedKeys().RecordFile(id, file), "");  // disabled: nothing to do, no complaint
}

// ProvingKey::Load checks a key once, remembers it, and loads it unchecked
// the next time; the same key with one bad point is another key, checked and
// refused; a cache that cannot be written warns once and fails nothing.
TEST(CheckedKeys, LoadChecksOnceThenRemembers) {
  TempDir dir;
  EngineOptions options{Backend::kCpu, 2};
  options.checked_keys = CheckedKeys(dir.path() / "checked-keys");
  const auto first = ProvingKey::Load(BundledKey(), options);
  EXPECT_EQ(first->key_check().outcome, KeyCheck::kChecked);
  EXPECT_EQ(first->key_check().digest, CheckedKeys::Digest(BundledKey()));
  EXPECT_TRUE(first->key_check().cache_warning.empty());
  EXPECT_GT(first->load_timings().key_check_s, 0.0);
  EXPECT_TRUE(options.checked_keys.Contains(first->key_check().digest));

  const auto second = ProvingKey::Load(BundledKey(), options);
  EXPECT_EQ(second->key_check().outcome, KeyCheck::kRemembered);
  EXPECT_EQ(second->load_timings().key_check_s, 0.0);

  EngineOptions unchecked = options;
  unchecked.validate_key = false;
  const auto third = ProvingKey::Load(BundledKey(), unchecked);
  EXPECT_EQ(third->key_check().outcome, KeyCheck::kSkipped);
  EXPECT_TRUE(third->key_check().digest.empty()) << "no digest without a check to skip";

  // One point of B1 off the curve: another digest, checked, refused, not recorded.
  std::string bytes = testing::ReadFile(BundledKey());
  {
    const io::ZkeyFile view = io::ZkeyFile::Parse(Bytes(bytes), "view");
    bytes[static_cast<size_t>(view.b1().data - view.bytes().data()) + 5 * view.g1_size() + 3] ^= 1;
  }
  testing::WriteFile(dir.file("bad.zkey"), bytes);
  EXPECT_THROW(ProvingKey::Load(dir.file("bad.zkey"), options), Error);
  EXPECT_FALSE(options.checked_keys.Contains(CheckedKeys::Digest(dir.file("bad.zkey"))));

  // A cache under a regular file cannot be made: loads succeed, one warning.
  testing::WriteFile(dir.file("a-file"), "");
  EngineOptions unwritable{Backend::kCpu, 2};
  unwritable.checked_keys = CheckedKeys(dir.path() / "a-file" / "checked-keys");
  const auto warned = ProvingKey::Load(BundledKey(), unwritable);
  EXPECT_EQ(warned->key_check().outcome, KeyCheck::kChecked);
  EXPECT_NE(warned->key_check().cache_warning.find("cannot create"), std::string::npos)
      << warned->key_check().cache_warning;
  const auto again = ProvingKey::Load(BundledKey(), unwritable);
  EXPECT_EQ(again->key_check().outcome, KeyCheck::kChecked);
  EXPECT_TRUE(again->key_check().cache_warning.empty()) << "warned once already";
}

// A key file is remembered by its identity too (fstat: device, inode, size,
// mtime, ctime), so a later load of that file skips the whole-file digest
// (issue 45: one-shot zkprove pays it on every call). A copy of it has
// another identity: found by its digest, then remembered by its own. A file
// changed in place (even with its bytes and mtime restored) is digested and
// checked again; a changed key is refused.
TEST(CheckedKeys, ALoadOfAFileSeenBeforeSkipsTheDigest) {
  TempDir dir;
  EngineOptions options{Backend::kCpu, 2};
  options.checked_keys = CheckedKeys(dir.path() / "checked-keys");
  options.checked_keys.set_min_file_age(std::chrono::nanoseconds(0));
  const std::string path = dir.file("k.zkey");
  const std::string bytes = testing::ReadFile(BundledKey());
  testing::WriteFile(path, bytes);

  const auto first = ProvingKey::Load(path, options);
  EXPECT_EQ(first->key_check().outcome, KeyCheck::kChecked);
  EXPECT_FALSE(first->key_check().digest.empty());
  const auto second = ProvingKey::Load(path, options);
  EXPECT_EQ(second->key_check().outcome, KeyCheck::kRemembered);
  EXPECT_TRUE(second->key_check().digest.empty()) << "remembered by identity: no digest";
  EXPECT_EQ(second->load_timings().digest_s, 0.0);

  // A copy: its digest is known (no check), then its identity is recorded.
  const std::string copy = dir.file("copy.zkey");
  testing::WriteFile(copy, bytes);
  const auto copied = ProvingKey::Load(copy, options);
  EXPECT_EQ(copied->key_check().outcome, KeyCheck::kRemembered);
  EXPECT_FALSE(copied->key_check().digest.empty()) << "a new file is digested";
  EXPECT_TRUE(ProvingKey::Load(copy, options)->key_check().digest.empty());

  // Rewritten in place with a point off its curve: digested, checked, refused.
  const auto mtime = std::filesystem::last_write_time(path);
  std::string bad = bytes;
  {
    const io::ZkeyFile view = io::ZkeyFile::Parse(Bytes(bad), "view");
    bad[static_cast<size_t>(view.b1().data - view.bytes().data()) + 5 * view.g1_size() + 3] ^= 1;
  }
  {
    std::ofstream out(path, std::ios::binary | std::ios::in | std::ios::out);  // same inode
    out.write(bad.data(), static_cast<std::streamsize>(bad.size()));
  }
  EXPECT_THROW(ProvingKey::Load(path, options), Error);
  // Its good bytes back, its mtime restored: still a changed file (ctime).
  {
    std::ofstream out(path, std::ios::binary | std::ios::in | std::ios::out);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  std::filesystem::last_write_time(path, mtime);
  const auto restored = ProvingKey::Load(path, options);
  EXPECT_FALSE(restored->key_check().digest.empty()) << "a changed file is digested again";
  EXPECT_EQ(restored->key_check().outcome, KeyCheck::kRemembered) << "by its content";
}

}  // namespace
}  // namespace zkfleet::engine
