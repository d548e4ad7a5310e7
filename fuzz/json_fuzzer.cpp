// Fuzzes zkfleet's snarkjs JSON code:
//   - the readers (io/snarkjs_json_reader: verification_key.json, proof.json,
//     public.json, as zkverify reads them): every input goes to all three.
//     They may only fail with kBadFormat / kUnsupported. What they accept
//     must survive a round trip through the writers (VerificationKeyJson,
//     ProofJson, PublicJson), and is then checked by the verifier against the
//     bundled fixtures: a fuzzed key, proof or signal list combined with the
//     other two fixture files may only verify when it equals the fixture's.
//   - the writers (io/json) on every array of strings and every proof-shaped
//     object in the input: they reject non-decimal strings with
//     kInvalidArgument, and their output is JSON that parses back to the same
//     values in JSON.stringify(v, null, 1) layout.
//   - LimbsToDecimal and ParseBigIntString on the raw bytes, each checked
//     against the other.
// Seeds: the fixtures' JSON files (run.sh) and fuzz/corpus/json/.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_common.hpp"
#include "zkfleet/groth16/verifier.hpp"
#include "zkfleet/snarkjs/json_writer.hpp"
#include "zkfleet/snarkjs/json_reader.hpp"

namespace {

using Json = nlohmann::ordered_json;  // keeps key order, as JSON.stringify does
using zkfleet::ErrorCode;
using zkfleet::io::Curve;
using zkfleet::fuzz::Check;
using zkfleet::groth16::BigInt;
using zkfleet::groth16::G1Point;
using zkfleet::groth16::G2Point;
namespace io = zkfleet::io;
namespace groth16 = zkfleet::groth16;

// ---------------------------------------------------------------------------
// Comparisons (the structs have no operator==). Points at infinity compare
// equal whatever their coordinates.

bool Same(const G1Point& a, const G1Point& b) {
  return a.infinity == b.infinity && (a.infinity || (a.x == b.x && a.y == b.y));
}
bool Same(const G2Point& a, const G2Point& b) {
  return a.infinity == b.infinity &&
         (a.infinity || (a.x0 == b.x0 && a.x1 == b.x1 && a.y0 == b.y0 && a.y1 == b.y1));
}
bool Same(const groth16::VerificationKey& a, const groth16::VerificationKey& b) {
  return a.curve == b.curve && a.n_public == b.n_public && Same(a.alpha1, b.alpha1) && Same(a.beta2, b.beta2) &&
         Same(a.gamma2, b.gamma2) && Same(a.delta2, b.delta2) &&
         std::equal(a.ic.begin(), a.ic.end(), b.ic.begin(), b.ic.end(),
                    [](const G1Point& x, const G1Point& y) { return Same(x, y); });
}
bool Same(const groth16::Proof& a, const groth16::Proof& b) {
  return Same(a.a, b.a) && Same(a.b, b.b) && Same(a.c, b.c);
}

std::string Dec(const BigInt& v) { return io::LimbsToDecimal(v.data(), static_cast<int>(v.size())); }

// ---------------------------------------------------------------------------
// The bundled fixtures, loaded once: for each curve a key, a valid proof and
// its public signals.

struct Fixture {
  Curve curve;
  groth16::VerificationKey vk;
  groth16::Proof proof;
  std::vector<BigInt> signals;
  std::unique_ptr<groth16::PreparedVerifier> verifier;
};
std::vector<Fixture>* fixtures = nullptr;

void LoadFixtures() {
  fixtures = new std::vector<Fixture>();
  for (const char* dir : {"bn128_k12", "bls12381_k12"}) {
    const std::string base = std::string(ZKFLEET_FIXTURES_DIR) + "/" + dir + "/";
    Fixture f;
    f.vk = io::ReadVerificationKeyJson(base + "verification_key.json");
    f.proof = io::ReadProofJson(base + "proof.json");
    f.signals = io::ReadPublicSignalsJson(base + "public.json");
    f.curve = f.vk.curve;
    f.verifier = std::make_unique<groth16::PreparedVerifier>(f.vk);
    Check(f.verifier->Verify(f.signals, f.proof).ok(), "a bundled fixture proof does not verify");
    fixtures->push_back(std::move(f));
  }
}

// Runs `parse` on the input; nullopt when it rejected it (with an allowed code).
template <class T, class Parse>
std::optional<T> TryRead(Parse parse) {
  try {
    return parse();
  } catch (const zkfleet::Error& e) {
    zkfleet::fuzz::ExpectErrorCode(e, {ErrorCode::kBadFormat, ErrorCode::kUnsupported});
    return std::nullopt;
  }
}

// ---------------------------------------------------------------------------
// Readers

void FuzzVerificationKey(std::string_view text) {
  const auto vk = TryRead<groth16::VerificationKey>([&] { return io::ParseVerificationKeyJson(text, "fuzz_vk.json"); });
  if (!vk) return;
  Check(vk->ic.size() == uint64_t{vk->n_public} + 1, "vk: IC size != nPublic + 1");
  // vk_alphabeta_12 is not read back, so any value will do.
  const std::string written = io::VerificationKeyJson(*vk, std::array<BigInt, 12>{});
  Check(Same(io::ParseVerificationKeyJson(written, "rewritten_vk.json"), *vk), "vk: write/read round trip");

  for (const Fixture& f : *fixtures) {
    // The fixture key itself is known to verify: skip the pairings.
    if (f.curve != vk->curve || Same(*vk, f.vk)) continue;
    std::unique_ptr<groth16::PreparedVerifier> verifier;
    try {
      verifier = std::make_unique<groth16::PreparedVerifier>(*vk);
    } catch (const zkfleet::Error& e) {
      zkfleet::fuzz::ExpectErrorCode(e, {ErrorCode::kBadFormat});  // the key failed its checks
      continue;
    }
    Check(!verifier->Verify(f.signals, f.proof).ok(), "a changed key verifies the fixture proof");
  }
}

void FuzzProof(std::string_view text) {
  const auto proof = TryRead<groth16::Proof>([&] { return io::ParseProofJson(text, "fuzz_proof.json"); });
  if (!proof) return;
  // ProofJson cannot express points at infinity (snarkjs never writes them).
  if (!proof->a.infinity && !proof->b.infinity && !proof->c.infinity) {
    const char* curve = proof->curve == Curve::kBls12_381 ? "bls12381" : "bn128";
    const std::string written = io::ProofJson(curve, Dec(proof->a.x), Dec(proof->a.y), Dec(proof->b.x0),
                                              Dec(proof->b.x1), Dec(proof->b.y0), Dec(proof->b.y1),
                                              Dec(proof->c.x), Dec(proof->c.y));
    Check(Same(io::ParseProofJson(written, "rewritten_proof.json"), *proof), "proof: write/read round trip");
  }
  for (const Fixture& f : *fixtures) {
    if (Same(*proof, f.proof)) continue;  // known to verify
    const groth16::VerifyResult result = f.verifier->Verify(f.signals, *proof);
    Check(!result.ok(), "a changed proof verifies against the fixture key");
    Check(!result.reason.empty(), "a rejected proof without a reason");
  }
}

void FuzzPublicSignals(std::string_view text) {
  const auto signals =
      TryRead<std::vector<BigInt>>([&] { return io::ParsePublicSignalsJson(text, "fuzz_public.json"); });
  if (!signals) return;
  std::vector<std::string> decimal;
  for (const BigInt& s : *signals) decimal.push_back(Dec(s));
  Check(io::ParsePublicSignalsJson(io::PublicJson(decimal), "rewritten_public.json") == *signals,
        "public signals: write/read round trip");
  for (const Fixture& f : *fixtures) {
    if (*signals == f.signals) continue;  // known to verify
    Check(!f.verifier->Verify(*signals, f.proof).ok(), "changed public signals verify the fixture proof");
  }
}

// ParseBigIntString on the raw text, checked with LimbsToDecimal.
void FuzzBigInt(std::string_view text) {
  const auto value = TryRead<BigInt>([&] { return io::ParseBigIntString(text, "fuzz"); });
  if (!value) return;
  Check(io::ParseBigIntString(Dec(*value), "decimal") == *value, "ParseBigIntString/LimbsToDecimal round trip");
  (void)io::CurveFromSnarkjsName(text);
}

// ---------------------------------------------------------------------------
// Writers on whatever strings the input holds

bool IsDecimal(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// `text` must be JSON whose 1-space re-serialisation is `text` itself.
Json ParseOwnOutput(const std::string& text) {
  const Json parsed = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  Check(!parsed.is_discarded(), "writer output is not JSON");
  Check(parsed.dump(1) == text, "writer output differs from JSON.stringify(v, null, 1) layout");
  return parsed;
}

// public.json from any array of strings (public.json itself, IC coordinates
// of verification_key.json, ...).
void FuzzPublicJson(const Json& array) {
  std::vector<std::string> signals;
  for (const Json& item : array) signals.push_back(item.get<std::string>());
  const bool valid = std::all_of(signals.begin(), signals.end(), IsDecimal);
  try {
    const std::string text = io::PublicJson(signals);
    Check(valid, "PublicJson accepted a non-decimal signal");
    Check(ParseOwnOutput(text) == Json(signals), "PublicJson output does not parse back to its input");
  } catch (const zkfleet::Error& e) {
    zkfleet::fuzz::ExpectErrorCode(e, {ErrorCode::kInvalidArgument});
    Check(!valid, "PublicJson rejected decimal signals");
  }
}

// The string at `v[i]`, or "" when absent or not a string.
std::string StringAt(const Json& v, size_t i) {
  return v.is_array() && i < v.size() && v[i].is_string() ? v[i].get<std::string>() : std::string();
}

// proof.json from the fields of a proof-shaped object.
void FuzzProofJson(const Json& proof) {
  const Json none;
  const auto field = [&](const char* key) -> const Json& { return proof.contains(key) ? proof[key] : none; };
  const Json& pi_b = field("pi_b");
  const Json& b_x = pi_b.is_array() && !pi_b.empty() ? pi_b[0] : none;
  const Json& b_y = pi_b.is_array() && pi_b.size() > 1 ? pi_b[1] : none;
  const std::string curve = field("curve").is_string() ? field("curve").get<std::string>() : std::string();
  const std::string args[8] = {StringAt(field("pi_a"), 0), StringAt(field("pi_a"), 1), StringAt(b_x, 0),
                               StringAt(b_x, 1),           StringAt(b_y, 0),           StringAt(b_y, 1),
                               StringAt(field("pi_c"), 0), StringAt(field("pi_c"), 1)};
  const bool valid = std::all_of(std::begin(args), std::end(args), IsDecimal) &&
                     (curve == "bn128" || curve == "bls12381");
  try {
    const std::string text = io::ProofJson(curve, args[0], args[1], args[2], args[3], args[4], args[5],
                                           args[6], args[7]);
    Check(valid, "ProofJson accepted a bad argument");
    const Json out = ParseOwnOutput(text);
    // Json::array() throughout: a braced list of string pairs would be an object.
    Json expected = Json::object();
    expected["pi_a"] = Json::array({args[0], args[1], "1"});
    expected["pi_b"] = Json::array({Json::array({args[2], args[3]}), Json::array({args[4], args[5]}),
                                    Json::array({"1", "0"})});
    expected["pi_c"] = Json::array({args[6], args[7], "1"});
    expected["protocol"] = "groth16";
    expected["curve"] = curve;
    Check(out == expected, "ProofJson output does not parse back to its input");
  } catch (const zkfleet::Error& e) {
    zkfleet::fuzz::ExpectErrorCode(e, {ErrorCode::kInvalidArgument});
    Check(!valid, "ProofJson rejected valid arguments");
  }
}

// Visits every value (depth-limited: the writers need no deep nesting).
void Walk(const Json& v, int depth) {
  if (depth > 16) return;
  if (v.is_array() && std::all_of(v.begin(), v.end(), [](const Json& x) { return x.is_string(); })) {
    FuzzPublicJson(v);
  }
  if (v.is_object() && (v.contains("pi_a") || v.contains("pi_b") || v.contains("pi_c"))) FuzzProofJson(v);
  if (v.is_structured()) {
    for (const Json& child : v) Walk(child, depth + 1);
  }
}

// LimbsToDecimal(limbs) read back with schoolbook multiply-by-10.
void FuzzLimbsToDecimal(const uint8_t* data, size_t size) {
  const int n = static_cast<int>(std::min<size_t>(size / 8, 8));
  std::vector<uint64_t> limbs(n);
  if (n > 0) std::memcpy(limbs.data(), data, 8 * size_t(n));
  const std::string text = io::LimbsToDecimal(limbs.data(), n);
  Check(IsDecimal(text) && (text == "0" || text[0] != '0'), "LimbsToDecimal: not canonical decimal");
  std::vector<uint64_t> back(n + 1, 0);  // one spare limb to catch overflow
  for (char digit : text) {
    unsigned __int128 carry = static_cast<unsigned>(digit - '0');
    for (uint64_t& limb : back) {
      const unsigned __int128 cur = static_cast<unsigned __int128>(limb) * 10 + carry;
      limb = static_cast<uint64_t>(cur);
      carry = cur >> 64;
    }
  }
  Check(back[n] == 0 && std::equal(limbs.begin(), limbs.end(), back.begin()), "LimbsToDecimal: wrong value");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  LoadFixtures();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  FuzzLimbsToDecimal(data, size);
  FuzzBigInt(text);
  FuzzVerificationKey(text);
  FuzzProof(text);
  FuzzPublicSignals(text);
  const Json doc = Json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_discarded()) Walk(doc, 0);
  return 0;
}
