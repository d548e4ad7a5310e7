// A damaged journal (issue 47, item 7): every record carries a checksum, a
// changed record is refused naming it (never read as another job's circuit),
// the whole-journal check runs in a child process so random damage to the
// store cannot kill its caller, salvage copies every intact record and
// witness file into a new journal, and a journal of an older zkbroker (no
// checksums) is converted when opened for writing.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <lmdb.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "journal.pb.h"
#include "testutil/test_support.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/storage/journal.hpp"
#include "zkfleet/storage/journal_check.hpp"

namespace zkfleet::storage {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kThreshold = 4096;  // witnesses this large or larger get a file
constexpr int kJobs = 40;

std::string Slurp(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void Overwrite(const fs::path& file, uint64_t offset, const std::string& bytes) {
  int fd = open(file.c_str(), O_RDWR);
  ASSERT_GE(fd, 0) << file;
  ASSERT_EQ(pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset)), static_cast<ssize_t>(bytes.size()));
  close(fd);
}

class JournalCheckTest : public ::testing::Test {
 protected:
  fs::path Dir() const { return dir_.path() / "journal"; }
  JournalOptions Options(const fs::path& dir, bool read_only = false) const {
    JournalOptions options;
    options.dir = dir;
    options.sync = SyncMode::kNone;
    options.blob_threshold = kThreshold;
    options.read_only = read_only;
    return options;
  }
  // kJobs jobs with an item each, a small witness and (every fifth) a large
  // one in a file, and a request record; circuit ids "circuit-<seq>-unique".
  void Fill() {
    auto journal = Journal::Open(Options(Dir()));
    for (int i = 0; i < kJobs; ++i) {
      const uint64_t seq = journal->TakeJobSeq();
      journal::Job job;
      job.set_job_seq(seq);
      job.set_circuit_id("circuit-" + std::to_string(seq) + "-unique");
      job.set_client_id("client");
      job.set_request_id("request-" + std::to_string(seq));
      job.set_partitions(1);
      journal->PutJob(job);
      journal::Item item;
      journal->PutItem(seq, 0, item);
      const size_t size = i % 5 == 0 ? 3 * kThreshold : 200;
      journal->PutWitness(seq, 0, std::string(size, static_cast<char>('a' + i % 26)));
      journal::Request request;
      request.set_job_seq(seq);
      journal->PutRequest("client", job.request_id(), request);
      journal->Commit();
    }
    journal->RememberCircuit("circuit-1-unique", "key alice");
    journal->Commit();
  }
  std::set<uint64_t> Jobs(const fs::path& dir) {
    std::set<uint64_t> seqs;
    auto journal = Journal::Open(Options(dir, /*read_only=*/true));
    journal->ForEachJob([&](const journal::Job& job) { seqs.insert(job.job_seq()); });
    return seqs;
  }

  testing::TempDir dir_;
};

TEST_F(JournalCheckTest, AnIntactJournalPassesAndAMissingOneIsNothingToCheck) {
  EXPECT_FALSE(CheckJournal(Dir()).exists);
  Fill();
  const JournalCheck check = CheckJournal(Dir());
  EXPECT_TRUE(check.exists);
  EXPECT_TRUE(check.ok()) << (check.problems.empty() ? "" : check.problems[0]);
  // Per job: job, item, request, index (3), witness or witness file, hash; and meta.
  EXPECT_GE(check.records, static_cast<uint64_t>(kJobs * 8));
}

