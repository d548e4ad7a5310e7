#include "zkfleet/devtools/bellman_fixtures.hpp"

#include <cstdio>
#include <cstring>

#include "zkfleet/bellman/assignment_file.hpp"
#include "zkfleet/bellman/constraint_system.hpp"
#include "zkfleet/bellman/parameters.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/devtools/seeded_parameters.hpp"
#include "zkfleet/engine/snarkjs.hpp"
#include "zkfleet/engine/witness.hpp"
#include "zkfleet/r1cs/r1cs.hpp"

namespace zkfleet::devtools {
namespace {

using bellman::Fr;

struct Circuit {
  bellman::ConstraintSystem cs;
  std::vector<Fr> values;  // empty when not asked for
};

Circuit Load(const BellmanCircuitSource& s, bool with_values) {
  if (s.r1cs_path.empty()) {
    if (s.synthetic_log_rows <= 0) throw Error(ErrorCode::kInvalidArgument, "give an .r1cs or a synthetic circuit's size");
    bellman::SyntheticCircuit synthetic = bellman::MakeSyntheticCircuit(s.synthetic_log_rows, s.n_public, s.seed);
    if (with_values && s.variant != 0) {
      synthetic.values = bellman::SyntheticVariantValues(s.synthetic_log_rows, s.n_public, s.seed, s.variant);
    }
    return {std::move(synthetic.cs), with_values ? std::move(synthetic.values) : std::vector<Fr>{}};
  }
  const io::R1cs r1cs = io::ReadR1cs(s.r1cs_path);
  Circuit out;
  try {
    out.cs = bellman::FromCircom(r1cs);
  } catch (const Error& e) {
    throw Error(e.code(), s.r1cs_path + ": " + e.what());
  }
  if (!with_values) return out;
  if (s.wtns_path.empty()) throw Error(ErrorCode::kInvalidArgument, "an assignment of " + s.r1cs_path + " needs its .wtns");
  const engine::Witness w = engine::Witness::FromFile(s.wtns_path);
  if (w.n8() != r1cs.header.n8 || w.prime() != r1cs.header.prime) {
    throw Error(ErrorCode::kMismatch, s.wtns_path + ": its prime is not " + s.r1cs_path + "'s");
  }
  if (w.count() != out.cs.n_vars()) {
    throw Error(ErrorCode::kMismatch, s.wtns_path + ": " + std::to_string(w.count()) + " values, " + s.r1cs_path +
                                          " has " + std::to_string(out.cs.n_vars()) + " wires");
  }
  out.values.resize(w.count());
  for (uint32_t i = 0; i < w.count(); ++i) {
    uint64_t limbs[4];
    std::memcpy(limbs, w.values() + size_t{i} * 32, 32);  // canonical (< r): Witness checked it
    out.values[i] = Fr::from_canonical(limbs);
  }
  return out;
}

void WriteText(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  bool ok = f != nullptr && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (f != nullptr) ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error(ErrorCode::kIo, "cannot write " + path);
  }
}

}  // namespace

BellmanParamsReport WriteBellmanParams(const BellmanCircuitSource& source, const std::string& params_path,
                                       const std::string& vk_path) {
  const Circuit circuit = Load(source, /*with_values=*/false);
  cpu::ThreadPool pool(source.threads);
  const bellman::Parameters params = SynthesizeParameters(circuit.cs, source.seed, pool);
  bellman::WriteParameters(params_path, params, pool);
  if (!vk_path.empty()) bellman::WriteVerifyingKey(vk_path, params.vk);
  BellmanParamsReport r;
  r.n_inputs = circuit.cs.n_inputs;
  r.n_aux = circuit.cs.n_aux;
  r.n_constraints = circuit.cs.n_constraints();
  r.domain_log = bellman::DomainLog(circuit.cs);
  r.n_ic = params.vk.ic.size();
  r.n_h = params.h.size();
  r.n_l = params.l.size();
  r.n_a = params.a.size();
  r.n_b = params.b_g1.size();
  return r;
}

BellmanAssignmentReport WriteBellmanAssignment(const BellmanCircuitSource& source, const std::string& out_path,
                                               const std::string& inputs_json_path) {
  const Circuit circuit = Load(source, /*with_values=*/true);
  cpu::ThreadPool pool(source.threads);
  const bellman::Assignment a = bellman::Synthesize(circuit.cs, circuit.values, pool);
  // A witness that does not satisfy its circuit makes a file that no prover
  // accepts: say so here, naming the row, rather than at the prover.
  for (size_t row = 0; row < a.a.size(); ++row) {
    if (!(Fr::from_mont(a.a[row].data()) * Fr::from_mont(a.b[row].data()) == Fr::from_mont(a.c[row].data()))) {
      throw Error(ErrorCode::kUnsatisfied, (source.wtns_path.empty() ? std::string("the synthetic circuit")
                                                                      : source.wtns_path) +
                                               " does not satisfy constraint " + std::to_string(row));
    }
  }
  bellman::WriteAssignmentFile(out_path, a);
  BellmanAssignmentReport r;
  r.abc_size = a.a.size();
  r.n_inputs = a.input.size();
  r.n_aux = a.aux.size();
  for (size_t i = 1; i < a.input.size(); ++i) {
    engine::BigInt x{};
    Fr::from_mont(a.input[i].data()).to_canonical(x.data());
    r.public_inputs.push_back(engine::DecimalString(x));
  }
  if (!inputs_json_path.empty()) {
    std::string json = "[";
    for (size_t i = 0; i < r.public_inputs.size(); ++i) json += (i ? ",\"" : "\"") + r.public_inputs[i] + "\"";
    WriteText(inputs_json_path, json + "]\n");
  }
  return r;
}

}  // namespace zkfleet::devtools
