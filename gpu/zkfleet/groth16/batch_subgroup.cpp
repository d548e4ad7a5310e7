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

// Two 8-bit signed digits per coefficient, each in [-127, 128]: 128 buckets
// per (round, window) group, bucket k holding digit magnitude k + 1.
constexpr int kWindows = 2;
constexpr int kWindowBits = 8;
constexpr int kBuckets = 128;
// Points per chunk: the unit of randomness (one draw, one derived seed) and of
// the copy into aligned memory.
constexpr uint64_t kChunk = 2048;
constexpr size_t kPointBytes = sizeof(Affine);  // 4 coordinates of 32 bytes, as stored
static_assert(kPointBytes == 128);

// The random bytes of chunk `chunk`: libsodium's CSPRNG, or (tests) a stream
// keyed by BLAKE2b(seed || chunk), the same whatever the threads.
void ChunkRandomness(const BatchSubgroupOptions& options, uint64_t chunk, uint8_t* out, size_t size) {
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

// sum_k (k + 1) · bucket[k] of each group, for the points of chunks
// [first_chunk, last_chunk).
std::vector<Xyzz> SliceSums(const uint8_t* points, uint64_t count, uint64_t first_chunk, uint64_t last_chunk,
                            const BatchSubgroupOptions& options) {
  const size_t groups = static_cast<size_t>(options.rounds) * kWindows;
  cpu::msm_detail::AffineBuckets<Cfg> buckets(groups * kBuckets);
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
    random.resize(chunk_points.size() * groups);
    ChunkRandomness(options, chunk, random.data(), random.size());
    // Point-major: one point's digits go to different groups, so they never
    // wait on one another within a batch of affine additions.
    index.clear();
    digits.clear();
    for (size_t j = 0; j < chunk_points.size(); ++j) {
      for (size_t g = 0; g < groups; ++g) {
        const int digit = static_cast<int>(random[j * groups + g]) - 127;  // [-127, 128]
        if (digit == 0) continue;
        const int32_t bucket_plus_one = static_cast<int32_t>(g * kBuckets) + (digit > 0 ? digit : -digit);
        index.push_back(static_cast<uint32_t>(j));
        digits.push_back(digit > 0 ? bucket_plus_one : -bucket_plus_one);
      }
    }
    buckets.Accumulate(chunk_points.data(), index.data(), digits.data(), 0, digits.size(), 512);
  }
  std::vector<Xyzz> sums(groups, Xyzz::infinity());
  for (size_t g = 0; g < groups; ++g) {
    Xyzz running = Xyzz::infinity(), total = Xyzz::infinity();
    for (size_t k = kBuckets; k-- > 0;) {
      const size_t bucket = g * kBuckets + k;
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
  std::vector<std::vector<Xyzz>> slice_sums(slices);
  pool.RunTasks(slices, [&](size_t slice) {
    const uint64_t first = chunks * slice / slices, last = chunks * (slice + 1) / slices;
    slice_sums[slice] = SliceSums(points, count, first, last, options);
  });
  for (int round = 0; round < options.rounds; ++round) {
    Xyzz window[kWindows] = {Xyzz::infinity(), Xyzz::infinity()};
    for (int w = 0; w < kWindows; ++w) {
      for (const std::vector<Xyzz>& sums : slice_sums) {
        window[w] = curve::xyzz_add(window[w], sums[static_cast<size_t>(round) * kWindows + w]);
      }
    }
    // S = 2^8 · (window 1) + (window 0)
    Xyzz s = window[1];
    for (int i = 0; i < kWindowBits; ++i) s = curve::xyzz_dbl(s);
    s = curve::xyzz_add(s, window[0]);
    const Affine sum = curve::to_affine(s);
    if (!curve::is_on_curve(sum) || !curve::InPrimeOrderSubgroup(sum)) return false;
  }
  return true;
}

}  // namespace zkfleet::groth16
