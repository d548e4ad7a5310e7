// Which devices a worker proves on, resolved from its command line before
// anything starts: the engine backend (auto = CUDA when a device is visible),
// --gpus and --test-fake-devices, checked against what the process sees.
//
// Thread-safety: free functions without state of their own; they read the
// environment (CUDA_VISIBLE_DEVICES) and ask the engine how many CUDA devices
// are visible, so call them before the worker's threads start.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "zkfleet/engine/types.hpp"
#include "zkfleet/worker/circuit_set.hpp"
#include "zkfleet/worker/devices.hpp"

namespace zkfleet::worker {

// The devices to prove `specs` on: one (CUDA device engine_options
// .cuda_device, or the CPU) unless `gpus` ("all", "0,1", "" for none given)
// or `test_fake_devices` (N fake CPU devices; 0 = off) says otherwise. On a
// combination that cannot work (--gpus without the CUDA backend, fake
// devices off the CPU backend, a bad --gpus list) returns nullopt and sets
// *error to a sentence naming the option.
std::optional<std::vector<Device>> ResolveDevices(const std::vector<CircuitSpec>& specs,
                                                  const engine::EngineOptions& engine_options, const std::string& gpus,
                                                  int test_fake_devices, std::string* error);

// The gpu label of zkfleet_worker_info for `devices`: each one's label,
// comma-separated ("none" on the CPU backend).
std::string DevicesLabel(const std::vector<Device>& devices);

}  // namespace zkfleet::worker
