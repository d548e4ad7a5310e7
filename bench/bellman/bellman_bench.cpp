// Proving bellperson-style assignments (engine/bellman.hpp), parameters
// resident, on either backend:
//
//   zkfleet_bellman_bench (--r1cs FILE --wtns FILE | --synthetic LOG_ROWS [--public N])
//                         [--backend cuda|cpu] [--repeat R] [--seed S] [--fake-params]
//                         [--no-overlap] [--compare-cpu] [--device-memory-budget-gib G]
//                         [--compare-resident] [--gpu-srs]
//                         [--write-params FILE] [--params FILE [--checked-keys DIR]]
//
// --write-params writes the parameters it made as a bellperson .params file
// and exits (no key, no proofs);
// --params loads such a file instead of making parameters, as zkworker does
// (engine::BellmanKey::Load: decode, point check or the checked-key cache,
// the device copy), and reports how long the key took to be ready. The
// synthetic circuit must be the one the file was made for (same size,
// --public and --seed).
//
// The parameters are synthesized in memory (seeded, insecure): a real SRS
// by default (every proof verifies; its points made on the GPU with --gpu-srs), or with --fake-params points that are
// only multiples of the generators in the right counts (for sizes whose real
// synthesis would take too long: proofs are then not verified). One JSON
// line per proof, then a summary line with the median.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <array>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "zkfleet/bellman/constraint_system.hpp"
#include "zkfleet/bellman/parameters.hpp"
#include "zkfleet/curve/point.hpp"
#include "zkfleet/devtools/seeded_parameters.hpp"
#include "zkfleet/engine/bellman.hpp"
#include "zkfleet/engine/pinned_memory.hpp"
#include "zkfleet/engine/proving_key.hpp"
#include "zkfleet/groth16/assignment_key.hpp"
#include "zkfleet/r1cs/r1cs.hpp"
#include "zkfleet/wtns/witness.hpp"
#ifdef ZKFLEET_HAVE_CUDA
#include "zkfleet/groth16/assignment_cuda_prover.hpp"
#include "zkfleet/runtime/cuda_device.hpp"
#endif

