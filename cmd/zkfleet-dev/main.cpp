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
// Exit 0 on success; on any error one line on stderr and exit 1.
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "../parse_command_line.hpp"

#include "zkfleet/common/error.hpp"
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

  if (auto exit_code = zkfleet::cmd::ParseCommandLine(app, argc, argv, "zkfleet-dev")) return *exit_code;
  try {
    if (gen_cmd->parsed()) {
      if (constraints_opt->count() == 0 && power_opt->count() == 0) {
        throw Error(ErrorCode::kInvalidArgument, "gen-circuit: give --constraints N or --domain-power K");
      }
      return RunGenCircuit(gen);
    }
    return RunSetup(setup);
  } catch (const std::exception& e) {
    std::cerr << "zkfleet-dev: error: " << e.what() << "\n";
    return 1;
  }
}
