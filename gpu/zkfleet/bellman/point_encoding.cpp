#include "zkfleet/bellman/point_encoding.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "zkfleet/curve/subgroup.hpp"
#include "zkfleet/ff/sqrt.hpp"

namespace zkfleet::bellman {

namespace {

using Fq = ff::Bls12_381Fq;
using Fq2 = ff::Fp2<Fq>;
constexpr size_t kFqBytes = 48;
constexpr uint8_t kFlagMask = kCompressionFlag | kInfinityFlag | kSortFlag;

inline uint64_t BigEndian64(uint64_t loaded) {
  if constexpr (std::endian::native == std::endian::little) return __builtin_bswap64(loaded);
  return loaded;
}

// 48 big-endian bytes -> Fq; false when the integer is ≥ q.
bool ReadFq(const uint8_t* be, Fq* out) {
  uint64_t limbs[Fq::kLimbs];
  for (int i = 0; i < Fq::kLimbs; ++i) {
    uint64_t word;  // big-endian: one load and a byte swap (the byte loop was 10% of an unchecked read)
    std::memcpy(&word, be + kFqBytes - 8 * (i + 1), 8);
    limbs[i] = BigEndian64(word);
  }
  if (!Fq::is_below_modulus(limbs)) return false;
  *out = Fq::from_canonical(limbs);
  return true;
}

void WriteFq(const Fq& a, uint8_t* be) {
  uint64_t limbs[Fq::kLimbs];
  a.to_canonical(limbs);
  for (int i = 0; i < Fq::kLimbs; ++i) {
    uint8_t* word = be + kFqBytes - 8 * (i + 1);
    for (int b = 0; b < 8; ++b) word[b] = static_cast<uint8_t>(limbs[i] >> (56 - 8 * b));
  }
}

// Fq2 as zcash orders it: c1 first.
bool ReadFq2(const uint8_t* be, Fq2* out) { return ReadFq(be, &out->c1) && ReadFq(be + kFqBytes, &out->c0); }
void WriteFq2(const Fq2& a, uint8_t* be) {
  WriteFq(a.c1, be);
  WriteFq(a.c0, be + kFqBytes);
}

bool ReadCoord(const uint8_t* be, Fq* out) { return ReadFq(be, out); }
bool ReadCoord(const uint8_t* be, Fq2* out) { return ReadFq2(be, out); }
void WriteCoord(const Fq& a, uint8_t* be) { WriteFq(a, be); }
void WriteCoord(const Fq2& a, uint8_t* be) { WriteFq2(a, be); }

// Whether bytes [0, n) are zero once byte 0's flag bits are masked off.
bool ZeroBesidesFlags(const uint8_t* in, size_t n) {
  if ((in[0] & ~kFlagMask) != 0) return false;
  return std::all_of(in + 1, in + n, [](uint8_t b) { return b == 0; });
}

template <class Cfg>
PointError CheckPoint(const curve::Affine<Cfg>& p, const DecodeChecks& checks) {
  if (!checks.curve_and_subgroup) return PointError::kOk;
  if (!curve::is_on_curve(p)) return PointError::kNotOnCurve;
  if (!curve::InPrimeOrderSubgroup(p)) return PointError::kNotInSubgroup;
  return PointError::kOk;
}

template <class Cfg>
PointError DecodeUncompressed(const uint8_t* in, curve::Affine<Cfg>* out, const DecodeChecks& checks) {
  using Field = typename Cfg::Field;
  constexpr size_t kCoord = Field::kBytes;
  const uint8_t flags = in[0] & kFlagMask;
  if (flags & (kCompressionFlag | kSortFlag)) return PointError::kBadFlags;
  if (flags & kInfinityFlag) {
    if (!ZeroBesidesFlags(in, 2 * kCoord)) return PointError::kBadInfinity;
    *out = curve::Affine<Cfg>::infinity();
    return PointError::kOk;
  }
  const bool all_zero = ZeroBesidesFlags(in, 2 * kCoord);
  if (all_zero && checks.zero_is_infinity) {
    *out = curve::Affine<Cfg>::infinity();
    return PointError::kOk;
  }
  // (0, 0) without the infinity bit is not a point (b != 0), but in memory it
  // would read as infinity: refuse it whether or not points are checked.
  if (all_zero) return PointError::kNotOnCurve;
  if (!ReadCoord(in, &out->x) || !ReadCoord(in + kCoord, &out->y)) return PointError::kNotCanonical;
  return CheckPoint(*out, checks);
}

template <class Cfg>
PointError DecodeCompressed(const uint8_t* in, curve::Affine<Cfg>* out, const DecodeChecks& checks) {
  using Field = typename Cfg::Field;
  constexpr size_t kCoord = Field::kBytes;
  const uint8_t flags = in[0] & kFlagMask;
  if (!(flags & kCompressionFlag)) return PointError::kBadFlags;
  if (flags & kInfinityFlag) {
    if ((flags & kSortFlag) || !ZeroBesidesFlags(in, kCoord)) return PointError::kBadInfinity;
    *out = curve::Affine<Cfg>::infinity();
    return PointError::kOk;
  }
  uint8_t x_bytes[kCoord];
  std::memcpy(x_bytes, in, kCoord);
  x_bytes[0] &= static_cast<uint8_t>(~kFlagMask);
  Field x, y;
  if (!ReadCoord(x_bytes, &x)) return PointError::kNotCanonical;
  if (!ff::Sqrt(x.sqr() * x + Cfg::b(), &y)) return PointError::kNotOnCurve;
  if (ff::LexicographicallyLargest(y) != ((flags & kSortFlag) != 0)) y = y.neg();
  *out = curve::Affine<Cfg>{x, y};
  if (!checks.curve_and_subgroup) return PointError::kOk;
  return curve::InPrimeOrderSubgroup(*out) ? PointError::kOk : PointError::kNotInSubgroup;
}

template <class Cfg>
void EncodeUncompressed(const curve::Affine<Cfg>& p, uint8_t* out) {
  constexpr size_t kCoord = Cfg::Field::kBytes;
  if (p.is_infinity()) {
    std::memset(out, 0, 2 * kCoord);
    out[0] = kInfinityFlag;
    return;
  }
  WriteCoord(p.x, out);
  WriteCoord(p.y, out + kCoord);
}

template <class Cfg>
void EncodeCompressed(const curve::Affine<Cfg>& p, uint8_t* out) {
  constexpr size_t kCoord = Cfg::Field::kBytes;
  if (p.is_infinity()) {
    std::memset(out, 0, kCoord);
    out[0] = kCompressionFlag | kInfinityFlag;
    return;
  }
  WriteCoord(p.x, out);
  out[0] |= kCompressionFlag;
  if (ff::LexicographicallyLargest(p.y)) out[0] |= kSortFlag;
}

}  // namespace

const char* PointErrorText(PointError error) {
  switch (error) {
    case PointError::kOk: return "ok";
    case PointError::kBadFlags: return "bad flag bits";
    case PointError::kBadInfinity: return "infinity flag with nonzero bits";
    case PointError::kNotCanonical: return "coordinate not below q";
    case PointError::kNotOnCurve: return "not on the curve";
    case PointError::kNotInSubgroup: return "not in the prime-order subgroup";
  }
  return "unknown point error";
}

void EncodeG1Uncompressed(const G1Affine& p, uint8_t out[kG1UncompressedBytes]) { EncodeUncompressed(p, out); }
void EncodeG1Compressed(const G1Affine& p, uint8_t out[kG1CompressedBytes]) { EncodeCompressed(p, out); }
void EncodeG2Uncompressed(const G2Affine& p, uint8_t out[kG2UncompressedBytes]) { EncodeUncompressed(p, out); }
void EncodeG2Compressed(const G2Affine& p, uint8_t out[kG2CompressedBytes]) { EncodeCompressed(p, out); }

PointError DecodeG1Uncompressed(const uint8_t in[kG1UncompressedBytes], G1Affine* out, const DecodeChecks& checks) {
  return DecodeUncompressed(in, out, checks);
}
PointError DecodeG1Compressed(const uint8_t in[kG1CompressedBytes], G1Affine* out, const DecodeChecks& checks) {
  return DecodeCompressed(in, out, checks);
}
PointError DecodeG2Uncompressed(const uint8_t in[kG2UncompressedBytes], G2Affine* out, const DecodeChecks& checks) {
  return DecodeUncompressed(in, out, checks);
}
PointError DecodeG2Compressed(const uint8_t in[kG2CompressedBytes], G2Affine* out, const DecodeChecks& checks) {
  return DecodeCompressed(in, out, checks);
}

}  // namespace zkfleet::bellman
