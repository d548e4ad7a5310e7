// zkfleet-dev: fixture tools for tests and benchmarks.
//
//   zkfleet-dev gen-circuit --curve bn128|bls12381 (--constraints N | --domain-power K)
//                           --out DIR [--seed S] [--public-outputs 1] [--public-inputs 2]
//                           [--private-inputs 2] [--max-power 28]
//       writes DIR/circuit.r1cs (circom format) and DIR/witness.wtns (satisfies it)
//
//   zkfleet-dev setup <circuit.r1cs> <out.zkey> --insecure [--seed S] [--threads N] [--max-power 28]
//       writes a Groth16 zkey in snarkjs format from self-drawn toxic waste:
//       INSECURE, for tests and benchmarks only
//
//   zkfleet-dev bellman-params (--r1cs FILE | --synthetic LOG_ROWS [--public N]) --seed S
//                              --out FILE.params [--vk FILE.vk] [--threads N]
//       writes bellperson-format Groth16 parameters (and verifying key) for a
//       circom .r1cs over BLS12-381 or a synthetic circuit, from toxic waste
//       drawn from --seed: INSECURE, for tests and benchmarks only
//
//   zkfleet-dev bellman-assignment (--r1cs FILE --wtns FILE | --synthetic LOG_ROWS [--public N] --seed S [--variant V])
//                                  --out FILE.asgn [--inputs-json FILE] [--threads N]
//       writes the circuit's synthesized assignment (engine/assignment_file.hpp)
//       and its public inputs as a JSON array of decimal strings; a synthetic
//       circuit is the one bellman-params makes from the same size, --public and --seed
//
// Exit 0 on success; on any error one line on stderr and exit 1.
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "zkfleet/common/command_line.hpp"

#include "zkfleet/common/error.hpp"
#include "zkfleet/devtools/bellman_fixtures.hpp"
#include "zkfleet/devtools/circuit_generator.hpp"
#include "zkfleet/devtools/insecure_setup.hpp"
#include "zkfleet/engine/curve.hpp"

namespace {

using zkfleet::Error;
using zkfleet::ErrorCode;
namespace devtools = zkfleet::devtools;

// snarkjs' curve names; case and punctuation are ignored, as snarkjs does.
zkfleet::engine::Curve ParseCurve(const std::string& name) {
  std::string key;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) key += static_cast<char>(std::tolower(c));
  }
  if (key == "bn128" || key == "bn254" || key == "altbn128") return zkfleet::engine::Curve::kBn254;
  if (key == "bls12381") return zkfleet::engine::Curve::kBls12_381;
  throw Error(ErrorCode::kInvalidArgument, "--curve: expected bn128 or bls12381, found '" + name + "'");
}

struct GenArgs {
  std::string curve, out_dir;
  uint64_t constraints = 0;
  int domain_power = 0;
  devtools::CircuitOptions options;
};

int RunGenCircuit(GenArgs& args) {
  devtools::CircuitOptions& o = args.options;
  o.curve = ParseCurve(args.curve);
  const uint64_t n_public = uint64_t{o.public_outputs} + o.public_inputs;
  if (args.domain_power > 0) {
    if (args.domain_power > o.max_power) {
      throw Error(ErrorCode::kInvalidArgument, "gen-circuit: --domain-power " + std::to_string(args.domain_power) +
                                                   " is above --max-power " + std::to_string(o.max_power));
    }
    o.constraints = devtools::MaxConstraints(args.domain_power, n_public);
    if (o.constraints == 0 || devtools::DomainPower(o.constraints, n_public) != args.domain_power) {
      throw Error(ErrorCode::kInvalidArgument, "gen-circuit: --domain-power " + std::to_string(args.domain_power) +
                                                   " is too small for " + std::to_string(n_public) +
                                                   " public signals");
    }
  } else {
    o.constraints = args.constraints;
  }
  const devtools::GeneratedCircuit circuit = devtools::GenerateCircuit(o);
  std::filesystem::create_directories(args.out_dir);
  const std::string r1cs_path = args.out_dir + "/circuit.r1cs";
  const std::string wtns_path = args.out_dir + "/witness.wtns";
  devtools::WriteCircuitFiles(circuit, r1cs_path, wtns_path);
  const auto& h = circuit.r1cs.header;
  std::printf("wrote %s and %s\n", r1cs_path.c_str(), wtns_path.c_str());
  std::printf("curve %s, constraints %u, wires %u, public %u (outputs %u, inputs %u), private inputs %u,\n",
              zkfleet::engine::CurveName(o.curve), h.n_constraints, h.n_wires, h.n_pub_out + h.n_pub_in,
              h.n_pub_out, h.n_pub_in, h.n_prv_in);
  std::printf("terms %llu, witness values 0/1: %.1f%%, domain 2^%d, seed %llu\n",
              static_cast<unsigned long long>(circuit.stats.terms),
              100.0 * static_cast<double>(circuit.stats.boolean_values) / h.n_wires, circuit.stats.domain_power,
              static_cast<unsigned long long>(o.seed));
  return 0;
}

