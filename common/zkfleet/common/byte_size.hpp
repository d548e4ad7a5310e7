// Sizes in bytes as people write them, for every flag and config value that
// is a size (zkbroker, zkworker, zkctl).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace zkfleet {

// "1073741824", "512MiB", "2GiB", "64M", "1.5G" -> bytes (K, M, G, T and their
// KB/KiB forms are all powers of 1024, any case). nullopt if invalid.
std::optional<uint64_t> ParseByteSize(const std::string& text);

}  // namespace zkfleet
