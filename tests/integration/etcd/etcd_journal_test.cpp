// The journal in a real 3-member etcd cluster (issue 48): what one leader
// commits the next one reads; the same listings as the LMDB journal; an
// ex-leader whose lease ended can write nothing (fencing); an acknowledged
// write survives the loss of any one member; without a quorum a commit fails
// in words and nothing committed is lost.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <thread>

#include "testutil/etcd_cluster.hpp"
#include "testutil/test_support.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/storage/etcd_leadership.hpp"
#include "zkfleet/storage/journal.hpp"

namespace zkfleet::storage {
namespace {

using namespace std::chrono_literals;
using testing::EtcdCluster;

std::string TestDir(const std::string& name) {
  // On disk, in the build tree (not /tmp, which may be a tmpfs): members fsync.
  std::string dir = std::filesystem::current_path().string() + "/etcd-journal-" + name + "-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

class EtcdJournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!EtcdCluster::available()) GTEST_SKIP() << "SKIPPED LOUDLY: etcd is not installed (scripts/install-deps.sh)";
    const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    dir_ = TestDir(name);
    cluster_ = std::make_unique<EtcdCluster>(dir_);
    std::string why;
    ASSERT_TRUE(cluster_->Start(30s, &why)) << why;
  }
  void TearDown() override {
    cluster_.reset();
    if (!HasFailure() && !dir_.empty()) std::filesystem::remove_all(dir_);
  }

  EtcdLeadershipOptions LeadershipOptions(const std::string& name) {
    EtcdLeadershipOptions options;
    options.client.endpoints = cluster_->endpoints();
    options.client.call_timeout = 1000ms;
    options.client.retry_for = 4000ms;
    options.prefix = "test/";
    options.name = name;
    options.ttl = std::chrono::seconds(2);
    return options;
  }
  std::unique_ptr<EtcdLeadership> Lead(const std::string& name) {
    auto leadership = std::make_unique<EtcdLeadership>(LeadershipOptions(name));
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    EXPECT_TRUE(leadership->Campaign([&] { return std::chrono::steady_clock::now() > deadline; }));
    return leadership;
  }
  JournalOptions Options(const EtcdLeadership* leadership) {
    JournalOptions options;
    options.dir = cluster_->Url("test/");
    EtcdJournalOptions etcd;
    etcd.endpoints = cluster_->endpoints();
    etcd.prefix = "test/";
    etcd.leadership = leadership;
    options.etcd = etcd;
    options.read_only = leadership == nullptr;
    return options;
  }
  // How many journal records etcd holds under database `db` (etcdctl).
  int EtcdRecords(const std::string& db) { return testing::CountKeys(*cluster_, "test/journal/" + db + "/"); }

  std::string dir_;
  std::unique_ptr<EtcdCluster> cluster_;
};

journal::Job MakeJob(uint64_t seq, const std::string& circuit, const std::string& client, int state = 1) {
  journal::Job job;
  job.set_job_seq(seq);
  job.set_circuit_id(circuit);
  job.set_client_id(client);
  job.set_request_id("r" + std::to_string(seq));
  job.set_partitions(2);
  job.set_state(static_cast<zkfleet::proto::JobState>(state));
  job.set_submitted_unix_s(1000.0 + static_cast<double>(seq));
  return job;
}

// A broker turn's worth of writes, the same on any journal.
void WriteJobs(Journal& journal, int jobs) {
  for (int i = 0; i < jobs; ++i) {
    const uint64_t seq = journal.TakeJobSeq();
    journal::Job job = MakeJob(seq, i % 2 ? "poseidon" : "sha256", i % 3 ? "alice" : "bob");
    journal.PutJob(job);
    for (uint32_t p = 0; p < 2; ++p) {
      journal::Item item;
      item.set_attempts(p);
      journal.PutItem(seq, p, item);
      journal.PutWitness(seq, p, "witness " + std::to_string(seq) + "/" + std::to_string(p));
    }
    journal::Request request;
    request.set_job_seq(seq);
    journal.PutRequest(job.client_id(), job.request_id(), request);
  }
  journal.RememberCircuit("sha256", "worker-key");
}

