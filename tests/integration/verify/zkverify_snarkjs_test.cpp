// zkverify against snarkjs's verifier on a few hundred proofs, valid and
// tampered, both curves, nPublic 0, 2, 5 and 64, and `zkprove export-vk`
// against `snarkjs zkey export verificationkey`.
//
// Proof sources: the bundled fixtures, ../shared/fixtures when present, and
// circuits made here (zkfleet-dev gen-circuit + setup --insecure, a
// hand-written nPublic = 0 circuit, and a circom2 circuit with a snarkjs
// power-6 ceremony), proved with zkprove. snarkjs runs once,
// over the whole batch, in one node process (tests/tools/snarkjs_verify_batch.mjs).
//
// Where zkverify is deliberately stricter than snarkjs (a coordinate ≥ q,
// which snarkjs reduces mod q), the case only requires zkverify to reject;
// snarkjs's answer is printed.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testutil/test_support.hpp"
#include "unit/pairing/curve_test_points.hpp"
#include "zkfleet/engine/types.hpp"
#include "zkfleet/groth16/verifier.hpp"
#include "zkfleet/io/curve_primes.hpp"
#include "zkfleet/snarkjs/json_writer.hpp"
#include "zkfleet/r1cs/r1cs.hpp"
#include "zkfleet/snarkjs/json_reader.hpp"
#include "zkfleet/wtns/wtns_writer.hpp"

namespace {

namespace zt = zkfleet::testing;
namespace fs = std::filesystem;
using json = nlohmann::json;
using zkfleet::groth16::BigInt;
using zt::Quote;
using zt::RunCommand;

std::string Bin(const std::string& rel) { return std::string(ZKFLEET_BINARY_DIR) + "/cmd/" + rel; }
std::string Zkverify() { return Bin("zkverify/zkverify"); }
std::string Zkprove() { return Bin("zkprove/zkprove"); }
std::string ZkfleetDev() { return Bin("zkfleet-dev/zkfleet-dev"); }

json Load(const std::string& path) { return json::parse(zt::ReadFile(path)); }
void Save(const std::string& path, const json& j) { zt::WriteFile(path, j.dump(1)); }

std::string Dec(const BigInt& v) { return zkfleet::io::LimbsToDecimal(v.data(), static_cast<int>(v.size())); }
BigInt Num(const json& j) { return zkfleet::io::ParseBigIntString(j.get<std::string>(), "test value"); }
BigInt Add(BigInt a, const BigInt& b) {
  unsigned __int128 carry = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const unsigned __int128 t = static_cast<unsigned __int128>(a[i]) + b[i] + carry;
    a[i] = static_cast<uint64_t>(t);
    carry = t >> 64;
  }
  return a;
}
BigInt Sub(BigInt a, const BigInt& b) {  // a >= b
  uint64_t borrow = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const unsigned __int128 t = static_cast<unsigned __int128>(a[i]) - b[i] - borrow;
    a[i] = static_cast<uint64_t>(t);
    borrow = static_cast<uint64_t>(t >> 64) & 1;
  }
  return a;
}
BigInt FromLe(const uint8_t* bytes, size_t n) {
  BigInt v{};
  for (size_t i = 0; i < n; ++i) v[i / 8] |= static_cast<uint64_t>(bytes[i]) << (8 * (i % 8));
  return v;
}
std::string Hex(const BigInt& v) {
  std::string h;
  for (size_t i = v.size(); i-- > 0;) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v[i]));
    h += buf;
  }
  const size_t nz = h.find_first_not_of('0');
  return "0x" + (nz == std::string::npos ? std::string("0") : h.substr(nz));
}
BigInt One() { return BigInt{1, 0, 0, 0, 0, 0}; }
bool Less(const BigInt& a, const BigInt& b) {
  for (size_t i = a.size(); i-- > 0;) {
    if (a[i] != b[i]) return a[i] < b[i];
  }
  return false;
}

template <class F>
std::string FieldDec(const F& x) {
  BigInt v{};
  x.to_canonical(v.data());
  return Dec(v);
}

