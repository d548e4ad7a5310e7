// A Groth16 "setup" without powers of tau: draws the toxic waste tau, alpha,
// beta, delta (gamma = 1) itself and writes a .zkey in snarkjs' format
// (spec §4.4 and §13), so that big fixtures take seconds instead of hours.
//
// Whoever runs it knows the toxic waste and can forge proofs: the keys are
// for tests and benchmarks ONLY.
//
// What is written (n = domain size, x_i = g·ω_n^i on the odd coset g = ω_2n):
//   L_c(τ) = (τ^n − 1)/n · ω^c/(τ − ω^c)            Lagrange basis at τ
//   u_s, v_s, w_s = Σ_c A/B/C[c][s]·L_c(τ)           (+ L_{m+s} in u_s, s ≤ nPublic)
//   A[s] = u_s·G1, B1[s] = v_s·G1, B2[s] = v_s·G2
//   IC[s] = (β u_s + α v_s + w_s)·G1                  s ≤ nPublic
//   C[s] = (β u_s + α v_s + w_s)/δ·G1                 s > nPublic
//   H[i] = Z(τ)·ℓ_i(τ)/(Z(x_i)·δ)·G1                  ℓ_i: Lagrange basis of the coset
//        = (τ^2n − 1)/(2n)·x_i/(τ − x_i)/δ·G1         for g = ω_2n
// The point multiplications use fixed-base window tables of the generators,
// spread over a thread pool.
//
// Thread-safety: free functions; each call uses its own thread pool.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "zkfleet/devtools/domain.hpp"
#include "zkfleet/engine/types.hpp"
#include "zkfleet/r1cs/r1cs.hpp"

namespace zkfleet::devtools {

// The secrets of one setup, as canonical little-endian scalars (< r, non-zero).
struct ToxicWaste {
  std::array<uint8_t, 32> tau{}, alpha{}, beta{}, delta{};
};

// Draws tau, alpha, beta, delta (in that order) for `curve`: from the
// kernel's CSPRNG (getrandom) when `seed` is empty, else from a Prng seeded
// with it (reproducible test keys).
ToxicWaste DrawToxicWaste(engine::Curve curve, std::optional<uint64_t> seed);

struct SetupOptions {
  std::optional<uint64_t> seed;  // see DrawToxicWaste
  int threads = 0;               // 0 = all hardware threads
  // Reject circuits whose domain exceeds 2^max_power (1..kMaxDomainPower).
  int max_power = kMaxDomainPower;
  // Progress lines ("A points: 1.23 s"); may be empty.
  std::function<void(const std::string&)> log;
};

struct SetupReport {
  engine::Curve curve = engine::Curve::kBn254;
  uint32_t n_vars = 0;
  uint32_t n_public = 0;
  uint32_t n_constraints = 0;
  int domain_power = 0;
  uint32_t n_coeffs = 0;
  int g1_window_bits = 0, g2_window_bits = 0;
  std::vector<std::pair<std::string, double>> seconds;  // per step, in order
};

// Writes the zkey of `r1cs` to `zkey_path`, `name` naming the circuit in
// error messages. Throws zkfleet::Error: kUnsupported when the r1cs prime is
// not the scalar field of bn128 or bls12381; kInvalidArgument when the
// circuit has no constraints, its domain exceeds 2^max_power, or it has too
// many coefficients for the format; kIo on write failure.
SetupReport InsecureSetup(const io::R1cs& r1cs, const std::string& name, const std::string& zkey_path,
                          const SetupOptions& options);

// Same, reading the circuit from an .r1cs file first.
SetupReport InsecureSetupFromFile(const std::string& r1cs_path, const std::string& zkey_path,
                                  const SetupOptions& options);

}  // namespace zkfleet::devtools
