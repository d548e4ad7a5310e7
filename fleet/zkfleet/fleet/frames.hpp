// Witness frames: a witness (.wtns file) travels as its own ZeroMQ frame after
// the Envelope, never inside a protobuf message, so that nobody on the way
// parses or copies it. These helpers make such frames without copying bytes:
// from a string the caller gives up, from a mapped file (the broker's journal
// blobs), and shared copies of a frame that keep one buffer alive with a
// reference count (libzmq's zmq_msg_copy).
//
// Thread-safety: a zmq::message_t belongs to one thread at a time; a shared
// copy may be sent on another socket of the same thread.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <zmq.hpp>

namespace zkfleet::fleet {

using Frames = std::vector<zmq::message_t>;

// A frame owning `bytes` (moved to the heap, freed when libzmq is done).
zmq::message_t FrameFromString(std::string bytes);

// A frame over the whole file at `path`, mapped read-only (unmapped when
// libzmq is done). nullopt when the file does not exist; throws
// zkfleet::Error(kIo) on other failures or when its size is not `size`.
std::optional<zmq::message_t> FrameFromFile(const std::filesystem::path& path, size_t size);

// Another handle on the same bytes (no copy for frames above 33 bytes).
zmq::message_t ShareFrame(zmq::message_t& frame);

inline std::string_view FrameView(const zmq::message_t& frame) {
  return {static_cast<const char*>(frame.data()), frame.size()};
}

// Sends `frames` after a message part already sent with sndmore (the last one
// without). `flags` is added to every send (e.g. dontwait).
bool SendFrames(zmq::socket_t& socket, Frames& frames, zmq::send_flags flags = zmq::send_flags::none);

}  // namespace zkfleet::fleet
