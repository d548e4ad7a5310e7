#include "zkfleet/groth16/key_validation.hpp"

#include <cstring>
#include <string>
#include <type_traits>

#include "zkfleet/common/error.hpp"
#include "zkfleet/groth16/batch_subgroup.hpp"
#include "zkfleet/runtime/thread_pool.hpp"
#include "zkfleet/curve/bls12_381.hpp"
#include "zkfleet/curve/bn254.hpp"
#include "zkfleet/curve/point.hpp"
#include "zkfleet/curve/subgroup.hpp"

namespace zkfleet::groth16 {
namespace {

// Sections of BN254 G2 points at least this long take the batched subgroup
// test (groth16/batch_subgroup.hpp); shorter ones, where its fixed cost (per
// round: the buckets' reduction and one exact test, a few hundred additions
// at the least) does not pay, the per-point test.
constexpr uint64_t kBatchedSubgroupMin = 256;

// What is wrong with the point at `bytes` (n_coords coordinates of Fq, as
// stored), or nullptr. `subgroup` false: everything but the subgroup test.
template <class Cfg, class Fq>
const char* PointProblem(const uint8_t* bytes, int n_coords, bool allow_infinity, bool subgroup = true) {
  constexpr size_t kBytes = Fq::kLimbs * 8;
  for (int i = 0; i < n_coords; ++i) {
    uint64_t limbs[Fq::kLimbs];
    std::memcpy(limbs, bytes + i * kBytes, kBytes);
    if (!Fq::is_below_modulus(limbs)) return "a coordinate is not below the base field modulus q";
  }
  curve::Affine<Cfg> p;
  std::memcpy(static_cast<void*>(&p), bytes, n_coords * kBytes);
  if (p.is_infinity()) return allow_infinity ? nullptr : "point at infinity";
  if (!curve::is_on_curve(p)) return "point is not on the curve";
  if (subgroup && !curve::InPrimeOrderSubgroup(p)) return "point is not in the prime-order subgroup";
  return nullptr;
}

template <class C>
class Validator {
 public:
  Validator(const io::ZkeyFile& zkey, int threads) : zkey_(zkey), pool_(threads) {}

  void Run(ZkeyPoints which) {
    using G1 = typename C::G1;
    using G2 = typename C::G2;
    Header<G1>("alpha1", zkey_.alpha1(), 2);
    Header<G1>("beta1", zkey_.beta1(), 2);
    Header<G1>("delta1", zkey_.delta1(), 2);
    Header<G2>("beta2", zkey_.beta2(), 4);
    Header<G2>("gamma2", zkey_.gamma2(), 4);
    Header<G2>("delta2", zkey_.delta2(), 4);
    Section<G1>("IC", zkey_.ic(), 2);
    if (which == ZkeyPoints::kHeaderAndIc) return;
    Section<G1>("A", zkey_.a(), 2);
    Section<G1>("B1", zkey_.b1(), 2);
    Section<G2>("B2", zkey_.b2(), 4);
    Section<G1>("C", zkey_.c(), 2);
    Section<G1>("H", zkey_.h(), 2);
  }

 private:
  using Fq = typename C::Fq;
  static constexpr size_t kCoordBytes = Fq::kLimbs * 8;

  template <class Cfg>
  void Header(const char* name, const uint8_t* bytes, int n_coords) {
    if (const char* problem = PointProblem<Cfg, Fq>(bytes, n_coords, /*allow_infinity=*/false)) {
      throw Error(ErrorCode::kBadFormat, zkey_.path() + ": header point " + name + ": " + problem);
    }
  }

 public:
  // Throws for point `index` of a big section if it is bad.
  void One(const std::string& section, uint64_t index) {
    using G1 = typename C::G1;
    using G2 = typename C::G2;
    if (section == "A") return OnePoint<G1>("A", zkey_.a(), 2, index);
    if (section == "B1") return OnePoint<G1>("B1", zkey_.b1(), 2, index);
    if (section == "B2") return OnePoint<G2>("B2", zkey_.b2(), 4, index);
    if (section == "C") return OnePoint<G1>("C", zkey_.c(), 2, index);
    if (section == "H") return OnePoint<G1>("H", zkey_.h(), 2, index);
    throw Error(ErrorCode::kInternal, "CheckZkeyPoint: unknown section " + section);
  }

 private:
  template <class Cfg>
  void OnePoint(const char* name, const io::PointArray& points, int n_coords, uint64_t index) {
    if (index >= points.count) throw Error(ErrorCode::kInternal, "CheckZkeyPoint: index out of range");
    if (const char* problem = PointProblem<Cfg, Fq>(points.data + index * n_coords * kCoordBytes, n_coords, true)) {
      throw Error(ErrorCode::kBadFormat, zkey_.path() + ": section " + name + " point " + std::to_string(index) +
                                             " (of " + std::to_string(points.count) + "): " + problem);
    }
  }

  template <class Cfg>
  void Section(const char* name, const io::PointArray& points, int n_coords) {
    const size_t stride = n_coords * kCoordBytes;
    // The lowest bad index below `n`, by the exact per-point test.
    const auto first_bad = [&](uint64_t n) {
      return pool_.FirstFailing(n, [&](uint64_t i) {
        return PointProblem<Cfg, Fq>(points.data + i * stride, n_coords, /*allow_infinity=*/true) == nullptr;
      });
    };
    uint64_t bad = points.count;
    if constexpr (std::is_same_v<Cfg, curve::Bn254G2>) {
      if (points.count >= kBatchedSubgroupMin) {
        // Every point's coordinates and curve equation first (cheap), then one
        // batched subgroup test of the points before the first failure; only
        // when that fails, the exact test finds the lowest bad index.
        const uint64_t off_curve = pool_.FirstFailing(points.count, [&](uint64_t i) {
          return PointProblem<Cfg, Fq>(points.data + i * stride, n_coords, true, /*subgroup=*/false) == nullptr;
        });
        bad = off_curve;
        // (first_bad gives off_curve back when no point before it fails: the
        // exact test is the authority, should the batched one ever be wrong.)
        if (off_curve > 0 && !Bn254G2AllInSubgroup(points.data, off_curve, pool_)) bad = first_bad(off_curve);
      } else {
        bad = first_bad(points.count);
      }
    } else {
      bad = first_bad(points.count);
    }
    if (bad < points.count) {
      const char* problem = PointProblem<Cfg, Fq>(points.data + bad * stride, n_coords, true);
      throw Error(ErrorCode::kBadFormat, zkey_.path() + ": section " + name + " point " + std::to_string(bad) +
                                             " (of " + std::to_string(points.count) + "): " + problem);
    }
  }

  const io::ZkeyFile& zkey_;
  cpu::ThreadPool pool_;
};

}  // namespace

void ValidateZkeyPoints(const io::ZkeyFile& zkey, int threads, ZkeyPoints which) {
  switch (zkey.curve()) {
    case io::Curve::kBn254: Validator<curve::Bn254>(zkey, threads).Run(which); return;
    case io::Curve::kBls12_381: Validator<curve::Bls12_381>(zkey, threads).Run(which); return;
  }
}

void CheckZkeyPoint(const io::ZkeyFile& zkey, const std::string& section, uint64_t index) {
  switch (zkey.curve()) {
    case io::Curve::kBn254: Validator<curve::Bn254>(zkey, 1).One(section, index); return;
    case io::Curve::kBls12_381: Validator<curve::Bls12_381>(zkey, 1).One(section, index); return;
  }
}

}  // namespace zkfleet::groth16
