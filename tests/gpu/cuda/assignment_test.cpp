// The CUDA backend for bellperson-style assignments against the CPU one:
// the same proof, byte for byte, for fixed r and s (synthetic circuits with
// abc_size at and below the domain, both MSM modes), verified by the
// engine's verifier; bad assignments refused. Skipped without a GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>

#include "testutil/require_gpu.hpp"
#include "zkfleet/bellman/constraint_system.hpp"
#include "zkfleet/bellman/parameters.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/devtools/seeded_parameters.hpp"
#include "zkfleet/engine/bellman.hpp"
#include "zkfleet/engine/proving_key.hpp"
#include "zkfleet/groth16/assignment_cuda_prover.hpp"
#include "zkfleet/groth16/assignment_key.hpp"
#include "zkfleet/groth16/assignment_memory_plan.hpp"
#include "zkfleet/runtime/cuda_device.hpp"
#include "../../unit/bellman/bellman_test_util.hpp"

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

engine::BellmanKey Key(const bellman::Parameters& params, bool cuda, bool overlap = true, uint64_t budget = 0) {
  engine::EngineOptions options{cuda ? engine::Backend::kCuda : engine::Backend::kCpu, 0};
  options.cuda_overlap_msms = overlap;
  options.device_memory_budget = budget;
  auto backend = cuda ? cuda::MakeCudaAssignmentKey(params, options) : groth16::MakeCpuAssignmentKey(params, options);
  return engine::BellmanKey(std::move(backend), bellman::SerializeVerifyingKey(params.vk), bellman::ToEngineKey(params.vk));
}

class CudaAssignment : public ::testing::Test {
 protected:
  void SetUp() override {
    ZKFLEET_SKIP_UNLESS_GPU(engine::CudaAvailable(), "no CUDA device (or driver) present: GPU tests need an NVIDIA GPU");
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
      const bellman::Parameters params = devtools::SynthesizeParameters(c.cs, 7, pool);
      const bellman::Assignment a = bellman::Synthesize(c.cs, c.values, pool);
      const engine::BellmanProof cpu = Key(params, false).Prove(a.View(), Fixed(3, 5));
      for (bool overlap : {true, false}) {
        // Without overlap the points are resident and the MSMs run in chunks.
        const engine::BellmanKey key = Key(params, true, overlap);
        EXPECT_NE(key.info().placement.find(overlap ? "resident, overlapped" : "resident, chunked"), std::string::npos)
            << key.info().placement;
        const engine::BellmanProof gpu = key.Prove(a.View(), Fixed(3, 5));
        EXPECT_TRUE(gpu.check.verified) << log_rows;
        EXPECT_TRUE(gpu.check.engine_fault.empty()) << gpu.check.engine_fault;
        EXPECT_EQ(gpu.bytes, cpu.bytes) << "2^" << log_rows << " trim " << trim << " overlap " << overlap;
      }
    }
  }
}

// Budgets, from the overlapped resident need down, until none fits, whose
// plan is `placement`: one in the middle and the smallest (for a chunked
// placement, the one with the smallest chunks).
std::vector<uint64_t> BudgetsFor(const bellman::Parameters& params, groth16::DevicePlacement placement) {
  const engine::BellmanInfo shape = groth16::ShapeOf(params);
  engine::EngineOptions options{engine::Backend::kCuda, 0};
  options.device_memory_budget = uint64_t{1} << 40;
  const uint64_t resident = cuda::PlanCudaAssignmentKey(shape, options).device_bytes;
  std::vector<uint64_t> found;
  // Fine steps: for a small circuit the budgets that stream lie in a narrow
  // band (below the resident chunked need by the points' bytes, less two
  // chunk buffers).
  for (uint64_t budget = resident - 1; budget > 0; budget = budget * 255 / 256) {
    options.device_memory_budget = budget;
    try {
      if (cuda::PlanCudaAssignmentKey(shape, options).placement == placement) found.push_back(budget);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted) << e.what();
      break;
    }
  }
  if (found.empty()) return {};
  return {found[found.size() / 2], found.back()};
}
std::vector<uint64_t> StreamingBudgets(const bellman::Parameters& params) {
  return BudgetsFor(params, groth16::DevicePlacement::kStreaming);
}