// One byte of a job record changed on the disk (its circuit id): the read
// throws naming the record and the way out, the check lists it, salvage
// copies every other job, and the salvaged journal is intact.
TEST_F(JournalCheckTest, AChangedRecordIsRefusedNamingItAndSalvageKeepsTheRest) {
  Fill();
  // Every copy of job 7's circuit id in a job record (its length byte, 16,
  // before it; not the index's keys), live or in a page LMDB freed, becomes
  // "circuit-8-unique": another job's circuit.
  const std::string image = Slurp(Dir() / "data.mdb");
  int changed = 0;
  for (size_t at = image.find("circuit-7-unique"); at != std::string::npos; at = image.find("circuit-7-unique", at + 1)) {
    if (at == 0 || image[at - 1] != 16) continue;
    Overwrite(Dir() / "data.mdb", at + 8, "8");
    ++changed;
  }
  ASSERT_GE(changed, 1);
  {
    auto journal = Journal::Open(Options(Dir(), /*read_only=*/true));
    try {
      journal->GetJob(7);
      ADD_FAILURE() << "a changed record was read";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("of 'jobs' is damaged (its checksum does not match)"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("zkctl journal salvage"), std::string::npos) << e.what();
    }
    EXPECT_EQ(journal->GetJob(8)->circuit_id(), "circuit-8-unique");
  }
  const JournalCheck check = CheckJournal(Dir());
  EXPECT_FALSE(check.ok());
  EXPECT_EQ(check.damaged, 1u);
  ASSERT_FALSE(check.problems.empty());
  EXPECT_NE(check.problems[0].find("'jobs' is damaged"), std::string::npos) << check.problems[0];

  const fs::path salvaged = dir_.path() / "salvaged";
  const SalvageReport report = SalvageJournal(Dir(), salvaged);
  EXPECT_EQ(report.records_lost, 1u);
  EXPECT_EQ(report.jobs, static_cast<uint64_t>(kJobs - 1));
  EXPECT_EQ(report.witness_files_copied, static_cast<uint64_t>(kJobs / 5));
  std::set<uint64_t> expected;
  for (uint64_t seq = 1; seq <= kJobs; ++seq) {
    if (seq != 7) expected.insert(seq);
  }
  EXPECT_EQ(Jobs(salvaged), expected);
  EXPECT_TRUE(CheckJournal(salvaged).ok());
  // The new journal serves: witnesses (in the store and in files) read back
  // checked, job_seq goes on after the last one, circuits are remembered.
  auto journal = Journal::Open(Options(salvaged));
  std::string fault;
  for (uint64_t seq : {1ull, 2ull, 6ull}) {
    auto witness = journal->ReadWitness(seq, 0, &fault);
    ASSERT_TRUE(witness) << seq << ": " << fault;
    EXPECT_EQ(witness->size(), seq % 5 == 1 ? 3 * kThreshold : 200u) << seq;
  }
  EXPECT_EQ(journal->TakeJobSeq(), static_cast<uint64_t>(kJobs + 1));
  EXPECT_EQ(journal->KnownCircuits(), std::vector<std::string>{"circuit-1-unique"});
  EXPECT_THROW(SalvageJournal(Dir(), salvaged), Error);  // never over an existing directory
}

// Random damage to the store's pages (seeded): neither the check nor salvage
// may take their caller down (a fault kills only their child), the check
// reports damage when a salvage loses anything, and what salvage writes is
// an intact journal.
TEST_F(JournalCheckTest, RandomDamageNeverKillsTheCallerAndSalvageWritesAnIntactJournal) {
  Fill();
  const std::string pristine = Slurp(Dir() / "data.mdb");
  ASSERT_GT(pristine.size(), 8u * 4096);
  // 12 seeds: under the sanitizers each forked walk costs ~0.7 s.
  constexpr uint32_t kSeeds = 12;
  int damaged = 0, killed = 0;
  for (uint32_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Overwrite(Dir() / "data.mdb", 0, pristine);
    std::mt19937 random(seed);
    // A few runs of random bytes past the two meta pages (the store's roots).
    for (int run = 0; run < 3; ++run) {
      const uint64_t offset = 2 * 4096 + random() % (pristine.size() - 3 * 4096);
      std::string garbage(1 + random() % 512, '\0');
      for (char& c : garbage) c = static_cast<char>(random());
      Overwrite(Dir() / "data.mdb", offset, garbage);
    }
    const JournalCheck check = CheckJournal(Dir());
    if (!check.ok()) ++damaged;
    for (const std::string& problem : check.problems) killed += problem.find("killed its reader") != std::string::npos;
    const fs::path salvaged = dir_.path() / ("salvaged-" + std::to_string(seed));
    const SalvageReport report = SalvageJournal(Dir(), salvaged);
    if (report.records_lost > 0) {
      EXPECT_FALSE(check.ok()) << report.records_lost << " lost; " << (report.problems.empty() ? "" : report.problems[0]);
    }
    const JournalCheck after = CheckJournal(salvaged);
    EXPECT_TRUE(after.ok()) << (after.problems.empty() ? "" : after.problems[0]);
  }
  // The damage was seen (these seeds hit live pages), some of it by a fault.
  std::printf("%d of %u seeds damaged the journal, %d killed a reader\n", damaged, kSeeds, killed);
  EXPECT_GE(damaged, 1);
}

