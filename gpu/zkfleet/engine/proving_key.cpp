#include "zkfleet/engine/proving_key.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <vector>

#include "zkfleet/common/seconds_since.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/groth16/cpu_prover.hpp"
#include "zkfleet/curve/bls12_381.hpp"
#include "zkfleet/curve/bn254.hpp"
#include "zkfleet/groth16/assembly.hpp"
#include "zkfleet/groth16/key_validation.hpp"
#include "zkfleet/groth16/verifier.hpp"
#include "zkfleet/engine/snarkjs.hpp"
#include "zkfleet/snarkjs/json_writer.hpp"
#include "zkfleet/zkey/zkey.hpp"

#ifdef ZKFLEET_HAVE_CUDA
#include "zkfleet/groth16/cuda_prover.hpp"
#endif

namespace zkfleet::engine {
namespace {

// Faults still to inject (ZKFLEET_FAULT_INJECT=msm:<n>[,device_lost:<m>]), read once.
struct InjectedFaults {
  std::atomic<int64_t> msm{0};
  std::atomic<int64_t> device_lost{0};
};

InjectedFaults& FaultsLeft() {
  // Never freed (read by every load until exit); owned by a unique_ptr while
  // it is parsed, so a bad spec that throws leaks nothing.
  static InjectedFaults* faults = [] {
    auto f = std::make_unique<InjectedFaults>();
    const char* env = std::getenv("ZKFLEET_FAULT_INJECT");
    if (!env || !*env) return f.release();
    const std::string spec(env);
    const auto bad = [&] {
      return Error(ErrorCode::kInvalidArgument,
                   "ZKFLEET_FAULT_INJECT='" + spec + "': expected msm:<n> and/or device_lost:<n>, comma-separated");
    };
    size_t pos = 0;
    while (pos <= spec.size()) {
      const size_t end = std::min(spec.find(',', pos), spec.size());
      const std::string item = spec.substr(pos, end - pos);
      const size_t colon = item.find(':');
      if (colon == std::string::npos) throw bad();
      const std::string kind = item.substr(0, colon), count = item.substr(colon + 1);
      char* stop = nullptr;
      const long long n = std::strtoll(count.c_str(), &stop, 10);
      if (count.empty() || *stop != '\0' || n < 0) throw bad();
      if (kind == "msm") {
        f->msm = n;
      } else if (kind == "device_lost") {
        f->device_lost = n;
      } else {
        throw bad();
      }
      pos = end + 1;
    }
    return f.release();
  }();
  return *faults;
}

bool Take(std::atomic<int64_t>& left) {
  int64_t n = left.load();
  while (n > 0) {
    if (left.compare_exchange_weak(n, n - 1)) return true;
  }
  return false;
}

// The public signals w[1..n_public] of `witness` as canonical integers (the
// backends have checked that it matches the key: n8 == 32, values < r).
std::vector<BigInt> PublicSignalsOf(const Witness& witness, uint32_t n_public) {
  std::vector<BigInt> out(n_public);
  const uint32_t n8 = witness.n8();
  for (uint32_t i = 0; i < n_public && i + 1 < witness.count(); ++i) {
    const uint8_t* value = witness.values() + uint64_t{i + 1} * n8;
    for (uint32_t limb = 0; limb < n8 / 8 && limb < out[i].size(); ++limb) {
      std::memcpy(&out[i][limb], value + 8 * limb, 8);
    }
  }
  return out;
}

// The proof the caller gets: the points as assembled, and the snarkjs files
// formatted from those very points.
Proof Finish(groth16::RawProof raw, Curve curve, const std::vector<BigInt>& signals) {
  Proof proof;
  proof.points = std::move(raw.points);
  proof.points.curve = curve;
  proof.timings = raw.timings;
  proof.proof_json = ProofJson(proof.points, curve);
  proof.public_signals.reserve(signals.size());
  for (const BigInt& value : signals) proof.public_signals.push_back(DecimalString(value));
  proof.public_json = io::PublicJson(proof.public_signals);
  return proof;
}

// Whether `path` is still the file whose identity was `identity` (false when
// it cannot even be opened).
bool SameFileNow(const std::string& path, const FileIdentity& identity) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool same = false;
  try {
    same = FileIdentity::OfDescriptor(fd, path).Same(identity);
  } catch (const Error&) {
  }
  ::close(fd);
  return same;
}

}  // namespace

bool TakeInjectedMsmFault() { return Take(FaultsLeft().msm); }

