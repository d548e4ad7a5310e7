#include "zkfleet/devtools/circuit_generator.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "zkfleet/common/error.hpp"
#include "zkfleet/devtools/prng.hpp"
#include "zkfleet/ff/bls12_381.hpp"
#include "zkfleet/ff/bn254.hpp"
#include "zkfleet/io/curve_primes.hpp"
#include "zkfleet/wtns/wtns_writer.hpp"

namespace zkfleet::devtools {
namespace {

[[noreturn]] void InvalidArgument(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, "gen-circuit: " + message);
}

std::string Str(uint64_t v) { return std::to_string(v); }

// The kinds of rows the generator emits, with how often (percent). Boolean
// rows, ANDs and selectors make about half of the witness 0 or 1.
enum class Gate { kBoolean, kAnd, kSelect, kMul, kMux, kLinear, kInverse };
struct GateWeight {
  Gate gate;
  uint32_t percent;
};
constexpr GateWeight kGateMix[] = {
    {Gate::kBoolean, 35},  // b * (b - 1) = 0             b fresh, 0 or 1
    {Gate::kAnd, 10},      // b1 * b2 = t                 t boolean
    {Gate::kSelect, 15},   // b * x = t                   t is 0 or x
    {Gate::kMul, 20},      // (c1 x + k) * (c2 y) = t
    {Gate::kMux, 8},       // s * (a - b) = t - b         t is a or b
    {Gate::kLinear, 7},    // (x + c y + k) * 1 = t
    {Gate::kInverse, 5},   // x * t = 1                   t = 1/x
};

// A linear combination of at most four terms, kept free of zero and
// duplicate entries so that rows look like circom's (one term per wire).
template <class Fr>
struct SmallLc {
  struct Term {
    uint32_t wire;
    Fr coef;
  };
  Term terms[4];
  int size = 0;

  SmallLc& Add(uint32_t wire, const Fr& coef) {
    for (int i = 0; i < size; ++i) {
      if (terms[i].wire != wire) continue;
      terms[i].coef += coef;
      if (terms[i].coef.is_zero()) terms[i] = terms[--size];
      return *this;
    }
    if (!coef.is_zero()) terms[size++] = Term{wire, coef};
    return *this;
  }
  Fr Evaluate(const std::vector<Fr>& w) const {
    Fr sum = Fr::zero();
    for (int i = 0; i < size; ++i) sum += terms[i].coef * w[terms[i].wire];
    return sum;
  }
};

template <class Fr>
class Generator {
 public:
  using Lc = SmallLc<Fr>;

  Generator(const CircuitOptions& options, GeneratedCircuit& out)
      : opt_(options), out_(out), rng_(options.seed) {}

  void Run() {
    io::R1cs& r1cs = out_.r1cs;
    io::R1csHeader& h = r1cs.header;
    const uint32_t inputs_end = 1 + opt_.public_outputs + opt_.public_inputs + opt_.private_inputs;
    h.n8 = 32;
    const io::CurvePrimes& primes = io::PrimesOf(opt_.curve);
    h.prime.assign(primes.r, primes.r + primes.n8r);
    h.n_pub_out = opt_.public_outputs;
    h.n_pub_in = opt_.public_inputs;
    h.n_prv_in = opt_.private_inputs;
    h.n_constraints = static_cast<uint32_t>(opt_.constraints);
    h.n_wires = static_cast<uint32_t>(inputs_end + (opt_.constraints - opt_.public_outputs));
    h.n_labels = h.n_wires;
    r1cs.wire_labels.resize(h.n_wires);
    for (uint32_t i = 0; i < h.n_wires; ++i) r1cs.wire_labels[i] = i;
    r1cs.lc_start.reserve(3 * opt_.constraints + 1);
    r1cs.lc_start.push_back(0);
    r1cs.term_wire.reserve(4 * opt_.constraints);  // ~3.4 terms per row on average
    r1cs.term_coeff.reserve(4 * opt_.constraints * 32);

    w_.assign(h.n_wires, Fr::zero());
    w_[0] = Fr::one();
    // Inputs: random field elements, the pool the first rows draw from.
    for (uint32_t wire = 1 + opt_.public_outputs; wire < inputs_end; ++wire) {
      w_[wire] = rng_.template FieldElement<Fr>();
      field_pool_.push_back(wire);
    }
    next_wire_ = inputs_end;

    const uint64_t body_rows = opt_.constraints - opt_.public_outputs;
    for (uint64_t row = 0; row < body_rows; ++row) EmitGate(PickGate());
    // The outputs (wires 1..nPubOut): products of earlier signals.
    for (uint32_t k = 0; k < opt_.public_outputs; ++k) {
      const uint32_t out = 1 + k, x = PickField(), y = PickField();
      w_[out] = w_[x] * w_[y];
      Emit(Lc().Add(x, one()), Lc().Add(y, one()), Lc().Add(out, one()));
    }

    // Witness bytes: canonical little-endian (the host is little-endian, so
    // the limbs are the bytes).
    out_.witness.resize(size_t{h.n_wires} * 32);
    const Fr zero = Fr::zero(), unit = Fr::one();
    for (uint32_t i = 0; i < h.n_wires; ++i) {
      uint64_t limbs[4];
      w_[i].to_canonical(limbs);
      std::memcpy(out_.witness.data() + size_t{i} * 32, limbs, 32);
      if (w_[i] == zero || w_[i] == unit) ++out_.stats.boolean_values;
    }
    out_.stats.terms = r1cs.term_wire.size();
  }

