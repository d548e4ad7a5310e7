#include "zkfleet/io/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "zkfleet/common/error.hpp"

namespace zkfleet::io {
namespace {

// Closes a file descriptor when it goes out of scope (the mapping outlives it).
struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

[[noreturn]] void ThrowErrno(const std::string& path, const char* what, int err) {
  const ErrorCode code = (err == ENOENT || err == ENOTDIR) ? ErrorCode::kNotFound : ErrorCode::kIo;
  throw Error(code, path + ": " + what + ": " + std::strerror(err));
}

}  // namespace

MappedFile MappedFile::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) ThrowErrno(path, "cannot open", errno);
  FdCloser closer{fd};

  struct stat st {};
  if (::fstat(fd, &st) != 0) ThrowErrno(path, "cannot stat", errno);
  if (!S_ISREG(st.st_mode)) {
    throw Error(ErrorCode::kIo, path + ": not a regular file");
  }

  MappedFile file;
  file.path_ = path;
  file.identity_ = engine::FileIdentity::OfDescriptor(fd, path);
  file.size_ = static_cast<size_t>(st.st_size);
  if (file.size_ == 0) return file;  // mmap of length 0 is an error; nothing to map

  void* addr = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
  if (addr == MAP_FAILED) ThrowErrno(path, "cannot mmap", errno);
  file.data_ = static_cast<const uint8_t*>(addr);
  // Every reader here reads the whole file (checks, then copies): start the
  // kernel's read-ahead of all of it now, so that a cold file streams in while
  // the first pages are being checked. Advice only: failure is harmless.
  ::madvise(addr, file.size_, MADV_WILLNEED);
  return file;
}

MappedFile::~MappedFile() { Reset(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      path_(std::move(other.path_)),
      identity_(std::exchange(other.identity_, {})) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    Reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    path_ = std::move(other.path_);
    identity_ = std::exchange(other.identity_, {});
  }
  return *this;
}

void MappedFile::Reset() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace zkfleet::io
