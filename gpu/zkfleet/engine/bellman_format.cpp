#include "zkfleet/engine/bellman_format.hpp"

#include "zkfleet/bellman/parameters.hpp"
#include "zkfleet/runtime/thread_pool.hpp"

namespace zkfleet::engine {

VerificationKey ParseBellmanVerifyingKey(std::span<const uint8_t> bytes, const std::string& origin) {
  cpu::ThreadPool pool(1);  // a .vk has a few points per public input
  return bellman::ToEngineKey(bellman::ParseVerifyingKey(bytes, origin, pool));
}

std::array<uint8_t, kBellmanProofBytes> EncodeBellmanProof(const ProofPoints& proof) {
  return bellman::EncodeProof(proof);
}

std::vector<ProofPoints> DecodeBellmanProofs(std::span<const uint8_t> bytes, const std::string& origin) {
  return bellman::DecodeProofs(bytes, origin);
}

}  // namespace zkfleet::engine
