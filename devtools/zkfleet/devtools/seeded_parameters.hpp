// Insecure Groth16 parameters in bellperson's .params layout for any
// bellman::ConstraintSystem: bellperson's generator.rs with seeded "toxic
// waste" (tau, alpha, beta, gamma, delta from a seed), so that anyone who
// knows the seed can forge proofs. For tests, benchmarks and zkfleet-dev
// only; the engine reads real parameters and never makes any.
//
// The counts and the domain are bellperson's (bellman/parameters.hpp,
// bellman/constraint_system.hpp: every input has an A point, h has
// domain - 1 points, a and b follow the densities); the domain is
// bellperson's too (bellman/domain.hpp: roots of 7).
//
// Thread-safety: values; the functions use the caller's pool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "zkfleet/bellman/constraint_system.hpp"
#include "zkfleet/bellman/parameters.hpp"
#include "zkfleet/runtime/thread_pool.hpp"

namespace zkfleet::devtools {

// Insecure parameters for `cs` from `seed` (see the top).
bellman::Parameters SynthesizeParameters(const bellman::ConstraintSystem& cs, uint64_t seed, cpu::ThreadPool& pool);

// The same parameters, byte for byte, with the fixed-base multiplications on
// CUDA device `device` (bellman/fixed_base_cuda.hpp: about 32 mixed additions
// per point, chunked, at most 2.5 GiB of device memory whatever the size);
// the scalars are ComputeParameterScalars' on the CPU. Throws kUnsupported in
// a build without CUDA, kDeviceError / kResourceExhausted from the device.
// Host memory at 2^27 (MakeSyntheticCircuit(27, kPoRepPublicInputs)): the
// peak is 50.6 GB (ParametersFromScalarsCuda's) besides `cs`, which the
// caller holds throughout (24.8 GB there: 40-byte terms, a 136.3 M, b 134.2 M,
// c 268.4 M reserved, row starts 3.2 GB), so 75.4 GB with it; to drop cs
// before the points, call the two steps below yourself.
bellman::Parameters SynthesizeParametersCuda(const bellman::ConstraintSystem& cs, uint64_t seed, cpu::ThreadPool& pool,
                                             int device);

// SynthesizeParameters in two steps, so that the constraint system can be
// released between them: the scalars (the only step that reads cs), then
// the points (CPU or CUDA; the same bytes).
//
// ParameterScalars: the toxic waste and each section's scalars, the points'
// discrete logarithms (Montgomery Fr): vk.ic[i] = ic[i]·G1, l, a, b_g1 (and
// b_g2 over G2) likewise, h[i] = h_base·tau^i·G1 for i < h_count (h's
// scalars are made on the fly, chunk by chunk: HScalars).
struct ParameterScalars {
  bellman::Fr alpha, beta, gamma, delta;  // the verifying key's
  bellman::Fr tau, h_base;                // h_base = (tau^n - 1) / delta
  size_t h_count = 0;                     // domain size - 1
  std::vector<bellman::Fr> ic, l, a, b;   // (beta·u + alpha·v + w)/gamma per input, /delta per aux; u of a's, v of b's
  // out[i - lo] = h_base·tau^i for i in [lo, hi).
  void HScalars(size_t lo, size_t hi, bellman::Fr* out) const;
};

// Host memory at 2^27 (synthetic PoRep shape: n = 2^27, 134,105,459
// variables, a 133,676,265, b 34,113,234; an Fr is 32 bytes), besides cs:
// the Lagrange basis (4.29 GB, in parallel chunks, each with its own batch
// inversion), then k = beta·u + alpha·v + w built from w, v, u one after
// another (the largest moment: Lagrange + k + b + u + a 134 MB product
// buffer = 14.1 GB), the result 9.7 GB (l 4.29, a 4.29, b 1.09). Parallel
// on the pool but for the sums of each matrix's terms into their variables
// (one thread, in order of the terms).
ParameterScalars ComputeParameterScalars(const bellman::ConstraintSystem& cs, uint64_t seed, cpu::ThreadPool& pool);

// The points on the CPU (what SynthesizeParameters does).
bellman::Parameters ParametersFromScalars(ParameterScalars scalars, cpu::ThreadPool& pool);

// The points on CUDA device `device`, section by section (vk.ic, h, l, a,
// b_g1, b_g2), each section's scalars freed as soon as it is multiplied
// (pass the scalars with std::move). chunk_points: points per device chunk
// (0: 2^22 for G1, 2^21 for G2; smaller values for tests of the chunking).
// Host memory at 2^27 (as above): the scalars (9.7 GB) plus the points,
// G1 96 bytes and G2 192: h 12.9 GB, l 12.9, a 12.8, b_g1 3.3, b_g2 6.6
// (each section's vector sized on a side thread while the one before it
// computes); the peak is during b_g1: 48.4 GB of points + b's scalars 1.1 +
// G1's pinned staging 1.1 = 50.6 GB. Throws kUnsupported in a build
// without CUDA.
bellman::Parameters ParametersFromScalarsCuda(ParameterScalars scalars, cpu::ThreadPool& pool, int device,
                                              size_t chunk_points = 0);

// k_i·G for the generator G of G1 / G2: the CPU's fixed-base multiplication
// (8-bit windows, 32 mixed additions a point, batch affine conversion),
// what ParametersFromScalars uses and what the CUDA one is checked against.
// Montgomery scalars; 0 gives (0, 0).
bellman::PointVector<bellman::G1Affine> MulGeneratorG1(const std::vector<bellman::Fr>& scalars, cpu::ThreadPool& pool);
bellman::PointVector<bellman::G2Affine> MulGeneratorG2(const std::vector<bellman::Fr>& scalars, cpu::ThreadPool& pool);

}  // namespace zkfleet::devtools
