#include "zkfleet/worker/devices.hpp"

#include <algorithm>
#include <charconv>

namespace zkfleet::worker {

std::vector<int> ParseGpuList(std::string_view spec, int visible, std::string* error) {
  auto fail = [&](std::string why) {
    if (error) *error = std::move(why);
    return std::vector<int>{};
  };
  if (visible <= 0) return fail("no CUDA device is visible to this process");
  std::vector<int> ordinals;
  if (spec == "all") {
    for (int i = 0; i < visible; ++i) ordinals.push_back(i);
    return ordinals;
  }
  if (spec.empty()) return fail("expected all or a comma-separated list of device numbers like 0,1");
  size_t pos = 0;
  while (pos <= spec.size()) {
    const size_t end = std::min(spec.find(',', pos), spec.size());
    const std::string_view item = spec.substr(pos, end - pos);
    int ordinal = -1;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), ordinal);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || ordinal < 0) {
      // Built with append: GCC 12's -Wrestrict misfires on "'" + std::string(...) (GCC bug 105651).
      std::string why = "'";
      why.append(item).append("' is not a device number (expected all or a list like 0,1)");
      return fail(why);
    }
    if (ordinal >= visible) {
      return fail("device " + std::to_string(ordinal) + " does not exist: this process sees " +
                  std::to_string(visible) + " (0.." + std::to_string(visible - 1) + ")");
    }
    if (std::find(ordinals.begin(), ordinals.end(), ordinal) != ordinals.end()) {
      return fail("device " + std::to_string(ordinal) + " is listed twice");
    }
    ordinals.push_back(ordinal);
    pos = end + 1;
  }
  return ordinals;
}

DeviceSet::DeviceSet(std::vector<Device> devices, uint32_t fault_threshold, std::chrono::seconds fault_window)
    : fault_threshold_(fault_threshold), fault_window_(fault_window) {
  for (Device& device : devices) {
    Entry entry;
    entry.device = std::move(device);
    devices_.push_back(std::move(entry));
  }
}

size_t DeviceSet::live() const {
  return static_cast<size_t>(
      std::count_if(devices_.begin(), devices_.end(), [](const Entry& e) { return e.state == State::kOk; }));
}

bool DeviceSet::any_lost() const {
  return std::any_of(devices_.begin(), devices_.end(), [](const Entry& e) { return e.lost; });
}

bool DeviceSet::CountEngineFault(size_t index, Clock::time_point now) {
  Entry& entry = devices_.at(index);
  entry.recent_faults.push_back(now);
  while (!entry.recent_faults.empty() && now - entry.recent_faults.front() > fault_window_) {
    entry.recent_faults.pop_front();
  }
  return entry.state == State::kOk && fault_threshold_ > 0 && entry.recent_faults.size() >= fault_threshold_;
}

bool DeviceSet::Fault(size_t index, const std::string& why, bool lost) {
  Entry& entry = devices_.at(index);
  if (entry.state == State::kFaulted) {
    entry.lost |= lost;  // a sticky error after it left: still only a new process can use it
    return false;
  }
  entry.state = State::kFaulted;
  entry.lost = lost;
  entry.why = why;
  return true;
}

const char* DeviceStateName(DeviceSet::State state) { return state == DeviceSet::State::kOk ? "ok" : "faulted"; }

}  // namespace zkfleet::worker
