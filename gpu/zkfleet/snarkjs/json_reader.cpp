#include "zkfleet/snarkjs/json_reader.hpp"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "zkfleet/common/error.hpp"
#include "zkfleet/snarkjs/json_writer.hpp"

namespace zkfleet::io {

using groth16::BigInt;
using nlohmann::json;

namespace {

[[noreturn]] void Bad(const std::string& name, const std::string& what) {
  throw Error(ErrorCode::kBadFormat, name + ": " + what);
}

// value = value·mul + add; false on overflow past 384 bits.
bool MulAdd(BigInt& v, uint64_t mul, uint64_t add) {
  unsigned __int128 carry = add;
  for (auto& limb : v) {
    const unsigned __int128 t = static_cast<unsigned __int128>(limb) * mul + carry;
    limb = static_cast<uint64_t>(t);
    carry = t >> 64;
  }
  return carry == 0;
}

BigInt NumberOf(const json& j, const std::string& name, const std::string& what) {
  if (j.is_string()) {
    try {
      return ParseBigIntString(j.get_ref<const std::string&>(), what);
    } catch (const Error& e) {
      Bad(name, e.what());
    }
  }
  if (j.is_number_unsigned() || (j.is_number_integer() && j.get<int64_t>() >= 0)) {
    BigInt v{};
    v[0] = j.get<uint64_t>();
    return v;
  }
  Bad(name, what + " must be a decimal string, a 0x-hex string or a non-negative integer");
}

bool IsValue(const json& j, uint64_t value) {
  if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    try {
      const BigInt v = ParseBigIntString(s, "");
      for (size_t i = 1; i < v.size(); ++i)
        if (v[i] != 0) return false;
      return v[0] == value;
    } catch (const Error&) {
      return false;
    }
  }
  return j.is_number_integer() && j.get<int64_t>() == static_cast<int64_t>(value);
}

const json& Member(const json& obj, const char* key, const std::string& name) {
  auto it = obj.find(key);
  if (it == obj.end()) Bad(name, std::string("missing \"") + key + "\"");
  return *it;
}

groth16::G1Point G1Of(const json& j, const std::string& name, const std::string& what) {
  if (!j.is_array() || (j.size() != 2 && j.size() != 3)) {
    Bad(name, what + " must be a G1 point [x, y] or [x, y, z]");
  }
  groth16::G1Point p;
  if (j.size() == 3) {
    if (IsValue(j[2], 0)) {
      p.infinity = true;
      return p;
    }
    if (!IsValue(j[2], 1)) Bad(name, what + ": the third coordinate must be \"1\" (affine) or \"0\" (infinity)");
  }
  p.x = NumberOf(j[0], name, what + ".x");
  p.y = NumberOf(j[1], name, what + ".y");
  return p;
}

void Fq2Of(const json& j, const std::string& name, const std::string& what, BigInt& c0, BigInt& c1) {
  if (!j.is_array() || j.size() != 2) Bad(name, what + " must be an Fq2 pair [c0, c1]");
  c0 = NumberOf(j[0], name, what + "[0]");
  c1 = NumberOf(j[1], name, what + "[1]");
}

groth16::G2Point G2Of(const json& j, const std::string& name, const std::string& what) {
  if (!j.is_array() || (j.size() != 2 && j.size() != 3)) {
    Bad(name, what + " must be a G2 point [[x0, x1], [y0, y1]] or with a third pair");
  }
  groth16::G2Point p;
  if (j.size() == 3) {
    const json& z = j[2];
    if (!z.is_array() || z.size() != 2) Bad(name, what + ": the third coordinate must be an Fq2 pair");
    if (IsValue(z[0], 0) && IsValue(z[1], 0)) {
      p.infinity = true;
      return p;
    }
    if (!IsValue(z[0], 1) || !IsValue(z[1], 0)) {
      Bad(name, what + ": the third coordinate must be [\"1\", \"0\"] (affine) or [\"0\", \"0\"] (infinity)");
    }
  }
  Fq2Of(j[0], name, what + ".x", p.x0, p.x1);
  Fq2Of(j[1], name, what + ".y", p.y0, p.y1);
  return p;
}

json ParseJson(std::string_view text, const std::string& name) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    Bad(name, std::string("not valid JSON (") + e.what() + ")");
  }
}

