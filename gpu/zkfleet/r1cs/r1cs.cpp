#include "zkfleet/r1cs/r1cs.hpp"

#include "zkfleet/common/error.hpp"
#include "zkfleet/io/binfile.hpp"
#include "zkfleet/io/mapped_file.hpp"

namespace zkfleet::io {
namespace {

constexpr uint32_t kR1csVersion = 1;
constexpr uint32_t kHeaderSection = 1;
constexpr uint32_t kConstraintsSection = 2;
constexpr uint32_t kLabelsSection = 3;
constexpr uint32_t kCustomGatesListSection = 4;
constexpr uint32_t kCustomGatesUsesSection = 5;

R1csHeader ParseHeader(const BinFile& bin, const std::string& name) {
  SectionReader rd(bin.Get(kHeaderSection, "header"), name, "1 (header)");
  R1csHeader h;
  h.n8 = rd.U32("n8");
  if (h.n8 < 8 || h.n8 > 64 || h.n8 % 8 != 0) {
    BadFormat(name + ": header: n8: expected a multiple of 8 in [8, 64], found " + std::to_string(h.n8));
  }
  const uint8_t* prime = rd.Bytes(h.n8, "prime");
  h.prime.assign(prime, prime + h.n8);
  h.n_wires = rd.U32("nWires");
  h.n_pub_out = rd.U32("nPubOut");
  h.n_pub_in = rd.U32("nPubIn");
  h.n_prv_in = rd.U32("nPrvIn");
  h.n_labels = rd.U64("nLabels");
  h.n_constraints = rd.U32("nConstraints");
  rd.ExpectEnd();
  const uint64_t inputs = uint64_t{h.n_pub_out} + h.n_pub_in + h.n_prv_in;
  if (inputs + 1 > h.n_wires) {
    BadFormat(name + ": header: nWires: expected >= 1 + nPubOut + nPubIn + nPrvIn = " + std::to_string(inputs + 1) +
              ", found " + std::to_string(h.n_wires));
  }
  return h;
}

}  // namespace

R1cs ParseR1cs(std::span<const uint8_t> bytes, const std::string& name) {
  const BinFile bin = BinFile::Parse(bytes, "r1cs", kR1csVersion, name);
  if (bin.Find(kCustomGatesListSection, "custom gates list") ||
      bin.Find(kCustomGatesUsesSection, "custom gates uses")) {
    throw Error(ErrorCode::kUnsupported, name + ": uses custom gates (sections 4/5), which only PLONK supports");
  }
  R1cs r;
  r.header = ParseHeader(bin, name);
  const uint32_t n8 = r.header.n8;

  const Section constraints = bin.Get(kConstraintsSection, "constraints");
  SectionReader rd(constraints, name, "2 (constraints)");
  const uint64_t n_lcs = 3 * uint64_t{r.header.n_constraints};
  // Each LC takes at least 4 bytes; bound the reservations by the section size.
  if (n_lcs * 4 > constraints.size) {
    BadFormat(name + ": section 2 (constraints): size: " + std::to_string(r.header.n_constraints) +
              " constraints need at least " + std::to_string(n_lcs * 4) + " bytes, found " + std::to_string(constraints.size));
  }
  const uint64_t max_terms = (constraints.size - n_lcs * 4) / (4 + uint64_t{n8});
  r.lc_start.reserve(n_lcs + 1);
  r.term_wire.reserve(max_terms);
  r.term_coeff.reserve(max_terms * n8);
  r.lc_start.push_back(0);
  for (uint64_t k = 0; k < n_lcs; ++k) {
    const uint32_t n_terms = rd.U32("nTerms");
    for (uint32_t t = 0; t < n_terms; ++t) {
      const uint32_t wire = rd.U32("wireId");
      const uint8_t* coeff = rd.Bytes(n8, "coefficient");
      const auto where = [&] {
        return name + ": section 2 (constraints): constraint " + std::to_string(k / 3) + " " + "ABC"[k % 3] +
               " term " + std::to_string(t);
      };
      if (wire >= r.header.n_wires) {
        BadFormat(where() + ": wireId: expected < nWires " + std::to_string(r.header.n_wires) + ", found " + std::to_string(wire));
      }
      if (!LessThanLe(coeff, r.header.prime.data(), n8)) BadFormat(where() + ": coefficient: expected < prime");
      r.term_wire.push_back(wire);
      r.term_coeff.insert(r.term_coeff.end(), coeff, coeff + n8);
    }
    r.lc_start.push_back(r.term_wire.size());
  }
  rd.ExpectEnd();

  const Section labels = bin.Get(kLabelsSection, "wire labels");
  if (labels.size != uint64_t{r.header.n_wires} * 8) {
    BadFormat(name + ": section 3 (wire labels): size: expected nWires * 8 = " +
              std::to_string(uint64_t{r.header.n_wires} * 8) + " bytes, found " + std::to_string(labels.size));
  }
  r.wire_labels.resize(r.header.n_wires);
  for (uint32_t i = 0; i < r.header.n_wires; ++i) r.wire_labels[i] = LoadU64(labels.data + 8 * uint64_t{i});
  return r;
}

R1cs ReadR1cs(const std::string& path) {
  const MappedFile file = MappedFile::Open(path);
  return ParseR1cs(file.bytes(), path);
}

void WriteR1cs(const std::string& path, const R1cs& r) {
  const R1csHeader& h = r.header;
  const auto fail = [&](const std::string& what) {
    throw Error(ErrorCode::kInvalidArgument, path + ": WriteR1cs: " + what);
  };
  const uint64_t n_lcs = 3 * uint64_t{h.n_constraints};
  if (h.n8 == 0 || h.prime.size() != h.n8) fail("prime must be n8 bytes");
  if (r.lc_start.size() != n_lcs + 1 || r.lc_start.front() != 0 || r.lc_start.back() != r.term_wire.size()) {
    fail("lc_start must hold 3 * nConstraints + 1 offsets from 0 to the number of terms");
  }
  if (r.term_coeff.size() != r.term_wire.size() * h.n8) fail("term_coeff must hold n8 bytes per term");
  if (r.wire_labels.size() != h.n_wires) fail("wire_labels must hold nWires entries");

  uint64_t constraints_size = 0;
  for (uint64_t k = 0; k < n_lcs; ++k) {
    if (r.lc_start[k + 1] < r.lc_start[k]) fail("lc_start must be non-decreasing");
    constraints_size += 4 + (r.lc_start[k + 1] - r.lc_start[k]) * (4 + uint64_t{h.n8});
  }

  BinFileWriter out(path, "r1cs", kR1csVersion, 3);
  // circom writes the constraints first, then the header, then the labels.
  out.BeginSection(kConstraintsSection, constraints_size);
  for (uint64_t k = 0; k < n_lcs; ++k) {
    out.WriteU32(static_cast<uint32_t>(r.lc_start[k + 1] - r.lc_start[k]));
    for (uint64_t t = r.lc_start[k]; t < r.lc_start[k + 1]; ++t) {
      out.WriteU32(r.term_wire[t]);
      out.Write({r.term_coeff.data() + t * h.n8, h.n8});
    }
  }
  out.EndSection();

  out.BeginSection(kHeaderSection, 4 + uint64_t{h.n8} + 4 * 4 + 8 + 4);
  out.WriteU32(h.n8);
  out.Write(h.prime);
  out.WriteU32(h.n_wires);
  out.WriteU32(h.n_pub_out);
  out.WriteU32(h.n_pub_in);
  out.WriteU32(h.n_prv_in);
  out.WriteU64(h.n_labels);
  out.WriteU32(h.n_constraints);
  out.EndSection();

  out.BeginSection(kLabelsSection, uint64_t{h.n_wires} * 8);
  for (uint64_t label : r.wire_labels) out.WriteU64(label);
  out.EndSection();
  out.Finish();
}

}  // namespace zkfleet::io
