// A damaged or full disk under the broker's journal (issue 27): a witness file
// that was truncated or altered after it was accepted fails only its job, as
// the broker's storage fault (never the client's "does not satisfy"), and the
// broker keeps serving; a full disk makes SUBMITs UNAVAILABLE (an answer, not
// a timeout, not an exit) until space is freed, also across a restart.
//
// The full disk is a real one: a 20 MB tmpfs in a mount namespace of the test
// process (its children, the broker among them, share it; nothing outside
// sees it). That needs CAP_SYS_ADMIN, as root in CI, or an unprivileged user
// namespace; without either the case fails, saying so.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "fleet_harness.hpp"

namespace fleet_test {
namespace {

namespace fs = std::filesystem;
namespace proto = zkfleet::proto;

// Every broker here: jobs wait for workers that connect later, --instant
// workers prove nothing (no verification key), witnesses of 4 KiB and more
// are files.
std::vector<std::string> BrokerArgs(std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--accept-unrouted", "--unverified-circuits", "*", "--witness-file-threshold",
                                   "4096"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

zkfleet::client::internal::JobSubmission Request(const std::string& id, const std::string& circuit, std::string witness) {
  zkfleet::client::internal::JobSubmission job;
  job.request.set_request_id(id);
  job.request.set_circuit_id(circuit);
  job.witnesses.push_back(std::move(witness));
  return job;
}

// Bytes that differ from one request to the next.
std::string Witness(size_t size, char seed) {
  std::string bytes(size, seed);
  for (size_t i = 0; i < size; i += 97) bytes[i] = static_cast<char>(i / 97);
  return bytes;
}

fs::path BlobOf(Fleet& fleet, uint64_t job_seq, uint32_t partition = 0) {
  return fs::path(fleet.broker_data_dir()) / "blobs" / (std::to_string(job_seq) + "-" + std::to_string(partition));
}

// SUBMITs `job` until it is accepted: an UNAVAILABLE refusal (nothing was
// accepted) is retried with the same request id.
proto::SubmitReply SubmitRetrying(zkfleet::client::internal::BrokerClient& client, const zkfleet::client::internal::JobSubmission& job,
                                  std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + zkfleet::testing::Scaled(timeout);
  for (;;) {
    try {
      return client.Submit(job, 5s);
    } catch (const zkfleet::client::internal::BrokerError& e) {
      if (e.kind() != proto::ERROR_KIND_UNAVAILABLE || std::chrono::steady_clock::now() >= deadline) throw;
      std::this_thread::sleep_for(200ms);
    }
  }
}

// One SUBMIT sent as is (no retry by the client library): the broker's first answer.
std::optional<proto::Envelope> SubmitOnce(zkfleet::client::internal::BrokerClient& client, const std::string& request_id,
                                          const std::string& witness, uint64_t* correlation_id) {
  proto::Envelope envelope;
  envelope.mutable_submit()->set_request_id(request_id);
  envelope.mutable_submit()->set_circuit_id("c1");
  envelope.mutable_submit()->add_witness_bytes(witness.size());
  zkfleet::fleet::Frames frames;
  frames.push_back(zkfleet::fleet::FrameFromString(witness));
  *correlation_id = client.Send(std::move(envelope), std::move(frames));
  return client.Receive(zkfleet::testing::Scaled(10s));
}

// Waits until the broker's STATUS says `unavailable`.
bool WaitUnavailable(Fleet& fleet, bool unavailable, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + zkfleet::testing::Scaled(timeout);
  while (std::chrono::steady_clock::now() < deadline) {
    if (fleet.Status().unavailable() == unavailable) return true;
    std::this_thread::sleep_for(100ms);
  }
  return false;
}

// A tmpfs of `megabytes` MB at a new directory, mounted in a mount namespace
// of this process (made here), so that it and the processes it starts see it
// and nothing else does. Unmounted (lazily) on destruction.
class SmallDisk {
 public:
  explicit SmallDisk(int megabytes) {
    path_ = (fs::temp_directory_path() / ("zkfleet-small-disk-" + std::to_string(getpid()))).string();
    if (unshare(CLONE_NEWNS) != 0) {
      // Not root: an unprivileged user namespace (this process is still
      // single-threaded: no Fleet, no ZeroMQ socket yet).
      const uid_t uid = getuid();
      const gid_t gid = getgid();
      if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
        why_ = std::string("cannot make a mount namespace for a private tmpfs (unshare: ") + std::strerror(errno) +
               "): run as root (CI does) or allow unprivileged user namespaces";
        return;
      }
      std::ofstream("/proc/self/setgroups") << "deny";
      std::ofstream("/proc/self/uid_map") << "0 " << uid << " 1";
      std::ofstream("/proc/self/gid_map") << "0 " << gid << " 1";
    }
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      why_ = std::string("cannot make / private in the new mount namespace: ") + std::strerror(errno);
      return;
    }
    std::error_code ec;
    fs::remove_all(path_, ec);
    fs::create_directories(path_);
    const std::string options = "size=" + std::to_string(megabytes) + "m";
    if (mount("tmpfs", path_.c_str(), "tmpfs", 0, options.c_str()) != 0) {
      why_ = "cannot mount a tmpfs at " + path_ + ": " + std::strerror(errno);
      return;
    }
    mounted_ = true;
  }
  ~SmallDisk() {
    if (mounted_) umount2(path_.c_str(), MNT_DETACH);
    std::error_code ec;
    fs::remove(path_, ec);
  }
  SmallDisk(const SmallDisk&) = delete;
  SmallDisk& operator=(const SmallDisk&) = delete;

