#include "zkfleet/groth16/verifier.hpp"

#include <cstring>
#include <utility>
#include <variant>

#include "zkfleet/common/error.hpp"
#include "zkfleet/msm/cpu_msm.hpp"
#include "zkfleet/curve/subgroup.hpp"
#include "zkfleet/zkey/zkey.hpp"
#include "zkfleet/pairing/pairing.hpp"

namespace zkfleet::groth16 {

namespace {

// v as an element of F when v < p.
template <class F>
bool ToField(const BigInt& v, F& out) {
  for (size_t i = F::kLimbs; i < v.size(); ++i) {
    if (v[i] != 0) return false;
  }
  if (!F::is_below_modulus(v.data())) return false;
  out = F::from_canonical(v.data());
  return true;
}

template <class F>
BigInt FromField(const F& x) {
  BigInt out{};
  x.to_canonical(out.data());
  return out;
}

// Converts and checks a G1 point; returns "" or what is wrong with it.
template <class C>
std::string ToG1(const G1Point& in, pairing::G1Affine<C>& out, const std::string& what) {
  using Fq = typename C::Fq;
  if (in.infinity) {
    out = pairing::G1Affine<C>::infinity();
    return "";
  }
  Fq x, y;
  if (!ToField(in.x, x)) return what + ": x coordinate is not below the base field modulus q";
  if (!ToField(in.y, y)) return what + ": y coordinate is not below the base field modulus q";
  out = pairing::G1Affine<C>{x, y};
  if (out.is_infinity()) return "";  // (0, 0): snarkjs's encoding of infinity
  if (!curve::is_on_curve(out)) return what + ": point is not on the curve";
  if (!curve::InPrimeOrderSubgroup(out)) return what + ": point is not in the prime-order subgroup";
  return "";
}

template <class C>
std::string ToG2(const G2Point& in, pairing::G2Affine<C>& out, const std::string& what) {
  using Fq = typename C::Fq;
  using Fq2 = typename C::Fq2;
  if (in.infinity) {
    out = pairing::G2Affine<C>::infinity();
    return "";
  }
  Fq c[4];
  const BigInt* v[4] = {&in.x0, &in.x1, &in.y0, &in.y1};
  const char* names[4] = {"x.c0", "x.c1", "y.c0", "y.c1"};
  for (int i = 0; i < 4; ++i) {
    if (!ToField(*v[i], c[i])) {
      return what + ": " + names[i] + " coordinate is not below the base field modulus q";
    }
  }
  out = pairing::G2Affine<C>{Fq2{c[0], c[1]}, Fq2{c[2], c[3]}};
  if (out.is_infinity()) return "";
  if (!curve::is_on_curve(out)) return what + ": point is not on the curve (G2)";
  if (!curve::InPrimeOrderSubgroup(out)) return what + ": point is not in the prime-order subgroup (G2)";
  return "";
}

// Tables of the multiples 1·P .. 2^(bits-1)·P of each base, affine, one
// field inversion for all of them.
template <class Cfg>
std::vector<curve::Affine<Cfg>> MultiplesTable(std::span<const curve::Affine<Cfg>> bases, int bits) {
  using Jac = curve::Jacobian<Cfg>;
  const size_t per = size_t{1} << (bits - 1);
  std::vector<Jac> jac(bases.size() * per);
  for (size_t i = 0; i < bases.size(); ++i) {
    jac[i * per] = Jac::from_affine(bases[i]);
    for (size_t k = 1; k < per; ++k) jac[i * per + k] = curve::add_mixed(jac[i * per + k - 1], bases[i]);
  }
  std::vector<curve::Affine<Cfg>> table(jac.size());
  curve::batch_to_affine(jac.data(), table.data(), jac.size());
  return table;
}

// sum_i scalars[i]·bases[i] by Straus's method: one shared chain of
// doublings, signed windows of `bits` bits, and `table` (MultiplesTable of
// the bases with the same `bits`). 8-bit windows halve the additions of
// 4-bit ones, but their tables (128 points per base) only pay off when
// computed once per key.
template <class Cfg>
curve::Jacobian<Cfg> StrausMsm(std::span<const curve::Affine<Cfg>> table, int bits, std::span<const BigInt> scalars) {
  using Jac = curve::Jacobian<Cfg>;
  const int windows = (256 + bits - 1) / bits;
  const size_t per = size_t{1} << (bits - 1);
  const size_t n = scalars.size();
  std::vector<int32_t> digits(n * windows);
  for (size_t i = 0; i < n; ++i) cpu::msm_detail::SignedDigits(scalars[i].data(), bits, windows, &digits[i * windows], 1);
  Jac acc = Jac::infinity();
  for (int w = windows - 1; w >= 0; --w) {
    if (!acc.is_infinity()) {
      for (int b = 0; b < bits; ++b) acc = curve::dbl(acc);
    }
    for (size_t i = 0; i < n; ++i) {
      const int32_t d = digits[i * windows + w];
      if (d > 0) acc = curve::add_mixed(acc, table[i * per + d - 1]);
      if (d < 0) acc = curve::add_mixed(acc, curve::neg(table[i * per + (-d) - 1]));
    }
  }
  return acc;
}

constexpr int kOneShotWindowBits = 4;   // tables built per verification
constexpr int kPreparedWindowBits = 8;  // tables built once per PreparedVerifier

// A checked key in curve types, with its pairing data precomputed.
template <class C>
struct TypedKey {
  pairing::G1Affine<C> alpha;
  pairing::G2Affine<C> beta, gamma, delta;
  std::vector<pairing::G1Affine<C>> ic;
  pairing::G2Prepared<C> gamma_prepared, delta_prepared;
  pairing::Gt<C> alpha_beta_miller;  // Miller loop of (alpha, beta), before the final exponentiation
  std::vector<pairing::G1Affine<C>> ic_table;  // multiples of IC[1..], kPreparedWindowBits; empty: one-shot

