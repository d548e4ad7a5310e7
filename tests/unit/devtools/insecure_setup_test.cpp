// setup --insecure: the zkey opens with the engine's validating reader, and
// every point in it equals the spec §4.4/§13 formula recomputed
// independently (scalars with GMP, points by double-and-add) from the same
// seeded toxic waste. Bad circuits are rejected with clear messages.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "gmp_field.hpp"
#include "scratch_dir.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/curve/bls12_381.hpp"
#include "zkfleet/curve/bn254.hpp"
#include "zkfleet/devtools/circuit_generator.hpp"
#include "zkfleet/devtools/insecure_setup.hpp"
#include "zkfleet/io/curve_primes.hpp"
#include "zkfleet/zkey/zkey.hpp"

namespace zkfleet::devtools {
namespace {

using testing::FromLe;
using testing::GmpField;
using testing::ToLe;

using testing::ScratchDir;
using testing::ScratchPath;

std::vector<uint8_t> FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// s·G by double-and-add, in the zkey's byte encoding.
template <class Cfg>
std::vector<uint8_t> ExpectedPoint(const mpz_class& s) {
  const std::vector<uint8_t> le = ToLe(s, 32);
  uint64_t limbs[4];
  std::memcpy(limbs, le.data(), 32);
  const auto p = curve::to_affine(curve::scalar_mul(curve::Jacobian<Cfg>::from_affine(Cfg::generator()), limbs, 4));
  const auto* b = reinterpret_cast<const uint8_t*>(&p);
  return std::vector<uint8_t>(b, b + sizeof p);
}

std::vector<uint8_t> PointAt(const io::PointArray& arr, size_t i, size_t size) {
  return std::vector<uint8_t>(arr.data + i * size, arr.data + (i + 1) * size);
}

template <class C>
void CheckAgainstFormulas(io::Curve curve_id) {
  using G1 = typename C::G1;
  using G2 = typename C::G2;
  CircuitOptions co;
  co.curve = curve_id;
  co.constraints = 55;  // + 3 public + 1 = 59 rows: domain 64 with 5 empty rows
  co.seed = 3;
  const GeneratedCircuit gen = GenerateCircuit(co);
  const io::R1cs& r1cs = gen.r1cs;
  const auto dir = ScratchDir();
  const std::string zkey_path = dir / "circuit.zkey";
  SetupOptions so;
  so.seed = 11;
  so.threads = 2;
  const SetupReport report = InsecureSetup(r1cs, "test circuit", zkey_path, so);
  EXPECT_EQ(report.curve, curve_id);
  EXPECT_EQ(report.domain_power, 6);

  const io::ZkeyFile key = io::ZkeyFile::Open(zkey_path);
  const uint32_t n_public = 3, n_vars = r1cs.header.n_wires, m = r1cs.header.n_constraints, n = 64;
  EXPECT_EQ(key.curve(), curve_id);
  EXPECT_EQ(key.n_vars(), n_vars);
  EXPECT_EQ(key.n_public(), n_public);
  EXPECT_EQ(key.domain_size(), n);

  // Scalars, from scratch with GMP.
  const GmpField f(FromLe(io::PrimesOf(curve_id).r, 32));
  const ToxicWaste tw = DrawToxicWaste(curve_id, so.seed);
  const mpz_class tau = FromLe(tw.tau.data(), 32), alpha = FromLe(tw.alpha.data(), 32),
                  beta = FromLe(tw.beta.data(), 32), delta = FromLe(tw.delta.data(), 32);
  const mpz_class omega = f.Root(6), tau_n = f.Pow(tau, n);
  std::vector<mpz_class> lagrange(n);
  for (uint32_t c = 0; c < n; ++c) {
    const mpz_class wc = f.Pow(omega, c);
    lagrange[c] = f.Mul(f.Mul(wc, tau_n - 1), f.Inv(f.Mul(n, tau - wc)));
  }
  std::vector<mpz_class> u(n_vars, 0), v(n_vars, 0), w(n_vars, 0);
  std::vector<mpz_class>* acc[3] = {&u, &v, &w};
  for (uint32_t c = 0; c < m; ++c) {
    for (int part = 0; part < 3; ++part) {
      const io::LinearCombination lc = r1cs.lc(c, part);
      for (size_t t = 0; t < lc.size; ++t) {
        mpz_class& x = (*acc[part])[lc.wires[t]];
        x = f.Mod(x + FromLe(lc.coeffs + 32 * t, 32) * lagrange[c]);
      }
    }
  }
  for (uint32_t s = 0; s <= n_public; ++s) u[s] = f.Mod(u[s] + lagrange[m + s]);
  const auto combined = [&](uint32_t s) { return f.Mod(beta * u[s] + alpha * v[s] + w[s]); };

  // Header points.
  const size_t g1 = key.g1_size(), g2 = key.g2_size();
  const auto bytes = [](const uint8_t* p, size_t size) { return std::vector<uint8_t>(p, p + size); };
  EXPECT_EQ(bytes(key.alpha1(), g1), ExpectedPoint<G1>(alpha));
  EXPECT_EQ(bytes(key.beta1(), g1), ExpectedPoint<G1>(beta));
  EXPECT_EQ(bytes(key.beta2(), g2), ExpectedPoint<G2>(beta));
  EXPECT_EQ(bytes(key.gamma2(), g2), ExpectedPoint<G2>(1));
  EXPECT_EQ(bytes(key.delta1(), g1), ExpectedPoint<G1>(delta));
  EXPECT_EQ(bytes(key.delta2(), g2), ExpectedPoint<G2>(delta));

  // Sections 3, 5..8.
  const mpz_class delta_inv = f.Inv(delta);
  size_t infinite_a = 0;
  for (uint32_t s = 0; s < n_vars; ++s) {
    ASSERT_EQ(PointAt(key.a(), s, g1), ExpectedPoint<G1>(u[s])) << "A[" << s << "]";
    ASSERT_EQ(PointAt(key.b1(), s, g1), ExpectedPoint<G1>(v[s])) << "B1[" << s << "]";
    ASSERT_EQ(PointAt(key.b2(), s, g2), ExpectedPoint<G2>(v[s])) << "B2[" << s << "]";
    if (s <= n_public) {
      ASSERT_EQ(PointAt(key.ic(), s, g1), ExpectedPoint<G1>(combined(s))) << "IC[" << s << "]";
    } else {
      ASSERT_EQ(PointAt(key.c(), s - n_public - 1, g1), ExpectedPoint<G1>(f.Mul(combined(s), delta_inv)))
          << "C[" << s << "]";
    }
    infinite_a += u[s] == 0;
  }
  EXPECT_GT(infinite_a, 0u) << "signals outside A must be stored as infinity (all-zero bytes)";

  // Section 9, with the closed form of spec §4.4:
  // H[i] = x_i/(2n)·(τ^2n − 1)/(τ − x_i)/δ, x_i = ω_2n^(2i+1).
  const mpz_class omega_2n = f.Root(7), tau_2n = f.Pow(tau, 2 * n);
  for (uint32_t i = 0; i < n; ++i) {
    const mpz_class x = f.Pow(omega_2n, 2 * i + 1);
    const mpz_class h = f.Mul(f.Mul(f.Mul(x, tau_2n - 1), f.Inv(f.Mul(2 * n, tau - x))), delta_inv);
    ASSERT_EQ(PointAt(key.h(), i, g1), ExpectedPoint<G1>(h)) << "H[" << i << "]";
  }

  // Section 4: every A and B term by row (A first), coef·R² mod r, then the
  // public-input rows.
  const mpz_class r2 = f.Mod(mpz_class(1) << 512);
  uint64_t rec = 0;
  for (uint32_t c = 0; c < m; ++c) {
    for (uint32_t part = 0; part < 2; ++part) {
      const io::LinearCombination lc = r1cs.lc(c, static_cast<int>(part));
      for (size_t t = 0; t < lc.size; ++t, ++rec) {
        ASSERT_LT(rec, key.n_coeffs());
        const io::CoeffRecord got = key.coeff(rec);
        EXPECT_EQ(got.matrix, part);
        EXPECT_EQ(got.row, c);
        EXPECT_EQ(got.signal, lc.wires[t]);
        EXPECT_EQ(FromLe(got.value, 32), f.Mul(FromLe(lc.coeffs + 32 * t, 32), r2)) << "record " << rec;
      }
    }
  }
  for (uint32_t s = 0; s <= n_public; ++s, ++rec) {
    const io::CoeffRecord got = key.coeff(rec);
    EXPECT_EQ(got.matrix, 0u);
    EXPECT_EQ(got.row, m + s);
    EXPECT_EQ(got.signal, s);
    EXPECT_EQ(FromLe(got.value, 32), r2);
  }
  EXPECT_EQ(rec, key.n_coeffs());
}

TEST(InsecureSetup, Bn128ZkeyMatchesTheFormulas) { CheckAgainstFormulas<curve::Bn254>(io::Curve::kBn254); }
TEST(InsecureSetup, Bls12381ZkeyMatchesTheFormulas) {
  CheckAgainstFormulas<curve::Bls12_381>(io::Curve::kBls12_381);
}

TEST(InsecureSetup, SeedMakesKeysReproducibleAndNoSeedDoesNot) {
  CircuitOptions co;
  co.constraints = 100;
  const GeneratedCircuit gen = GenerateCircuit(co);
  const auto dir = ScratchDir();
  SetupOptions so;
  so.seed = 5;
  InsecureSetup(gen.r1cs, "c", dir / "a.zkey", so);
  InsecureSetup(gen.r1cs, "c", dir / "b.zkey", so);
  EXPECT_EQ(FileBytes(dir / "a.zkey"), FileBytes(dir / "b.zkey"));
  so.seed.reset();
  InsecureSetup(gen.r1cs, "c", dir / "c.zkey", so);
  InsecureSetup(gen.r1cs, "c", dir / "d.zkey", so);
  EXPECT_NE(FileBytes(dir / "c.zkey"), FileBytes(dir / "d.zkey"));
  EXPECT_NE(FileBytes(dir / "a.zkey"), FileBytes(dir / "c.zkey"));
  const ToxicWaste t = DrawToxicWaste(io::Curve::kBn254, 5);
  EXPECT_NE(t.tau, t.alpha);
  EXPECT_NE(t.beta, t.delta);
}

TEST(InsecureSetup, AcceptsACircomCompiledCircuit) {
  const std::string fixture = std::string(ZKFLEET_FIXTURES_DIR) + "/bn128_k12/circuit.r1cs";
  const auto dir = ScratchDir();
  SetupOptions so;
  so.seed = 1;
  const SetupReport report = InsecureSetupFromFile(fixture, dir / "k.zkey", so);
  const io::ZkeyFile key = io::ZkeyFile::Open(dir / "k.zkey");
  const io::ZkeyFile reference = io::ZkeyFile::Open(std::string(ZKFLEET_FIXTURES_DIR) + "/bn128_k12/circuit_final.zkey");
  // Same shape as snarkjs' own key for this circuit, coefficients included.
  EXPECT_EQ(key.n_vars(), reference.n_vars());
  EXPECT_EQ(key.n_public(), reference.n_public());
  EXPECT_EQ(key.domain_size(), reference.domain_size());
  ASSERT_EQ(key.n_coeffs(), reference.n_coeffs());
  EXPECT_EQ(0, std::memcmp(key.coeffs(), reference.coeffs(), uint64_t{key.n_coeffs()} * key.coeff_record_size()));
  EXPECT_EQ(std::memcmp(key.gamma2(), reference.gamma2(), key.g2_size()), 0);
  EXPECT_EQ(report.domain_power, 12);
}

void ExpectSetupError(const io::R1cs& r1cs, const SetupOptions& so, ErrorCode code, const std::string& fragment) {
  const auto dir = ScratchDir();
  try {
    InsecureSetup(r1cs, "bad.r1cs", dir / "bad.zkey", so);
    FAIL() << "expected an error mentioning '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "bad.zkey"));
}

TEST(InsecureSetup, RejectsAnotherPrime) {
  CircuitOptions co;
  co.constraints = 20;
  GeneratedCircuit gen = GenerateCircuit(co);
  // 2^255 - 19: a 32-byte prime that is neither curve's scalar field.
  mpz_class p = (mpz_class(1) << 255) - 19;
  gen.r1cs.header.prime = ToLe(p, 32);
  ExpectSetupError(gen.r1cs, {}, ErrorCode::kUnsupported, "is not the scalar field of bn128");
}

TEST(InsecureSetup, RejectsCircuitsAboveTheDomainLimit) {
  CircuitOptions co;
  co.constraints = 61;  // 61 + 3 + 1 rows: domain 2^7
  const GeneratedCircuit gen = GenerateCircuit(co);
  SetupOptions so;
  so.max_power = 6;
  ExpectSetupError(gen.r1cs, so, ErrorCode::kInvalidArgument, "65 rows need a domain of 2^7, above the limit 2^6");
  so.max_power = 40;
  ExpectSetupError(gen.r1cs, so, ErrorCode::kInvalidArgument, "--max-power: expected 1..28");
}

TEST(InsecureSetup, RejectsACircuitWithoutConstraints) {
  CircuitOptions co;
  co.constraints = 5;
  GeneratedCircuit gen = GenerateCircuit(co);
  gen.r1cs.header.n_constraints = 0;
  gen.r1cs.lc_start.assign(1, 0);
  gen.r1cs.term_wire.clear();
  gen.r1cs.term_coeff.clear();
  ExpectSetupError(gen.r1cs, {}, ErrorCode::kInvalidArgument, "nConstraints: expected >= 1");
}

}  // namespace
}  // namespace zkfleet::devtools
