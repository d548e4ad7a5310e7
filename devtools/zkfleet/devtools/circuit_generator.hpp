// Synthetic circom-style circuits with a satisfying witness, for tests and
// benchmarks at sizes where compiling a real circuit is impractical.
//
// The shape imitates compiled circom code: sparse rows (one to three terms
// per linear combination, the constant wire 0 in many of them), boolean
// signals constrained by b*(b-1) = 0 and used as selectors, products of
// random field elements, a few linear and inverse constraints. About half of
// the witness values are 0 or 1, like real circuits. Wire order follows
// circom: 0 = the constant 1, outputs, public inputs, private inputs, then
// internal signals. Every constraint except the output ones defines one new
// internal signal; the last `public_outputs` rows define the outputs.
//
// Everything is drawn from a Prng seeded by `seed`: the same options give the
// same bytes on every platform.
//
// Thread-safety: free functions without shared state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zkfleet/devtools/domain.hpp"
#include "zkfleet/engine/types.hpp"
#include "zkfleet/r1cs/r1cs.hpp"

namespace zkfleet::devtools {

struct CircuitOptions {
  engine::Curve curve = engine::Curve::kBn254;
  uint64_t constraints = 0;      // exact number of R1CS rows
  uint32_t public_outputs = 1;   // >= 1
  uint32_t public_inputs = 2;    // >= 1
  uint32_t private_inputs = 2;
  uint64_t seed = 1;
  // Reject circuits whose Groth16 domain would exceed 2^max_power
  // (1..kMaxDomainPower).
  int max_power = kMaxDomainPower;
};

struct CircuitStats {
  uint64_t terms = 0;           // non-zero coefficients in A, B and C together
  uint64_t boolean_values = 0;  // witness values equal to 0 or 1
  int domain_power = 0;         // log2 of the Groth16 domain setup will use
};

struct GeneratedCircuit {
  io::R1cs r1cs;
  std::vector<uint8_t> witness;  // r1cs.header.n_wires values, 32 bytes LE canonical each
  CircuitStats stats;
};

// The largest constraint count whose domain fits 2^max_power with n_public
// public signals.
uint64_t MaxConstraints(int max_power, uint64_t n_public);

// Builds the circuit and its witness. Throws zkfleet::Error kInvalidArgument
// with a message naming the option when the options are out of range
// (constraints 0 or fewer than public_outputs, no public input or output, a
// domain above 2^max_power, max_power outside 1..kMaxDomainPower).
GeneratedCircuit GenerateCircuit(const CircuitOptions& options);

// Writes the circuit as a circom .r1cs and the witness as a .wtns. Throws
// kIo on write failure.
void WriteCircuitFiles(const GeneratedCircuit& circuit, const std::string& r1cs_path,
                       const std::string& wtns_path);

}  // namespace zkfleet::devtools
