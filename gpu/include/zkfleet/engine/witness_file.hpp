// A .wtns file read for proving on a backend.
//
//   auto file = engine::WitnessFile::Read("witness.wtns", engine::Backend::kCuda, /*proofs=*/10);
//   for (...) key->Prove(file.witness(), options);
//
// For the CUDA backend (when this build has it and a GPU is present) and a
// witness proved more than once, the file's bytes are read into page-locked
// host memory and the witness is a view of them (Witness::View), so every
// proof's witness upload is a DMA at full speed, as from the worker's pinned
// pool: 2^22 values (134 MB) take 2.6 ms on the H200, against 18-26 ms from
// ordinary memory (docs/benchmarks-gpu.md). For one proof the
// pinning costs more than it saves (it waits for the CUDA context and pins
// at ~0.4 s/GiB; one-shot zkprove with the key check took 1.43 s with it,
// 1.21 s without), so it is
// Witness::FromFile, as it is for the CPU backend and when page-locked
// memory is refused. The checks and errors are Witness::FromFile's.
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
  static WitnessFile Read(const std::string& path, Backend backend, int proofs);

  const Witness& witness() const { return witness_; }
  // True when witness() views page-locked memory.
  bool page_locked() const { return storage_ != nullptr; }

 private:
  std::shared_ptr<void> storage_;  // the page-locked file bytes, or null
  Witness witness_;
};

}  // namespace zkfleet::engine