// A journal written by an older zkbroker (format 1: no checksums) reads as
// before read-only, and gets its checksums when a broker opens it to write.
TEST_F(JournalCheckTest, AnOlderJournalWithoutChecksumsIsConvertedWhenOpenedForWriting) {
  Fill();
  {
    // Strip every checksum and write format 1, as the older zkbroker left it.
    MDB_env* env = nullptr;
    ASSERT_EQ(mdb_env_create(&env), 0);
    mdb_env_set_maxdbs(env, 16);
    mdb_env_set_mapsize(env, size_t{1} << 30);
    ASSERT_EQ(mdb_env_open(env, Dir().c_str(), 0, 0640), 0);
    MDB_txn* txn = nullptr;
    ASSERT_EQ(mdb_txn_begin(env, nullptr, 0, &txn), 0);
    for (unsigned db = 0; db < Journal::database_count(); ++db) {
      const std::string name(Journal::database_name(db));
      if (name == "witnesses") continue;
      MDB_dbi dbi;
      ASSERT_EQ(mdb_dbi_open(txn, name.c_str(), 0, &dbi), 0) << name;
      MDB_cursor* cursor = nullptr;
      ASSERT_EQ(mdb_cursor_open(txn, dbi, &cursor), 0);
      MDB_val key{}, value{};
      for (int rc = mdb_cursor_get(cursor, &key, &value, MDB_FIRST); rc == 0;
           rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)) {
        std::string payload(static_cast<const char*>(value.mv_data), value.mv_size - 8);
        if (name == "meta" && std::string_view(static_cast<const char*>(key.mv_data), key.mv_size) == "meta") {
          journal::Meta meta;
          ASSERT_TRUE(meta.ParseFromString(payload));
          meta.set_format(1);
          payload = meta.SerializeAsString();
        }
        std::string k(static_cast<const char*>(key.mv_data), key.mv_size);  // it points into the page rewritten
        MDB_val kv{k.size(), k.data()}, stripped{payload.size(), payload.data()};
        ASSERT_EQ(mdb_cursor_put(cursor, &kv, &stripped, MDB_CURRENT), 0);
      }
      mdb_cursor_close(cursor);
    }
    ASSERT_EQ(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
  }
  EXPECT_EQ(Jobs(Dir()).size(), static_cast<size_t>(kJobs));  // read-only: read as written
  {
    auto journal = Journal::Open(Options(Dir()));  // converted here
    EXPECT_EQ(journal->GetJob(3)->circuit_id(), "circuit-3-unique");
  }
  const JournalCheck check = CheckJournal(Dir());
  EXPECT_TRUE(check.ok()) << (check.problems.empty() ? "" : check.problems[0]);
  auto journal = Journal::Open(Options(Dir()));
  std::string fault;
  EXPECT_TRUE(journal->ReadWitness(5, 0, &fault)) << fault;
  EXPECT_EQ(journal->TakeJobSeq(), static_cast<uint64_t>(kJobs + 1));
}

}  // namespace
}  // namespace zkfleet::storage
