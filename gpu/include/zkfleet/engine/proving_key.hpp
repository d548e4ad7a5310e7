// Public API of the proving engine: load a circuit's proving key once, then
// prove many witnesses against it. The rest of the engine's face sits beside
// it: verify.hpp and snarkjs.hpp (checking and formatting proofs), wtns.hpp,
// witness_file.hpp, pinned_memory.hpp, checked_keys.hpp.
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
// check of PreparedVerifier (engine/verify.hpp) (~0.8 ms BN254, ~1.4 ms BLS12-381 on one
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
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "zkfleet/engine/checked_keys.hpp"
#include "zkfleet/engine/types.hpp"
#include "zkfleet/engine/verify.hpp"
#include "zkfleet/engine/witness.hpp"

namespace zkfleet::groth16 {
class Key;  // the backend's key (internal)
}  // namespace zkfleet::groth16

namespace zkfleet::engine {

// How to load a key: which backend, and how that backend builds it
// (KeyOptions: threads, device, MSM overlap and tables, key check).
struct EngineOptions : KeyOptions {
  // The backend and its CPU threads in one expression ({Backend::kCpu, 2});
  // the other fields by name.
  EngineOptions(Backend backend_in = Backend::kAuto, int threads_in = 0) : backend(backend_in) { threads = threads_in; }
  Backend backend;
  // Keys whose points passed the check on this host before (with
  // validate_key on): a key whose content digest is recorded there loads
  // without the check; one that passes is recorded. Default: disabled.
  CheckedKeys checked_keys;
  // BellmanKey: keep each .params file's decoded points as an image in the
  // checked_keys directory (as much disk as the file; bellman/decoded_image.hpp)
  // once the file passed its check, and load a remembered file by mapping
  // its image instead of decoding it again. Needs checked_keys and
  // validate_key. Default: off.
  bool keep_decoded_params = false;
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
  // With options.validate_key and options.checked_keys enabled, the key's
  // content digest (of the mapped bytes that are then checked and loaded) is
  // looked up first: a key that passed before is not checked again; one that
  // passes now is recorded once loaded (a record that cannot be written is
  // reported in key_check().cache_warning, never thrown).
  static std::unique_ptr<ProvingKey> Load(const std::string& zkey_path,
                                          const EngineOptions& options = {});
  ~ProvingKey();

  const CircuitInfo& info() const;
  Backend backend() const { return options_.backend; }

  // Proves one witness and (options.verify) checks the proof before
  // returning it. Throws zkfleet::Error: kMismatch when the witness belongs
  // to another circuit (prime or signal count differ); kUnsatisfied when it
  // does not satisfy the circuit (the message starts "witness does not
  // satisfy circuit <zkey stem>"); kDeviceError / kResourceExhausted on a
  // CUDA failure (the key stays usable) or kDeviceLost after a sticky one.
  Proof Prove(const Witness& witness, const ProveOptions& options = {}) const;

  // CUDA, MSM table copies built in the background
  // (KeyOptions::cuda_msm_tables_in_background): blocks until their build is
  // done; true when the proofs from now on run over them. False at once for
  // a key with no copies (none asked for or none fit, the CPU backend) and
  // after a failed build (proofs stay on the plain points). For tests and
  // benchmarks that must prove over the tables, not merely wait a while.
  bool AwaitMsmTables() const;

  // The key's verification key (what `zkprove export-vk` writes).
  const VerificationKey& verification_key() const;

  // How long Load() took, by step.
  const LoadTimings& load_timings() const { return load_timings_; }
  // Whether Load() checked the key's points, or found them checked before.
  const KeyCheckReport& key_check() const { return key_check_; }

 private:
  // `options.backend` is the one Load chose (never kAuto).
  ProvingKey(std::unique_ptr<groth16::Key> backend_key, const EngineOptions& options);
  // Verifies the assembled points against the public signals; empty when
  // valid, else the verifier's reason.
  std::string Check(const ProofPoints& points, std::span<const BigInt> public_signals) const;
  const ProvingKey& Reference() const;

  std::unique_ptr<groth16::Key> backend_key_;
  EngineOptions options_;
  LoadTimings load_timings_;
  KeyCheckReport key_check_;
  std::string circuit_name_;  // the .zkey's file stem, in error messages
  std::shared_ptr<const PreparedVerifier> verifier_;
  mutable std::mutex reference_mutex_;
  mutable std::unique_ptr<ProvingKey> reference_;  // CUDA: the CPU key, loaded on the first failure
};

}  // namespace zkfleet::engine
