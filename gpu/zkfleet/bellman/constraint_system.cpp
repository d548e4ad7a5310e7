#include "zkfleet/bellman/constraint_system.hpp"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <random>

#include "zkfleet/bellman/domain.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/curve/point.hpp"
#include "zkfleet/ff/batch_inverse.hpp"
#include "zkfleet/io/curve_primes.hpp"

#ifdef ZKFLEET_HAVE_CUDA
#include "zkfleet/bellman/fixed_base_cuda.hpp"
#endif

namespace zkfleet::bellman {
namespace {

using J1 = curve::Jacobian<curve::Bls12_381G1>;
using J2 = curve::Jacobian<curve::Bls12_381G2>;

engine::FrMont Mont(const Fr& x) {
  engine::FrMont out;
  std::memcpy(out.data(), &x, sizeof(out));
  return out;
}

void SetBit(std::vector<uint64_t>& words, size_t i) { words[i / 64] |= uint64_t{1} << (i % 64); }

// Uniform scalars from a seeded generator (insecure by design, see the header).
class SeededScalars {
 public:
  explicit SeededScalars(uint64_t seed) : rng_(seed) {}
  Fr Next() {
    for (;;) {
      uint64_t limbs[4];
      for (auto& l : limbs) l = rng_();
      limbs[3] &= (uint64_t{1} << (Fr::kModulusBits - 192)) - 1;
      if (Fr::is_below_modulus(limbs) && (limbs[0] | limbs[1] | limbs[2] | limbs[3])) return Fr::from_canonical(limbs);
    }
  }