  // Returns "" or what is wrong with the key. `prepared`: also build the
  // 8-bit MSM tables of IC (worth it when the key verifies many proofs).
  std::string Load(const VerificationKey& vk, bool prepared) {
    if (vk.ic.size() != size_t{vk.n_public} + 1) {
      return "verification key: IC has " + std::to_string(vk.ic.size()) + " points, nPublic + 1 = " +
             std::to_string(size_t{vk.n_public} + 1) + " expected";
    }
    std::string err = ToG1<C>(vk.alpha1, alpha, "verification key: vk_alpha_1");
    if (err.empty()) err = ToG2<C>(vk.beta2, beta, "verification key: vk_beta_2");
    if (err.empty()) err = ToG2<C>(vk.gamma2, gamma, "verification key: vk_gamma_2");
    if (err.empty()) err = ToG2<C>(vk.delta2, delta, "verification key: vk_delta_2");
    if (!err.empty()) return err;
    // A Groth16 key never has these at infinity; one that does makes its
    // pairing equation degenerate (e.g. delta = O drops C from it).
    const char* at_infinity = alpha.is_infinity() ? "vk_alpha_1"
                              : beta.is_infinity() ? "vk_beta_2"
                              : gamma.is_infinity() ? "vk_gamma_2"
                              : delta.is_infinity() ? "vk_delta_2"
                                                    : nullptr;
    if (at_infinity) return std::string("verification key: ") + at_infinity + " is the point at infinity";
    ic.resize(vk.ic.size());
    for (size_t i = 0; i < vk.ic.size(); ++i) {
      err = ToG1<C>(vk.ic[i], ic[i], "verification key: IC[" + std::to_string(i) + "]");
      if (!err.empty()) return err;
    }
    gamma_prepared = pairing::G2Prepared<C>(gamma);
    delta_prepared = pairing::G2Prepared<C>(delta);
    const pairing::G1G2Pair<C> ab{alpha, beta};
    alpha_beta_miller = pairing::MillerLoop<C>(std::span<const pairing::G1G2Pair<C>>(&ab, 1));
    if (prepared) {
      ic_table = MultiplesTable<typename C::G1>(std::span<const pairing::G1Affine<C>>(ic).subspan(1), kPreparedWindowBits);
    }
    return "";
  }

