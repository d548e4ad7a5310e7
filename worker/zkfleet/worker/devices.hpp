// The devices one worker proves on (--gpus): which ones it was given, and
// which of them are still in the set.
//
//   * ParseGpuList(): the --gpus value ("all" or "0,1,...") against the number
//     of devices the process sees.
//   * DeviceSet: the worker core's view of its devices. Each device is OK or
//     FAULTED (it left the set: a fatal device error, or --fault-threshold
//     engine faults on that device within --fault-window); a faulted device
//     never comes back in this process. The worker itself goes FAULTED only
//     when no device is left (worker_core_drain.cpp).
//
// A worker without --gpus has one device: CUDA device 0 (labelled as the host
// numbers it), or the CPU ("none"). --test-fake-devices N simulates N devices
// on the CPU backend (N copies of every key, labelled fake0..fakeN-1) so the
// multi-device paths can be tested without GPUs.
//
// Thread-safety: ParseGpuList is a pure function. A DeviceSet belongs to one
// thread (the worker core's).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace zkfleet::worker {

struct Device {
  int ordinal = 0;            // CUDA device number in this process (EngineOptions::cuda_device)
  std::string label = "none";  // for logs and metrics: the host's GPU number, "fakeN", or "none" (CPU)
};

// The device ordinals `spec` names, in the order given: "all" = 0..visible-1,
// else a comma-separated list of distinct numbers below `visible`. On a bad
// spec returns {} and sets *error to a sentence saying why (no device
// visible, not a number, a duplicate, out of range).
std::vector<int> ParseGpuList(std::string_view spec, int visible, std::string* error);

class DeviceSet {
 public:
  using Clock = std::chrono::steady_clock;
  enum class State { kOk, kFaulted };

  // `fault_threshold` engine faults on one device within `fault_window` make
  // that device leave (0 = never).
  DeviceSet(std::vector<Device> devices, uint32_t fault_threshold, std::chrono::seconds fault_window);

  size_t size() const { return devices_.size(); }
  size_t live() const;  // devices still OK
  const Device& device(size_t index) const { return devices_.at(index).device; }
  State state(size_t index) const { return devices_.at(index).state; }
  bool ok(size_t index) const { return state(index) == State::kOk; }
  // Why device `index` left ("" while it is OK).
  const std::string& why(size_t index) const { return devices_.at(index).why; }
  // True when a device left on a fatal (sticky) device error: only a new
  // process can use it again.
  bool any_lost() const;

  // An engine fault on device `index` at `now`: true when this one reaches
  // the threshold within the window (the device should leave). Faults of an
  // earlier window are forgotten.
  bool CountEngineFault(size_t index, Clock::time_point now);
  // Engine faults of device `index` within the window as of the last count.
  size_t recent_faults(size_t index) const { return devices_.at(index).recent_faults.size(); }
  // Device `index` leaves the set (`lost`: a sticky device error). False
  // when it had already left (then only `lost` is remembered).
  bool Fault(size_t index, const std::string& why, bool lost);

 private:
  struct Entry {
    Device device;
    State state = State::kOk;
    bool lost = false;
    std::string why;
    std::deque<Clock::time_point> recent_faults;
  };
  std::vector<Entry> devices_;
  uint32_t fault_threshold_;
  std::chrono::seconds fault_window_;
};

const char* DeviceStateName(DeviceSet::State state);  // "ok" | "faulted"

}  // namespace zkfleet::worker
