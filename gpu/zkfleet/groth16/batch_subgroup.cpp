#include "zkfleet/groth16/batch_subgroup.hpp"

#include <sodium.h>

#include <algorithm>
#include <cmath>
#include <string>
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

// The smallest prime factor of h, the order of the twist's non-G2 part.
constexpr double kSmallestCofactorPrime = 10069;

// The digits a plan may take: 6 to 13 bits (2^bits values, fewer than
// 10069: each residue at most once, so a round is worth `bits` bits). More
// bits only add buckets for no fewer rounds (14: 2 values per residue, 13
// bits a round); several digits per round add an addition per point and
// round, which no saving in buckets repays at any size.
constexpr int kMinBits = 6, kMaxBits = 13;

// The exact test of a round's sum (one 63-bit scalar multiplication in Fq2,
// ~46 us) in batched additions (~0.35 us each).
constexpr double kExactTestAdditions = 130;
// Beyond this the bucket index (round · buckets + digit) would not fit its
// int32, and no caller needs more.
constexpr int kMaxSecurityBits = 256;

// Throws Error(kInvalidArgument) naming `who` unless 1 <= bits <= kMaxSecurityBits.
void CheckSecurityBits(int bits, const char* who) {
  if (bits < 1 || bits > kMaxSecurityBits) {
    throw Error(ErrorCode::kInvalidArgument, std::string(who) + ": security_bits " + std::to_string(bits) +
                                                 " outside [1, " + std::to_string(kMaxSecurityBits) + "]");
  }
}

size_t Buckets(const BatchSubgroupPlan& plan) { return size_t{1} << (plan.bits - 1); }
size_t RandomBytes(const BatchSubgroupPlan& plan) { return plan.bits <= 8 ? 1 : 2; }  // per digit

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

// sum_k (k + 1) · bucket[k] of each round's buckets, for the points of
// chunks [first_chunk, last_chunk).
std::vector<Xyzz> SliceSums(const uint8_t* points, uint64_t count, uint64_t first_chunk, uint64_t last_chunk,
                            const BatchSubgroupPlan& plan, const BatchSubgroupOptions& options) {
  const size_t groups = static_cast<size_t>(plan.rounds);  // one bucket set a round
  const size_t nbuckets = Buckets(plan);
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
    random.resize(chunk_points.size() * groups * RandomBytes(plan));
    ChunkRandomness(options, chunk, random.data(), random.size());
    // Point-major: one point's digits go to different groups, so they never
    // wait on one another within a batch of affine additions.
    index.clear();
    digits.clear();
    const uint8_t* r = random.data();
    for (size_t j = 0; j < chunk_points.size(); ++j) {
      for (size_t g = 0; g < groups; ++g) {
        uint32_t value = *r++;
        if (RandomBytes(plan) == 2) value |= static_cast<uint32_t>(*r++) << 8;
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

double BatchSubgroupPlan::round_bits() const {
  const double values = std::ldexp(1.0, bits);
  return std::log2(values / std::ceil(values / kSmallestCofactorPrime));
}

double BatchSubgroupPlan::cost(uint64_t points_per_slice) const {
  return static_cast<double>(rounds) *
         (static_cast<double>(points_per_slice) + 3.0 * static_cast<double>(size_t{1} << (bits - 1)) +
          kExactTestAdditions);
}

BatchSubgroupPlan BatchSubgroupPlanFor(uint64_t points_per_slice, int security_bits) {
  CheckSecurityBits(security_bits, "BatchSubgroupPlanFor");
  BatchSubgroupPlan best;
  double best_cost = 0;
  for (int bits = kMinBits; bits <= kMaxBits; ++bits) {
    BatchSubgroupPlan plan{bits, 0};
    plan.rounds = static_cast<int>(std::ceil(security_bits / plan.round_bits()));
    const double cost = plan.cost(points_per_slice);
    if (best_cost == 0 || cost < best_cost) best = plan, best_cost = cost;
  }
  return best;
}

bool Bn254G2AllInSubgroup(const uint8_t* points, uint64_t count, cpu::ThreadPool& pool,
                          const BatchSubgroupOptions& options) {
  CheckSecurityBits(options.security_bits, "Bn254G2AllInSubgroup");  // also for no points
  if (count == 0) return true;
  if (sodium_init() < 0) throw Error(ErrorCode::kInternal, "libsodium failed to initialise");
  const uint64_t chunks = (count + kChunk - 1) / kChunk;
  const uint64_t slices = std::min<uint64_t>(chunks, static_cast<uint64_t>(pool.size()));
  const BatchSubgroupPlan plan = BatchSubgroupPlanFor(count / slices, options.security_bits);
  std::vector<std::vector<Xyzz>> slice_sums(slices);
  pool.RunTasks(slices, [&](size_t slice) {
    const uint64_t first = chunks * slice / slices, last = chunks * (slice + 1) / slices;
    slice_sums[slice] = SliceSums(points, count, first, last, plan, options);
  });
  for (int round = 0; round < plan.rounds; ++round) {
    Xyzz s = Xyzz::infinity();
    for (const std::vector<Xyzz>& sums : slice_sums) s = curve::xyzz_add(s, sums[static_cast<size_t>(round)]);
    const Affine sum = curve::to_affine(s);
    if (!curve::is_on_curve(sum) || !curve::InPrimeOrderSubgroup(sum)) return false;
  }
  return true;
}

}  // namespace zkfleet::groth16
