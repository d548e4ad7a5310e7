// zkverify: Groth16 verification with `snarkjs groth16 verify`'s contract.
//
//   zkverify <verification_key.json> <public.json> <proof.json> [--bench N]
//
// Valid: prints "OK" and exits 0. Otherwise one line on stderr saying why
// (invalid proof, point not on the curve or not in the subgroup, wrong number
// of public signals, a value ≥ its modulus, unreadable JSON, curve mismatch)
// and exit 1. Stricter than snarkjs: coordinates must be < q and points in
// the prime-order subgroups (zkfleet/engine/verify.hpp).
// --bench N verifies N more times with the key prepared once and prints the
// time per verification on stderr (one thread; CPU time and wall time).
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>

#include <time.h>

#include <CLI/CLI.hpp>

#include "zkfleet/common/command_line.hpp"

#include "zkfleet/common/error.hpp"
#include "zkfleet/engine/snarkjs.hpp"
#include "zkfleet/engine/verify.hpp"

namespace {

// CPU time of this thread: the cost of the work itself on one core, even on a
// busy machine.
double ThreadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"zkverify: Groth16 verifier for snarkjs JSON files (bn128, bls12381)"};
  std::string vk_path, public_path, proof_path;
  int bench = 0;
  app.add_option("verification_key", vk_path, "verification_key.json")->required();
  app.add_option("public", public_path, "public.json (public signals)")->required();
  app.add_option("proof", proof_path, "proof.json")->required();
  app.add_option("--bench", bench, "also time N verifications with the key prepared once (stderr)")
      ->check(CLI::NonNegativeNumber);
  if (auto exit_code = zkfleet::cmd::ParseCommandLine(app, argc, argv, "zkverify")) return *exit_code;

  try {
    const auto vk = zkfleet::engine::ReadVerificationKeyJson(vk_path);
    const auto signals = zkfleet::engine::ReadPublicSignalsJson(public_path);
    const auto proof = zkfleet::engine::ReadProofJson(proof_path);
    const auto result = zkfleet::engine::Verify(vk, signals, proof);
    if (bench > 0 && result.ok()) {
      const double c0 = ThreadCpuMs();
      const zkfleet::engine::PreparedVerifier prepared(vk);
      const double c1 = ThreadCpuMs();
      const auto t1 = std::chrono::steady_clock::now();
      for (int i = 0; i < bench; ++i) {
        if (!prepared.Verify(signals, proof).ok()) throw zkfleet::Error(zkfleet::ErrorCode::kInternal, "bench verify failed");
      }
      const double c2 = ThreadCpuMs();
      const auto t2 = std::chrono::steady_clock::now();
      std::fprintf(stderr,
                   "zkverify: curve=%s nPublic=%u prepare=%.3f ms verify=%.3f ms/proof cpu, %.3f ms/proof wall "
                   "(%d runs, one thread)\n",
                   zkfleet::engine::CurveName(vk.curve), vk.n_public, c1 - c0, (c2 - c1) / bench,
                   std::chrono::duration<double, std::milli>(t2 - t1).count() / bench, bench);
    }
    if (!result.ok()) {
      std::cerr << "zkverify: " << result.reason << "\n";
      return 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "zkverify: error: " << e.what() << "\n";
    return 1;
  }
  std::cout << "OK\n";
  return 0;
}
