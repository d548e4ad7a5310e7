// What bellperson's synthesis produces, rebuilt for tests, benchmarks and
// zkfleet-dev (no Rust here): a BLS12-381 rank-1 constraint system in
// bellperson's variable order, the assignment a prover takes
// (engine::AssignmentView, the shape supraseal-c2 takes), and a synthetic
// circuit of a Filecoin PoRep partition's shape. Seeded parameters for a
// system are devtools' (devtools/zkfleet/devtools/seeded_parameters.hpp).
//
// Variables: inputs first (input 0 is the constant one), then aux. A circom
// circuit maps wire 0 -> input 0, its public wires 1..nPub -> inputs, the
// rest -> aux, in order. Like bellperson, synthesis appends one constraint
// per input, input_i · 0 = 0, after the circuit's own (so every input has an
// A point and the A polynomials are independent): abc_size = constraints +
// inputs, and the domain is the next power of two (at least 2).
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

// The real shape MakeSyntheticCircuit copies: one partition of a Filecoin
// 32 GiB PoRep (SealCommit / C2, v28 parameters ...-8-8-0-sha256_hasher-
// 82a357d2...). Measured by cuzk's constraint recorder (filecoin-project/
// curio @ e0294b0f, extern/cuzk/cuzk-project.md, the PCE extraction table,
// lines 1591-1601): 328 inputs (the constant one included: replica_id,
// comm_d, comm_r + 18 per challenge, 18 challenges), 130,278,869
// constraints, 130,169,893 aux variables, 129,753,292 of them A-dense,
// 33,112,281 B-dense, and of the inputs only the constant one B-dense. So
// abc_size 130,279,197, domain 2^27, and the .params hold h 2^27 - 1,
// l 130,169,893, a 129,753,620, b_g1 = b_g2 33,112,282 points (47.37 GB).
// Point counts: bellperson's generator (h: domain - 1; a, b: the dense
// variables) and supraseal-c2's asserts (its c2/cuda groth16_cuda source). The share
// of aux values that are 0 or 1 is not published: 99 % is an estimate (the
// SHA-256 gadgets, ~99 % of the rows, allocate only Booleans; the ~1 % of
// field elements are Poseidon S-box powers, selectors and packed labels).
namespace porep32g {
inline constexpr uint32_t kInputs = 328;
inline constexpr uint64_t kConstraints = 130'278'869;
inline constexpr uint64_t kAux = 130'169'893;
inline constexpr uint64_t kAuxA = 129'753'292;
inline constexpr uint64_t kAuxB = 33'112'281;
inline constexpr int kDomainLog = 27;
inline constexpr uint64_t kBitSharePercent = 99;  // an estimate, not a measurement
}  // namespace porep32g

// MakeSyntheticCircuit's n_public for the PoRep shape (kInputs less the one).
inline constexpr uint32_t kPoRepPublicInputs = porep32g::kInputs - 1;

// A satisfied synthetic circuit of 2^log_rows - n_inputs constraints (so
// abc_size is exactly 2^log_rows; at 2^27 that is 3.0 % more rows than the
// real 130,278,869) with the real partition's ratios:
//   - n_aux / constraints = 0.99916: every row defines one new aux variable
//     but one row in ~1,200, a check row (b·b = b of an earlier bit);
//   - A-dense aux 99.68 %, B-dense aux 25.44 %, B-dense inputs: the constant
//     one only;
//   - 99 % of aux values are bits (0 or 1, about half of them 1).
// Row kinds (f: the latest chain value, b: the latest bit):
//   public    (v - f)·1 = p_i    v = f + p_i     the first n_public rows
//   bit A+B   v·v = v            v a random bit  (a booleanity row)
//   bit A     v·1 = 1 - b        v = NOT b
//   field A   v·1 = 2f + 1       v = 2f + 1
//   field AB  (v - 2f)·v = 2f+1  v = 2f + 1
//   field C   (3f + 1)·1 = v     v = 3f + 1      named in C only (f stays)
//   check     b'·b' = b'         b': the latest bit A+B (1·1 = 1 before one)
// The kinds follow a smooth weighted round robin over integer weights, so
// after J rows each kind's count is within 2 of J times its share, at any
// size. The chain starts at v_0 (random); the structure depends on log_rows
// and n_public only, the values on the seed. Deterministic in `seed`.
// At log_rows 27, n_public kPoRepPublicInputs: 134,217,400 rows, n_aux
// 134,105,131, A-dense aux 133,675,937 (a: 133,676,265 points), B-dense
// 34,113,233 (b: 34,113,234), bits 132,763,755 (99.0 %): the counts are
// 3.02 % above the real ones, the ratios equal to theirs.
struct SyntheticCircuit {
  ConstraintSystem cs;
  std::vector<Fr> values;
};
SyntheticCircuit MakeSyntheticCircuit(int log_rows, uint32_t n_public, uint64_t seed);

}  // namespace zkfleet::bellman

namespace zkfleet::bellman {

// Another satisfying assignment of MakeSyntheticCircuit(log_rows, n_public,
// seed), the same constraint system (so the same parameters): its public
// inputs and v_0 drawn from `variant`, the chain recomputed, the random bits
// kept. Variant 0 returns the circuit's own values. For several partitions
// of one synthetic circuit (zkfleet-dev bellman-assignment --variant).
std::vector<Fr> SyntheticVariantValues(int log_rows, uint32_t n_public, uint64_t seed, uint64_t variant);

}  // namespace zkfleet::bellman
