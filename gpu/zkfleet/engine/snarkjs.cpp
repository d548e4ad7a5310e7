// The public snarkjs JSON API (engine/snarkjs.hpp) over the format's readers
// and writers (snarkjs/) and the verifier's .zkey conversion (groth16/).
#include "zkfleet/engine/snarkjs.hpp"

#include "zkfleet/groth16/verifier.hpp"
#include "zkfleet/snarkjs/json_reader.hpp"
#include "zkfleet/snarkjs/json_writer.hpp"
#include "zkfleet/zkey/zkey.hpp"

namespace zkfleet::engine {

std::optional<Curve> CurveFromSnarkjsName(std::string_view name) { return io::CurveFromSnarkjsName(name); }

BigInt ParseBigInt(std::string_view text, std::string_view what) { return io::ParseBigIntString(text, what); }

std::string DecimalString(const BigInt& value) {
  return io::LimbsToDecimal(value.data(), static_cast<int>(value.size()));
}

VerificationKey ParseVerificationKeyJson(std::string_view text, const std::string& name) {
  return io::ParseVerificationKeyJson(text, name);
}
ProofPoints ParseProofJson(std::string_view text, const std::string& name) { return io::ParseProofJson(text, name); }
std::vector<BigInt> ParsePublicSignalsJson(std::string_view text, const std::string& name) {
  return io::ParsePublicSignalsJson(text, name);
}

VerificationKey ReadVerificationKeyJson(const std::string& path) { return io::ReadVerificationKeyJson(path); }
ProofPoints ReadProofJson(const std::string& path) { return io::ReadProofJson(path); }
std::vector<BigInt> ReadPublicSignalsJson(const std::string& path) { return io::ReadPublicSignalsJson(path); }

std::string VerificationKeyJson(const VerificationKey& vk) {
  return io::VerificationKeyJson(vk, groth16::AlphaBeta(vk));
}

std::string ExportVerificationKeyJson(const std::string& zkey_path) {
  const io::ZkeyFile zkey = io::ZkeyFile::Open(zkey_path);
  return VerificationKeyJson(groth16::VerificationKeyFromZkey(zkey));
}

std::string ProofJson(const ProofPoints& proof, Curve curve) {
  return io::ProofJson(CurveName(curve), DecimalString(proof.a.x), DecimalString(proof.a.y),
                       DecimalString(proof.b.x0), DecimalString(proof.b.x1), DecimalString(proof.b.y0),
                       DecimalString(proof.b.y1), DecimalString(proof.c.x), DecimalString(proof.c.y));
}

std::string PublicJson(std::span<const BigInt> signals) {
  std::vector<std::string> decimal;
  decimal.reserve(signals.size());
  for (const BigInt& value : signals) decimal.push_back(DecimalString(value));
  return io::PublicJson(decimal);
}

}  // namespace zkfleet::engine
