// Streams, events, and the copies, fills and waits queued on them: with
// cuda_device.hpp (devices and buffers), the engine's one door to the CUDA
// runtime, as sppark's gpu_t is. Nothing outside gpu/zkfleet/runtime calls a
// cuda* function (scripts/check_layers.py fails on one); kernel launches
// take a Stream, or the cudaStream_t it converts to.
//
//   cuda::Stream stream("MSM setup");                       // non-blocking
//   cuda::Event done(cuda::EventTiming::kOff, "MSM setup");
//   cuda::CopyToDeviceAsync(dst, src, bytes, stream, "witness upload");
//   Kernel<<<grid, block, 0, stream>>>(...);
//   done.Record(stream, "MSM");
//   cuda::SynchronizeStream(stream, "MSM");
//
// Every failure throws zkfleet::Error naming the phase (cuda_check.hpp has
// the rules); the *IgnoringErrors calls are for recovery and destructors.
//
// Ownership: Stream and Event are move-only owners. Each remembers the
// device that was current when it was made, and its destructor makes that
// device current before destroying it (a thread that frees a key may have
// another device current, or none yet; it is left with the object's device
// current, as after any device work).
// Thread-safety: as CUDA's own: one stream may be used from several threads,
// but one object is not moved or destroyed while another thread uses it.
//
// CUDA translation units only (the types are the runtime's own).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>

#include "zkfleet/runtime/cuda_device.hpp"

namespace zkfleet::cuda {

// Whether an event can time the work between two records (timing costs a
// little; events that only order streams leave it off).
enum class EventTiming { kOff, kOn };

// Stream priority: kLowest lets every other stream's blocks go first (the
// key's background table build).
enum class StreamPriority { kNormal, kLowest };

class Stream;

class Event {
 public:
  Event() = default;  // no event (for members made later)
  Event(EventTiming timing, const std::string& what);
  ~Event() { Reset(); }
  Event(Event&& o) noexcept : event_(std::exchange(o.event_, nullptr)), device_(o.device_) {}
  Event& operator=(Event&& o) noexcept {
    if (this != &o) {
      Reset();
      event_ = std::exchange(o.event_, nullptr);
      device_ = o.device_;
    }
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  explicit operator bool() const { return event_ != nullptr; }
  cudaEvent_t get() const { return event_; }

  // Marks the point in `stream` reached by the work queued so far.
  void Record(cudaStream_t stream, const std::string& phase) const;
  // Blocks until the recorded work is done.
  void Synchronize(const std::string& phase) const;
  // As Synchronize, but a failure is cleared and answered false.
  bool SynchronizeIgnoringErrors() const noexcept;
  // True once the recorded work is done, false while it runs; a failed one
  // is cleared (it is not sticky) and answered false.
  bool Done() const noexcept;
  // Milliseconds from `start` to this event, both recorded with timing and done.
  float MillisecondsSince(const Event& start, const std::string& phase) const;

 private:
  void Reset() noexcept;
  cudaEvent_t event_ = nullptr;
  int device_ = 0;
};

class Stream {
 public:
  Stream() = default;  // no stream
  explicit Stream(const std::string& what, StreamPriority priority = StreamPriority::kNormal);
  ~Stream() { Reset(); }
  Stream(Stream&& o) noexcept : stream_(std::exchange(o.stream_, nullptr)), device_(o.device_) {}
  Stream& operator=(Stream&& o) noexcept {
    if (this != &o) {
      Reset();
      stream_ = std::exchange(o.stream_, nullptr);
      device_ = o.device_;
    }
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // For kernel launches and the functions below. The stream is
  // non-blocking: it never waits for the legacy default stream.
  operator cudaStream_t() const { return stream_; }  // NOLINT: used as sppark's stream_t is
  cudaStream_t get() const { return stream_; }

 private:
  void Reset() noexcept;
  cudaStream_t stream_ = nullptr;
  int device_ = 0;
};

// Queued on `stream` (asynchronous: the host bytes must stay valid, and for
// a true DMA be page-locked, until the stream reaches the copy).
void CopyToDeviceAsync(void* device_dst, const void* host_src, size_t bytes, cudaStream_t stream,
                       const std::string& phase);
void CopyToHostAsync(void* host_dst, const void* device_src, size_t bytes, cudaStream_t stream,
                     const std::string& phase);
void CopyOnDeviceAsync(void* device_dst, const void* device_src, size_t bytes, cudaStream_t stream,
                       const std::string& phase);
void ZeroAsync(void* device_dst, size_t bytes, cudaStream_t stream, const std::string& phase);

// Work queued on `stream` after this waits for `event`'s recorded point.
void WaitFor(cudaStream_t stream, const Event& event, const std::string& phase);
// Blocks until everything queued on `stream` is done.
void SynchronizeStream(cudaStream_t stream, const std::string& phase);
// The same for recovery and destructors: waits, clears a (non-sticky) failure.
void SynchronizeStreamIgnoringErrors(cudaStream_t stream) noexcept;
// (Blocking copies and SynchronizeDevice are in cuda_device.hpp.)

// For the fault-injection tests (cuda_device.hpp's InjectFaultForTesting):
// a copy with an invalid direction, which the runtime rejects with a real,
// non-sticky error (thrown as any failed copy is).
void QueueInvalidCopyForTesting(void* device_dst, const void* host_src, cudaStream_t stream,
                                const std::string& phase);

}  // namespace zkfleet::cuda
