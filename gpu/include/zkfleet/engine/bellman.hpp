// Public API of the engine for bellperson-style Groth16 (BLS12-381, the
// proofs Filecoin storage providers make): load a .params file once, then
// prove many assignments against it, as supraseal-c2 does on the GPU after
// bellperson has synthesized the circuit on the CPU.
//
//   auto key = BellmanKey::Load("porep.params", {Backend::kAuto});
//   BellmanProof proof = key->Prove(assignment);   // verified before return
//   write(proof.bytes);                            // the 192-byte proof
//
// An assignment is the circuit already synthesized: the evaluations a, b, c
// of every constraint's three linear combinations (bellperson adds one
// constraint per input, so abc_size = constraints + inputs), the input and
// aux assignments, and the density bitmaps saying which variables have an A
// or a B point in the parameters. The prover needs no constraint system.
//
// Algorithm (bellperson's prover/native.rs; supraseal-c2's CUDA prover, supranational/supra_seal at c2ff1acf):
//   h  = coefficients of (A·B - C)/Z: iNTT of a, b, c on the domain (roots
//        7^((r-1)/n)), coset NTT (shift 7), a·b - c, times 1/(7^n - 1),
//        coset iNTT; the MSM takes the first n-1 coefficients with the h points;
//   l  = MSM of the aux assignment with the l points;
//   a  = MSM of the inputs and the A-dense aux values with the a points;
//   b  = MSM of the B-dense inputs and aux values with b_g1 and b_g2;
//   A  = alpha + a + r·delta,  B = beta + b_g2 + s·delta,
//   C  = s·A + r·(beta_g1 + b_g1 + s·delta_g1) - rs·delta_g1 + h + l.
//
// Every proof is verified before Prove() returns it (the bellman equation
// e(A,B) = e(alpha,beta)·e(IC(inputs),gamma)·e(C,delta), with the engine's
// pairing). A proof that fails is never returned: Prove() checks a·b = c on
// every row; if a row fails the assignment is unsatisfied (kUnsatisfied,
// naming the row); otherwise it proves once more with the same r and s on
// the reference path -- the CPU key of the same .params file (loaded on the
// first failure), or this key when it is the CPU's or was built in memory.
// A second proof that verifies is returned with ProofCheck::engine_fault
// set; a second failure on the CPU reference is kUnsatisfied (the
// evaluations do not belong to this assignment or these parameters), on a
// device without a reference kInternal (the engine cannot tell which).
//
// Thread-safety: a BellmanKey is immutable after Load(); Prove() may be
// called from several threads at once (CUDA device work is serialised per
// key).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "zkfleet/engine/assignment.hpp"
#include "zkfleet/engine/types.hpp"
#include "zkfleet/engine/verify.hpp"

namespace zkfleet::groth16 {
class AssignmentKey;  // the backend's key (internal)
}  // namespace zkfleet::groth16

namespace zkfleet::engine {

struct EngineOptions;  // proving_key.hpp

// How far a load's decode is: the bytes of the .params file decoded so far
// and its size (bellman::ReadOptions::progress: once at the start, then at
// most every 2 s, once at the end; a load that reads the file again starts
// again from the beginning).
using BellmanLoadProgress = std::function<void(uint64_t done_bytes, uint64_t total_bytes)>;

class BellmanKey {
 public:
  // Reads and checks `params_path` (counts, every point's encoding,
  // coordinates < q, on the curve, in the prime-order subgroup), keeps the
  // points resident (host memory for the CPU, device memory for CUDA).
  // Throws zkfleet::Error naming the file (and a bad point's section and
  // index). A CUDA key runs the curve and subgroup tests of h, l, a, b_g1
  // and b_g2 on the device, once uploaded; the CPU read checks the rest.
  //
  // The check is done once per file (options.validate_key on and
  // options.checked_keys enabled; engine/checked_keys.hpp): a file is
  // remembered by the identity of the open descriptor (fstat: device, inode,
  // size, mtime, ctime), taken before the first byte is read. A remembered
  // file is read with the encoding checks only (flags, infinity encoding,
  // coordinates < q, counts): no curve or subgroup test, on the CPU or the
  // device. Its identity is taken again after the read: if anything
  // changed, the file is opened again and read with every check (as a file
  // never seen). A file that passed the full check (the device's share
  // included) is recorded by the identity taken before its read, only when
  // the identity after the read is the same. key_check(): kChecked,
  // kRemembered, or kSkipped (validate_key off: no curve or subgroup test at
  // all); its digest is the identity's (the record is
  // params-<digest>.checked).
  static std::unique_ptr<BellmanKey> Load(const std::string& params_path, const EngineOptions& options,
                                          const BellmanLoadProgress& progress = {});
  ~BellmanKey();

  // How long Load() took: open_s = opening and mapping the file; digest_s =
  // the identity's digest and record lookup; key_check_s = decoding the
  // points with the CPU's checks that ran (one pass: decode and checks
  // together, both reads when a changed file was read again); backend_s =
  // the backend's copy (for CUDA: the upload and the device's checks);
  // total_s.
  const LoadTimings& load_timings() const;
  // Whether Load() checked the points, found the file checked before, or
  // was told not to check (see Load).
  const KeyCheckReport& key_check() const;

  const BellmanInfo& info() const;
  const VerificationKey& verification_key() const;
  // The .vk file of these parameters (bellperson's layout).
  const std::vector<uint8_t>& verifying_key_bytes() const;

  // Proves one assignment (see the top of this file). r and s in `options`
  // are canonical little-endian (tests); unset = fresh random values.
  // Throws zkfleet::Error: kMismatch when the assignment's sizes do not fit
  // the parameters (naming which), kUnsatisfied, kDeviceError /
  // kResourceExhausted / kDeviceLost on a CUDA failure.
  BellmanProof Prove(const AssignmentView& assignment, const ProveOptions& options = {}) const;

  // Internal: wraps a backend key (zkfleet/groth16/assignment_key.hpp inside gpu/).
  // Such a key has no CPU reference path unless it is the CPU's.
  BellmanKey(std::unique_ptr<groth16::AssignmentKey> backend_key, std::vector<uint8_t> vk_bytes,
             const VerificationKey& vk);

 private:
  // The key a failed proof is proved again on (see the top); null when there is none.
  const groth16::AssignmentKey* ReferenceBackend() const;

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Field elements as blst, sppark and supraseal-c2 lay them out: little-endian
// 64-bit limbs in Montgomery form (FrMont for a scalar, x·2^256 mod r;
// FqMont for a base-field coordinate, x·2^384 mod q), to and from the
// canonical values this API takes and returns, for a caller that speaks
// their ABI (clients/supraseal-c2).
using FqMont = std::array<uint64_t, 6>;

// A Montgomery scalar as ProveOptions::r / s take it: canonical,
// little-endian bytes. nullopt when the limbs are not below r (not a
// reduced Montgomery scalar).
std::optional<std::array<uint8_t, 32>> FrMontToCanonical(const FrMont& mont);

// A canonical coordinate of a BLS12-381 point (ProofPoints' x, y, x0, ...,
// all < q) in Montgomery form. A value >= q comes out reduced mod q.
FqMont FqCanonicalToMont(const BigInt& canonical);

}  // namespace zkfleet::engine
