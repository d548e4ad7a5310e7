// zkfleet_bench_gpu: the CUDA backend next to the CPU path, in one run.
//
//   zkfleet_bench_gpu [--msm-max-log 22] [--g2-max-log 20] [--ntt-max-log 24]
//                     [--cpu-max-log 20] [--reps 5] [--fixtures DIR]
//                     [--synthetic-log 20] [--markdown FILE]
//
// Measures, for BN254 and BLS12-381: G1 MSM 2^16..2^msm-max-log, G2 MSM
// 2^16..2^g2-max-log, forward NTT and the prover's batched odd-coset step
// (3 x (iNTT, coset, NTT)) 2^16..2^ntt-max-log, whole proofs of the k12
// fixtures and (with devtools) of a synthetic BN254 circuit with a
// 2^synthetic-log domain. GPU figures are medians of --reps runs timed with
// CUDA events (inputs already on the device; MSM window combination on the
// host included); CPU figures are the CPU path on all host cores (one run,
// the best of two up to 2^18). Above --cpu-max-log the CPU time is
// extrapolated from the largest measured size (MSM: by a bucket-method
// cost model, see CpuMsmCost; NTT: by n·log n) and marked "~". Every GPU result that has a
// CPU counterpart is checked equal to it.
//
// Random MSM bases and scalars: random_inputs.cuh.
#include "zkfleet/runtime/hd_host_inline.hpp"  // first: see there

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "zkfleet/common/error.hpp"
#include "zkfleet/msm/cpu_msm.hpp"
#include "zkfleet/ntt/cpu_ntt.hpp"
#include "zkfleet/runtime/thread_pool.hpp"
#include "zkfleet/runtime/cuda_device.hpp"
#include "zkfleet/runtime/cuda_check.hpp"
#include "zkfleet/curve/device_curve.hpp"
#include "zkfleet/msm/cuda_msm.hpp"
#include "zkfleet/msm/msm_steps.hpp"
#include "zkfleet/ntt/cuda_ntt.hpp"
#include "zkfleet/engine/proving_key.hpp"
#include "zkfleet/engine/witness_file.hpp"
#include "random_inputs.cuh"
#if defined(ZKFLEET_BENCH_HAVE_DEVTOOLS)
#include "zkfleet/devtools/circuit_generator.hpp"
#include "zkfleet/devtools/insecure_setup.hpp"
#endif

namespace zk = zkfleet;
using Clock = std::chrono::steady_clock;

