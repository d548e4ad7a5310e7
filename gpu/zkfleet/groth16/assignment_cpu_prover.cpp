// The CPU backend for bellperson-style assignments (engine/bellman.hpp has
// the algorithm): the reference the CUDA backend is compared with bit for bit.
#include <bit>
#include <chrono>
#include <cstring>
#include <vector>

#include "zkfleet/common/seconds_since.hpp"
#include "zkfleet/bellman/domain.hpp"
#include "zkfleet/curve/bls12_381.hpp"
#include "zkfleet/groth16/assembly.hpp"
#include "zkfleet/groth16/assignment_key.hpp"
#include "zkfleet/msm/cpu_msm.hpp"
#include "zkfleet/ntt/cpu_ntt.hpp"

namespace zkfleet::groth16 {
namespace {

using Clock = std::chrono::steady_clock;
using C = curve::Bls12_381;
using Fr = C::Fr;
using G1 = C::G1;
using G2 = C::G2;

// a[j] *= shift^j, in parallel chunks (each chunk starts from shift^lo).
void ScaleByPowers(Fr* a, size_t n, const Fr& shift, ThreadPool& pool) {
  pool.ParallelFor(n, [&](size_t lo, size_t hi) {
    uint64_t e[1] = {lo};
    Fr p = shift.pow(e, 1);
    for (size_t j = lo; j < hi; ++j, p = p * shift) a[j] = a[j] * p;
  });
}

class CpuAssignmentKey final : public AssignmentKey {
 public:
  CpuAssignmentKey(bellman::Parameters params, const KeyOptions& options)
      : params_(std::move(params)),
        pool_(options.threads),
        info_(ShapeOf(params_)),
        domain_(std::countr_zero(info_.domain_size), bellman::DomainRoot(std::countr_zero(info_.domain_size)),
                /*odd_coset=*/false, &pool_) {
    info_.backend = engine::Backend::kCpu;
    info_.resident_bytes = (params_.h.size() + params_.l.size() + params_.a.size() + params_.b_g1.size() +
                            params_.vk.ic.size()) * sizeof(curve::Affine<G1>) +
                           params_.b_g2.size() * sizeof(curve::Affine<G2>) + domain_.resident_bytes();
    header_.alpha1 = params_.vk.alpha_g1;
    header_.beta1 = params_.vk.beta_g1;
    header_.delta1 = params_.vk.delta_g1;
    header_.beta2 = params_.vk.beta_g2;
    header_.delta2 = params_.vk.delta_g2;
    const Fr g = Fr::from_uint(bellman::kMultiplicativeGenerator);
    uint64_t n_limb[1] = {info_.domain_size};
    g_ = g;
    g_inv_ = g.inverse();
    z_inv_ = (g.pow(n_limb, 1) - Fr::one()).inverse();
  }

  const engine::BellmanInfo& info() const override { return info_; }

  RawProof ProveUnchecked(const engine::AssignmentView& v, const ProveOptions& options,
                          bool inject_fault) const override {
    const auto t_start = Clock::now();
    CheckAssignmentShape(v, info_);
    RawProof proof;

    auto t0 = Clock::now();
    const std::vector<uint64_t> h = HScalars(v);
    proof.timings.ntt_s = SecondsSince(t0);

    t0 = Clock::now();
    const PackedScalars packed = PackScalars(v, pool_);
    proof.timings.build_abc_s = SecondsSince(t0);

    t0 = Clock::now();
    auto bytes = [](const std::vector<uint64_t>& s) { return reinterpret_cast<const uint8_t*>(s.data()); };
    Groth16MsmResults<C> msm;
    msm.h = cpu::Msm<G1>(params_.h.data(), bytes(h), 32, params_.h.size(), pool_);
    msm.c = cpu::Msm<G1>(params_.l.data(), bytes(packed.l), 32, params_.l.size(), pool_);
    msm.a = cpu::Msm<G1>(params_.a.data(), bytes(packed.a), 32, params_.a.size(), pool_);
    msm.b1 = cpu::Msm<G1>(params_.b_g1.data(), bytes(packed.b), 32, params_.b_g1.size(), pool_);
    msm.b2 = cpu::Msm<G2>(params_.b_g2.data(), bytes(packed.b), 32, params_.b_g2.size(), pool_);
    proof.timings.msm_s = SecondsSince(t0);

    uint64_t r[4], s[4];
    DrawBlinding<Fr>(options, r, s);
    AssembleProof<C>(header_, msm, r, s, proof.points, inject_fault);
    proof.timings.total_s = SecondsSince(t_start);
    return proof;
  }

 private:
  // The coefficients of h = (A·B - C)/Z, canonical, the first n-1 of them.
  std::vector<uint64_t> HScalars(const engine::AssignmentView& v) const {
    const size_t n = info_.domain_size, m = v.a.size();
    std::vector<Fr> a(n, Fr::zero()), b(n, Fr::zero()), c(n, Fr::zero());
    for (auto [src, dst] : {std::pair{v.a, &a}, std::pair{v.b, &b}, std::pair{v.c, &c}}) {
      std::memcpy(static_cast<void*>(dst->data()), src.data(), m * sizeof(Fr));
      domain_.Inverse(dst->data(), pool_);
      ScaleByPowers(dst->data(), n, g_, pool_);
      domain_.Forward(dst->data(), pool_);
    }
    pool_.ParallelFor(n, [&](size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i) a[i] = (a[i] * b[i] - c[i]) * z_inv_;
    });
    domain_.Inverse(a.data(), pool_);
    ScaleByPowers(a.data(), n, g_inv_, pool_);
    std::vector<uint64_t> out((n - 1) * 4);
    pool_.ParallelFor(n - 1, [&](size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i) a[i].to_canonical(&out[i * 4]);
    });
    return out;
  }

  bellman::Parameters params_;
  mutable ThreadPool pool_;
  engine::BellmanInfo info_;
  cpu::NttDomain<Fr> domain_;
  Groth16HeaderPoints<C> header_;
  Fr g_, g_inv_, z_inv_;
};

}  // namespace

std::unique_ptr<AssignmentKey> MakeCpuAssignmentKey(bellman::Parameters params, const KeyOptions& options) {
  return std::make_unique<CpuAssignmentKey>(std::move(params), options);
}

}  // namespace zkfleet::groth16