namespace {

using namespace zkfleet;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// count points P_i = (start + i)·G: one addition each, chunk by chunk.
template <class Cfg>
bellman::PointVector<curve::Affine<Cfg>> FakePoints(size_t count, uint64_t start, cpu::ThreadPool& pool) {
  using J = curve::Jacobian<Cfg>;
  bellman::PointVector<curve::Affine<Cfg>> out(count);
  const auto g = Cfg::generator();
  pool.ParallelFor(count, [&](size_t lo, size_t hi) {
    uint64_t k[1] = {start + lo + 1};
    J acc = curve::scalar_mul(J::from_affine(g), k, 1);
    std::vector<J> jac(hi - lo);
    for (size_t i = lo; i < hi; ++i) {
      jac[i - lo] = acc;
      acc = curve::add_mixed(acc, g);
    }
    curve::batch_to_affine(jac.data(), out.data() + lo, hi - lo);
  });
  return out;
}

size_t PopCount(const std::vector<uint64_t>& words) {
  size_t n = 0;
  for (uint64_t w : words) n += static_cast<size_t>(__builtin_popcountll(w));
  return n;
}

// Points in the counts an assignment of this shape needs (densities from the
// assignment itself, so the constraint system can be freed first).
bellman::Parameters FakeParameters(const bellman::Assignment& asg, size_t domain, uint64_t seed, cpu::ThreadPool& pool) {
  const size_t n_a = asg.input.size() + PopCount(asg.a_aux_density);
  const size_t n_b = PopCount(asg.b_input_density) + PopCount(asg.b_aux_density);
  // The verifying key is a real one's (from a one-row system), IC resized.
  bellman::ConstraintSystem tiny;
  tiny.n_inputs = static_cast<uint32_t>(asg.input.size());
  tiny.a.EndRow();
  tiny.b.EndRow();
  tiny.c.EndRow();
  bellman::Parameters p;
  p.vk = devtools::SynthesizeParameters(tiny, seed, pool).vk;
  using G1 = curve::Bls12_381G1;
  p.h = FakePoints<G1>(domain - 1, seed * 7, pool);
  p.l = FakePoints<G1>(asg.aux.size(), seed * 11, pool);
  p.a = FakePoints<G1>(n_a, seed * 13, pool);
  p.b_g1 = FakePoints<G1>(n_b, seed * 17, pool);
  p.b_g2 = FakePoints<curve::Bls12_381G2>(n_b, seed * 19, pool);
  return p;
}

// The assignment copied into page-locked memory, as a worker's pinned pool
// holds what it proves (zkprove reads its witness into page-locked memory
// too): the uploads are then true async DMAs. Null view fields when pinning
// fails (the pageable copy is used then).
struct PinnedAssignment {
  uint8_t* base = nullptr;
  size_t bytes = 0;
  engine::AssignmentView view;
  ~PinnedAssignment() {
    if (base) engine::PinnedMemory::Free(base, bytes);
  }
  bool Make(const bellman::Assignment& a) {
    const size_t scalars = a.a.size() + a.b.size() + a.c.size() + a.input.size() + a.aux.size();
    if (!engine::PinnedMemory::Allocate(scalars * 32, &base).empty()) return false;
    bytes = scalars * 32;
    auto* out = reinterpret_cast<engine::FrMont*>(base);
    auto copy = [&](const std::vector<engine::FrMont>& v) {
      std::memcpy(static_cast<void*>(out), v.data(), v.size() * 32);
      std::span<const engine::FrMont> span(out, v.size());
      out += v.size();
      return span;
    };
    view = a.View();
    view.a = copy(a.a);
    view.b = copy(a.b);
    view.c = copy(a.c);
    view.input = copy(a.input);
    view.aux = copy(a.aux);
    return true;
  }
};

// r = 3, s = 5: the proof compared with the CPU's is made with these.
void FixBlinding(engine::ProveOptions& prove) {
  prove.r.emplace();
  prove.s.emplace();
  prove.r->fill(0);
  prove.s->fill(0);
  (*prove.r)[0] = 3;
  (*prove.s)[0] = 5;
}

// --params: the key loaded from a file as zkworker loads it, timed, then
// `repeat` proofs (each verified) back to back, as a sector's partitions go.
int ProveFromFile(const std::string& path, const std::string& checked_keys_dir, engine::EngineOptions options,
                  const bellman::Assignment& assignment, int repeat, bool pageable) {
  if (!checked_keys_dir.empty()) options.checked_keys = engine::CheckedKeys(checked_keys_dir);
  auto t0 = Clock::now();
  const std::unique_ptr<engine::BellmanKey> key = engine::BellmanKey::Load(path, options);
  const double ready_s = Since(t0);
  const char* check = "skipped";
  switch (key->key_check().outcome) {
    case engine::KeyCheck::kChecked: check = "checked"; break;
    case engine::KeyCheck::kRemembered: check = "remembered"; break;
    case engine::KeyCheck::kSkipped: break;
  }
  std::error_code error;
  const uint64_t bytes = std::filesystem::file_size(path, error);
  const engine::LoadTimings& t = key->load_timings();
  const engine::KeyCheckReport& report = key->key_check();
  std::printf("{\"load_params\":{\"bytes\":%llu,\"ready_s\":%.3f,\"mb_per_s\":%.0f,\"points\":\"%s\","
              "\"open_s\":%.3f,\"key_check_s\":%.3f,\"backend_s\":%.3f,\"image_s\":%.3f,\"image\":\"%s\","
              "\"placement\":\"%s\"}}\n",
              static_cast<unsigned long long>(bytes), ready_s, static_cast<double>(bytes) / 1e6 / ready_s, check, t.open_s,
              t.key_check_s, t.backend_s, t.image_s,
              !report.image_mapped.empty() ? "mapped" : !report.image_written.empty() ? "written" : "none",
              key->info().placement.c_str());
  if (!report.image_warning.empty()) std::fprintf(stderr, "image: %s\n", report.image_warning.c_str());
  std::fflush(stdout);
  PinnedAssignment pinned;
  const bool is_pinned = !pageable && pinned.Make(assignment);
  const engine::AssignmentView view = is_pinned ? pinned.view : assignment.View();
  engine::ProveOptions prove;
  prove.verify = true;
  int failures = 0;
  double sum = 0;
  t0 = Clock::now();
  for (int i = 0; i < repeat; ++i) {
    const auto t_proof = Clock::now();
    const engine::BellmanProof p = key->Prove(view, prove);
    const double wall = Since(t_proof);
    sum += wall;
    if (!p.check.verified) ++failures;
    std::printf("{\"proof\":%d,\"wall_s\":%.4f,\"device_s\":%.4f,\"verified\":%s}\n", i, wall, p.timings.msm_s,
                p.check.verified ? "true" : "false");
    std::fflush(stdout);
  }
  std::printf("{\"proofs_back_to_back\":{\"proofs\":%d,\"total_s\":%.3f,\"sum_of_walls_s\":%.3f,\"unverified\":%d}}\n",
              repeat, Since(t0), sum, failures);
  return failures ? 1 : 0;
}

}  // namespace

