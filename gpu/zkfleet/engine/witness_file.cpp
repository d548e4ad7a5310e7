#include "zkfleet/engine/witness_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <span>

#include "zkfleet/common/error.hpp"

#ifdef ZKFLEET_HAVE_CUDA
#include "zkfleet/runtime/cuda_device.hpp"
#endif

namespace zkfleet::engine {

namespace {

#ifdef ZKFLEET_HAVE_CUDA
// The whole file in page-locked memory, or null when it cannot be opened or
// pinned (FromFile then reports, or reads it the ordinary way).
std::shared_ptr<cuda::PinnedBuffer> ReadPinned(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } close_fd{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size <= 0) return nullptr;
  const size_t size = static_cast<size_t>(st.st_size);
  std::shared_ptr<cuda::PinnedBuffer> buffer;
  try {
    buffer = std::make_shared<cuda::PinnedBuffer>(size, path + " (witness)");
  } catch (const std::exception&) {
    return nullptr;  // no page-locked memory: the ordinary read
  }
  auto* bytes = buffer->as<uint8_t>();
  size_t done = 0;
  while (done < size) {
    const ssize_t got = ::read(fd, bytes + done, size - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      throw Error(ErrorCode::kIo, "reading witness " + path + ": " + std::strerror(errno));
    }
    if (got == 0) throw Error(ErrorCode::kIo, "reading witness " + path + ": the file shrank while it was read");
    done += static_cast<size_t>(got);
  }
  return buffer;
}
#endif

}  // namespace

WitnessFile WitnessFile::Read(const std::string& path, Backend backend, int proofs) {
  WitnessFile file;
#ifdef ZKFLEET_HAVE_CUDA
  const bool cuda = backend == Backend::kCuda || backend == Backend::kAuto;
  if (cuda && proofs > 1 && CudaAvailable()) {
    if (auto pinned = ReadPinned(path)) {
      file.witness_ = Witness::View(std::span<const uint8_t>(pinned->as<uint8_t>(), pinned->bytes()), path);
      file.storage_ = std::move(pinned);
      return file;
    }
  }
#else
  (void)backend;
  (void)proofs;
#endif
  file.witness_ = Witness::FromFile(path);
  return file;
}

}  // namespace zkfleet::engine
