// Small value types shared by the engine's public API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "zkfleet/groth16/key.hpp"
#include "zkfleet/io/curve.hpp"

namespace zkfleet::engine {

// The pairing-friendly curves snarkjs supports (io/curve.hpp).
using Curve = io::Curve;
using io::CurveName;  // "bn128" / "bls12381"

// Which implementation proves. kAuto = CUDA when a GPU is present, else CPU.
enum class Backend { kCpu, kCuda, kAuto };

const char* BackendName(Backend backend);          // "cpu" | "cuda" | "auto"
Backend ParseBackend(std::string_view name);       // throws Error on unknown names

// True when this build has the CUDA backend and a usable GPU is present.
bool CudaAvailable();
// How many CUDA devices this process can use (as CUDA numbers them, after
// CUDA_VISIBLE_DEVICES); 0 in a build without the CUDA backend or without a
// driver or device. Never throws.
int CudaDeviceCount();

// Creates CUDA device `device`'s context now, if this build has CUDA and the
// device exists: a one-shot program calls it on a thread of its own at start,
// so that the context (and, with CUDA_MODULE_LOADING=EAGER, the kernels) is
// ready by the time the key is loaded. Errors are ignored here: the key's
// load reports them.
void PrepareCuda(int device);

// Seconds ProvingKey::Load spent, by step.
struct LoadTimings {
  double open_s = 0;       // map the .zkey, check its structure and coefficient records
  double digest_s = 0;     // its content digest, for the key-check cache (0 without one)
  double key_check_s = 0;  // the point checks (0 with EngineOptions::validate_key off or a cache hit)
  double backend_s = 0;    // the backend's copy: rows regrouped, points and scratch in (device) memory
  double total_s = 0;
};

// What ProvingKey::Load did about the key's point checks.
enum class KeyCheck {
  kSkipped,     // EngineOptions::validate_key off
  kChecked,     // checked at this load (and passed)
  kRemembered,  // not checked: this very content passed before (EngineOptions::checked_keys)
};
const char* KeyCheckName(KeyCheck check);  // "skipped" | "checked" | "remembered"

struct KeyCheckReport {
  KeyCheck outcome = KeyCheck::kSkipped;
  std::string digest;  // the key's content digest, when a key-check cache was consulted
  // Why the passed check could not be remembered, reported once per cache
  // (CheckedKeys::FirstWarning): empty otherwise. The load itself succeeded.
  std::string cache_warning;
};

using CircuitInfo = groth16::CircuitInfo;

}  // namespace zkfleet::engine
