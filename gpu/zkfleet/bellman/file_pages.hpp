// Two host-side file and page chores that the .params loader/writer
// (parameters.cpp) and the decoded image (decoded_image.cpp) share.
//
// AtomicFile: a file written under a temporary name beside its target and
// renamed over it on Commit(), after an fdatasync: readers see the old file or
// the whole new one, never a part. The temporary is removed when Commit() is
// not reached (an exception, a full disk). Errors are kIo naming the target,
// `what` it is ("decoded image") and the step. Not thread-safe, except
// WriteAt (pwrite) from several threads at distinct offsets.
//
// PopulatePages: the pages of a few large blocks faulted in ahead of use, in
// parallel 8 MiB slices on a pool: read in from a mapped file (MADV_POPULATE_READ)
// or allocated and zeroed (MADV_POPULATE_WRITE, huge pages asked for first).
// Advice only: on a kernel without it, the pages fault as they are touched.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "zkfleet/runtime/thread_pool.hpp"

namespace zkfleet::bellman {

class AtomicFile {
 public:
  // Creates the temporary (O_EXCL) with `mode` permissions.
  AtomicFile(std::string path, std::string what, mode_t mode);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void Truncate(uint64_t bytes);                                  // sets the size (ftruncate)
  void Write(const void* data, size_t bytes);                     // at the current offset
  void WriteAt(const void* data, uint64_t bytes, uint64_t offset) const;  // pwrite
  void WriteU32BE(uint32_t v);
  void Commit();  // fdatasync, close, rename over the target

  [[noreturn]] void Fail(const std::string& step) const;  // throws kIo with errno's text

 private:
  std::string path_, what_, temp_;
  int fd_ = -1;
  bool committed_ = false;
};

struct PageBlock {
  uint8_t* data;
  size_t bytes;
};

enum class PageUse { kRead, kWrite };

void PopulatePages(std::span<const PageBlock> blocks, PageUse use, cpu::ThreadPool& pool);

}  // namespace zkfleet::bellman