struct SetupArgs {
  std::string r1cs_path, zkey_path;
  bool insecure = false;
  std::optional<uint64_t> seed;
  devtools::SetupOptions options;
};

int RunSetup(SetupArgs& args) {
  if (!args.insecure) {
    throw Error(ErrorCode::kInvalidArgument,
                "setup: refusing to run without --insecure: this setup draws the toxic waste itself, so whoever "
                "runs it can forge proofs; its keys are for tests and benchmarks only");
  }
  std::fprintf(stderr,
               "zkfleet-dev: WARNING: insecure setup: the toxic waste (tau, alpha, beta, delta) is known to this "
               "process%s. The key is for tests and benchmarks ONLY, never for production.\n",
               args.seed ? " and reproducible from --seed" : "");
  args.options.seed = args.seed;
  args.options.log = [](const std::string& line) { std::fprintf(stderr, "zkfleet-dev: setup: %s\n", line.c_str()); };
  const devtools::SetupReport r = devtools::InsecureSetupFromFile(args.r1cs_path, args.zkey_path, args.options);
  double total = 0;
  for (const auto& step : r.seconds) total += step.second;
  std::printf("wrote %s: curve %s, nVars %u, nPublic %u, constraints %u, domain 2^%d, coefficients %u, "
              "windows G1 %d / G2 %d bits, %.2f s\n",
              args.zkey_path.c_str(), zkfleet::engine::CurveName(r.curve), r.n_vars, r.n_public, r.n_constraints,
              r.domain_power, r.n_coeffs, r.g1_window_bits, r.g2_window_bits, total);
  return 0;
}

struct BellmanArgs {
  devtools::BellmanCircuitSource source;
  std::optional<uint64_t> seed;
  std::string out_path, vk_path, inputs_json_path;
};

// One of --r1cs and --synthetic; --seed where the command needs it.
void CheckBellmanSource(const char* command, BellmanArgs& args, bool seed_required, bool needs_wtns) {
  const devtools::BellmanCircuitSource& s = args.source;
  const std::string name = command;
  if (s.r1cs_path.empty() == (s.synthetic_log_rows == 0)) {
    throw Error(ErrorCode::kInvalidArgument, name + ": give exactly one of --r1cs FILE and --synthetic LOG_ROWS");
  }
  if (needs_wtns && !s.r1cs_path.empty() && s.wtns_path.empty()) {
    throw Error(ErrorCode::kInvalidArgument, name + ": --r1cs needs --wtns");
  }
  if (!s.wtns_path.empty() && s.r1cs_path.empty()) {
    throw Error(ErrorCode::kInvalidArgument, name + ": --wtns goes with --r1cs");
  }
  if (!args.seed && (seed_required || s.synthetic_log_rows != 0)) {
    throw Error(ErrorCode::kInvalidArgument, name + ": give --seed S");
  }
  args.source.seed = args.seed.value_or(0);
}

