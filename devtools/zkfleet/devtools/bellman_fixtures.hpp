// Fixtures for the bellperson-style prover (engine/bellman.hpp), behind
// `zkfleet-dev bellman-params` and `zkfleet-dev bellman-assignment`:
// INSECURE seeded parameters (.params, optionally the .vk) for a circuit,
// and a circuit's synthesized assignment as an assignment file
// (engine/assignment_file.hpp) with its public inputs as JSON.
//
// The circuit is either a circom .r1cs over BLS12-381 (with its .wtns for an
// assignment) or bellman::MakeSyntheticCircuit(log_rows, n_public, seed). A
// synthetic circuit is made from the same seed in both commands, so
// `bellman-params --synthetic K --public N --seed S` and
// `bellman-assignment --synthetic K --public N --seed S` fit each other; the
// parameters' toxic waste also comes from that seed (anyone who knows it can
// forge proofs: tests and benchmarks only).
//
// Thread-safety: free functions; each call uses its own thread pool.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zkfleet::devtools {

struct BellmanCircuitSource {
  std::string r1cs_path;       // a circom .r1cs, or empty for a synthetic circuit
  std::string wtns_path;       // the .r1cs's witness (assignments only)
  int synthetic_log_rows = 0;  // the synthetic circuit's abc_size is 2^this
  uint32_t n_public = 1;       // its public inputs (the constant one not counted)
  uint64_t seed = 0;           // the synthetic circuit's, and the parameters' toxic waste
  // A synthetic circuit's assignment: 0 = its own values, N > 0 = another
  // assignment of the same constraint system (other public inputs), for
  // several partitions proved with one .params (SyntheticVariantValues).
  uint64_t variant = 0;
  int threads = 0;             // 0 = all hardware threads
};

struct BellmanParamsReport {
  uint32_t n_inputs = 0, n_aux = 0;  // the constant one counted in n_inputs
  uint64_t n_constraints = 0;        // the circuit's own (not the one per input)
  int domain_log = 0;
  uint64_t n_ic = 0, n_h = 0, n_l = 0, n_a = 0, n_b = 0;
};

// Writes the parameters to `params_path` and, unless `vk_path` is empty,
// the verifying key to `vk_path`. Throws zkfleet::Error naming the file.
BellmanParamsReport WriteBellmanParams(const BellmanCircuitSource& source, const std::string& params_path,
                                       const std::string& vk_path);

struct BellmanAssignmentReport {
  uint64_t abc_size = 0, n_inputs = 0, n_aux = 0;
  std::vector<std::string> public_inputs;  // input[1..], decimal
};

// Synthesizes the circuit's assignment and writes it to `out_path`; unless
// `inputs_json_path` is empty, the public inputs (input[1..]) as a JSON
// array of decimal strings there. Throws zkfleet::Error: kMismatch when the
// witness does not belong to the .r1cs (count, prime), kUnsatisfied when it
// does not satisfy it, kIo naming a file that cannot be written.
BellmanAssignmentReport WriteBellmanAssignment(const BellmanCircuitSource& source, const std::string& out_path,
                                               const std::string& inputs_json_path);

}  // namespace zkfleet::devtools
