// Checking a whole journal before a broker starts on it, and salvaging what is
// intact from a damaged one (issue 47, item 7).
//
// Why a child process: LMDB maps its file; a damaged page (a pointer to a
// page past the file's end, a garbled branch) makes the reader fault
// (SIGBUS, SIGSEGV) rather than return an error. A broker that read such a
// journal died at every start, a crash loop. Here the records are read in a
// forked child and streamed back over a pipe: a fault kills the child, and
// the caller learns where it happened.
//
// The check: every record's checksum (format 2; journal.hpp) and every typed
// record (jobs, items, stubs, requests, meta) parsing. A witness's bytes are
// read (a store too damaged to read them fails the check) but not judged:
// their XXH3-128 is checked when their job is dispatched, failing that job
// alone.
//
// Thread-safety: call from a process without other threads (fork); zkbroker
// checks before it starts any, zkctl has none. Each call owns its child.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace zkfleet::storage {

struct JournalCheck {
  bool exists = false;   // the directory holds a store (data.mdb); nothing to check otherwise
  uint64_t records = 0;  // records read
  // Damage in plain words (the first few; `damaged` counts all). Empty: intact.
  std::vector<std::string> problems;
  uint64_t damaged = 0;
  bool ok() const { return damaged == 0; }
};

// Reads every record of the journal in `dir`, in a child process.
JournalCheck CheckJournal(const std::filesystem::path& dir);

struct SalvageReport {
  uint64_t records_copied = 0;
  uint64_t records_lost = 0;       // damaged, unreadable, or in a part of the store that could not be walked
  uint64_t witness_files_copied = 0;
  uint64_t jobs = 0;               // job records copied
  std::vector<std::string> problems;  // what was lost, in plain words (the first few)
};

// Copies every intact record of the journal in `from` (read only, never
// changed) into a new journal at `to` (must not exist yet), with the witness
// files its records name; the job index is rebuilt. Walks in child
// processes: one that faults is replaced by one that goes on after the last
// record received (the part of that database it could not pass is lost).
// Throws Error (kInvalidArgument: `to` exists; kIo) when it cannot start.
SalvageReport SalvageJournal(const std::filesystem::path& from, const std::filesystem::path& to);

}  // namespace zkfleet::storage
