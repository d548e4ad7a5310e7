#include "zkfleet/bellman/file_pages.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "zkfleet/common/error.hpp"

namespace zkfleet::bellman {

AtomicFile::AtomicFile(std::string path, std::string what, mode_t mode)
    : path_(std::move(path)), what_(std::move(what)), temp_(path_ + ".tmp-XXXXXX") {
  fd_ = ::mkostemp(temp_.data(), O_CLOEXEC);  // O_EXCL, 0600
  if (fd_ < 0) Fail("cannot create a temporary file next to it");
  if (::fchmod(fd_, mode) != 0) Fail("fchmod failed");
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_.c_str());
}

void AtomicFile::Truncate(uint64_t bytes) {
  if (::ftruncate(fd_, static_cast<off_t>(bytes)) != 0) Fail("ftruncate failed");
}

void AtomicFile::Write(const void* data, size_t bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (bytes > 0) {
    const ssize_t w = ::write(fd_, p, std::min<size_t>(bytes, size_t{1} << 30));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) Fail("write failed");
    p += w;
    bytes -= static_cast<size_t>(w);
  }
}

void AtomicFile::WriteAt(const void* data, uint64_t bytes, uint64_t offset) const {
  const auto* p = static_cast<const uint8_t*>(data);
  while (bytes > 0) {
    const ssize_t w = ::pwrite(fd_, p, std::min<uint64_t>(bytes, uint64_t{1} << 30), static_cast<off_t>(offset));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) Fail("write failed");
    p += w;
    bytes -= static_cast<uint64_t>(w);
    offset += static_cast<uint64_t>(w);
  }
}

void AtomicFile::WriteU32BE(uint32_t v) {
  const uint8_t b[4] = {static_cast<uint8_t>(v >> 24), static_cast<uint8_t>(v >> 16), static_cast<uint8_t>(v >> 8),
                        static_cast<uint8_t>(v)};
  Write(b, 4);
}

void AtomicFile::Commit() {
  if (::fdatasync(fd_) != 0) Fail("fdatasync failed");
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) Fail("close failed");
  if (::rename(temp_.c_str(), path_.c_str()) != 0) Fail("cannot rename " + temp_ + " into place");
  committed_ = true;
}

void AtomicFile::Fail(const std::string& step) const {
  throw Error(ErrorCode::kIo, "cannot write " + what_ + " " + path_ + ": " + step + ": " + std::strerror(errno));
}

void PopulatePages(std::span<const PageBlock> blocks, PageUse use, cpu::ThreadPool& pool) {
  constexpr uintptr_t kPage = 4096;
  constexpr uintptr_t kSlice = uintptr_t{8} << 20;
  struct Slice {
    uintptr_t begin, end;
  };
  std::vector<Slice> slices;
  for (const PageBlock& block : blocks) {
    // The whole pages inside the block: a neighbour's page is not ours to advise.
    const uintptr_t begin = (reinterpret_cast<uintptr_t>(block.data) + kPage - 1) & ~(kPage - 1);
    const uintptr_t end = (reinterpret_cast<uintptr_t>(block.data) + block.bytes) & ~(kPage - 1);
    if (end <= begin) continue;
    if (use == PageUse::kWrite) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
    for (uintptr_t at = begin; at < end; at += kSlice) slices.push_back({at, std::min(end, at + kSlice)});
  }
  const int advice = use == PageUse::kRead ? MADV_POPULATE_READ : MADV_POPULATE_WRITE;
  pool.RunTasks(slices.size(), [&](size_t i) {
    ::madvise(reinterpret_cast<void*>(slices[i].begin), slices[i].end - slices[i].begin, advice);
  });
}

}  // namespace zkfleet::bellman