 private:
  static Fr one() { return Fr::one(); }
  static Fr minus_one() { return Fr::one().neg(); }

  Gate PickGate() {
    uint64_t roll = rng_.Below(100);
    Gate gate = kGateMix[0].gate;
    for (const GateWeight& g : kGateMix) {
      if (roll < g.percent) {
        gate = g.gate;
        break;
      }
      roll -= g.percent;
    }
    // Gates that need a boolean operand wait until one exists.
    const bool needs_bool = gate == Gate::kAnd || gate == Gate::kSelect || gate == Gate::kMux;
    return needs_bool && bool_pool_.empty() ? Gate::kBoolean : gate;
  }

  uint32_t PickField() { return field_pool_[rng_.Below(field_pool_.size())]; }
  uint32_t PickBool() { return bool_pool_[rng_.Below(bool_pool_.size())]; }
  // Any earlier input or internal signal (outputs get their values last).
  uint32_t PickAny() {
    const uint32_t first = 1 + opt_.public_outputs, newest = next_wire_ - 1;  // newest is being defined
    return static_cast<uint32_t>(first + rng_.Below(newest - first));
  }

  // Mostly 1, as in circom output; sometimes -1, a small constant or a
  // full-size field element.
  Fr PickCoefficient() {
    const uint64_t roll = rng_.Below(100);
    if (roll < 70) return one();
    if (roll < 80) return minus_one();
    if (roll < 95) return Fr::from_uint(2 + rng_.Below(15));
    return rng_.template FieldElement<Fr>();
  }

  void EmitGate(Gate gate) {
    const uint32_t t = next_wire_++;
    switch (gate) {
      case Gate::kBoolean: {
        w_[t] = rng_.Below(2) ? one() : Fr::zero();
        Emit(Lc().Add(t, one()), Lc().Add(t, one()).Add(0, minus_one()), Lc());
        bool_pool_.push_back(t);
        return;
      }
      case Gate::kAnd: {
        const uint32_t b1 = PickBool(), b2 = PickBool();
        w_[t] = w_[b1] * w_[b2];
        Emit(Lc().Add(b1, one()), Lc().Add(b2, one()), Lc().Add(t, one()));
        bool_pool_.push_back(t);
        return;
      }
      case Gate::kSelect: {
        const uint32_t b = PickBool(), x = PickField();
        w_[t] = w_[b] * w_[x];
        Emit(Lc().Add(b, one()), Lc().Add(x, one()), Lc().Add(t, one()));
        break;
      }
      case Gate::kMul: {
        const uint32_t x = PickField(), y = PickField();
        const Fr c1 = PickCoefficient(), c2 = PickCoefficient();
        const Fr k = rng_.Below(2) ? Fr::zero() : Fr::from_uint(1 + rng_.Below(100));
        w_[t] = (c1 * w_[x] + k) * (c2 * w_[y]);
        Emit(Lc().Add(x, c1).Add(0, k), Lc().Add(y, c2), Lc().Add(t, one()));
        break;
      }
      case Gate::kMux: {
        const uint32_t s = PickBool(), a = PickField(), b = PickField();
        w_[t] = w_[s] * (w_[a] - w_[b]) + w_[b];
        Emit(Lc().Add(s, one()), Lc().Add(a, one()).Add(b, minus_one()), Lc().Add(t, one()).Add(b, minus_one()));
        break;
      }
      case Gate::kLinear: {
        const uint32_t x = PickField(), y = PickAny();
        const Fr c = PickCoefficient(), k = Fr::from_uint(rng_.Below(8));
        w_[t] = w_[x] + c * w_[y] + k;
        Emit(Lc().Add(x, one()).Add(y, c).Add(0, k), Lc().Add(0, one()), Lc().Add(t, one()));
        break;
      }
      case Gate::kInverse: {
        const uint32_t x = PickField();
        if (w_[x].is_zero()) {  // 1/0 does not exist: make it a square instead
          w_[t] = w_[x] * w_[x];
          Emit(Lc().Add(x, one()), Lc().Add(x, one()), Lc().Add(t, one()));
        } else {
          w_[t] = w_[x].inverse();
          Emit(Lc().Add(x, one()), Lc().Add(t, one()), Lc().Add(0, one()));
        }
        break;
      }
    }
    // Only random-looking values feed later arithmetic; a selector's 0 would
    // otherwise spread through the products and zero most of the witness.
    if (w_[t] != Fr::zero() && w_[t] != one()) field_pool_.push_back(t);
  }

