// The zcash BLS12-381 point encodings (bls12_381 crate, blst, bellperson),
// to and from the engine's affine points (Montgomery limbs, (0, 0) =
// infinity).
//
//   G1 uncompressed  96 bytes  x ‖ y            (48-byte big-endian integers)
//   G1 compressed    48 bytes  x
//   G2 uncompressed 192 bytes  x.c1 ‖ x.c0 ‖ y.c1 ‖ y.c0   (x = x.c0 + x.c1·u)
//   G2 compressed    96 bytes  x.c1 ‖ x.c0
//
// The top three bits of byte 0 are flags: 0x80 compressed, 0x40 infinity,
// 0x20 "sort" (compressed only: y is the lexicographically larger root,
// ff::LexicographicallyLargest). Infinity is the infinity bit (and the
// compression bit in the compressed form) with every other bit zero. Like
// the bls12_381 crate, a decode rejects a wrong compression bit, a sort bit
// in the uncompressed form, an infinity encoding with other bits set, and
// coordinates ≥ q.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "zkfleet/curve/bls12_381.hpp"
#include "zkfleet/curve/point.hpp"

namespace zkfleet::bellman {

using G1Affine = curve::Affine<curve::Bls12_381G1>;
using G2Affine = curve::Affine<curve::Bls12_381G2>;

inline constexpr size_t kG1UncompressedBytes = 96;
inline constexpr size_t kG1CompressedBytes = 48;
inline constexpr size_t kG2UncompressedBytes = 192;
inline constexpr size_t kG2CompressedBytes = 96;

inline constexpr uint8_t kCompressionFlag = 0x80;
inline constexpr uint8_t kInfinityFlag = 0x40;
inline constexpr uint8_t kSortFlag = 0x20;

// Why a decode failed; kOk when it did not.
enum class PointError {
  kOk,
  kBadFlags,        // compression bit wrong for the form, sort bit where none may be, ...
  kBadInfinity,     // infinity bit set but other bits too
  kNotCanonical,    // a coordinate ≥ q
  kNotOnCurve,      // off the curve (compressed: x^3 + b has no square root)
  kNotInSubgroup,   // on the curve, outside the prime-order subgroup
};

// "not on the curve", ...: the words an error message uses.
const char* PointErrorText(PointError error);

struct DecodeChecks {
  // On the curve and in the prime-order subgroup. A compressed point is on
  // the curve by construction (its y is computed), so this only adds the
  // subgroup check there.
  bool curve_and_subgroup = true;
  // Also read all-zero bytes (no infinity bit) as infinity: what snarkjs's
  // `zkey export bellman` writes for points at infinity in point arrays
  // (ffjavascript's batchLEMtoU). Not valid zcash encoding; off by default.
  bool zero_is_infinity = false;
};

void EncodeG1Uncompressed(const G1Affine& p, uint8_t out[kG1UncompressedBytes]);
void EncodeG1Compressed(const G1Affine& p, uint8_t out[kG1CompressedBytes]);
void EncodeG2Uncompressed(const G2Affine& p, uint8_t out[kG2UncompressedBytes]);
void EncodeG2Compressed(const G2Affine& p, uint8_t out[kG2CompressedBytes]);

// On kOk *out holds the point; otherwise *out is unspecified.
PointError DecodeG1Uncompressed(const uint8_t in[kG1UncompressedBytes], G1Affine* out, const DecodeChecks& checks = {});
PointError DecodeG1Compressed(const uint8_t in[kG1CompressedBytes], G1Affine* out, const DecodeChecks& checks = {});
PointError DecodeG2Uncompressed(const uint8_t in[kG2UncompressedBytes], G2Affine* out, const DecodeChecks& checks = {});
PointError DecodeG2Compressed(const uint8_t in[kG2CompressedBytes], G2Affine* out, const DecodeChecks& checks = {});

}  // namespace zkfleet::bellman
