#include "zkfleet/worker/backend.hpp"

#include <cstdlib>
#include <sstream>

namespace zkfleet::worker {
namespace {

// The label of CUDA device `ordinal`: "none" off CUDA, else the device as the
// host numbers it. With CUDA_VISIBLE_DEVICES (one GPU per worker, as deploy/
// runs it) the process's ordinal 0 is the listed device, not GPU 0.
std::string GpuLabel(bool cuda, int ordinal) {
  if (!cuda) return "none";
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  std::stringstream devices(visible ? visible : "");
  std::string device;
  for (int i = 0; std::getline(devices, device, ','); ++i) {
    if (i == ordinal && !device.empty()) return device;
  }
  return std::to_string(ordinal);
}

}  // namespace

std::optional<std::vector<Device>> ResolveDevices(const std::vector<CircuitSpec>& specs,
                                                  const engine::EngineOptions& engine_options, const std::string& gpus,
                                                  int test_fake_devices, std::string* error) {
  bool any_engine = false;
  for (const auto& spec : specs) any_engine |= !spec.instant;
  engine::Backend resolved = engine_options.backend;
  if (resolved == engine::Backend::kAuto) {
    resolved = engine::CudaAvailable() ? engine::Backend::kCuda : engine::Backend::kCpu;
  }
  const bool cuda = any_engine && resolved == engine::Backend::kCuda;
  if (test_fake_devices > 0 && (!any_engine || resolved != engine::Backend::kCpu)) {
    *error = "--test-fake-devices: only with the cpu backend and a circuit that is proved (not --instant)";
    return std::nullopt;
  }
  if (!gpus.empty() && !cuda && test_fake_devices == 0) {
    *error = "--gpus " + gpus + ": needs the cuda backend (this worker proves on " +
             (any_engine ? "the CPU" : "no device: --instant") + ")";
    return std::nullopt;
  }
  std::vector<Device> devices;
  if (gpus.empty() && test_fake_devices == 0) {
    devices.push_back({engine_options.cuda_device, GpuLabel(cuda, engine_options.cuda_device)});
    return devices;
  }
  const int visible = test_fake_devices > 0 ? test_fake_devices : engine::CudaDeviceCount();
  std::string why;
  const std::vector<int> ordinals = ParseGpuList(gpus.empty() ? "all" : gpus, visible, &why);
  if (ordinals.empty()) {
    *error = "--gpus " + gpus + ": " + why;
    return std::nullopt;
  }
  for (int ordinal : ordinals) {
    devices.push_back({ordinal, test_fake_devices > 0 ? "fake" + std::to_string(ordinal) : GpuLabel(cuda, ordinal)});
  }
  return devices;
}

std::string DevicesLabel(const std::vector<Device>& devices) {
  std::string label;
  for (const Device& device : devices) label += (label.empty() ? "" : ",") + device.label;
  return label;
}

}  // namespace zkfleet::worker