struct Listing {
  std::vector<uint64_t> by_state, by_circuit, by_client, newest_first;
  std::vector<uint32_t> items_of_2;
  size_t requests = 0;
  std::vector<std::string> circuits;
  bool operator==(const Listing&) const = default;
};
Listing List(Journal& journal) {
  Listing listing;
  journal.ScanJobIndex(JobIndex::kState, Journal::StateIndexValue(1), 0, [&](uint64_t seq) {
    listing.by_state.push_back(seq);
    return true;
  });
  journal.ScanJobIndex(JobIndex::kCircuit, "poseidon", 5, [&](uint64_t seq) {
    listing.by_circuit.push_back(seq);
    return true;
  });
  journal.ScanJobIndex(JobIndex::kClient, "bob", 0, [&](uint64_t seq) {
    listing.by_client.push_back(seq);
    return listing.by_client.size() < 2;
  });
  journal.ScanJobsNewestFirst(0, [&](const journal::Job& job) {
    listing.newest_first.push_back(job.job_seq());
    return true;
  });
  for (const auto& [partition, item] : journal.Items(2)) listing.items_of_2.push_back(partition);
  listing.requests = journal.CountRequests();
  listing.circuits = journal.KnownCircuits();
  return listing;
}

TEST_F(EtcdJournalTest, WhatOneLeaderCommitsTheNextReads) {
  uint64_t first_epoch = 0;
  {
    auto leader = Lead("broker-a");
    auto journal = Journal::Open(Options(leader.get()));
    first_epoch = journal->BeginLife();
    WriteJobs(*journal, 3);
    journal->Commit();
  }  // broker-a stops: its lease is revoked, the next takes over at once
  auto leader = Lead("broker-b");
  auto journal = Journal::Open(Options(leader.get()));
  EXPECT_EQ(journal->BeginLife(), first_epoch + 1);
  EXPECT_EQ(journal->next_job_seq(), 4u);
  auto job = journal->GetJob(2);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->circuit_id(), "poseidon");
  std::string fault;
  auto witness = journal->ReadWitness(2, 1, &fault);
  ASSERT_TRUE(witness) << fault;
  EXPECT_EQ(witness->bytes(), "witness 2/1");
  EXPECT_TRUE(journal->GetRequest("bob", "r1"));
  EXPECT_EQ(journal->KnownCircuits(), std::vector<std::string>{"sha256"});
}

TEST_F(EtcdJournalTest, ListingsAreTheLmdbJournals) {
  JournalOptions lmdb_options;
  lmdb_options.dir = dir_ + "/lmdb";
  auto lmdb = Journal::Open(lmdb_options);
  auto leader = Lead("broker-a");
  auto etcd = Journal::Open(Options(leader.get()));
  for (Journal* journal : {lmdb.get(), etcd.get()}) {
    journal->BeginLife();
    WriteJobs(*journal, 7);
    journal->Commit();
    // A job changes state: the index follows; another job ends and expires.
    journal::Job job = *journal->GetJob(4);
    job.set_state(static_cast<zkfleet::proto::JobState>(3));
    job.set_finished_unix_s(1010);
    journal->PutJob(job);
    journal->DeleteItem(4, 0);
    journal->Commit();
    EXPECT_EQ(journal->ExpireResults(1100, 100), 1u);
    journal->Commit();
    // A dropped turn leaves nothing behind.
    journal->PutJob(MakeJob(99, "dropped", "mallory"));
    journal->Abort();
    journal->Commit();
  }
  const Listing from_lmdb = List(*lmdb);
  EXPECT_EQ(from_lmdb.newest_first, (std::vector<uint64_t>{7, 6, 5, 3, 2, 1}));
  EXPECT_EQ(List(*etcd), from_lmdb);
  // And as a standby reads it from etcd afresh.
  auto reader = Journal::Open(Options(nullptr));
  EXPECT_EQ(List(*reader), from_lmdb);
  EXPECT_FALSE(reader->GetJob(99));
}