 private:
  std::mt19937_64 rng_;
};

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

void MarkDense(const LinearCombinations& lcs, std::vector<bool>& dense) {
  for (const auto& term : lcs.terms) dense[term.var] = true;
}

}  // namespace

size_t AbcSize(const ConstraintSystem& cs) { return cs.n_constraints() + cs.n_inputs; }

int DomainLog(const ConstraintSystem& cs) {
  int k = 1;
  while ((size_t{1} << k) < AbcSize(cs)) ++k;
  if (k > 32) throw Error(ErrorCode::kUnsupported, "constraint system larger than BLS12-381's 2^32 domain");
  return k;
}

ConstraintSystem FromCircom(const io::R1cs& r1cs) {
  const auto& h = r1cs.header;
  if (h.n8 != 32 || io::CurveFromScalarPrime(h.prime) != io::Curve::kBls12_381) {
    throw Error(ErrorCode::kMismatch, "the r1cs is not over BLS12-381's scalar field");
  }
  ConstraintSystem cs;
  cs.n_inputs = 1 + h.n_pub_out + h.n_pub_in;
  cs.n_aux = h.n_wires - cs.n_inputs;
  LinearCombinations* parts[3] = {&cs.a, &cs.b, &cs.c};
  for (uint32_t c = 0; c < h.n_constraints; ++c) {
    for (int p = 0; p < 3; ++p) {
      const io::LinearCombination lc = r1cs.lc(c, p);
      for (size_t t = 0; t < lc.size; ++t) {
        uint64_t limbs[4];
        std::memcpy(limbs, lc.coeffs + t * 32, 32);
        // circom wires keep their order: public ones are exactly the inputs.
        parts[p]->terms.push_back({lc.wires[t], Fr::from_canonical(limbs)});
      }
      parts[p]->EndRow();
    }
  }
  return cs;
}

Densities DensitiesOf(const ConstraintSystem& cs) {
  std::vector<bool> a(cs.n_vars()), b(cs.n_vars());
  MarkDense(cs.a, a);
  MarkDense(cs.b, b);
  Densities d;
  d.a_aux.assign(a.begin() + cs.n_inputs, a.end());
  d.b_input.assign(b.begin(), b.begin() + cs.n_inputs);
  d.b_aux.assign(b.begin() + cs.n_inputs, b.end());
  return d;
}

engine::AssignmentView Assignment::View() const {
  return {a, b, c, input, aux, a_aux_density, b_input_density, b_aux_density};
}

Assignment Synthesize(const ConstraintSystem& cs, const std::vector<Fr>& values, ThreadPool& pool) {
  if (values.size() != cs.n_vars()) {
    throw Error(ErrorCode::kInvalidArgument, "synthesis: " + std::to_string(values.size()) + " values for " +
                                                 std::to_string(cs.n_vars()) + " variables");
  }
  if (!(values[0] == Fr::one())) throw Error(ErrorCode::kInvalidArgument, "synthesis: input 0 must be the constant one");
  const size_t m = cs.n_constraints(), abc = AbcSize(cs);
  Assignment out;
  out.a.resize(abc);
  out.b.resize(abc);
  out.c.resize(abc);
  auto eval = [&](const LinearCombinations& lcs, std::vector<engine::FrMont>& dst) {
    pool.ParallelFor(m, [&](size_t lo, size_t hi) {
      for (size_t row = lo; row < hi; ++row) {
        Fr acc = Fr::zero();
        for (uint64_t t = lcs.start[row]; t < lcs.start[row + 1]; ++t) acc += lcs.terms[t].coef * values[lcs.terms[t].var];
        dst[row] = Mont(acc);
      }
    });
  };
  eval(cs.a, out.a);
  eval(cs.b, out.b);
  eval(cs.c, out.c);
  for (uint32_t i = 0; i < cs.n_inputs; ++i) {  // input_i · 0 = 0
    out.a[m + i] = Mont(values[i]);
    out.b[m + i] = Mont(Fr::zero());
    out.c[m + i] = Mont(Fr::zero());
  }
  for (uint32_t i = 0; i < cs.n_vars(); ++i) (i < cs.n_inputs ? out.input : out.aux).push_back(Mont(values[i]));

  const Densities d = DensitiesOf(cs);
  auto words = [](size_t bits) { return std::vector<uint64_t>((bits + 63) / 64); };
  out.a_aux_density = words(cs.n_aux);
  out.b_aux_density = words(cs.n_aux);
  out.b_input_density = words(cs.n_inputs);
  for (uint32_t j = 0; j < cs.n_aux; ++j) {
    if (d.a_aux[j]) SetBit(out.a_aux_density, j);
    if (d.b_aux[j]) SetBit(out.b_aux_density, j);
  }
  for (uint32_t i = 0; i < cs.n_inputs; ++i) {
    if (d.b_input[i]) SetBit(out.b_input_density, i);
  }
  return out;
}

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

namespace {

// The synthetic circuit's row kinds (see the header).
enum Kind : int { kBitAB, kBitA, kFieldA, kFieldAB, kFieldC, kCheck, kKinds };

// Each kind's share of the rows, in parts of kWeightTotal, from the real
// partition's counts (porep32g).
constexpr uint64_t kWeightTotal = 1'000'000'000;
struct KindWeights {
  uint64_t w[kKinds];
};
constexpr KindWeights MakeKindWeights() {
  using namespace porep32g;
  const uint64_t check = (kWeightTotal * (kConstraints - kAux) + kConstraints / 2) / kConstraints;
  const uint64_t defining = kWeightTotal - check;  // rows that define a variable, split by its kind
  const uint64_t field_c = (defining * (kAux - kAuxA) + kAux / 2) / kAux;
  const uint64_t b_dense = (defining * kAuxB + kAux / 2) / kAux;
  const uint64_t non_bits = defining * (100 - kBitSharePercent) / 100;
  const uint64_t field_ab = non_bits / 3;  // like Poseidon's x^2, the B operand of x^4 = x^2·x^2
  const uint64_t field_a = non_bits - field_c - field_ab;
  const uint64_t bit_ab = b_dense - field_ab;
  const uint64_t bit_a = defining - non_bits - bit_ab;
  return {{bit_ab, bit_a, field_a, field_ab, field_c, check}};
}
constexpr KindWeights kKindWeights = MakeKindWeights();
static_assert(kKindWeights.w[kBitAB] + kKindWeights.w[kBitA] + kKindWeights.w[kFieldA] + kKindWeights.w[kFieldAB] +
                  kKindWeights.w[kFieldC] + kKindWeights.w[kCheck] ==
              kWeightTotal);
static_assert(kKindWeights.w[kFieldA] > 0 && kKindWeights.w[kCheck] > 0);

// Smooth weighted round robin: every kind earns its weight each row, the
// richest is taken and pays the total. Integer, so the same on every
// platform; counts stay close to rows · weight / total at every prefix.
class KindSchedule {
 public:
  Kind Next() {
    int best = 0;
    for (int k = 0; k < kKinds; ++k) {
      credit_[k] += static_cast<int64_t>(kKindWeights.w[k]);
      if (credit_[k] > credit_[best]) best = k;
    }
    credit_[best] -= static_cast<int64_t>(kWeightTotal);
    return static_cast<Kind>(best);
  }

