#include "zkfleet/groth16/assignment_key.hpp"

#include <bit>
#include <cstring>
#include <string>

#include "zkfleet/common/error.hpp"
#include "zkfleet/ff/bls12_381.hpp"

namespace zkfleet::groth16 {
namespace {

using Fr = ff::Bls12_381Fr;

size_t PopCount(std::span<const uint64_t> words, size_t bits) {
  size_t count = 0;
  for (size_t w = 0; w < bits / 64; ++w) count += std::popcount(words[w]);
  if (bits % 64) count += std::popcount(words[bits / 64] & ((uint64_t{1} << (bits % 64)) - 1));
  return count;
}

bool Bit(std::span<const uint64_t> words, size_t i) { return (words[i / 64] >> (i % 64)) & 1; }

[[noreturn]] void Mismatch(const std::string& what, size_t got, size_t want) {
  throw Error(ErrorCode::kMismatch, "assignment does not fit the parameters: " + what + " is " + std::to_string(got) +
                                        ", the parameters need " + std::to_string(want));
}

void ToCanonical(const engine::FrMont& mont, uint64_t* out) { Fr::from_mont(mont.data()).to_canonical(out); }

}  // namespace

engine::BellmanInfo ShapeOf(const bellman::Parameters& params) {
  engine::BellmanInfo info;
  info.n_inputs = static_cast<uint32_t>(params.vk.ic.size());
  info.n_aux = static_cast<uint32_t>(params.l.size());
  info.domain_size = static_cast<uint32_t>(params.h.size() + 1);
  info.n_a = static_cast<uint32_t>(params.a.size());
  info.n_b = static_cast<uint32_t>(params.b_g1.size());
  return info;
}

void CheckAssignmentShape(const engine::AssignmentView& v, const engine::BellmanInfo& info) {
  if (v.input.size() != info.n_inputs) Mismatch("the input count", v.input.size(), info.n_inputs);
  if (v.aux.size() != info.n_aux) Mismatch("the aux count", v.aux.size(), info.n_aux);
  if (v.a.size() != v.b.size() || v.a.size() != v.c.size()) {
    throw Error(ErrorCode::kMismatch, "assignment: a, b and c have different lengths (" + std::to_string(v.a.size()) +
                                          ", " + std::to_string(v.b.size()) + ", " + std::to_string(v.c.size()) + ")");
  }
  if (v.a.size() > info.domain_size) Mismatch("abc_size", v.a.size(), info.domain_size);
  const auto words = [](size_t bits) { return (bits + 63) / 64; };
  if (v.a_aux_density.size() < words(info.n_aux)) Mismatch("the a_aux density's word count", v.a_aux_density.size(), words(info.n_aux));
  if (v.b_aux_density.size() < words(info.n_aux)) Mismatch("the b_aux density's word count", v.b_aux_density.size(), words(info.n_aux));
  if (v.b_input_density.size() < words(info.n_inputs)) {
    Mismatch("the b_input density's word count", v.b_input_density.size(), words(info.n_inputs));
  }
  const size_t n_a = info.n_inputs + PopCount(v.a_aux_density, info.n_aux);
  if (n_a != info.n_a) Mismatch("inputs + the a_aux density's popcount", n_a, info.n_a);
  const size_t n_b = PopCount(v.b_input_density, info.n_inputs) + PopCount(v.b_aux_density, info.n_aux);
  if (n_b != info.n_b) Mismatch("the b densities' popcount", n_b, info.n_b);
  if (info.n_inputs == 0 || !(Fr::from_mont(v.input[0].data()) == Fr::one())) {
    throw Error(ErrorCode::kMismatch, "assignment: input 0 must be the constant one");
  }
}

PackedScalars PackScalars(const engine::AssignmentView& v, ThreadPool& pool) {
  PackedScalars out;
  const size_t n_in = v.input.size(), n_aux = v.aux.size();
  out.l.resize(n_aux * 4);
  pool.ParallelFor(n_aux, [&](size_t lo, size_t hi) {
    for (size_t j = lo; j < hi; ++j) ToCanonical(v.aux[j], &out.l[j * 4]);
  });
  // The packing follows the densities in order: sequential, it is a copy.
  auto push = [](std::vector<uint64_t>& dst, const uint64_t* canonical) { dst.insert(dst.end(), canonical, canonical + 4); };
  uint64_t tmp[4];
  for (size_t i = 0; i < n_in; ++i) {
    ToCanonical(v.input[i], tmp);
    push(out.a, tmp);
    if (Bit(v.b_input_density, i)) push(out.b, tmp);
  }
  for (size_t j = 0; j < n_aux; ++j) {
    if (Bit(v.a_aux_density, j)) push(out.a, &out.l[j * 4]);
    if (Bit(v.b_aux_density, j)) push(out.b, &out.l[j * 4]);
  }
  return out;
}

}  // namespace zkfleet::groth16