  bool ok() const { return mounted_; }
  const std::string& why() const { return why_; }
  const std::string& path() const { return path_; }
  std::string filler() const { return path_ + "/filler"; }

  // Writes the filler file until the disk takes nothing more; its size.
  uint64_t Fill() const {
    int fd = open(filler().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return 0;
    const std::string block(1 << 20, 'f');
    uint64_t total = 0;
    for (size_t chunk = block.size(); chunk >= 512;) {
      ssize_t n = write(fd, block.data(), chunk);
      if (n > 0) {
        total += static_cast<uint64_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        chunk /= 2;  // ENOSPC: what still fits, in smaller pieces
      }
    }
    close(fd);
    return total;
  }
  void Free() const { fs::remove(filler()); }

 private:
  std::string path_;
  std::string why_;
  bool mounted_ = false;
};

TEST(FleetStorageFaults, TruncatedWitnessFileFailsOnlyItsJobAsABrokerStorageFault) {
  Fleet fleet("storage-truncated");
  const int metrics_port = FreePort();
  Process& broker = fleet.StartBroker(BrokerArgs({"--metrics-listen", "127.0.0.1:" + std::to_string(metrics_port)}));
  auto client = fleet.Client();
  // Accepted while no worker holds c1: its witness waits in the journal.
  auto damaged = client->Submit(Request("damaged", "c1", Witness(2 << 20, 'd')), 10s);
  const fs::path blob = BlobOf(fleet, damaged.job_seq());
  ASSERT_TRUE(fs::exists(blob));
  ASSERT_EQ(fs::file_size(blob), 2u << 20);
  fs::resize_file(blob, 1000);  // the disk lost its tail

  fleet.StartWorker("w", {"--instant", "--circuit", "c1"});
  auto result = client->NextJobResult(damaged.job_seq(), zkfleet::testing::Scaled(30s));
  ASSERT_TRUE(result) << "no result for the damaged job; the broker " << (broker.running() ? "runs" : "exited");
  EXPECT_EQ(result->state(), proto::JOB_STATE_FAILED);
  EXPECT_NE(result->error().find("broker storage fault"), std::string::npos) << result->error();
  EXPECT_NE(result->error().find("is 1000 bytes, but 2097152 were recorded"), std::string::npos) << result->error();
  EXPECT_NE(result->error().find("the client's submission was fine"), std::string::npos) << result->error();

  // The broker keeps serving: the next job is proved.
  ASSERT_TRUE(broker.running()) << broker.Log();
  auto second = client->Submit(Request("second", "c1", Witness(2 << 20, 's')), 10s);
  result = client->NextJobResult(second.job_seq(), zkfleet::testing::Scaled(30s));
  ASSERT_TRUE(result);
  EXPECT_EQ(result->state(), proto::JOB_STATE_SUCCEEDED) << result->error();
  auto status = fleet.Status();
  EXPECT_EQ(status.storage_faults(), 1u);
  EXPECT_FALSE(status.unavailable());
  EXPECT_EQ(Sample(metrics_port, "zkfleet_broker_storage_faults_total{kind=\"witness\"}"), 1);
  EXPECT_EQ(Sample(metrics_port, "zkfleet_broker_unavailable"), 0);
}

TEST(FleetStorageFaults, FlippedByteInAStoredWitnessIsABrokerStorageFaultNotTheClients) {
  Fleet fleet("storage-flipped");
  Process& broker = fleet.StartBroker(BrokerArgs());
  auto client = fleet.Client();
  const std::string witness = ReadFile(Fixture("bn128_k12/witness.wtns"));  // satisfies the circuit
  auto damaged = client->Submit(Request("damaged", "c1", witness), 10s);
  const fs::path blob = BlobOf(fleet, damaged.job_seq());
  ASSERT_EQ(fs::file_size(blob), witness.size());
  {
    std::fstream file(blob, std::ios::in | std::ios::out | std::ios::binary);
    const auto offset = static_cast<std::streamoff>(witness.size() / 2);
    file.seekp(offset);
    file.put(static_cast<char>(witness[static_cast<size_t>(offset)] ^ 0x01));
  }

  // A real prover: before the hash check, it was sent the altered witness
  // and the job ended "witness does not satisfy circuit", the client blamed.
  fleet.StartWorker("prover", {"--circuit", "c1=" + Fixture("bn128_k12/circuit_final.zkey"), "--threads", "1"});
  auto result = client->NextJobResult(damaged.job_seq(), zkfleet::testing::Scaled(60s));
  ASSERT_TRUE(result);
  EXPECT_EQ(result->state(), proto::JOB_STATE_FAILED);
  EXPECT_NE(result->error().find("broker storage fault"), std::string::npos) << result->error();
  EXPECT_NE(result->error().find("do not match the XXH3-128 hash recorded when it was written"), std::string::npos)
      << result->error();
  EXPECT_EQ(result->error().find("does not satisfy"), std::string::npos) << result->error();

  ASSERT_TRUE(broker.running()) << broker.Log();
  auto intact = client->Submit(Request("intact", "c1", witness), 10s);
  result = client->NextJobResult(intact.job_seq(), zkfleet::testing::Scaled(60s));
  ASSERT_TRUE(result);
  EXPECT_EQ(result->state(), proto::JOB_STATE_SUCCEEDED) << result->error();
  EXPECT_EQ(fleet.Status().storage_faults(), 1u);
}

// Issue 47, item 7: random damage to data.mdb killed the broker with SIGBUS
// at every start (a crash loop), or silently changed a job's circuit. Every
// record now has a checksum and the journal is read whole, in a child
// process, before the broker starts: a damaged one is refused with exit
// status 65 and the way out, and `zkctl journal salvage` copies every intact
// job into a new journal, on which the broker serves them.
TEST(FleetStorageFaults, ADamagedJournalIsRefusedAtStartAndItsIntactJobsAreSalvaged) {
  Fleet fleet("storage-damaged-journal");
  Process* broker = &fleet.StartBroker(BrokerArgs());
  std::vector<uint64_t> intact;
  {
    auto client = fleet.Client();
    intact.push_back(client->Submit(Request("intact-small", "c1", Witness(300, 'a')), 10s).job_seq());
    client->Submit(Request("the-damaged-job", "c1", Witness(300, 'b')), 10s);
    intact.push_back(client->Submit(Request("intact-large", "c1", Witness(2 << 20, 'c')), 10s).job_seq());
  }
  broker->Signal(SIGTERM);
  ASSERT_EQ(broker->WaitExit(10s), 0);
  // The damaged job's request id, in its job record (length byte 15 before
  // it), changed in every copy: one bit of the disk.
  const fs::path store = fs::path(fleet.broker_data_dir()) / "data.mdb";
  const std::string image = ReadFile(store.string());
  int changed = 0;
  for (size_t at = image.find("the-damaged-job"); at != std::string::npos; at = image.find("the-damaged-job", at + 1)) {
    if (at == 0 || image[at - 1] != 15) continue;
    std::fstream file(store, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(at + 4));
    file.put('D');
    ++changed;
  }
  ASSERT_GE(changed, 1);

  Process& refused = fleet.LaunchBroker(BrokerArgs());
  const auto code = refused.WaitExit(zkfleet::testing::Scaled(30s));
  ASSERT_TRUE(code.has_value()) << "a broker started on a damaged journal:\n" << refused.Log();
  EXPECT_EQ(*code, 65) << refused.Log();
  EXPECT_NE(refused.Log().find("of 'jobs' is damaged (its checksum does not match)"), std::string::npos)
      << refused.Log();
  EXPECT_NE(refused.Log().find("zkctl journal salvage --data-dir " + fleet.broker_data_dir() + " --to NEW_DIR"),
            std::string::npos)
      << refused.Log();
  std::string output;
  EXPECT_EQ(fleet.Zkctl({"journal", "check", "--data-dir", fleet.broker_data_dir()}, &output), 1) << output;

  const std::string salvaged = fleet.dir() + "/salvaged";
  ASSERT_EQ(fleet.Zkctl({"journal", "salvage", "--data-dir", fleet.broker_data_dir(), "--to", salvaged}, &output), 0)
      << output;
  EXPECT_NE(output.find("1 lost"), std::string::npos) << output;
  broker = &fleet.StartBroker(BrokerArgs({"--data-dir", salvaged}));
  fleet.StartWorker("w", {"--instant", "--circuit", "c1"});
  auto client = fleet.Client();
  for (uint64_t job : intact) {
    auto result = client->Await(job, zkfleet::testing::Scaled(30s));
    EXPECT_EQ(result.state(), proto::JOB_STATE_SUCCEEDED) << job << ": " << result.error();
  }
}

TEST(FleetStorageFaults, FullDiskRefusesSubmitsAsUnavailableUntilSpaceIsFreed) {
  SmallDisk disk(20);
  ASSERT_TRUE(disk.ok()) << disk.why();
  Fleet fleet("storage-full");
  const int metrics_port = FreePort();
  const std::string data_dir = disk.path() + "/broker-data";
  Process& broker = fleet.StartBroker(
      BrokerArgs({"--data-dir", data_dir, "--metrics-listen", "127.0.0.1:" + std::to_string(metrics_port)}));
  fleet.StartWorker("w", {"--instant", "--circuit", "c1"});
  fleet.WaitWorkerReady("w");
  auto client = fleet.Client();
  auto before = client->Submit(Request("before", "c1", Witness(256 << 10, 'b')), 10s);
  auto result = client->NextJobResult(before.job_seq(), zkfleet::testing::Scaled(20s));
  ASSERT_TRUE(result);
  EXPECT_EQ(result->state(), proto::JOB_STATE_SUCCEEDED);

  ASSERT_GT(disk.Fill(), 0u);
  // A SUBMIT now is answered at once, UNAVAILABLE, naming the full disk.
  const std::string witness = Witness(256 << 10, 'x');
  uint64_t correlation_id = 0;
  auto reply = SubmitOnce(*client, "during", witness, &correlation_id);
  ASSERT_TRUE(reply) << "no answer to a SUBMIT on a full disk; the broker " << (broker.running() ? "runs" : "exited");
  ASSERT_TRUE(reply->has_error()) << reply->DebugString();
  EXPECT_EQ(reply->correlation_id(), correlation_id);
  EXPECT_EQ(reply->error().kind(), proto::ERROR_KIND_UNAVAILABLE) << reply->error().message();
  EXPECT_EQ(reply->error().retry_after_ms(), 1000u);
  const std::string& message = reply->error().message();
  // The cause, without the broker's own paths (issue 47, item 10): its data
  // directory by its last component only.
  const std::string dir_name = std::filesystem::path(data_dir).filename().string();
  EXPECT_NE(message.find("the disk holding " + dir_name + " is full (ENOSPC)"), std::string::npos) << message;
  EXPECT_EQ(message.find(data_dir), std::string::npos) << message;
  EXPECT_NE(message.find("nothing of this request was accepted; retry with the same request id"), std::string::npos)
      << message;
  ASSERT_TRUE(broker.running()) << broker.Log();
  EXPECT_TRUE(broker.WaitForLog("journal write failed: the disk holding .* is full \\(ENOSPC\\)", 5s)) << broker.Log();

  auto status = fleet.Status();
  EXPECT_TRUE(status.unavailable());
  EXPECT_NE(status.unavailable_reason().find("ENOSPC"), std::string::npos) << status.unavailable_reason();
  EXPECT_GE(status.storage_faults(), 1u);
  EXPECT_EQ(Sample(metrics_port, "zkfleet_broker_unavailable"), 1);
  EXPECT_GE(Sample(metrics_port, "zkfleet_broker_storage_faults_total{kind=\"write\"}"), 1);

  // Still full a few probes later: refused again, still up.
  std::this_thread::sleep_for(2500ms);
  reply = SubmitOnce(*client, "during", witness, &correlation_id);
  ASSERT_TRUE(reply);
  ASSERT_TRUE(reply->has_error()) << reply->DebugString();
  EXPECT_EQ(reply->error().kind(), proto::ERROR_KIND_UNAVAILABLE) << reply->error().message();
  EXPECT_NE(reply->error().message().find("ENOSPC"), std::string::npos) << reply->error().message();
  ASSERT_TRUE(broker.running()) << broker.Log();
  EXPECT_TRUE(fleet.Status().unavailable());

  // Space freed: within a probe or two the broker takes work again, and the
  // refused request, sent again with its id, is a new job that is proved.
  disk.Free();
  ASSERT_TRUE(WaitUnavailable(fleet, false, 10s));
  EXPECT_TRUE(broker.WaitForLog("journal writable again", 5s)) << broker.Log();
  EXPECT_EQ(SampleWhen(metrics_port, "zkfleet_broker_unavailable", 0), 0);
  auto during = SubmitRetrying(*client, Request("during", "c1", witness), 20s);
  EXPECT_FALSE(during.duplicate());
  result = client->NextJobResult(during.job_seq(), zkfleet::testing::Scaled(30s));
  ASSERT_TRUE(result);
  EXPECT_EQ(result->state(), proto::JOB_STATE_SUCCEEDED) << result->error();
  auto after = SubmitRetrying(*client, Request("after", "c1", Witness(256 << 10, 'a')), 20s);
  result = client->NextJobResult(after.job_seq(), zkfleet::testing::Scaled(30s));
  ASSERT_TRUE(result);
  EXPECT_EQ(result->state(), proto::JOB_STATE_SUCCEEDED) << result->error();
  EXPECT_TRUE(broker.running());
}

// Issue 47, item 12: a broker given a new data directory on a full tmpfs died
// of SIGBUS (LMDB writes its lock file through a map; a full tmpfs has no
// page for it). It now says the disk is full and exits 1.
TEST(FleetStorageFaults, ANewJournalOnAFullDiskIsRefusedInWordsNotASigbus) {
  SmallDisk disk(8);
  ASSERT_TRUE(disk.ok()) << disk.why();
  ASSERT_GT(disk.Fill(), 0u);
  Fleet fleet("storage-full-new");
  Process& broker = fleet.LaunchBroker(BrokerArgs({"--data-dir", disk.path() + "/new-broker-data"}));
  const auto code = broker.WaitExit(zkfleet::testing::Scaled(20s));
  ASSERT_TRUE(code.has_value()) << broker.Log();
  EXPECT_EQ(*code, 1) << broker.Log();
  EXPECT_NE(broker.Log().find("is full (ENOSPC)"), std::string::npos) << broker.Log();
}

TEST(FleetStorageFaults, BrokerRestartedOnAFullDiskComesUpAndServesOnceThereIsSpace) {
  SmallDisk disk(20);
  ASSERT_TRUE(disk.ok()) << disk.why();
  Fleet fleet("storage-full-restart");
  const auto args = BrokerArgs({"--data-dir", disk.path() + "/broker-data"});
  Process* broker = &fleet.StartBroker(args);
  uint64_t queued_seq = 0;
  uint64_t first_epoch = 0;
  {
    auto client = fleet.Client();
    queued_seq = client->Submit(Request("queued", "c1", Witness(256 << 10, 'q')), 10s).job_seq();
    first_epoch = fleet.Status().broker_epoch();
  }
  broker->Signal(SIGTERM);
  ASSERT_EQ(broker->WaitExit(10s), 0);

  ASSERT_GT(disk.Fill(), 0u);
  broker = &fleet.StartBroker(args);  // fails the test unless it logs "broker serving"
  ASSERT_TRUE(broker->running()) << broker->Log();
  // Whether the new epoch's commit itself failed depends on the free pages
  // LMDB can reuse (on this journal it usually does fail); either way the
  // broker serves in the next epoch.
  const bool started_unavailable = broker->Log().find("cannot be written at start") != std::string::npos;
  RecordProperty("started_unavailable", started_unavailable ? "yes" : "no");
  auto status = fleet.Status();
  EXPECT_EQ(status.broker_epoch(), first_epoch + 1);
  if (started_unavailable) {
    EXPECT_TRUE(status.unavailable());
    EXPECT_NE(status.unavailable_reason().find("ENOSPC"), std::string::npos) << status.unavailable_reason();
    EXPECT_EQ(status.storage_faults(), 1u);
  }
  auto client = fleet.Client();
  const std::string witness = Witness(256 << 10, 'n');
  uint64_t correlation_id = 0;
  auto reply = SubmitOnce(*client, "new", witness, &correlation_id);
  ASSERT_TRUE(reply) << "no answer; the broker " << (broker->running() ? "runs" : "exited");
  ASSERT_TRUE(reply->has_error()) << reply->DebugString();
  EXPECT_EQ(reply->error().kind(), proto::ERROR_KIND_UNAVAILABLE) << reply->error().message();
  EXPECT_NE(reply->error().message().find("ENOSPC"), std::string::npos) << reply->error().message();
  std::this_thread::sleep_for(1500ms);
  ASSERT_TRUE(broker->running()) << broker->Log();

  disk.Free();
  ASSERT_TRUE(WaitUnavailable(fleet, false, 10s));
  fleet.StartWorker("w", {"--instant", "--circuit", "c1"});
  auto submitted = SubmitRetrying(*client, Request("new", "c1", witness), 20s);
  auto result = client->NextJobResult(submitted.job_seq(), zkfleet::testing::Scaled(30s));
  ASSERT_TRUE(result);
  EXPECT_EQ(result->state(), proto::JOB_STATE_SUCCEEDED) << result->error();
  // The job accepted before the restart was kept and is proved too.
  auto queued = client->Await(queued_seq, zkfleet::testing::Scaled(30s));
  EXPECT_EQ(queued.state(), proto::JOB_STATE_SUCCEEDED) << queued.error();

  // This life's epoch is durable: the next one is one more.
  broker->Signal(SIGTERM);
  ASSERT_EQ(broker->WaitExit(10s), 0);
  fleet.StartBroker(args);
  EXPECT_EQ(fleet.Status().broker_epoch(), first_epoch + 2);
}

}  // namespace
}  // namespace fleet_test
