#include "zkfleet/groth16/cpu_prover.hpp"

#include <chrono>
#include <cstring>
#include <future>
#include <vector>

#include "zkfleet/common/seconds_since.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/msm/cpu_msm.hpp"
#include "zkfleet/ntt/cpu_ntt.hpp"
#include "zkfleet/runtime/thread_pool.hpp"
#include "zkfleet/curve/bls12_381.hpp"
#include "zkfleet/curve/bn254.hpp"
#include "zkfleet/groth16/assembly.hpp"
#include "zkfleet/groth16/rows.hpp"

namespace zkfleet::cpu {
namespace {

using Clock = std::chrono::steady_clock;

// Points are stored in the zkey exactly like our Affine structs (x then y,
// each coordinate little-endian Montgomery limbs; G2 as c0, c1), so loading
// is a copy into aligned memory.
template <class P>
std::vector<P> CopyPoints(const io::PointArray& arr) {
  std::vector<P> out(arr.count);
  if (arr.count) std::memcpy(static_cast<void*>(out.data()), arr.data, arr.count * sizeof(P));
  return out;
}

template <class P>
P CopyPoint(const uint8_t* bytes) {
  P p;
  std::memcpy(static_cast<void*>(&p), bytes, sizeof(P));
  return p;
}

template <class C>
class CpuGroth16Key final : public groth16::Key {
  using Fr = typename C::Fr;
  using G1 = typename C::G1;
  using G2 = typename C::G2;
  using A1 = curve::Affine<G1>;
  using A2 = curve::Affine<G2>;
  using J1 = curve::Jacobian<G1>;
  using J2 = curve::Jacobian<G2>;

  // One term of a row of A or B: coef is stored as coef*R^2 (Montgomery of
  // Montgomery), so montmul with a raw witness value gives Montgomery(coef*w).
  struct Term {
    Fr coef;
    uint32_t signal;
  };
  // Terms of one matrix grouped by row (compressed sparse rows).
  struct Rows {
    std::vector<uint32_t> start;  // size n + 1
    std::vector<Term> terms;
  };

 public:
  CpuGroth16Key(const io::ZkeyFile& zkey, const groth16::KeyOptions& options)
      : pool_(options.threads), domain_(Log2(zkey.domain_size()), &pool_) {
    if (sizeof(A1) != zkey.g1_size() || sizeof(A2) != zkey.g2_size()) {
      throw Error(ErrorCode::kInternal, zkey.path() + ": point size does not match the curve");
    }
    info_.curve = zkey.curve();
    info_.n_vars = zkey.n_vars();
    info_.n_public = zkey.n_public();
    info_.domain_size = zkey.domain_size();
    info_.n_coeffs = zkey.n_coeffs();
    info_.path = zkey.path();
    r_.assign(zkey.r(), zkey.r() + zkey.n8r());

    header_.alpha1 = CopyPoint<A1>(zkey.alpha1());
    header_.beta1 = CopyPoint<A1>(zkey.beta1());
    header_.delta1 = CopyPoint<A1>(zkey.delta1());
    header_.beta2 = CopyPoint<A2>(zkey.beta2());
    header_.delta2 = CopyPoint<A2>(zkey.delta2());
    a_ = CopyPoints<A1>(zkey.a());
    b1_ = CopyPoints<A1>(zkey.b1());
    b2_ = CopyPoints<A2>(zkey.b2());
    c_ = CopyPoints<A1>(zkey.c());
    h_ = CopyPoints<A1>(zkey.h());
    BuildRows(zkey);

    info_.resident_bytes = (a_.size() + b1_.size() + c_.size() + h_.size()) * sizeof(A1) +
                           b2_.size() * sizeof(A2) +
                           (rows_[0].terms.size() + rows_[1].terms.size()) * sizeof(Term) +
                           (rows_[0].start.size() + rows_[1].start.size()) * sizeof(uint32_t) +
                           domain_.resident_bytes();
  }

  const groth16::CircuitInfo& info() const override { return info_; }

  groth16::RawProof ProveUnchecked(const io::Witness& witness, const groth16::ProveOptions& options,
                                  bool inject_fault) const override {
    const auto t_start = Clock::now();
    io::CheckWitnessMatches(witness, r_, info_.n_vars, info_.path);
    if (witness.n8() != 32) {
      throw Error(ErrorCode::kMismatch, witness.origin() + ": witness elements are " +
                                            std::to_string(witness.n8()) + " bytes, expected 32");
    }
    const uint8_t* w = witness.values();
    const size_t n = info_.domain_size;
    groth16::RawProof proof;

    // 1. A and B evaluated on the domain, C = A.B (spec §8.1).
    auto t0 = Clock::now();
    std::vector<Fr> a(n), b(n), c(n);
    EvaluateRows(rows_[0], w, a.data());
    EvaluateRows(rows_[1], w, b.data());
    pool_.ParallelFor(n, [&](size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i) c[i] = a[i] * b[i];
    });
    proof.timings.build_abc_s = SecondsSince(t0);