  VerifyResult Verify(const VerificationKey& vk, std::span<const BigInt> signals, const Proof& proof) const {
    using Fr = typename C::Fr;
    VerifyResult res;
    auto fail = [&res](VerifyStatus s, std::string why) {
      res.status = s;
      res.reason = std::move(why);
      return res;
    };
    if (signals.size() != vk.n_public) {
      return fail(VerifyStatus::kBadPublicSignals, "wrong number of public signals: " + std::to_string(signals.size()) +
                                                       ", the verification key expects " +
                                                       std::to_string(vk.n_public));
    }
    for (size_t i = 0; i < signals.size(); ++i) {
      Fr unused;
      if (!ToField(signals[i], unused)) {
        return fail(VerifyStatus::kBadPublicSignals,
                    "public signal " + std::to_string(i) + " is not below the scalar field modulus r");
      }
    }
    if (proof.curve && *proof.curve != vk.curve) {
      return fail(VerifyStatus::kCurveMismatch, std::string("curve mismatch: the proof is for ") +
                                                    io::CurveName(*proof.curve) +
                                                    ", the verification key for " + io::CurveName(vk.curve));
    }
    pairing::G1Affine<C> a, c;
    pairing::G2Affine<C> b;
    std::string err = ToG1<C>(proof.a, a, "proof: pi_a");
    if (err.empty()) err = ToG2<C>(proof.b, b, "proof: pi_b");
    if (err.empty()) err = ToG1<C>(proof.c, c, "proof: pi_c");
    if (!err.empty()) return fail(VerifyStatus::kBadProofPoint, err);

    // vk_x = IC[0] + sum s_i IC[i+1]
    const std::span<const pairing::G1Affine<C>> ic_rest = std::span<const pairing::G1Affine<C>>(ic).subspan(1);
    auto vk_x_jac = ic_table.empty()
                        ? StrausMsm<typename C::G1>(MultiplesTable<typename C::G1>(ic_rest, kOneShotWindowBits),
                                                    kOneShotWindowBits, signals)
                        : StrausMsm<typename C::G1>(ic_table, kPreparedWindowBits, signals);
    vk_x_jac = curve::add_mixed(vk_x_jac, ic[0]);
    const pairing::G1Affine<C> vk_x = curve::to_affine(vk_x_jac);

    // e(-A, B) · e(vk_x, gamma) · e(C, delta) · e(alpha, beta) == 1
    const pairing::G2Prepared<C> b_prepared(b);
    const pairing::PreparedPair<C> pairs[3] = {
        {curve::neg(a), &b_prepared}, {vk_x, &gamma_prepared}, {c, &delta_prepared}};
    const pairing::Gt<C> f = pairing::MillerLoop<C>(std::span<const pairing::PreparedPair<C>>(pairs, 3));
    if (!pairing::FinalExponentiation<C>(f * alpha_beta_miller).is_one()) {
      return fail(VerifyStatus::kInvalidProof, "invalid proof: the pairing equation does not hold");
    }
    return res;
  }
};

using AnyTypedKey = std::variant<TypedKey<curve::Bn254>, TypedKey<curve::Bls12_381>>;

// Loads vk into the variant; returns "" or what is wrong.
std::string LoadTyped(const VerificationKey& vk, AnyTypedKey& out, bool prepared) {
  if (vk.curve == io::Curve::kBn254) {
    return out.emplace<TypedKey<curve::Bn254>>().Load(vk, prepared);
  }
  return out.emplace<TypedKey<curve::Bls12_381>>().Load(vk, prepared);
}

// Copies the N Montgomery coordinates of a .zkey point at p into limbs,
// checking each is below q; returns true when all are zero (snarkjs's
// encoding of the point at infinity).
template <class Fq, int N>
bool ReadZkeyCoordinates(const uint8_t* p, uint64_t (&limbs)[N][Fq::kLimbs]) {
  std::memcpy(limbs, p, N * Fq::kBytes);
  bool zero = true;
  for (int k = 0; k < N; ++k) {
    if (!Fq::is_below_modulus(limbs[k])) {
      throw Error(ErrorCode::kBadFormat, "zkey point coordinate is not below the base field modulus q");
    }
    for (int i = 0; i < Fq::kLimbs; ++i) zero = zero && limbs[k][i] == 0;
  }
  return zero;
}

template <class C>
G1Point G1FromZkey(const uint8_t* p) {
  using Fq = typename C::Fq;
  G1Point out;
  uint64_t limbs[2][Fq::kLimbs];
  if (ReadZkeyCoordinates<Fq>(p, limbs)) {
    out.infinity = true;
    return out;
  }
  out.x = FromField(Fq::from_mont(limbs[0]));
  out.y = FromField(Fq::from_mont(limbs[1]));
  return out;
}

template <class C>
G2Point G2FromZkey(const uint8_t* p) {
  using Fq = typename C::Fq;
  G2Point out;
  uint64_t limbs[4][Fq::kLimbs];
  if (ReadZkeyCoordinates<Fq>(p, limbs)) {
    out.infinity = true;
    return out;
  }
  out.x0 = FromField(Fq::from_mont(limbs[0]));
  out.x1 = FromField(Fq::from_mont(limbs[1]));
  out.y0 = FromField(Fq::from_mont(limbs[2]));
  out.y1 = FromField(Fq::from_mont(limbs[3]));
  return out;
}

template <class C>
VerificationKey FromZkeyTyped(const io::ZkeyFile& z) {
  VerificationKey vk;
  vk.curve = z.curve();
  vk.n_public = z.n_public();
  vk.alpha1 = G1FromZkey<C>(z.alpha1());
  vk.beta2 = G2FromZkey<C>(z.beta2());
  vk.gamma2 = G2FromZkey<C>(z.gamma2());
  vk.delta2 = G2FromZkey<C>(z.delta2());
  const io::PointArray ic = z.ic();
  vk.ic.reserve(ic.count);
  for (uint64_t i = 0; i < ic.count; ++i) vk.ic.push_back(G1FromZkey<C>(ic.data + i * z.g1_size()));
  return vk;
}

template <class C>
std::array<BigInt, 12> AlphaBetaTyped(const VerificationKey& vk) {
  pairing::G1Affine<C> alpha;
  pairing::G2Affine<C> beta;
  std::string err = ToG1<C>(vk.alpha1, alpha, "vk_alpha_1");
  if (err.empty()) err = ToG2<C>(vk.beta2, beta, "vk_beta_2");
  if (!err.empty()) throw Error(ErrorCode::kBadFormat, "verification key: " + err);
  const auto e = pairing::Pairing<C>(alpha, beta);
  const typename C::Fq2* c[6] = {&e.c0.c0, &e.c0.c1, &e.c0.c2, &e.c1.c0, &e.c1.c1, &e.c1.c2};
  std::array<BigInt, 12> out;
  for (int i = 0; i < 6; ++i) {
    out[2 * i] = FromField(c[i]->c0);
    out[2 * i + 1] = FromField(c[i]->c1);
  }
  return out;
}

}  // namespace

VerificationKey VerificationKeyFromZkey(const io::ZkeyFile& zkey) {
  if (zkey.curve() == io::Curve::kBn254) return FromZkeyTyped<curve::Bn254>(zkey);
  return FromZkeyTyped<curve::Bls12_381>(zkey);
}

std::array<BigInt, 12> AlphaBeta(const VerificationKey& vk) {
  if (vk.curve == io::Curve::kBn254) return AlphaBetaTyped<curve::Bn254>(vk);
  return AlphaBetaTyped<curve::Bls12_381>(vk);
}

}  // namespace zkfleet::groth16

