// bellperson's Groth16 formats over BLS12-381, the ones Filecoin uses
// (bellperson src/groth16/{params,verifying_key,proof}.rs; rust-fil-proofs
// parameter_cache.rs; supraseal-c2's SRS reader, cuda/groth16_srs):
//
//   .vk      alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2 (uncompressed),
//            then a big-endian u32 count and that many IC points (G1).
//   .params  the .vk, then h, l, a, b_g1 (G1) and b_g2 (G2), each a big-endian
//            u32 count followed by uncompressed points.
//   proof    A (G1, compressed, 48 bytes) ‖ B (G2, compressed, 96) ‖ C (G1,
//            compressed, 48) = 192 bytes; a multi-partition proof is the
//            partitions' proofs concatenated.
// Points use the zcash/blst encoding (point_encoding.hpp): big-endian
// coordinates, G2 as c1 then c0, the three flag bits in byte 0.
//
// What the counts mean for a circuit of n_inputs public inputs (the constant
// one included), n_aux private variables and a domain of n = 2^k points:
//   ic    n_inputs points
//   h     n - 1 points (tau^i·Z(tau)/delta, i < n-1)
//   l     n_aux points
//   a     n_inputs + (aux variables with A-density) points
//   b_g1  (inputs with B-density) + (aux variables with B-density) points
//   b_g2  the same count as b_g1
//
// Points at infinity are read wherever the encoding says so (bellperson's
// reader refuses them in h, l, a, b_g1, b_g2; its writer never makes them),
// since other writers (snarkjs) keep one a/b point per variable.
//
// In memory the points are the engine's own affine type (Montgomery limbs,
// (0, 0) = infinity), so the provers use them as they are.
//
// Thread-safety: plain values; the functions are thread-safe (they use the
// caller's thread pool).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "zkfleet/bellman/point_encoding.hpp"
#include "zkfleet/curve/bls12_381.hpp"
#include "zkfleet/curve/point.hpp"
#include "zkfleet/engine/file_identity.hpp"
#include "zkfleet/engine/verify.hpp"
#include "zkfleet/runtime/large_array_allocator.hpp"
#include "zkfleet/runtime/thread_pool.hpp"

namespace zkfleet::bellman {

// G1Affine, G2Affine: point_encoding.hpp.
using ThreadPool = cpu::ThreadPool;

struct VerifyingKey {
  G1Affine alpha_g1, beta_g1;
  G2Affine beta_g2, gamma_g2;
  G1Affine delta_g1;
  G2Affine delta_g2;
  std::vector<G1Affine> ic;
};

// The point arrays: up to tens of GB each, decoded in parallel into
// uninitialised, huge-page advised, page-aligned mappings (a CUDA key pins
// them where they are instead of copying them; large_array_allocator.hpp).
template <class Affine>
using PointVector = std::vector<Affine, runtime::LargeArrayAllocator<Affine>>;

struct Parameters {
  VerifyingKey vk;
  PointVector<G1Affine> h, l, a, b_g1;
  PointVector<G2Affine> b_g2;
};

// How much checking a read does. Every read checks the structure (counts
// against the file's size, b_g1 and b_g2 of one count, h + 1 a power of
// two, trailing bytes) and each point's encoding (flags, coordinates < q).
struct ReadOptions {
  // Also check every point is on its curve and in the prime-order subgroup
  // (in parallel on `pool`; the subgroup test, per point with the
  // endomorphism tests of curve/subgroup.hpp, is nearly all of a checked
  // read's time). Off only for files this process wrote itself, and for a
  // file whose full check passed before (engine::BellmanKey::Load with a
  // key-check cache: the file's identity is unchanged since).
  bool check_points = true;
  // With check_points: leave the curve and subgroup tests of h, l, a, b_g1
  // and b_g2 to a CUDA key, which runs them on the device after the upload
  // (KeyOptions::validate_key; milliseconds where the CPU takes minutes). The
  // verifying key's points and ic are still checked here, and every point's
  // encoding.
  bool arrays_checked_on_device = false;
  // Read 96 (192) zero bytes without the infinity flag as infinity, as
  // snarkjs's `zkey export bellman` writes infinity in its point arrays.
  // bellperson rejects them; off by default.
  bool zero_is_infinity = false;
  // Told how far the decode is: the bytes of the file decoded so far and the
  // file's size. Called once before the first point (done = the bytes before
  // the point arrays), then at most every progress_interval, and once at the
  // end (done = total); from one of the decoding threads, never from two at
  // once. An exception it throws ends the read.
  std::function<void(uint64_t done_bytes, uint64_t total_bytes)> progress;
  std::chrono::milliseconds progress_interval{2000};
};

// A .params (or .vk) file opened for reading. The descriptor stays open
// while the bytes are read, so that the identity of the very file read can
// be taken before and after (engine::CheckedKeys remembers checked files by
// it). The whole file is mapped read-only, read-ahead advised
// (MADV_WILLNEED); the decoder maps each chunk's pages before decoding it.
// Move-only; the mapping and the descriptor go with the object.
class ParametersFile {
 public:
  // Throws zkfleet::Error naming the path: kNotFound, kIo (not a regular
  // file, mmap, fstat).
  static ParametersFile Open(const std::string& path);
  ParametersFile() = default;
  ~ParametersFile();
  ParametersFile(ParametersFile&& other) noexcept;
  ParametersFile& operator=(ParametersFile&& other) noexcept;
  ParametersFile(const ParametersFile&) = delete;
  ParametersFile& operator=(const ParametersFile&) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }
  // fstat of the descriptor at Open, before any byte was read.
  const engine::FileIdentity& identity() const { return identity_; }
  // fstat of the descriptor now.
  engine::FileIdentity Restat() const { return engine::FileIdentity::OfDescriptor(fd_, path_); }

