#include "zkfleet/devtools/seeded_parameters.hpp"

#include <algorithm>

#include "zkfleet/bellman/domain.hpp"
#include "zkfleet/bellman/seeded_scalars.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/curve/point.hpp"
#include "zkfleet/ff/batch_inverse.hpp"

#ifdef ZKFLEET_HAVE_CUDA
#include "zkfleet/bellman/fixed_base_cuda.hpp"
#endif

namespace zkfleet::devtools {
namespace {

using bellman::ConstraintSystem;
using bellman::Densities;
using bellman::DensitiesOf;
using bellman::DomainLog;
using bellman::DomainRoot;
using bellman::Fr;
using bellman::G1Affine;
using bellman::G2Affine;
using bellman::LinearCombinations;
using bellman::Parameters;
using bellman::PointVector;
using bellman::SeededScalars;
using bellman::VerifyingKey;
using cpu::ThreadPool;
#ifdef ZKFLEET_HAVE_CUDA
using bellman::CudaFixedBase;
#endif

// k·P for many scalars k and one base P: 32 windows of 8 bits, a table of
// every digit's multiple in each window (8160 points), so one product costs
// 32 mixed additions. Results come out affine (one inversion per chunk).
template <class Cfg>
class FixedBase {
 public:
  using A = curve::Affine<Cfg>;
  using J = curve::Jacobian<Cfg>;

  explicit FixedBase(const A& base) : table_(32 * 255) {
    std::vector<J> jac(table_.size());
    J window_base = J::from_affine(base);
    for (int w = 0; w < 32; ++w) {
      J acc = window_base;
      for (int d = 0; d < 255; ++d) {
        jac[w * 255 + d] = acc;
        acc = curve::add(acc, window_base);
      }
      window_base = acc;  // 256 · the previous window's base
    }
    curve::batch_to_affine(jac.data(), table_.data(), table_.size());
  }

  void MulMany(const std::vector<Fr>& scalars, A* out, ThreadPool& pool) const {
    pool.ParallelFor(scalars.size(), [&](size_t lo, size_t hi) {
      std::vector<J> jac(hi - lo);
      for (size_t i = lo; i < hi; ++i) {
        uint64_t k[4];
        scalars[i].to_canonical(k);
        J acc = J::infinity();
        for (int w = 0; w < 32; ++w) {
          const unsigned d = (k[w / 8] >> (8 * (w % 8))) & 0xff;
          if (d) acc = curve::add_mixed(acc, table_[w * 255 + d - 1]);
        }
        jac[i - lo] = acc;
      }
      curve::batch_to_affine(jac.data(), out + lo, hi - lo);
    });
  }

