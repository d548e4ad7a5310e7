// Groth16 .zkey files as written by snarkjs (spec §4): a validated read-only
// view of an mmapped key, and a writer for synthetic test keys.
//
// Everything ZkeyFile hands out points into the mapping, in the file's own
// encodings: points are affine x||y (G2: x.c0||x.c1||y.c0||y.c1), each
// coordinate n8q bytes little-endian Montgomery, all-zero = infinity;
// coefficient values are coef*R^2 mod r. Pointers are only 4-byte aligned:
// memcpy out, never cast to uint64_t*.
//
// Ownership: a ZkeyFile from Open() owns the mapping; the pointers it returns
// are valid while it (or the ZkeyFile it was moved into) lives. A ZkeyFile
// from Parse() only points into the caller's bytes.
// Thread-safety: ZkeyFile is immutable after Open(); share it freely.
// ZkeyWriter is single-threaded.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "zkfleet/io/binfile.hpp"
#include "zkfleet/io/curve.hpp"
#include "zkfleet/io/mapped_file.hpp"
#include "zkfleet/wtns/witness.hpp"

namespace zkfleet::io {

// Section ids of a Groth16 zkey.
enum ZkeySection : uint32_t {
  kZkeyProtocol = 1,
  kZkeyHeader = 2,
  kZkeyIc = 3,
  kZkeyCoeffs = 4,
  kZkeyA = 5,
  kZkeyB1 = 6,
  kZkeyB2 = 7,
  kZkeyC = 8,
  kZkeyH = 9,
  kZkeyContributions = 10,
};

inline constexpr uint32_t kZkeyVersion = 1;      // what snarkjs writes
inline constexpr uint32_t kZkeyMaxVersion = 2;   // what snarkjs reads
inline constexpr uint32_t kProtocolGroth16 = 1;
inline constexpr uint32_t kCoeffRecordHeader = 12;  // matrix, row, signal (u32 each)

// The numbers that fix the size of every zkey section.
struct ZkeyShape {
  uint32_t n8q = 0;
  uint32_t n8r = 0;
  uint32_t n_vars = 0;       // witness length, including the constant 1
  uint32_t n_public = 0;     // public signals, excluding the constant
  uint32_t domain_size = 0;  // power of two
  uint32_t n_coeffs = 0;     // records in section 4
};

// Exact payload size of section `id` (1..9) implied by `shape`, e.g. section 5
// is n_vars G1 points. Section 10 has no fixed size (returns 0).
uint64_t ZkeySectionSize(const ZkeyShape& shape, uint32_t id);

// A run of points in the mapping.
struct PointArray {
  const uint8_t* data = nullptr;
  uint64_t count = 0;
};

// One decoded coefficient record of section 4.
struct CoeffRecord {
  uint32_t matrix;       // 0 = A, 1 = B
  uint32_t row;          // constraint index, < domain_size
  uint32_t signal;       // witness index, < n_vars
  const uint8_t* value;  // n8r bytes, coef*R^2 mod r
};

class ZkeyFile {
 public:
  // Maps and validates a Groth16 zkey: container, protocol, header (curve,
  // sizes, header points' coordinates < q), the exact size of sections 3..9,
  // and every coefficient record (matrix, row, signal, value < r). Nothing is
  // returned until all of that holds. Throws zkfleet::Error naming the file
  // and the field: kNotFound / kIo (file), kBadFormat (malformed),
  // kUnsupported (PLONK/FFLONK key, unknown curve, newer version).
  static ZkeyFile Open(const std::string& path);
  // The same validation on a zkey already in memory (tests, fuzzing). The
  // result points into `bytes`, which the caller keeps alive and unchanged;
  // `name` replaces the path in messages. Throws as Open() minus kNotFound/kIo.
  static ZkeyFile Parse(std::span<const uint8_t> bytes, std::string name);

  const std::string& path() const { return name_; }
  uint64_t file_size() const { return bytes_.size(); }
  std::span<const uint8_t> bytes() const { return bytes_; }  // the whole file, as mapped (or given to Parse)
  // The file's identity when it was mapped (all zero after Parse).
  const engine::FileIdentity& identity() const { return file_.identity(); }

  Curve curve() const { return curve_; }
  const ZkeyShape& shape() const { return shape_; }
  uint32_t n8q() const { return shape_.n8q; }
  uint32_t n8r() const { return shape_.n8r; }
  uint32_t n_vars() const { return shape_.n_vars; }
  uint32_t n_public() const { return shape_.n_public; }
  uint32_t domain_size() const { return shape_.domain_size; }
  uint32_t n_coeffs() const { return shape_.n_coeffs; }
  size_t g1_size() const { return 2 * size_t{shape_.n8q}; }
  size_t g2_size() const { return 4 * size_t{shape_.n8q}; }
  size_t coeff_record_size() const { return kCoeffRecordHeader + shape_.n8r; }

