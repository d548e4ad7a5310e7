// Writes .wtns files (spec §5) in the layout circom and snarkjs produce:
// version 2, section 1 = {u32 n8, prime, u32 nWitness}, section 2 = values.
// Thread-safety: free functions without shared state.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace zkfleet::io {

inline constexpr uint32_t kWtnsVersion = 2;     // what circom/snarkjs write
inline constexpr uint32_t kWtnsMaxVersion = 2;  // what snarkjs reads

// The bytes of a .wtns file. `prime` is n8 bytes LE; `values` holds the
// witness, n8 bytes LE per value, each < prime. Throws zkfleet::Error
// kInvalidArgument when sizes disagree or a value is not below the prime.
std::string WtnsBytes(uint32_t n8, std::span<const uint8_t> prime, std::span<const uint8_t> values);

// Writes WtnsBytes(...) to `path`. Throws kIo on write failure.
void WriteWtns(const std::string& path, uint32_t n8, std::span<const uint8_t> prime,
               std::span<const uint8_t> values);

}  // namespace zkfleet::io
