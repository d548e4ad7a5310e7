#include "zkfleet/zkey/zkey.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <thread>
#include <utility>
#include <vector>

#include "zkfleet/common/error.hpp"
#include "zkfleet/io/curve_primes.hpp"
#include "zkfleet/runtime/thread_pool.hpp"

namespace zkfleet::io {
namespace {

const char* SectionName(uint32_t id) {
  switch (id) {
    case kZkeyProtocol: return "protocol";
    case kZkeyHeader: return "groth16 header";
    case kZkeyIc: return "IC points";
    case kZkeyCoeffs: return "coefficients";
    case kZkeyA: return "A points";
    case kZkeyB1: return "B1 points";
    case kZkeyB2: return "B2 points";
    case kZkeyC: return "C points";
    case kZkeyH: return "H points";
    case kZkeyContributions: return "contributions";
  }
  return "unknown";
}

// Checks that every coordinate of the `n_coords` coordinates at `p` is < q,
// i.e. a canonical Montgomery residue.
void CheckCoordinates(const std::string& file, const char* field, const uint8_t* p, size_t n_coords,
                      const uint8_t* q, uint32_t n8q) {
  for (size_t i = 0; i < n_coords; ++i) {
    if (!LessThanLe(p + i * n8q, q, n8q)) {
      BadFormat(file + ": groth16 header: " + field + " coordinate " + std::to_string(i) +
                ": expected < q, found " + HexLe({p + i * n8q, n8q}));
    }
  }
}

}  // namespace

uint64_t ZkeySectionSize(const ZkeyShape& s, uint32_t id) {
  const uint64_t g1 = 2 * uint64_t{s.n8q};
  const uint64_t g2 = 4 * uint64_t{s.n8q};
  switch (id) {
    case kZkeyProtocol: return 4;
    case kZkeyHeader: return 20 + uint64_t{s.n8q} + s.n8r + 18 * uint64_t{s.n8q};
    case kZkeyIc: return (uint64_t{s.n_public} + 1) * g1;
    case kZkeyCoeffs: return 4 + uint64_t{s.n_coeffs} * (kCoeffRecordHeader + s.n8r);
    case kZkeyA:
    case kZkeyB1: return uint64_t{s.n_vars} * g1;
    case kZkeyB2: return uint64_t{s.n_vars} * g2;
    case kZkeyC: return (uint64_t{s.n_vars} - s.n_public - 1) * g1;
    case kZkeyH: return uint64_t{s.domain_size} * g1;
  }
  return 0;
}

ZkeyFile ZkeyFile::Open(const std::string& path) {
  ZkeyFile key;
  key.file_ = MappedFile::Open(path);
  // Moving a MappedFile keeps the mapped address, so bytes_ stays valid.
  key.bytes_ = key.file_.bytes();
  key.name_ = path;
  key.Validate();
  return key;
}

ZkeyFile ZkeyFile::Parse(std::span<const uint8_t> bytes, std::string name) {
  ZkeyFile key;
  key.bytes_ = bytes;
  key.name_ = std::move(name);
  key.Validate();
  return key;
}

void ZkeyFile::Validate() {
  const std::string& name = name_;
  const BinFile bin = BinFile::Parse(bytes_, "zkey", kZkeyMaxVersion, name);

  // Section 1: which proving system the key is for.
  {
    SectionReader rd(bin.Get(kZkeyProtocol, "protocol"), name, "1 (protocol)");
    const uint32_t protocol = rd.U32("protocol");
    rd.ExpectEnd();
    if (protocol == 2 || protocol == 10) {
      throw Error(ErrorCode::kUnsupported,
                  name + ": not a Groth16 zkey (protocol " + std::to_string(protocol) + " = " +
                      (protocol == 2 ? "plonk" : "fflonk") + "; expected 1 = groth16)");
    }
    if (protocol != kProtocolGroth16) {
      BadFormat(name + ": section 1 (protocol): expected 1 (groth16), found " + std::to_string(protocol));
    }
  }

  // Section 2: primes, sizes and the six fixed points.
  {
    SectionReader rd(bin.Get(kZkeyHeader, "groth16 header"), name, "2 (groth16 header)");
    shape_.n8q = rd.U32("n8q");
    if (shape_.n8q != 32 && shape_.n8q != 48) {
      throw Error(ErrorCode::kUnsupported, name + ": groth16 header: n8q: expected 32 (bn128) or 48 (bls12381), found " +
                                               std::to_string(shape_.n8q));
    }
    q_ = rd.Bytes(shape_.n8q, "q");
    const std::optional<Curve> curve = CurveFromBasePrime({q_, shape_.n8q});
    if (!curve) {
      throw Error(ErrorCode::kUnsupported, name + ": groth16 header: q: unknown base field " +
                                               HexLe({q_, shape_.n8q}) + " (supported: bn128, bls12381)");
    }
    curve_ = *curve;
    const CurvePrimes& primes = PrimesOf(curve_);
    shape_.n8r = rd.U32("n8r");
    if (shape_.n8r != primes.n8r) {
      BadFormat(name + ": groth16 header: n8r: expected " + std::to_string(primes.n8r) + " for " +
                CurveName(curve_) + ", found " + std::to_string(shape_.n8r));
    }
    r_ = rd.Bytes(shape_.n8r, "r");
    if (CurveFromScalarPrime({r_, shape_.n8r}) != curve_) {
      BadFormat(name + ": groth16 header: r: expected the " + CurveName(curve_) +
                " scalar field " + HexLe({primes.r, primes.n8r}) + ", found " + HexLe({r_, shape_.n8r}));
    }
    shape_.n_vars = rd.U32("nVars");
    shape_.n_public = rd.U32("nPublic");
    shape_.domain_size = rd.U32("domainSize");
    const size_t g1 = g1_size(), g2 = g2_size();
    alpha1_ = rd.Bytes(g1, "alpha1");
    beta1_ = rd.Bytes(g1, "beta1");
    beta2_ = rd.Bytes(g2, "beta2");
    gamma2_ = rd.Bytes(g2, "gamma2");
    delta1_ = rd.Bytes(g1, "delta1");
    delta2_ = rd.Bytes(g2, "delta2");
    rd.ExpectEnd();

    if (uint64_t{shape_.n_public} + 1 > shape_.n_vars) {
      BadFormat(name + ": groth16 header: nVars: expected >= nPublic + 1 = " +
                std::to_string(uint64_t{shape_.n_public} + 1) + ", found " + std::to_string(shape_.n_vars));
    }
    const uint32_t n = shape_.domain_size;
    if (!std::has_single_bit(n)) {
      BadFormat(name + ": groth16 header: domainSize: expected a power of two, found " + std::to_string(n));
    }
    if (uint64_t{n} < uint64_t{shape_.n_public} + 1) {
      BadFormat(name + ": groth16 header: domainSize: expected >= nPublic + 1 = " +
                std::to_string(uint64_t{shape_.n_public} + 1) + ", found " + std::to_string(n));
    }
    if (static_cast<uint32_t>(std::countr_zero(n)) > primes.two_adicity) {
      BadFormat(name + ": groth16 header: domainSize: expected <= 2^" + std::to_string(primes.two_adicity) +
                " for " + CurveName(curve_) + ", found " + std::to_string(n));
    }
    CheckCoordinates(name, "alpha1", alpha1_, 2, q_, shape_.n8q);
    CheckCoordinates(name, "beta1", beta1_, 2, q_, shape_.n8q);
    CheckCoordinates(name, "beta2", beta2_, 4, q_, shape_.n8q);
    CheckCoordinates(name, "gamma2", gamma2_, 4, q_, shape_.n8q);
    CheckCoordinates(name, "delta1", delta1_, 2, q_, shape_.n8q);
    CheckCoordinates(name, "delta2", delta2_, 4, q_, shape_.n8q);
  }

  // Section 4 starts with the record count the size check needs.
  const Section coeff_section = bin.Get(kZkeyCoeffs, SectionName(kZkeyCoeffs));
  {
    SectionReader rd(coeff_section, name, "4 (coefficients)");
    shape_.n_coeffs = rd.U32("nCoeffs");
    coeffs_ = coeff_section.data + 4;
  }

  // Sections 3..9: sizes must be exactly what the header implies.
  std::array<Section, kZkeyH + 1> sections{};
  for (uint32_t id = kZkeyIc; id <= kZkeyH; ++id) {
    sections[id] = bin.Get(id, SectionName(id));
    const uint64_t expected = ZkeySectionSize(shape_, id);
    if (sections[id].size != expected) {
      BadFormat(name + ": section " + std::to_string(id) + " (" + SectionName(id) + "): size: expected " +
                std::to_string(expected) + " bytes (from the header: nVars " + std::to_string(shape_.n_vars) + ", nPublic " +
                std::to_string(shape_.n_public) + ", domainSize " + std::to_string(shape_.domain_size) +
                (id == kZkeyCoeffs ? ", nCoeffs " + std::to_string(shape_.n_coeffs) : std::string()) +
                "), found " + std::to_string(sections[id].size));
    }
  }
  ic_ = {sections[kZkeyIc].data, uint64_t{shape_.n_public} + 1};
  a_ = {sections[kZkeyA].data, shape_.n_vars};
  b1_ = {sections[kZkeyB1].data, shape_.n_vars};
  b2_ = {sections[kZkeyB2].data, shape_.n_vars};
  c_ = {sections[kZkeyC].data, uint64_t{shape_.n_vars} - shape_.n_public - 1};
  h_ = {sections[kZkeyH].data, shape_.domain_size};

  // Every coefficient record must index inside the matrices. A 2^22 key has
  // ~10^7 records: checked on up to 8 threads (none extra below 2^16), the
  // first bad record (lowest index) reported, as a sequential scan would.
  const auto record_ok = [&](uint64_t i) {
    const CoeffRecord rec = coeff(i);
    return rec.matrix <= 1 && rec.row < shape_.domain_size && rec.signal < shape_.n_vars &&
           LessThanLe(rec.value, r_, shape_.n8r);
  };
  cpu::ThreadPool pool(shape_.n_coeffs < (uint64_t{1} << 16)
                           ? 1
                           : static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u)));
  const uint64_t first_bad = pool.FirstFailing(shape_.n_coeffs, record_ok);
  if (first_bad < shape_.n_coeffs) {
    const uint64_t i = first_bad;
    const CoeffRecord rec = coeff(i);
    const std::string where = name + ": section 4 (coefficients): record " + std::to_string(i) + " at file offset " +
                              std::to_string(coeff_section.offset + 4 + i * coeff_record_size());
    if (rec.matrix > 1) BadFormat(where + ": matrix: expected 0 (A) or 1 (B), found " + std::to_string(rec.matrix));
    if (rec.row >= shape_.domain_size) {
      BadFormat(where + ": row: expected < domainSize " + std::to_string(shape_.domain_size) + ", found " + std::to_string(rec.row));
    }
    if (rec.signal >= shape_.n_vars) {
      BadFormat(where + ": signal: expected < nVars " + std::to_string(shape_.n_vars) + ", found " + std::to_string(rec.signal));
    }
    BadFormat(where + ": value: expected < r, found " + HexLe({rec.value, shape_.n8r}));
  }
}