 private:
  std::vector<A> table_;
};

template <class Cfg>
PointVector<curve::Affine<Cfg>> MulMany(const FixedBase<Cfg>& base, const std::vector<Fr>& scalars, ThreadPool& pool) {
  PointVector<curve::Affine<Cfg>> out(scalars.size());
  base.MulMany(scalars, out.data(), pool);
  return out;
}

template <class Cfg>
curve::Affine<Cfg> MulOne(const Fr& k) {
  uint64_t limbs[4];
  k.to_canonical(limbs);
  return curve::to_affine(curve::scalar_mul(curve::Jacobian<Cfg>::from_affine(Cfg::generator()), limbs, 4));
}

// Adds row `row`'s terms of `lcs`, each times `weight[row]`, into acc[var]:
// in blocks of rows, the products in parallel, then their sums in order (a
// variable's terms come from any row). Field sums are exact, so the order
// does not change the result.
void Accumulate(const LinearCombinations& lcs, const std::vector<Fr>& weight, std::vector<Fr>& acc, ThreadPool& pool) {
  constexpr uint64_t kBlockTerms = uint64_t{1} << 22;
  std::vector<Fr> products;
  for (size_t row = 0; row < lcs.rows();) {
    const uint64_t t0 = lcs.start[row];
    // The last row boundary within kBlockTerms terms of t0 (at least one row).
    size_t end = static_cast<size_t>(
        std::upper_bound(lcs.start.begin() + row + 1, lcs.start.end(), t0 + kBlockTerms) - lcs.start.begin() - 1);
    if (end <= row) end = row + 1;
    const uint64_t t1 = lcs.start[end];
    if (products.size() < t1 - t0) products.resize(t1 - t0);
    pool.ParallelFor(end - row, [&](size_t lo, size_t hi) {
      for (size_t r = row + lo; r < row + hi; ++r) {
        for (uint64_t t = lcs.start[r]; t < lcs.start[r + 1]; ++t) products[t - t0] = lcs.terms[t].coef * weight[r];
      }
    });
    for (uint64_t t = t0; t < t1; ++t) acc[lcs.terms[t].var] += products[t - t0];
    row = end;
  }
}

// L_i(tau) = w^i·(tau^n - 1) / (n·(tau - w^i)) for i < n = 2^log_n: in
// parallel chunks, each with its own batch inversion (an inverse is unique,
// so the values are the sequential computation's).
std::vector<Fr> LagrangeAtTau(int log_n, const Fr& tau, const Fr& z_tau, ThreadPool& pool) {
  const size_t n = size_t{1} << log_n;
  const Fr w = DomainRoot(log_n);
  const Fr z_over_n = z_tau * Fr::from_uint(n).inverse();
  std::vector<Fr> lagrange(n);
  pool.ParallelFor(n, [&](size_t lo, size_t hi) {
    uint64_t e[1] = {lo};
    const Fr w_lo = w.pow(e, 1);
    Fr p = w_lo;
    for (size_t i = lo; i < hi; ++i, p = p * w) lagrange[i] = tau - p;
    std::vector<Fr> scratch(hi - lo);
    ff::BatchInverse(lagrange.data() + lo, scratch.data(), hi - lo);
    p = w_lo;
    for (size_t i = lo; i < hi; ++i, p = p * w) lagrange[i] = lagrange[i] * p * z_over_n;
  });
  return lagrange;
}

// Keeps the values whose `dense` bit is set (dense[i] for values[i]), in
// order, in place; returns how many.
size_t KeepDense(std::vector<Fr>& values, const std::vector<bool>& dense) {
  size_t kept = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    if (dense[i]) values[kept++] = values[i];
  }
  values.resize(kept);
  return kept;
}

// The verifying key's fixed points (vk.ic is a section).
void SetVerifyingKeyPoints(const ParameterScalars& s, VerifyingKey& vk) {
  vk.alpha_g1 = MulOne<curve::Bls12_381G1>(s.alpha);
  vk.beta_g1 = MulOne<curve::Bls12_381G1>(s.beta);
  vk.beta_g2 = MulOne<curve::Bls12_381G2>(s.beta);
  vk.gamma_g2 = MulOne<curve::Bls12_381G2>(s.gamma);
  vk.delta_g1 = MulOne<curve::Bls12_381G1>(s.delta);
  vk.delta_g2 = MulOne<curve::Bls12_381G2>(s.delta);
}

void FreeVector(std::vector<Fr>& v) { std::vector<Fr>().swap(v); }

}  // namespace

void ParameterScalars::HScalars(size_t lo, size_t hi, Fr* out) const {
  uint64_t e[1] = {lo};
  Fr t = tau.pow(e, 1) * h_base;
  for (size_t i = lo; i < hi; ++i, t = t * tau) out[i - lo] = t;
}

ParameterScalars ComputeParameterScalars(const ConstraintSystem& cs, uint64_t seed, ThreadPool& pool) {
  ParameterScalars s;
  SeededScalars rng(seed);
  s.tau = rng.Next();
  s.alpha = rng.Next();
  s.beta = rng.Next();
  s.gamma = rng.Next();
  s.delta = rng.Next();
  const Fr gamma_inv = s.gamma.inverse(), delta_inv = s.delta.inverse();
  const int log_n = DomainLog(cs);
  const size_t n = size_t{1} << log_n, m = cs.n_constraints(), n_in = cs.n_inputs, n_vars = cs.n_vars();
  uint64_t n_limb[1] = {n};
  const Fr z_tau = s.tau.pow(n_limb, 1) - Fr::one();
  s.h_base = z_tau * delta_inv;
  s.h_count = n - 1;

  std::vector<Fr> lagrange = LagrangeAtTau(log_n, s.tau, z_tau, pool);
  const Densities d = DensitiesOf(cs);

  // k_j = beta·u_j + alpha·v_j + w_j, built in `k` one polynomial at a time
  // (u_j, v_j, w_j: variable j's A, B, C polynomials at tau), so that at
  // most Lagrange, k, one of u / v and b are held at once.
  std::vector<Fr> k(n_vars, Fr::zero());
  Accumulate(cs.c, lagrange, k, pool);
  {
    std::vector<Fr> v(n_vars, Fr::zero());
    Accumulate(cs.b, lagrange, v, pool);
    pool.ParallelFor(n_vars, [&](size_t lo, size_t hi) {
      for (size_t j = lo; j < hi; ++j) k[j] += s.alpha * v[j];
    });
    std::vector<bool> b_dense(d.b_input);
    b_dense.insert(b_dense.end(), d.b_aux.begin(), d.b_aux.end());
    KeepDense(v, b_dense);
    v.shrink_to_fit();
    s.b = std::move(v);
  }
  std::vector<Fr> u(n_vars, Fr::zero());
  Accumulate(cs.a, lagrange, u, pool);
  for (uint32_t i = 0; i < n_in; ++i) u[i] += lagrange[m + i];  // the input constraints
  FreeVector(lagrange);
  pool.ParallelFor(n_vars, [&](size_t lo, size_t hi) {
    for (size_t j = lo; j < hi; ++j) {
      k[j] += s.beta * u[j];
      k[j] = k[j] * (j < n_in ? gamma_inv : delta_inv);
    }
  });
  s.ic.assign(k.begin(), k.begin() + n_in);
  k.erase(k.begin(), k.begin() + n_in);  // in place: aux only
  s.l = std::move(k);
  std::vector<bool> a_dense(n_in, true);  // every input has an A point
  a_dense.insert(a_dense.end(), d.a_aux.begin(), d.a_aux.end());
  KeepDense(u, a_dense);
  s.a = std::move(u);
  return s;
}

