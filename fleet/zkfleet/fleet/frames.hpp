// Witness frames: a witness (.wtns file) travels in frames of its own after
// the Envelope, never inside a protobuf message, so that nobody on the way
// parses or copies it. A witness is cut into chunks of at most
// kWitnessChunkBytes (the last one shorter), each a frame pointing into the
// same buffer: CurveZMQ encrypts frame by frame, and libzmq's CURVE code
// allocates, zero-fills and copies each frame twice, which costs 1.6 times
// less per byte for 4 MiB frames than for one 134 MB frame (the page faults
// of fresh large allocations; bench/fleet/curve_frames.cpp). The envelope
// carries each witness's size, so the receiver knows where one ends.
//
// ReceiveMultipart is the one receive of a whole multi-part message (the
// broker's ROUTERs, the clients' and the worker's DEALERs). The ZAP handler
// keeps its own loop on purpose: it caps the number of frames it reads.
//
// These helpers make such frames without copying bytes: from a string the
// caller gives up, from a mapped file (zkctl's .wtns files, the broker's
// journal blobs), as chunks of a frame, and shared copies of a frame that keep
// one buffer alive with a reference count (libzmq's zmq_msg_copy).
//
// Thread-safety: a zmq::message_t belongs to one thread at a time; a shared
// copy may be sent on another socket of the same thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <zmq.hpp>

namespace zkfleet::fleet {

using Frames = std::vector<zmq::message_t>;

// Chunk size senders use, and the largest chunk receivers accept.
inline constexpr size_t kWitnessChunkBytes = 4u << 20;
inline constexpr size_t kMaxWitnessChunkBytes = 16u << 20;

// One witness's bytes in order, in one or more frames.
struct WitnessFrames {
  Frames chunks;
  uint64_t size() const {
    uint64_t total = 0;
    for (const zmq::message_t& chunk : chunks) total += chunk.size();
    return total;
  }
};

// `whole` cut into frames of at most `chunk_bytes` that point into it (it is
// kept alive until libzmq has sent the last of them).
WitnessFrames ChunkWitness(zmq::message_t whole, size_t chunk_bytes = kWitnessChunkBytes);

// The wire form of several witnesses: their chunks one after the other.
Frames FlattenWitnesses(std::vector<WitnessFrames> witnesses);

// Splits received frames into witnesses of the announced `sizes` (each
// witness's frames add up to its size exactly; every frame non-empty and at
// most kMaxWitnessChunkBytes). nullopt with *why set when they do not.
std::optional<std::vector<WitnessFrames>> SplitWitnesses(Frames frames, const std::vector<uint64_t>& sizes,
                                                         std::string* why);

// A frame owning `bytes` (moved to the heap, freed when libzmq is done).
zmq::message_t FrameFromString(std::string bytes);

// A frame over the whole file at `path`, mapped read-only (unmapped when
// libzmq is done). nullopt when the file does not exist; throws
// zkfleet::Error(kIo) on other failures or when its size is not `size`.
std::optional<zmq::message_t> FrameFromFile(const std::filesystem::path& path, size_t size);

// A frame over `size` bytes of a read-only mapping at `base` (from mmap),
// which it owns: unmapped when libzmq is done with the last frame cut from it.
zmq::message_t FrameFromMapping(void* base, size_t size);

// Another handle on the same bytes (no copy for frames above 33 bytes).
zmq::message_t ShareFrame(zmq::message_t& frame);

inline std::string_view FrameView(const zmq::message_t& frame) {
  return {static_cast<const char*>(frame.data()), frame.size()};
}

// Views of a witness's chunks, in order (valid while `witness` lives): how
// the broker hands a received witness to its journal and its digests.
std::vector<std::string_view> ChunkViews(const WitnessFrames& witness);
// The same views as bytes: how the broker and the worker hand a witness to
// the engine (engine::PublicSignalsOfWtns) and to the worker's core.
std::vector<std::span<const uint8_t>> ByteSpans(const WitnessFrames& witness);

// Receives one whole message: its first part into `first` (with `flags`,
// e.g. dontwait), then every further part, in order, into `rest` (cleared
// first; libzmq delivers a message's parts together, so these do not wait).
// false, with nothing received, when no message is there (EAGAIN with
// dontwait); zmq::error_t as socket_t::recv throws it.
bool ReceiveMultipart(zmq::socket_t& socket, zmq::message_t& first, Frames& rest,
                      zmq::recv_flags flags = zmq::recv_flags::dontwait);

// Sends `frames` after a message part already sent with sndmore (the last one
// without). `flags` is added to every send (e.g. dontwait).
bool SendFrames(zmq::socket_t& socket, Frames& frames, zmq::send_flags flags = zmq::send_flags::none);

}  // namespace zkfleet::fleet
