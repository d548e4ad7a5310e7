#include "zkfleet/wire/public_digest.hpp"
#include "zkfleet/worker/circuit_set.hpp"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <optional>
#include <utility>
#include <thread>

#include <spdlog/spdlog.h>

#include "zkfleet/common/error.hpp"
#include "zkfleet/engine/assignment_file.hpp"
#include "zkfleet/engine/snarkjs.hpp"
#include "zkfleet/engine/witness.hpp"

namespace zkfleet::worker {
namespace {

// The engine's phase timings into the RESULT's (both kinds of proof).
void CopyTimings(const engine::PhaseTimings& from, proto::PhaseTimings& to) {
  to.set_witness_transfer_s(from.witness_transfer_s);
  to.set_build_abc_s(from.build_abc_s);
  to.set_ntt_s(from.ntt_s);
  to.set_msm_s(from.msm_s);
  to.set_prove_total_s(from.total_s);
}

// The benchmark answer: clearly not a proof, so nobody mistakes it for one.
constexpr const char* kInstantProof = R"({"benchmark":"instant","note":"no proof: worker runs with --instant"})";

// Errors that are the device's or the host's fault, not the witness's: another
// worker (or a later attempt) may succeed.
bool IsRetryable(ErrorCode code) {
  return code == ErrorCode::kDeviceError || code == ErrorCode::kDeviceLost || code == ErrorCode::kResourceExhausted ||
         code == ErrorCode::kInternal || code == ErrorCode::kIo;
}

// Where an item comes from, in the engine's error messages.
std::string Origin(const proto::Job& job) {
  return "job " + std::to_string(job.item().job_seq()) + " partition " + std::to_string(job.item().partition()) +
         " (request " + job.request_id() + ")";
}

// A witness by reference: the broker never read it, so the client's digest
// of the public signals is checked here first. A witness committing to other
// public signals is the client's error, not a proof to send (the broker would
// have to reject it and blame this worker). nullopt when it matches (or no
// digest was given).
std::optional<ProveOutcome> RefuseOtherPublicSignals(const proto::Job& job, const std::string& public_json) {
  if (job.public_signals_sha256().empty()) return std::nullopt;
  std::string why;
  const auto digest = wire::PublicSignalsDigestOfJson(public_json, &why);
  if (digest && *digest == job.public_signals_sha256()) return std::nullopt;
  ProveOutcome refused;
  refused.error = "the witness commits to other public signals than the client expects "
                  "(public_signals_sha256 " + wire::DigestHex(job.public_signals_sha256()) + ", the witness's " +
                  (digest ? wire::DigestHex(*digest) : why) + "); its proof was not sent";
  refused.retryable = false;
  return refused;
}

// A failed proof: the engine's error in the words the client sees.
ProveOutcome FailureOf(const Error& e, const std::string& circuit_id, const char* what) {
  ProveOutcome outcome;
  if (e.code() == ErrorCode::kUnsatisfied) {
    // The client's error; the engine's detail (which check failed) goes to the log.
    spdlog::warn("circuit {}: {}", circuit_id, e.what());
    outcome.error = std::string(what) + " does not satisfy circuit " + circuit_id;
    outcome.retryable = false;
    return outcome;
  }
  outcome.error = std::string(ErrorCodeName(e.code())) + ": " + e.what();
  outcome.retryable = IsRetryable(e.code());
  outcome.device_lost = e.code() == ErrorCode::kDeviceLost;
  return outcome;
}

}  // namespace

CircuitSet::CircuitSet(std::vector<CircuitSpec> specs, engine::EngineOptions engine_options,
                       std::chrono::milliseconds instant_delay, bool verify, engine::CheckedKeys checked_keys,
                       std::vector<Device> devices)
    : specs_(std::move(specs)),
      engine_options_(engine_options),
      instant_delay_(instant_delay),
      verify_(verify),
      devices_(devices.empty() ? std::vector<Device>{{engine_options.cuda_device, "none"}} : std::move(devices)),
      provers_(devices_.size()),
      device_resident_bytes_(devices_.size()) {
  released_.assign(devices_.size(), false);
  engine_options_.checked_keys = std::move(checked_keys);
  bool any_engine = false;
  for (const CircuitSpec& spec : specs_) any_engine |= !spec.instant;
  engine::Backend backend = engine_options_.backend;
  if (backend == engine::Backend::kAuto) backend = engine::CudaAvailable() ? engine::Backend::kCuda : engine::Backend::kCpu;
  backend_name_ = any_engine ? engine::BackendName(backend) : "instant";
}

void CircuitSet::Load() {
  for (const CircuitSpec& spec : specs_) {
    if (spec.instant) spdlog::info("circuit {}: benchmark mode (--instant), answers without proving", spec.id);
  }
  // The first device's load checks the points; the others load the same
  // files unchecked, all at once (each has its own copy engine and memory).
  // The generators first: compiled (or found in the cache) before the
  // worker announces anything as READY, never in a job's path.
  // (Devices that left the set get nothing: a Sibling's load at run time.)
  std::vector<size_t> active;
  for (size_t d = 0; d < devices_.size(); ++d) {
    if (!released_[d]) active.push_back(d);
  }
  LoadGenerators();
  if (active.empty()) return;
  LoadDevice(active[0], /*check=*/true);
  CheckGeneratorsFitKeys(active[0]);
  if (active.size() == 1) return;
  std::vector<std::exception_ptr> errors(devices_.size());
  std::vector<std::thread> loaders;
  for (size_t d : std::span(active).subspan(1)) {
    loaders.emplace_back([this, d, &errors] {
      try {
        LoadDevice(d, /*check=*/false);
      } catch (...) {
        errors[d] = std::current_exception();
      }
    });
  }
  for (std::thread& loader : loaders) loader.join();
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

void CircuitSet::LoadDevice(size_t device, bool check_points) {
  const bool several = devices_.size() > 1;
  const std::string on_device = several ? " on device " + devices_[device].label : "";
  for (const CircuitSpec& spec : specs_) {
    if (spec.instant) {
      provers_[device][spec.id] = InstantCircuit{};
      continue;
    }
    auto started = std::chrono::steady_clock::now();
    if (spec.kind == proto::CIRCUIT_KIND_BELLMAN) {
      LoadBellman(spec, device, check_points, on_device);
      continue;
    }
    std::unique_ptr<engine::ProvingKey> key;
    engine::EngineOptions options = engine_options_;
    options.cuda_device = devices_[device].ordinal;
    std::string check = options.validate_key ? "points checked" : "points NOT checked (--no-key-check)";
    try {
      if (options.validate_key && !check_points) {
        options.validate_key = false;  // checked by the first device's load of the same file
        check = "points checked at the load on device " + devices_[0].label;
      }
      key = engine::ProvingKey::Load(spec.zkey_path, options);
    } catch (const Error& e) {
      throw Error(e.code(), "circuit " + spec.id + on_device + ": " + e.what());
    }
    const engine::KeyCheckReport& key_check = key->key_check();
    if (key_check.outcome == engine::KeyCheck::kRemembered) {
      // this very content passed before
      check = "points checked before on this host (" + options.checked_keys.dir().string() + ")";
    }
    if (!key_check.cache_warning.empty()) {
      spdlog::warn("circuit {}: the passed key check is not remembered ({}); the next start checks again", spec.id,
                   key_check.cache_warning);
    }
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const auto& info = key->info();
    const std::string tables =
        info.msm_copies > 1 ? ", " + std::to_string(info.msm_copies) + " MSM table copies building in the background" : "";
    spdlog::info("circuit {}: loaded {} ({} {}, domain {}, {} MiB resident{}, {}) in {:.2f} s{}", spec.id,
                 spec.zkey_path, engine::CurveName(info.curve), engine::BackendName(key->backend()),
                 info.domain_size, info.resident_bytes >> 20, tables, check, seconds, on_device);
    if (!info.msm_tables_skipped.empty()) {
      spdlog::warn("circuit {}: no MSM table copies{}: {}; its proofs run over the plain points, more slowly",
                   spec.id, on_device, info.msm_tables_skipped);
    }
    resident_bytes_ += info.resident_bytes;
    device_resident_bytes_[device] += info.resident_bytes;
    if (check_points) public_counts_[spec.id] = info.n_public;  // only the first device's loader writes it
    provers_[device][spec.id] = std::move(key);
    if (check_points && load_progress_) {
      std::error_code error;
      const uint64_t size = std::filesystem::file_size(spec.zkey_path, error);
      if (!error) load_progress_(spec.id, size, size);
    }
  }
}

void CircuitSet::LoadBellman(const CircuitSpec& spec, size_t device, bool check_points, const std::string& on_device) {
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  engine::EngineOptions options = engine_options_;
  options.cuda_device = devices_[device].ordinal;
  std::string unchecked = "points NOT checked (--no-key-check)";
  if (options.validate_key && !check_points) {
    options.validate_key = false;  // checked (or found checked) by the first device's load of the same file
    unchecked = "points checked at the load on device " + devices_[0].label;
  }
  // A line every ~2 s while the points are decoded (a tens-of-GB file read
  // for the first time takes minutes), and the gauge.
  bool started_reading = false;
  auto progress = [&](uint64_t done, uint64_t total) {
    if (check_points && load_progress_) load_progress_(spec.id, done, total);
    // Not the call before the first point, nor the last: the "loaded" line follows.
    if (!std::exchange(started_reading, true) || done >= total) return;
    const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    spdlog::info("circuit {}: loading {}{}: {} / {} MiB ({:.0f}%), {:.0f} MB/s", spec.id, spec.zkey_path, on_device,
                 done >> 20, total >> 20, 100.0 * static_cast<double>(done) / static_cast<double>(total),
                 static_cast<double>(done) / 1e6 / std::max(seconds, 1e-9));
  };
  std::unique_ptr<engine::BellmanKey> key;
  try {
    key = engine::BellmanKey::Load(spec.zkey_path, options, progress);
  } catch (const Error& e) {
    throw Error(e.code(), "circuit " + spec.id + on_device + ": " + e.what());
  }
  const engine::KeyCheckReport& key_check = key->key_check();
  std::string check;
  switch (key_check.outcome) {
    case engine::KeyCheck::kChecked: check = "points checked"; break;
    case engine::KeyCheck::kRemembered:
      check = "points remembered: this file checked before on this host (" + options.checked_keys.dir().string() + ")";
      if (!key_check.image_mapped.empty()) check += ", mapped from its decoded image " + key_check.image_mapped;
      break;
    case engine::KeyCheck::kSkipped: check = unchecked; break;
  }
  if (!key_check.cache_warning.empty()) {
    spdlog::warn("circuit {}: the passed check of {} is not remembered ({}); the next start checks it again", spec.id,
                 spec.zkey_path, key_check.cache_warning);
  }
  if (!key_check.image_warning.empty()) spdlog::warn("circuit {}: {}", spec.id, key_check.image_warning);
  if (!key_check.image_written.empty()) {
    spdlog::info("circuit {}: kept the decoded points of {} as {} in {:.2f} s (the next start maps them)", spec.id,
                 spec.zkey_path, key_check.image_written, key->load_timings().image_s);
  }
  const engine::BellmanInfo& info = key->info();
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  std::error_code error;
  const uint64_t file_bytes = std::filesystem::file_size(spec.zkey_path, error);
  const engine::LoadTimings& timings = key->load_timings();
  spdlog::info("circuit {}: loaded bellman parameters {} ({} public inputs, {} aux, domain {}, {} MiB resident, "
               "{}{}) in {:.2f} s ({:.0f} MB/s, {}; decode {:.3f} s, {} key {:.3f} s){}",
               spec.id, spec.zkey_path, info.n_inputs - 1, info.n_aux, info.domain_size, info.resident_bytes >> 20,
               engine::BackendName(info.backend), info.placement.empty() ? "" : ": " + info.placement, seconds,
               error ? 0.0 : static_cast<double>(file_bytes) / 1e6 / std::max(seconds, 1e-9), check,
               timings.key_check_s, engine::BackendName(info.backend), timings.backend_s, on_device);
  resident_bytes_ += info.resident_bytes;
  device_resident_bytes_[device] += info.resident_bytes;
  provers_[device][spec.id] = std::move(key);
}

// Counts a Prove() in, after any Adopt() under way, and out.
class CircuitSet::ProveGate {
 public:
  explicit ProveGate(const CircuitSet& set) : set_(set) {
    std::unique_lock lock(set_.gate_mutex_);
    set_.gate_changed_.wait(lock, [this] { return !set_.changing_; });
    ++set_.proving_;
  }
  ~ProveGate() {
    std::lock_guard lock(set_.gate_mutex_);
    if (--set_.proving_ == 0) set_.gate_changed_.notify_all();
  }
  ProveGate(const ProveGate&) = delete;
  ProveGate& operator=(const ProveGate&) = delete;

 private:
  const CircuitSet& set_;
};

ProveOutcome CircuitSet::Prove(const proto::Job& job, std::span<const uint8_t> witness_bytes, size_t device,
                               uint64_t version) const {
  const ProveGate gate(*this);
  ProveOutcome outcome;
  if (version != kAnyVersion) {
    auto now = versions_.find(job.circuit_id());
    if ((now == versions_.end() ? 0 : now->second) != version) {
      outcome.error = "circuit '" + job.circuit_id() + "' was replaced on this worker after the item was queued";
      outcome.retryable = true;  // not the witness's fault: it is proved again, under the key of its time
      return outcome;
    }
  }
  const auto& provers = provers_.at(device);
  auto found = provers.find(job.circuit_id());
  if (found == provers.end()) {
    outcome.error = "this worker does not hold circuit '" + job.circuit_id() + "'";
    outcome.retryable = true;  // a routing mistake: another worker may hold it
    return outcome;
  }
  struct Visit {
    const CircuitSet& set;
    const proto::Job& job;
    std::span<const uint8_t> bytes;
    ProveOutcome operator()(const InstantCircuit&) const { return set.ProveInstant(); }
    ProveOutcome operator()(const std::unique_ptr<engine::ProvingKey>& key) const {
      return set.ProveWitness(job, *key, bytes);
    }
    ProveOutcome operator()(const std::unique_ptr<engine::BellmanKey>& key) const {
      return set.ProveAssignment(job, *key, bytes);
    }
  };
  return std::visit(Visit{*this, job, witness_bytes}, found->second);
}

uint64_t CircuitSet::ResidentBytes(const CircuitProver& prover) {
  if (const auto* key = std::get_if<std::unique_ptr<engine::ProvingKey>>(&prover)) return (*key)->info().resident_bytes;
  if (const auto* key = std::get_if<std::unique_ptr<engine::BellmanKey>>(&prover)) return (*key)->info().resident_bytes;
  return 0;
}

ProveOutcome CircuitSet::ProveInstant() const {
  ProveOutcome outcome;
  if (instant_delay_.count() > 0) std::this_thread::sleep_for(instant_delay_);
  outcome.ok = true;
  outcome.proof_json = kInstantProof;
  outcome.public_json = "[]";
  outcome.timings.set_prove_total_s(std::chrono::duration<double>(instant_delay_).count());
  return outcome;
}

ProveOutcome CircuitSet::ProveWitness(const proto::Job& job, const engine::ProvingKey& key,
                                      std::span<const uint8_t> witness_bytes) const {
  ProveOutcome outcome;
  try {
    const engine::Witness witness = engine::Witness::View(witness_bytes, Origin(job));
    engine::ProveOptions prove_options;
    prove_options.verify = verify_;
    engine::Proof proof = key.Prove(witness, prove_options);
    outcome.ok = true;
    outcome.verify_s = proof.check.verify_s;
    outcome.engine_fault = std::move(proof.check.engine_fault);
    outcome.proof_json = std::move(proof.proof_json);
    outcome.public_json = std::move(proof.public_json);
    CopyTimings(proof.timings, outcome.timings);
    if (auto refused = RefuseOtherPublicSignals(job, outcome.public_json)) return std::move(*refused);
  } catch (const Error& e) {
    return FailureOf(e, job.circuit_id(), "witness");
  } catch (const std::exception& e) {
    outcome.error = std::string("unexpected: ") + e.what();
    outcome.retryable = true;
  }
  return outcome;
}

ProveOutcome CircuitSet::ProveAssignment(const proto::Job& job, const engine::BellmanKey& key,
                                         std::span<const uint8_t> assignment_bytes) const {
  ProveOutcome outcome;
  try {
    // Checked (magic, counts, length) and viewed where it lies: no copy.
    const engine::AssignmentFile file = engine::AssignmentFile::FromBytes(assignment_bytes, Origin(job));
    engine::ProveOptions prove_options;
    prove_options.verify = verify_;
    engine::BellmanProof proof = key.Prove(file.View(), prove_options);
    outcome.ok = true;
    outcome.verify_s = proof.check.verify_s;
    outcome.engine_fault = std::move(proof.check.engine_fault);
    outcome.proof_json = engine::ProofJson(proof.points, engine::Curve::kBls12_381);
    outcome.public_json = engine::PublicJson(proof.public_inputs);
    outcome.proof_bytes.assign(reinterpret_cast<const char*>(proof.bytes.data()), proof.bytes.size());
    CopyTimings(proof.timings, outcome.timings);
    if (auto refused = RefuseOtherPublicSignals(job, outcome.public_json)) return std::move(*refused);
  } catch (const Error& e) {
    // kBadFormat (not an assignment file) and kMismatch (it does not fit
    // these parameters) are the job's: not retryable, the worker goes on.
    return FailureOf(e, job.circuit_id(), "assignment");
  } catch (const std::exception& e) {
    outcome.error = std::string("unexpected: ") + e.what();
    outcome.retryable = true;
  }
  return outcome;
}

uint64_t CircuitSet::Release() {
  uint64_t released = 0;
  for (size_t d = 0; d < provers_.size(); ++d) released += Release(d);
  return released;
}

uint64_t CircuitSet::Release(size_t device) {
  std::lock_guard lock(gate_mutex_);
  released_.at(device) = true;
  uint64_t released = device_resident_bytes_.at(device).exchange(0);
  provers_.at(device).clear();
  resident_bytes_ -= released;
  return released;
}

void CircuitSet::LoadGenerators() {
  for (const CircuitSpec& spec : specs_) {
    if (spec.wasm_path.empty()) continue;
    try {
      witgen::WitnessGeneratorOptions options = generator_options_;
      options.on_compile = [&spec](const std::string& line) { spdlog::info("circuit {}: {}", spec.id, line); };
      // Logged from the build's thread when a first sight's build ends.
      options.on_built = [id = spec.id](const std::string& error) {
        if (error.empty()) {
          spdlog::info("circuit {}: the native witness generator is built and answers from now on", id);
        } else {
          spdlog::warn("circuit {}: the native witness generator could not be built; node goes on answering: {}", id,
                       error);
        }
      };
      auto generator = witgen::WitnessGenerator::Load(spec.wasm_path, options);
      const witgen::GeneratorInfo info = generator->info();
      if (generator->tier() == witgen::GeneratorTier::kNode) {
        spdlog::info("circuit {}: witness generator: first sight, node answers ({} signals, described in {:.2f} s) "
                     "while the native one is built", spec.id, info.witness_count, info.load_seconds);
      } else {
        spdlog::info("circuit {}: witness generator {} in {:.2f} s ({} signals, {} field code, {})", spec.id,
                     info.from_cache ? "found in the cache" : "compiled", info.load_seconds, info.witness_count,
                     info.native_field ? "native" : "the wasm's", info.executable.string());
      }
      generators_[spec.id] = std::move(generator);
    } catch (const Error& e) {
      throw Error(e.code(), "circuit " + spec.id + ": witness generator: " + e.what());
    }
  }
}

void CircuitSet::CheckGeneratorsFitKeys(size_t device) const {
  for (const auto& [id, generator] : generators_) {
    auto found = provers_.at(device).find(id);
    if (found == provers_.at(device).end()) continue;
    const auto* key = std::get_if<std::unique_ptr<engine::ProvingKey>>(&found->second);
    if (!key) continue;  // a benchmark circuit (--instant): no key to fit
    const engine::CircuitInfo& circuit = (*key)->info();
    const witgen::GeneratorInfo info = generator->info();
    if (info.curve != circuit.curve || info.witness_count != circuit.n_vars) {
      throw Error(ErrorCode::kMismatch,
                  "circuit " + id + ": its witness generator (" + info.executable.string() + ") makes witnesses of " +
                      std::to_string(info.witness_count) + " signals" +
                      (info.curve ? std::string(" on ") + engine::CurveName(*info.curve) : " on another field") +
                      ", its key wants " + std::to_string(circuit.n_vars) + " on " +
                      engine::CurveName(circuit.curve) + ": check --generator against --circuit");
    }
  }
}

std::vector<std::string> CircuitSet::generator_ids() const {
  std::lock_guard lock(gate_mutex_);
  std::vector<std::string> ids;
  for (const CircuitSpec& spec : specs_) {
    if (!spec.wasm_path.empty()) ids.push_back(spec.id);
  }
  return ids;
}

std::shared_ptr<const witgen::WitnessGenerator> CircuitSet::Generator(const std::string& circuit_id) const {
  std::lock_guard lock(gate_mutex_);
  auto it = generators_.find(circuit_id);
  return it == generators_.end() ? nullptr : it->second;
}

std::optional<uint32_t> CircuitSet::PublicSignalCount(const std::string& circuit_id) const {
  std::lock_guard lock(gate_mutex_);
  auto it = public_counts_.find(circuit_id);
  if (it == public_counts_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> CircuitSet::circuit_ids() const {
  std::lock_guard lock(gate_mutex_);
  std::vector<std::string> ids;
  for (const CircuitSpec& spec : specs_) ids.push_back(spec.id);
  return ids;
}

std::vector<proto::CircuitKind> CircuitSet::circuit_kinds() const {
  std::lock_guard lock(gate_mutex_);
  std::vector<proto::CircuitKind> kinds;
  for (const CircuitSpec& spec : specs_) kinds.push_back(spec.kind);
  return kinds;
}

std::string CircuitSet::backend_name() const {
  std::lock_guard lock(gate_mutex_);
  return backend_name_;
}

void CircuitSet::StopChanges() {
  {
    std::lock_guard lock(gate_mutex_);
    changes_stopped_ = true;
  }
  gate_changed_.notify_all();
}

int CircuitSet::proofs_running() const {
  std::lock_guard lock(gate_mutex_);
  return proving_;
}

uint64_t CircuitSet::Version(const std::string& circuit_id) const {
  std::lock_guard lock(gate_mutex_);
  auto it = versions_.find(circuit_id);
  return it == versions_.end() ? 0 : it->second;
}

std::vector<CircuitSpec> CircuitSet::specs() const {
  std::lock_guard lock(gate_mutex_);
  return specs_;
}

std::unique_ptr<CircuitSet> CircuitSet::Sibling(std::vector<CircuitSpec> specs) const {
  std::lock_guard lock(gate_mutex_);
  auto sibling = std::make_unique<CircuitSet>(std::move(specs), engine_options_, instant_delay_, verify_,
                                              engine_options_.checked_keys, devices_);
  sibling->released_ = released_;
  sibling->load_progress_ = load_progress_;
  sibling->generator_options_ = generator_options_;
  return sibling;
}

void CircuitSet::Adopt(std::unique_ptr<CircuitSet> more, const std::set<std::string>& drop) {
  std::unique_lock lock(gate_mutex_);
  if (changes_stopped_) return;  // the worker is leaving: `more` is freed with this call
  changing_ = true;
  gate_changed_.wait(lock, [this] { return proving_ == 0 || changes_stopped_; });
  if (changes_stopped_) {
    changing_ = false;
    lock.unlock();
    gate_changed_.notify_all();
    return;
  }
  for (size_t d = 0; d < devices_.size(); ++d) {
    for (const std::string& id : drop) {
      uint64_t bytes = 0;
      if (auto found = provers_[d].find(id); found != provers_[d].end()) {
        bytes = ResidentBytes(found->second);
        provers_[d].erase(found);
      }
      device_resident_bytes_[d] -= bytes;
      resident_bytes_ -= bytes;
    }
  }
  for (const std::string& id : drop) {
    generators_.erase(id);
    public_counts_.erase(id);
    ++versions_[id];
  }
  std::erase_if(specs_, [&drop](const CircuitSpec& spec) { return drop.count(spec.id) > 0; });
  if (more) {
    for (size_t d = 0; d < devices_.size(); ++d) {
      if (released_[d]) {
        // The device left the set while the keys loaded: they are freed
        // (each CUDA buffer, stream and event on its own device), not kept
        // where nothing proves.
        more->provers_[d].clear();
        continue;
      }
      provers_[d].merge(more->provers_[d]);
      const uint64_t bytes = more->device_resident_bytes_[d].load();
      device_resident_bytes_[d] += bytes;
      resident_bytes_ += bytes;
    }
    generators_.merge(more->generators_);
    public_counts_.merge(more->public_counts_);
    specs_.insert(specs_.end(), more->specs_.begin(), more->specs_.end());
    if (backend_name_ == "instant") backend_name_ = more->backend_name_;
  }
  changing_ = false;
  lock.unlock();
  gate_changed_.notify_all();
}

}  // namespace zkfleet::worker