void CheckWitnessMatches(const Witness& witness, std::span<const uint8_t> r,
                         uint32_t n_vars, std::string_view key_name) {
  const std::vector<uint8_t>& prime = witness.prime();
  if (prime.size() != r.size() || !std::equal(prime.begin(), prime.end(), r.begin())) {
    throw Error(ErrorCode::kMismatch,
                witness.origin() + ": witness prime " + HexLe(prime) + " differs from the scalar field " +
                    HexLe(r) + " of " + std::string(key_name));
  }
  if (witness.count() != n_vars) {
    throw Error(ErrorCode::kMismatch, witness.origin() + ": witness has " + std::to_string(witness.count()) +
                                          " values, but " + std::string(key_name) + " expects nVars " +
                                          std::to_string(n_vars));
  }
}

// ----------------------------------------------------------------------------

namespace {

ZkeyShape CheckedShape(const std::string& path, const ZkeyHeaderData& h) {
  const CurvePrimes& primes = PrimesOf(h.curve);
  ZkeyShape s{primes.n8q, primes.n8r, h.n_vars, h.n_public, h.domain_size, h.n_coeffs};
  const auto fail = [&](const std::string& what) {
    throw Error(ErrorCode::kInvalidArgument, path + ": ZkeyWriter: " + what);
  };
  if (uint64_t{h.n_public} + 1 > h.n_vars) fail("n_vars must be >= n_public + 1");
  if (!std::has_single_bit(h.domain_size) || uint64_t{h.domain_size} < uint64_t{h.n_public} + 1) {
    fail("domain_size must be a power of two >= n_public + 1, got " + std::to_string(h.domain_size));
  }
  const size_t g1 = 2 * size_t{s.n8q}, g2 = 4 * size_t{s.n8q};
  const std::pair<const char*, std::pair<size_t, size_t>> points[] = {
      {"alpha1", {h.alpha1.size(), g1}}, {"beta1", {h.beta1.size(), g1}},
      {"beta2", {h.beta2.size(), g2}},   {"gamma2", {h.gamma2.size(), g2}},
      {"delta1", {h.delta1.size(), g1}}, {"delta2", {h.delta2.size(), g2}}};
  for (const auto& [field, sizes] : points) {
    if (sizes.first != sizes.second) {
      fail(std::string(field) + " must be " + std::to_string(sizes.second) + " bytes, got " + std::to_string(sizes.first));
    }
  }
  return s;
}

}  // namespace