std::unique_ptr<ProvingKey> ProvingKey::Load(const std::string& zkey_path, const EngineOptions& options) {
  Backend backend = options.backend;
  if (backend == Backend::kAuto) backend = CudaAvailable() ? Backend::kCuda : Backend::kCpu;
  (void)FaultsLeft();  // a malformed ZKFLEET_FAULT_INJECT fails the load, not a proof

  LoadTimings timings;
  const auto t_start = std::chrono::steady_clock::now();
  io::ZkeyFile zkey = io::ZkeyFile::Open(zkey_path);
  timings.open_s = SecondsSince(t_start);
  EngineOptions load_options = options;  // validate_key off after a cache hit
  KeyCheckReport key_check;
  // Remembered by the file's identity (taken when it was mapped): no digest
  // of the whole key. Whether the file stayed that file is asked again once
  // its bytes are copied (below).
  const FileIdentity& identity = zkey.identity();
  const bool by_identity = options.validate_key && options.checked_keys.enabled() && identity.inode != 0 &&
                           options.checked_keys.ContainsFile(identity);
  if (by_identity) {
    load_options.validate_key = false;
    key_check.outcome = KeyCheck::kRemembered;
  } else if (options.validate_key && options.checked_keys.enabled()) {
    // The digest of the mapped bytes this load checks and copies, not of
    // another read of the path: what was checked is what is remembered.
    const auto t_digest = std::chrono::steady_clock::now();
    key_check.digest = CheckedKeys::Digest(zkey.bytes(), static_cast<unsigned>(std::max(options.threads, 0)));
    timings.digest_s = SecondsSince(t_digest);
    if (options.checked_keys.Contains(key_check.digest)) {
      load_options.validate_key = false;
      key_check.outcome = KeyCheck::kRemembered;
    }
  }
  if (load_options.validate_key) {
    // The CUDA key checks the big sections on the device, once uploaded
    // (inside backend_s); the header points and IC are checked here.
    const auto t_check = std::chrono::steady_clock::now();
    groth16::ValidateZkeyPoints(zkey, options.threads,
                                backend == Backend::kCuda ? groth16::ZkeyPoints::kHeaderAndIc : groth16::ZkeyPoints::kAll);
    timings.key_check_s = SecondsSince(t_check);
  }
  auto verifier = std::make_shared<const PreparedVerifier>(groth16::VerificationKeyFromZkey(zkey));

  const auto t_backend = std::chrono::steady_clock::now();
  std::unique_ptr<groth16::Key> backend_key;
  if (backend == Backend::kCpu) {
    backend_key = cpu::LoadCpuProvingKey(zkey, load_options);
  } else {
#ifdef ZKFLEET_HAVE_CUDA
    if (!CudaAvailable()) {
      throw Error(ErrorCode::kDeviceError, "backend cuda requested for " + zkey_path + " but no CUDA device is present");
    }
    backend_key = cuda::LoadCudaProvingKey(zkey, load_options);
#else
    throw Error(ErrorCode::kUnsupported, "backend cuda requested for " + zkey_path +
                                             " but this build has no CUDA backend (configure with -DZKFLEET_CUDA=ON)");
#endif
  }
  timings.backend_s = SecondsSince(t_backend);
  // The mapping shows the file as it is now: a key remembered by identity is
  // used only if the file is still the one remembered now that its bytes are
  // copied; otherwise it is loaded again, digested and checked.
  // Asked only where it matters: a load by identity, or one that may record it.
  const bool unchanged = (by_identity || !key_check.digest.empty()) && identity.inode != 0 &&
                         SameFileNow(zkey_path, identity);
  if (by_identity && !unchanged) return Load(zkey_path, options);
  if (load_options.validate_key) {
    key_check.outcome = KeyCheck::kChecked;  // every point passed (the CUDA key's too, inside its load)
    if (!key_check.digest.empty()) {
      std::string why = options.checked_keys.Record(key_check.digest, zkey_path);
      if (!why.empty() && options.checked_keys.FirstWarning()) key_check.cache_warning = std::move(why);
    }
  }
  // A key that passed (checked now, or remembered by its content) is
  // remembered by its file's identity too, so that the next load of this
  // file skips the digest; not when the file changed meanwhile, or too
  // recently (CheckedKeys::RecordFile).
  if (!by_identity && !key_check.digest.empty() && unchanged) {
    (void)options.checked_keys.RecordFile(identity, zkey_path);
  }
  EngineOptions resolved = options;
  resolved.backend = backend;
  std::unique_ptr<ProvingKey> key(new ProvingKey(std::move(backend_key), resolved));
  timings.total_s = SecondsSince(t_start);
  key->load_timings_ = timings;
  key->key_check_ = std::move(key_check);
  key->circuit_name_ = std::filesystem::path(zkey_path).stem().string();
  key->verifier_ = std::move(verifier);
  return key;
}

