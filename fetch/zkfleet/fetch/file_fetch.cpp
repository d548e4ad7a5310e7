// file:// witnesses: pread straight into the caller's buffer, hashing each
// chunk right after it is read (while it is still in cache).
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "zkfleet/fetch/attempt.hpp"
#include "zkfleet/fetch/sha256.hpp"
#include "zkfleet/wire/witness_ref.hpp"

namespace zkfleet::fetch::internal {

namespace {

constexpr size_t kChunk = 4u << 20;

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Opens `relative` beneath the directory `root` with openat2's
// RESOLVE_BENEATH: no "..", absolute symlink or magic link may lead the open
// itself out of the directory (so nothing outside is even opened: no device,
// no FIFO). -1 with errno; errno ENOSYS (or EPERM from a seccomp filter that
// does not know the call) means the kernel cannot, and the caller opens by
// name, relying on the real-path check after the open.
int OpenBeneath(const std::string& root, const std::string& relative, int flags) {
  Fd dir;
  dir.fd = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir.fd < 0) return -1;
  open_how how{};
  how.flags = static_cast<uint64_t>(flags);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  return static_cast<int>(::syscall(SYS_openat2, dir.fd, relative.c_str(), &how, sizeof how));
}

}  // namespace

void (*after_file_chunk_for_tests)(uint64_t bytes_so_far) = nullptr;

Attempt FetchFile(const FetchConfig& config, const FetchRequest& request, std::span<uint8_t> into,
                  const std::atomic<bool>* cancel) {
  Attempt out;
  const std::string name = wire::RedactUrl(request.url);
  auto fail = [&](FetchStatus status, std::string why) {
    out.status = status;
    out.why = name + ": " + why;
    return out;
  };
  const auto local = config.allow().Local(request.url);
  if (!local) return fail(FetchStatus::kRefused, "under no file:// --fetch-allow prefix");

  // The allowed directory first: missing (a share not mounted) is this
  // worker's trouble, not a missing object.
  char* root_real = ::realpath(local->root.c_str(), nullptr);
  if (root_real == nullptr) {
    return fail(FetchStatus::kTransient, "the allowed directory " + local->root + " cannot be resolved: " +
                                             std::strerror(errno));
  }
  std::string root(root_real);
  ::free(root_real);
  if (root.back() != '/') root.push_back('/');

  Fd file;
  // O_NONBLOCK: a FIFO planted under the prefix must not hang the opener
  // (no effect on regular files; anything else is refused below).
  const int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
  file.fd = OpenBeneath(local->root, local->path.substr(local->root.size()), flags);
  if (file.fd < 0 && errno == EXDEV) {
    return fail(FetchStatus::kRefused, "resolves to a file outside the allowed directory " + local->root);
  }
  if (file.fd < 0 && (errno == ENOSYS || errno == EPERM)) file.fd = ::open(local->path.c_str(), flags);
  if (file.fd < 0) {
    const int err = errno;
    // Missing or unreadable is the job's reference; EIO and friends are the disk's.
    const bool jobs_fault = err == ENOENT || err == ENOTDIR || err == EACCES || err == ELOOP || err == EISDIR;
    return fail(jobs_fault ? FetchStatus::kClientError : FetchStatus::kTransient,
                std::string("cannot be opened: ") + std::strerror(err));
  }
  // The real path of what was opened, not of the name: a symlink (or a
  // renamed directory) after the check cannot lead out of the prefix.
  char real[PATH_MAX + 1];
  const std::string proc = "/proc/self/fd/" + std::to_string(file.fd);
  const ssize_t length = ::readlink(proc.c_str(), real, PATH_MAX);
  if (length <= 0) return fail(FetchStatus::kTransient, std::string("readlink ") + proc + ": " + std::strerror(errno));
  const std::string real_path(real, static_cast<size_t>(length));
  if (real_path.compare(0, root.size(), root) != 0) {
    return fail(FetchStatus::kRefused, "resolves to a file outside the allowed directory " + local->root);
  }
  struct stat st;
  if (::fstat(file.fd, &st) != 0) return fail(FetchStatus::kTransient, std::string("fstat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail(FetchStatus::kClientError, "not a regular file");
  if (static_cast<uint64_t>(st.st_size) != request.size) {
    // Its real size is not named (the client reads this).
    return fail(FetchStatus::kClientError, "wrong size: not the " + std::to_string(request.size) + " bytes the job says");
  }
  ::posix_fadvise(file.fd, 0, 0, POSIX_FADV_SEQUENTIAL);

  Sha256 sha;
  uint64_t offset = 0;
  while (offset < request.size) {
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
      out.bytes = offset;
      return fail(FetchStatus::kCancelled, "cancelled");
    }
    const size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, request.size - offset));
    const ssize_t got = ::pread(file.fd, into.data() + offset, want, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      out.bytes = offset;
      return fail(FetchStatus::kTransient, std::string("read: ") + std::strerror(errno));
    }
    if (got == 0) {
      out.bytes = offset;
      return fail(FetchStatus::kTransient, "the file shrank while being read (" + std::to_string(offset) + " of " +
                                               std::to_string(request.size) + " bytes)");
    }
    sha.Update(into.subspan(offset, static_cast<size_t>(got)));
    offset += static_cast<uint64_t>(got);
    if (after_file_chunk_for_tests != nullptr) after_file_chunk_for_tests(offset);
  }
  return CheckDigest(request, sha.Finish(), offset);
}

}  // namespace zkfleet::fetch::internal
