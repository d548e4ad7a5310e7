// One synthesized assignment (engine::AssignmentView) as a file, so that a
// fleet job can carry it by reference and tests can hand it to other
// processes (the supraseal-c2 C ABI test). Layout, all integers little-endian,
// no padding, nothing after the last field:
//
//   offset  size                    field
//   0       8                       magic "ZKFASGN1"
//   8       4                       version (1)
//   12      4                       flags (0; anything else is rejected)
//   16      8                       abc_size
//   24      8                       n_inputs   (the constant one included)
//   32      8                       n_aux
//   40      8·ceil(n_aux/64)        a_aux_density   (bit i of word i/64)
//           8·ceil(n_inputs/64)     b_input_density
//           8·ceil(n_aux/64)        b_aux_density
//           32·abc_size             a, then b, then c (each abc_size scalars)
//           32·n_inputs             input
//           32·n_aux                aux
//
// Scalars are the engine's FrMont: four little-endian u64 limbs in
// Montgomery form, as bellperson / blstrs / supraseal-c2 hold them. Every
// field starts at a multiple of 8 bytes, so a mapping (page-aligned) is
// viewed in place: no copy, no decoding.
//
// What the reader checks: the magic, version and flags; that every count's
// byte size, and their sum, fit in 64 bits and in the file exactly (a
// truncated file and trailing bytes are both kBadFormat, naming the field);
// that no density bit is set beyond its count. It does not check that the
// scalars are below the modulus or that the assignment satisfies anything:
// BellmanKey::Prove checks both, and a reader touching every page of a
// multi-GiB file only to check it would double the cost.
//
// Ownership: MappedAssignment owns its mapping; the view points into it and
// stays valid while the MappedAssignment lives (moves keep the address).
// ParseAssignment's view points into the caller's bytes.
// Thread-safety: immutable after construction; any number of threads may read.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "zkfleet/bellman/constraint_system.hpp"
#include "zkfleet/engine/assignment.hpp"
#include "zkfleet/io/mapped_file.hpp"

namespace zkfleet::bellman {

inline constexpr std::string_view kAssignmentMagic = "ZKFASGN1";
inline constexpr uint32_t kAssignmentVersion = 1;
inline constexpr size_t kAssignmentHeaderBytes = 40;

// Writes `assignment` to `path` through "<path>.tmp" renamed into place (a
// reader never sees half a file). Throws kInvalidArgument when a, b and c
// differ in length or a density has not exactly ceil(count/64) words (the
// file would not describe itself), kIo naming the path on write failure.
void WriteAssignmentFile(const std::string& path, const engine::AssignmentView& assignment);
inline void WriteAssignmentFile(const std::string& path, const Assignment& assignment) {
  WriteAssignmentFile(path, assignment.View());
}

// Views the bytes of an assignment file in place (see the top). `bytes` must
// be 8-byte aligned (kInvalidArgument otherwise) and outlive the view.
// Throws kBadFormat naming `origin` and the field.
engine::AssignmentView ParseAssignment(std::span<const uint8_t> bytes, const std::string& origin);

// An assignment file mapped read-only, viewed in place.
class MappedAssignment {
 public:
  // Throws kNotFound / kIo from the mapping, kBadFormat from ParseAssignment.
  static MappedAssignment Open(const std::string& path);

  const engine::AssignmentView& View() const { return view_; }
  const std::string& path() const { return file_.path(); }

 private:
  io::MappedFile file_;
  engine::AssignmentView view_;
};

}  // namespace zkfleet::bellman
