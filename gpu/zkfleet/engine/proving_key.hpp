// Public API of the proving engine: load a circuit's proving key once, then
// prove many witnesses against it. This is the only header the worker and the
// command-line tools need.
//
// Thread-safety: a ProvingKey is immutable after Load() and Prove() may be
// called from several threads at once. The CPU backend parallelises inside a
// proof. The CUDA backend serialises device work per device; host-side
// combination, assembly and verification overlap with other proofs' device
// work.
//
// Witness: Prove() reads witness.values() only until it returns; a
// Witness::View's bytes must stay alive that long. The CUDA backend uploads
// them directly (no host copy): page-locked bytes get a true async DMA.
//
// Every proof is verified before Prove() returns it (ProveOptions::verify,
// on by default): against the key's own verification key, with the pairing
// check of groth16::PreparedVerifier (~0.8 ms BN254, ~1.4 ms BLS12-381 on one
// core). A proof that fails is never returned. Which side was wrong is
// decided by proving the same witness (same r and s) again on the host
// reference path -- the CPU prover, with fault injection off:
//   * the re-proof verifies too -> the engine was wrong the first time (a
//     GPU fault, a bit flip): Prove() returns the re-proof and says so in
//     Proof::check.engine_fault, so the caller can count and log it;
//   * the re-proof fails as well -> the witness does not satisfy the circuit:
//     Prove() throws Error(kUnsatisfied, "witness does not satisfy circuit
//     <zkey file stem> ..."). (A .zkey holds only the A and B coefficient
//     matrices -- C is folded into the L points -- so the constraints
//     a.b == c cannot be re-checked row by row from the key alone; the
//     re-proof is the independent check. It costs one CPU proof, paid only
//     when a check fails. A deterministic bug in the CPU prover itself would
//     show as kUnsatisfied; the snarkjs agreement tests guard against that.)
// The CUDA backend loads its CPU reference key lazily, on the first failure.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zkfleet/engine/witness.hpp"
#include "zkfleet/engine/types.hpp"

namespace zkfleet::groth16 {
struct VerificationKey;
class PreparedVerifier;
}  // namespace zkfleet::groth16

namespace zkfleet::engine {

struct EngineOptions {
  Backend backend = Backend::kAuto;
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

// Wall-clock seconds spent in each phase of one proof. The worker exports
// these as Prometheus histograms; zkprove prints them with --timings.
struct PhaseTimings {
  double witness_transfer_s = 0;  // copying the witness to the device (0 on CPU)
  double build_abc_s = 0;         // evaluating A, B (and C = A.B) on the domain
  double ntt_s = 0;               // the 3 iNTT + coset + 3 NTT and H scalars
  double msm_s = 0;               // the five multi-scalar multiplications
  double total_s = 0;             // the whole Prove() call
};

// What the check before return found (see the top of this file).
struct ProofCheck {
  bool verified = false;  // checked against the key's verification key: valid
  double verify_s = 0;    // seconds spent verifying (re-proof included after a fault)
  // Non-empty when the engine's first proof failed verification although the
  // witness satisfies the circuit: what the verifier said about it. The proof
  // returned is then the CPU reference re-proof, which verified.
  std::string engine_fault;
};

struct Proof {
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
  // Verify the proof before returning it (see the top of this file). Off
  // only for benchmarks (zkprove / zkworker --verify off).
  bool verify = true;
};

// Test-only fault injection: ZKFLEET_FAULT_INJECT=msm:<n> in the environment
// corrupts one MSM result (pi_a's, as it comes back from the CPU MSM or from
// the GPU) in each of the next n proofs of this process, on either backend;
// device_lost:<n> makes the next n Prove() calls throw kDeviceLost as a
// sticky CUDA error would (both may be given, comma-separated). Never set it
// in production. The reference re-proof is never corrupted.
// True (and one fault used up) when the proof about to be assembled must be
// corrupted.
bool TakeInjectedMsmFault();

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

  // Proves one witness and (options.verify) checks the proof before
  // returning it. Throws zkfleet::Error: kMismatch when the witness belongs
  // to another circuit (prime or signal count differ); kUnsatisfied when it
  // does not satisfy the circuit (the message starts "witness does not
  // satisfy circuit <zkey stem>"); kDeviceError / kResourceExhausted on a
  // CUDA failure (the key stays usable) or kDeviceLost after a sticky one.
  Proof Prove(const Witness& witness, const ProveOptions& options = {}) const;

  // The key's verification key (what `zkprove export-vk` writes).
  const groth16::VerificationKey& verification_key() const;

  // How long Load() took, by step.
  const LoadTimings& load_timings() const { return load_timings_; }

 protected:
  ProvingKey() = default;
  // The backend's proof, unchecked. `inject_fault`: corrupt pi_a's MSM
  // result (TakeInjectedMsmFault said so).
  virtual Proof ProveUnchecked(const Witness& witness, const ProveOptions& options, bool inject_fault) const = 0;

 private:
  // Verifies `proof`; empty when valid, else the verifier's reason.
  std::string Check(const Proof& proof) const;
  const ProvingKey& Reference() const;

  EngineOptions options_;
  LoadTimings load_timings_;
  std::string circuit_name_;  // the .zkey's file stem, in error messages
  std::shared_ptr<const groth16::PreparedVerifier> verifier_;
  mutable std::mutex reference_mutex_;
  mutable std::unique_ptr<ProvingKey> reference_;  // CUDA: the CPU key, loaded on the first failure
};

}  // namespace zkfleet::engine
