// What a backend's Groth16 proving key is (groth16/cpu_prover.hpp,
// groth16/cuda_prover.hpp): the Key interface and the values it takes and
// returns. The API above (engine::ProvingKey) holds one Key, checks its
// proofs and re-exports these types under engine:: names; nothing here
// includes the API.
//
// Thread-safety: a Key is immutable after construction; ProveUnchecked may be
// called from several threads at once.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zkfleet/io/curve.hpp"
#include "zkfleet/io/witness.hpp"

namespace zkfleet::groth16 {

// How a backend builds its key (engine::EngineOptions adds which backend).
struct KeyOptions {
  int threads = 0;   // CPU worker threads; 0 = all hardware threads
  int cuda_device = 0;
  // CUDA: run the five MSMs on their own streams, overlapping each other and
  // the A/B/C and NTT steps. Costs one MSM workspace per MSM in device memory
  // (false: one shared workspace, MSMs one after another).
  bool cuda_overlap_msms = true;
  // CUDA: up to this many precomputed copies of every MSM's points (copy j =
  // 2^(c·j')·P, msm/msm_steps.hpp step 0), built once at load. A key that
  // proves many times gains fewer, wider windows (BN254 2^22: 13 instead of
  // 16) and one bucket set instead of one per window, for up to this many
  // times the points' device memory. 1 = none (the one-shot default);
  // copies that do not fit in half the free device memory are not made.
  int cuda_msm_copies = 1;
  // Build those copies in the background on a low-priority stream: the key
  // proves at once, over the plain points until the copies are ready
  // (false: Load waits for them).
  bool cuda_msm_tables_in_background = true;
  // Check every point of the .zkey at load: coordinates < q, on the curve,
  // in the prime-order subgroup where the curve needs it (G2 on both curves,
  // G1 on BLS12-381). In parallel on `threads` threads.
  bool validate_key = true;
};

struct CircuitInfo {
  io::Curve curve = io::Curve::kBn254;
  uint32_t n_vars = 0;        // witness length, including the constant 1
  uint32_t n_public = 0;      // public signals, excluding the constant
  uint32_t domain_size = 0;   // power of two
  uint64_t n_coeffs = 0;      // A/B coefficient records in the zkey
  uint64_t resident_bytes = 0;  // memory the loaded key holds
  int msm_copies = 1;           // CUDA: table copies of the MSM points (KeyOptions::cuda_msm_copies)
  std::string msm_tables_skipped;  // CUDA: why no copies were made although asked for (empty: none skipped)
  std::string path;           // where it was loaded from
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

// What engine::ProvingKey::Prove's check before return found (see
// engine/proving_key.hpp).
struct ProofCheck {
  bool verified = false;  // checked against the key's verification key: valid
  double verify_s = 0;    // seconds spent verifying (re-proof included after a fault)
  // Non-empty when the engine's first proof failed verification although the
  // witness satisfies the circuit: what the verifier said about it. The proof
  // returned is then the CPU reference re-proof, which verified.
  std::string engine_fault;
};

// What a key proves: the snarkjs files, the signals, and how it went.
struct ProofOutput {
  std::string proof_json;   // snarkjs proof.json, byte-compatible layout
  std::string public_json;  // snarkjs public.json
  std::vector<std::string> public_signals;  // decimal strings, w[1..nPublic]
  PhaseTimings timings;
  ProofCheck check;
};

struct ProveOptions {
  // Blinding scalars r and s as canonical little-endian 32-byte integers
  // (< the scalar field modulus). Unset = fresh random values (production).
  // Tests set them to compare bit for bit with snarkjs.
  std::optional<std::array<uint8_t, 32>> r, s;
  // engine::ProvingKey::Prove: verify the proof before returning it. Off
  // only for benchmarks (zkprove / zkworker --verify off).
  bool verify = true;
};

class Key {
 public:
  virtual ~Key() = default;
  virtual const CircuitInfo& info() const = 0;
  // The proof of `witness`, unchecked. `inject_fault` (test only): corrupt
  // pi_a's MSM result before assembly.
  virtual ProofOutput ProveUnchecked(const io::Witness& witness, const ProveOptions& options, bool inject_fault) const = 0;
};

}  // namespace zkfleet::groth16