// A G2 point on the curve but outside the prime-order subgroup, as JSON.
json NonSubgroupG2(zkfleet::engine::Curve curve, std::mt19937_64& rng) {
  auto to_json = [](const auto& p) {
    return json::array({json::array({FieldDec(p.x.c0), FieldDec(p.x.c1)}),
                        json::array({FieldDec(p.y.c0), FieldDec(p.y.c1)}), json::array({"1", "0"})});
  };
  if (curve == zkfleet::engine::Curve::kBn254) return to_json(zt::NonSubgroupPoint<zkfleet::curve::Bn254G2>(rng));
  return to_json(zt::NonSubgroupPoint<zkfleet::curve::Bls12_381G2>(rng));
}
json NonSubgroupBlsG1(std::mt19937_64& rng) {
  const auto p = zt::NonSubgroupPoint<zkfleet::curve::Bls12_381G1>(rng);
  return json::array({FieldDec(p.x), FieldDec(p.y), "1"});
}

struct Case {
  std::string label;
  std::string vk, pub, proof;
  bool valid = false;   // what both verifiers must say
  bool strict = false;  // zkverify must reject; snarkjs may accept (coordinate >= q)
};

class Corpus {
 public:
  explicit Corpus(const fs::path& dir) : dir_(dir) {}

  std::string NewFile(const std::string& stem, const json& j) {
    const std::string path = (dir_ / (stem + "_" + std::to_string(counter_++) + ".json")).string();
    Save(path, j);
    return path;
  }

  // A proof that verifies, plus its tampered variants.
  void AddValid(const std::string& label, const std::string& vk_path, const std::string& pub_path,
                const std::string& proof_path, const std::string& other_curve_vk) {
    cases_.push_back({label + " valid", vk_path, pub_path, proof_path, true, false});
    const json vk = Load(vk_path), pub = Load(pub_path), proof = Load(proof_path);
    const auto curve = *zkfleet::io::CurveFromSnarkjsName(vk["curve"].get<std::string>());
    const auto& primes = zkfleet::io::PrimesOf(curve);
    const BigInt q = FromLe(primes.q, primes.n8q), r = FromLe(primes.r, primes.n8r);

    auto add_proof = [&](const std::string& what, const json& p, bool strict = false) {
      cases_.push_back({label + " " + what, vk_path, pub_path, NewFile("proof", p), false, strict});
    };
    auto add_pub = [&](const std::string& what, const json& s) {
      cases_.push_back({label + " " + what, vk_path, NewFile("public", s), proof_path, false, false});
    };
    json p;
    // Still valid: the other spellings snarkjs accepts (hex, [x, y] without z,
    // no "protocol"/"curve").
    p = proof;
    p.erase("protocol");
    p.erase("curve");
    p["pi_a"] = json::array({Hex(Num(p["pi_a"][0])), Hex(Num(p["pi_a"][1]))});
    p["pi_b"].erase(2);
    cases_.push_back({label + " valid, other spellings", vk_path, pub_path, NewFile("proof", p), true, false});
    if (!pub.empty()) {
      json h = pub;
      for (auto& v : h) v = Hex(Num(v));
      cases_.push_back({label + " valid, hex signals", vk_path, NewFile("public", h), proof_path, true, false});
    }
    p = proof;  // one coordinate changed (falls off the curve)
    p["pi_a"][0] = Dec(Add(Num(p["pi_a"][0]), One()));
    add_proof("pi_a.x+1", p);
    p = proof;  // B's x.c1 changed
    p["pi_b"][0][1] = Dec(Add(Num(p["pi_b"][0][1]), One()));
    add_proof("pi_b.x.c1+1", p);
    p = proof;  // C negated: on the curve and in the subgroup, but wrong
    p["pi_c"][1] = Dec(Sub(q, Num(p["pi_c"][1])));
    add_proof("pi_c negated", p);
    p = proof;
    std::swap(p["pi_a"], p["pi_c"]);
    add_proof("A/C swapped", p);
    p = proof;  // c0/c1 of B's coordinates swapped (snarkjs's documented pitfall)
    std::swap(p["pi_b"][0][0], p["pi_b"][0][1]);
    std::swap(p["pi_b"][1][0], p["pi_b"][1][1]);
    add_proof("pi_b c0/c1 swapped", p);
    p = proof;  // y + 1: off the curve
    p["pi_b"][1][0] = Dec(Add(Num(p["pi_b"][1][0]), One()));
    add_proof("pi_b off curve", p);
    p = proof;
    p["pi_b"] = NonSubgroupG2(curve, rng_);
    add_proof("pi_b not in G2 subgroup", p);
    if (curve == zkfleet::engine::Curve::kBls12_381) {
      p = proof;
      p["pi_a"] = NonSubgroupBlsG1(rng_);
      add_proof("pi_a not in G1 subgroup", p);
    }
    p = proof;  // x + q: the same point mod q, but not a canonical coordinate
    p["pi_a"][0] = Dec(Add(Num(p["pi_a"][0]), q));
    add_proof("pi_a.x >= q", p, /*strict=*/true);
    p = proof;
    p["pi_a"] = json::array({"0", "1", "0"});
    add_proof("pi_a at infinity", p);

    json s = pub;
    s.push_back("1");
    add_pub("extra public signal", s);
    if (!pub.empty()) {
      s = pub;
      s[0] = Dec(Add(Num(s[0]), One()));
      if (!Less(Num(s[0]), r)) s[0] = "0";
      add_pub("public signal changed", s);
      s = pub;
      s[s.size() - 1] = Dec(Add(Num(s[s.size() - 1]), r));
      add_pub("public signal >= r", s);
      s = pub;
      s.erase(s.size() - 1);
      add_pub("public signal removed", s);
    }
    cases_.push_back({label + " other curve's vk", other_curve_vk, pub_path, proof_path, false, false});
  }

