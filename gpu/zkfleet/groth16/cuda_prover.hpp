// The Groth16 prover on a CUDA GPU: same algorithm and results as the CPU
// prover (groth16/cpu_prover.hpp, spec §8), with every heavy step on the
// device.
//
// Load (LoadCudaProvingKey): uploads the zkey's points (A, B1, B2, C, H), the
// A/B coefficients regrouped by row, and the NTT twiddles to device memory
// once; allocates all device scratch (witness, A/B/C vectors, MSM workspace)
// and a small pinned host staging area (MSM window sums out), each sized
// from the circuit. Everything is counted in cuda::AllocationStats();
// Prove() allocates nothing.
//
// Prove: uploads the witness straight from Witness::values() (no host copy;
// a true async DMA when the caller's bytes are page-locked), evaluates
// A, B, C = A·B, moves them to the odd coset (3 iNTT + 3 NTT), forms the H
// scalars, runs the five MSMs, copies the window sums back, and assembles
// and blinds the proof on the host exactly like the CPU path.
//
// Ownership: the key owns its device and pinned memory until destroyed.
// Thread-safety: immutable after Load; Prove() may be called from several
// threads: device work is serialised per device (a per-device mutex);
// host-side combination, assembly and verification overlap.
// Errors: CUDA failures throw zkfleet::Error (kDeviceError, or
// kResourceExhausted when out of memory) naming the phase; after a
// non-sticky error the key stays usable (cuda_check.hpp explains which
// errors are not recoverable).
#pragma once

#include <memory>

#include "zkfleet/groth16/key.hpp"
#include "zkfleet/zkey/zkey.hpp"

namespace zkfleet::cuda {

// Creates the CUDA proving key for an already validated zkey on
// options.cuda_device. Throws zkfleet::Error (kDeviceError when the device
// is missing, kResourceExhausted when the circuit does not fit).
std::unique_ptr<groth16::Key> LoadCudaProvingKey(const io::ZkeyFile& zkey, const groth16::KeyOptions& options);

}  // namespace zkfleet::cuda
