#include "zkfleet/engine/witness_file.hpp"

#include <cstring>
#include <span>

#include "zkfleet/io/mapped_file.hpp"

#ifdef ZKFLEET_HAVE_CUDA
#include "zkfleet/runtime/cuda_device.hpp"
#endif

namespace zkfleet::engine {

WitnessFile WitnessFile::Read(const std::string& path, Backend backend, int proofs) {
  WitnessFile file;
#ifdef ZKFLEET_HAVE_CUDA
  const bool cuda = backend == Backend::kCuda || backend == Backend::kAuto;
  if (cuda && proofs > 1 && CudaAvailable()) {
    // Mapped as Witness::FromFile maps it (same errors), then copied once
    // into page-locked memory, which the witness views.
    const io::MappedFile mapped = io::MappedFile::Open(path);
    const std::span<const uint8_t> bytes = mapped.bytes();
    std::shared_ptr<cuda::PinnedBuffer> pinned;
    try {
      if (!bytes.empty()) pinned = std::make_shared<cuda::PinnedBuffer>(bytes.size(), path + " (witness)");
    } catch (const std::exception&) {
      // No page-locked memory: the ordinary read below.
    }
    if (pinned) {
      std::memcpy(pinned->get(), bytes.data(), bytes.size());
      file.witness_ = Witness::View(std::span<const uint8_t>(pinned->as<uint8_t>(), bytes.size()), path);
      file.storage_ = std::move(pinned);
      return file;
    }
  }
#else
  (void)backend;
  (void)proofs;
#endif
  file.witness_ = Witness::FromFile(path);
  return file;
}

}  // namespace zkfleet::engine