  // Appends one row A * B = C. The generator checks its own witness as it
  // goes: a failure here is a bug in this file.
  void Emit(Lc a, Lc b, Lc c) {
    if (a.Evaluate(w_) * b.Evaluate(w_) != c.Evaluate(w_)) {
      throw Error(ErrorCode::kInternal, "gen-circuit: row " + Str(row_) + " is not satisfied by the witness");
    }
    for (Lc* lc : {&a, &b, &c}) Append(*lc);
    ++row_;
  }

  void Append(Lc& lc) {
    io::R1cs& r1cs = out_.r1cs;
    // circom lists the terms of a linear combination by increasing wire.
    std::sort(lc.terms, lc.terms + lc.size, [](const auto& x, const auto& y) { return x.wire < y.wire; });
    for (int i = 0; i < lc.size; ++i) {
      r1cs.term_wire.push_back(lc.terms[i].wire);
      uint64_t limbs[4];
      lc.terms[i].coef.to_canonical(limbs);
      const auto* bytes = reinterpret_cast<const uint8_t*>(limbs);
      r1cs.term_coeff.insert(r1cs.term_coeff.end(), bytes, bytes + 32);
    }
    r1cs.lc_start.push_back(r1cs.term_wire.size());
  }

  const CircuitOptions& opt_;
  GeneratedCircuit& out_;
  Prng rng_;
  std::vector<Fr> w_;                 // the witness, Montgomery form
  std::vector<uint32_t> field_pool_;  // signals with values other than 0 and 1
  std::vector<uint32_t> bool_pool_;   // signals constrained to be 0 or 1
  uint32_t next_wire_ = 0;
  uint64_t row_ = 0;
};

void CheckOptions(const CircuitOptions& o) {
  if (o.max_power < 1 || o.max_power > kMaxDomainPower) {
    InvalidArgument("--max-power: expected 1.." + Str(kMaxDomainPower) + ", found " + std::to_string(o.max_power));
  }
  if (o.public_outputs < 1) InvalidArgument("--public-outputs: expected >= 1, found 0");
  if (o.public_inputs < 1) InvalidArgument("--public-inputs: expected >= 1, found 0");
  const uint64_t n_public = uint64_t{o.public_outputs} + o.public_inputs;
  // Keep every count far from u32 overflow; the domain limit below is tighter.
  if (n_public + o.private_inputs > (uint64_t{1} << 20)) {
    InvalidArgument("--public-outputs/--public-inputs/--private-inputs: at most 2^20 inputs and outputs together");
  }
  if (o.constraints < 1 || o.constraints < o.public_outputs) {
    InvalidArgument("--constraints: expected >= " + Str(std::max<uint64_t>(1, o.public_outputs)) +
                    " (one row per public output at least), found " + Str(o.constraints));
  }
  const uint64_t max_constraints = MaxConstraints(o.max_power, n_public);
  if (o.constraints > max_constraints) {
    InvalidArgument("--constraints " + Str(o.constraints) + " does not fit the largest domain 2^" +
                    std::to_string(o.max_power) + " (--max-power): constraints + nPublic + 1 = " +
                    Str(o.constraints + n_public + 1) + " rows need 2^" +
                    std::to_string(DomainPower(o.constraints, n_public)) + "; use at most " +
                    Str(max_constraints) + " constraints");
  }
}

}  // namespace

uint64_t MaxConstraints(int max_power, uint64_t n_public) {
  const uint64_t domain = uint64_t{1} << max_power;
  return domain > n_public + 1 ? domain - n_public - 1 : 0;
}

GeneratedCircuit GenerateCircuit(const CircuitOptions& options) {
  CheckOptions(options);
  GeneratedCircuit out;
  if (options.curve == io::Curve::kBn254) {
    Generator<ff::Bn254Fr>(options, out).Run();
  } else {
    Generator<ff::Bls12_381Fr>(options, out).Run();
  }
  out.stats.domain_power =
      DomainPower(options.constraints, uint64_t{options.public_outputs} + options.public_inputs);
  return out;
}

void WriteCircuitFiles(const GeneratedCircuit& circuit, const std::string& r1cs_path,
                       const std::string& wtns_path) {
  io::WriteR1cs(r1cs_path, circuit.r1cs);
  io::WriteWtns(wtns_path, circuit.r1cs.header.n8, circuit.r1cs.header.prime, circuit.witness);
}

}  // namespace zkfleet::devtools
