// fuzz_seed_gen OUT_DIR: writes small valid inputs for every fuzz target to
// OUT_DIR/<target>/. The bundled fixtures are valid too, but a 2^12 key is
// megabytes that the mutator would crawl through; these are a few hundred
// bytes with the same structure, so mutations reach every check quickly.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <initializer_list>
#include <stdexcept>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "zkfleet/engine/types.hpp"
#include "zkfleet/wire/protocol.hpp"
#include "zkfleet/io/curve_primes.hpp"
#include "zkfleet/r1cs/r1cs.hpp"
#include "zkfleet/wtns/wtns_writer.hpp"
#include "zkfleet/zkey/zkey.hpp"

namespace fs = std::filesystem;
using zkfleet::io::Curve;

namespace {

// n8 little-endian bytes holding the small value `v`.
std::vector<uint8_t> Small(uint32_t n8, uint8_t v) {
  std::vector<uint8_t> bytes(n8, 0);
  bytes[0] = v;
  return bytes;
}

void WriteBytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

// nVars 4 (1 public), domain 4, three coefficients; points all zero
// (infinity), which the reader accepts: it never checks curve membership.
void WriteZkey(const fs::path& path, Curve curve) {
  const zkfleet::io::CurvePrimes& primes = zkfleet::io::PrimesOf(curve);
  const std::vector<uint8_t> g1(2 * primes.n8q, 0), g2(4 * primes.n8q, 0);
  zkfleet::io::ZkeyHeaderData header;
  header.curve = curve;
  header.n_vars = 4;
  header.n_public = 1;
  header.domain_size = 4;
  header.n_coeffs = 3;
  header.alpha1 = header.beta1 = header.delta1 = g1;
  header.beta2 = header.gamma2 = header.delta2 = g2;
  zkfleet::io::ZkeyWriter w(path.string(), header);
  const auto points = [&](uint64_t count, const std::vector<uint8_t>& point) {
    std::vector<uint8_t> bytes;
    for (uint64_t i = 0; i < count; ++i) bytes.insert(bytes.end(), point.begin(), point.end());
    return bytes;
  };
  w.WriteSection(zkfleet::io::kZkeyIc, points(2, g1));
  std::vector<uint8_t> coeffs;
  const uint32_t records[3][3] = {{0, 0, 1}, {1, 0, 2}, {0, 3, 3}};  // matrix, row, signal
  for (const auto& rec : records) {
    for (uint32_t field : rec) {
      for (int b = 0; b < 4; ++b) coeffs.push_back(static_cast<uint8_t>(field >> (8 * b)));
    }
    const std::vector<uint8_t> value = Small(primes.n8r, 7);
    coeffs.insert(coeffs.end(), value.begin(), value.end());
  }
  w.WriteSection(zkfleet::io::kZkeyCoeffs, coeffs);
  w.WriteSection(zkfleet::io::kZkeyA, points(4, g1));
  w.WriteSection(zkfleet::io::kZkeyB1, points(4, g1));
  w.WriteSection(zkfleet::io::kZkeyB2, points(4, g2));
  w.WriteSection(zkfleet::io::kZkeyC, points(2, g1));
  w.WriteSection(zkfleet::io::kZkeyH, points(4, g1));
  w.Finish();
}

std::vector<uint8_t> Values(uint32_t n8, std::initializer_list<uint8_t> small) {
  std::vector<uint8_t> values;
  for (uint8_t v : small) {
    const std::vector<uint8_t> e = Small(n8, v);
    values.insert(values.end(), e.begin(), e.end());
  }
  return values;
}

void WriteWitnesses(const fs::path& dir) {
  for (Curve curve : {Curve::kBn254, Curve::kBls12_381}) {
    const zkfleet::io::CurvePrimes& primes = zkfleet::io::PrimesOf(curve);
    zkfleet::io::WriteWtns((dir / (std::string("tiny_") + zkfleet::io::CurveName(curve) + ".wtns")).string(),
                           primes.n8r, {primes.r, primes.n8r}, Values(primes.n8r, {1, 2, 3, 0}));
  }
  // n8 = 8 with the prime 251: the reader takes any odd prime.
  zkfleet::io::WriteWtns((dir / "n8_8.wtns").string(), 8, Small(8, 251), Values(8, {1, 250}));
}

// Two constraints over wires 0..3 (1 output, 1 public input, 1 private).
void WriteR1csFile(const fs::path& path, Curve curve) {
  const zkfleet::io::CurvePrimes& primes = zkfleet::io::PrimesOf(curve);
  zkfleet::io::R1cs r;
  r.header.n8 = primes.n8r;
  r.header.prime.assign(primes.r, primes.r + primes.n8r);
  r.header.n_wires = 4;
  r.header.n_pub_out = 1;
  r.header.n_pub_in = 1;
  r.header.n_prv_in = 1;
  r.header.n_labels = 5;
  r.header.n_constraints = 2;
  // A/B/C of constraint 0: w2 * w3 = w1; of constraint 1: (w0 + w2) * w0 = w3.
  const std::vector<std::vector<uint32_t>> lcs = {{2}, {3}, {1}, {0, 2}, {0}, {3}};
  r.lc_start.push_back(0);
  for (const auto& lc : lcs) {
    for (uint32_t wire : lc) {
      r.term_wire.push_back(wire);
      const std::vector<uint8_t> one = Small(r.header.n8, 1);
      r.term_coeff.insert(r.term_coeff.end(), one.begin(), one.end());
    }
    r.lc_start.push_back(r.term_wire.size());
  }
  r.wire_labels = {0, 1, 2, 4};
  zkfleet::io::WriteR1cs(path.string(), r);
}

// One valid envelope per kind of body the broker, workers and clients send.
void WriteEnvelopes(const fs::path& dir) {
  namespace proto = zkfleet::proto;
  const auto save = [&](const std::string& name, proto::Envelope& e) {
    e.set_correlation_id(42);
    WriteBytes(dir / (name + ".bin"), zkfleet::wire::EncodeEnvelope(e));
  };
  proto::Envelope e;
  auto* ready = e.mutable_ready();
  ready->set_worker_id("w1");
  ready->set_backend("cpu");
  ready->add_circuits("bn128_k12");
  ready->set_capacity(4);
  ready->set_state(proto::WORKER_STATE_READY);
  ready->mutable_memory()->set_pool_bytes(1 << 20);
  save("ready", e);

  e.Clear();
  e.mutable_heartbeat()->set_queue_depth(2);
  save("heartbeat", e);

  e.Clear();
  auto* result = e.mutable_result();
  result->mutable_item()->set_job_seq(7);
  result->set_ok(true);
  result->set_proof_json("{}");
  result->set_public_json("[]");
  result->mutable_timings()->set_msm_s(0.5);
  save("result", e);

  e.Clear();
  e.mutable_handback()->add_items()->set_job_seq(3);
  e.mutable_handback()->add_aborted()->set_partition(1);
  save("handback", e);

  e.Clear();
  auto* job = e.mutable_job();
  job->mutable_item()->set_job_seq(9);
  job->set_circuit_id("bn128_k12");
  job->set_priority(proto::PRIORITY_HIGH);
  const zkfleet::io::CurvePrimes& bn = zkfleet::io::PrimesOf(Curve::kBn254);
  // The witness itself travels in frames after the envelope: only its size here.
  job->set_witness_bytes(zkfleet::io::WtnsBytes(bn.n8r, {bn.r, bn.n8r}, Values(bn.n8r, {1, 5})).size());
  save("job", e);

  e.Clear();
  auto* submit = e.mutable_submit();
  submit->set_request_id("req-1");
  submit->set_circuit_id("bn128_k12");
  submit->add_witness_bytes(4);
  submit->add_witness_bytes(5);
  save("submit", e);

  e.Clear();
  auto* job_result = e.mutable_job_result();
  job_result->set_job_seq(9);
  job_result->set_state(proto::JOB_STATE_SUCCEEDED);
  job_result->add_partitions()->set_proof_json("{}");
  save("job_result", e);

  e.Clear();
  auto* status = e.mutable_status_reply();
  status->add_queues()->set_depth(3);
  status->add_workers()->set_worker_id("w1");
  status->set_frames_malformed(1);
  save("status_reply", e);

  e.Clear();
  e.mutable_drain_worker_reply()->add_phases()->set_duration_s(1.5);
  save("drain_worker_reply", e);

  e.Clear();
  e.mutable_status();
  save("status", e);

  e.Clear();
  e.mutable_credit()->set_credits(3);
  save("credit", e);

  e.Clear();
  e.mutable_cancel()->set_job_seq(9);
  save("cancel", e);

  proto::Envelope error = zkfleet::wire::MakeErrorReply(proto::ERROR_KIND_BAD_REQUEST, "bad", 5);
  save("error", error);
}

// A broker session (broker_fuzzer's records): a worker registers with credit,
// a client submits two jobs, the worker starts and answers the first.
void WriteBrokerSession(const fs::path& path) {
  namespace proto = zkfleet::proto;
  std::string bytes;
  const auto add = [&](uint8_t kind, uint8_t peer, proto::Envelope& e) {
    const std::string encoded = zkfleet::wire::EncodeEnvelope(e);
    bytes.push_back(static_cast<char>(kind));
    bytes.push_back(static_cast<char>(peer));
    bytes.push_back(static_cast<char>(encoded.size() & 0xff));
    bytes.push_back(static_cast<char>(encoded.size() >> 8));
    bytes += encoded;
    e.Clear();
  };
  proto::Envelope e;
  e.mutable_ready()->set_worker_id("w1");
  e.mutable_ready()->add_circuits("c");
  e.mutable_ready()->set_state(proto::WORKER_STATE_READY);
  add(3, 0, e);
  e.mutable_credit()->set_credits(4);
  add(3, 0, e);
  for (const char* request : {"r1", "r2"}) {
    e.set_correlation_id(1);
    e.mutable_submit()->set_request_id(request);
    e.mutable_submit()->set_circuit_id("c");
    e.mutable_submit()->add_witness_bytes(600);
    add(2, 1, e);
  }
  proto::WorkItemRef ref;
  ref.set_job_seq(1);
  ref.mutable_lease()->set_epoch(1);
  ref.mutable_lease()->set_number(1);
  *e.mutable_started()->add_items() = ref;
  add(3, 0, e);
  *e.mutable_result()->mutable_item() = ref;
  e.mutable_result()->set_ok(true);
  e.mutable_result()->set_circuit_id("c");
  e.mutable_result()->set_request_id("r1");
  e.mutable_result()->set_proof_json("{}");
  add(3, 0, e);
  e.mutable_await()->set_job_seq(1);
  add(2, 1, e);
  WriteBytes(path, bytes);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  try {
    const fs::path out = argv[1];
    for (const char* target : {"zkey", "wtns", "r1cs", "envelope", "broker"}) fs::create_directories(out / target);
    WriteZkey(out / "zkey" / "tiny_bn128.zkey", Curve::kBn254);
    WriteZkey(out / "zkey" / "tiny_bls12381.zkey", Curve::kBls12_381);
    WriteWitnesses(out / "wtns");
    WriteR1csFile(out / "r1cs" / "tiny_bn128.r1cs", Curve::kBn254);
    WriteR1csFile(out / "r1cs" / "tiny_bls12381.r1cs", Curve::kBls12_381);
    WriteEnvelopes(out / "envelope");
    WriteBrokerSession(out / "broker" / "session.bin");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_seed_gen: %s\n", e.what());
    return 1;
  }
  return 0;
}
