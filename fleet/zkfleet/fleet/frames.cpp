#include "zkfleet/fleet/frames.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "zkfleet/common/error.hpp"

namespace zkfleet::fleet {
namespace {

void FreeString(void* /*data*/, void* hint) { delete static_cast<std::string*>(hint); }

struct Mapping {
  void* base;
  size_t size;
};

void FreeMapping(void* /*data*/, void* hint) {
  auto* mapping = static_cast<Mapping*>(hint);
  munmap(mapping->base, mapping->size);
  delete mapping;
}

}  // namespace

zmq::message_t FrameFromString(std::string bytes) {
  if (bytes.size() <= 64) return zmq::message_t(bytes.data(), bytes.size());  // libzmq keeps small ones inline
  auto* owned = new std::string(std::move(bytes));
  return zmq::message_t(owned->data(), owned->size(), FreeString, owned);
}

std::optional<zmq::message_t> FrameFromFile(const std::filesystem::path& path, size_t size) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) return std::nullopt;
  if (fd < 0) throw Error(ErrorCode::kIo, "cannot open " + path.string() + ": " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != size) {
    close(fd);
    throw Error(ErrorCode::kIo, path.string() + " is " + std::to_string(st.st_size) + " bytes, its record says " +
                                    std::to_string(size));
  }
  if (size == 0) {
    close(fd);
    return zmq::message_t();
  }
  void* base = mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  int err = errno;
  close(fd);
  if (base == MAP_FAILED) throw Error(ErrorCode::kIo, "cannot map " + path.string() + ": " + std::strerror(err));
  auto* mapping = new Mapping{base, size};
  return zmq::message_t(base, size, FreeMapping, mapping);
}

zmq::message_t ShareFrame(zmq::message_t& frame) {
  zmq::message_t copy;
  copy.copy(frame);
  return copy;
}

bool SendFrames(zmq::socket_t& socket, Frames& frames, zmq::send_flags flags) {
  for (size_t i = 0; i < frames.size(); ++i) {
    auto more = i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none;
    if (!socket.send(frames[i], more | flags)) return false;
  }
  return true;
}

}  // namespace zkfleet::fleet