  const std::vector<Case>& cases() const { return cases_; }

 private:
  fs::path dir_;
  int counter_ = 0;
  std::vector<Case> cases_;
  std::mt19937_64 rng_{20261201};
};

std::string Curve(const std::string& fixture) { return fixture.substr(0, fixture.find('_')); }

// A circuit with no public signal: x·y = z, z·z = w, all private.
void WriteNoPublicCircuit(zkfleet::engine::Curve curve, const std::string& r1cs_path, const std::string& wtns_path) {
  const auto& primes = zkfleet::io::PrimesOf(curve);
  zkfleet::io::R1cs r;
  r.header.n8 = primes.n8r;
  r.header.prime.assign(primes.r, primes.r + primes.n8r);
  r.header.n_wires = 5;
  r.header.n_prv_in = 2;
  r.header.n_labels = 5;
  r.header.n_constraints = 2;
  const uint32_t wires[6] = {1, 2, 3, 3, 3, 4};  // A, B, C of both constraints, one term each
  std::vector<uint8_t> one(primes.n8r, 0);
  one[0] = 1;
  for (int k = 0; k <= 6; ++k) r.lc_start.push_back(static_cast<uint64_t>(k));
  for (uint32_t w : wires) {
    r.term_wire.push_back(w);
    r.term_coeff.insert(r.term_coeff.end(), one.begin(), one.end());
  }
  r.wire_labels = {0, 1, 2, 3, 4};
  zkfleet::io::WriteR1cs(r1cs_path, r);
  const uint64_t values[5] = {1, 3, 5, 15, 225};
  std::vector<uint8_t> wtns(5 * primes.n8r, 0);
  for (int i = 0; i < 5; ++i) std::memcpy(&wtns[i * primes.n8r], &values[i], 8);
  zkfleet::io::WriteWtns(wtns_path, primes.n8r, std::span<const uint8_t>(primes.r, primes.n8r), wtns);
}

::testing::AssertionResult Ran(const std::string& cmd) {
  auto r = RunCommand(cmd);
  if (r.exit_code == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << cmd << " exited " << r.exit_code << ":\n" << r.output;
}

// Makes a circuit in `dir` (circuit.zkey, vk.json from zkprove export-vk,
// witness.wtns). n_public < 0: the hand-written nPublic = 0 circuit.
::testing::AssertionResult MakeCircuit(const std::string& curve_name, int n_public, const fs::path& dir, int seed) {
  fs::create_directories(dir);
  const std::string d = dir.string();
  if (n_public == 0) {
    WriteNoPublicCircuit(*zkfleet::io::CurveFromSnarkjsName(curve_name), d + "/circuit.r1cs", d + "/witness.wtns");
  } else {
    auto r = Ran(Quote(ZkfleetDev()) + " gen-circuit --curve " + curve_name + " --constraints 300 --public-outputs 1" +
                 " --public-inputs " + std::to_string(n_public - 1) + " --seed " + std::to_string(seed) + " --out " +
                 Quote(d));
    if (!r) return r;
  }
  auto r = Ran(Quote(ZkfleetDev()) + " setup --insecure --seed " + std::to_string(seed) + " " + Quote(d + "/circuit.r1cs") +
               " " + Quote(d + "/circuit.zkey"));
  if (!r) return r;
  return Ran(Quote(Zkprove()) + " export-vk " + Quote(d + "/circuit.zkey") + " " + Quote(d + "/vk.json"));
}

// nPublic = 5 (one output, four public inputs).
constexpr const char* kCircomCircuit = R"(pragma circom 2.0.0;
template T(N) {
    signal input a[N];
    signal input b;
    signal output c;
    signal acc[N + 1];
    acc[0] <== b * b;
    for (var i = 0; i < N; i++) {
        acc[i + 1] <== acc[i] * a[i] + b;
    }
    c <== acc[N];
}
component main {public [a]} = T(4);
)";

