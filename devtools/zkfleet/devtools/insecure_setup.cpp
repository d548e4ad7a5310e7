#include "zkfleet/devtools/insecure_setup.hpp"

#include <sys/random.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <span>

#include "zkfleet/common/error.hpp"
#include "zkfleet/runtime/thread_pool.hpp"
#include "zkfleet/curve/bls12_381.hpp"
#include "zkfleet/curve/bn254.hpp"
#include "zkfleet/devtools/fixed_base.hpp"
#include "zkfleet/devtools/lagrange.hpp"
#include "zkfleet/devtools/prng.hpp"
#include "zkfleet/io/curve_primes.hpp"
#include "zkfleet/zkey/zkey.hpp"

namespace zkfleet::devtools {
namespace {

using Clock = std::chrono::steady_clock;

// ---- toxic waste --------------------------------------------------------------

// A uniformly random non-zero element of Fr from the kernel's CSPRNG.
template <class Fr>
Fr SecureRandomNonZero() {
  for (;;) {
    uint64_t limbs[Fr::kLimbs];
    size_t got = 0;
    auto* bytes = reinterpret_cast<uint8_t*>(limbs);
    while (got < sizeof(limbs)) {
      const ssize_t n = getrandom(bytes + got, sizeof(limbs) - got, 0);
      if (n < 0) throw Error(ErrorCode::kInternal, "setup: getrandom failed while drawing the toxic waste");
      got += static_cast<size_t>(n);
    }
    const int top_bits = Fr::kModulusBits - 64 * (Fr::kLimbs - 1);
    if (top_bits < 64) limbs[Fr::kLimbs - 1] &= (uint64_t{1} << top_bits) - 1;
    if (!Fr::is_below_modulus(limbs)) continue;
    const Fr x = Fr::from_canonical(limbs);
    if (!x.is_zero()) return x;
  }
}

template <class Fr>
std::array<uint8_t, 32> Canonical(const Fr& x) {
  static_assert(Fr::kBytes == 32);
  uint64_t limbs[4];
  x.to_canonical(limbs);
  std::array<uint8_t, 32> out;
  std::memcpy(out.data(), limbs, 32);
  return out;
}

template <class Fr>
Fr FromCanonical(const std::array<uint8_t, 32>& bytes) {
  uint64_t limbs[4];
  std::memcpy(limbs, bytes.data(), 32);
  return Fr::from_canonical(limbs);
}

template <class Fr>
ToxicWaste Draw(std::optional<uint64_t> seed) {
  std::optional<Prng> prng;
  if (seed) prng.emplace(*seed);
  auto next = [&]() -> Fr {
    if (!prng) return SecureRandomNonZero<Fr>();
    for (;;) {
      const Fr x = prng->FieldElement<Fr>();
      if (!x.is_zero()) return x;
    }
  };
  ToxicWaste t;
  t.tau = Canonical(next());
  t.alpha = Canonical(next());
  t.beta = Canonical(next());
  t.delta = Canonical(next());
  return t;
}

// ---- the setup ------------------------------------------------------------------

// Times the steps and reports them through options.log.
class StepTimer {
 public:
  StepTimer(const SetupOptions& options, SetupReport& report) : options_(options), report_(report) {}
  void Done(const std::string& step) {
    const Clock::time_point now = Clock::now();
    const double s = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    report_.seconds.emplace_back(step, s);
    if (options_.log) {
      char line[160];
      std::snprintf(line, sizeof line, "%-28s %8.2f s", step.c_str(), s);
      options_.log(line);
    }
  }

 private:
  const SetupOptions& options_;
  SetupReport& report_;
  Clock::time_point last_ = Clock::now();
};

template <class C>
class Setup {
  using Fr = typename C::Fr;
  using G1 = typename C::G1;
  using G2 = typename C::G2;
  using A1 = curve::Affine<G1>;
  using A2 = curve::Affine<G2>;

 public:
  Setup(const io::R1cs& r1cs, const std::string& zkey_path, const SetupOptions& options, SetupReport& report)
      : r1cs_(r1cs), path_(zkey_path), options_(options), report_(report), pool_(options.threads),
        timer_(options, report) {}

