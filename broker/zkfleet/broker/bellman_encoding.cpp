#include "zkfleet/broker/bellman_encoding.hpp"

#include <cstring>

namespace zkfleet::broker {
namespace {

constexpr size_t kFp = 48;
constexpr size_t kG1 = 2 * kFp, kG2 = 4 * kFp;
constexpr uint8_t kCompressed = 0x80, kInfinity = 0x40, kSort = 0x20;
// (q - 1) / 2 for BLS12-381's base field, little-endian limbs: y is the
// "lexicographically largest" root when y > this.
constexpr engine::BigInt kHalfQ = {0xdcff7fffffffd555ULL, 0x0f55ffff58a9ffffULL, 0xb39869507b587b12ULL,
                                   0xb23ba5c279c2895fULL, 0x258dd3db21a5d66bULL, 0x0d0088f51cbff34dULL};

engine::BigInt ReadFp(const uint8_t* in, bool strip_flags) {
  engine::BigInt out{};
  for (size_t i = 0; i < kFp; ++i) {
    uint8_t byte = in[i];
    if (i == 0 && strip_flags) byte &= 0x1f;
    const size_t bit = 8 * (kFp - 1 - i);
    out[bit / 64] |= uint64_t{byte} << (bit % 64);
  }
  return out;
}

void WriteFp(const engine::BigInt& value, uint8_t* out) {
  for (size_t i = 0; i < kFp; ++i) {
    const size_t bit = 8 * (kFp - 1 - i);
    out[i] = static_cast<uint8_t>(value[bit / 64] >> (bit % 64));
  }
}

bool Greater(const engine::BigInt& a, const engine::BigInt& b) {
  for (size_t i = a.size(); i-- > 0;) {
    if (a[i] != b[i]) return a[i] > b[i];
  }
  return false;
}

bool IsZero(const engine::BigInt& a) {
  for (uint64_t limb : a) {
    if (limb) return false;
  }
  return true;
}

// The flags of an uncompressed point of `size` bytes; false with *why for
// a compressed or sorted one, or an infinity with other bits set.
bool UncompressedFlags(const uint8_t* in, size_t size, bool* infinity, std::string* why) {
  const uint8_t flags = in[0] & 0xe0;
  if (flags & kCompressed) return *why = "a compressed point where bellperson writes it uncompressed", false;
  if (flags & kSort) return *why = "the sort flag set on an uncompressed point", false;
  *infinity = (flags & kInfinity) != 0;
  if (*infinity) {
    if ((in[0] & 0x1f) != 0) return *why = "a point at infinity with other bits set", false;
    for (size_t i = 1; i < size; ++i) {
      if (in[i]) return *why = "a point at infinity with other bits set", false;
    }
  }
  return true;
}

bool ReadG1(const uint8_t* in, engine::G1Point* out, std::string* why) {
  if (!UncompressedFlags(in, kG1, &out->infinity, why)) return false;
  if (!out->infinity) {
    out->x = ReadFp(in, true);
    out->y = ReadFp(in + kFp, false);
  }
  return true;
}

bool ReadG2(const uint8_t* in, engine::G2Point* out, std::string* why) {
  if (!UncompressedFlags(in, kG2, &out->infinity, why)) return false;
  if (!out->infinity) {
    out->x1 = ReadFp(in, true);
    out->x0 = ReadFp(in + kFp, false);
    out->y1 = ReadFp(in + 2 * kFp, false);
    out->y0 = ReadFp(in + 3 * kFp, false);
  }
  return true;
}

void EncodeG1(const engine::G1Point& p, uint8_t* out) {
  std::memset(out, 0, kFp);
  if (p.infinity) {
    out[0] = kCompressed | kInfinity;
    return;
  }
  WriteFp(p.x, out);
  out[0] |= kCompressed;
  if (Greater(p.y, kHalfQ)) out[0] |= kSort;
}

void EncodeG2(const engine::G2Point& p, uint8_t* out) {
  std::memset(out, 0, 2 * kFp);
  if (p.infinity) {
    out[0] = kCompressed | kInfinity;
    return;
  }
  WriteFp(p.x1, out);
  WriteFp(p.x0, out + kFp);
  out[0] |= kCompressed;
  const bool largest = !IsZero(p.y1) ? Greater(p.y1, kHalfQ) : Greater(p.y0, kHalfQ);
  if (largest) out[0] |= kSort;
}

}  // namespace

std::optional<engine::VerificationKey> ParseBellmanVerifyingKey(std::span<const uint8_t> bytes, std::string* why) {
  constexpr size_t kFixed = 3 * kG1 + 3 * kG2;
  if (bytes.size() < kFixed + 4) {
    *why = "a bellperson .vk is at least " + std::to_string(kFixed + 4) + " bytes, this one " +
           std::to_string(bytes.size());
    return std::nullopt;
  }
  const uint8_t* at = bytes.data();
  engine::VerificationKey vk;
  vk.curve = engine::Curve::kBls12_381;
  engine::G1Point unused_g1;
  std::string problem;
  auto fail = [&](const char* field) {
    *why = std::string(field) + ": " + problem;
    return std::nullopt;
  };
  if (!ReadG1(at, &vk.alpha1, &problem)) return fail("alpha_g1");
  if (!ReadG1(at + kG1, &unused_g1, &problem)) return fail("beta_g1");
  if (!ReadG2(at + 2 * kG1, &vk.beta2, &problem)) return fail("beta_g2");
  if (!ReadG2(at + 2 * kG1 + kG2, &vk.gamma2, &problem)) return fail("gamma_g2");
  if (!ReadG1(at + 2 * kG1 + 2 * kG2, &unused_g1, &problem)) return fail("delta_g1");
  if (!ReadG2(at + 3 * kG1 + 2 * kG2, &vk.delta2, &problem)) return fail("delta_g2");
  at += kFixed;
  const uint32_t n_ic = uint32_t{at[0]} << 24 | uint32_t{at[1]} << 16 | uint32_t{at[2]} << 8 | at[3];
  at += 4;
  const size_t rest = bytes.size() - kFixed - 4;
  if (n_ic == 0 || rest / kG1 != n_ic || rest % kG1 != 0) {
    *why = "ic: the count says " + std::to_string(n_ic) + " points, " + std::to_string(rest) +
           " bytes follow (96 per point, at least one)";
    return std::nullopt;
  }
  vk.ic.resize(n_ic);
  for (uint32_t i = 0; i < n_ic; ++i) {
    if (!ReadG1(at + size_t{i} * kG1, &vk.ic[i], &problem)) {
      *why = "ic[" + std::to_string(i) + "]: " + problem;
      return std::nullopt;
    }
  }
  vk.n_public = n_ic - 1;
  return vk;
}

std::array<uint8_t, kBellmanProofBytes> EncodeBellmanProof(const engine::ProofPoints& proof) {
  std::array<uint8_t, kBellmanProofBytes> out{};
  EncodeG1(proof.a, out.data());
  EncodeG2(proof.b, out.data() + kFp);
  EncodeG1(proof.c, out.data() + 3 * kFp);
  return out;
}

std::string HexOf(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * bytes.size());
  for (uint8_t b : bytes) {
    hex += kDigits[b >> 4];
    hex += kDigits[b & 15];
  }
  return hex;
}

}  // namespace zkfleet::broker
