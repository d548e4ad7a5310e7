#include "zkfleet/engine/assignment_file.hpp"

#include <utility>

#include "zkfleet/bellman/assignment_file.hpp"

namespace zkfleet::engine {

AssignmentFile AssignmentFile::Open(const std::string& path) {
  auto mapped = std::make_shared<bellman::MappedAssignment>(bellman::MappedAssignment::Open(path));
  AssignmentFile out;
  out.view_ = mapped->View();
  out.origin_ = path;
  out.storage_ = std::move(mapped);
  return out;
}

AssignmentFile AssignmentFile::FromBytes(std::span<const uint8_t> bytes, std::string origin) {
  AssignmentFile out;
  out.view_ = bellman::ParseAssignment(bytes, origin);
  out.origin_ = std::move(origin);
  return out;
}

void AssignmentFile::Write(const std::string& path, const AssignmentView& assignment) {
  bellman::WriteAssignmentFile(path, assignment);
}

}  // namespace zkfleet::engine
