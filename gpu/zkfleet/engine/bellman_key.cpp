#include "zkfleet/engine/bellman.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>

#include "zkfleet/bellman/decoded_image.hpp"
#include "zkfleet/bellman/parameters.hpp"
#include "zkfleet/common/seconds_since.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/engine/checked_keys.hpp"
#include "zkfleet/engine/proving_key.hpp"
#include "zkfleet/ff/bls12_381.hpp"
#include "zkfleet/groth16/assembly.hpp"
#include "zkfleet/groth16/assignment_key.hpp"
#include "zkfleet/runtime/thread_pool.hpp"
#ifdef ZKFLEET_HAVE_CUDA
#include "zkfleet/groth16/assignment_cuda_prover.hpp"
#endif

namespace zkfleet::engine {
namespace {

using Fr = ff::Bls12_381Fr;

// Every scalar must be a reduced Montgomery value (< r): the field code
// assumes it, and a peer's bytes are not trusted.
void CheckScalars(const AssignmentView& v, cpu::ThreadPool& pool) {
  const std::pair<const char*, std::span<const FrMont>> vectors[] = {
      {"a", v.a}, {"b", v.b}, {"c", v.c}, {"input", v.input}, {"aux", v.aux}};
  for (const auto& vector : vectors) {
    const char* name = vector.first;
    const std::span<const FrMont> values = vector.second;  // not a structured binding: clang before 16 cannot capture one
    const uint64_t bad = pool.FirstFailing(values.size(), [&](uint64_t i) { return Fr::is_below_modulus(values[i].data()); });
    if (bad < values.size()) {
      throw Error(ErrorCode::kInvalidArgument,
                  std::string("assignment: ") + name + "[" + std::to_string(bad) + "] is not below the scalar field modulus");
    }
  }
}

// The first row where a·b != c, or -1.
int64_t FirstUnsatisfiedRow(const AssignmentView& v) {
  for (size_t i = 0; i < v.a.size(); ++i) {
    if (!(Fr::from_mont(v.a[i].data()) * Fr::from_mont(v.b[i].data()) == Fr::from_mont(v.c[i].data()))) {
      return static_cast<int64_t>(i);
    }
  }
  return -1;
}

std::array<uint8_t, 32> RandomBlinding() {
  uint64_t limbs[4];
  groth16::RandomScalar<Fr>(limbs);
  std::array<uint8_t, 32> out;
  std::memcpy(out.data(), limbs, 32);
  return out;
}

// The points of `params_path` mapped from its decoded image
// (EngineOptions::keep_decoded_params): only for a file remembered as
// checked, whose image is there and usable, and which is still the same file
// once the image is mapped. nullopt otherwise (the caller reads the file);
// `problem` says why an image that was there could not be used.
std::optional<bellman::Parameters> MapRememberedImage(const std::string& params_path, const CheckedKeys& cache,
                                                      cpu::ThreadPool& pool, FileIdentity* identity,
                                                      std::string* problem) {
  const int fd = ::open(params_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;  // the usual open reports it
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  const FileIdentity before = FileIdentity::OfDescriptor(fd, params_path);
  if (!cache.ContainsFile(before) || !cache.ContainsFileImage(before)) return std::nullopt;
  std::string why;
  std::optional<bellman::Parameters> params = bellman::MapDecodedImage(cache.FileImagePath(before), before, pool, &why);
  if (!params) {
    *problem = "decoded image not used: " + why;
    return std::nullopt;
  }
  if (!FileIdentity::OfDescriptor(fd, params_path).Same(before)) return std::nullopt;  // changed meanwhile
  *identity = before;
  return params;
}

}  // namespace

struct BellmanKey::Impl {
  Impl(std::unique_ptr<groth16::AssignmentKey> backend_in, std::vector<uint8_t> vk_bytes_in, const VerificationKey& vk)
      : backend(std::move(backend_in)), vk_bytes(std::move(vk_bytes_in)), verifier(vk), info(backend->info()) {}
  std::unique_ptr<groth16::AssignmentKey> backend;
  std::vector<uint8_t> vk_bytes;
  PreparedVerifier verifier;
  BellmanInfo info;  // the backend's, plus where it was loaded from
  cpu::ThreadPool pool{0};  // the scalar checks (FirstFailing is safe from several callers)
  // A key that is not the CPU's and was loaded from a file re-proves a failed
  // proof on a CPU key of the same file, loaded on the first failure.
  EngineOptions options;
  std::mutex reference_mutex;
  std::unique_ptr<BellmanKey> reference;
  LoadTimings load_timings;
  KeyCheckReport key_check;
};

BellmanKey::BellmanKey(std::unique_ptr<groth16::AssignmentKey> backend_key, std::vector<uint8_t> vk_bytes,
                       const VerificationKey& vk)
    : impl_(std::make_unique<Impl>(std::move(backend_key), std::move(vk_bytes), vk)) {}

BellmanKey::~BellmanKey() = default;

std::unique_ptr<BellmanKey> BellmanKey::Load(const std::string& params_path, const EngineOptions& options,
                                             const BellmanLoadProgress& progress) {
  Backend backend = options.backend;
  if (backend == Backend::kAuto) backend = CudaAvailable() ? Backend::kCuda : Backend::kCpu;
  LoadTimings timings;
  KeyCheckReport key_check;
  const auto t_start = std::chrono::steady_clock::now();
  cpu::ThreadPool pool(options.threads);
  bellman::ReadOptions read;
  read.check_points = options.validate_key;
  // A CUDA key checks h, l, a, b_g1 and b_g2 on the device after the upload
  // (KeyOptions::validate_key): the CPU read checks the verifying key and ic.
  read.arrays_checked_on_device = backend == Backend::kCuda;
  read.progress = progress;
  const CheckedKeys& cache = options.checked_keys;
  const bool use_cache = options.validate_key && cache.enabled();

  // A remembered file whose decoded image is kept: its points are mapped
  // from the image, the file itself is not read (only its identity taken).
  const bool keep_image = use_cache && options.keep_decoded_params;
  FileIdentity identity;
  std::optional<bellman::Parameters> from_image;
  if (keep_image) {
    const auto t_map = std::chrono::steady_clock::now();
    from_image = MapRememberedImage(params_path, cache, pool, &identity, &key_check.image_warning);
    (from_image ? timings.key_check_s : timings.open_s) = SecondsSince(t_map);
  }
  bellman::Parameters params;
  bool remembered = false;
  bool unchanged = true;
  if (from_image) {
    params = std::move(*from_image);
    remembered = true;
    key_check.digest = identity.Digest();
    key_check.image_mapped = cache.FileImagePath(identity).string();
    if (progress) progress(identity.size, identity.size);
  } else {
    const auto t_open = std::chrono::steady_clock::now();
    bellman::ParametersFile file = bellman::ParametersFile::Open(params_path);
    timings.open_s += SecondsSince(t_open);
    if (use_cache) {
      const auto t_digest = std::chrono::steady_clock::now();
      key_check.digest = file.identity().Digest();
      remembered = cache.ContainsFile(file.identity());
      timings.digest_s = SecondsSince(t_digest);
    }
    const auto t_check = std::chrono::steady_clock::now();
    // A remembered file is read with the encoding checks only (flags, < q):
    // the curve test would cost 60% more than the whole unchecked read
    // (docs/benchmarks.md), for a file whose every point passed both tests and
    // which has not changed since.
    if (remembered) read.check_points = false;
    params = bellman::ReadParameters(file, pool, read);
    unchanged = file.Restat().Same(file.identity());
    if (remembered && !unchanged) {
      // Changed while it was read unchecked: what was read is not what was
      // checked before. Read it again, opened afresh, with every check, as a
      // file never seen.
      file = bellman::ParametersFile::Open(params_path);
      key_check.digest = file.identity().Digest();
      remembered = false;
      read.check_points = true;
      params = bellman::ReadParameters(file, pool, read);
      unchanged = file.Restat().Same(file.identity());
    }
    identity = file.identity();
    timings.key_check_s = SecondsSince(t_check);
    // The image for the next load: written by the first load that finds the
    // file checked and unchanged -- a remembered one, or on the CPU the load
    // that has just checked every point (a CUDA key checks on the device,
    // after this: its image is written by the next load). Failing to write
    // it never fails the load.
    const bool checked_here = backend == Backend::kCpu && options.validate_key && unchanged;
    if (keep_image && (remembered || checked_here)) {
      const auto t_image = std::chrono::steady_clock::now();
      const std::string image = cache.FileImagePath(identity).string();
      std::string why = cache.PrepareDir();
      if (why.empty()) {
        try {
          // By its canonical path: what the clean-up of older images compares.
          std::error_code error;
          const std::filesystem::path canonical = std::filesystem::weakly_canonical(params_path, error);
          bellman::WriteDecodedImage(image, params, identity, error ? params_path : canonical.string(), pool);
          key_check.image_written = image;
        } catch (const Error& e) {
          why = e.what();
        }
      }
      if (!why.empty()) {
        key_check.image_warning += (key_check.image_warning.empty() ? "" : "; ") + ("decoded image not kept: " + why);
      }
      timings.image_s = SecondsSince(t_image);
    }
  }

  std::vector<uint8_t> vk_bytes = bellman::SerializeVerifyingKey(params.vk);
  const VerificationKey vk = bellman::ToEngineKey(params.vk);
  EngineOptions backend_options = options;
  backend_options.validate_key = options.validate_key && !remembered;  // the device's share of the check
  const auto t_backend = std::chrono::steady_clock::now();
  std::unique_ptr<groth16::AssignmentKey> key;
  if (backend == Backend::kCpu) {
    key = groth16::MakeCpuAssignmentKey(std::move(params), backend_options);
  } else {
#ifdef ZKFLEET_HAVE_CUDA
    if (!CudaAvailable()) {
      throw Error(ErrorCode::kDeviceError, "backend cuda requested for " + params_path + " but no CUDA device is present");
    }
    key = cuda::MakeCudaAssignmentKey(std::move(params), backend_options);
#else
    throw Error(ErrorCode::kUnsupported, "backend cuda requested for " + params_path +
                                             " but this build has no CUDA backend (configure with -DZKFLEET_CUDA=ON)");
#endif
  }
  timings.backend_s = SecondsSince(t_backend);

  if (!options.validate_key) {
    key_check.outcome = KeyCheck::kSkipped;
  } else if (remembered) {
    key_check.outcome = KeyCheck::kRemembered;
  } else {
    // Every point passed: on the CPU, or the arrays on the device inside the
    // CUDA key's load.
    key_check.outcome = KeyCheck::kChecked;
    if (use_cache) {
      // Recorded by the identity taken before the check, only if the file was
      // still that one after the read: a change during the read leaves it
      // unrecorded (the next load checks again).
      static const std::string kChanged = "the file changed while it was checked";
      std::string why = unchanged ? cache.RecordFile(identity, params_path) : kChanged;
      const bool about_this_file = why.rfind(CheckedKeys::kTooRecent, 0) == 0 || why == kChanged;
      if (!why.empty() && (about_this_file || cache.FirstWarning())) key_check.cache_warning = std::move(why);
    }
  }
  auto out = std::make_unique<BellmanKey>(std::move(key), std::move(vk_bytes), vk);
  out->impl_->info.path = params_path;
  out->impl_->options = options;
  out->impl_->options.backend = backend;
  timings.total_s = SecondsSince(t_start);
  out->impl_->load_timings = timings;
  out->impl_->key_check = std::move(key_check);
  return out;
}

const LoadTimings& BellmanKey::load_timings() const { return impl_->load_timings; }
const KeyCheckReport& BellmanKey::key_check() const { return impl_->key_check; }
const BellmanInfo& BellmanKey::info() const { return impl_->info; }
const VerificationKey& BellmanKey::verification_key() const { return impl_->verifier.key(); }
const std::vector<uint8_t>& BellmanKey::verifying_key_bytes() const { return impl_->vk_bytes; }

const groth16::AssignmentKey* BellmanKey::ReferenceBackend() const {
  if (info().backend == Backend::kCpu) return impl_->backend.get();
  if (info().path.empty()) return nullptr;
  std::lock_guard<std::mutex> lock(impl_->reference_mutex);
  if (!impl_->reference) {
    EngineOptions cpu = impl_->options;
    cpu.backend = Backend::kCpu;
    cpu.validate_key = false;  // checked when this key was loaded
    impl_->reference = Load(info().path, cpu);
  }
  return impl_->reference->impl_->backend.get();
}

BellmanProof BellmanKey::Prove(const AssignmentView& assignment, const ProveOptions& options) const {
  // The shape first: sizes are compared with the parameters before any
  // scalar is read.
  groth16::CheckAssignmentShape(assignment, info());
  CheckScalars(assignment, impl_->pool);
  BellmanProof proof;
  for (size_t i = 1; i < assignment.input.size(); ++i) {
    BigInt x{};
    Fr::from_mont(assignment.input[i].data()).to_canonical(x.data());
    proof.public_inputs.push_back(x);
  }
  // One r and s for both tries, so that a retry proves the same statement.
  ProveOptions fixed = options;
  if (!fixed.r) fixed.r = RandomBlinding();
  if (!fixed.s) fixed.s = RandomBlinding();

  groth16::RawProof raw = impl_->backend->ProveUnchecked(assignment, fixed, TakeInjectedMsmFault());
  const auto t0 = std::chrono::steady_clock::now();
  VerifyResult result;
  if (options.verify) result = impl_->verifier.Verify(proof.public_inputs, raw.points);
  if (!result.ok()) {
    const int64_t row = FirstUnsatisfiedRow(assignment);
    if (row >= 0) {
      throw Error(ErrorCode::kUnsatisfied, "assignment does not satisfy its constraints: a·b != c at row " +
                                               std::to_string(row) + " (the proof failed verification: " + result.reason + ")");
    }
    // Which side was wrong: prove again (same r, s) on the reference path,
    // the CPU key of the same parameters where there is one.
    const std::string first = result.reason;
    const double first_total = raw.timings.total_s;
    const groth16::AssignmentKey* reference = ReferenceBackend();
    raw = (reference ? reference : impl_->backend.get())->ProveUnchecked(assignment, fixed, /*inject_fault=*/false);
    raw.timings.total_s += first_total;
    result = impl_->verifier.Verify(proof.public_inputs, raw.points);
    if (!result.ok() && reference) {
      throw Error(ErrorCode::kUnsatisfied,
                  "the proof of this assignment fails verification, also on the CPU reference path, although a·b = c "
                  "holds on every row: its evaluations do not belong to its assignment or to these parameters (" +
                      result.reason + ")");
    }
    if (!result.ok()) {
      // No reference path (parameters built in memory for a device): the
      // engine cannot tell a repeatable device fault from a bad assignment.
      throw Error(ErrorCode::kInternal,
                  "the proof of this assignment fails verification twice on the " +
                      std::string(BackendName(info().backend)) +
                      " backend (no CPU reference for these parameters) although a·b = c holds on every row: the "
                      "evaluations do not belong to the assignment, or the engine is wrong (" + result.reason + ")");
    }
    proof.check.engine_fault = first;
  }
  proof.check.verify_s = SecondsSince(t0);
  proof.check.verified = options.verify;
  proof.points = raw.points;
  proof.points.curve = Curve::kBls12_381;
  proof.timings = raw.timings;
  proof.bytes = bellman::EncodeProof(proof.points);
  return proof;
}

}  // namespace zkfleet::engine
