// journal_witness_bench: how fast the broker's journal takes large witnesses
// (a 2^22 BN254 witness is 134 MB), next to the disk's raw sequential write
// speed measured the same way (write + fdatasync of the same buffer), so the
// journal can be shown never to be what limits a GPU fleet.
//
//   journal_witness_bench --dir DIR [--bytes 134217728] [--count 8]
//
// Each witness is one SUBMIT's worth: Journal::PutWitness (a blob file above
// --witness-file-threshold) plus the job's records, then Commit() (fdatasync
// of the file, then the LMDB commit), exactly as the broker does per turn.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "zkfleet/storage/journal.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double RawWriteSeconds(const std::filesystem::path& path, const std::string& bytes) {
  auto started = Clock::now();
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  size_t done = 0;
  while (fd >= 0 && done < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  if (fd >= 0) {
    fdatasync(fd);
    close(fd);
  }
  double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  std::filesystem::remove(path);
  return seconds;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  uint64_t bytes = 134217728;
  int count = 8;
  CLI::App app{"journal_witness_bench: the broker journal's MB/s for large witnesses vs the disk's raw write speed"};
  app.add_option("--dir", dir, "scratch directory on the disk to measure (emptied)")->required();
  app.add_option("--bytes", bytes, "witness size")->capture_default_str();
  app.add_option("--count", count, "witnesses (and raw writes), interleaved")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  zkfleet::storage::JournalOptions options;
  options.dir = std::filesystem::path(dir) / "journal";
  auto journal = zkfleet::storage::Journal::Open(options);
  journal->BeginLife();
  std::string witness(bytes, '\0');
  for (size_t i = 0; i < witness.size(); i += 4096) witness[i] = static_cast<char>(i * 2654435761u >> 24);

  std::vector<double> journal_s, raw_s;
  for (int i = 0; i < count; ++i) {
    raw_s.push_back(RawWriteSeconds(std::filesystem::path(dir) / "raw.bin", witness));
    auto started = Clock::now();
    uint64_t seq = journal->TakeJobSeq();
    zkfleet::journal::Job job;
    job.set_job_seq(seq);
    job.set_partitions(1);
    job.set_witness_bytes(bytes);
    journal->PutWitness(seq, 0, witness);
    journal->PutJob(job);
    journal->Commit();
    journal_s.push_back(std::chrono::duration<double>(Clock::now() - started).count());
    journal->DeleteWitness(seq, 0);  // as when the item is proved; keeps the disk use flat
    journal->Commit();
  }
  double mb = static_cast<double>(bytes) / 1e6;
  std::printf("witness %.1f MB x %d: journal median %.0f MB/s (best %.0f), raw write+fdatasync median %.0f MB/s "
              "(best %.0f); journal/raw = %.2f\n",
              mb, count, mb / Median(journal_s), mb / *std::min_element(journal_s.begin(), journal_s.end()),
              mb / Median(raw_s), mb / *std::min_element(raw_s.begin(), raw_s.end()),
              Median(raw_s) / Median(journal_s));
  std::printf("{\"witness_bytes\":%llu,\"count\":%d,\"journal_mb_per_s\":%.1f,\"raw_mb_per_s\":%.1f}\n",
              static_cast<unsigned long long>(bytes), count, mb / Median(journal_s), mb / Median(raw_s));
  std::filesystem::remove_all(dir);
  return 0;
}