  void Run(const ToxicWaste& secrets) {
    const io::R1csHeader& h = r1cs_.header;
    m_ = h.n_constraints;
    n_public_ = h.n_pub_out + h.n_pub_in;
    n_vars_ = h.n_wires;
    log_n_ = report_.domain_power;
    n_ = size_t{1} << log_n_;
    tau_ = FromCanonical<Fr>(secrets.tau);
    alpha_ = FromCanonical<Fr>(secrets.alpha);
    beta_ = FromCanonical<Fr>(secrets.beta);
    delta_ = FromCanonical<Fr>(secrets.delta);

    ComputeLagrange();
    timer_.Done("Lagrange basis at tau");
    AccumulateSignals();
    timer_.Done("u, v, w per signal");

    // Window tables sized for all the multiplications each group will do.
    const size_t g1_count = 3 * size_t{n_vars_} + n_ + 16;
    const size_t g2_count = size_t{n_vars_} + 2;
    report_.g1_window_bits = ChooseFixedBaseWindow(g1_count, Fr::kModulusBits);
    report_.g2_window_bits = ChooseFixedBaseWindow(g2_count, Fr::kModulusBits);
    FixedBaseTable<G1> g1(G1::generator(), report_.g1_window_bits, pool_);
    FixedBaseTable<G2> g2(G2::generator(), report_.g2_window_bits, pool_);
    timer_.Done("fixed-base tables");

    WriteZkey(g1, g2);
  }

 private:
  // L[c] = L_c(tau) for every row c of the domain, and the odd-coset
  // generator g the prover will use for H (spec §8.2, §8.7).
  void ComputeLagrange() {
    const Fr omega = Fr::root_of_unity(log_n_);
    coset_ = Fr::root_of_unity(log_n_ + 1);  // zero past the 2-adicity
    if (coset_.is_zero()) coset_ = Fr::from_uint(25);  // snarkjs' shift at n = 2^s (untested: 2^28 bn128)
    const Fr n_fr = Fr::from_uint(n_);
    const Fr tau_n = PowU64(tau_, n_);
    const Fr g_n = PowU64(coset_, n_);
    if (tau_n == Fr::one() || tau_n == g_n) {
      // Probability about 2n/r: tau landed on a domain or coset point.
      throw Error(ErrorCode::kInternal, "setup: tau is a point of the domain or its coset; run again (or change --seed)");
    }
    L_ = ScaledCosetFractions(tau_, Fr::one(), omega, n_, (tau_n - Fr::one()) * n_fr.inverse(), pool_);
    // H: Z(τ)·ℓ_i(τ)/(Z(x_i)·δ) with Z(x_i) = g^n − 1 and
    // ℓ_i(τ) = (τ^n − g^n)/(n g^n) · x_i/(τ − x_i).
    const Fr h_scale = (tau_n - Fr::one()) * (tau_n - g_n) *
                       (n_fr * g_n * (g_n - Fr::one()) * delta_).inverse();
    h_scalars_ = ScaledCosetFractions(tau_, coset_, omega, n_, h_scale, pool_);
  }

  // u_s, v_s, w_s: one pass per matrix, the three on separate threads.
  void AccumulateSignals() {
    u_.assign(n_vars_, Fr::zero());
    v_.assign(n_vars_, Fr::zero());
    w_.assign(n_vars_, Fr::zero());
    std::vector<Fr>* acc[3] = {&u_, &v_, &w_};
    pool_.RunTasks(3, [&](size_t part) {
      std::vector<Fr>& out = *acc[part];
      for (uint32_t c = 0; c < m_; ++c) {
        const io::LinearCombination lc = r1cs_.lc(c, static_cast<int>(part));
        for (size_t t = 0; t < lc.size; ++t) {
          uint64_t coef[4];
          std::memcpy(coef, lc.coeffs + 32 * t, 32);
          out[lc.wires[t]] += Fr::from_canonical(coef) * L_[c];
        }
      }
    });
    // The public-input rows m + s (one A term each, spec §4.3).
    for (uint32_t s = 0; s <= n_public_; ++s) u_[s] += L_[m_ + s];
  }

  // β u_s + α v_s + w_s.
  Fr Combined(uint32_t s) const { return beta_ * u_[s] + alpha_ * v_[s] + w_[s]; }

  template <class Cfg>
  void WritePoints(io::ZkeyWriter& writer, uint32_t id, const FixedBaseTable<Cfg>& table,
                   std::span<const Fr> scalars, const char* step) {
    using Affine = curve::Affine<Cfg>;
    static_assert(sizeof(Affine) == 2 * Cfg::Field::kBytes, "Affine must be x||y without padding");
    std::vector<Affine> points(scalars.size());
    table.MultiplyMany(scalars, points.data(), pool_);
    // Affine points are laid out exactly like the zkey's LEM encoding (and
    // all-zero for infinity), so they are written as they are.
    writer.WriteSection(id, {reinterpret_cast<const uint8_t*>(points.data()), points.size() * sizeof(Affine)});
    timer_.Done(step);
  }

  template <class Cfg>
  static std::vector<uint8_t> AffineBytes(const curve::Affine<Cfg>& p) {
    const auto* b = reinterpret_cast<const uint8_t*>(&p);
    return std::vector<uint8_t>(b, b + sizeof p);
  }

