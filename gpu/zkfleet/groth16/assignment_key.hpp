// The backends' keys for bellperson-style assignments (engine/bellman.hpp):
// parameters resident, ProveUnchecked() returns the assembled points, which
// engine::BellmanKey verifies and encodes. Also the host steps: checking an
// assignment against the parameters' shape (both backends), and packing its
// scalars by density the way the parameters' a / b_g1 / b_g2 points are
// packed (the CPU backend; the CUDA one gathers them on the device).
//
// Thread-safety: a key is immutable after construction; ProveUnchecked may
// be called from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "zkfleet/bellman/parameters.hpp"
#include "zkfleet/engine/assignment.hpp"
#include "zkfleet/groth16/key.hpp"
#include "zkfleet/runtime/thread_pool.hpp"

namespace zkfleet::groth16 {

using cpu::ThreadPool;

class AssignmentKey {
 public:
  virtual ~AssignmentKey() = default;
  virtual const engine::BellmanInfo& info() const = 0;
  // `inject_fault` (test only): corrupt the A MSM's result before assembly.
  virtual RawProof ProveUnchecked(const engine::AssignmentView& assignment, const ProveOptions& options,
                                  bool inject_fault) const = 0;
};

// The shape every assignment must have for parameters of `info`'s shape:
// throws kMismatch naming the first field that differs.
void CheckAssignmentShape(const engine::AssignmentView& assignment, const engine::BellmanInfo& info);

// The MSM scalars of one assignment, canonical little-endian (4 limbs each):
//   a: every input, then the aux values whose A density bit is set;
//   b: the inputs and aux values whose B density bits are set;
//   l: every aux value.
struct PackedScalars {
  std::vector<uint64_t> a, b, l;
};
PackedScalars PackScalars(const engine::AssignmentView& assignment, ThreadPool& pool);

// The shape of `params` (counts, the domain), without the path or backend.
engine::BellmanInfo ShapeOf(const bellman::Parameters& params);

std::unique_ptr<AssignmentKey> MakeCpuAssignmentKey(bellman::Parameters params, const KeyOptions& options);

}  // namespace zkfleet::groth16
