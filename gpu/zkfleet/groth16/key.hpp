// What a backend's Groth16 proving key is (groth16/cpu_prover.hpp,
// groth16/cuda_prover.hpp): the Key interface and the values it takes and
// returns. The API above (engine::ProvingKey) holds one Key, checks its
// proofs and formats them. The value types are the API's own
// (zkfleet/engine/types.hpp, a public header at the bottom of every floor),
// re-exported here under groth16:: names; nothing here includes the API's
// implementation.
//
// Thread-safety: a Key is immutable after construction; ProveUnchecked may be
// called from several threads at once.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zkfleet/engine/types.hpp"
#include "zkfleet/groth16/verifier.hpp"
#include "zkfleet/wtns/witness.hpp"

namespace zkfleet::groth16 {

using engine::KeyOptions;
using engine::CircuitInfo;
using engine::PhaseTimings;
using engine::ProofCheck;
using engine::ProveOptions;

// What a backend's key proves: the assembled points (canonical, affine) and
// how long each phase took. engine::ProvingKey verifies the points and
// formats proof.json / public.json from them.
struct RawProof {
  Proof points;
  PhaseTimings timings;
};

class Key {
 public:
  virtual ~Key() = default;
  virtual const CircuitInfo& info() const = 0;
  // The proof of `witness`, unchecked. `inject_fault` (test only): corrupt
  // pi_a's MSM result before assembly.
  virtual RawProof ProveUnchecked(const io::Witness& witness, const ProveOptions& options, bool inject_fault) const = 0;
  // Blocks until the MSM table copies built in the background are done
  // (engine::ProvingKey::AwaitMsmTables); true when proofs now run over them.
  // A key that makes no copies returns false at once.
  virtual bool AwaitMsmTables() const { return false; }
};

}  // namespace zkfleet::groth16
