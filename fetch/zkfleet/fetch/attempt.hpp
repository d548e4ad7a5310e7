// Internal to zkfleet_fetch: one try of a fetch, by scheme. The retry loop
// (fetcher.cpp) resets nothing for them: each try starts at offset 0 with a
// fresh hash.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <string>

#include <curl/curl.h>

#include "zkfleet/fetch/fetcher.hpp"



namespace zkfleet::fetch::internal {

struct Attempt {
  FetchStatus status = FetchStatus::kOk;
  std::string why;
  uint64_t bytes = 0;
  bool retry = true;  // for kTransient: whether another try can help
};

// Checks the digest of a complete body; kOk or kClientError.
Attempt CheckDigest(const FetchRequest& request, const std::string& digest, uint64_t bytes);

Attempt FetchFile(const FetchConfig& config, const FetchRequest& request, std::span<uint8_t> into,
                  const std::atomic<bool>* cancel);

// Test hook (null in production): FetchFile calls it after each chunk is
// read and hashed, with the bytes read so far, before it checks `cancel` for
// the next chunk. A test sets `cancel` there to land exactly between two
// chunks (file_fetch_test.cpp). Set it only while no fetch runs.
extern void (*after_file_chunk_for_tests)(uint64_t bytes_so_far);

Attempt FetchHttp(const FetchConfig& config, CURL* curl, const FetchRequest& request, std::span<uint8_t> into,
                  const std::atomic<bool>* cancel);

}  // namespace zkfleet::fetch::internal
