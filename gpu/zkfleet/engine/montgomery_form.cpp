#include "zkfleet/engine/bellman.hpp"

#include <cstring>

#include "zkfleet/ff/bls12_381.hpp"

namespace zkfleet::engine {

std::optional<std::array<uint8_t, 32>> FrMontToCanonical(const FrMont& mont) {
  using Fr = ff::Bls12_381Fr;
  if (!Fr::is_below_modulus(mont.data())) return std::nullopt;
  uint64_t limbs[4];
  Fr::from_mont(mont.data()).to_canonical(limbs);
  std::array<uint8_t, 32> out;
  std::memcpy(out.data(), limbs, 32);  // little-endian host: LE limbs are LE bytes
  return out;
}

FqMont FqCanonicalToMont(const BigInt& canonical) {
  using Fq = ff::Bls12_381Fq;
  static_assert(sizeof(FqMont) == sizeof(Fq::v));
  FqMont out;
  std::memcpy(out.data(), Fq::from_canonical(canonical.data()).v, sizeof(out));
  return out;
}

}  // namespace zkfleet::engine