// Compiles kCircomCircuit with circom2 and runs a throw-away snarkjs ceremony
// in `dir`: t.zkey, vk.json (snarkjs's export, which must equal
// zkprove export-vk's), t_js/t.wasm.
::testing::AssertionResult MakeCircomCircuit(const std::string& curve, const fs::path& dir) {
  fs::create_directories(dir);
  const std::string d = Quote(dir.string());
  const std::string snarkjs = Quote(zt::SnarkjsPath());
  zt::WriteFile((dir / "t.circom").string(), kCircomCircuit);
  for (const std::string& cmd : {
           "cd " + d + " && " + Quote(zt::Circom2Path()) + " t.circom --r1cs --wasm --prime " + curve + " -o .",
           "cd " + d + " && " + snarkjs + " powersoftau new " + curve + " 6 p0.ptau",
           "cd " + d + " && " + snarkjs + " powersoftau contribute p0.ptau p1.ptau --name=t -e=zkfleet-verify",
           "cd " + d + " && " + snarkjs + " powersoftau prepare phase2 p1.ptau p.ptau",
           "cd " + d + " && " + snarkjs + " groth16 setup t.r1cs p.ptau t0.zkey",
           "cd " + d + " && " + snarkjs + " zkey contribute t0.zkey t.zkey --name=t -e=zkfleet-verify2",
           "cd " + d + " && " + snarkjs + " zkey export verificationkey t.zkey vk.json",
           "cd " + d + " && " + Quote(Zkprove()) + " export-vk t.zkey our_vk.json",
       }) {
    auto r = Ran(cmd);
    if (!r) return r;
  }
  if (Load((dir / "vk.json").string()) != Load((dir / "our_vk.json").string())) {
    return ::testing::AssertionFailure() << "zkprove export-vk differs from snarkjs for " << dir.string();
  }
  return ::testing::AssertionSuccess();
}