ProvingKey::ProvingKey(std::unique_ptr<groth16::Key> backend_key, const EngineOptions& options)
    : backend_key_(std::move(backend_key)), options_(options) {}

ProvingKey::~ProvingKey() = default;

const CircuitInfo& ProvingKey::info() const { return backend_key_->info(); }

bool ProvingKey::AwaitMsmTables() const { return backend_key_->AwaitMsmTables(); }

const VerificationKey& ProvingKey::verification_key() const { return verifier_->key(); }

std::string ProvingKey::Check(const ProofPoints& points, std::span<const BigInt> public_signals) const {
  const VerifyResult result = verifier_->Verify(public_signals, points);
  return result.ok() ? std::string() : result.reason;
}

const ProvingKey& ProvingKey::Reference() const {
  if (backend() == Backend::kCpu) return *this;
  std::lock_guard<std::mutex> lock(reference_mutex_);
  if (!reference_) {
    EngineOptions cpu = options_;
    cpu.backend = Backend::kCpu;
    cpu.validate_key = false;  // checked when this key was loaded
    reference_ = Load(info().path, cpu);
  }
  return *reference_;
}

Proof ProvingKey::Prove(const Witness& witness, const ProveOptions& options) const {
  if (Take(FaultsLeft().device_lost)) {
    throw Error(ErrorCode::kDeviceLost, "injected fatal device error (ZKFLEET_FAULT_INJECT device_lost, test only): "
                                        "the device cannot be used again by this process");
  }
  const Curve curve = info().curve;
  if (!options.verify) {
    groth16::RawProof raw = backend_key_->ProveUnchecked(witness, options, TakeInjectedMsmFault());
    return Finish(std::move(raw), curve, PublicSignalsOf(witness, info().n_public));
  }

  // The same r and s for a re-proof: draw them here unless the caller did.
  ProveOptions fixed = options;
  if (!fixed.r || !fixed.s) {
    const auto draw = [&](std::optional<std::array<uint8_t, 32>>& out) {
      if (out) return;
      uint64_t limbs[4];
      switch (info().curve) {
        case Curve::kBn254: groth16::RandomScalar<curve::Bn254::Fr>(limbs); break;
        case Curve::kBls12_381: groth16::RandomScalar<curve::Bls12_381::Fr>(limbs); break;
      }
      out.emplace();
      std::memcpy(out->data(), limbs, 32);
    };
    draw(fixed.r);
    draw(fixed.s);
  }
  // The points are verified as assembled (no round trip through proof.json);
  // proof.json is then formatted from the very points that passed.
  groth16::RawProof raw = backend_key_->ProveUnchecked(witness, fixed, TakeInjectedMsmFault());
  const std::vector<BigInt> signals = PublicSignalsOf(witness, info().n_public);
  raw.points.curve = curve;
  auto t0 = std::chrono::steady_clock::now();
  std::string fault = Check(raw.points, signals);
  const double first_verify_s = SecondsSince(t0);
  if (fault.empty()) {
    Proof proof = Finish(std::move(raw), curve, signals);
    proof.check.verify_s = first_verify_s;
    proof.check.verified = true;
    return proof;
  }
  // Failed: was it the engine or the witness? Prove again on the reference path.
  groth16::RawProof raw_again = Reference().backend_key_->ProveUnchecked(witness, fixed, /*inject_fault=*/false);
  raw_again.timings.total_s += raw.timings.total_s;
  raw_again.points.curve = curve;
  t0 = std::chrono::steady_clock::now();
  const std::string second = Check(raw_again.points, signals);
  Proof again = Finish(std::move(raw_again), curve, signals);
  again.check.verify_s = first_verify_s + SecondsSince(t0);
  if (!second.empty()) {
    throw Error(ErrorCode::kUnsatisfied, "witness does not satisfy circuit " + circuit_name_ + " (" +
                                             witness.origin() + ": its proof fails verification: " + second + ")");
  }
  again.check.verified = true;
  again.check.engine_fault = std::string(BackendName(backend())) + " proof failed verification (" + fault + ")";
  return again;
}

}  // namespace zkfleet::engine