namespace zkfleet::engine {

const char* VerifyStatusName(VerifyStatus status) {
  switch (status) {
    case VerifyStatus::kValid: return "valid";
    case VerifyStatus::kInvalidProof: return "invalid proof";
    case VerifyStatus::kBadProofPoint: return "bad proof point";
    case VerifyStatus::kBadPublicSignals: return "bad public signals";
    case VerifyStatus::kBadKey: return "bad verification key";
    case VerifyStatus::kCurveMismatch: return "curve mismatch";
  }
  return "unknown";
}

VerifyResult Verify(const VerificationKey& vk, std::span<const BigInt> public_signals, const ProofPoints& proof) {
  groth16::AnyTypedKey typed;
  std::string err = groth16::LoadTyped(vk, typed, /*prepared=*/false);
  if (!err.empty()) return VerifyResult{VerifyStatus::kBadKey, err};
  return std::visit([&](const auto& k) { return k.Verify(vk, public_signals, proof); }, typed);
}

struct PreparedVerifier::Impl {
  VerificationKey vk;
  groth16::AnyTypedKey typed;
};

PreparedVerifier::PreparedVerifier(const VerificationKey& vk) : impl_(std::make_unique<Impl>()) {
  impl_->vk = vk;
  std::string err = groth16::LoadTyped(vk, impl_->typed, /*prepared=*/true);
  if (!err.empty()) throw Error(ErrorCode::kBadFormat, err);
}
PreparedVerifier::~PreparedVerifier() = default;
PreparedVerifier::PreparedVerifier(PreparedVerifier&&) noexcept = default;
PreparedVerifier& PreparedVerifier::operator=(PreparedVerifier&&) noexcept = default;

const VerificationKey& PreparedVerifier::key() const { return impl_->vk; }

VerifyResult PreparedVerifier::Verify(std::span<const BigInt> public_signals, const ProofPoints& proof) const {
  return std::visit([&](const auto& k) { return k.Verify(impl_->vk, public_signals, proof); }, impl_->typed);
}

}  // namespace zkfleet::engine
