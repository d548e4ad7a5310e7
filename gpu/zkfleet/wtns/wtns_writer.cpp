#include "zkfleet/wtns/wtns_writer.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "zkfleet/common/error.hpp"
#include "zkfleet/io/binfile.hpp"

namespace zkfleet::io {

std::string WtnsBytes(uint32_t n8, std::span<const uint8_t> prime, std::span<const uint8_t> values) {
  if (n8 == 0 || prime.size() != n8) {
    throw Error(ErrorCode::kInvalidArgument, "WtnsBytes: prime must be n8 = " + std::to_string(n8) +
                                                 " bytes, got " + std::to_string(prime.size()));
  }
  if (values.size() % n8 != 0 || values.size() / n8 > UINT32_MAX) {
    throw Error(ErrorCode::kInvalidArgument, "WtnsBytes: values must be a whole number (< 2^32) of " +
                                                 std::to_string(n8) + "-byte elements, got " +
                                                 std::to_string(values.size()) + " bytes");
  }
  const uint64_t count = values.size() / n8;
  for (uint64_t i = 0; i < count; ++i) {
    if (!LessThanLe(values.data() + i * n8, prime.data(), n8)) {
      throw Error(ErrorCode::kInvalidArgument, "WtnsBytes: value " + std::to_string(i) + " is not below the prime");
    }
  }

  std::string out;
  out.reserve(12 + 12 + 8 + n8 + 12 + values.size());
  out.append("wtns", 4);
  AppendU32(out, kWtnsVersion);
  AppendU32(out, 2);  // sections
  AppendU32(out, 1);
  AppendU64(out, 8 + uint64_t{n8});
  AppendU32(out, n8);
  out.append(reinterpret_cast<const char*>(prime.data()), n8);
  AppendU32(out, static_cast<uint32_t>(count));
  AppendU32(out, 2);
  AppendU64(out, values.size());
  out.append(reinterpret_cast<const char*>(values.data()), values.size());
  return out;
}

void WriteWtns(const std::string& path, uint32_t n8, std::span<const uint8_t> prime,
               std::span<const uint8_t> values) {
  const std::string bytes = WtnsBytes(n8, prime, values);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) throw Error(ErrorCode::kIo, path + ": cannot create: " + std::strerror(errno));
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const int write_errno = errno;
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed) {
    std::remove(path.c_str());
    throw Error(ErrorCode::kIo, path + ": write failed: " + std::strerror(written ? errno : write_errno));
  }
}

}  // namespace zkfleet::io
