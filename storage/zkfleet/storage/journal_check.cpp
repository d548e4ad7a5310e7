#include "zkfleet/storage/journal_check.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>

#include <spdlog/spdlog.h>

#include "journal.pb.h"
#include "zkfleet/common/error.hpp"
#include "zkfleet/storage/journal.hpp"

namespace zkfleet::storage {
namespace {

constexpr size_t kProblemsKept = 8;
// A walk that faults is started again after the last record it sent; one
// that faults again without sending a record skips the rest of that
// database. At most this many walks per call.
constexpr int kMostWalks = 64;

// ---- the child's stream: frames on a pipe
enum Frame : uint8_t { kRecord = 1, kEnd = 2, kFailed = 3 };

bool WriteAll(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}
bool ReadAll(int fd, void* data, size_t size) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    ssize_t n = read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}
bool WriteBytes(int fd, std::string_view bytes) {
  const uint32_t size = static_cast<uint32_t>(bytes.size());
  return WriteAll(fd, &size, sizeof size) && WriteAll(fd, bytes.data(), bytes.size());
}
bool ReadBytes(int fd, std::string* bytes) {
  uint32_t size = 0;
  if (!ReadAll(fd, &size, sizeof size)) return false;
  bytes->resize(size);
  return ReadAll(fd, bytes->data(), size);
}

// One record as the walk sent it.
struct Walked {
  unsigned db = 0;
  std::string key;
  bool intact = true;    // its checksum matched (or it has none: a witness's bytes)
  std::string payload;   // when sent
};

// How a walk ended.
struct WalkEnd {
  bool complete = false;
  std::string why;  // when not complete
};

// The child: opens `dir` read-only and sends every record from (from_db,
// after); a witness's bytes only `with_witnesses` (salvage copies them; the
// check leaves them to their hashes).
[[noreturn]] void WalkInChild(int fd, const std::filesystem::path& dir, unsigned from_db, const std::string& after,
                              bool with_witnesses) {
  // A damaged page faults here: the child dies of the signal (the parent
  // reports it), with no core file and no sanitizer report of its own.
  struct sigaction fault{};
  fault.sa_handler = SIG_DFL;
  sigemptyset(&fault.sa_mask);
  sigaction(SIGSEGV, &fault, nullptr);
  sigaction(SIGBUS, &fault, nullptr);
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  auto sends_payload = [&](unsigned db) { return with_witnesses || Journal::database_name(db) != "witnesses"; };
  int code = 0;
  try {
    JournalOptions options;
    options.dir = dir;
    options.read_only = true;
    auto journal = Journal::Open(options);
    bool ok = true;
    journal->ForEachRecord(from_db, after, [&](const Journal::RecordView& record) {
      if (!ok) return;
      const uint8_t head[3] = {kRecord, static_cast<uint8_t>(record.db), static_cast<uint8_t>(record.payload ? 1 : 0)};
      ok = WriteAll(fd, head, sizeof head) && WriteBytes(fd, record.key) &&
           WriteBytes(fd, record.payload && sends_payload(record.db) ? *record.payload : std::string_view());
    });
    const uint8_t end = kEnd;
    if (!ok || !WriteAll(fd, &end, 1)) code = 2;
  } catch (const std::exception& e) {
    const uint8_t failed = kFailed;
    (void)(WriteAll(fd, &failed, 1) && WriteBytes(fd, e.what()));
    code = 1;
  }
  _exit(code);
}

// Runs one walk in a child; `visit` sees each record as it arrives.
WalkEnd Walk(const std::filesystem::path& dir, unsigned from_db, const std::string& after, bool with_witnesses,
             const std::function<void(Walked&&)>& visit) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    throw Error(ErrorCode::kIo, std::string("journal check: cannot make a pipe: ") + std::strerror(errno));
  }
  const pid_t child = fork();
  if (child < 0) {
    close(fds[0]);
    close(fds[1]);
    throw Error(ErrorCode::kIo, std::string("journal check: cannot fork: ") + std::strerror(errno));
  }
  if (child == 0) {
    close(fds[0]);
    WalkInChild(fds[1], dir, from_db, after, with_witnesses);
  }
  close(fds[1]);
  WalkEnd end;
  std::string failure;
  for (;;) {
    uint8_t type = 0;
    if (!ReadAll(fds[0], &type, 1)) break;
    if (type == kEnd) {
      end.complete = true;
      break;
    }
    if (type == kFailed) {
      (void)ReadBytes(fds[0], &failure);
      break;
    }
    uint8_t rest[2];
    Walked record;
    std::string payload;
    if (type != kRecord || !ReadAll(fds[0], rest, 2) || !ReadBytes(fds[0], &record.key) ||
        !ReadBytes(fds[0], &payload)) {
      break;
    }
    record.db = rest[0];
    record.intact = rest[1] != 0;
    record.payload = std::move(payload);
    visit(std::move(record));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (end.complete && WIFEXITED(status) && WEXITSTATUS(status) == 0) return end;
  end.complete = false;
  if (WIFSIGNALED(status)) {
    end.why = std::string("reading the store killed its reader (") + strsignal(WTERMSIG(status)) +
              "): its pages are damaged";
  } else if (!failure.empty()) {
    end.why = failure;
  } else {
    end.why = "the reader stopped early (exit status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
              ")";
  }
  return end;
}