// A broker paused past its lease (here: its lease ended under it, as etcd
// ends a lease nobody keeps alive) resumes believing it leads: etcd refuses
// its write, because the leader key it compares is no longer the one it made.
TEST_F(EtcdJournalTest, AnExLeaderWhoseLeaseEndedWritesNothing) {
  auto old_leader = Lead("broker-a");
  auto old_journal = Journal::Open(Options(old_leader.get()));
  old_journal->BeginLife();
  WriteJobs(*old_journal, 1);
  old_journal->Commit();

  EtcdClient admin({cluster_->endpoints()});
  admin.LeaseRevoke(old_leader->lease());
  auto new_leader = Lead("broker-b");
  ASSERT_TRUE(new_leader->leading());
  auto new_journal = Journal::Open(Options(new_leader.get()));
  new_journal->BeginLife();

  old_journal->PutJob(MakeJob(old_journal->TakeJobSeq(), "stale", "mallory"));
  try {
    old_journal->Commit();
    FAIL() << "a fenced ex-leader's commit succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotLeader) << e.what();
    EXPECT_NE(std::string(e.what()).find("another broker leads now"), std::string::npos) << e.what();
  }
  old_journal->Abort();
  EXPECT_EQ(EtcdRecords("jobs"), 1) << "the ex-leader's job reached etcd";
  // Its keep-alive notices too (the lease is gone).
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!old_leader->lost() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(old_leader->lost());
  // The new leader writes as it pleases.
  WriteJobs(*new_journal, 1);
  new_journal->Commit();
  EXPECT_EQ(EtcdRecords("jobs"), 2);
}

TEST_F(EtcdJournalTest, AnAcknowledgedWriteSurvivesTheLossOfAnyOneMember) {
  auto leader = Lead("broker-a");
  auto journal = Journal::Open(Options(leader.get()));
  journal->BeginLife();
  for (int member = 0; member < cluster_->size(); ++member) {
    WriteJobs(*journal, 1);
    journal->Commit();  // acknowledged: a quorum has it on disk
    const uint64_t seq = journal->next_job_seq() - 1;
    cluster_->Kill(member);
    // Read afresh from the two left, and written on.
    auto reader = Journal::Open(Options(nullptr));
    EXPECT_TRUE(reader->GetJob(seq)) << "job " << seq << " lost with member " << member;
    WriteJobs(*journal, 1);
    EXPECT_NO_THROW(journal->Commit()) << "with member " << member << " down";
    cluster_->Restart(member);
    // The restarted member is back in the quorum before the next one goes.
    ASSERT_TRUE(cluster_->WaitHealthy(member, 30s)) << cluster_->Logs();
  }
  auto reader = Journal::Open(Options(nullptr));
  EXPECT_EQ(List(*reader).newest_first.size(), 6u);
}

TEST_F(EtcdJournalTest, WithoutAQuorumACommitFailsInWordsAndLosesNothing) {
  auto leader = Lead("broker-a");
  auto journal = Journal::Open(Options(leader.get()));
  journal->BeginLife();
  WriteJobs(*journal, 2);
  journal->Commit();
  cluster_->Kill(1);
  cluster_->Kill(2);
  WriteJobs(*journal, 1);
  try {
    journal->Commit();
    FAIL() << "a commit without a quorum succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo) << e.what();
    EXPECT_NE(std::string(e.what()).find("quorum"), std::string::npos) << e.what();
  }
  journal->Abort();
  std::string why;
  EXPECT_FALSE(journal->ProbeWritable(&why));
  cluster_->Restart(1);
  cluster_->Restart(2);
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  bool writable = false;
  while (!writable && std::chrono::steady_clock::now() < deadline) writable = journal->ProbeWritable(&why);
  ASSERT_TRUE(writable) << why << "\n" << cluster_->Logs();
  // What was acknowledged is there; the failed turn may or may not be (its
  // client was told to retry with the same request id), never half of a job.
  EXPECT_TRUE(journal->GetJob(1));
  EXPECT_TRUE(journal->GetJob(2));
  if (journal->GetJob(3)) EXPECT_EQ(journal->Items(3).size(), 2u);
}

}  // namespace
}  // namespace zkfleet::storage