TEST(ZkverifyVsSnarkjs, AgreesOnValidAndTamperedProofs) {
  ASSERT_TRUE(zt::RequireSnarkjs());
  ASSERT_TRUE(zt::RequireCircom2());
  zt::TempDir tmp;
  Corpus corpus(tmp.path());
  const std::string other_vk[2] = {zt::Fixture("bls12381_k12", "verification_key.json"),
                                   zt::Fixture("bn128_k12", "verification_key.json")};
  auto other = [&](const std::string& curve) { return curve == "bn128" ? other_vk[0] : other_vk[1]; };

  // 1. The bundled fixtures and ../shared/fixtures.
  for (const std::string fx : {"bn128_k12", "bls12381_k12"}) {
    corpus.AddValid(fx, zt::Fixture(fx, "verification_key.json"), zt::Fixture(fx, "public.json"),
                    zt::Fixture(fx, "proof.json"), other(Curve(fx)));
  }
  const fs::path shared = fs::path(ZKFLEET_SOURCE_DIR) / ".." / "shared" / "fixtures";
  int shared_count = 0;
  for (const std::string fx : {"bn128_k12", "bn128_k14", "bls12381_k12", "bls12381_k14"}) {
    const fs::path d = shared / fx;
    if (!fs::exists(d / "proof.json") || !fs::exists(d / "verification_key.json")) continue;
    corpus.AddValid("shared/" + fx, (d / "verification_key.json").string(), (d / "public.json").string(),
                    (d / "proof.json").string(), other(Curve(fx)));
    ++shared_count;
  }
  std::printf("[corpus] %d fixtures from %s\n", shared_count, shared.string().c_str());

  // 2. Generated circuits, nPublic 0, 2 and 64, proved three times each by zkprove.
  int seed = 7;
  for (const std::string curve : {"bn128", "bls12381"}) {
    for (int n_public : {0, 2, 64}) {
      const fs::path d = tmp.path() / ("gen_" + curve + "_" + std::to_string(n_public));
      ASSERT_TRUE(MakeCircuit(curve, n_public, d, seed++));
      for (int k = 0; k < 3; ++k) {
        const std::string proof = (d / ("proof" + std::to_string(k) + ".json")).string();
        const std::string pub = (d / ("public" + std::to_string(k) + ".json")).string();
        ASSERT_TRUE(Ran(Quote(Zkprove()) + " " + Quote((d / "circuit.zkey").string()) + " " +
                        Quote((d / "witness.wtns").string()) + " " + Quote(proof) + " " + Quote(pub)));
        corpus.AddValid(curve + " nPublic=" + std::to_string(n_public) + " proof " + std::to_string(k),
                        (d / "vk.json").string(), pub, proof, other(curve));
      }
    }
  }
  // 3. A circom2 circuit per curve, two witnesses each (snarkjs wtns calculate).
  for (const std::string curve : {"bn128", "bls12381"}) {
    const fs::path d = tmp.path() / ("circom_" + curve);
    ASSERT_TRUE(MakeCircomCircuit(curve, d));
    for (int k = 0; k < 2; ++k) {
      const std::string in = (d / ("in" + std::to_string(k) + ".json")).string();
      zt::WriteFile(in, k == 0 ? R"({"a": ["1", "2", "3", "4"], "b": "5"})"
                               : R"({"a": ["123456789012345678901234567890", "0", "7", "99"], "b": "31337"})");
      const std::string wtns = (d / ("w" + std::to_string(k) + ".wtns")).string();
      const std::string proof = (d / ("proof" + std::to_string(k) + ".json")).string();
      const std::string pub = (d / ("public" + std::to_string(k) + ".json")).string();
      ASSERT_TRUE(Ran(Quote(zt::SnarkjsPath()) + " wtns calculate " + Quote((d / "t_js" / "t.wasm").string()) + " " +
                      Quote(in) + " " + Quote(wtns)));
      ASSERT_TRUE(Ran(Quote(Zkprove()) + " " + Quote((d / "t.zkey").string()) + " " + Quote(wtns) + " " + Quote(proof) +
                      " " + Quote(pub)));
      corpus.AddValid(curve + " circom2 nPublic=5 proof " + std::to_string(k), (d / "vk.json").string(), pub, proof,
                      other(curve));
    }
  }
  const auto& cases = corpus.cases();

  // 4. snarkjs, once for the whole batch.
  json list = json::array();
  for (const auto& c : cases) list.push_back({{"vk", c.vk}, {"public", c.pub}, {"proof", c.proof}});
  const std::string list_path = tmp.file("cases.json"), results_path = tmp.file("results.json");
  Save(list_path, list);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(Ran("node " + Quote(std::string(ZKFLEET_SOURCE_DIR) + "/tests/tools/snarkjs_verify_batch.mjs") + " " +
                  Quote(list_path) + " " + Quote(results_path)));
  const auto t1 = std::chrono::steady_clock::now();
  const json snark = Load(results_path);
  ASSERT_EQ(snark.size(), cases.size());

  // 5. zkverify, once per case, and the comparison.
  int compared = 0, agreed_valid = 0, agreed_invalid = 0, strict = 0, strict_snarkjs_accepted = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    const auto run = RunCommand(Quote(Zkverify()) + " " + Quote(c.vk) + " " + Quote(c.pub) + " " + Quote(c.proof));
    const bool ours = run.exit_code == 0;
    const bool theirs = snark[i]["ok"].get<bool>();
    SCOPED_TRACE(c.label + ": zkverify said: " + run.output + " snarkjs said: " + (theirs ? "OK" : "rejected ") +
                 snark[i]["error"].get<std::string>());
    // The contract: "OK" and 0, or exactly one line and 1.
    if (ours) {
      EXPECT_EQ(run.output, "OK\n");
    } else {
      EXPECT_EQ(run.exit_code, 1);
      EXPECT_EQ(std::count(run.output.begin(), run.output.end(), '\n'), 1);
    }
    EXPECT_EQ(ours, c.valid);
    if (c.strict) {
      ++strict;
      if (theirs) ++strict_snarkjs_accepted;
      if (strict == 1) {
        std::printf("[strict] e.g. %s: zkverify rejects (%s), snarkjs %s\n", c.label.c_str(),
                    run.output.substr(0, run.output.size() - 1).c_str(), theirs ? "accepts" : "rejects");
      }
      continue;
    }
    EXPECT_EQ(ours, theirs);
    ++compared;
    if (ours == theirs) (ours ? agreed_valid : agreed_invalid)++;
  }
  const auto t2 = std::chrono::steady_clock::now();
  std::printf("[summary] %d cases compared with snarkjs: %d agreed valid, %d agreed invalid; %d strict-only cases "
              "(coordinate >= q; snarkjs accepted %d of them); snarkjs batch %.1f s, zkverify %.1f s\n",
              compared, agreed_valid, agreed_invalid, strict, strict_snarkjs_accepted,
              std::chrono::duration<double>(t1 - t0).count(),
              std::chrono::duration<double>(t2 - t1).count());
  EXPECT_GE(compared, 200);
  EXPECT_EQ(agreed_valid + agreed_invalid, compared);
}

