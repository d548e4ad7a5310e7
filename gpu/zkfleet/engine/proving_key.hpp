// Public API of the proving engine: load a circuit's proving key once, then
// prove many witnesses against it. This is the only header the worker and the
// command-line tools need.
//
// Thread-safety: a ProvingKey is immutable after Load() and Prove() may be
// called from several threads at once (the CPU backend parallelises inside a
// proof; the CUDA backend serialises proofs on its device internally).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zkfleet/engine/witness.hpp"
#include "zkfleet/engine/types.hpp"

namespace zkfleet::engine {

struct EngineOptions {
  Backend backend = Backend::kAuto;
  int threads = 0;   // CPU worker threads; 0 = all hardware threads
  int cuda_device = 0;
  // CUDA: run the five MSMs on their own streams, overlapping each other and
  // the A/B/C and NTT steps. Costs one MSM workspace per MSM in device memory
  // (false: one shared workspace, MSMs one after another).
  bool cuda_overlap_msms = true;
};

// Wall-clock seconds spent in each phase of one proof. The worker exports
// these as Prometheus histograms; zkprove prints them with --timings.
struct PhaseTimings {
  double witness_transfer_s = 0;  // copying the witness to the device (0 on CPU)
  double build_abc_s = 0;         // evaluating A, B (and C = A.B) on the domain
  double ntt_s = 0;               // the 3 iNTT + coset + 3 NTT and H scalars
  double msm_s = 0;               // the five multi-scalar multiplications
  double total_s = 0;             // the whole Prove() call
};

struct Proof {
  std::string proof_json;   // snarkjs proof.json, byte-compatible layout
  std::string public_json;  // snarkjs public.json
  std::vector<std::string> public_signals;  // decimal strings, w[1..nPublic]
  PhaseTimings timings;
};

struct ProveOptions {
  // Blinding scalars r and s as canonical little-endian 32-byte integers
  // (< the scalar field modulus). Unset = fresh random values (production).
  // Tests set them to compare bit for bit with snarkjs.
  std::optional<std::array<uint8_t, 32>> r, s;
};

class ProvingKey {
 public:
  // Reads and validates `zkey_path` (Groth16 .zkey as written by snarkjs) and
  // keeps everything a proof needs resident (host memory for CPU, device
  // memory for CUDA). Throws zkfleet::Error naming the file on bad input.
  static std::unique_ptr<ProvingKey> Load(const std::string& zkey_path,
                                          const EngineOptions& options = {});
  virtual ~ProvingKey() = default;

  virtual const CircuitInfo& info() const = 0;
  virtual Backend backend() const = 0;

  // Proves one witness. Throws zkfleet::Error (kMismatch) when the witness
  // belongs to another circuit (prime or signal count differ), or
  // kDeviceError / kResourceExhausted on a CUDA failure; the key stays usable.
  virtual Proof Prove(const Witness& witness, const ProveOptions& options = {}) const = 0;
};

}  // namespace zkfleet::engine