Curve CurveOf(const json& j, const std::string& name) {
  if (!j.is_string()) Bad(name, "\"curve\" must be a string");
  const auto& s = j.get_ref<const std::string&>();
  auto curve = CurveFromSnarkjsName(s);
  if (!curve) {
    throw Error(ErrorCode::kUnsupported, name + ": unsupported curve \"" + s + "\" (bn128 or bls12381 expected)");
  }
  return *curve;
}

void CheckProtocol(const json& obj, const std::string& name) {
  auto it = obj.find("protocol");
  if (it == obj.end()) return;
  // Never dump() the value into the message: dump() recurses, and a deeply
  // nested "protocol" ([[[[...]]]]) would overflow the stack.
  if (!it->is_string()) Bad(name, std::string("\"protocol\" must be a string, found ") + it->type_name());
  const auto& protocol = it->get_ref<const std::string&>();
  if (protocol != "groth16") {
    throw Error(ErrorCode::kUnsupported,
                name + ": protocol \"" + protocol.substr(0, 80) + "\" is not groth16");
  }
}

std::string ReadText(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw Error(ErrorCode::kNotFound, path + ": no such file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error(ErrorCode::kIo, path + ": read error");
  return ss.str();
}

std::string Dec(const BigInt& v) { return LimbsToDecimal(v.data(), static_cast<int>(v.size())); }

}  // namespace

std::optional<Curve> CurveFromSnarkjsName(std::string_view name) {
  std::string norm;
  for (char ch : name) {
    if (std::isalnum(static_cast<unsigned char>(ch))) norm += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  }
  if (norm == "BN128" || norm == "BN254" || norm == "ALTBN128") return Curve::kBn254;
  if (norm == "BLS12381") return Curve::kBls12_381;
  return std::nullopt;
}

BigInt ParseBigIntString(std::string_view s, std::string_view what) {
  const std::string label = what.empty() ? std::string("value") : std::string(what);
  BigInt v{};
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    for (char ch : s.substr(2)) {
      int d;
      if (ch >= '0' && ch <= '9') d = ch - '0';
      else if (ch >= 'a' && ch <= 'f') d = ch - 'a' + 10;
      else if (ch >= 'A' && ch <= 'F') d = ch - 'A' + 10;
      else throw Error(ErrorCode::kBadFormat, label + " is not a number: \"" + std::string(s.substr(0, 80)) + "\"");
      if (!MulAdd(v, 16, static_cast<uint64_t>(d))) {
        throw Error(ErrorCode::kBadFormat, label + " is too large (over 384 bits), so not below the field modulus");
      }
    }
    return v;
  }
  if (s.empty()) throw Error(ErrorCode::kBadFormat, label + " is an empty string");
  for (char ch : s) {
    if (ch < '0' || ch > '9') {
      throw Error(ErrorCode::kBadFormat, label + " is not a number: \"" + std::string(s.substr(0, 80)) + "\"");
    }
    if (!MulAdd(v, 10, static_cast<uint64_t>(ch - '0'))) {
      throw Error(ErrorCode::kBadFormat, label + " is too large (over 384 bits), so not below the field modulus");
    }
  }
  return v;
}