// Budgets between the overlapped need and the streamed one keep every point
// on the device and run the MSMs in chunks: the CPU's bytes, the budget kept.
TEST_F(CudaAssignment, ResidentInChunksUnderADeviceMemoryBudgetSameBytesAsTheCpu) {
  cpu::ThreadPool pool(0);
  for (int log_rows : {10, 14}) {
    bellman::SyntheticCircuit c = bellman::MakeSyntheticCircuit(log_rows, 3, 300 + log_rows);
    const bellman::Parameters params = devtools::SynthesizeParameters(c.cs, 11, pool);
    const bellman::Assignment a = bellman::Synthesize(c.cs, c.values, pool);
    const engine::BellmanProof cpu = Key(params, false).Prove(a.View(), Fixed(3, 5));
    const std::vector<uint64_t> budgets = BudgetsFor(params, groth16::DevicePlacement::kResidentChunked);
    ASSERT_EQ(budgets.size(), 2u) << "no budget keeps these parameters resident in chunks";
    for (uint64_t budget : budgets) {
      const uint64_t live_before = cuda::AllocationStats().device_bytes_live;
      const uint64_t registered_before = cuda::AllocationStats().registered_bytes_live;
      {
        const engine::BellmanKey key = Key(params, true, true, budget);
        const uint64_t held = cuda::AllocationStats().device_bytes_live - live_before;
        EXPECT_NE(key.info().placement.find("resident, chunked MSMs (chunks of"), std::string::npos)
            << key.info().placement;
        EXPECT_LE(held, budget) << key.info().placement;
        // The host's points were page-locked only for their upload.
        EXPECT_EQ(cuda::AllocationStats().registered_bytes_live, registered_before);
        for (int i = 0; i < 2; ++i) {
          const engine::BellmanProof gpu = key.Prove(a.View(), Fixed(3, 5));
          EXPECT_TRUE(gpu.check.verified);
          EXPECT_TRUE(gpu.check.engine_fault.empty()) << gpu.check.engine_fault;
          EXPECT_EQ(gpu.bytes, cpu.bytes) << "2^" << log_rows << " " << key.info().placement;
        }
        EXPECT_EQ(cuda::AllocationStats().device_bytes_live - live_before, held) << "a proof allocated device memory";
      }
      EXPECT_EQ(cuda::AllocationStats().device_bytes_live, live_before) << "the key left device memory behind";
    }
  }
}

TEST_F(CudaAssignment, StreamedUnderADeviceMemoryBudgetSameBytesAsTheCpu) {
  cpu::ThreadPool pool(0);
  for (int log_rows : {10, 14}) {
    for (int trim : {0, 33}) {
      bellman::SyntheticCircuit c = bellman::MakeSyntheticCircuit(log_rows, 3, 200 + log_rows);
      for (auto* lc : {&c.cs.a, &c.cs.b, &c.cs.c}) {
        lc->start.resize(lc->start.size() - trim);
        lc->terms.resize(lc->start.back());
      }
      const bellman::Parameters params = devtools::SynthesizeParameters(c.cs, 11, pool);
      const bellman::Assignment a = bellman::Synthesize(c.cs, c.values, pool);
      const engine::BellmanProof cpu = Key(params, false).Prove(a.View(), Fixed(3, 5));
      const std::vector<uint64_t> budgets = StreamingBudgets(params);
      ASSERT_EQ(budgets.size(), 2u) << "no budget makes these parameters stream";
      for (uint64_t budget : budgets) {
        const uint64_t live_before = cuda::AllocationStats().device_bytes_live;
        const uint64_t registered_before = cuda::AllocationStats().registered_bytes_live;
        {
          const engine::BellmanKey key = Key(params, true, true, budget);
          const uint64_t held = cuda::AllocationStats().device_bytes_live - live_before;
          EXPECT_NE(key.info().placement.find("streamed"), std::string::npos) << key.info().placement;
          EXPECT_NE(key.info().placement.find(" chunk point buffers"), std::string::npos) << key.info().placement;
          std::printf("2^%d trim %d budget %llu: %s\n", log_rows, trim, static_cast<unsigned long long>(budget),
                      key.info().placement.c_str());
          EXPECT_LE(held, budget) << key.info().placement;
          // The points are page-locked where the parameters were decoded (no
          // copy into cudaHostAlloc'd blocks), and unlocked with the key.
          EXPECT_NE(key.info().placement.find("page-locked in place"), std::string::npos) << key.info().placement;
          EXPECT_GT(cuda::AllocationStats().registered_bytes_live, registered_before);
          for (int i = 0; i < 2; ++i) {  // the second proof reuses the cached indices and the arena
            const engine::BellmanProof gpu = key.Prove(a.View(), Fixed(3, 5));
            EXPECT_TRUE(gpu.check.verified);
            EXPECT_TRUE(gpu.check.engine_fault.empty()) << gpu.check.engine_fault;
            EXPECT_EQ(gpu.bytes, cpu.bytes) << "2^" << log_rows << " trim " << trim << " " << key.info().placement;
          }
          EXPECT_EQ(cuda::AllocationStats().device_bytes_live - live_before, held) << "a proof allocated device memory";
        }  // the key goes
        EXPECT_EQ(cuda::AllocationStats().registered_bytes_live, registered_before);
      }
    }
  }
}

