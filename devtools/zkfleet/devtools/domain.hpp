// Sizing of the Groth16 evaluation domain, shared by gen-circuit and setup so
// that both accept exactly the same circuits.
//
// Thread-safety: pure functions.
#pragma once

#include <bit>
#include <cstdint>

namespace zkfleet::devtools {

// The largest domain either tool builds: 2^28 (a bn128 zkey's H section alone
// is then 16 GiB; snarkjs' powers-of-tau also stop at 28).
inline constexpr int kMaxDomainPower = 28;

// log2 of the Groth16 domain for `constraints` R1CS rows and `n_public`
// public signals: the smallest power of two >= constraints + n_public + 1,
// which is what snarkjs `groth16 setup` picks (spec §4.2). The extra rows hold
// the public-input constraints of the coefficient section.
inline int DomainPower(uint64_t constraints, uint64_t n_public) {
  const uint64_t rows = constraints + n_public + 1;
  return std::countr_zero(std::bit_ceil(rows));
}

}  // namespace zkfleet::devtools