groth16::VerificationKey ParseVerificationKeyJson(std::string_view text, const std::string& name) {
  const json j = ParseJson(text, name);
  if (!j.is_object()) Bad(name, "a verification key must be a JSON object");
  CheckProtocol(j, name);
  groth16::VerificationKey vk;
  vk.curve = CurveOf(Member(j, "curve", name), name);
  vk.alpha1 = G1Of(Member(j, "vk_alpha_1", name), name, "vk_alpha_1");
  vk.beta2 = G2Of(Member(j, "vk_beta_2", name), name, "vk_beta_2");
  vk.gamma2 = G2Of(Member(j, "vk_gamma_2", name), name, "vk_gamma_2");
  vk.delta2 = G2Of(Member(j, "vk_delta_2", name), name, "vk_delta_2");
  const json& ic = Member(j, "IC", name);
  if (!ic.is_array() || ic.empty()) Bad(name, "\"IC\" must be a non-empty array of G1 points");
  for (size_t i = 0; i < ic.size(); ++i) vk.ic.push_back(G1Of(ic[i], name, "IC[" + std::to_string(i) + "]"));
  auto np = j.find("nPublic");
  if (np != j.end()) {
    if (!np->is_number_unsigned() && !(np->is_number_integer() && np->get<int64_t>() >= 0)) {
      Bad(name, "\"nPublic\" must be a non-negative integer");
    }
    const uint64_t n = np->get<uint64_t>();
    if (n + 1 != ic.size()) {
      Bad(name, "nPublic is " + std::to_string(n) + " but IC has " + std::to_string(ic.size()) +
                    " points (nPublic + 1 expected)");
    }
  }
  vk.n_public = static_cast<uint32_t>(ic.size() - 1);
  return vk;
}

groth16::Proof ParseProofJson(std::string_view text, const std::string& name) {
  const json j = ParseJson(text, name);
  if (!j.is_object()) Bad(name, "a proof must be a JSON object");
  CheckProtocol(j, name);
  groth16::Proof p;
  p.a = G1Of(Member(j, "pi_a", name), name, "pi_a");
  p.b = G2Of(Member(j, "pi_b", name), name, "pi_b");
  p.c = G1Of(Member(j, "pi_c", name), name, "pi_c");
  auto c = j.find("curve");
  if (c != j.end()) p.curve = CurveOf(*c, name);
  return p;
}

std::vector<BigInt> ParsePublicSignalsJson(std::string_view text, const std::string& name) {
  const json j = ParseJson(text, name);
  if (!j.is_array()) Bad(name, "public signals must be a JSON array");
  std::vector<BigInt> out;
  out.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) out.push_back(NumberOf(j[i], name, "signal " + std::to_string(i)));
  return out;
}

groth16::VerificationKey ReadVerificationKeyJson(const std::string& path) {
  return ParseVerificationKeyJson(ReadText(path), path);
}
groth16::Proof ReadProofJson(const std::string& path) { return ParseProofJson(ReadText(path), path); }
std::vector<BigInt> ReadPublicSignalsJson(const std::string& path) {
  return ParsePublicSignalsJson(ReadText(path), path);
}

std::string VerificationKeyJson(const groth16::VerificationKey& vk, const std::array<BigInt, 12>& ab) {
  using ojson = nlohmann::ordered_json;
  auto g1 = [](const groth16::G1Point& p) {
    if (p.infinity) return ojson::array({"0", "1", "0"});
    return ojson::array({Dec(p.x), Dec(p.y), "1"});
  };
  auto g2 = [](const groth16::G2Point& p) {
    if (p.infinity) return ojson::array({ojson::array({"0", "0"}), ojson::array({"1", "0"}), ojson::array({"0", "0"})});
    return ojson::array({ojson::array({Dec(p.x0), Dec(p.x1)}), ojson::array({Dec(p.y0), Dec(p.y1)}),
                         ojson::array({"1", "0"})});
  };
  ojson out = ojson::object();
  out["protocol"] = "groth16";
  out["curve"] = CurveName(vk.curve);
  out["nPublic"] = vk.n_public;
  out["vk_alpha_1"] = g1(vk.alpha1);
  out["vk_beta_2"] = g2(vk.beta2);
  out["vk_gamma_2"] = g2(vk.gamma2);
  out["vk_delta_2"] = g2(vk.delta2);
  ojson gt = ojson::array();
  for (int half = 0; half < 2; ++half) {
    ojson six = ojson::array();
    for (int k = 0; k < 3; ++k) {
      const int idx = 6 * half + 2 * k;
      six.push_back(ojson::array({Dec(ab[idx]), Dec(ab[idx + 1])}));
    }
    gt.push_back(six);
  }
  out["vk_alphabeta_12"] = gt;
  ojson ic = ojson::array();
  for (const auto& p : vk.ic) ic.push_back(g1(p));
  out["IC"] = ic;
  return out.dump(1);
}

}  // namespace zkfleet::io