 private:
  int64_t credit_[kKinds] = {};
};

// Walks the synthetic circuit's rows: its values for `variant` into `val`
// and, when `cs` is given, its constraints. The bits come from `seed` alone,
// the inputs and v_0 from seed and variant.
void BuildSynthetic(int log_rows, uint32_t n_public, uint64_t seed, uint64_t variant, ConstraintSystem* cs,
                    std::vector<Fr>& val) {
  if (log_rows < 1 || log_rows > 31) {
    throw Error(ErrorCode::kInvalidArgument, "synthetic circuit: log_rows outside 1..31");
  }
  const size_t rows_total = size_t{1} << log_rows;
  const uint32_t n_inputs = 1 + n_public;
  if (rows_total <= size_t{n_inputs} + n_public) {
    throw Error(ErrorCode::kInvalidArgument, "synthetic circuit too small");
  }
  const size_t rows = rows_total - n_inputs;
  std::mt19937_64 rng(seed);
  SeededScalars scalars(seed ^ 0x5eed ^ (variant * 0x9e3779b97f4a7c15ULL));
  const Fr one = Fr::one(), two = Fr::from_uint(2), three = Fr::from_uint(3), minus_one = Fr::zero() - one,
           minus_two = Fr::zero() - two;
  val.clear();
  val.reserve(n_inputs + rows + 1);
  val.push_back(one);
  for (uint32_t i = 1; i < n_inputs; ++i) val.push_back(scalars.Next());
  using Term = LinearCombinations::Term;
  auto row = [&](std::initializer_list<Term> a, std::initializer_list<Term> b, std::initializer_list<Term> c) {
    if (cs == nullptr) return;
    cs->a.terms.insert(cs->a.terms.end(), a);
    cs->b.terms.insert(cs->b.terms.end(), b);
    cs->c.terms.insert(cs->c.terms.end(), c);
    cs->a.EndRow();
    cs->b.EndRow();
    cs->c.EndRow();
  };
  if (cs != nullptr) {
    cs->n_inputs = n_inputs;
    for (auto* lc : {&cs->a, &cs->b, &cs->c}) lc->start.reserve(rows + 1);
    cs->a.terms.reserve(rows + rows / 64 + n_public);
    cs->b.terms.reserve(rows);
    cs->c.terms.reserve(2 * rows);
  }
  constexpr uint32_t kNone = ~uint32_t{0};
  uint32_t f = static_cast<uint32_t>(val.size());  // the latest chain value, v_0 first
  val.push_back(scalars.Next());
  uint32_t bit = kNone, bit_ab = kNone;  // the latest bit, the latest bit A+B
  for (uint32_t i = 0; i < n_public; ++i) {  // (v - f)·1 = p: the inputs enter the chain
    const uint32_t v = static_cast<uint32_t>(val.size());
    val.push_back(val[f] + val[i + 1]);
    row({{v, one}, {f, minus_one}}, {{0, one}}, {{i + 1, one}});
    f = v;
  }
  KindSchedule schedule;
  for (size_t r = n_public; r < rows; ++r) {
    const uint32_t v = static_cast<uint32_t>(val.size());
    switch (schedule.Next()) {
      case kBitAB:  // v·v = v
        val.push_back((rng() & 1) ? one : Fr::zero());
        row({{v, one}}, {{v, one}}, {{v, one}});
        bit = bit_ab = v;
        break;
      case kBitA:  // v·1 = 1 - b (v = 1 before any bit)
        if (bit == kNone) {
          val.push_back(one);
          row({{v, one}}, {{0, one}}, {{0, one}});
        } else {
          val.push_back(one - val[bit]);
          row({{v, one}}, {{0, one}}, {{0, one}, {bit, minus_one}});
        }
        bit = v;
        break;
      case kFieldA:  // v·1 = 2f + 1
        val.push_back(val[f] * two + one);
        row({{v, one}}, {{0, one}}, {{f, two}, {0, one}});
        f = v;
        break;
      case kFieldAB:  // (v - 2f)·v = 2f + 1, v = 2f + 1
        val.push_back(val[f] * two + one);
        row({{v, one}, {f, minus_two}}, {{v, one}}, {{f, two}, {0, one}});
        f = v;
        break;
      case kFieldC:  // (3f + 1)·1 = v: v in C only, never used again
        val.push_back(val[f] * three + one);
        row({{f, three}, {0, one}}, {{0, one}}, {{v, one}});
        break;
      case kCheck:  // b·b = b again: a row without a new variable
        if (bit_ab == kNone) {
          row({{0, one}}, {{0, one}}, {{0, one}});
        } else {
          row({{bit_ab, one}}, {{bit_ab, one}}, {{bit_ab, one}});
        }
        break;
      default:
        throw Error(ErrorCode::kInternal, "synthetic circuit: unknown row kind");
    }
  }
  if (cs != nullptr) cs->n_aux = static_cast<uint32_t>(val.size() - n_inputs);
}

}  // namespace

SyntheticCircuit MakeSyntheticCircuit(int log_rows, uint32_t n_public, uint64_t seed) {
  SyntheticCircuit out;
  BuildSynthetic(log_rows, n_public, seed, 0, &out.cs, out.values);
  return out;
}

}  // namespace zkfleet::bellman

namespace zkfleet::bellman {

// The same walk as MakeSyntheticCircuit's without the constraints: another
// variant's inputs and v_0, the chain recomputed, the bits kept.
std::vector<Fr> SyntheticVariantValues(int log_rows, uint32_t n_public, uint64_t seed, uint64_t variant) {
  std::vector<Fr> val;
  BuildSynthetic(log_rows, n_public, seed, variant, nullptr, val);
  return val;
}

}  // namespace zkfleet::bellman
