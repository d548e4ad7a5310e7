// An assignment file: one circuit synthesized for the bellperson-style
// prover (engine/bellman.hpp), as a fleet job carries it by reference and as
// other processes (zkfleet-dev bellman-assignment, the supraseal-c2 ABI
// test) exchange it. Part of the engine's public API.
//
//   auto file = engine::AssignmentFile::Open("partition3.asgn");
//   BellmanProof proof = key->Prove(file.View());
//
// The layout (gpu/zkfleet/bellman/assignment_file.hpp has the table): magic
// "ZKFASGN1", u32 version 1, u32 flags 0, u64 abc_size, n_inputs, n_aux, the
// three density bitmaps (u64 words), then a, b, c, input and aux as FrMont
// (Montgomery, little-endian limbs). Every field is 8-byte aligned, so the
// file is viewed where it lies: Open maps it, FromBytes views the caller's
// bytes, neither copies a scalar.
//
// Checks: magic, version, flags; every count against the file's length with
// overflow-safe arithmetic (a truncated file or trailing bytes are
// kBadFormat naming the file and the field); no density bit set past its
// count. Scalars below the modulus and a·b = c are BellmanKey::Prove's
// checks, not the reader's.
//
// Ownership: an AssignmentFile from Open owns the mapping (shared among its
// copies); one from FromBytes borrows the caller's bytes, which must outlive
// it and every view taken from it. View() is valid while the AssignmentFile
// (or a copy) lives.
// Thread-safety: immutable after construction; any number of threads may
// read it and prove it at once.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "zkfleet/engine/assignment.hpp"

namespace zkfleet::engine {

class AssignmentFile {
 public:
  // Maps and checks `path`. Throws zkfleet::Error: kNotFound, kIo (the
  // mapping), kBadFormat (naming the file and the field).
  static AssignmentFile Open(const std::string& path);
  // Checks the bytes of an assignment file already in memory and views them
  // in place; `origin` names them in errors. The bytes must be 8-byte
  // aligned (kInvalidArgument otherwise).
  static AssignmentFile FromBytes(std::span<const uint8_t> bytes, std::string origin);
  // Writes one (through a temporary file renamed into place). Throws
  // kInvalidArgument for an inconsistent view, kIo naming the path.
  static void Write(const std::string& path, const AssignmentView& assignment);

  const AssignmentView& View() const { return view_; }
  const std::string& origin() const { return origin_; }

 private:
  std::shared_ptr<const void> storage_;  // the mapping (Open), or null (FromBytes)
  AssignmentView view_;
  std::string origin_;
};

}  // namespace zkfleet::engine
