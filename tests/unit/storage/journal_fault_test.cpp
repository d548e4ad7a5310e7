// The journal's storage faults (issue 27): witnesses that are missing, short,
// long or altered on disk are refused with a fault in plain words (never
// sent, never a crash), journal errors say what happened, and Abort() leaves
// the journal as last committed.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <lmdb.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "testutil/test_support.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/storage/journal.hpp"

namespace zkfleet::storage {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kThreshold = 4096;  // witnesses this large or larger get a file

// Bytes that occur nowhere else in the store (so a test can find them in data.mdb).
std::string Witness(size_t size, char seed) {
  std::string bytes(size, '\0');
  uint32_t x = 0x9e3779b9u ^ static_cast<unsigned char>(seed);
  for (char& c : bytes) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x);
  }
  return bytes;
}

std::string Joined(const StoredWitness& witness) { return std::string(witness.bytes()); }

void FlipBit(const fs::path& file, uint64_t offset) {
  int fd = open(file.c_str(), O_RDWR);
  ASSERT_GE(fd, 0) << file;
  char c = 0;
  ASSERT_EQ(pread(fd, &c, 1, static_cast<off_t>(offset)), 1);
  c ^= 0x10;
  ASSERT_EQ(pwrite(fd, &c, 1, static_cast<off_t>(offset)), 1);
  close(fd);
}

class JournalFaultTest : public ::testing::Test {
 protected:
  JournalOptions Options(bool read_only = false) const {
    JournalOptions options;
    options.dir = dir_.path() / "journal";
    options.sync = SyncMode::kNone;  // the page cache is enough here
    options.blob_threshold = kThreshold;
    options.read_only = read_only;
    return options;
  }
  std::unique_ptr<Journal> Open(bool read_only = false) { return Journal::Open(Options(read_only)); }
  fs::path Blob(uint64_t job_seq, uint32_t partition) const {
    return dir_.path() / "journal" / "blobs" / (std::to_string(job_seq) + "-" + std::to_string(partition));
  }
  // The journal's LMDB environment opened directly (as an older zkbroker
  // would), or null. Its map is small: the size the journal last asked for
  // need not fit this process's address space (under ThreadSanitizer).
  MDB_env* RawEnv(unsigned flags) const {
    MDB_env* env = nullptr;
    if (mdb_env_create(&env) != 0) return nullptr;
    mdb_env_set_maxdbs(env, 16);
    mdb_env_set_mapsize(env, size_t{1} << 30);
    if (mdb_env_open(env, (dir_.path() / "journal").c_str(), flags, 0640) != 0) {
      mdb_env_close(env);
      return nullptr;
    }
    return env;
  }
  // A committed witness, as a SUBMIT leaves it.
  void Store(Journal& journal, uint64_t job_seq, uint32_t partition, const std::string& bytes) {
    journal.PutWitness(job_seq, partition, std::string_view(bytes));
    journal.Commit();
  }

  testing::TempDir dir_;
};

TEST_F(JournalFaultTest, IntactWitnessesReadBack) {
  auto journal = Open();
  const std::string small = Witness(100, 's'), large = Witness(3 * kThreshold + 7, 'l');
  Store(*journal, 1, 0, small);
  Store(*journal, 1, 1, large);
  ASSERT_TRUE(fs::exists(Blob(1, 1)));
  std::string fault;
  auto read = journal->ReadWitness(1, 0, &fault);
  ASSERT_TRUE(read) << fault;
  EXPECT_EQ(Joined(*read), small);
  read = journal->ReadWitness(1, 1, &fault);
  ASSERT_TRUE(read) << fault;
  EXPECT_EQ(Joined(*read), large);
  EXPECT_TRUE(fault.empty()) << fault;
}

// A witness written from the chunks it arrived in (the broker passes views
// of its frames) reads back whole, in the store or in its file; a large one
// comes back as a mapping the caller may take over.
TEST_F(JournalFaultTest, WitnessWrittenInChunksReadsBackWhole) {
  auto journal = Open();
  const std::string small = Witness(300, 'c'), large = Witness(5 * kThreshold + 3, 'C');
  for (const auto& [partition, bytes] : {std::pair<uint32_t, const std::string*>{0, &small}, {1, &large}}) {
    const std::string_view whole(*bytes);
    const std::vector<std::string_view> chunks = {whole.substr(0, 7), whole.substr(7, 0), whole.substr(7)};
    journal->PutWitness(5, partition, chunks);
  }
  journal->Commit();
  std::string fault;
  auto read = journal->ReadWitness(5, 0, &fault);
  ASSERT_TRUE(read) << fault;
  EXPECT_FALSE(read->mapped());
  EXPECT_EQ(Joined(*read), small);
  read = journal->ReadWitness(5, 1, &fault);
  ASSERT_TRUE(read) << fault;
  ASSERT_TRUE(read->mapped());
  EXPECT_EQ(Joined(*read), large);
  StoredWitness::Mapping mapping = read->ReleaseMapping();
  ASSERT_EQ(mapping.size, large.size());
  EXPECT_EQ(std::string(static_cast<const char*>(mapping.base), mapping.size), large);
  EXPECT_EQ(read->size(), 0u);  // handed over: the caller unmaps it
  munmap(mapping.base, mapping.size);
}

