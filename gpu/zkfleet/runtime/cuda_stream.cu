#include "zkfleet/runtime/hd_host_inline.hpp"  // first: see there
#include "zkfleet/runtime/cuda_stream.hpp"

#include "zkfleet/runtime/cuda_check.hpp"

namespace zkfleet::cuda {

Event::Event(EventTiming timing, const std::string& what) : device_(CurrentDevice()) {
  const unsigned flags = timing == EventTiming::kOn ? cudaEventDefault : cudaEventDisableTiming;
  ZK_CUDA_CHECK(cudaEventCreateWithFlags(&event_, flags), what + ": events");
}

void Event::Reset() noexcept {
  if (!event_) return;
  SelectQuietly(device_);
  cudaEventDestroy(event_);
  event_ = nullptr;
}

void Event::Record(cudaStream_t stream, const std::string& phase) const {
  ZK_CUDA_CHECK(cudaEventRecord(event_, stream), phase);
}

void Event::Synchronize(const std::string& phase) const { ZK_CUDA_CHECK(cudaEventSynchronize(event_), phase); }

bool Event::SynchronizeIgnoringErrors() const noexcept {
  if (cudaEventSynchronize(event_) == cudaSuccess) return true;
  ClearPendingError();
  return false;
}

bool Event::Done() const noexcept {
  const cudaError_t status = cudaEventQuery(event_);
  if (status == cudaSuccess) return true;
  if (status != cudaErrorNotReady) ClearPendingError();
  return false;
}

float Event::MillisecondsSince(const Event& start, const std::string& phase) const {
  float ms = 0;
  ZK_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, event_), phase);
  return ms;
}

Stream::Stream(const std::string& what, StreamPriority priority) : device_(CurrentDevice()) {
  if (priority == StreamPriority::kLowest) {
    int least = 0, greatest = 0;
    ZK_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest), what + ": stream priorities");
    ZK_CUDA_CHECK(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, least), what + ": stream");
  } else {
    ZK_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), what + ": stream");
  }
}

void Stream::Reset() noexcept {
  if (!stream_) return;
  SelectQuietly(device_);
  cudaStreamDestroy(stream_);
  stream_ = nullptr;
}

void CopyToDeviceAsync(void* device_dst, const void* host_src, size_t bytes, cudaStream_t stream,
                       const std::string& phase) {
  if (bytes == 0) return;
  ZK_CUDA_CHECK(cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, stream), phase);
}

void CopyToHostAsync(void* host_dst, const void* device_src, size_t bytes, cudaStream_t stream,
                     const std::string& phase) {
  if (bytes == 0) return;
  ZK_CUDA_CHECK(cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, stream), phase);
}

void CopyOnDeviceAsync(void* device_dst, const void* device_src, size_t bytes, cudaStream_t stream,
                       const std::string& phase) {
  if (bytes == 0) return;
  ZK_CUDA_CHECK(cudaMemcpyAsync(device_dst, device_src, bytes, cudaMemcpyDeviceToDevice, stream), phase);
}

void ZeroAsync(void* device_dst, size_t bytes, cudaStream_t stream, const std::string& phase) {
  if (bytes == 0) return;
  ZK_CUDA_CHECK(cudaMemsetAsync(device_dst, 0, bytes, stream), phase);
}

void WaitFor(cudaStream_t stream, const Event& event, const std::string& phase) {
  ZK_CUDA_CHECK(cudaStreamWaitEvent(stream, event.get(), 0), phase);
}

void SynchronizeStream(cudaStream_t stream, const std::string& phase) {
  ZK_CUDA_CHECK(cudaStreamSynchronize(stream), phase);
}

void SynchronizeStreamIgnoringErrors(cudaStream_t stream) noexcept {
  if (cudaStreamSynchronize(stream) != cudaSuccess) ClearPendingError();
}

void QueueInvalidCopyForTesting(void* device_dst, const void* host_src, cudaStream_t stream,
                                const std::string& phase) {
  ZK_CUDA_CHECK(cudaMemcpyAsync(device_dst, host_src, 32, static_cast<cudaMemcpyKind>(42), stream), phase);
}

}  // namespace zkfleet::cuda