int Run(int argc, char** argv);

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zkfleet_bellman_bench: %s\n", e.what());
    return 1;
  }
}

int Run(int argc, char** argv) {
  CLI::App app{"bellperson-style Groth16 proofs of assignments, parameters resident"};
  std::string r1cs_path, wtns_path, backend = "cuda";
  int log_rows = 0, repeat = 5;
  uint32_t n_public = 2;
  uint64_t seed = 1;
  bool fake = false, no_overlap = false, compare_cpu = false, pageable = false;
  app.add_option("--r1cs", r1cs_path, "a circom BLS12-381 .r1cs");
  app.add_option("--wtns", wtns_path, "its witness");
  app.add_option("--synthetic", log_rows, "a synthetic PoRep-like circuit of 2^LOG_ROWS rows");
  app.add_option("--public", n_public, "public inputs of the synthetic circuit")->capture_default_str();
  app.add_option("--backend", backend, "cuda | cpu")->capture_default_str();
  app.add_option("--repeat", repeat, "proofs")->capture_default_str();
  app.add_option("--seed", seed, "seed of the circuit and parameters")->capture_default_str();
  app.add_flag("--fake-params", fake, "multiples of the generators instead of an SRS (proofs not verified)");
  app.add_flag("--no-overlap", no_overlap, "CUDA: the MSMs one after another with one workspace");
  app.add_flag("--pageable", pageable, "prove from the assignment's pageable vectors (default: a page-locked copy)");
  app.add_flag("--compare-cpu", compare_cpu, "also prove on the CPU with the same r, s and compare the bytes");
  double budget_gib = 0;
  app.add_option("--device-memory-budget-gib", budget_gib,
                 "CUDA: the key's device memory budget in GiB (0: the device's free memory); points that do not fit "
                 "stream from pinned host memory");
  bool gpu_srs = false;
  app.add_flag("--gpu-srs", gpu_srs,
               "make the (seeded, insecure) SRS's points on the GPU (devtools::ParametersFromScalarsCuda): minutes "
               "for 2^27 instead of half an hour on the CPU; the same bytes");
  bool compare_resident = false;
  app.add_flag("--compare-resident", compare_resident,
               "CUDA: first prove with the same r, s on a key without the budget (points resident) and compare the "
               "bytes (needs the parameters twice in host memory for a moment)");
  std::string write_params_path, params_path, checked_keys_dir;
  app.add_option("--write-params", write_params_path, "write the parameters made here to this .params file, then exit");
  app.add_option("--params", params_path,
                 "load this .params file as zkworker does (engine::BellmanKey::Load) instead of making parameters");
  app.add_option("--checked-keys", checked_keys_dir, "with --params: the key-check cache directory (default: none)");
  bool keep_decoded = false;
  app.add_flag("--keep-decoded-params", keep_decoded,
               "with --params and --checked-keys: keep the decoded points as an image there, map it at the next load");
  CLI11_PARSE(app, argc, argv);
  if (!params_path.empty() && (fake || gpu_srs || compare_cpu || compare_resident || !write_params_path.empty())) {
    std::fprintf(stderr, "--params loads the parameters: it takes none of --fake-params, --gpu-srs, --compare-cpu, "
                         "--compare-resident, --write-params\n");
    return 2;
  }

  cpu::ThreadPool pool(0);
  auto t0 = Clock::now();
  bellman::ConstraintSystem cs;
  std::vector<bellman::Fr> values;
  if (log_rows > 0) {
    bellman::SyntheticCircuit c = bellman::MakeSyntheticCircuit(log_rows, n_public, seed);
    cs = std::move(c.cs);
    values = std::move(c.values);
  } else {
    cs = bellman::FromCircom(io::ReadR1cs(r1cs_path));
    const engine::Witness w = engine::Witness::FromFile(wtns_path);
    values.resize(cs.n_vars());
    for (uint32_t i = 0; i < cs.n_vars(); ++i) {
      uint64_t limbs[4];
      std::memcpy(limbs, w.values() + size_t{i} * 32, 32);
      values[i] = bellman::Fr::from_canonical(limbs);
    }
  }
  const double circuit_s = Since(t0);
  t0 = Clock::now();
  const bellman::Assignment assignment = bellman::Synthesize(cs, values, pool);
  const double synth_s = Since(t0);
  const size_t domain = size_t{1} << bellman::DomainLog(cs);
  values.clear();
  values.shrink_to_fit();
  t0 = Clock::now();
  bellman::Parameters params;
  if (!params_path.empty()) {
    cs = {};  // the file holds the parameters
  } else if (fake) {
    cs = {};  // only the assignment's shape is needed: free the system first (2^27: tens of GB)
    params = FakeParameters(assignment, domain, seed, pool);
  } else if (gpu_srs) {
    devtools::ParameterScalars scalars = devtools::ComputeParameterScalars(cs, seed + 1, pool);
    cs = {};  // 2^27: tens of GB, not needed for the points
    params = devtools::ParametersFromScalarsCuda(std::move(scalars), pool, 0);
  } else {
    params = devtools::SynthesizeParameters(cs, seed + 1, pool);
    cs = {};
  }
  const double params_s = Since(t0);
  if (!write_params_path.empty()) {
    t0 = Clock::now();
    bellman::WriteParameters(write_params_path, params, pool);
    std::error_code error;
    const uint64_t bytes = std::filesystem::file_size(write_params_path, error);
    std::printf("{\"write_params\":{\"path\":\"%s\",\"bytes\":%llu,\"write_s\":%.3f}}\n", write_params_path.c_str(),
                static_cast<unsigned long long>(bytes), Since(t0));
    return 0;
  }

  engine::EngineOptions options{backend == "cpu" ? engine::Backend::kCpu : engine::Backend::kCuda, 0};
  options.cuda_overlap_msms = !no_overlap;
  options.device_memory_budget = static_cast<uint64_t>(budget_gib * double(uint64_t{1} << 30));
  options.keep_decoded_params = keep_decoded;
  if (!params_path.empty()) return ProveFromFile(params_path, checked_keys_dir, options, assignment, repeat, pageable);
  const std::vector<uint8_t> vk_bytes = bellman::SerializeVerifyingKey(params.vk);
  const engine::VerificationKey vk = bellman::ToEngineKey(params.vk);
  std::unique_ptr<bellman::Parameters> cpu_params;
  if (compare_cpu) cpu_params = std::make_unique<bellman::Parameters>(params);
#ifdef ZKFLEET_HAVE_CUDA
  // The resident key's proof first, freed before the budgeted key is made.
  std::optional<std::array<uint8_t, 192>> resident_bytes;
  if (compare_resident && options.backend == engine::Backend::kCuda) {
    engine::EngineOptions resident = options;
    resident.device_memory_budget = 0;
    const auto t_load = Clock::now();
    engine::BellmanKey key(cuda::MakeCudaAssignmentKey(bellman::Parameters(params), resident), vk_bytes, vk);
    std::printf("{\"resident_key\":{\"placement\":\"%s\",\"load_s\":%.3f}}\n", key.info().placement.c_str(),
                Since(t_load));
    std::fflush(stdout);
    // The same proofs as below, timed the same way: the first with the fixed
    // r, s the budgeted key's proof is compared with.
    std::vector<double> walls;
    for (int i = 0; i < std::max(repeat, 1); ++i) {
      engine::ProveOptions options_i;
      options_i.verify = !fake;
      if (i == 0) FixBlinding(options_i);
      const auto t_proof = Clock::now();
      const engine::BellmanProof p = key.Prove(assignment.View(), options_i);
      walls.push_back(Since(t_proof));
      if (i == 0) resident_bytes = p.bytes;
      std::printf("{\"resident_proof\":%d,\"wall_s\":%.4f,\"ntt_s\":%.4f,\"device_s\":%.4f,\"verified\":%s}\n", i,
                  walls.back(), p.timings.ntt_s, p.timings.msm_s, p.check.verified ? "true" : "false");
      std::fflush(stdout);
    }
    std::sort(walls.begin(), walls.end());
    std::printf("{\"resident_summary\":{\"proofs\":%zu,\"median_s\":%.4f,\"min_s\":%.4f}}\n", walls.size(),
                walls[walls.size() / 2], walls.front());
  }
  const bool on_cuda = options.backend == engine::Backend::kCuda;  // no device queries on a CPU run
  const uint64_t device_used_before = on_cuda ? cuda::DeviceMemoryInfo().used() : 0;
  const uint64_t allocated_before = on_cuda ? cuda::AllocationStats().device_bytes_live : 0;
#endif
  t0 = Clock::now();
  std::unique_ptr<groth16::AssignmentKey> backend_key;
  if (options.backend == engine::Backend::kCpu) {
    backend_key = groth16::MakeCpuAssignmentKey(std::move(params), options);
  } else {
#ifdef ZKFLEET_HAVE_CUDA
    backend_key = cuda::MakeCudaAssignmentKey(std::move(params), options);
#else
    std::fprintf(stderr, "this build has no CUDA backend\n");
    return 2;
#endif
  }
  engine::BellmanKey key(std::move(backend_key), vk_bytes, vk);
  const double load_s = Since(t0);
  const auto& info = key.info();
#ifdef ZKFLEET_HAVE_CUDA
  uint64_t device_high_water = 0, key_allocated = 0;
  auto sample_device = [&] {
    if (!on_cuda) return;
    device_high_water = std::max(device_high_water, cuda::DeviceMemoryInfo().used() - device_used_before);
    key_allocated = std::max(key_allocated, cuda::AllocationStats().device_bytes_live - allocated_before);
  };
  sample_device();
  std::printf("{\"device_memory\":{\"placement\":\"%s\",\"budget_bytes\":%llu,\"key_allocated_bytes\":%llu,"
              "\"device_used_by_key_bytes\":%llu}}\n",
              info.placement.c_str(), static_cast<unsigned long long>(options.device_memory_budget),
              static_cast<unsigned long long>(key_allocated), static_cast<unsigned long long>(device_high_water));
#else
  auto sample_device = [] {};
#endif
  std::printf("{\"setup\":{\"domain\":%u,\"inputs\":%u,\"aux\":%u,\"a_points\":%u,\"b_points\":%u,\"abc_size\":%zu,"
              "\"circuit_s\":%.3f,\"params_s\":%.3f,\"synthesis_s\":%.3f,\"load_s\":%.3f,\"resident_bytes\":%llu,"
              "\"fake_params\":%s,\"backend\":\"%s\"}}\n",
              info.domain_size, info.n_inputs, info.n_aux, info.n_a, info.n_b, assignment.a.size(), circuit_s, params_s,
              synth_s, load_s, static_cast<unsigned long long>(info.resident_bytes), fake ? "true" : "false",
              backend.c_str());
  std::fflush(stdout);

  PinnedAssignment pinned;
  const bool is_pinned = !pageable && pinned.Make(assignment);
  const engine::AssignmentView view = is_pinned ? pinned.view : assignment.View();
  std::printf("{\"assignment\":{\"page_locked\":%s}}\n", is_pinned ? "true" : "false");
  engine::ProveOptions prove;
  prove.verify = !fake;
  std::vector<double> totals;
  int failures = 0;
  engine::BellmanProof first;
  for (int i = 0; i < repeat; ++i) {
    if (compare_cpu && i == 0) {
      FixBlinding(prove);
    } else {
      prove.r.reset();
      prove.s.reset();
    }
    t0 = Clock::now();
    engine::BellmanProof p = key.Prove(view, prove);
    const double wall = Since(t0);
    sample_device();
    totals.push_back(wall);
    if (i == 0) first = p;
    const double* by_set = p.timings.msm_device_s;
    std::printf("{\"proof\":%d,\"wall_s\":%.4f,\"indices_s\":%.4f,\"enqueue_s\":%.4f,\"ntt_s\":%.4f,\"device_s\":%.4f,"
                "\"msm_device_s\":{\"h\":%.4f,\"l\":%.4f,\"a\":%.4f,\"b_g1\":%.4f,\"b_g2\":%.4f},"
                "\"verify_s\":%.4f,\"verified\":%s}\n",
                i, wall, p.timings.build_abc_s, p.timings.witness_transfer_s, p.timings.ntt_s, p.timings.msm_s,
                by_set[0], by_set[1], by_set[2], by_set[3], by_set[4], p.check.verify_s,
                p.check.verified ? "true" : "false");
    std::fflush(stdout);
  }
  if (compare_cpu) {
    engine::EngineOptions cpu_options{engine::Backend::kCpu, 0};
    engine::BellmanKey cpu_key(groth16::MakeCpuAssignmentKey(std::move(*cpu_params), cpu_options), vk_bytes, vk);
    FixBlinding(prove);
    const engine::BellmanProof ref = cpu_key.Prove(assignment.View(), prove);
    const bool same = ref.bytes == first.bytes;
    std::printf("{\"compare_cpu\":{\"identical\":%s}}\n", same ? "true" : "false");
    if (!same) ++failures;
  }
#ifdef ZKFLEET_HAVE_CUDA
  if (resident_bytes) {
    engine::ProveOptions fixed;
    fixed.verify = !fake;
    FixBlinding(fixed);
    const bool same = key.Prove(view, fixed).bytes == *resident_bytes;
    sample_device();
    std::printf("{\"compare_resident\":{\"identical\":%s}}\n", same ? "true" : "false");
    if (!same) ++failures;
  }
  std::printf("{\"device_memory_high_water\":{\"key_allocated_bytes\":%llu,\"device_used_by_key_bytes\":%llu}}\n",
              static_cast<unsigned long long>(key_allocated), static_cast<unsigned long long>(device_high_water));
#endif
  std::vector<double> sorted = totals;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted.empty() ? 0 : sorted[sorted.size() / 2];
  std::printf("{\"summary\":{\"proofs\":%d,\"median_s\":%.4f,\"min_s\":%.4f}}\n", repeat, median,
              sorted.empty() ? 0 : sorted.front());
  return failures ? 1 : 0;
}