    // 2. Move to the odd coset and form the H scalars p = a'b' - c' (§8.2-8.3).
    t0 = Clock::now();
    domain_.ToOddCoset(a.data(), pool_);
    domain_.ToOddCoset(b.data(), pool_);
    domain_.ToOddCoset(c.data(), pool_);
    std::vector<uint64_t> h_scalars(n * 4);
    pool_.ParallelFor(n, [&](size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i) (a[i] * b[i] - c[i]).to_canonical(&h_scalars[i * 4]);
    });
    proof.timings.ntt_s = SecondsSince(t0);

    // 3. The five MSMs (§8.4). Witness bytes are the scalars as they are.
    t0 = Clock::now();
    const size_t nv = info_.n_vars, skip = info_.n_public + 1;
    const J1 pi_a_msm = Msm<G1>(a_.data(), w, 32, nv, pool_);
    const J1 b1_msm = Msm<G1>(b1_.data(), w, 32, nv, pool_);
    const J2 pi_b_msm = Msm<G2>(b2_.data(), w, 32, nv, pool_);
    const J1 c_msm = Msm<G1>(c_.data(), w + skip * 32, 32, nv - skip, pool_);
    const J1 h_msm = Msm<G1>(h_.data(), reinterpret_cast<const uint8_t*>(h_scalars.data()), 32, n, pool_);
    proof.timings.msm_s = SecondsSince(t0);

    // 4. Blinding and assembly (§8.5), shared with the CUDA backend.
    uint64_t r[4], s[4];
    groth16::DrawBlinding<Fr>(options, r, s);
    groth16::AssembleProof<C>(header_, {pi_a_msm, b1_msm, c_msm, h_msm, pi_b_msm}, r, s, proof.points, inject_fault);
    proof.timings.total_s = SecondsSince(t_start);
    return proof;
  }

 private:
  static int Log2(uint32_t n) {
    int k = 0;
    while ((uint32_t{1} << k) < n) ++k;
    return k;
  }

  // Both matrices at once, one thread each (groth16/rows.hpp).
  void BuildRows(const io::ZkeyFile& zkey) {
    auto build = [&zkey](uint32_t matrix) {
      Rows rows;
      rows.start = groth16::RowStarts(zkey, matrix);
      rows.terms.resize(rows.start.back());
      groth16::PlaceByRow(zkey, matrix, rows.start, [&rows](uint32_t slot, const io::CoeffRecord& rec) {
        uint64_t limbs[4];
        std::memcpy(limbs, rec.value, 32);
        rows.terms[slot] = Term{Fr::from_mont(limbs), rec.signal};
      });
      return rows;
    };
    auto b_rows = std::async(std::launch::async, build, 1u);
    rows_[0] = build(0);
    rows_[1] = b_rows.get();
  }

  void EvaluateRows(const Rows& rows, const uint8_t* w, Fr* out) const {
    const size_t n = info_.domain_size;
    pool_.ParallelFor(n, [&](size_t lo, size_t hi) {
      for (size_t row = lo; row < hi; ++row) {
        Fr acc = Fr::zero();
        for (uint32_t t = rows.start[row]; t < rows.start[row + 1]; ++t) {
          const Term& term = rows.terms[t];
          uint64_t raw[4];
          std::memcpy(raw, w + size_t{term.signal} * 32, 32);
          acc += Fr::mont_mul_raw(term.coef, raw);
        }
        out[row] = acc;
      }
    });
  }

  groth16::CircuitInfo info_;
  mutable ThreadPool pool_;
  NttDomain<Fr> domain_;
  std::vector<uint8_t> r_;
  groth16::Groth16HeaderPoints<C> header_;
  std::vector<A1> a_, b1_, c_, h_;
  std::vector<A2> b2_;
  Rows rows_[2];  // 0 = A, 1 = B
};

}  // namespace

std::unique_ptr<groth16::Key> LoadCpuProvingKey(const io::ZkeyFile& zkey,
                                                       const groth16::KeyOptions& options) {
  switch (zkey.curve()) {
    case io::Curve::kBn254:
      return std::make_unique<CpuGroth16Key<curve::Bn254>>(zkey, options);
    case io::Curve::kBls12_381:
      return std::make_unique<CpuGroth16Key<curve::Bls12_381>>(zkey, options);
  }
  throw Error(ErrorCode::kUnsupported, zkey.path() + ": unsupported curve");
}

}  // namespace zkfleet::cpu
