// The CUDA backend for bellperson-style assignments against the CPU one:
// the same proof, byte for byte, for fixed r and s (synthetic circuits with
// abc_size at and below the domain, both MSM modes), verified by the
// engine's verifier; bad assignments refused. Skipped without a GPU.
#include <gtest/gtest.h>

#include "zkfleet/bellman/constraint_system.hpp"
#include "zkfleet/bellman/parameters.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/engine/bellman.hpp"
#include "zkfleet/engine/proving_key.hpp"
#include "zkfleet/groth16/assignment_cuda_prover.hpp"
#include "zkfleet/groth16/assignment_key.hpp"
#include "zkfleet/runtime/cuda_device.hpp"

namespace zkfleet {
namespace {

engine::ProveOptions Fixed(uint8_t r, uint8_t s) {
  engine::ProveOptions o;
  o.r.emplace();
  o.s.emplace();
  o.r->fill(0);
  o.s->fill(0);
  (*o.r)[0] = r;
  (*o.s)[0] = s;
  return o;
}

engine::BellmanKey Key(const bellman::Parameters& params, bool cuda, bool overlap = true) {
  engine::EngineOptions options{cuda ? engine::Backend::kCuda : engine::Backend::kCpu, 0};
  options.cuda_overlap_msms = overlap;
  auto backend = cuda ? cuda::MakeCudaAssignmentKey(params, options) : groth16::MakeCpuAssignmentKey(params, options);
  return engine::BellmanKey(std::move(backend), bellman::SerializeVerifyingKey(params.vk), bellman::ToEngineKey(params.vk));
}

class CudaAssignment : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!engine::CudaAvailable()) GTEST_SKIP() << "no CUDA device (or driver) present: GPU tests need an NVIDIA GPU";
  }
};

TEST_F(CudaAssignment, SameBytesAsTheCpuForFixedBlinding) {
  cpu::ThreadPool pool(0);
  for (int log_rows : {6, 10, 14}) {
    for (int trim : {0, 33}) {
      bellman::SyntheticCircuit c = bellman::MakeSyntheticCircuit(log_rows, 3, 100 + log_rows);
      for (auto* lc : {&c.cs.a, &c.cs.b, &c.cs.c}) {  // abc_size below the domain
        lc->start.resize(lc->start.size() - trim);
        lc->terms.resize(lc->start.back());
      }
      const bellman::Parameters params = bellman::SynthesizeParameters(c.cs, 7, pool);
      const bellman::Assignment a = bellman::Synthesize(c.cs, c.values, pool);
      const engine::BellmanProof cpu = Key(params, false).Prove(a.View(), Fixed(3, 5));
      for (bool overlap : {true, false}) {
        const engine::BellmanProof gpu = Key(params, true, overlap).Prove(a.View(), Fixed(3, 5));
        EXPECT_TRUE(gpu.check.verified) << log_rows;
        EXPECT_TRUE(gpu.check.engine_fault.empty()) << gpu.check.engine_fault;
        EXPECT_EQ(gpu.bytes, cpu.bytes) << "2^" << log_rows << " trim " << trim << " overlap " << overlap;
      }
    }
  }
}

TEST_F(CudaAssignment, ManyProofsOnOneKeyAndBadAssignmentsRefused) {
  cpu::ThreadPool pool(0);
  const bellman::SyntheticCircuit c = bellman::MakeSyntheticCircuit(12, 2, 9);
  const bellman::Parameters params = bellman::SynthesizeParameters(c.cs, 3, pool);
  const bellman::Assignment a = bellman::Synthesize(c.cs, c.values, pool);
  const engine::BellmanKey key = Key(params, true);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(key.Prove(a.View()).check.verified);
  bellman::Assignment bad = a;
  bad.c[100][0] ^= 1;
  EXPECT_THROW((void)key.Prove(bad.View()), Error);
  bad = a;
  size_t j = 0;  // two aux values that differ (a bit and its square do not)
  while (bad.aux[j] == bad.aux[j + 1]) ++j;
  bad.aux[j] = bad.aux[j + 1];
  try {
    (void)key.Prove(bad.View());
    ADD_FAILURE() << "a proof that does not verify was returned";
  } catch (const Error& e) {
    // Built in memory, this device key has no CPU reference: it cannot tell
    // the assignment's fault from its own.
    EXPECT_EQ(e.code(), ErrorCode::kInternal) << e.what();
    EXPECT_NE(std::string(e.what()).find("no CPU reference"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(key.Prove(a.View()).check.verified);  // the key is still good
}

}  // namespace
}  // namespace zkfleet
