// engine::WitnessFile: the witness zkprove proves, read for a backend. Here
// (no GPU, or the CPU backend) it must be exactly Witness::FromFile: same
// values, same errors. The page-locked path is tested on the GPU
// (tests/gpu/cuda/device_test.cpp, CudaProof.ViewWitnessFromPinnedAndPageableMemory).
#include "zkfleet/engine/witness_file.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "testutil/test_support.hpp"
#include "zkfleet/common/error.hpp"

namespace {

using zkfleet::engine::Backend;
using zkfleet::engine::Witness;
using zkfleet::engine::WitnessFile;
using zkfleet::testing::Fixture;

void ExpectSameValues(const Witness& got, const Witness& want) {
  ASSERT_EQ(got.count(), want.count());
  ASSERT_EQ(got.n8(), want.n8());
  EXPECT_EQ(got.prime(), want.prime());
  EXPECT_EQ(0, std::memcmp(got.values(), want.values(), size_t{got.count()} * got.n8()));
}

TEST(WitnessFile, IsFromFileOnTheCpuAndWithoutAGpu) {
  for (const char* curve : {"bn128_k12", "bls12381_k12"}) {
    const std::string path = Fixture(curve, "witness.wtns");
    const Witness want = Witness::FromFile(path);
    const WitnessFile cpu = WitnessFile::Read(path, Backend::kCpu, /*proofs=*/2);
    EXPECT_FALSE(cpu.page_locked());
    ExpectSameValues(cpu.witness(), want);
    const WitnessFile cuda = WitnessFile::Read(path, Backend::kCuda, /*proofs=*/2);
    // Page-locked only where a GPU can use it.
    if (!zkfleet::engine::CudaAvailable()) EXPECT_FALSE(cuda.page_locked());
    ExpectSameValues(cuda.witness(), want);
    EXPECT_EQ(cuda.witness().origin(), path);
  }
}

TEST(WitnessFile, BadFilesFailAsFromFileDoes) {
  zkfleet::testing::TempDir dir;
  const std::string good = zkfleet::testing::ReadFile(Fixture("bn128_k12", "witness.wtns"));
  const std::string truncated = dir.file("truncated.wtns"), empty = dir.file("empty.wtns");
  zkfleet::testing::WriteFile(truncated, good.substr(0, good.size() - 7));
  zkfleet::testing::WriteFile(empty, "");
  for (const std::string& path : {truncated, empty, dir.file("missing.wtns")}) {
    std::string want;
    try {
      (void)Witness::FromFile(path);
    } catch (const zkfleet::Error& e) {
      want = e.what();
    }
    ASSERT_FALSE(want.empty()) << path << " was accepted by FromFile";
    for (Backend backend : {Backend::kCpu, Backend::kCuda, Backend::kAuto}) {
      try {
        (void)WitnessFile::Read(path, backend, /*proofs=*/2);
        ADD_FAILURE() << path << " was accepted (" << zkfleet::engine::BackendName(backend) << ")";
      } catch (const zkfleet::Error& e) {
        EXPECT_EQ(std::string(e.what()), want) << zkfleet::engine::BackendName(backend);
      }
    }
  }
}

}  // namespace
