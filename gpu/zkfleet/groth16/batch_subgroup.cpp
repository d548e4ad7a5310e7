#include "zkfleet/groth16/batch_subgroup.hpp"

#include <sodium.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "zkfleet/common/error.hpp"
#include "zkfleet/curve/bn254.hpp"
#include "zkfleet/curve/point.hpp"
#include "zkfleet/curve/subgroup.hpp"
#include "zkfleet/msm/cpu_msm.hpp"

namespace zkfleet::groth16 {
namespace {

using Cfg = curve::Bn254G2;
using Affine = curve::Affine<Cfg>;
using Xyzz = curve::Xyzz<Cfg>;

// How each round's coefficients are written: `windows` signed digits of
// `bits` bits, each uniform in [-(2^(bits-1) - 1), 2^(bits-1)], so that a
// coefficient is uniform over 2^(windows·bits) consecutive integers. A window
// has 2^(bits-1) buckets per round (bucket k: digit magnitude k + 1).
//   2 x 8 bits: 2 additions per point and round, 2 x 128 buckets to reduce;
//   1 x 14 bits: 1 addition per point and round, 8192 buckets to reduce, for
//   slices of many points. 2^14 / 10069 < 2: a bad point passes a round for
//   at most 2 of the 16384 coefficients (2^-13; 10 rounds: 2^-130).
struct Plan {
  int windows;
  int bits;
  size_t buckets() const { return size_t{1} << (bits - 1); }
  size_t random_bytes() const { return bits <= 8 ? 1 : 2; }  // per digit
};
constexpr Plan kSmallPlan{2, 8};
constexpr Plan kLargePlan{1, 14};
// Points per slice from which kLargePlan is cheaper: each bucket costs about
// three of the batched additions to reduce.
constexpr uint64_t kLargePlanMinPoints = 32768;
// Points per chunk: the unit of randomness (one draw, one derived seed) and of
// the copy into aligned memory.
constexpr uint64_t kChunk = 2048;
constexpr size_t kPointBytes = sizeof(Affine);  // 4 coordinates of 32 bytes, as stored
static_assert(kPointBytes == 128);

// The random bytes of chunk `chunk`: libsodium's CSPRNG, or (tests) a stream
// keyed by BLAKE2b(seed || chunk), the same whatever the threads.
void ChunkRandomness(const BatchSubgroupOptions& options, uint64_t chunk, uint8_t* out, size_t size) {
  if (size == 0) return;  // a chunk of points at infinity (out may be null)
  if (!options.test_seed) {
    randombytes_buf(out, size);
    return;
  }
  unsigned char key[randombytes_SEEDBYTES];
  crypto_generichash_state state;
  crypto_generichash_init(&state, nullptr, 0, sizeof(key));
  crypto_generichash_update(&state, options.test_seed, 32);
  crypto_generichash_update(&state, reinterpret_cast<const unsigned char*>(&chunk), sizeof(chunk));
  crypto_generichash_final(&state, key, sizeof(key));
  randombytes_buf_deterministic(out, size, key);
}

// sum_k (k + 1) · bucket[k] of each (round, window) group, for the points of
// chunks [first_chunk, last_chunk).
std::vector<Xyzz> SliceSums(const uint8_t* points, uint64_t count, uint64_t first_chunk, uint64_t last_chunk,
                            const Plan& plan, const BatchSubgroupOptions& options) {
  const size_t groups = static_cast<size_t>(options.rounds) * plan.windows;
  const size_t nbuckets = plan.buckets();
  const uint32_t digit_mask = (1u << plan.bits) - 1;
  const int digit_offset = static_cast<int>(nbuckets) - 1;
  cpu::msm_detail::AffineBuckets<Cfg> buckets(groups * nbuckets);
  std::vector<Affine> chunk_points;
  std::vector<uint8_t> random;
  std::vector<uint32_t> index;
  std::vector<int32_t> digits;
  for (uint64_t chunk = first_chunk; chunk < last_chunk; ++chunk) {
    const uint64_t begin = chunk * kChunk, end = std::min(count, begin + kChunk);
    chunk_points.clear();
    for (uint64_t i = begin; i < end; ++i) {
      Affine p;
      std::memcpy(static_cast<void*>(&p), points + i * kPointBytes, kPointBytes);
      if (!p.is_infinity()) chunk_points.push_back(p);
    }
    random.resize(chunk_points.size() * groups * plan.random_bytes());
    ChunkRandomness(options, chunk, random.data(), random.size());
    // Point-major: one point's digits go to different groups, so they never
    // wait on one another within a batch of affine additions.
    index.clear();
    digits.clear();
    const uint8_t* r = random.data();
    for (size_t j = 0; j < chunk_points.size(); ++j) {
      for (size_t g = 0; g < groups; ++g) {
        uint32_t value = *r++;
        if (plan.random_bytes() == 2) value |= static_cast<uint32_t>(*r++) << 8;
        const int digit = static_cast<int>(value & digit_mask) - digit_offset;  // [-(2^(bits-1) - 1), 2^(bits-1)]
        if (digit == 0) continue;
        const int32_t bucket_plus_one = static_cast<int32_t>(g * nbuckets) + (digit > 0 ? digit : -digit);
        index.push_back(static_cast<uint32_t>(j));
        digits.push_back(digit > 0 ? bucket_plus_one : -bucket_plus_one);
      }
    }
    buckets.Accumulate(chunk_points.data(), index.data(), digits.data(), 0, digits.size(), 512);
  }
  std::vector<Xyzz> sums(groups, Xyzz::infinity());
  for (size_t g = 0; g < groups; ++g) {
    Xyzz running = Xyzz::infinity(), total = Xyzz::infinity();
    for (size_t k = nbuckets; k-- > 0;) {
      const size_t bucket = g * nbuckets + k;
      if (buckets.filled(bucket)) running = curve::xyzz_add_mixed(running, buckets.bucket(bucket));
      total = curve::xyzz_add(total, running);
    }
    sums[g] = total;
  }
  return sums;
}

}  // namespace

bool Bn254G2AllInSubgroup(const uint8_t* points, uint64_t count, cpu::ThreadPool& pool,
                          const BatchSubgroupOptions& options) {
  if (options.rounds < 1) throw Error(ErrorCode::kInvalidArgument, "Bn254G2AllInSubgroup: rounds < 1");
  if (count == 0) return true;
  if (sodium_init() < 0) throw Error(ErrorCode::kInternal, "libsodium failed to initialise");
  const uint64_t chunks = (count + kChunk - 1) / kChunk;
  const uint64_t slices = std::min<uint64_t>(chunks, static_cast<uint64_t>(pool.size()));
  const Plan plan = count / slices >= kLargePlanMinPoints ? kLargePlan : kSmallPlan;
  std::vector<std::vector<Xyzz>> slice_sums(slices);
  pool.RunTasks(slices, [&](size_t slice) {
    const uint64_t first = chunks * slice / slices, last = chunks * (slice + 1) / slices;
    slice_sums[slice] = SliceSums(points, count, first, last, plan, options);
  });
  for (int round = 0; round < options.rounds; ++round) {
    // S = sum_w 2^(bits·w) · (window w), by Horner from the top window.
    Xyzz s = Xyzz::infinity();
    for (int w = plan.windows - 1; w >= 0; --w) {
      for (int i = 0; i < plan.bits && w != plan.windows - 1; ++i) s = curve::xyzz_dbl(s);
      for (const std::vector<Xyzz>& sums : slice_sums) {
        s = curve::xyzz_add(s, sums[static_cast<size_t>(round) * plan.windows + w]);
      }
    }
    const Affine sum = curve::to_affine(s);
    if (!curve::is_on_curve(sum) || !curve::InPrimeOrderSubgroup(sum)) return false;
  }
  return true;
}

}  // namespace zkfleet::groth16