int RunBellmanParams(BellmanArgs& args) {
  CheckBellmanSource("bellman-params", args, /*seed_required=*/true, /*needs_wtns=*/false);
  std::fprintf(stderr,
               "zkfleet-dev: WARNING: insecure parameters: the toxic waste is drawn from --seed %llu, so anyone who "
               "knows it can forge proofs. For tests and benchmarks ONLY.\n",
               static_cast<unsigned long long>(args.source.seed));
  const devtools::BellmanParamsReport r = devtools::WriteBellmanParams(args.source, args.out_path, args.vk_path);
  std::printf("wrote %s%s%s: inputs %u (the constant one included), aux %u, constraints %llu, domain 2^%d\n",
              args.out_path.c_str(), args.vk_path.empty() ? "" : " and ", args.vk_path.c_str(), r.n_inputs, r.n_aux,
              static_cast<unsigned long long>(r.n_constraints), r.domain_log);
  std::printf("points: ic %llu, h %llu, l %llu, a %llu, b_g1/b_g2 %llu\n", static_cast<unsigned long long>(r.n_ic),
              static_cast<unsigned long long>(r.n_h), static_cast<unsigned long long>(r.n_l),
              static_cast<unsigned long long>(r.n_a), static_cast<unsigned long long>(r.n_b));
  return 0;
}