// KeyOptions::validate_key on the CUDA key: every point checked on the
// device, resident (overlapped or chunked) or streamed, the bad one named as the CPU reader names it.
TEST_F(CudaAssignment, BadPointsAreFoundOnTheDeviceResidentOrStreamed) {
  cpu::ThreadPool pool(0);
  const bellman::SyntheticCircuit c = bellman::MakeSyntheticCircuit(10, 2, 6);
  const bellman::Parameters good = devtools::SynthesizeParameters(c.cs, 4, pool);
  const std::vector<uint64_t> budgets = StreamingBudgets(good);
  ASSERT_FALSE(budgets.empty());
  const std::vector<uint64_t> chunked = BudgetsFor(good, groth16::DevicePlacement::kResidentChunked);
  ASSERT_FALSE(chunked.empty());
  struct Case {
    const char* want;
    std::function<void(bellman::Parameters&)> spoil;
  };
  const Case cases[] = {
      {"l[5]: not on the curve", [](bellman::Parameters& p) { p.l[5].y = p.l[5].y + bellman::testing::Fq::one(); }},
      {"a[7]: not in the prime-order subgroup", [](bellman::Parameters& p) { p.a[7] = bellman::testing::G1OutsideSubgroup(); }},
      {"b_g2[3]: not in the prime-order subgroup",
       [](bellman::Parameters& p) { p.b_g2[3] = bellman::testing::G2OutsideSubgroup(); }},
      {"h[1000]: not on the curve", [](bellman::Parameters& p) { p.h[1000].x = p.h[1000].x + bellman::testing::Fq::one(); }},
  };
  for (const Case& k : cases) {
    bellman::Parameters bad = good;
    k.spoil(bad);
    for (uint64_t budget : {uint64_t{0}, chunked.back(), budgets.back()}) {
      try {
        (void)Key(bad, true, true, budget);
        ADD_FAILURE() << "accepted parameters with " << k.want << " (budget " << budget << ")";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kBadFormat) << e.what();
        EXPECT_EQ(std::string(e.what()), std::string("bellman parameters: ") + k.want + " (checked on the device)");
      }
    }
  }
  // Without the check they load (the proof's verification is then the only guard).
  bellman::Parameters bad = good;
  bad.l[5].y = bad.l[5].y + bellman::testing::Fq::one();
  engine::EngineOptions unchecked{engine::Backend::kCuda, 0};
  unchecked.validate_key = false;
  EXPECT_NO_THROW((void)cuda::MakeCudaAssignmentKey(bad, unchecked));
}

TEST_F(CudaAssignment, ABudgetThatCannotHoldTheParametersIsRefusedNamingIt) {
  cpu::ThreadPool pool(0);
  const bellman::SyntheticCircuit c = bellman::MakeSyntheticCircuit(12, 2, 5);
  const bellman::Parameters params = devtools::SynthesizeParameters(c.cs, 3, pool);
  try {
    (void)Key(params, true, true, uint64_t{64} << 10);
    ADD_FAILURE() << "a 64 KiB budget was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted) << e.what();
    EXPECT_NE(std::string(e.what()).find("device memory budget of 64 KiB"), std::string::npos) << e.what();
  }
  // Without a budget they are resident.
  EXPECT_NE(Key(params, true).info().placement.find("resident"), std::string::npos);
}

TEST_F(CudaAssignment, ManyProofsOnOneKeyAndBadAssignmentsRefused) {
  cpu::ThreadPool pool(0);
  const bellman::SyntheticCircuit c = bellman::MakeSyntheticCircuit(12, 2, 9);
  const bellman::Parameters params = devtools::SynthesizeParameters(c.cs, 3, pool);
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
