// The assignment file: what is written is read back bit for bit and viewed
// in place, and every malformed file is refused with kBadFormat naming the
// field. Each refusal test feeds a file that only the check under test
// catches, so removing that check makes the test fail.
#include "zkfleet/bellman/assignment_file.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "testutil/test_support.hpp"
#include "zkfleet/bellman/constraint_system.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/engine/assignment_file.hpp"

namespace {

namespace bellman = zkfleet::bellman;
namespace engine = zkfleet::engine;
using zkfleet::Error;
using zkfleet::ErrorCode;
using zkfleet::testing::TempDir;

bellman::Assignment MakeAssignment(int log_rows = 8, uint32_t n_public = 3, uint64_t seed = 7) {
  zkfleet::cpu::ThreadPool pool(2);
  const bellman::SyntheticCircuit circuit = bellman::MakeSyntheticCircuit(log_rows, n_public, seed);
  return bellman::Synthesize(circuit.cs, circuit.values, pool);
}

// The file's bytes in 8-byte aligned storage (ParseAssignment views in place).
struct AlignedBytes {
  std::vector<uint64_t> words;
  size_t size = 0;
  explicit AlignedBytes(const std::string& bytes) : words((bytes.size() + 7) / 8), size(bytes.size()) {
    if (size != 0) std::memcpy(words.data(), bytes.data(), size);
  }
  std::span<const uint8_t> span(size_t n) const { return {reinterpret_cast<const uint8_t*>(words.data()), n}; }
  std::span<const uint8_t> span() const { return span(size); }
};

std::string Serialized(const bellman::Assignment& a) {
  TempDir dir;
  bellman::WriteAssignmentFile(dir.file("a.asgn"), a);
  return zkfleet::testing::ReadFile(dir.file("a.asgn"));
}

// Runs fn, which must throw zkfleet::Error `code` whose message contains `needle`.
void ExpectError(const std::function<void()>& fn, ErrorCode code, const std::string& needle) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "'" << e.what() << "' lacks '" << needle << "'";
    return;
  }
  ADD_FAILURE() << "no error (expected one containing '" << needle << "')";
}

void ExpectParseError(const std::string& bytes, const std::string& needle) {
  const AlignedBytes aligned(bytes);
  ExpectError([&] { bellman::ParseAssignment(aligned.span(), "test.asgn"); }, ErrorCode::kBadFormat, needle);
}

template <class T>
void ExpectSame(std::span<const T> got, const std::vector<T>& want, const char* field) {
  ASSERT_EQ(got.size(), want.size()) << field;
  EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin())) << field;  // (memcmp may not take an empty span's null)
}

void ExpectSameAssignment(const engine::AssignmentView& v, const bellman::Assignment& a) {
  ExpectSame(v.a, a.a, "a");
  ExpectSame(v.b, a.b, "b");
  ExpectSame(v.c, a.c, "c");
  ExpectSame(v.input, a.input, "input");
  ExpectSame(v.aux, a.aux, "aux");
  ExpectSame(v.a_aux_density, a.a_aux_density, "a_aux_density");
  ExpectSame(v.b_input_density, a.b_input_density, "b_input_density");
  ExpectSame(v.b_aux_density, a.b_aux_density, "b_aux_density");
}

// Little-endian integer stores into a serialized file.
void Put32(std::string& bytes, size_t offset, uint32_t v) { std::memcpy(bytes.data() + offset, &v, 4); }
void Put64(std::string& bytes, size_t offset, uint64_t v) { std::memcpy(bytes.data() + offset, &v, 8); }

// The fields in file order with their sizes, computed from the assignment.
struct Field {
  std::string name;
  size_t size;
};
std::vector<Field> Layout(const bellman::Assignment& a) {
  const size_t abc = a.a.size() * 32;
  return {{"the magic", 8},
          {"the version", 4},
          {"the flags", 4},
          {"abc_size", 8},
          {"n_inputs", 8},
          {"n_aux", 8},
          {"a_aux_density", a.a_aux_density.size() * 8},
          {"b_input_density", a.b_input_density.size() * 8},
          {"b_aux_density", a.b_aux_density.size() * 8},
          {"a", abc},
          {"b", abc},
          {"c", abc},
          {"input", a.input.size() * 32},
          {"aux", a.aux.size() * 32}};
}

