// Small value types of the engine's public API: backends, load and proof
// options, what a key and a proof report. The engine's internal layers share
// them (groth16/key.hpp re-exports them under groth16:: names).
// Thread-safety: plain values; the free functions are thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zkfleet/engine/curve.hpp"
#include "zkfleet/engine/verify.hpp"

namespace zkfleet::engine {

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
  double image_s = 0;      // BellmanKey: writing the decoded image (mapping one counts as key_check_s)
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
  // BellmanKey with EngineOptions::keep_decoded_params: the decoded image
  // this load mapped its points from instead of decoding the file, or the
  // one it wrote for the next load ("" when neither); why an image there
  // was not used, or why none could be written (the load itself succeeded).
  std::string image_mapped, image_written, image_warning;
};

// How a backend builds its key (EngineOptions adds which backend).
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
  // CUDA, bellperson parameters (BellmanKey): the most device memory the key
  // may hold, in bytes, resident points and every per-proof buffer included.
  // 0 = what the device has free at load. Points that do not fit stay in
  // pinned host memory and stream through the device in chunks.
  uint64_t device_memory_budget = 0;
};

struct CircuitInfo {
  Curve curve = Curve::kBn254;
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
  // Device seconds of each MSM (h, l, a, b_g1, b_g2), where the backend
  // runs them one after another and times them (the CUDA bellman key that
  // streams its points); zero elsewhere.
  double msm_device_s[5] = {0, 0, 0, 0, 0};
};

// What ProvingKey::Prove's check before return found (see
// engine/proving_key.hpp).
struct ProofCheck {
  bool verified = false;  // checked against the key's verification key: valid
  double verify_s = 0;    // seconds spent verifying (re-proof included after a fault)
  // Non-empty when the engine's first proof failed verification although the
  // witness satisfies the circuit: what the verifier said about it. The proof
  // returned is then the reference re-proof, which verified (the CPU's;
  // engine/bellman.hpp says when a bellman key has none).
  std::string engine_fault;
};

// One proof as ProvingKey::Prove returns it: the points (verified, unless
// ProveOptions::verify is off), the snarkjs files formatted from those same
// points, the signals, and how it went.
struct Proof {
  ProofPoints points;       // canonical affine pi_a, pi_b, pi_c (points.curve set)
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
  // ProvingKey::Prove: verify the proof before returning it. Off
  // only for benchmarks (zkprove / zkworker --verify off).
  bool verify = true;
};

}  // namespace zkfleet::engine
