#include "zkfleet/fetch/sha256.hpp"

#include <openssl/evp.h>

#include "zkfleet/common/error.hpp"

namespace zkfleet::fetch {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (ctx_ == nullptr) throw Error(ErrorCode::kInternal, "sha256: EVP_MD_CTX_new failed");
  Reset();
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

void Sha256::Reset() {
  if (EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1) {
    throw Error(ErrorCode::kInternal, "sha256: EVP_DigestInit_ex failed");
  }
}

void Sha256::Update(std::span<const uint8_t> bytes) {
  if (bytes.empty()) return;
  if (EVP_DigestUpdate(ctx_, bytes.data(), bytes.size()) != 1) {
    throw Error(ErrorCode::kInternal, "sha256: EVP_DigestUpdate failed");
  }
}

std::string Sha256::Finish() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(ctx_, digest, &length) != 1 || length != 32) {
    throw Error(ErrorCode::kInternal, "sha256: EVP_DigestFinal_ex failed");
  }
  Reset();
  return std::string(reinterpret_cast<const char*>(digest), length);
}

std::string Sha256::Of(std::span<const uint8_t> bytes) {
  Sha256 sha;
  sha.Update(bytes);
  return sha.Finish();
}

std::string Sha256::Of(std::string_view bytes) {
  return Of(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

}  // namespace zkfleet::fetch
