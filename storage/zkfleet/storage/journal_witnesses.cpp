// Journal (journal.hpp), the witness files: a witness of at least
// --witness-file-threshold bytes is a file of its own under blobs/ (written
// with pwritev, fsynced with the turn, its size and XXH3-128 hash in the
// store), a smaller one a record; read back mapped (no copy) and checked
// against the recorded hash. Thread-safety: as Journal (one thread).
#include "zkfleet/storage/journal.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include <spdlog/spdlog.h>

#include "zkfleet/common/error.hpp"
#include "zkfleet/storage/digest.hpp"
#include "zkfleet/storage/journal_detail.hpp"
#include "zkfleet/storage/lmdb_store.hpp"
#include "zkfleet/wire/public_digest.hpp"

namespace zkfleet::storage {

namespace {

using detail::AppendBigEndian;
using detail::ItemKey;
using detail::ReadBigEndian;

constexpr size_t kHashBytes = 16;  // XXH3-128, canonical (big-endian) form

// "a FIFO", "a directory", ... for a file that is not a regular one.
std::string FileTypeName(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

}  // namespace

StoredWitness StoredWitness::Copied(std::string bytes) {
  StoredWitness witness;
  witness.copy_ = std::move(bytes);
  return witness;
}

StoredWitness StoredWitness::Mapped(void* base, size_t size) {
  StoredWitness witness;
  witness.mapped_ = true;
  witness.base_ = base;
  witness.mapped_size_ = size;
  return witness;
}

StoredWitness::StoredWitness(StoredWitness&& other) noexcept
    : mapped_(other.mapped_), copy_(std::move(other.copy_)), base_(other.base_), mapped_size_(other.mapped_size_) {
  other.base_ = nullptr;
  other.mapped_size_ = 0;
}

StoredWitness& StoredWitness::operator=(StoredWitness&& other) noexcept {
  if (this != &other) {
    Unmap();
    mapped_ = other.mapped_;
    copy_ = std::move(other.copy_);
    base_ = other.base_;
    mapped_size_ = other.mapped_size_;
    other.base_ = nullptr;
    other.mapped_size_ = 0;
  }
  return *this;
}

StoredWitness::~StoredWitness() { Unmap(); }

void StoredWitness::Unmap() {
  if (base_ && mapped_size_ > 0) munmap(base_, mapped_size_);
  base_ = nullptr;
  mapped_size_ = 0;
}

std::string_view StoredWitness::bytes() const {
  if (mapped_) return {static_cast<const char*>(base_), mapped_size_};
  return copy_;
}

StoredWitness::Mapping StoredWitness::ReleaseMapping() {
  Mapping mapping{base_, mapped_size_};
  base_ = nullptr;
  mapped_size_ = 0;
  return mapping;
}


std::filesystem::path Journal::BlobPath(uint64_t job_seq, uint32_t partition) const {
  return options_.dir / "blobs" / (std::to_string(job_seq) + "-" + std::to_string(partition));
}

void Journal::PutWitness(uint64_t job_seq, uint32_t partition, std::string_view bytes) {
  PutWitness(job_seq, partition, std::span<const std::string_view>(&bytes, 1));
}

void Journal::PutWitness(uint64_t job_seq, uint32_t partition, std::span<const std::string_view> chunks) {
  uint64_t total = 0;
  for (std::string_view chunk : chunks) total += chunk.size();
  std::string key = ItemKey(job_seq, partition);
  // Over the received chunks, before they are written: what ReadWitness
  // checks the stored bytes against.
  const std::string hash = Digest128().Add(chunks).Finish();
  if (total < options_.blob_threshold) {
    std::string bytes;
    bytes.reserve(total);
    for (std::string_view chunk : chunks) bytes.append(chunk);
    Put(kWitnesses, key, bytes);
    Put(kWitnessHashes, key, hash);
    stats_.witness_bytes_written += total;
    return;
  }
  // A large witness is written once, from the received frames, to its own file.
  std::filesystem::path path = BlobPath(job_seq, partition);
  // O_NONBLOCK | O_NOFOLLOW: a FIFO in its place fails at once (ENXIO)
  // instead of blocking the broker's loop until a reader comes; a link is
  // not followed out of the blob directory.
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW, 0640);
  if (fd < 0) Fail("creating the witness file " + path.string(), errno);
  blobs_written_.push_back({path, key});  // Abort() removes it, even half written
  std::vector<iovec> left;
  for (std::string_view chunk : chunks) {
    if (chunk.size() > 0) left.push_back({const_cast<char*>(chunk.data()), chunk.size()});
  }
  size_t first = 0;
  while (first < left.size()) {
    const int count = static_cast<int>(std::min<size_t>(left.size() - first, IOV_MAX));
    ssize_t n = writev(fd, left.data() + first, count);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n == 0 ? ENOSPC : errno;  // no progress: nothing more fits
      close(fd);
      Fail("writing the witness file " + path.string(), err);
    }
    // Skip what was written: whole buffers, then part of the next.
    size_t done = static_cast<size_t>(n);
    while (first < left.size() && done >= left[first].iov_len) done -= left[first++].iov_len;
    if (done > 0) {
      left[first].iov_base = static_cast<char*>(left[first].iov_base) + done;
      left[first].iov_len -= done;
    }
  }
  // Start the writeback now: by the commit's fdatasync most of it is done.
  if (options_.sync != SyncMode::kNone) (void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
  blob_fds_to_sync_.push_back(fd);
  ++stats_.blob_files_written;
  stats_.witness_bytes_written += total;
  std::string size;
  AppendBigEndian(size, total, 8);
  Put(kWitnessFiles, key, size);
  Put(kWitnessHashes, key, hash);
}

void Journal::DeleteWitness(uint64_t job_seq, uint32_t partition) {
  std::string key = ItemKey(job_seq, partition);
  Del(kWitnessHashes, key);
  if (Del(kWitnesses, key)) return;
  if (Del(kWitnessFiles, key)) blobs_to_unlink_.push_back(BlobPath(job_seq, partition));
}

std::optional<StoredWitness> Journal::ReadWitness(uint64_t job_seq, uint32_t partition, std::string* fault) {
  fault->clear();
  std::string key = ItemKey(job_seq, partition);
  // Recorded when it was written; absent for a witness an older zkbroker wrote.
  std::optional<std::string> recorded_hash;
  if (auto hash = Get(kWitnessHashes, key)) {
    if (hash->size() != kHashBytes) {
      *fault = "its hash record in the journal is damaged (" + std::to_string(hash->size()) + " bytes, not " +
               std::to_string(kHashBytes) + ")";
      return std::nullopt;
    }
    recorded_hash = std::string(*hash);
  }
  auto mismatch = [&](const std::string& what, const std::string& read_hash) {
    *fault = what + " do not match the XXH3-128 hash recorded when it was written (recorded " + wire::DigestHex(*recorded_hash) +
             ", read " + wire::DigestHex(read_hash) + "): they changed on the disk after the broker accepted them";
  };
  if (auto inline_bytes = Get(kWitnesses, key)) {
    if (recorded_hash) {
      std::string read_hash = Digest128Of(inline_bytes->data(), inline_bytes->size());
      if (read_hash != *recorded_hash) {
        mismatch("the " + std::to_string(inline_bytes->size()) + " bytes stored for it in " +
                     (options_.dir / "data.mdb").string(),
                 read_hash);
        return std::nullopt;
      }
    }
    return StoredWitness::Copied(std::string(*inline_bytes));
  }
  auto size_bytes = Get(kWitnessFiles, key);
  if (!size_bytes) {
    *fault = "the journal holds no witness for it, neither in its store nor as a witness file";
    return std::nullopt;
  }
  if (size_bytes->size() != 8) {
    *fault = "its witness file record in the journal is damaged (" + std::to_string(size_bytes->size()) +
             " bytes, not 8)";
    return std::nullopt;
  }
  const uint64_t recorded_size = ReadBigEndian(size_bytes->data(), 8);
  const std::filesystem::path path = BlobPath(job_seq, partition);
  // Nothing that can block the broker's loop: a FIFO or a device put where a
  // witness file was opens at once (O_NONBLOCK) and is refused below, as is a
  // symbolic link (O_NOFOLLOW: ELOOP).
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  if (fd < 0) {
    const int err = errno;
    if (err == EMFILE || err == ENFILE || err == ENOMEM) {
      throw Error(ErrorCode::kResourceExhausted,
                  "journal: " + ExplainStorageError(options_.dir, err, options_.map_bytes) + " while opening " +
                      path.string());
    }
    *fault = err == ENOENT ? "its witness file " + path.string() +
                                 " is missing (deleted, or a data directory restored from an inconsistent copy)"
                           : "its witness file " + path.string() + " cannot be opened: " + std::strerror(err) + " (" +
                                 ErrnoName(err) + ")";
    return std::nullopt;
  }
  // The size first: a mapping past the end of the file would fault (SIGBUS)
  // on the first read there.
  auto size_fault = [&](const char* when) -> bool {
    struct stat st {};
    if (fstat(fd, &st) != 0) {
      *fault = "its witness file " + path.string() + " cannot be examined (fstat): " + std::strerror(errno);
      return true;
    }
    if (!S_ISREG(st.st_mode)) {
      *fault = "its witness file " + path.string() + " is not a regular file (" + FileTypeName(st.st_mode) +
               "): something other than the broker put it there";
      return true;
    }
    const auto actual = static_cast<uint64_t>(st.st_size);
    if (actual == recorded_size) return false;
    *fault = "its witness file " + path.string() + " is " + std::to_string(actual) + " bytes" + when + ", but " +
             std::to_string(recorded_size) + " were recorded when it was written (" +
             (actual < recorded_size ? "truncated" : "longer: overwritten or appended to") + ")";
    return true;
  };
  if (size_fault("")) {
    close(fd);
    return std::nullopt;
  }
  if (recorded_size == 0) {
    close(fd);
    return StoredWitness::Mapped(nullptr, 0);
  }
  void* base = mmap(nullptr, recorded_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  if (base == MAP_FAILED) {
    const int err = errno;
    close(fd);
    if (err == ENOMEM) {
      throw Error(ErrorCode::kResourceExhausted,
                  "journal: " + ExplainStorageError(options_.dir, err, options_.map_bytes) + " while mapping " +
                      path.string());
    }
    *fault = "its witness file " + path.string() + " cannot be mapped: " + std::strerror(err);
    return std::nullopt;
  }
  // It is read to be sent anyway: checking it here costs one pass over pages
  // MAP_POPULATE has just brought in.
  if (recorded_hash) {
    std::string read_hash = Digest128Of(base, recorded_size);
    if (read_hash != *recorded_hash) {
      munmap(base, recorded_size);
      close(fd);
      mismatch("the bytes of its witness file " + path.string(), read_hash);
      return std::nullopt;
    }
  }
  // Truncated while it was being read: what was read may have been zeros.
  if (size_fault(" now")) {
    munmap(base, recorded_size);
    close(fd);
    return std::nullopt;
  }
  close(fd);
  return StoredWitness::Mapped(base, recorded_size);
}

}  // namespace zkfleet::storage
