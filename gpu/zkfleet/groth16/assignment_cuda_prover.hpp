// The CUDA backend for bellperson-style assignments (engine/bellman.hpp has
// the algorithm; groth16/assignment_key.hpp the interface). Same results as
// the CPU backend, bit for bit.
//
// Load: the parameters' points (h, l, a, b_g1, b_g2) go to device memory
// once, with the NTT tables of bellperson's domain and all scratch (or, under
// a tight device memory budget, stay in page-locked host memory and stream).
// Prove: a, b, c go up as the caller holds them (Montgomery), become h's
// coefficients on the device (iNTT, coset NTT, quotient, coset iNTT); the
// input and aux assignment go up too and become the MSMs' scalars there
// (canonical in place, the a and b scalars gathered by density index arrays
// cached per circuit); the five MSMs run on four streams, or in chunks one
// after another; the host combines their window sums and assembles the proof.
//
// Ownership: the key owns its device and pinned memory.
// Thread-safety: Prove() may be called from several threads; device work is
// serialised per key.
#pragma once

#include <memory>

#include "zkfleet/groth16/assignment_key.hpp"
#include "zkfleet/groth16/assignment_memory_plan.hpp"

namespace zkfleet::cuda {

// Keeps every point resident when that fits KeyOptions::device_memory_budget
// (0: the device's free memory), the MSMs overlapped or in chunks, else
// streams them from pinned host memory (groth16/assignment_memory_plan.hpp
// says how it decides; info().placement what it chose). Throws
// kResourceExhausted when not even streaming fits.
std::unique_ptr<groth16::AssignmentKey> MakeCudaAssignmentKey(bellman::Parameters params,
                                                              const groth16::KeyOptions& options);

// The placement MakeCudaAssignmentKey would choose for parameters of this
// shape (no allocation).
groth16::DevicePlan PlanCudaAssignmentKey(const engine::BellmanInfo& shape, const groth16::KeyOptions& options);

}  // namespace zkfleet::cuda