TEST_F(JournalFaultTest, TruncatedWitnessFileIsAFaultNamingBothSizes) {
  auto journal = Open();
  Store(*journal, 7, 2, Witness(2 * kThreshold, 'a'));
  fs::resize_file(Blob(7, 2), 1000);
  std::string fault;
  EXPECT_FALSE(journal->ReadWitness(7, 2, &fault));  // and no SIGBUS
  EXPECT_NE(fault.find(Blob(7, 2).string()), std::string::npos) << fault;
  EXPECT_NE(fault.find("is 1000 bytes"), std::string::npos) << fault;
  EXPECT_NE(fault.find(std::to_string(2 * kThreshold) + " were recorded"), std::string::npos) << fault;
  EXPECT_NE(fault.find("truncated"), std::string::npos) << fault;

  // Longer than recorded: refused as well.
  Store(*journal, 8, 0, Witness(kThreshold, 'b'));
  fs::resize_file(Blob(8, 0), kThreshold + 1);
  EXPECT_FALSE(journal->ReadWitness(8, 0, &fault));
  EXPECT_NE(fault.find("is " + std::to_string(kThreshold + 1) + " bytes"), std::string::npos) << fault;
  EXPECT_NE(fault.find("longer"), std::string::npos) << fault;

  // The journal itself is fine: other witnesses still read.
  Store(*journal, 9, 0, Witness(kThreshold, 'c'));
  EXPECT_TRUE(journal->ReadWitness(9, 0, &fault)) << fault;
}

TEST_F(JournalFaultTest, FlippedBitInAWitnessFileIsAFaultNamingTheHash) {
  auto journal = Open();
  const std::string bytes = Witness(5 * kThreshold, 'f');
  Store(*journal, 3, 0, bytes);
  FlipBit(Blob(3, 0), 2 * kThreshold + 11);
  std::string fault;
  EXPECT_FALSE(journal->ReadWitness(3, 0, &fault));
  EXPECT_NE(fault.find("do not match the XXH3-128 hash recorded when it was written"), std::string::npos) << fault;
  EXPECT_NE(fault.find(Blob(3, 0).string()), std::string::npos) << fault;
  EXPECT_NE(fault.find("changed on the disk"), std::string::npos) << fault;
  // Flipped back, it reads again (the check is on the bytes, not a sticky mark).
  FlipBit(Blob(3, 0), 2 * kThreshold + 11);
  auto read = journal->ReadWitness(3, 0, &fault);
  ASSERT_TRUE(read) << fault;
  EXPECT_EQ(Joined(*read), bytes);
}

TEST_F(JournalFaultTest, FlippedBitInAWitnessInTheStoreIsAFault) {
  auto journal = Open();
  const std::string bytes = Witness(1500, 'i');  // below the threshold: a store value
  Store(*journal, 4, 0, bytes);
  journal.reset();
  // Find its bytes in data.mdb and damage one.
  const fs::path store = dir_.path() / "journal" / "data.mdb";
  const std::string image = zkfleet::testing::ReadFile(store.string());
  const size_t at = image.find(bytes);
  ASSERT_NE(at, std::string::npos);
  FlipBit(store, at + 700);
  journal = Open();
  std::string fault;
  EXPECT_FALSE(journal->ReadWitness(4, 0, &fault));
  EXPECT_NE(fault.find("1500 bytes stored for it in " + store.string()), std::string::npos) << fault;
  EXPECT_NE(fault.find("XXH3-128"), std::string::npos) << fault;
}

TEST_F(JournalFaultTest, MissingWitnessIsAFault) {
  auto journal = Open();
  Store(*journal, 5, 1, Witness(kThreshold, 'm'));
  fs::remove(Blob(5, 1));
  std::string fault;
  EXPECT_FALSE(journal->ReadWitness(5, 1, &fault));
  EXPECT_NE(fault.find(Blob(5, 1).string() + " is missing"), std::string::npos) << fault;
  // No record at all.
  EXPECT_FALSE(journal->ReadWitness(99, 0, &fault));
  EXPECT_NE(fault.find("holds no witness"), std::string::npos) << fault;
}

