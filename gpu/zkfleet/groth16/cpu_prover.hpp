// The Groth16 prover on the CPU, exactly as snarkjs computes a proof
// (spec §8), for one curve C (curve::Bn254 or curve::Bls12_381).
//
// Load() copies everything a proof needs out of the zkey into aligned,
// resident host memory (points in the zkey's own Montgomery affine encoding,
// the A/B coefficients regrouped by row so rows evaluate in parallel without
// locks, the NTT twiddles). Prove() then touches only the witness.
//
// Thread-safety: immutable after construction; Prove() may run on several
// threads at once (they share the thread pool).
#pragma once

#include <memory>
#include <string>

#include "zkfleet/groth16/key.hpp"
#include "zkfleet/zkey/zkey.hpp"

namespace zkfleet::cpu {

// Creates the CPU proving key for an already validated zkey.
std::unique_ptr<groth16::Key> LoadCpuProvingKey(const io::ZkeyFile& zkey,
                                                       const groth16::KeyOptions& options);

}  // namespace zkfleet::cpu
