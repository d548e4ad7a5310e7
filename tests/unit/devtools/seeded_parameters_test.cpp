// Seeded bellperson parameters (devtools/seeded_parameters.hpp): a seed
// gives the same .params bytes on every build, since files made with
// `zkfleet-dev bellman-params --seed` are kept as fixtures and benchmark
// inputs and must be made again identically; the toxic waste is the seed's
// first five scalars in bellperson's order, the verifying key their points;
// the section counts follow the circuit's densities. That proofs made with
// these parameters verify is zkfleet_bellman_prover_test's; that the CUDA
// points are the same bytes is zkfleet_cuda_parameters_test's.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "scratch_dir.hpp"
#include "zkfleet/bellman/constraint_system.hpp"
#include "zkfleet/bellman/parameters.hpp"
#include "zkfleet/bellman/seeded_scalars.hpp"
#include "zkfleet/curve/bls12_381.hpp"
#include "zkfleet/curve/point.hpp"
#include "zkfleet/devtools/seeded_parameters.hpp"

namespace zkfleet::devtools {
namespace {

using bellman::Fr;
using testing::ScratchDir;
using testing::ScratchPath;

cpu::ThreadPool& Pool() {
  static cpu::ThreadPool pool(2);
  return pool;
}

std::vector<uint8_t> FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// Points have no operator==: the same point is the same bytes (affine,
// Montgomery, (0, 0) for infinity).
template <class A>
bool Same(const A& a, const A& b) {
  return std::memcmp(&a, &b, sizeof(A)) == 0;
}

// FNV-1a, 64 bits: enough to tell one file from another here.
uint64_t Fnv1a(const std::vector<uint8_t>& bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (uint8_t b : bytes) h = (h ^ b) * 0x100000001b3ULL;
  return h;
}

struct Pinned {
  int log_rows;
  uint32_t n_public;
  uint64_t seed;  // the circuit's and the toxic waste's, as zkfleet-dev bellman-params --seed
  size_t params_bytes;
  uint64_t params_fnv;
};

// The .params files of `zkfleet-dev bellman-params --synthetic K --public N
// --seed S`.
constexpr Pinned kPinned[] = {
    {10, 3, 5, 370008, 0x493daf77925c1ccfULL},
    {13, 20, 77, 2953464, 0xdc08d72bf2da9290ULL},
};

TEST(SeededParameters, ASeedFixesEveryByteOfTheParams) {
  const ScratchPath dir = ScratchDir();
  for (const Pinned& p : kPinned) {
    SCOPED_TRACE("2^" + std::to_string(p.log_rows) + ", seed " + std::to_string(p.seed));
    const bellman::SyntheticCircuit circuit = bellman::MakeSyntheticCircuit(p.log_rows, p.n_public, p.seed);
    const bellman::Parameters params = SynthesizeParameters(circuit.cs, p.seed, Pool());
    const std::string path = (dir / "p.params").string();
    bellman::WriteParameters(path, params, Pool());
    const std::vector<uint8_t> bytes = FileBytes(path);
    EXPECT_EQ(bytes.size(), p.params_bytes);
    EXPECT_EQ(Fnv1a(bytes), p.params_fnv);
  }
}

TEST(SeededParameters, ASeedFixesEveryByteOfTheVerifyingKey) {
  const bellman::SyntheticCircuit circuit = bellman::MakeSyntheticCircuit(10, 3, 5);
  const bellman::Parameters params = SynthesizeParameters(circuit.cs, 5, Pool());
  const std::vector<uint8_t> vk = bellman::SerializeVerifyingKey(params.vk);
  EXPECT_EQ(vk.size(), 1252u);
  EXPECT_EQ(Fnv1a(vk), 0x2feaec3fcf703f3aULL);
}

TEST(SeededParameters, TheToxicWasteIsTheSeedsFirstFiveScalarsInOrder) {
  const bellman::SyntheticCircuit circuit = bellman::MakeSyntheticCircuit(8, 2, 3);
  const ParameterScalars s = ComputeParameterScalars(circuit.cs, 41, Pool());
  bellman::SeededScalars rng(41);
  EXPECT_EQ(s.tau, rng.Next());
  EXPECT_EQ(s.alpha, rng.Next());
  EXPECT_EQ(s.beta, rng.Next());
  EXPECT_EQ(s.gamma, rng.Next());
  EXPECT_EQ(s.delta, rng.Next());
  // h_base = (tau^n - 1) / delta for the domain n = 2^8.
  uint64_t n[1] = {256};
  EXPECT_EQ(s.h_base * s.delta, s.tau.pow(n, 1) - Fr::one());
  EXPECT_EQ(s.h_count, 255u);

  // The verifying key's points are those scalars times the generators.
  const bellman::Parameters params = ParametersFromScalars(s, Pool());
  const auto g1 = MulGeneratorG1({s.alpha, s.beta, s.delta}, Pool());
  const auto g2 = MulGeneratorG2({s.beta, s.gamma, s.delta}, Pool());
  EXPECT_TRUE(Same(params.vk.alpha_g1, g1[0]));
  EXPECT_TRUE(Same(params.vk.beta_g1, g1[1]));
  EXPECT_TRUE(Same(params.vk.delta_g1, g1[2]));
  EXPECT_TRUE(Same(params.vk.beta_g2, g2[0]));
  EXPECT_TRUE(Same(params.vk.gamma_g2, g2[1]));
  EXPECT_TRUE(Same(params.vk.delta_g2, g2[2]));
  EXPECT_EQ(params.vk.ic.size(), s.ic.size());
  EXPECT_TRUE(Same(params.vk.ic[0], MulGeneratorG1({s.ic[0]}, Pool())[0]));
}

TEST(SeededParameters, SectionCountsFollowTheDensities) {
  const bellman::SyntheticCircuit circuit = bellman::MakeSyntheticCircuit(9, 4, 7);
  const bellman::ConstraintSystem& cs = circuit.cs;
  const bellman::Densities d = bellman::DensitiesOf(cs);
  size_t a_dense = 0, b_dense = 0;
  for (bool x : d.a_aux) a_dense += x;
  for (bool x : d.b_input) b_dense += x;
  for (bool x : d.b_aux) b_dense += x;
  const bellman::Parameters params = SynthesizeParameters(cs, 8, Pool());
  EXPECT_EQ(params.vk.ic.size(), cs.n_inputs);
  EXPECT_EQ(params.h.size(), (size_t{1} << bellman::DomainLog(cs)) - 1);
  EXPECT_EQ(params.l.size(), cs.n_aux);
  EXPECT_EQ(params.a.size(), cs.n_inputs + a_dense);  // every input has an A point
  EXPECT_EQ(params.b_g1.size(), b_dense);
  EXPECT_EQ(params.b_g2.size(), b_dense);
}

TEST(SeededParameters, TheGeneratorMultipliesAsDoubleAndAdd) {
  bellman::SeededScalars rng(9);
  std::vector<Fr> scalars = {Fr::zero(), Fr::one(), Fr::zero() - Fr::one()};
  for (int i = 0; i < 20; ++i) scalars.push_back(rng.Next());
  const auto g1 = MulGeneratorG1(scalars, Pool());
  const auto g2 = MulGeneratorG2(scalars, Pool());
  ASSERT_EQ(g1.size(), scalars.size());
  ASSERT_EQ(g2.size(), scalars.size());
  EXPECT_TRUE(g1[0].is_infinity());
  EXPECT_TRUE(g2[0].is_infinity());
  using G1 = curve::Bls12_381G1;
  using G2 = curve::Bls12_381G2;
  for (size_t i = 0; i < scalars.size(); ++i) {
    uint64_t k[4];
    scalars[i].to_canonical(k);
    const auto want1 = curve::to_affine(curve::scalar_mul(curve::Jacobian<G1>::from_affine(G1::generator()), k, 4));
    const auto want2 = curve::to_affine(curve::scalar_mul(curve::Jacobian<G2>::from_affine(G2::generator()), k, 4));
    EXPECT_TRUE(Same(g1[i], want1)) << "G1, scalar " << i;
    EXPECT_TRUE(Same(g2[i], want2)) << "G2, scalar " << i;
  }
}

}  // namespace
}  // namespace zkfleet::devtools
