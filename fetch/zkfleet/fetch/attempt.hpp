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

Attempt FetchHttp(const FetchConfig& config, CURL* curl, const FetchRequest& request, std::span<uint8_t> into,
                  const std::atomic<bool>* cancel);

}  // namespace zkfleet::fetch::internal