// Issue 47, item 8: a FIFO put where a witness file was hung the broker's
// loop in open() (SIGTERM ignored). Reading it, or a link in its place, is a
// fault at once; writing a new witness where a FIFO sits fails at once.
TEST_F(JournalFaultTest, AFifoOrALinkInTheBlobDirectoryIsAFaultNotAHang) {
  auto journal = Open();
  Store(*journal, 6, 0, Witness(kThreshold, 'q'));
  fs::remove(Blob(6, 0));
  ASSERT_EQ(mkfifo(Blob(6, 0).c_str(), 0600), 0);
  // A child does the read: a hang fails the test instead of stopping it.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(10);
    std::string fault;
    const bool read = journal->ReadWitness(6, 0, &fault).has_value();
    _exit(!read && fault.find("is not a regular file (a FIFO)") != std::string::npos ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the read of a FIFO hung (killed by signal " << WTERMSIG(status) << ")";
  EXPECT_EQ(WEXITSTATUS(status), 0);

  Store(*journal, 6, 1, Witness(kThreshold, 'r'));
  const fs::path outside = dir_.path() / "elsewhere";
  fs::rename(Blob(6, 1), outside);
  fs::create_symlink(outside, Blob(6, 1));
  std::string fault;
  EXPECT_FALSE(journal->ReadWitness(6, 1, &fault));
  EXPECT_NE(fault.find("cannot be opened"), std::string::npos) << fault;
  EXPECT_NE(fault.find("ELOOP"), std::string::npos) << fault;

  // A FIFO where the next witness file goes: the write fails, it does not wait for a reader.
  ASSERT_EQ(mkfifo(Blob(6, 2).c_str(), 0600), 0);
  const pid_t writer = fork();
  ASSERT_GE(writer, 0);
  if (writer == 0) {
    alarm(10);
    try {
      Store(*journal, 6, 2, Witness(kThreshold, 's'));
    } catch (const Error& e) {
      _exit(std::string(e.what()).find("ENXIO") != std::string::npos ? 0 : 4);
    }
    _exit(5);
  }
  ASSERT_EQ(waitpid(writer, &status, 0), writer);
  ASSERT_TRUE(WIFEXITED(status)) << "the write over a FIFO hung (killed by signal " << WTERMSIG(status) << ")";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST_F(JournalFaultTest, AbortLeavesTheJournalAsCommittedAndRemovesTheTurnsFiles) {
  auto journal = Open();
  ASSERT_EQ(journal->TakeJobSeq(), 1u);
  journal::Job job;
  job.set_job_seq(1);
  job.set_circuit_id("c1");
  journal->PutJob(job);
  const std::string first = Witness(2 * kThreshold, '1');
  Store(*journal, 1, 0, first);

  // A turn that fails: a new job with a witness file, the first one's
  // witness deleted, then Abort().
  ASSERT_EQ(journal->TakeJobSeq(), 2u);
  job.set_job_seq(2);
  journal->PutJob(job);
  journal->PutWitness(2, 0, std::string_view(Witness(3 * kThreshold, '2')));
  journal->PutWitness(2, 1, std::string_view(Witness(10, '3')));
  journal->DeleteWitness(1, 0);
  ASSERT_TRUE(fs::exists(Blob(2, 0)));
  EXPECT_TRUE(journal->dirty());
  journal->Abort();
  EXPECT_FALSE(journal->dirty());

  EXPECT_FALSE(fs::exists(Blob(2, 0))) << "the aborted turn's witness file stays";
  EXPECT_FALSE(journal->GetJob(2));
  std::string fault;
  EXPECT_FALSE(journal->ReadWitness(2, 1, &fault));
  ASSERT_TRUE(journal->GetJob(1));
  ASSERT_TRUE(fs::exists(Blob(1, 0))) << "a deletion of the aborted turn happened";
  auto read = journal->ReadWitness(1, 0, &fault);
  ASSERT_TRUE(read) << fault;
  EXPECT_EQ(Joined(*read), first);

  // job_seq 2 was taken (a worker may have seen it): it is not handed out
  // again, and the next commit that writes (here the probe) persists that. A
  // commit with nothing else to write does not try (while the disk refuses,
  // it would fail every turn).
  EXPECT_EQ(journal->TakeJobSeq(), 3u);
  journal->Abort();
  const uint64_t commits = journal->stats().commits;
  journal->Commit();
  EXPECT_EQ(journal->stats().commits, commits);
  std::string why;
  ASSERT_TRUE(journal->ProbeWritable(&why)) << why;
  journal.reset();
  journal = Open();
  EXPECT_EQ(journal->next_job_seq(), 4u);
  EXPECT_FALSE(journal->GetJob(2));
}

TEST_F(JournalFaultTest, MapFullIsSaidPlainlyAndAbortRecovers) {
  JournalOptions options = Options();
  options.map_bytes = 256 << 10;  // a store that cannot hold much
  auto journal = Journal::Open(options);
  try {
    journal->PutWitness(1, 0, std::string_view(Witness(kThreshold - 1, 'x')));
    for (uint32_t p = 1; p < 200; ++p) journal->PutWitness(1, p, std::string_view(Witness(kThreshold - 1, 'x')));
    journal->Commit();
    FAIL() << "a 256 KiB store took 800 KB";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(what.find("reached its map size of 262144 bytes (MDB_MAP_FULL)"), std::string::npos) << what;
    EXPECT_NE(what.find(options.dir.string()), std::string::npos) << what;
  }
  journal->Abort();
  std::string why;
  EXPECT_TRUE(journal->ProbeWritable(&why)) << why;
  Store(*journal, 2, 0, "small");
  std::string fault;
  auto read = journal->ReadWitness(2, 0, &fault);
  ASSERT_TRUE(read) << fault;
  EXPECT_EQ(Joined(*read), "small");
  EXPECT_FALSE(journal->ReadWitness(1, 0, &fault));
}

// A process that may not reserve the default 1 TiB map (a ulimit -v, a
// sanitizer's shadow memory) still opens its journal, with a smaller map.
TEST_F(JournalFaultTest, NoAddressSpaceForTheMapTakesASmallerOne) {
// gcc says so with __SANITIZE_*__, clang only through __has_feature.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ZKFLEET_TEST_UNDER_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(ZKFLEET_TEST_UNDER_SANITIZER)
  GTEST_SKIP() << "a sanitizer's shadow memory needs more address space than the limit this test sets "
                  "(the TSan phase opens every broker's journal through this fallback)";
#else
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    rlimit limit{16ull << 30, 16ull << 30};  // 16 GiB of address space
    if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(10);
    try {
      JournalOptions options = Options();
      options.map_bytes = 1ull << 40;
      auto journal = Journal::Open(options);
      if (journal->options().map_bytes >= (1ull << 40)) _exit(11);  // no fallback happened
      Store(*journal, 1, 0, "small");
      std::string fault;
      _exit(journal->ReadWitness(1, 0, &fault) ? 0 : 12);
    } catch (...) {
      _exit(13);
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: setrlimit, 11: the 1 TiB map was taken, 12: no read back, 13: threw";
#endif
}

TEST_F(JournalFaultTest, ProbeSaysWhyTheJournalCannotBeWritten) {
  auto journal = Open();
  std::string why;
  EXPECT_TRUE(journal->ProbeWritable(&why)) << why;
  EXPECT_FALSE(fs::exists(dir_.path() / "journal" / "write-probe"));
  // A directory where the probe file goes: the probe cannot create it.
  fs::create_directory(dir_.path() / "journal" / "write-probe");
  EXPECT_FALSE(journal->ProbeWritable(&why));
  EXPECT_NE(why.find("while creating the write probe"), std::string::npos) << why;
  fs::remove(dir_.path() / "journal" / "write-probe");
  EXPECT_TRUE(journal->ProbeWritable(&why)) << why;
}

TEST_F(JournalFaultTest, WitnessOfAnOlderJournalWithoutHashesStillReads) {
  const std::string small = Witness(200, 'o'), large = Witness(2 * kThreshold, 'O');
  {
    auto journal = Open();
    Store(*journal, 1, 0, small);
    Store(*journal, 1, 1, large);
    Store(*journal, 2, 0, Witness(kThreshold, 'T'));
  }
  // As a zkbroker before hashes left it: no "witness_hashes" database.
  {
    MDB_env* env = RawEnv(0);
    ASSERT_NE(env, nullptr);
    MDB_txn* txn = nullptr;
    ASSERT_EQ(mdb_txn_begin(env, nullptr, 0, &txn), 0);
    MDB_dbi dbi;
    ASSERT_EQ(mdb_dbi_open(txn, "witness_hashes", 0, &dbi), 0);
    ASSERT_EQ(mdb_drop(txn, dbi, 1), 0);
    ASSERT_EQ(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
  }
  fs::resize_file(Blob(2, 0), 10);
  std::string fault;
  for (bool read_only : {true, false}) {
    SCOPED_TRACE(read_only ? "read-only" : "read-write");
    auto journal = Open(read_only);
    auto read = journal->ReadWitness(1, 0, &fault);
    ASSERT_TRUE(read) << fault;
    EXPECT_EQ(Joined(*read), small);
    read = journal->ReadWitness(1, 1, &fault);
    ASSERT_TRUE(read) << fault;
    EXPECT_EQ(Joined(*read), large);
    // Its size is still checked.
    EXPECT_FALSE(journal->ReadWitness(2, 0, &fault));
    EXPECT_NE(fault.find("is 10 bytes"), std::string::npos) << fault;
  }
  // Witnesses written from now on get their hash.
  auto journal = Open();
  Store(*journal, 3, 0, Witness(kThreshold, 'n'));
  FlipBit(Blob(3, 0), 5);
  EXPECT_FALSE(journal->ReadWitness(3, 0, &fault));
  EXPECT_NE(fault.find("XXH3-128"), std::string::npos) << fault;
}

TEST_F(JournalFaultTest, BeginLifeDropsHashesOfWitnessesThatAreGone) {
  {
    auto journal = Open();
    Store(*journal, 1, 0, Witness(10, 'g'));
  }
  // An older zkbroker deleting the witness leaves its hash behind.
  {
    MDB_env* env = RawEnv(0);
    ASSERT_NE(env, nullptr);
    MDB_txn* txn = nullptr;
    ASSERT_EQ(mdb_txn_begin(env, nullptr, 0, &txn), 0);
    MDB_dbi witnesses, hashes;
    ASSERT_EQ(mdb_dbi_open(txn, "witnesses", 0, &witnesses), 0);
    ASSERT_EQ(mdb_dbi_open(txn, "witness_hashes", 0, &hashes), 0);
    ASSERT_EQ(mdb_drop(txn, witnesses, 0), 0);
    MDB_stat stat{};
    ASSERT_EQ(mdb_stat(txn, hashes, &stat), 0);
    EXPECT_EQ(stat.ms_entries, 1u);
    ASSERT_EQ(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
  }
  auto journal = Open();
  journal->BeginLife();
  journal.reset();
  MDB_env* env = RawEnv(MDB_RDONLY);
  ASSERT_NE(env, nullptr);
  MDB_txn* txn = nullptr;
  ASSERT_EQ(mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn), 0);
  MDB_dbi hashes;
  ASSERT_EQ(mdb_dbi_open(txn, "witness_hashes", 0, &hashes), 0);
  MDB_stat stat{};
  ASSERT_EQ(mdb_stat(txn, hashes, &stat), 0);
  EXPECT_EQ(stat.ms_entries, 0u);
  mdb_txn_abort(txn);
  mdb_env_close(env);
}

}  // namespace
}  // namespace zkfleet::storage

namespace zkfleet::storage {
namespace {

// Jobs from inputs (issue 31): the inputs are part of the job record, read
// back whole (any bytes), and generating circuits are remembered apart from
// the circuits workers hold, both across a reopen.
TEST_F(JournalFaultTest, InputsAndGeneratingCircuitsSurviveAReopen) {
  const std::string input0 = R"({"a": "3"})", input1 = Witness(3 * kThreshold, 'i');  // large and binary: still whole
  {
    auto journal = Open();
    journal::Job job;
    job.set_job_seq(journal->TakeJobSeq());
    job.set_circuit_id("c1");
    job.set_partitions(2);
    job.add_inputs(input0);
    job.add_inputs(input1);
    journal->PutJob(job);
    journal->RememberCircuit("c1");
    journal->RememberCircuit("c2");
    journal->RememberGenerator("c1");
    journal->Commit();
  }
  auto journal = Open(/*read_only=*/true);
  auto job = journal->GetJob(1);
  ASSERT_TRUE(job);
  ASSERT_EQ(job->inputs_size(), 2);
  EXPECT_EQ(job->inputs(0), input0);
  EXPECT_EQ(job->inputs(1), input1);
  EXPECT_FALSE(fs::exists(Blob(1, 0)));  // no witness file for a job from inputs
  EXPECT_EQ(journal->KnownCircuits(), (std::vector<std::string>{"c1", "c2"}));
  EXPECT_EQ(journal->KnownGenerators(), (std::vector<std::string>{"c1"}));
}

}  // namespace
}  // namespace zkfleet::storage