TEST(AssignmentFile, RoundTripsAndViewsTheMappingInPlace) {
  const bellman::Assignment a = MakeAssignment();
  ASSERT_EQ(a.a.size(), 256u);
  ASSERT_EQ(a.input.size(), 4u);
  // The densities' last words are partial: the bits-past-the-count check applies.
  ASSERT_NE(a.aux.size() % 64, 0u);
  TempDir dir;
  const std::string path = dir.file("a.asgn");
  bellman::WriteAssignmentFile(path, a);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  size_t expected_size = 0;
  for (const Field& f : Layout(a)) expected_size += f.size;
  EXPECT_EQ(std::filesystem::file_size(path), expected_size);

  const bellman::MappedAssignment mapped = bellman::MappedAssignment::Open(path);
  ExpectSameAssignment(mapped.View(), a);

  // The public API: Open (mapped), FromBytes (the caller's bytes), both in place.
  const engine::AssignmentFile file = engine::AssignmentFile::Open(path);
  ExpectSameAssignment(file.View(), a);
  EXPECT_EQ(file.origin(), path);
  const engine::AssignmentFile copy = file;  // copies share the mapping
  EXPECT_EQ(copy.View().aux.data(), file.View().aux.data());

  const AlignedBytes bytes(zkfleet::testing::ReadFile(path));
  const engine::AssignmentFile view = engine::AssignmentFile::FromBytes(bytes.span(), "memory");
  ExpectSameAssignment(view.View(), a);
  const auto* base = bytes.span().data();
  EXPECT_EQ(reinterpret_cast<const uint8_t*>(view.View().a_aux_density.data()), base + bellman::kAssignmentHeaderBytes);
  EXPECT_EQ(reinterpret_cast<const uint8_t*>(view.View().aux.data()) + a.aux.size() * 32, base + bytes.size);
}

TEST(AssignmentFile, EmptyVectorsRoundTrip) {
  // No aux variables and no constraints: every section but the header and
  // the inputs is empty.
  bellman::Assignment a;
  a.input = {engine::FrMont{1, 2, 3, 4}};
  a.b_input_density = {1};
  const std::string bytes = Serialized(a);
  EXPECT_EQ(bytes.size(), bellman::kAssignmentHeaderBytes + 8 + 32);
  const AlignedBytes aligned(bytes);
  ExpectSameAssignment(bellman::ParseAssignment(aligned.span(), "empty"), a);
}

TEST(AssignmentFile, EveryTruncationNamesTheFieldItCuts) {
  const bellman::Assignment a = MakeAssignment();
  const std::string bytes = Serialized(a);
  const AlignedBytes aligned(bytes);
  size_t start = 0;
  for (const Field& field : Layout(a)) {
    // Every length that ends inside this field (or right at its start).
    for (size_t len = start; len < start + field.size; ++len) {
      try {
        bellman::ParseAssignment(aligned.span(len), "cut.asgn");
        ADD_FAILURE() << "a file cut at " << len << " bytes was accepted";
        return;
      } catch (const Error& e) {
        const std::string want = "truncated in " + field.name + ":";
        if (e.code() != ErrorCode::kBadFormat || std::string(e.what()).find(want) == std::string::npos ||
            std::string(e.what()).find("cut.asgn") == std::string::npos) {
          ADD_FAILURE() << "cut at " << len << ": " << e.what() << " (expected '" << want << "')";
          return;
        }
      }
    }
    start += field.size;
  }
  EXPECT_EQ(start, bytes.size());
  EXPECT_NO_THROW(bellman::ParseAssignment(aligned.span(), "whole"));
}

TEST(AssignmentFile, EmptyAndMissingFiles) {
  TempDir dir;
  zkfleet::testing::WriteFile(dir.file("empty.asgn"), "");
  ExpectError([&] { bellman::MappedAssignment::Open(dir.file("empty.asgn")); }, ErrorCode::kBadFormat,
              "empty.asgn: assignment file: truncated in the magic");
  ExpectError([&] { engine::AssignmentFile::Open(dir.file("missing.asgn")); }, ErrorCode::kNotFound, "missing.asgn");
}

TEST(AssignmentFile, RefusesBadMagicVersionAndFlags) {
  const std::string good = Serialized(MakeAssignment());
  std::string bytes = good;
  bytes[7] = '2';  // "ZKFASGN2"
  ExpectParseError(bytes, "bad magic");
  bytes = good;
  Put32(bytes, 8, 2);
  ExpectParseError(bytes, "version 2");
  bytes = good;
  Put32(bytes, 8, 0);
  ExpectParseError(bytes, "version 0");
  bytes = good;
  Put32(bytes, 12, 1);
  ExpectParseError(bytes, "flags 1");
}