int RunBellmanAssignment(BellmanArgs& args) {
  CheckBellmanSource("bellman-assignment", args, /*seed_required=*/false, /*needs_wtns=*/true);
  if (args.source.variant != 0 && !args.source.r1cs_path.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "bellman-assignment: --variant is for --synthetic circuits");
  }
  const devtools::BellmanAssignmentReport r =
      devtools::WriteBellmanAssignment(args.source, args.out_path, args.inputs_json_path);
  std::printf("wrote %s: abc_size %llu, inputs %llu (the constant one included), aux %llu, public inputs %zu%s%s\n",
              args.out_path.c_str(), static_cast<unsigned long long>(r.abc_size),
              static_cast<unsigned long long>(r.n_inputs), static_cast<unsigned long long>(r.n_aux),
              r.public_inputs.size(), args.inputs_json_path.empty() ? "" : ", written to ",
              args.inputs_json_path.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"zkfleet-dev: synthetic circuits and insecure Groth16 keys for tests and benchmarks"};
  app.require_subcommand(1);

  GenArgs gen;
  CLI::App* gen_cmd = app.add_subcommand("gen-circuit", "write a circom-format .r1cs and a .wtns that satisfies it");
  gen_cmd->add_option("--curve", gen.curve, "bn128 | bls12381")->required();
  auto* constraints_opt = gen_cmd->add_option("--constraints", gen.constraints, "exact number of constraints");
  auto* power_opt = gen_cmd->add_option("--domain-power", gen.domain_power,
                                        "fill the domain 2^K exactly: constraints = 2^K - nPublic - 1")
                        ->check(CLI::Range(1, devtools::kMaxDomainPower));
  constraints_opt->excludes(power_opt);
  gen_cmd->add_option("--out", gen.out_dir, "output directory (circuit.r1cs, witness.wtns)")->required();
  gen_cmd->add_option("--seed", gen.options.seed, "PRNG seed (same seed, same files)")->capture_default_str();
  gen_cmd->add_option("--public-outputs", gen.options.public_outputs, "public outputs (>= 1)")->capture_default_str();
  gen_cmd->add_option("--public-inputs", gen.options.public_inputs, "public inputs (>= 1)")->capture_default_str();
  gen_cmd->add_option("--private-inputs", gen.options.private_inputs, "private inputs")->capture_default_str();
  gen_cmd->add_option("--max-power", gen.options.max_power, "reject circuits whose domain exceeds 2^P")
      ->capture_default_str();

  SetupArgs setup;
  CLI::App* setup_cmd =
      app.add_subcommand("setup", "write an INSECURE Groth16 zkey (snarkjs format) for tests and benchmarks");
  setup_cmd->add_option("r1cs", setup.r1cs_path, "circuit (.r1cs, circom format)")->required();
  setup_cmd->add_option("zkey", setup.zkey_path, "output proving key (.zkey)")->required();
  setup_cmd->add_flag("--insecure", setup.insecure, "acknowledge that the key is for tests and benchmarks only");
  setup_cmd->add_option("--seed", setup.seed, "draw the toxic waste from this PRNG seed (reproducible test keys)");
  setup_cmd->add_option("--threads", setup.options.threads, "CPU threads (0 = all)")->check(CLI::NonNegativeNumber);
  setup_cmd->add_option("--max-power", setup.options.max_power, "reject circuits whose domain exceeds 2^P")
      ->capture_default_str();

  BellmanArgs bparams;
  CLI::App* bparams_cmd = app.add_subcommand(
      "bellman-params", "write INSECURE bellperson-format Groth16 parameters (.params, .vk) for tests and benchmarks");
  bparams_cmd->add_option("--r1cs", bparams.source.r1cs_path, "circuit (.r1cs, circom format, BLS12-381)");
  bparams_cmd->add_option("--synthetic", bparams.source.synthetic_log_rows,
                          "a synthetic circuit of 2^LOG_ROWS rows (bellman::MakeSyntheticCircuit)")
      ->check(CLI::Range(2, 28));
  bparams_cmd->add_option("--public", bparams.source.n_public, "the synthetic circuit's public inputs")
      ->capture_default_str();
  bparams_cmd->add_option("--seed", bparams.seed, "the toxic waste's seed (and the synthetic circuit's)");
  bparams_cmd->add_option("--out", bparams.out_path, "output parameters (.params)")->required();
  bparams_cmd->add_option("--vk", bparams.vk_path, "also write the verifying key (.vk)");
  bparams_cmd->add_option("--threads", bparams.source.threads, "CPU threads (0 = all)")->check(CLI::NonNegativeNumber);

  BellmanArgs basgn;
  CLI::App* basgn_cmd = app.add_subcommand(
      "bellman-assignment", "write a circuit's synthesized assignment (.asgn) and its public inputs (JSON)");
  basgn_cmd->add_option("--r1cs", basgn.source.r1cs_path, "circuit (.r1cs, circom format, BLS12-381)");
  basgn_cmd->add_option("--wtns", basgn.source.wtns_path, "its witness (.wtns)");
  basgn_cmd->add_option("--synthetic", basgn.source.synthetic_log_rows,
                        "a synthetic circuit of 2^LOG_ROWS rows (bellman::MakeSyntheticCircuit)")
      ->check(CLI::Range(2, 28));
  basgn_cmd->add_option("--public", basgn.source.n_public, "the synthetic circuit's public inputs")
      ->capture_default_str();
  basgn_cmd->add_option("--seed", basgn.seed, "the synthetic circuit's seed");
  basgn_cmd->add_option("--variant", basgn.source.variant,
                        "another assignment of the same synthetic circuit (other public inputs; 0 = its own): "
                        "partitions of one job, proved with one .params")
      ->capture_default_str();
  basgn_cmd->add_option("--out", basgn.out_path, "output assignment file (.asgn)")->required();
  basgn_cmd->add_option("--inputs-json", basgn.inputs_json_path,
                        "also write the public inputs (input[1..]) as a JSON array of decimal strings");
  basgn_cmd->add_option("--threads", basgn.source.threads, "CPU threads (0 = all)")->check(CLI::NonNegativeNumber);

  if (auto exit_code = zkfleet::cmd::ParseCommandLine(app, argc, argv, "zkfleet-dev")) return *exit_code;
  try {
    if (gen_cmd->parsed()) {
      if (constraints_opt->count() == 0 && power_opt->count() == 0) {
        throw Error(ErrorCode::kInvalidArgument, "gen-circuit: give --constraints N or --domain-power K");
      }
      return RunGenCircuit(gen);
    }
    if (bparams_cmd->parsed()) return RunBellmanParams(bparams);
    if (basgn_cmd->parsed()) return RunBellmanAssignment(basgn);
    return RunSetup(setup);
  } catch (const std::exception& e) {
    std::cerr << "zkfleet-dev: error: " << e.what() << "\n";
    return 1;
  }
}