  void WriteZkey(const FixedBaseTable<G1>& g1, const FixedBaseTable<G2>& g2) {
    // Section 4 holds every A and B term plus the public-input rows.
    const uint64_t ab_terms = CountTerms(0) + CountTerms(1);
    const uint64_t n_coeffs = ab_terms + n_public_ + 1;
    if (n_coeffs > std::numeric_limits<uint32_t>::max()) {
      throw Error(ErrorCode::kInvalidArgument, "setup: the circuit has " + std::to_string(n_coeffs) +
                                                   " A/B coefficients, more than a zkey can hold (2^32 - 1)");
    }
    report_.n_coeffs = static_cast<uint32_t>(n_coeffs);

    auto g1_point = [&](const Fr& k) { return AffineBytes<G1>(curve::to_affine(g1.Multiply(k))); };
    auto g2_point = [&](const Fr& k) { return AffineBytes<G2>(curve::to_affine(g2.Multiply(k))); };
    const std::vector<uint8_t> alpha1 = g1_point(alpha_), beta1 = g1_point(beta_), delta1 = g1_point(delta_);
    const std::vector<uint8_t> beta2 = g2_point(beta_), delta2 = g2_point(delta_);
    const std::vector<uint8_t> gamma2 = AffineBytes<G2>(G2::generator());  // γ = 1

    io::ZkeyHeaderData header;
    header.curve = report_.curve;
    header.n_vars = n_vars_;
    header.n_public = n_public_;
    header.domain_size = static_cast<uint32_t>(n_);
    header.n_coeffs = report_.n_coeffs;
    header.alpha1 = alpha1;
    header.beta1 = beta1;
    header.beta2 = beta2;
    header.gamma2 = gamma2;
    header.delta1 = delta1;
    header.delta2 = delta2;
    io::ZkeyWriter writer(path_, header);

    std::vector<Fr> scalars(n_public_ + 1);
    for (uint32_t s = 0; s <= n_public_; ++s) scalars[s] = Combined(s);
    WritePoints<G1>(writer, io::kZkeyIc, g1, scalars, "IC points");

    WriteCoefficients(writer);
    timer_.Done("coefficients");

    WritePoints<G1>(writer, io::kZkeyA, g1, u_, "A points");
    u_ = {};
    WritePoints<G1>(writer, io::kZkeyB1, g1, v_, "B1 points");
    WritePoints<G2>(writer, io::kZkeyB2, g2, v_, "B2 points (G2)");
    v_ = {};

    scalars.assign(n_vars_ - n_public_ - 1, Fr::zero());
    const Fr delta_inv = delta_.inverse();
    pool_.ParallelFor(scalars.size(), [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) scalars[i] = Combined(static_cast<uint32_t>(n_public_ + 1 + i)) * delta_inv;
    });
    WritePoints<G1>(writer, io::kZkeyC, g1, scalars, "C points");
    scalars = {};
    WritePoints<G1>(writer, io::kZkeyH, g1, h_scalars_, "H points");
    writer.Finish();
    timer_.Done("finish file");
  }

  uint64_t CountTerms(int part) const {
    uint64_t total = 0;
    for (uint32_t c = 0; c < m_; ++c) total += r1cs_.lc(c, part).size;
    return total;
  }

  // Records (matrix, row, signal, coef·R² mod r), by row, A before B, then
  // the public-input rows: the order `snarkjs groth16 setup` writes.
  void WriteCoefficients(io::ZkeyWriter& writer) {
    constexpr size_t kRecord = io::kCoeffRecordHeader + 32;
    std::vector<uint8_t> buffer;
    buffer.reserve((1 << 15) * kRecord);
    auto add = [&](uint32_t matrix, uint32_t row, uint32_t signal, const uint64_t* coef) {
      // from_canonical(x) = x·R; applied twice it gives coef·R².
      const Fr once = Fr::from_canonical(coef);
      const Fr twice = Fr::from_canonical(once.v);
      uint8_t rec[kRecord];
      std::memcpy(rec, &matrix, 4);
      std::memcpy(rec + 4, &row, 4);
      std::memcpy(rec + 8, &signal, 4);
      std::memcpy(rec + 12, twice.v, 32);
      buffer.insert(buffer.end(), rec, rec + kRecord);
      if (buffer.size() + kRecord > buffer.capacity()) {
        writer.Append(buffer);
        buffer.clear();
      }
    };
    writer.BeginSection(io::kZkeyCoeffs);
    for (uint32_t c = 0; c < m_; ++c) {
      for (uint32_t matrix = 0; matrix < 2; ++matrix) {
        const io::LinearCombination lc = r1cs_.lc(c, static_cast<int>(matrix));
        for (size_t t = 0; t < lc.size; ++t) {
          uint64_t coef[4];
          std::memcpy(coef, lc.coeffs + 32 * t, 32);
          add(matrix, c, lc.wires[t], coef);
        }
      }
    }
    const uint64_t one[4] = {1, 0, 0, 0};
    for (uint32_t s = 0; s <= n_public_; ++s) add(0, m_ + s, s, one);
    writer.Append(buffer);
    writer.EndSection();
  }