TEST(AssignmentFile, RefusesCountsThatOverflowOrExceedTheFile) {
  const std::string good = Serialized(MakeAssignment());
  std::string bytes = good;
  // abc_size · 32 = 2^64: wraps to 0 without the overflow check, and the
  // three sections would then be taken as empty.
  Put64(bytes, 16, uint64_t{1} << 59);
  ExpectParseError(bytes, "a: 576460752303423488 entries of 32 bytes overflow 64 bits");
  bytes = good;
  Put64(bytes, 24, uint64_t{1} << 59);  // n_inputs: input · 32 overflows (its density fits but is truncated first)
  ExpectParseError(bytes, "truncated in b_input_density");
  bytes = good;
  Put64(bytes, 32, ~uint64_t{0});  // n_aux: ceil(2^64-1 / 64) words, ·8 fits in 64 bits, not in the file
  ExpectParseError(bytes, "truncated in a_aux_density");
  bytes = good;
  // Below the overflow but far past the file's end.
  Put64(bytes, 16, (~uint64_t{0}) / 32);
  ExpectParseError(bytes, "truncated in a:");
  bytes = good;
  Put64(bytes, 16, 257);  // one row more than written
  ExpectParseError(bytes, "truncated in aux:");
}

TEST(AssignmentFile, RefusesTrailingBytes) {
  const std::string good = Serialized(MakeAssignment());
  ExpectParseError(good + std::string(1, '\0'), "1 trailing bytes");
  ExpectParseError(good + std::string(32, '\0'), "32 trailing bytes");
  std::string bytes = good;
  Put64(bytes, 16, 255);  // one row fewer than written: 96 bytes left over
  ExpectParseError(bytes, "96 trailing bytes");
}

TEST(AssignmentFile, RefusesDensityBitsPastTheirCount) {
  const bellman::Assignment a = MakeAssignment();
  std::string bytes = Serialized(a);
  // b_input_density: 4 inputs in one word; set bit 4.
  const size_t offset = bellman::kAssignmentHeaderBytes + a.a_aux_density.size() * 8;
  uint64_t word;
  std::memcpy(&word, bytes.data() + offset, 8);
  Put64(bytes, offset, word | (uint64_t{1} << 4));
  ExpectParseError(bytes, "b_input_density: bits set past its 4 entries");
  // The same for an aux bitmap's last word.
  bytes = Serialized(a);
  const size_t last = bellman::kAssignmentHeaderBytes + (a.a_aux_density.size() - 1) * 8;
  std::memcpy(&word, bytes.data() + last, 8);
  Put64(bytes, last, word | (uint64_t{1} << 63));
  ExpectParseError(bytes, "a_aux_density: bits set past its");
}

TEST(AssignmentFile, RefusesUnalignedBytes) {
  const std::string good = Serialized(MakeAssignment());
  std::vector<uint64_t> storage(good.size() / 8 + 2);
  auto* p = reinterpret_cast<uint8_t*>(storage.data()) + 4;
  std::memcpy(p, good.data(), good.size());
  ExpectError([&] { engine::AssignmentFile::FromBytes({p, good.size()}, "odd"); }, ErrorCode::kInvalidArgument,
              "not 8-byte aligned");
}

TEST(AssignmentFile, WriteRefusesAnInconsistentViewAndReportsIoErrors) {
  TempDir dir;
  bellman::Assignment a = MakeAssignment();
  bellman::Assignment bad = a;
  bad.c.pop_back();
  ExpectError([&] { bellman::WriteAssignmentFile(dir.file("x.asgn"), bad); }, ErrorCode::kInvalidArgument,
              "a, b and c have different lengths (256, 256, 255)");
  bad = a;
  bad.b_aux_density.push_back(0);
  ExpectError([&] { bellman::WriteAssignmentFile(dir.file("x.asgn"), bad); }, ErrorCode::kInvalidArgument,
              "b_aux_density has");
  EXPECT_FALSE(std::filesystem::exists(dir.file("x.asgn")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("x.asgn.tmp")));
  ExpectError([&] { engine::AssignmentFile::Write(dir.file("no/such/dir/x.asgn"), a.View()); }, ErrorCode::kIo,
              "no/such/dir/x.asgn.tmp");
}

}  // namespace
