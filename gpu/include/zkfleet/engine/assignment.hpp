// The value types of the engine's assignment prover (engine/bellman.hpp):
// a synthesized circuit as supraseal-c2 takes it, the shape of loaded
// parameters, a proof. Part of the engine's vocabulary: every floor may use
// them.
//
// Thread-safety: plain values.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "zkfleet/engine/types.hpp"
#include "zkfleet/engine/verify.hpp"

namespace zkfleet::engine {

// A BLS12-381 scalar as blst, blstrs and supraseal-c2 hold it: four
// little-endian 64-bit limbs in Montgomery form (x·2^256 mod r).
using FrMont = std::array<uint64_t, 4>;

// One synthesized circuit, borrowed for the duration of Prove().
struct AssignmentView {
  std::span<const FrMont> a, b, c;  // constraint evaluations (abc_size each, at most the domain)
  std::span<const FrMont> input;    // the input assignment, the constant one first
  std::span<const FrMont> aux;      // the aux (private) assignment
  // Bit i of word i/64: aux variable i has an A point; input i has a B
  // point; aux variable i has a B point. (Inputs all have A points.)
  std::span<const uint64_t> a_aux_density, b_input_density, b_aux_density;
};

// The shape of a loaded .params file.
struct BellmanInfo {
  uint32_t n_inputs = 0;     // IC points: public inputs + the constant one
  uint32_t n_aux = 0;        // l points
  uint32_t domain_size = 0;  // h points + 1
  uint32_t n_a = 0, n_b = 0;  // a points, b_g1 (= b_g2) points
  uint64_t resident_bytes = 0;
  Backend backend = Backend::kCpu;
  std::string path;
  // CUDA: where the points live under KeyOptions::device_memory_budget
  // ("resident, overlapped MSMs", "streamed from pinned host memory in
  // chunks of 2^23 points", ...); empty on the CPU.
  std::string placement;
};

struct BellmanProof {
  ProofPoints points;                 // canonical affine A, B, C
  std::array<uint8_t, 192> bytes{};   // bellperson's compressed encoding of the same points
  std::vector<BigInt> public_inputs;  // input[1..], canonical
  PhaseTimings timings;
  ProofCheck check;
};

}  // namespace zkfleet::engine