// zkverify's contract on inputs it cannot read.
TEST(ZkverifyCli, UnreadableInputsGiveOneLineAndExitOne) {
  zt::TempDir tmp;
  const std::string vk = zt::Fixture("bn128_k12", "verification_key.json");
  const std::string pub = zt::Fixture("bn128_k12", "public.json");
  const std::string proof = zt::Fixture("bn128_k12", "proof.json");
  zt::WriteFile(tmp.file("garbage.json"), "{\"pi_a\": [1, 2");
  zt::WriteFile(tmp.file("notnum.json"), "[\"12a\"]");
  json p = Load(proof);
  p["curve"] = "bls12381";
  Save(tmp.file("curve.json"), p);
  const std::vector<std::array<std::string, 4>> runs = {
      {vk, pub, tmp.file("missing.json"), "no such file"},
      {vk, pub, tmp.file("garbage.json"), "not valid JSON"},
      {vk, tmp.file("notnum.json"), proof, "not a number"},
      {tmp.file("garbage.json"), pub, proof, "not valid JSON"},
      {vk, pub, tmp.file("curve.json"), "curve mismatch"},
  };
  for (const auto& r : runs) {
    const auto run = RunCommand(Quote(Zkverify()) + " " + Quote(r[0]) + " " + Quote(r[1]) + " " + Quote(r[2]));
    EXPECT_EQ(run.exit_code, 1) << run.output;
    EXPECT_EQ(std::count(run.output.begin(), run.output.end(), '\n'), 1) << run.output;
    EXPECT_NE(run.output.find(r[3]), std::string::npos) << run.output;
  }
  const auto ok = RunCommand(Quote(Zkverify()) + " " + Quote(vk) + " " + Quote(pub) + " " + Quote(proof));
  EXPECT_EQ(ok.exit_code, 0);
  EXPECT_EQ(ok.output, "OK\n");
}

// `zkprove export-vk` equals `snarkjs zkey export verificationkey`: the
// fixtures' verification_key.json (made by snarkjs) byte for byte, and a
// generated circuit per curve as parsed JSON.
TEST(ZkproveExportVk, MatchesSnarkjs) {
  ASSERT_TRUE(zt::RequireSnarkjs());
  zt::TempDir tmp;
  for (const std::string fx : {"bn128_k12", "bls12381_k12"}) {
    const std::string out = tmp.file(fx + ".json");
    ASSERT_TRUE(Ran(Quote(Zkprove()) + " export-vk " + Quote(zt::Fixture(fx, "circuit_final.zkey")) + " " + Quote(out)));
    EXPECT_EQ(zt::ReadFile(out), zt::ReadFile(zt::Fixture(fx, "verification_key.json"))) << fx;
  }
  int seed = 40;
  for (const std::string curve : {"bn128", "bls12381"}) {
    const fs::path d = tmp.path() / curve;
    ASSERT_TRUE(MakeCircuit(curve, 5, d, seed++));
    const std::string theirs = (d / "snarkjs_vk.json").string();
    ASSERT_TRUE(Ran(Quote(zt::SnarkjsPath()) + " zkey export verificationkey " + Quote((d / "circuit.zkey").string()) +
                    " " + Quote(theirs)));
    EXPECT_EQ(Load((d / "vk.json").string()), Load(theirs)) << curve;
    EXPECT_EQ(zt::ReadFile((d / "vk.json").string()), zt::ReadFile(theirs)) << curve;
  }
}

}  // namespace
