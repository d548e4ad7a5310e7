#include "zkfleet/broker/result_verifier.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <utility>

#include "zkfleet/common/error.hpp"
#include "zkfleet/io/binfile.hpp"
#include "zkfleet/io/curve_primes.hpp"
#include "zkfleet/io/json.hpp"
#include "zkfleet/io/snarkjs_json_reader.hpp"
#include "zkfleet/io/wtns_writer.hpp"

namespace zkfleet::broker {
namespace {

// A worker's file can make a parser's message long or multi-line; a verdict's
// `why` goes into one log line.
constexpr size_t kMaxWhy = 400;

std::string OneLine(std::string text) {
  std::replace_if(text.begin(), text.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  if (text.size() > kMaxWhy) {
    text.resize(kMaxWhy);
    text += "...";
  }
  return text;
}

std::string Decimal(const groth16::BigInt& value) {
  return io::LimbsToDecimal(value.data(), static_cast<int>(value.size()));
}

VerifyVerdict Fail(VerifyReason reason, std::string why) {
  VerifyVerdict verdict;
  verdict.ok = false;
  verdict.reason = reason;
  verdict.why = OneLine(std::move(why));
  return verdict;
}

VerifyVerdict Check(const VerifyTask& task) {
  if (!task.verifier) return Fail(VerifyReason::kMalformed, "no verification key");
  groth16::Proof proof;
  std::vector<groth16::BigInt> signals;
  // The readers throw zkfleet::Error for bad input; anything else they might
  // throw is still the input's fault as far as this verdict goes.
  try {
    proof = io::ParseProofJson(task.proof_json, "proof.json");
  } catch (const std::exception& e) {
    return Fail(VerifyReason::kMalformed, e.what());
  }
  try {
    signals = io::ParsePublicSignalsJson(task.public_json, "public.json");
  } catch (const std::exception& e) {
    return Fail(VerifyReason::kMalformed, e.what());
  }
  if (task.expected_public) {
    const std::vector<groth16::BigInt>& expected = *task.expected_public;
    if (signals.size() != expected.size()) {
      return Fail(VerifyReason::kWrongPublicSignals, "public.json: expected " + std::to_string(expected.size()) +
                                                         " public signals (the witness's), found " +
                                                         std::to_string(signals.size()));
    }
    for (size_t i = 0; i < signals.size(); ++i) {
      if (signals[i] != expected[i]) {
        return Fail(VerifyReason::kWrongPublicSignals, "public.json: signal [" + std::to_string(i) +
                                                           "]: expected " + Decimal(expected[i]) +
                                                           " (the witness's), found " + Decimal(signals[i]));
      }
    }
  }
  const groth16::VerifyResult result = task.verifier->Verify(signals, proof);
  if (!result.ok()) {
    // Name the status unless the reason already starts with it ("invalid proof: ...").
    const std::string status = groth16::VerifyStatusName(result.status);
    return Fail(VerifyReason::kInvalidProof,
                result.reason.rfind(status, 0) == 0 ? result.reason : status + ": " + result.reason);
  }
  VerifyVerdict verdict;
  verdict.ok = true;
  verdict.reason = VerifyReason::kValid;
  return verdict;
}

// Random access to the bytes of a witness held in chunks.
class ChunkedBytes {
 public:
  explicit ChunkedBytes(const fleet::Frames& chunks) : chunks_(chunks) {
    starts_.reserve(chunks.size());
    for (const zmq::message_t& chunk : chunks) {
      starts_.push_back(size_);
      size_ += chunk.size();
    }
  }
  uint64_t size() const { return size_; }

  // Copies [offset, offset + n) to `out`; false when that is past the end.
  bool Read(uint64_t offset, void* out, uint64_t n) const {
    if (offset > size_ || n > size_ - offset) return false;
    if (n == 0) return true;
    // The last chunk starting at or before `offset` (empty ones are skipped below).
    size_t i = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin()) - 1;
    auto* dst = static_cast<uint8_t*>(out);
    while (n > 0) {
      const zmq::message_t& chunk = chunks_[i];
      const uint64_t skip = offset - starts_[i];
      const uint64_t take = std::min<uint64_t>(n, chunk.size() - skip);
      std::memcpy(dst, static_cast<const uint8_t*>(chunk.data()) + skip, take);
      dst += take;
      offset += take;
      n -= take;
      ++i;
    }
    return true;
  }
  bool U32(uint64_t offset, uint32_t* out) const {
    uint8_t b[4];
    if (!Read(offset, b, 4)) return false;
    *out = io::LoadU32(b);
    return true;
  }
  bool U64(uint64_t offset, uint64_t* out) const {
    uint8_t b[8];
    if (!Read(offset, b, 8)) return false;
    *out = io::LoadU64(b);
    return true;
  }

 private:
  const fleet::Frames& chunks_;
  std::vector<uint64_t> starts_;
  uint64_t size_ = 0;
};

}  // namespace

const char* VerifyReasonName(VerifyReason reason) {
  switch (reason) {
    case VerifyReason::kValid: return "valid";
    case VerifyReason::kInvalidProof: return "invalid_proof";
    case VerifyReason::kWrongPublicSignals: return "wrong_public_signals";
    case VerifyReason::kMalformed: return "malformed";
  }
  return "unknown";
}

VerifyVerdict VerifyResultNow(const VerifyTask& task) {
  const auto start = std::chrono::steady_clock::now();
  VerifyVerdict verdict;
  try {
    verdict = Check(task);
  } catch (const std::exception& e) {
    // Only allocation failure is left (Verify throws nothing else).
    verdict = Fail(VerifyReason::kMalformed, std::string("verification failed: ") + e.what());
  } catch (...) {
    verdict = Fail(VerifyReason::kMalformed, "verification failed: unknown exception");
  }
  verdict.id = task.id;
  verdict.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return verdict;
}

ResultVerifier::ResultVerifier(unsigned threads) {
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    throw Error(ErrorCode::kInternal, std::string("result verifier: eventfd: ") + std::strerror(errno));
  }
  threads = std::max(1u, threads);
  try {
    for (unsigned t = 0; t < threads; ++t) threads_.emplace_back([this] { Run(); });
  } catch (...) {
    // The destructor does not run for a throwing constructor: stop the threads started.
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (std::thread& thread : threads_) thread.join();
    close(wake_fd_);
    throw;
  }
}

