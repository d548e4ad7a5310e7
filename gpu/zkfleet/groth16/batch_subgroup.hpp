// Batched prime-order subgroup test for many BN254 G2 points: the key check
// of a .zkey's B2 section (groth16/key_validation.cpp), about 6x cheaper per
// point than the endomorphism test of curve/subgroup.hpp (one 63-bit scalar
// multiplication in Fq2 per point, ~46 us on the 2-core VM).
//
// The test: for rounds b = 1..R, draw independent random coefficients c_{b,i}
// and check that S_b = sum_i c_{b,i} P_i lies in G2, with the exact
// endomorphism test on S_b. Each S_b is computed by a bucket method with
// batched affine additions (msm_detail::AffineBuckets, the CPU MSM's; it
// handles P + P and P + (-P)). A coefficient is one signed digit of `bits`
// bits, uniform over 2^bits consecutive integers: one addition per point and
// round, and 2^(bits-1) buckets per round to reduce. BatchSubgroupPlanFor
// picks `bits` and R for the points each thread sums: fewer bits mean more
// rounds, more bits more buckets (about 3 · 2^(bits-1) additions a round);
// 31k points on 2 threads take 10 bits and 13 rounds.
//
// Soundness. The points must be on the twist E'(Fq2) (the caller checks:
// cheap), where #E' = r·h with h = 2q - r, gcd(r, h) = 1, so every point is
// P = g + t with g in G2 and t in the subgroup T of order h, and P is in G2
// iff t = 0. Honest keys always pass (every S_b is in G2). If some t_j != 0,
// then S_b in G2 requires c_{b,j}·t_j = -sum_{i != j} c_{b,i} t_i, which, for
// any fixed other coefficients, holds for c_{b,j} in at most one residue
// class modulo ord(t_j) >= l_min, the smallest prime factor of h:
//   h = 10069 · 5864401 · 1875725156269 · 197620364512881247228717050342013327560683201906968909,
// so for at most one of the 2^bits values of c_{b,j} (bits <= 13, and
// 2^13 < 10069): a bad key passes one round with probability <= 2^-bits
// and all R independent rounds with probability <= 2^-security_bits (2^-130
// by default: R is chosen so; fresh coefficients at every load, from
// libsodium's CSPRNG, drawn after the key is fixed). One round would not do:
// a point with a component of order 10069 passes it with probability ~1e-4
// (tests/unit/pairing/batch_subgroup_test.cpp checks h's factors and such
// points). Only BN254 G2 qualifies: BLS12-381's cofactors have the factors 3
// (G1) and 13 (G2), and keep the per-point test.
//
// A false answer is certain (some point is outside G2) but names no point:
// the caller finds the lowest bad index with the exact per-point test.
//
// Thread-safety: pure function of its inputs; runs on `pool`.
#pragma once

#include <cstdint>

#include "zkfleet/runtime/thread_pool.hpp"

namespace zkfleet::groth16 {

inline constexpr int kBn254G2BatchSecurityBits = 130;

struct BatchSubgroupOptions {
  // A bad set passes with probability <= 2^-security_bits (1 to 256).
  int security_bits = kBn254G2BatchSecurityBits;
  // Tests only: 32 bytes from which the coefficients are derived
  // (reproducible runs); nullptr = libsodium's CSPRNG.
  const uint8_t* test_seed = nullptr;
};

// `points`: `count` BN254 G2 points as a .zkey stores them (x.c0, x.c1, y.c0,
// y.c1, each 4 Montgomery limbs of Fq, no alignment needed), every one
// already checked to have coordinates < q and to be on the curve, or the
// point at infinity (all zero, skipped). True: all are in G2 (a bad set
// passes with probability <= 2^-security_bits); false: at least one is not.
bool Bn254G2AllInSubgroup(const uint8_t* points, uint64_t count, cpu::ThreadPool& pool,
                          const BatchSubgroupOptions& options = {});

// How the coefficients are drawn for `points_per_slice` points a thread:
// the digit size of least cost (the model above) with the rounds that reach
// `security_bits`. Exposed for its tests.
struct BatchSubgroupPlan {
  int bits = 10;
  int rounds = 13;
  // log2 of 1 / (the most a bad point can pass one round with).
  double round_bits() const;
  // Additions per slice, the chooser's cost: rounds · (points + 3 · 2^(bits-1)
  // + ~130, the exact test of the round's sum).
  double cost(uint64_t points_per_slice) const;
};
BatchSubgroupPlan BatchSubgroupPlanFor(uint64_t points_per_slice, int security_bits);

}  // namespace zkfleet::groth16