ZkeyWriter::ZkeyWriter(std::string path, const ZkeyHeaderData& header)
    : shape_(CheckedShape(path, header)), out_(std::move(path), "zkey", kZkeyVersion, 10) {
  out_.BeginSection(kZkeyProtocol, 4);
  out_.WriteU32(kProtocolGroth16);
  out_.EndSection();

  const CurvePrimes& primes = PrimesOf(header.curve);
  out_.BeginSection(kZkeyHeader, ZkeySectionSize(shape_, kZkeyHeader));
  out_.WriteU32(primes.n8q);
  out_.Write({primes.q, primes.n8q});
  out_.WriteU32(primes.n8r);
  out_.Write({primes.r, primes.n8r});
  out_.WriteU32(header.n_vars);
  out_.WriteU32(header.n_public);
  out_.WriteU32(header.domain_size);
  for (std::span<const uint8_t> point :
       {header.alpha1, header.beta1, header.beta2, header.gamma2, header.delta1, header.delta2}) {
    out_.Write(point);
  }
  out_.EndSection();
}

void ZkeyWriter::BeginSection(uint32_t id) {
  if (id != next_id_ || id > kZkeyH) {
    throw Error(ErrorCode::kInvalidArgument,
                out_.path() + ": ZkeyWriter: expected section " + std::to_string(next_id_) + " next, got " + std::to_string(id) +
                    (id == kZkeyContributions ? " (section 10 only via WriteSection)" : ""));
  }
  out_.BeginSection(id, ZkeySectionSize(shape_, id));
  if (id == kZkeyCoeffs) out_.WriteU32(shape_.n_coeffs);
}

void ZkeyWriter::Append(std::span<const uint8_t> bytes) { out_.Write(bytes); }

void ZkeyWriter::EndSection() {
  out_.EndSection();
  ++next_id_;
}

void ZkeyWriter::WriteSection(uint32_t id, std::span<const uint8_t> payload) {
  if (id == kZkeyContributions && next_id_ == kZkeyContributions) {
    out_.BeginSection(id, payload.size());
    out_.Write(payload);
    out_.EndSection();
    ++next_id_;
    return;
  }
  BeginSection(id);
  Append(payload);
  EndSection();
}

void ZkeyWriter::Finish() {
  if (next_id_ == kZkeyContributions) {
    // An empty transcript: a zero circuit hash and no contributions.
    const std::array<uint8_t, 68> empty{};
    WriteSection(kZkeyContributions, empty);
  }
  if (next_id_ != kZkeyContributions + 1) {
    throw Error(ErrorCode::kInvalidArgument,
                out_.path() + ": ZkeyWriter: Finish() before section " + std::to_string(next_id_) + " was written");
  }
  out_.Finish();
}

}  // namespace zkfleet::io