 private:
  void Reset();
  int fd_ = -1;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
  engine::FileIdentity identity_;
};

// Reads a .vk file. Throws zkfleet::Error (kBadFormat, naming the file, the
// field and the point index) on anything malformed.
VerifyingKey ReadVerifyingKey(const std::string& path, ThreadPool& pool, const ReadOptions& options = {});
VerifyingKey ParseVerifyingKey(std::span<const uint8_t> bytes, const std::string& origin, ThreadPool& pool,
                               const ReadOptions& options = {});

// Reads a .params file: mapped, decoded in parallel in chunks of a few MiB
// straight into the vectors (no second copy of the file in memory). Errors
// as above; a bad point is named by its section and index, the first one in
// file order.
Parameters ReadParameters(const std::string& path, ThreadPool& pool, const ReadOptions& options = {});
Parameters ReadParameters(const ParametersFile& file, ThreadPool& pool, const ReadOptions& options = {});
Parameters ParseParameters(std::span<const uint8_t> bytes, const std::string& origin, ThreadPool& pool,
                           const ReadOptions& options = {});

// The MPC parameters of the phase2 ceremony tools (zcash's phase2 crate,
// snarkjs `zkey export bellman`): a .params, then the circuit's 64-byte
// hash, a big-endian u32 count and that many contributions (delta_after,
// s, s_delta in G1, r_delta in G2, all uncompressed, and a 64-byte
// transcript hash). Errors as above.
struct MpcContribution {
  G1Affine delta_after, s, s_delta;
  G2Affine r_delta;
  std::array<uint8_t, 64> transcript{};
};
struct MpcParameters {
  Parameters params;
  std::array<uint8_t, 64> cs_hash{};
  std::vector<MpcContribution> contributions;
};
MpcParameters ReadMpcParameters(const std::string& path, ThreadPool& pool, const ReadOptions& options = {});
MpcParameters ParseMpcParameters(std::span<const uint8_t> bytes, const std::string& origin, ThreadPool& pool,
                                 const ReadOptions& options = {});

// Writes them (uncompressed points), through a temporary file renamed into
// place. Throws zkfleet::Error (kIo) naming the path.
void WriteVerifyingKey(const std::string& path, const VerifyingKey& vk);
void WriteParameters(const std::string& path, const Parameters& params, ThreadPool& pool);
std::vector<uint8_t> SerializeVerifyingKey(const VerifyingKey& vk);

// The verification key as the engine's verifier takes it (canonical
// integers; n_public = ic.size() - 1, the constant one is IC[0]).
engine::VerificationKey ToEngineKey(const VerifyingKey& vk);

// 192-byte proofs.
inline constexpr size_t kProofBytes = 192;
// Encodes canonical affine points (engine::ProofPoints, as the provers and
// the verifier use them) as bellperson's compressed proof.
std::array<uint8_t, kProofBytes> EncodeProof(const engine::ProofPoints& proof);
// Decodes one: flags, coordinates < q, on the curve, in the subgroup (the
// verifier checks these again), and, as bellperson, no point at infinity.
// The result names the curve (kBls12_381). Throws zkfleet::Error kBadFormat.
engine::ProofPoints DecodeProof(std::span<const uint8_t> bytes, const std::string& origin);
// A multi-partition proof: a non-empty multiple of 192 bytes.
std::vector<engine::ProofPoints> DecodeProofs(std::span<const uint8_t> bytes, const std::string& origin);

}  // namespace zkfleet::bellman
