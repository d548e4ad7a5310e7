// DensityIndexCache (assignment_cuda_steps.cuh).
#include "zkfleet/runtime/hd_host_inline.hpp"  // first: see there
#include "zkfleet/groth16/assignment_cuda_steps.cuh"

#include "zkfleet/common/error.hpp"
#include "zkfleet/curve/subgroup.hpp"
#include "zkfleet/groth16/cuda_point_check.cuh"

namespace zkfleet::cuda::assignment {
namespace {

// The density bitmaps' words covering `bits` bits, the bits past them cleared
// (callers may pass longer spans): what the cached index arrays are keyed on.
std::vector<uint64_t> Normalized(std::span<const uint64_t> words, size_t bits) {
  std::vector<uint64_t> out(words.begin(), words.begin() + (bits + 63) / 64);
  if (bits % 64) out.back() &= (uint64_t{1} << (bits % 64)) - 1;
  return out;
}

}  // namespace

void DensityIndexCache::Update(const engine::AssignmentView& v, const engine::BellmanInfo& info, uint32_t* index_a,
                               uint32_t* index_b, cudaStream_t stream) {
  std::vector<uint64_t> a_aux = Normalized(v.a_aux_density, info.n_aux);
  std::vector<uint64_t> b_inp = Normalized(v.b_input_density, info.n_inputs);
  std::vector<uint64_t> b_aux = Normalized(v.b_aux_density, info.n_aux);
  if (valid_ && a_aux == a_aux_ && b_inp == b_inp_ && b_aux == b_aux_) return;
  valid_ = false;
  auto bit = [](const std::vector<uint64_t>& w, size_t i) { return (w[i / 64] >> (i % 64)) & 1; };
  const uint32_t n_in = info.n_inputs;
  std::vector<uint32_t> a_idx, b_idx;
  a_idx.reserve(info.n_a);
  b_idx.reserve(info.n_b);
  for (uint32_t i = 0; i < n_in; ++i) {
    a_idx.push_back(i);
    if (bit(b_inp, i)) b_idx.push_back(i);
  }
  for (uint32_t j = 0; j < info.n_aux; ++j) {
    if (bit(a_aux, j)) a_idx.push_back(n_in + j);
    if (bit(b_aux, j)) b_idx.push_back(n_in + j);
  }
  // CheckAssignmentShape matched the popcounts to the parameters.
  if (a_idx.size() != info.n_a || b_idx.size() != info.n_b) {
    throw Error(ErrorCode::kInternal, "assignment densities: index counts differ from the checked popcounts");
  }
  a_idx_ = std::move(a_idx);
  b_idx_ = std::move(b_idx);
  CopyToDeviceAsync(index_a, a_idx_.data(), a_idx_.size() * 4, stream, "a scalar indices");
  CopyToDeviceAsync(index_b, b_idx_.data(), b_idx_.size() * 4, stream, "b scalar indices");
  a_aux_ = std::move(a_aux);
  b_inp_ = std::move(b_inp);
  b_aux_ = std::move(b_aux);
  valid_ = true;
}

}  // namespace zkfleet::cuda::assignment

namespace zkfleet::cuda {

namespace {
template <class Cfg>
std::string WhyBad(const curve::Affine<Cfg>& p) {
  if (p.is_infinity()) return "";
  if (!curve::is_on_curve(p)) return "not on the curve";
  if (!curve::InPrimeOrderSubgroup(p)) return "not in the prime-order subgroup";
  return "";
}
}  // namespace

void CheckBellmanPointsOnDevice(const char* section, const void* device_points, const void* host_points, uint64_t count,
                                bool g2, uint64_t first_index, cudaStream_t stream) {
  using namespace assignment;
  const std::string what = std::string("bellman parameters: checking ") + section + " on the device";
  const uint64_t bad = g2 ? FirstBadPoint<G2>(device_points, count, stream, what)
                          : FirstBadPoint<G1>(device_points, count, stream, what);
  if (bad >= count) return;
  const std::string why = g2 ? WhyBad(static_cast<const A2*>(host_points)[bad])
                             : WhyBad(static_cast<const A1*>(host_points)[bad]);
  const std::string where = std::string(section) + "[" + std::to_string(first_index + bad) + "]";
  if (why.empty()) {
    throw Error(ErrorCode::kInternal, what + ": the device rejected " + where + ", which the host's check accepts");
  }
  throw Error(ErrorCode::kBadFormat, "bellman parameters: " + where + ": " + why + " (checked on the device)");
}

}  // namespace zkfleet::cuda
