#include "zkfleet/fleet/frames.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <memory>

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

zmq::message_t FrameFromMapping(void* base, size_t size) {
  return zmq::message_t(base, size, FreeMapping, new Mapping{base, size});
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
  return FrameFromMapping(base, size);
}

namespace {

// The hint of a chunk frame: keeps the whole frame alive.
void ReleaseParent(void* /*data*/, void* hint) { delete static_cast<std::shared_ptr<zmq::message_t>*>(hint); }

}  // namespace

WitnessFrames ChunkWitness(zmq::message_t whole, size_t chunk_bytes) {
  WitnessFrames witness;
  if (whole.size() <= chunk_bytes) {
    witness.chunks.push_back(std::move(whole));
    return witness;
  }
  auto parent = std::make_shared<zmq::message_t>(std::move(whole));
  auto* base = static_cast<uint8_t*>(parent->data());
  const size_t size = parent->size();
  for (size_t offset = 0; offset < size; offset += chunk_bytes) {
    const size_t length = std::min(chunk_bytes, size - offset);
    witness.chunks.emplace_back(base + offset, length, ReleaseParent, new std::shared_ptr<zmq::message_t>(parent));
  }
  return witness;
}

Frames FlattenWitnesses(std::vector<WitnessFrames> witnesses) {
  Frames frames;
  for (WitnessFrames& witness : witnesses) {
    for (zmq::message_t& chunk : witness.chunks) frames.push_back(std::move(chunk));
  }
  return frames;
}

std::optional<std::vector<WitnessFrames>> SplitWitnesses(Frames frames, const std::vector<uint64_t>& sizes,
                                                         std::string* why) {
  std::vector<WitnessFrames> witnesses(sizes.size());
  size_t next = 0;
  for (size_t p = 0; p < sizes.size(); ++p) {
    if (sizes[p] == 0) {
      *why = "witness " + std::to_string(p) + " is empty";
      return std::nullopt;
    }
    uint64_t got = 0;
    while (got < sizes[p]) {
      if (next == frames.size()) {
        *why = "witness " + std::to_string(p) + " announced " + std::to_string(sizes[p]) + " bytes but only " +
               std::to_string(got) + " followed";
        return std::nullopt;
      }
      zmq::message_t& frame = frames[next++];
      if (frame.size() == 0 || frame.size() > kMaxWitnessChunkBytes) {
        *why = "witness frame of " + std::to_string(frame.size()) + " bytes (frames must hold 1 to " +
               std::to_string(kMaxWitnessChunkBytes) + " bytes)";
        return std::nullopt;
      }
      got += frame.size();
      witnesses[p].chunks.push_back(std::move(frame));
    }
    if (got != sizes[p]) {
      *why = "witness " + std::to_string(p) + " announced " + std::to_string(sizes[p]) + " bytes; its frames hold " +
             std::to_string(got) + " (a frame straddles two witnesses)";
      return std::nullopt;
    }
  }
  if (next != frames.size()) {
    *why = std::to_string(frames.size() - next) + " frames beyond the announced witnesses";
    return std::nullopt;
  }
  return witnesses;
}

std::vector<std::string_view> ChunkViews(const WitnessFrames& witness) {
  std::vector<std::string_view> views;
  views.reserve(witness.chunks.size());
  for (const zmq::message_t& chunk : witness.chunks) views.push_back(FrameView(chunk));
  return views;
}

std::vector<std::span<const uint8_t>> ByteSpans(const WitnessFrames& witness) {
  std::vector<std::span<const uint8_t>> spans;
  spans.reserve(witness.chunks.size());
  for (const zmq::message_t& chunk : witness.chunks) {
    spans.emplace_back(static_cast<const uint8_t*>(chunk.data()), chunk.size());
  }
  return spans;
}

bool ReceiveMultipart(zmq::socket_t& socket, zmq::message_t& first, Frames& rest, zmq::recv_flags flags) {
  rest.clear();
  if (!socket.recv(first, flags)) return false;
  bool more = first.more();
  while (more) {
    zmq::message_t part;
    if (!socket.recv(part, zmq::recv_flags::none)) break;
    more = part.more();
    rest.push_back(std::move(part));
  }
  return true;
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
