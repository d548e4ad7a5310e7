#include "zkfleet/worker/memory_source.hpp"

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "zkfleet/common/byte_size.hpp"

namespace zkfleet::worker {
namespace {

std::optional<std::string> ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<uint64_t> ReadNumber(const std::string& path) {
  auto text = ReadSmallFile(path);
  if (!text) return std::nullopt;
  std::string value = *text;
  while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) value.pop_back();
  if (value.empty() || value == "max") return std::nullopt;  // "max": no limit
  try {
    return std::stoull(value);
  } catch (...) {
    return std::nullopt;
  }
}

// MemAvailable from meminfo, in bytes.
std::optional<uint64_t> MemAvailable(const std::string& proc_root) {
  std::ifstream in(proc_root + "/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kib * 1024;
  }
  return std::nullopt;
}

// Limit and usage of this process's memory cgroup, if it has a limit.
struct CgroupMemory {
  uint64_t limit = 0;
  uint64_t usage = 0;
  std::string path;
};

// Limits above this are "no limit" (cgroup v1 reports ~2^63 when unset).
constexpr uint64_t kNoLimit = 1ull << 60;

std::optional<CgroupMemory> Cgroup(const std::string& proc_root, const std::string& cgroup_root) {
  std::ifstream in(proc_root + "/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    // v2: "0::/path"; v1: "N:memory:/path" (controllers may be comma-joined).
    auto first = line.find(':');
    auto second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    std::vector<std::pair<std::string, std::string>> candidates;  // (limit file, usage file)
    if (controllers.empty()) {
      candidates.push_back({cgroup_root + path + "/memory.max", cgroup_root + path + "/memory.current"});
      candidates.push_back({cgroup_root + "/memory.max", cgroup_root + "/memory.current"});
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      std::string base = cgroup_root + "/memory";
      candidates.push_back({base + path + "/memory.limit_in_bytes", base + path + "/memory.usage_in_bytes"});
      candidates.push_back({base + "/memory.limit_in_bytes", base + "/memory.usage_in_bytes"});
    } else {
      continue;
    }
    for (const auto& [limit_file, usage_file] : candidates) {
      auto limit = ReadNumber(limit_file);
      auto usage = ReadNumber(usage_file);
      if (limit && usage && *limit < kNoLimit) return CgroupMemory{*limit, *usage, limit_file};
    }
  }
  return std::nullopt;
}

std::string Mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

SystemMemorySource::SystemMemorySource(std::string proc_root, std::string cgroup_root)
    : proc_root_(std::move(proc_root)), cgroup_root_(std::move(cgroup_root)) {}

MemoryReading SystemMemorySource::Read() const {
  MemoryReading reading;
  auto available = MemAvailable(proc_root_);
  auto cgroup = Cgroup(proc_root_, cgroup_root_);
  if (cgroup) {
    uint64_t room = cgroup->limit > cgroup->usage ? cgroup->limit - cgroup->usage : 0;
    reading.detail = "cgroup " + cgroup->path + ": limit " + Mib(cgroup->limit) + ", usage " + Mib(cgroup->usage);
    reading.available_bytes = room;
    if (available && *available < room) {
      reading.available_bytes = *available;
      reading.detail += "; host MemAvailable " + Mib(*available) + " is smaller";
    }
  } else if (available) {
    reading.available_bytes = *available;
    reading.detail = proc_root_ + "/meminfo MemAvailable " + Mib(*available) + " (no cgroup memory limit)";
  } else {
    reading.detail = "no cgroup limit and no MemAvailable in " + proc_root_ + "/meminfo: assuming 0";
  }
  return reading;
}

SimulatedMemorySource::SimulatedMemorySource(uint64_t limit_bytes, std::string ledger_dir)
    : limit_bytes_(limit_bytes), ledger_dir_(std::move(ledger_dir)) {
  std::filesystem::create_directories(ledger_dir_);
}

MemoryReading SimulatedMemorySource::Read() const {
  uint64_t held = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(ledger_dir_, error)) {
    if (entry.path().extension() == ".bytes") held += ReadNumber(entry.path().string()).value_or(0);
  }
  MemoryReading reading;
  reading.available_bytes = limit_bytes_ > held ? limit_bytes_ - held : 0;
  reading.detail = "TEST memory source: limit " + Mib(limit_bytes_) + ", pools in " + ledger_dir_ + " hold " + Mib(held);
  return reading;
}

void SimulatedMemorySource::OnPoolChanged(const std::string& worker_id, uint64_t held_bytes) const {
  std::string path = ledger_dir_ + "/" + worker_id + ".bytes";
  if (held_bytes == 0) {
    std::filesystem::remove(path);
    return;
  }
  // Write then rename, so a reader never sees a half-written number.
  std::string temp = path + ".tmp";
  std::ofstream(temp) << held_bytes << '\n';
  std::filesystem::rename(temp, path);
}

std::optional<MemoryBudget> ParseMemoryBudget(const std::string& text) {
  if (!text.empty() && text.back() == '%') {
    try {
      size_t used = 0;
      double percent = std::stod(text.substr(0, text.size() - 1), &used);
      if (used != text.size() - 1 || percent <= 0 || percent > 100) return std::nullopt;
      return MemoryBudget{0, percent / 100.0};
    } catch (...) {
      return std::nullopt;
    }
  }
  auto bytes = ParseByteSize(text);
  if (!bytes) return std::nullopt;
  return MemoryBudget{*bytes, 0};
}

}  // namespace zkfleet::worker
