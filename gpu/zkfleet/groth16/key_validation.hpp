// Validation of every point of a .zkey at load (KeyOptions::validate_key,
// on by default): the header points alpha1, beta1, delta1, beta2, gamma2,
// delta2 and the sections IC, A, B1, B2, C, H. Each point must have every
// coordinate (its Montgomery encoding, as stored) below q, lie on its curve
// and, where the curve has a cofactor, lie in the prime-order subgroup (G2
// on both curves, G1 on BLS12-381; fast endomorphism checks from
// curve/subgroup.hpp, per point; BN254's B2 section, from 256 points, by the
// batched randomized test of groth16/batch_subgroup.hpp, with the per-point
// test only to name the bad point when it fails; a bad key passes it with
// probability <= 2^-130). The point at infinity (all-zero encoding) is allowed
// everywhere except alpha1, beta1, delta1, beta2, gamma2, delta2.
//
// Runs in parallel on `threads` threads (0 = all hardware threads).
// Throws zkfleet::Error kBadFormat "<zkey>: section <name> point <index>:
// <what is wrong>" for the lowest-indexed bad point of the first bad section.
// The CUDA backend checks the big sections on the device instead (same rules,
// same message: it finds the index, CheckZkeyPoint says what is wrong).
// Thread-safety: pure functions of the zkey.
#pragma once

#include <cstdint>
#include <string>

#include "zkfleet/zkey/zkey.hpp"

namespace zkfleet::groth16 {

// Which points ValidateZkeyPoints checks.
enum class ZkeyPoints {
  kAll,          // the header points and IC, A, B1, B2, C, H
  kHeaderAndIc,  // the header points and IC (the rest checked elsewhere)
};

void ValidateZkeyPoints(const io::ZkeyFile& zkey, int threads, ZkeyPoints which = ZkeyPoints::kAll);

// Point `index` of section `section` ("A", "B1", "B2", "C" or "H"): throws the
// error ValidateZkeyPoints gives for it if it is bad, returns if it is good.
void CheckZkeyPoint(const io::ZkeyFile& zkey, const std::string& section, uint64_t index);

}  // namespace zkfleet::groth16