// Why a record of the journal in `dir` cannot be used, in plain words: its
// checksum does not match, or it passed and still is not what its database
// holds. nullopt when it is sound.
std::optional<std::string> RecordProblem(const std::filesystem::path& dir, const Walked& record) {
  const std::string_view db = Journal::database_name(record.db);
  if (!record.intact) return DamagedRecord(dir, db, record.key);
  auto parses = [&](auto message) { return message.ParseFromString(record.payload); };
  bool ok = true;
  if (db == "jobs") ok = parses(journal::Job());
  if (db == "items") ok = parses(journal::Item());
  if (db == "stubs") ok = parses(journal::Stub());
  if (db == "requests") ok = parses(journal::Request());
  if (db == "meta" && record.key == "meta") ok = parses(journal::Meta());
  if (ok) return std::nullopt;
  return "journal " + dir.string() + ": a record of '" + std::string(db) + "' does not parse";
}

void Note(std::vector<std::string>& problems, std::string problem) {
  if (problems.size() < kProblemsKept) problems.push_back(std::move(problem));
}

}  // namespace

JournalCheck CheckJournal(const std::filesystem::path& dir) {
  JournalCheck check;
  std::error_code error;
  check.exists = std::filesystem::exists(dir / "data.mdb", error);
  if (!check.exists) return check;
  // Witness bytes are read too (a page that points past the store faults
  // there), not judged: their hashes fail their own job when dispatched.
  const WalkEnd end = Walk(dir, 0, "", /*with_witnesses=*/true, [&](Walked&& record) {
    ++check.records;
    if (std::optional<std::string> problem = RecordProblem(dir, record)) {
      ++check.damaged;
      Note(check.problems, std::move(*problem));
    }
  });
  if (!end.complete) {
    ++check.damaged;
    Note(check.problems, "journal " + dir.string() + ": " + end.why + " (after " + std::to_string(check.records) +
                             " records)");
  }
  return check;
}

SalvageReport SalvageJournal(const std::filesystem::path& from, const std::filesystem::path& to) {
  std::error_code error;
  if (std::filesystem::exists(to, error)) {
    throw Error(ErrorCode::kInvalidArgument, "journal salvage: " + to.string() +
                                                 " exists; salvage writes a new journal into a directory that does "
                                                 "not exist yet");
  }
  if (!std::filesystem::exists(from / "data.mdb", error)) {
    throw Error(ErrorCode::kNotFound, "journal salvage: " + from.string() + " holds no journal (no data.mdb)");
  }
  std::filesystem::create_directories(to / "blobs");
  JournalOptions options;
  options.dir = to;
  auto salvaged = Journal::Open(options);
  SalvageReport report;
  unsigned db = 0;
  std::string after;
  for (int walks = 0; walks < kMostWalks; ++walks) {
    bool progressed = false;
    const WalkEnd end = Walk(from, db, after, /*with_witnesses=*/true, [&](Walked&& record) {
      db = record.db;
      after = record.key;
      progressed = true;
      const std::string_view name = Journal::database_name(record.db);
      if (std::optional<std::string> problem = RecordProblem(from, record)) {
        ++report.records_lost;
        Note(report.problems, std::move(*problem));
        return;
      }
      if (name == "job_index") return;  // rebuilt from the jobs
      if (name == "witness_files" && record.key.size() == 12) {
        uint64_t seq = 0;
        uint32_t partition = 0;
        for (int i = 0; i < 8; ++i) seq = (seq << 8) | static_cast<unsigned char>(record.key[static_cast<size_t>(i)]);
        for (int i = 8; i < 12; ++i) {
          partition = (partition << 8) | static_cast<unsigned char>(record.key[static_cast<size_t>(i)]);
        }
        const std::string file = std::to_string(seq) + "-" + std::to_string(partition);
        std::error_code copy_error;
        std::filesystem::copy_file(from / "blobs" / file, to / "blobs" / file, copy_error);
        if (copy_error) {
          Note(report.problems, "witness file blobs/" + file + " could not be copied: " + copy_error.message() +
                                    " (its job fails as a storage fault when dispatched)");
        } else {
          ++report.witness_files_copied;
        }
      }
      if (name == "jobs") ++report.jobs;
      salvaged->RestoreRecord(record.db, record.key, record.payload);
      ++report.records_copied;
    });
    if (end.complete) break;
    Note(report.problems, "database '" + std::string(Journal::database_name(db)) + "' after record " +
                              std::to_string(report.records_copied + report.records_lost) + ": " + end.why);
    if (!progressed) {
      // Faulted again where the last walk did: what is left of this database is lost.
      ++report.records_lost;
      ++db;
      after.clear();
      if (db >= Journal::database_count()) break;
    }
  }
  salvaged->Commit();
  salvaged->RebuildJobIndexIfMissing();
  salvaged->Commit();
  return report;
}

}  // namespace zkfleet::storage