  const io::R1cs& r1cs_;
  const std::string& path_;
  const SetupOptions& options_;
  SetupReport& report_;
  cpu::ThreadPool pool_;
  StepTimer timer_;

  uint32_t m_ = 0, n_public_ = 0, n_vars_ = 0;
  int log_n_ = 0;
  size_t n_ = 0;
  Fr tau_, alpha_, beta_, delta_, coset_;
  std::vector<Fr> L_;          // L_c(tau), c < n
  std::vector<Fr> h_scalars_;  // H[i] / G1
  std::vector<Fr> u_, v_, w_;  // per signal
};

// Checks that the r1cs can become a zkey and fills the report's shape.
SetupReport CheckCircuit(const io::R1cs& r1cs, const std::string& name, const SetupOptions& options) {
  const io::R1csHeader& h = r1cs.header;
  SetupReport report;
  const std::optional<io::Curve> curve = io::CurveFromScalarPrime(h.prime);
  if (!curve) {
    const io::CurvePrimes& bn = io::PrimesOf(io::Curve::kBn254);
    const io::CurvePrimes& bls = io::PrimesOf(io::Curve::kBls12_381);
    throw Error(ErrorCode::kUnsupported,
                name + ": header: prime: " + io::HexLe(h.prime) + " is not the scalar field of bn128 (" +
                    io::HexLe({bn.r, bn.n8r}) + ") or bls12381 (" + io::HexLe({bls.r, bls.n8r}) + ")");
  }
  report.curve = *curve;
  if (options.max_power < 1 || options.max_power > kMaxDomainPower) {
    throw Error(ErrorCode::kInvalidArgument, "setup: --max-power: expected 1.." + std::to_string(kMaxDomainPower) +
                                                 ", found " + std::to_string(options.max_power));
  }
  if (h.n_constraints == 0) {
    throw Error(ErrorCode::kInvalidArgument, name + ": header: nConstraints: expected >= 1, found 0");
  }
  report.n_constraints = h.n_constraints;
  report.n_public = h.n_pub_out + h.n_pub_in;
  report.n_vars = h.n_wires;
  const uint64_t rows = uint64_t{h.n_constraints} + report.n_public + 1;
  report.domain_power = DomainPower(h.n_constraints, report.n_public);
  const int limit = std::min<int>(options.max_power, static_cast<int>(io::PrimesOf(*curve).two_adicity));
  if (report.domain_power > limit) {
    throw Error(ErrorCode::kInvalidArgument,
                name + ": nConstraints " + std::to_string(h.n_constraints) + " + nPublic " + std::to_string(report.n_public) +
                    " + 1 = " + std::to_string(rows) + " rows need a domain of 2^" + std::to_string(report.domain_power) +
                    ", above the limit 2^" + std::to_string(limit) +
                    (limit == options.max_power ? " (--max-power)" : " (the field's 2-adicity)"));
  }
  return report;
}

}  // namespace

ToxicWaste DrawToxicWaste(io::Curve curve, std::optional<uint64_t> seed) {
  return curve == io::Curve::kBn254 ? Draw<ff::Bn254Fr>(seed) : Draw<ff::Bls12_381Fr>(seed);
}

SetupReport InsecureSetup(const io::R1cs& r1cs, const std::string& name, const std::string& zkey_path,
                          const SetupOptions& options) {
  SetupReport report = CheckCircuit(r1cs, name, options);
  const ToxicWaste secrets = DrawToxicWaste(report.curve, options.seed);
  if (report.curve == io::Curve::kBn254) {
    Setup<curve::Bn254>(r1cs, zkey_path, options, report).Run(secrets);
  } else {
    Setup<curve::Bls12_381>(r1cs, zkey_path, options, report).Run(secrets);
  }
  return report;
}

SetupReport InsecureSetupFromFile(const std::string& r1cs_path, const std::string& zkey_path,
                                  const SetupOptions& options) {
  const Clock::time_point t0 = Clock::now();
  const io::R1cs r1cs = io::ReadR1cs(r1cs_path);
  const double read_s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (options.log) {
    char line[160];
    std::snprintf(line, sizeof line, "%-28s %8.2f s", "read r1cs", read_s);
    options.log(line);
  }
  SetupReport report = InsecureSetup(r1cs, r1cs_path, zkey_path, options);
  report.seconds.insert(report.seconds.begin(), {"read r1cs", read_s});
  return report;
}

}  // namespace zkfleet::devtools