  const uint8_t* q() const { return q_; }  // n8q bytes LE, normal form
  const uint8_t* r() const { return r_; }  // n8r bytes LE, normal form

  // Header points (G1: alpha1, beta1, delta1; G2: beta2, gamma2, delta2).
  const uint8_t* alpha1() const { return alpha1_; }
  const uint8_t* beta1() const { return beta1_; }
  const uint8_t* beta2() const { return beta2_; }
  const uint8_t* gamma2() const { return gamma2_; }
  const uint8_t* delta1() const { return delta1_; }
  const uint8_t* delta2() const { return delta2_; }

  // Section 4 records (after its u32 count), coeff_record_size() bytes each.
  const uint8_t* coeffs() const { return coeffs_; }
  CoeffRecord coeff(uint64_t i) const {
    const uint8_t* rec = coeffs_ + i * coeff_record_size();
    return {LoadU32(rec), LoadU32(rec + 4), LoadU32(rec + 8), rec + kCoeffRecordHeader};
  }

  PointArray ic() const { return ic_; }  // n_public+1 G1
  PointArray a() const { return a_; }    // n_vars G1
  PointArray b1() const { return b1_; }  // n_vars G1
  PointArray b2() const { return b2_; }  // n_vars G2
  PointArray c() const { return c_; }    // n_vars-n_public-1 G1, for w[n_public+1..]
  PointArray h() const { return h_; }    // domain_size G1

 private:
  ZkeyFile() = default;
  void Validate();

  MappedFile file_;                 // empty when made by Parse()
  std::span<const uint8_t> bytes_;  // the whole file: file_'s mapping or the caller's bytes
  std::string name_;                // path or caller-given name, for messages
  Curve curve_ = Curve::kBn254;
  ZkeyShape shape_;
  const uint8_t* q_ = nullptr;
  const uint8_t* r_ = nullptr;
  const uint8_t *alpha1_ = nullptr, *beta1_ = nullptr, *beta2_ = nullptr;
  const uint8_t *gamma2_ = nullptr, *delta1_ = nullptr, *delta2_ = nullptr;
  const uint8_t* coeffs_ = nullptr;
  PointArray ic_, a_, b1_, b2_, c_, h_;
};

// Throws zkfleet::Error kMismatch unless `witness` belongs to a circuit with
// scalar prime `r` (LE) and `n_vars` signals, as snarkjs checks before
// proving. `key_name` names the key in the message.
void CheckWitnessMatches(const Witness& witness, std::span<const uint8_t> r,
                         uint32_t n_vars, std::string_view key_name);

// What a synthetic zkey's sections 1 and 2 hold. q, r, n8q, n8r come from
// the curve. Points are affine little-endian Montgomery (G1 2*n8q bytes, G2
// 4*n8q bytes).
struct ZkeyHeaderData {
  Curve curve = Curve::kBn254;
  uint32_t n_vars = 0;
  uint32_t n_public = 0;
  uint32_t domain_size = 0;
  uint32_t n_coeffs = 0;
  std::span<const uint8_t> alpha1, beta1, beta2, gamma2, delta1, delta2;
};

// Writes a Groth16 zkey in snarkjs layout, sections in the order 1..10 (as
// `zkey contribute` does). The constructor writes sections 1 and 2; then
// sections 3..9 follow in increasing id order, each either whole
// (WriteSection) or streamed (BeginSection, Append..., EndSection), with the
// exact size ZkeySectionSize() gives. Section 4's u32 count is written by the
// writer: pass only the records. Section 10 (contributions) may be written
// with WriteSection; otherwise Finish() writes an empty transcript (64 zero
// bytes + u32 0, spec §13). The file appears at `path` only after Finish().
// Throws zkfleet::Error kInvalidArgument on misuse, kIo on write failure.
//
// Keys written this way are insecure (whoever made them knows tau): for
// tests and benchmarks only.
class ZkeyWriter {
 public:
  ZkeyWriter(std::string path, const ZkeyHeaderData& header);

  void WriteSection(uint32_t id, std::span<const uint8_t> payload);
  void BeginSection(uint32_t id);
  void Append(std::span<const uint8_t> bytes);
  void EndSection();
  void Finish();

  const ZkeyShape& shape() const { return shape_; }

 private:
  ZkeyShape shape_;
  BinFileWriter out_;
  uint32_t next_id_ = kZkeyIc;  // the next section that may be written
};

}  // namespace zkfleet::io