Parameters ParametersFromScalars(ParameterScalars s, ThreadPool& pool) {
  Parameters params;
  SetVerifyingKeyPoints(s, params.vk);
  const FixedBase<curve::Bls12_381G1> g1(curve::Bls12_381G1::generator());
  params.vk.ic.resize(s.ic.size());
  g1.MulMany(s.ic, params.vk.ic.data(), pool);
  {
    std::vector<Fr> h_s(s.h_count);
    pool.ParallelFor(s.h_count, [&](size_t lo, size_t hi) { s.HScalars(lo, hi, h_s.data() + lo); });
    params.h = MulMany(g1, h_s, pool);
  }
  params.l = MulMany(g1, s.l, pool);
  FreeVector(s.l);
  params.a = MulMany(g1, s.a, pool);
  FreeVector(s.a);
  params.b_g1 = MulMany(g1, s.b, pool);
  params.b_g2 = MulGeneratorG2(s.b, pool);
  return params;
}

Parameters SynthesizeParameters(const ConstraintSystem& cs, uint64_t seed, ThreadPool& pool) {
  return ParametersFromScalars(ComputeParameterScalars(cs, seed, pool), pool);
}

PointVector<G1Affine> MulGeneratorG1(const std::vector<Fr>& scalars, ThreadPool& pool) {
  return MulMany(FixedBase<curve::Bls12_381G1>(curve::Bls12_381G1::generator()), scalars, pool);
}

PointVector<G2Affine> MulGeneratorG2(const std::vector<Fr>& scalars, ThreadPool& pool) {
  return MulMany(FixedBase<curve::Bls12_381G2>(curve::Bls12_381G2::generator()), scalars, pool);
}

#ifdef ZKFLEET_HAVE_CUDA
Parameters ParametersFromScalarsCuda(ParameterScalars s, ThreadPool& pool, int device, size_t chunk_points) {
  Parameters params;
  SetVerifyingKeyPoints(s, params.vk);
  // A PointVector's resize only maps its memory (no zeros written): the
  // pages fault in as each section's points are written.
  {
    CudaFixedBase<curve::Bls12_381G1> g1(curve::Bls12_381G1::generator(), device, chunk_points);
    params.vk.ic.resize(s.ic.size());
    g1.Mul(s.ic, params.vk.ic.data(), pool);
    FreeVector(s.ic);
    params.h.resize(s.h_count);
    g1.Mul(s.h_count, [&s](size_t lo, size_t hi, Fr* out) { s.HScalars(lo, hi, out); }, params.h.data(), pool);
    params.l.resize(s.l.size());
    g1.Mul(s.l, params.l.data(), pool);
    FreeVector(s.l);
    params.a.resize(s.a.size());
    g1.Mul(s.a, params.a.data(), pool);
    FreeVector(s.a);
    params.b_g1.resize(s.b.size());
    g1.Mul(s.b, params.b_g1.data(), pool);
  }
  CudaFixedBase<curve::Bls12_381G2> g2(curve::Bls12_381G2::generator(), device, chunk_points);
  params.b_g2.resize(s.b.size());
  g2.Mul(s.b, params.b_g2.data(), pool);
  return params;
}
#else
Parameters ParametersFromScalarsCuda(ParameterScalars, ThreadPool&, int, size_t) {
  throw Error(ErrorCode::kUnsupported, "seeded parameters on CUDA: this build has no CUDA backend");
}
#endif

Parameters SynthesizeParametersCuda(const ConstraintSystem& cs, uint64_t seed, ThreadPool& pool, int device) {
  return ParametersFromScalarsCuda(ComputeParameterScalars(cs, seed, pool), pool, device);
}

}  // namespace zkfleet::devtools
