// Batched prime-order subgroup test for many BN254 G2 points: the key check
// of a .zkey's B2 section (groth16/key_validation.cpp), about 6x cheaper per
// point than the endomorphism test of curve/subgroup.hpp (one 63-bit scalar
// multiplication in Fq2 per point, ~46 us on the 2-core VM).
//
// The test: for rounds b = 1..R (R = kBn254G2BatchRounds), draw independent
// random coefficients c_{b,i} and check that S_b = sum_i c_{b,i} P_i lies in
// G2, with the exact endomorphism test on S_b. Each S_b is computed by a
// bucket method with batched affine additions (msm_detail::AffineBuckets, the
// CPU MSM's; it handles P + P and P + (-P)). The coefficients are either
// c = d0 + 256·d1 with digits d0, d1 uniform in [-127, 128] (2 additions per
// point and round, 2 x 128 buckets to reduce), uniform over 65536 consecutive
// integers, or, where a thread has at least 32768 points, one digit uniform
// in [-8191, 8192] (1 addition per point and round, 8192 buckets), uniform
// over 16384 consecutive integers.
//
// Soundness. The points must be on the twist E'(Fq2) (the caller checks:
// cheap), where #E' = r·h with h = 2q - r, gcd(r, h) = 1, so every point is
// P = g + t with g in G2 and t in the subgroup T of order h, and P is in G2
// iff t = 0. Honest keys always pass (every S_b is in G2). If some t_j != 0,
// then S_b in G2 requires c_{b,j}·t_j = -sum_{i != j} c_{b,i} t_i, which, for
// any fixed other coefficients, holds for c_{b,j} in at most one residue
// class modulo ord(t_j) >= l_min, the smallest prime factor of h:
//   h = 10069 · 5864401 · 1875725156269 · 197620364512881247228717050342013327560683201906968909,
// so for at most ceil(65536 / 10069) = 7 of the 65536 values of c_{b,j}
// (ceil(16384 / 10069) = 2 of 16384 for one 14-bit digit): a bad key passes
// one round with probability <= 7/65536 (2^-13.19; 2^-13 with 14 bits) and
// all R = 10 independent rounds with probability <= 2^-130 (fresh
// coefficients at every load, from libsodium's CSPRNG, drawn after the key is
// fixed). One round would not do: a point with a component of order 10069
// passes it with probability ~1e-4 (tests/unit/pairing/batch_subgroup_test.cpp
// checks h's factors and such points). Only BN254 G2 qualifies: BLS12-381's
// cofactors have the factors 3 (G1) and 13 (G2), and keep the per-point
// test.
//
// A false answer is certain (some point is outside G2) but names no point:
// the caller finds the lowest bad index with the exact per-point test.
//
// Thread-safety: pure function of its inputs; runs on `pool`.
#pragma once

#include <cstdint>

#include "zkfleet/runtime/thread_pool.hpp"

namespace zkfleet::groth16 {

inline constexpr int kBn254G2BatchRounds = 10;

struct BatchSubgroupOptions {
  int rounds = kBn254G2BatchRounds;
  // Tests only: 32 bytes from which the coefficients are derived
  // (reproducible runs); nullptr = libsodium's CSPRNG.
  const uint8_t* test_seed = nullptr;
};

// `points`: `count` BN254 G2 points as a .zkey stores them (x.c0, x.c1, y.c0,
// y.c1, each 4 Montgomery limbs of Fq, no alignment needed), every one
// already checked to have coordinates < q and to be on the curve, or the
// point at infinity (all zero, skipped). True: all are in G2 (a bad set
// passes with probability <= 2^-130 at the default rounds); false: at least
// one is not.
bool Bn254G2AllInSubgroup(const uint8_t* points, uint64_t count, cpu::ThreadPool& pool,
                          const BatchSubgroupOptions& options = {});

}  // namespace zkfleet::groth16
