// What bellperson's synthesis produces, rebuilt for tests, benchmarks and
// zkfleet-dev (no Rust here): a BLS12-381 rank-1 constraint system in
// bellperson's variable order, the assignment a prover takes
// (engine::AssignmentView, the shape supraseal-c2 takes), and insecure
// synthetic parameters for it in the .params layout.
//
// Variables: inputs first (input 0 is the constant one), then aux. A circom
// circuit maps wire 0 -> input 0, its public wires 1..nPub -> inputs, the
// rest -> aux, in order. Like bellperson, synthesis appends one constraint
// per input, input_i · 0 = 0, after the circuit's own (so every input has an
// A point and the A polynomials are independent): abc_size = constraints +
// inputs, and the domain is the next power of two (at least 2).
//
// SynthesizeParameters is bellperson's generator.rs with seeded "toxic
// waste" (tau, alpha, beta, gamma, delta from a seed): anyone who knows the
// seed can forge proofs. For tests and benchmarks only.
//
// Thread-safety: values; the functions use the caller's pool.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zkfleet/bellman/parameters.hpp"
#include "zkfleet/engine/assignment.hpp"
#include "zkfleet/ff/bls12_381.hpp"
#include "zkfleet/r1cs/r1cs.hpp"
#include "zkfleet/runtime/thread_pool.hpp"

namespace zkfleet::bellman {

using Fr = ff::Bls12_381Fr;

// Linear combinations stored by row: row i owns terms [start[i], start[i+1]).
struct LinearCombinations {
  struct Term {
    uint32_t var;  // < n_inputs: input var; else aux var - n_inputs
    Fr coef;       // Montgomery form
  };
  std::vector<uint64_t> start{0};
  std::vector<Term> terms;
  size_t rows() const { return start.size() - 1; }
  void EndRow() { start.push_back(terms.size()); }
};

struct ConstraintSystem {
  uint32_t n_inputs = 1;  // the constant one included
  uint32_t n_aux = 0;
  LinearCombinations a, b, c;  // the circuit's constraints (not the input ones)
  size_t n_constraints() const { return a.rows(); }
  uint32_t n_vars() const { return n_inputs + n_aux; }
};

// abc_size and the domain of a system (see above).
size_t AbcSize(const ConstraintSystem& cs);
int DomainLog(const ConstraintSystem& cs);

// A circom .r1cs over BLS12-381 in bellperson's order. Throws kMismatch for
// another prime.
ConstraintSystem FromCircom(const io::R1cs& r1cs);

// A synthesized circuit, owning its vectors; View() lends them to a prover.
struct Assignment {
  std::vector<engine::FrMont> a, b, c, input, aux;
  std::vector<uint64_t> a_aux_density, b_input_density, b_aux_density;
  engine::AssignmentView View() const;
};

// Evaluates every constraint on `values` (all variables, inputs first, the
// constant one at 0, Montgomery) and fills the densities from the system's
// structure (a variable is dense in A/B when a term of A/B names it).
// Throws kInvalidArgument when values has the wrong length or value[0] != 1.
Assignment Synthesize(const ConstraintSystem& cs, const std::vector<Fr>& values, ThreadPool& pool);

// The densities alone (what the parameters' a / b point counts follow).
struct Densities {
  std::vector<bool> a_aux, b_input, b_aux;
};
Densities DensitiesOf(const ConstraintSystem& cs);

// Insecure parameters for `cs` from `seed` (see the top).
Parameters SynthesizeParameters(const ConstraintSystem& cs, uint64_t seed, ThreadPool& pool);

// A satisfied synthetic circuit of 2^log_rows - n_inputs constraints (so
// abc_size is exactly 2^log_rows) shaped like a Filecoin PoRep partition:
// a multiplication chain over aux variables where A names every aux
// variable, B about half of them (the others multiply by the constant), a
// third of the aux values are bits (0 or 1), and the public inputs enter
// the first rows. Deterministic in `seed`.
struct SyntheticCircuit {
  ConstraintSystem cs;
  std::vector<Fr> values;
};
SyntheticCircuit MakeSyntheticCircuit(int log_rows, uint32_t n_public, uint64_t seed);

}  // namespace zkfleet::bellman

namespace zkfleet::bellman {

// Another satisfying assignment of MakeSyntheticCircuit(log_rows, n_public,
// seed), the same constraint system (so the same parameters): its public
// inputs and first chain value drawn from `variant`, the chain recomputed.
// Variant 0 returns the circuit's own values. For several partitions of one
// synthetic circuit (zkfleet-dev bellman-assignment --variant).
std::vector<Fr> SyntheticVariantValues(int log_rows, uint32_t n_public, uint64_t seed, uint64_t variant);

}  // namespace zkfleet::bellman
