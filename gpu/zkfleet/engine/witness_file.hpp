// A .wtns file read for proving on a backend.
//
//   auto file = engine::WitnessFile::Read("witness.wtns", engine::Backend::kCuda);
//   key->Prove(file.witness(), options);
//
// For the CUDA backend (when this build has it and a GPU is present) the
// file's bytes are read into page-locked host memory and the witness is a
// view of them (io::Witness::View), so every proof's witness upload is a DMA
// at full speed, as from the worker's pinned pool: 2^22 values (134 MB) take
// ~2.5 ms at the H200's 55 GB/s, against ~15-25 ms from ordinary memory.
// Otherwise, and when page-locked memory is refused, it is
// Witness::FromFile. The checks and errors are Witness::FromFile's.
//
// Ownership: the WitnessFile owns the bytes its witness() views; keep it
// alive for as long as the witness (or a copy of it) is used.
// Thread-safety: immutable after Read; any number of threads may prove it.
#pragma once

#include <memory>
#include <string>

#include "zkfleet/engine/types.hpp"
#include "zkfleet/engine/witness.hpp"

namespace zkfleet::engine {

class WitnessFile {
 public:
  // Throws zkfleet::Error naming the file (unreadable, truncated, invalid).
  static WitnessFile Read(const std::string& path, Backend backend);

  const Witness& witness() const { return witness_; }
  // True when witness() views page-locked memory.
  bool page_locked() const { return storage_ != nullptr; }

 private:
  std::shared_ptr<void> storage_;  // the page-locked file bytes, or null
  Witness witness_;
};

}  // namespace zkfleet::engine