ResultVerifier::~ResultVerifier() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& thread : threads_) thread.join();
  close(wake_fd_);
}

void ResultVerifier::Submit(VerifyTask task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
    ++in_flight_;
  }
  cv_.notify_one();
}

std::vector<VerifyVerdict> ResultVerifier::TakeFinished() {
  std::vector<VerifyVerdict> out;
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_.empty()) return out;
  out.swap(finished_);
  in_flight_ -= out.size();
  // Under mu_, so the fd is readable exactly while finished_ is non-empty.
  uint64_t count;
  while (read(wake_fd_, &count, sizeof count) < 0 && errno == EINTR) {
  }
  return out;
}

size_t ResultVerifier::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_;
}

void ResultVerifier::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    VerifyTask task = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    VerifyVerdict verdict = VerifyResultNow(task);
    task = VerifyTask{};  // free the JSON and release the key outside the lock
    lock.lock();
    const bool was_empty = finished_.empty();
    finished_.push_back(std::move(verdict));
    if (was_empty) {
      const uint64_t one = 1;
      while (write(wake_fd_, &one, sizeof one) < 0 && errno == EINTR) {
      }
    }
  }
}

std::optional<std::vector<groth16::BigInt>> PublicSignalsOfWitness(const fleet::WitnessFrames& witness,
                                                                   uint32_t n_public, std::string* why) {
  const auto fail = [&](const std::string& message) -> std::optional<std::vector<groth16::BigInt>> {
    if (why) *why = "witness: " + message;
    return std::nullopt;
  };
  const ChunkedBytes bytes(witness.chunks);
  char magic[4];
  uint32_t version = 0, n_sections = 0;
  if (!bytes.Read(0, magic, 4) || !bytes.U32(4, &version) || !bytes.U32(8, &n_sections)) {
    return fail("truncated: " + std::to_string(bytes.size()) + " bytes, no container header");
  }
  if (std::memcmp(magic, "wtns", 4) != 0) return fail("bad magic: expected \"wtns\"");
  if (version == 0 || version > io::kWtnsMaxVersion) {
    return fail("unsupported version " + std::to_string(version));
  }
  // The section table (sections come in any order, spec §2); each entry
  // advances by at least 12 bytes, so a huge nSections ends at the file's end.
  struct Located {
    bool found = false;
    uint64_t offset = 0, size = 0;
  } header, values;
  uint64_t pos = io::BinFile::kHeaderSize;
  for (uint32_t s = 0; s < n_sections; ++s) {
    uint32_t id = 0;
    uint64_t size = 0;
    if (!bytes.U32(pos, &id) || !bytes.U64(pos + 4, &size)) {
      return fail("truncated: section table entry " + std::to_string(s) + " at byte " + std::to_string(pos));
    }
    const uint64_t payload = pos + io::BinFile::kSectionHeaderSize;
    if (size > bytes.size() - payload) {
      return fail("truncated: section " + std::to_string(id) + " needs " + std::to_string(size) +
                  " bytes at byte " + std::to_string(payload) + ", the witness has " + std::to_string(bytes.size()));
    }
    if (id == 1 || id == 2) {
      Located& located = id == 1 ? header : values;
      if (located.found) return fail("section " + std::to_string(id) + " duplicated");
      located = {true, payload, size};
    }
    pos = payload + size;
  }
  if (pos != bytes.size()) {
    return fail(std::to_string(bytes.size() - pos) + " bytes after the last section");
  }
  if (!header.found) return fail("no section 1 (header)");
  if (!values.found) return fail("no section 2 (witness values)");

  uint32_t n8 = 0, n_witness = 0;
  if (!bytes.U32(header.offset, &n8)) return fail("section 1 (header): truncated");
  // 48 bytes: the widest field a groth16::BigInt holds (BLS12-381's r needs 32).
  if (n8 < 8 || n8 > 48 || n8 % 8 != 0) {
    return fail("header: n8: expected a multiple of 8 in [8, 48], found " + std::to_string(n8));
  }
  if (header.size != 8ull + n8) {
    return fail("section 1 (header): size: expected " + std::to_string(8 + n8) + ", found " +
                std::to_string(header.size));
  }
  uint8_t prime[48];
  bytes.Read(header.offset + 4, prime, n8);
  bytes.U32(header.offset + 4 + n8, &n_witness);
  if (values.size != uint64_t{n8} * n_witness) {
    return fail("section 2 (witness values): size: expected n8 * nWitness = " + std::to_string(uint64_t{n8} * n_witness) +
                ", found " + std::to_string(values.size));
  }
  if (n_witness < uint64_t{n_public} + 1) {
    return fail("nWitness " + std::to_string(n_witness) + " is too small for w[0] and " + std::to_string(n_public) +
                " public signals");
  }
  // Only w[0..n_public] are copied, never the rest of the witness.
  std::vector<uint8_t> head((uint64_t{n_public} + 1) * n8);
  bytes.Read(values.offset, head.data(), head.size());
  if (head[0] != 1 || std::any_of(head.begin() + 1, head.begin() + n8, [](uint8_t b) { return b != 0; })) {
    return fail("w[0]: expected 1, found " + io::HexLe({head.data(), n8}));
  }
  std::vector<groth16::BigInt> out(n_public);
  for (uint32_t i = 0; i < n_public; ++i) {
    const uint8_t* value = head.data() + uint64_t{i + 1} * n8;
    if (!io::LessThanLe(value, prime, n8)) {
      return fail("w[" + std::to_string(i + 1) + "]: expected < prime " + io::HexLe({prime, n8}) + ", found " +
                  io::HexLe({value, n8}));
    }
    for (uint32_t limb = 0; limb < n8 / 8; ++limb) out[i][limb] = io::LoadU64(value + 8 * limb);
  }
  return out;
}

}  // namespace zkfleet::broker
