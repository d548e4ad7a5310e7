#include "zkfleet/bellman/constraint_system.hpp"

#include <cstring>
#include <initializer_list>
#include <random>

#include "zkfleet/bellman/seeded_scalars.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/io/curve_primes.hpp"

namespace zkfleet::bellman {
namespace {

engine::FrMont Mont(const Fr& x) {
  engine::FrMont out;
  std::memcpy(out.data(), &x, sizeof(out));
  return out;
}

void SetBit(std::vector<uint64_t>& words, size_t i) { words[i / 64] |= uint64_t{1} << (i % 64); }

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