namespace {

using zkfleet::bench::RandomBases;
using zkfleet::bench::RandomScalars;

struct Options {
  int msm_min_log = 16, proofs = 1;  // --msm-min-log, --proofs 0: MSM sizes from 2^min; skip the k12 proofs
  int msm_max_log = 22, g2_max_log = 20, ntt_max_log = 24, cpu_max_log = 20, reps = 5, synthetic_log = 20;
  int msm_tables = 16;  // MSMs and proofs also with up to this many table copies (1: only without)
  std::vector<int> msm_widths;  // --msm-widths 16,18,20: only the G1 MSMs, at each window width (SweepWidths)
  std::string fixtures = ZKFLEET_BENCH_FIXTURES;
  std::string markdown;
};

double Seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// ---- result table -------------------------------------------------------------

struct Row {
  std::string what;
  int log_n;
  double gpu_ms;
  double cpu_ms;  // < 0: not measured
  bool cpu_extrapolated;
  std::string check;  // "equal", "MISMATCH", "-"
};
std::vector<Row> g_rows;

void Report(const Row& row) {
  g_rows.push_back(row);
  char cpu[32] = "-", ratio[32] = "-";
  if (row.cpu_ms >= 0) {
    std::snprintf(cpu, sizeof(cpu), "%s%.1f", row.cpu_extrapolated ? "~" : "", row.cpu_ms);
    std::snprintf(ratio, sizeof(ratio), "%s%.1fx", row.cpu_extrapolated ? "~" : "", row.cpu_ms / row.gpu_ms);
  }
  std::printf("%-40s 2^%-3d gpu %10.3f ms   cpu %12s ms   cpu/gpu %9s   %s\n", row.what.c_str(), row.log_n, row.gpu_ms,
              cpu, ratio, row.check.c_str());
}

void WriteMarkdown(const std::string& path, const std::string& header) {
  if (path.empty()) return;
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return;
  std::fprintf(f, "%s\n\n| what | size | GPU ms | CPU ms | CPU/GPU | check |\n|---|---|---|---|---|---|\n",
               header.c_str());
  for (const Row& r : g_rows) {
    std::fprintf(f, "| %s | 2^%d | %.3f | ", r.what.c_str(), r.log_n, r.gpu_ms);
    if (r.cpu_ms >= 0) {
      std::fprintf(f, "%s%.1f | %s%.1fx |", r.cpu_extrapolated ? "~" : "", r.cpu_ms, r.cpu_extrapolated ? "~" : "",
                   r.cpu_ms / r.gpu_ms);
    } else {
      std::fprintf(f, "- | - |");
    }
    std::fprintf(f, " %s |\n", r.check.c_str());
  }
  std::fclose(f);
}

// ---- device code check ----------------------------------------------------------

// HostCfg::generator() evaluated by the device (ff::Fp's device code path),
// to compare with the host's value.
template <class HostCfg>
__global__ void DeviceGenerator(zk::curve::Affine<HostCfg>* out) {
  *out = HostCfg::generator();
}

template <class HostCfg>
void CheckDeviceGenerator(const char* name) {
  zk::cuda::DeviceBuffer buf(sizeof(zk::curve::Affine<HostCfg>), "bench");
  DeviceGenerator<HostCfg><<<1, 1>>>(buf.as<zk::curve::Affine<HostCfg>>());
  ZK_CUDA_CHECK_LAUNCH("device generator");
  zk::curve::Affine<HostCfg> got;
  zk::cuda::CopyToHost(&got, buf.get(), sizeof(got), "device generator");
  const auto want = HostCfg::generator();
  const bool same = std::memcmp(&got, &want, sizeof(got)) == 0;
  std::printf("    ff::Fp device code check: %s generator() on the device %s the host's\n", name,
              same ? "equals" : "DIFFERS FROM");
}

// ---- MSM ---------------------------------------------------------------------------

// Bucket-method cost model for extrapolating CPU MSM times: the best window
// width's windows·(10 multiplications per point + 24 per bucket).
double CpuMsmCost(double n) {
  double best = 1e300;
  for (int c = 2; c <= 16; ++c) best = std::min(best, ((256 + c - 1) / c) * (10.0 * n + 24.0 * (1u << (c - 1))));
  return best;
}

template <class HostCfg, class Fr>
void BenchMsm(const char* name, int min_log, int max_log, const Options& opt, zk::cpu::ThreadPool& pool) {
  double last_cpu_ms = -1;
  int last_cpu_log = 0;
  for (int log_n = min_log; log_n <= max_log; log_n += 2) {
    const size_t n = size_t{1} << log_n;
    const auto bases = RandomBases<HostCfg, Fr>(n, 1000 + log_n);
    const auto scalars = RandomScalars<Fr>(n, 2000 + log_n);
    zk::cuda::DeviceMsm<HostCfg> msm(bases.data(), n);
    msm.UploadScalars(scalars.data(), n);
    const auto gpu_result = msm.RunUploaded(n);  // warm-up
    auto time_runs = [&](zk::cuda::DeviceMsm<HostCfg>& m) {
      std::vector<double> times;
      for (int r = 0; r < opt.reps; ++r) {
        const auto t0 = Clock::now();
        m.RunUploaded(n);
        times.push_back(Seconds(t0) * 1e3);
      }
      zk::cuda::MsmPhaseMs phases;
      float device_ms = 0;
      m.RunUploaded(n, &device_ms, &phases);
      std::printf("    %s 2^%d%s phases (GPU ms): sort %.2f, accumulate %.2f, spills %.2f, slices %.2f, window sums "
                  "%.2f (device %.2f)\n",
                  name, log_n, m.copies() > 1 ? " tables" : "", phases.sort, phases.accumulate, phases.spills,
                  phases.slices, phases.window_sums, device_ms);
      return Median(times);
    };
    const double plain_ms = time_runs(msm);
    Row row{name, log_n, plain_ms, -1, false, "-"};
    if (log_n <= opt.cpu_max_log) {
      double best = 1e300;
      zk::curve::Jacobian<HostCfg> cpu_result;
      for (int r = 0; r < (log_n <= 18 ? 2 : 1); ++r) {
        const auto t0 = Clock::now();
        cpu_result = zk::cpu::Msm<HostCfg>(bases.data(), scalars.data(), 32, n, pool);
        best = std::min(best, Seconds(t0) * 1e3);
      }
      row.cpu_ms = last_cpu_ms = best;
      last_cpu_log = log_n;
      row.check = zk::curve::equal(gpu_result, cpu_result) ? "equal" : "MISMATCH";
    } else if (last_cpu_ms > 0) {
      row.cpu_ms = last_cpu_ms * CpuMsmCost(double(n)) / CpuMsmCost(double(size_t{1} << last_cpu_log));
      row.cpu_extrapolated = true;
    }
    Report(row);
    if (opt.msm_tables > 1) {
      // The same MSM over precomputed copies of the bases (built once, timed
      // apart), checked against the plain GPU result.
      zk::cuda::DeviceMsm<HostCfg> tabled(bases.data(), n, 0, opt.msm_tables);
      tabled.UploadScalars(scalars.data(), n);
      const bool same = zk::curve::equal(tabled.RunUploaded(n), gpu_result);
      const double tabled_ms = time_runs(tabled);
      std::printf("    %s 2^%d tables: %.2f ms vs %.2f ms without (x%.2f); %d copies built in %.1f ms, %.1f MiB on "
                  "the device\n",
                  name, log_n, tabled_ms, plain_ms, plain_ms / tabled_ms, tabled.copies(), tabled.tables_ms(),
                  tabled.device_bytes() / 1048576.0);
      Report(Row{std::string(name) + " (tables x" + std::to_string(tabled.copies()) + ")", log_n, tabled_ms, -1, false,
                 same ? "equal" : "MISMATCH"});
    }
  }
}

// ---- NTT ---------------------------------------------------------------------------

template <class Fr>
void BenchNtt(const char* name, const Options& opt, zk::cpu::ThreadPool& pool) {
  double last_cpu[2] = {-1, -1};
  int last_log = 0;
  for (int log_n = 16; log_n <= opt.ntt_max_log; log_n += 2) {
    const size_t n = size_t{1} << log_n;
    const auto values = zkfleet::bench::RandomFieldElements<Fr>(3 * n, log_n);
    const char* ops[2] = {"NTT forward", "odd coset x3 (iNTT+coset+NTT)"};
    zk::cuda::DeviceNtt<Fr> single(log_n, 1), batch(log_n, 3);
    single.Upload(values.data());
    batch.Upload(values.data());
    for (int op = 0; op < 2; ++op) {
      auto& ntt = op == 0 ? single : batch;
      const auto kind = op == 0 ? zk::cuda::NttOp::kForward : zk::cuda::NttOp::kToOddCoset;
      ntt.RunUploaded(kind);  // warm-up
      std::vector<double> times;
      for (int r = 0; r < opt.reps; ++r) times.push_back(ntt.RunUploaded(kind));
      Row row{std::string(name) + " " + ops[op], log_n, Median(times), -1, false, "-"};
      if (log_n <= opt.cpu_max_log) {
        zk::cpu::NttDomain<Fr> domain(log_n);
        auto cpu_values = values;
        std::vector<Fr> gpu_values(op == 0 ? n : 3 * n);
        const auto t0 = Clock::now();
        if (op == 0) {
          domain.Forward(cpu_values.data(), pool);
        } else {
          for (int k = 0; k < 3; ++k) domain.ToOddCoset(cpu_values.data() + k * n, pool);
        }
        row.cpu_ms = last_cpu[op] = Seconds(t0) * 1e3;
        last_log = log_n;
        // Check: run once more from the original input and compare.
        auto& check_ntt = op == 0 ? single : batch;
        check_ntt.Upload(values.data());
        check_ntt.RunUploaded(kind);
        check_ntt.Download(gpu_values.data());
        bool same = true;
        for (size_t i = 0; i < gpu_values.size(); ++i) same = same && gpu_values[i] == cpu_values[i];
        row.check = same ? "equal" : "MISMATCH";
      } else if (last_cpu[op] > 0) {
        row.cpu_ms = last_cpu[op] * (double(n) * log_n) / (double(size_t{1} << last_log) * last_log);
        row.cpu_extrapolated = true;
      }
      Report(row);
    }
  }
}

// ---- whole proofs ------------------------------------------------------------------

zk::engine::ProveOptions FixedBlinding() {
  zk::engine::ProveOptions o;
  std::array<uint8_t, 32> r{}, s{};
  for (int i = 0; i < 31; ++i) {
    r[i] = static_cast<uint8_t>(i * 7 + 1);
    s[i] = static_cast<uint8_t>(i * 13 + 5);
  }
  o.r = r;
  o.s = s;
  return o;
}

void BenchProof(const std::string& name, const std::string& zkey, const std::string& wtns, int log_n,
                const Options& opt, int gpu_reps, int cpu_reps) {
  // As zkprove reads it for the GPU: page-locked (engine/witness_file.hpp).
  const auto witness_file = zk::engine::WitnessFile::Read(wtns, zk::engine::Backend::kCuda, gpu_reps);
  const auto& witness = witness_file.witness();
  const auto blinding = FixedBlinding();
  zk::engine::EngineOptions cpu_opts;
  cpu_opts.backend = zk::engine::Backend::kCpu;
  const auto cpu_key = zk::engine::ProvingKey::Load(zkey, cpu_opts);
  zk::engine::Proof cpu_proof;
  std::vector<double> cpu_times;
  for (int r = 0; r < cpu_reps; ++r) {
    const auto t0 = Clock::now();
    cpu_proof = cpu_key->Prove(witness, blinding);
    cpu_times.push_back(Seconds(t0) * 1e3);
  }
  struct Variant {
    bool overlap;
    int copies;
  };
  std::vector<Variant> variants = {{true, 1}, {false, 1}};
  if (opt.msm_tables > 1) variants.insert(variants.begin() + 1, Variant{true, opt.msm_tables});
  for (const Variant& variant : variants) {
    const bool overlap = variant.overlap;
    zk::engine::EngineOptions gpu_opts;
    gpu_opts.backend = zk::engine::Backend::kCuda;
    gpu_opts.cuda_overlap_msms = overlap;
    gpu_opts.cuda_msm_copies = variant.copies;
    gpu_opts.cuda_msm_tables_in_background = false;  // the load time includes them
    auto t0 = Clock::now();
    const auto gpu_key = zk::engine::ProvingKey::Load(zkey, gpu_opts);
    const double gpu_load_s = Seconds(t0);
    const auto gpu_proof = gpu_key->Prove(witness, blinding);  // warm-up and check
    std::vector<double> gpu_times;
    zk::engine::PhaseTimings last{};
    for (int r = 0; r < gpu_reps; ++r) {
      t0 = Clock::now();
      last = gpu_key->Prove(witness).timings;
      gpu_times.push_back(Seconds(t0) * 1e3);
    }
    const int copies = gpu_key->info().msm_copies;
    Report(Row{name + (overlap ? "" : " (MSMs sequential)") + (copies > 1 ? " (tables x" + std::to_string(copies) + ")" : ""),
               log_n, Median(gpu_times), Median(cpu_times), false,
               gpu_proof.proof_json == cpu_proof.proof_json ? "equal" : "MISMATCH"});
    std::printf("    GPU phases (last proof): witness %.3f ms, A/B/C %.3f ms, NTT %.3f ms, MSM %.3f ms%s, total %.3f ms; "
                "GPU key load %.2f s, resident %.1f MiB\n",
                last.witness_transfer_s * 1e3, last.build_abc_s * 1e3, last.ntt_s * 1e3, last.msm_s * 1e3,
                overlap ? " (overlapping A/B/C and NTT)" : "", last.total_s * 1e3, gpu_load_s,
                gpu_key->info().resident_bytes / 1048576.0);
  }
}

#if defined(ZKFLEET_BENCH_HAVE_DEVTOOLS)
void BenchSyntheticProof(int log_n, const Options& opt) {
  namespace dt = zk::devtools;
  dt::CircuitOptions c;
  c.curve = zk::engine::Curve::kBn254;
  c.constraints = dt::MaxConstraints(log_n, c.public_outputs + c.public_inputs);
  c.seed = 7;
  auto t0 = Clock::now();
  const auto circuit = dt::GenerateCircuit(c);
  const std::string dir = "/tmp/zkfleet-bench-gpu-" + std::to_string(log_n);
  std::system(("mkdir -p " + dir).c_str());
  dt::WriteCircuitFiles(circuit, dir + "/circuit.r1cs", dir + "/witness.wtns");
  dt::SetupOptions so;
  so.seed = 1;
  dt::InsecureSetup(circuit.r1cs, "bench", dir + "/circuit.zkey", so);
  std::printf("    synthetic BN254 circuit: %llu constraints, domain 2^%d, made in %.1f s\n",
              static_cast<unsigned long long>(c.constraints), circuit.stats.domain_power, Seconds(t0));
  BenchProof("proof BN254 synthetic", dir + "/circuit.zkey", dir + "/witness.wtns", log_n, opt, opt.reps, 2);
}
#endif

}  // namespace

