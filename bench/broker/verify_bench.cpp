// verify_bench: what the broker pays, on one thread, to verify one worker
// RESULT before storing it (broker/zkfleet/broker/result_verifier.hpp):
//
//   verify_bench [--fixture DIR] [--n 200]
//
// DIR holds a snarkjs verification_key.json, proof.json, public.json and
// witness.wtns (default: the bundled BN254 2^12 circuit, tests/fixtures/bn128_k12;
// nPublic comes from its key). Prints the median and p90 over --n runs of:
//   verdict   VerifyResultNow: parse proof.json and public.json, compare the
//             public signals with the witness's, Verify (the broker's cost);
//   verify    PreparedVerifier::Verify alone (points, ranges, pairing);
//   witness   PublicSignalsOfWitness on the .wtns cut into 4 MiB frames.
// Exits 1 when the fixture's proof does not verify.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "zkfleet/broker/result_verifier.hpp"
#include "zkfleet/broker/verification_keys.hpp"
#include "zkfleet/fleet/frames.hpp"
#include "zkfleet/engine/snarkjs.hpp"

namespace {

using Clock = std::chrono::steady_clock;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

template <class Fn>
std::vector<double> Time(int n, Fn&& fn) {
  std::vector<double> seconds;
  seconds.reserve(n);
  for (int i = 0; i < n; ++i) {
    const auto start = Clock::now();
    fn();
    seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds;
}

void Print(const char* what, const std::vector<double>& sorted) {
  std::printf("%-8s median %9.1f us   p90 %9.1f us   min %9.1f us   (n=%zu)\n", what, sorted[sorted.size() / 2] * 1e6,
              sorted[sorted.size() * 9 / 10] * 1e6, sorted.front() * 1e6, sorted.size());
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = std::string(ZKFLEET_FIXTURES_DIR) + "/bn128_k12";
  int n = 200;
  CLI::App app{"verify_bench: the broker's per-RESULT verification cost on one thread"};
  app.add_option("--fixture", dir, "directory with verification_key.json, proof.json, public.json, witness.wtns")
      ->capture_default_str();
  app.add_option("--n", n, "runs per measurement (the median is printed)")->capture_default_str()->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  try {
    const auto keys = zkfleet::broker::VerificationKeys::Load({"bench=" + dir + "/verification_key.json"});
    const zkfleet::broker::VerificationKeys::Entry& entry = *keys.Find("bench");
    zkfleet::broker::VerifyTask task;
    task.id = 1;
    task.verifier = entry.verifier;
    task.proof_json = Slurp(dir + "/proof.json");
    task.public_json = Slurp(dir + "/public.json");
    const zkfleet::fleet::WitnessFrames witness =
        zkfleet::fleet::ChunkWitness(zkfleet::fleet::FrameFromString(Slurp(dir + "/witness.wtns")));
    std::string why;
    task.expected_public = zkfleet::broker::PublicSignalsOfWitness(witness, entry.n_public, &why);
    if (!task.expected_public) {
      std::fprintf(stderr, "verify_bench: %s\n", why.c_str());
      return 1;
    }
    const zkfleet::broker::VerifyVerdict check = zkfleet::broker::VerifyResultNow(task);
    if (!check.ok) {
      std::fprintf(stderr, "verify_bench: the fixture's proof does not verify: %s\n", check.why.c_str());
      return 1;
    }
    std::printf("verify_bench: %s (%s, nPublic %u), one thread\n", dir.c_str(), zkfleet::engine::CurveName(entry.curve),
                entry.n_public);
    const zkfleet::engine::ProofPoints proof = zkfleet::engine::ParseProofJson(task.proof_json, "proof.json");
    const std::vector<zkfleet::engine::BigInt> signals =
        zkfleet::engine::ParsePublicSignalsJson(task.public_json, "public.json");
    bool all_ok = true;
    Print("verdict", Time(n, [&] { all_ok &= zkfleet::broker::VerifyResultNow(task).ok; }));
    Print("verify", Time(n, [&] { all_ok &= entry.verifier->Verify(signals, proof).ok(); }));
    Print("witness", Time(n, [&] { all_ok &= zkfleet::broker::PublicSignalsOfWitness(witness, entry.n_public, &why).has_value(); }));
    if (!all_ok) {
      std::fprintf(stderr, "verify_bench: a timed run failed\n");
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "verify_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