// The G1 MSM of 2^min..2^max points at each given window width, without
// tables (the automatic width first, as the reference every other width's
// result must equal): where the width chooser (msm::ChooseShape) stands
// against the widths it does not try.
template <class HostCfg, class Fr>
void SweepWidths(const char* name, const Options& opt) {
  for (int log_n = opt.msm_min_log; log_n <= opt.msm_max_log; ++log_n) {
    const size_t n = size_t{1} << log_n;
    const auto bases = RandomBases<HostCfg, Fr>(n, 1000 + log_n);
    const auto scalars = RandomScalars<Fr>(n, 2000 + log_n);
    zk::curve::Jacobian<HostCfg> reference;
    double auto_ms = 0;
    std::vector<int> widths{0};
    widths.insert(widths.end(), opt.msm_widths.begin(), opt.msm_widths.end());
    for (int c : widths) {
      zk::cuda::DeviceMsm<HostCfg> msm(bases.data(), n, c);
      msm.UploadScalars(scalars.data(), n);
      const auto result = msm.RunUploaded(n);  // warm-up
      if (c == 0) reference = result;
      std::vector<double> times;
      for (int r = 0; r < opt.reps; ++r) {
        const auto t0 = Clock::now();
        msm.RunUploaded(n);
        times.push_back(Seconds(t0) * 1e3);
      }
      zk::cuda::MsmPhaseMs phases;
      float device_ms = 0;
      msm.RunUploaded(n, &device_ms, &phases);
      const double ms = Median(times);
      if (c == 0) auto_ms = ms;
      std::printf("%s 2^%d width %s: %.2f ms (x%.3f of auto), sort %.2f, accumulate %.2f, spills %.2f, slices %.2f, "
                  "window sums %.2f, %s\n",
                  name, log_n, c == 0 ? ("auto (" + std::to_string(zk::cuda::msm::ChooseWindowBits(n)) + ")").c_str()
                                      : std::to_string(c).c_str(),
                  ms, ms / auto_ms, phases.sort, phases.accumulate, phases.spills, phases.slices, phases.window_sums,
                  zk::curve::equal(result, reference) ? "equal" : "MISMATCH");
    }
  }
}

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  Options opt;
  if (const char* env = std::getenv("ZKFLEET_FIXTURES_DIR")) opt.fixtures = env;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--msm-max-log") opt.msm_max_log = std::stoi(v);
    else if (a == "--msm-min-log") opt.msm_min_log = std::stoi(v);
    else if (a == "--proofs") opt.proofs = std::stoi(v);
    else if (a == "--g2-max-log") opt.g2_max_log = std::stoi(v);
    else if (a == "--ntt-max-log") opt.ntt_max_log = std::stoi(v);
    else if (a == "--cpu-max-log") opt.cpu_max_log = std::stoi(v);
    else if (a == "--reps") opt.reps = std::stoi(v);
    else if (a == "--fixtures") opt.fixtures = v;
    else if (a == "--synthetic-log") opt.synthetic_log = std::stoi(v);
    else if (a == "--markdown") opt.markdown = v;
    else if (a == "--msm-tables") opt.msm_tables = std::stoi(v);
    else if (a == "--msm-widths") {
      for (size_t at = 0; at < v.size();) {
        const size_t comma = std::min(v.find(',', at), v.size());
        opt.msm_widths.push_back(std::stoi(v.substr(at, comma - at)));
        at = comma + 1;
      }
    }
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (zk::cuda::DeviceCount() == 0) {
    std::fprintf(stderr, "zkfleet_bench_gpu: no CUDA device\n");
    return 1;
  }
  const zk::cuda::DeviceDescription gpu = zk::cuda::DescribeDevice(0);
  zk::cpu::ThreadPool pool(0);
  char header[512];
  std::snprintf(header, sizeof(header), "GPU: %s (%d SMs); CPU path: %d threads (%u hardware threads)",
                gpu.name.c_str(), gpu.multiprocessors, pool.size(), std::thread::hardware_concurrency());
  std::printf("%s\n", header);
  CheckDeviceGenerator<zk::curve::Bn254G1>("BN254 G1");
  CheckDeviceGenerator<zk::curve::Bn254G2>("BN254 G2");
  CheckDeviceGenerator<zk::curve::Bls12_381G1>("BLS12-381 G1");
  CheckDeviceGenerator<zk::curve::Bls12_381G2>("BLS12-381 G2");
  int failures = 0;
  auto section = [&](const char* what, auto&& body) {
    try {
      body();
    } catch (const std::exception& e) {
      ++failures;
      std::printf("%s FAILED: %s\n", what, e.what());
    }
  };
  if (!opt.msm_widths.empty()) {
    section("G1 MSM BLS12-381 widths", [&] { SweepWidths<zk::curve::Bls12_381G1, zk::ff::Bls12_381Fr>("G1 MSM BLS12-381", opt); });
    section("G1 MSM BN254 widths", [&] { SweepWidths<zk::curve::Bn254G1, zk::ff::Bn254Fr>("G1 MSM BN254", opt); });
    std::printf("done, %d section(s) failed\n", failures);
    return failures ? 1 : 0;
  }
  if (opt.proofs) section("proofs k12", [&] {
    BenchProof("proof BN254 k12 fixture", opt.fixtures + "/bn128_k12/circuit_final.zkey",
               opt.fixtures + "/bn128_k12/witness.wtns", 12, opt, 20, 5);
    BenchProof("proof BLS12-381 k12 fixture", opt.fixtures + "/bls12381_k12/circuit_final.zkey",
               opt.fixtures + "/bls12381_k12/witness.wtns", 12, opt, 20, 5);
  });
  section("G1 MSM BN254", [&] { BenchMsm<zk::curve::Bn254G1, zk::ff::Bn254Fr>("G1 MSM BN254", opt.msm_min_log, opt.msm_max_log, opt, pool); });
  section("G1 MSM BLS12-381", [&] {
    BenchMsm<zk::curve::Bls12_381G1, zk::ff::Bls12_381Fr>("G1 MSM BLS12-381", opt.msm_min_log, opt.msm_max_log, opt, pool);
  });
  section("NTT BN254", [&] { BenchNtt<zk::ff::Bn254Fr>("BN254 Fr", opt, pool); });
  section("NTT BLS12-381", [&] { BenchNtt<zk::ff::Bls12_381Fr>("BLS12-381 Fr", opt, pool); });
  section("G2 MSM BN254", [&] { BenchMsm<zk::curve::Bn254G2, zk::ff::Bn254Fr>("G2 MSM BN254", opt.msm_min_log, opt.g2_max_log, opt, pool); });
  section("G2 MSM BLS12-381", [&] {
    BenchMsm<zk::curve::Bls12_381G2, zk::ff::Bls12_381Fr>("G2 MSM BLS12-381", opt.msm_min_log, opt.g2_max_log, opt, pool);
  });
#if defined(ZKFLEET_BENCH_HAVE_DEVTOOLS)
  if (opt.synthetic_log > 0) section("synthetic proof", [&] { BenchSyntheticProof(opt.synthetic_log, opt); });
#endif
  WriteMarkdown(opt.markdown, header);
  std::printf("done, %d section(s) failed\n", failures);
  return failures ? 1 : 0;
}
