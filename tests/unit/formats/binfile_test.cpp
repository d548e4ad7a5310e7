// MappedFile, the generic container parser and its writer.
#include "zkfleet/io/binfile.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "formats_test_util.hpp"
#include "zkfleet/io/mapped_file.hpp"
#include "zkfleet/zkey/zkey.hpp"

namespace zkfleet::io {
namespace {

using testing::Bytes;
using testing::Container;
using testing::ExpectError;
using testing::ScratchDir;

TEST(MappedFileTest, MapsContentsAndMovesWithoutCopying) {
  ScratchDir dir;
  const std::string path = dir.Put("f.bin", {1, 2, 3, 4, 5});
  MappedFile a = MappedFile::Open(path);
  ASSERT_EQ(a.size(), 5u);
  EXPECT_EQ(a.data()[4], 5);
  const uint8_t* mapped = a.data();
  MappedFile b = std::move(a);
  EXPECT_EQ(b.data(), mapped);
  EXPECT_EQ(b.size(), 5u);
  EXPECT_EQ(b.path(), path);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from state is specified
  EXPECT_EQ(a.size(), 0u);
}

TEST(MappedFileTest, EmptyFileHasNoData) {
  ScratchDir dir;
  const MappedFile f = MappedFile::Open(dir.Put("empty", {}));
  EXPECT_EQ(f.size(), 0u);
  EXPECT_EQ(f.data(), nullptr);
}

TEST(MappedFileTest, MissingFileIsNotFound) {
  ScratchDir dir;
  const std::string path = dir.File("does_not_exist.zkey");
  ExpectError([&] { MappedFile::Open(path); }, ErrorCode::kNotFound, {path, "cannot open"});
}

TEST(MappedFileTest, DirectoryIsIoError) {
  ScratchDir dir;
  const std::string path = dir.File("");
  ExpectError([&] { MappedFile::Open(path); }, ErrorCode::kIo, {path, "not a regular file"});
}

// A small container with sections 7 (3 bytes) and 9 (5 bytes).
Bytes SmallContainer() {
  Container c;
  c.magic = "test";
  c.version = 1;
  c.sections = {{7, {1, 2, 3}}, {9, {4, 5, 6, 7, 8}}};
  return c.Join();
}

TEST(BinFileTest, LooksUpSectionsById) {
  const Bytes bytes = SmallContainer();
  const BinFile bin = BinFile::Parse(bytes, "test", 1, "small");
  EXPECT_EQ(bin.version(), 1u);
  ASSERT_EQ(bin.entries().size(), 2u);
  const Section s9 = bin.Get(9, "nine");
  EXPECT_EQ(s9.size, 5u);
  EXPECT_EQ(s9.offset, 12u + 12 + 3 + 12);
  EXPECT_EQ(s9.data, bytes.data() + s9.offset);
  EXPECT_EQ(s9.data[0], 4);
  EXPECT_FALSE(bin.Find(8, "eight").has_value());
  ExpectError([&] { bin.Get(8, "eight"); }, ErrorCode::kBadFormat, {"small", "missing section 8 (eight)"});
}

TEST(BinFileTest, EmptyFileIsBadFormat) {
  ExpectError([] { BinFile::Parse({}, "zkey", 1, "empty.zkey"); }, ErrorCode::kBadFormat,
              {"empty.zkey", "file is empty"});
}

TEST(BinFileTest, WrongMagicSaysExpectedAndFound) {
  const Bytes bytes = SmallContainer();
  ExpectError([&] { BinFile::Parse(bytes, "zkey", 1, "x.zkey"); }, ErrorCode::kBadFormat,
              {"x.zkey", "magic", "expected \"zkey\"", "found \"test\""});
  Bytes binary = bytes;
  binary[0] = 0x00;
  ExpectError([&] { BinFile::Parse(binary, "zkey", 1, "x.zkey"); }, ErrorCode::kBadFormat,
              {"found 0x00657374"});
}

TEST(BinFileTest, NewerVersionIsUnsupported) {
  const Bytes bytes = SmallContainer();
  ExpectError([&] { BinFile::Parse(bytes, "test", 0, "v.bin"); }, ErrorCode::kUnsupported,
              {"v.bin", "version: expected <= 0, found 1"});
}

TEST(BinFileTest, TruncationAnywhereIsDetectedWithOffsets) {
  const Bytes bytes = SmallContainer();
  for (size_t cut = 1; cut < bytes.size(); ++cut) {
    const Bytes part(bytes.begin(), bytes.begin() + cut);
    ExpectError([&] { BinFile::Parse(part, "test", 1, "cut.bin"); }, ErrorCode::kBadFormat,
                {"cut.bin", "truncated", "file", std::to_string(cut)});
  }
}

TEST(BinFileTest, TrailingBytesAreRejected) {
  Bytes bytes = SmallContainer();
  bytes.push_back(0);
  ExpectError([&] { BinFile::Parse(bytes, "test", 1, "t.bin"); }, ErrorCode::kBadFormat,
              {"t.bin", "1 unexpected bytes after the last section"});
}

TEST(BinFileTest, DuplicateSectionIsRejectedWhenLookedUp) {
  Container c = Container::Split(SmallContainer());
  c.sections.push_back({7, {9}});
  const Bytes bytes = c.Join();
  const BinFile bin = BinFile::Parse(bytes, "test", 1, "dup.bin");
  EXPECT_EQ(bin.Get(9, "nine").size, 5u);  // other ids stay usable
  ExpectError([&] { bin.Get(7, "seven"); }, ErrorCode::kBadFormat, {"dup.bin", "section 7 (seven) appears more than once"});
}

TEST(BinFileTest, HugeSectionCountDoesNotOverflow) {
  Bytes bytes = SmallContainer();
  testing::PutU32(bytes, 8, 0xffffffffu);
  ExpectError([&] { BinFile::Parse(bytes, "test", 1, "n.bin"); }, ErrorCode::kBadFormat,
              {"n.bin", "truncated", "entry 2 of 4294967295"});
}

TEST(BinFileTest, HugeSectionSizeDoesNotOverflow) {
  Bytes bytes = SmallContainer();
  const uint64_t huge = ~uint64_t{0} - 5;
  std::memcpy(bytes.data() + 16, &huge, 8);
  ExpectError([&] { BinFile::Parse(bytes, "test", 1, "s.bin"); }, ErrorCode::kBadFormat,
              {"s.bin", "truncated", "section 7"});
}

TEST(SectionReaderTest, ReadsFieldsAndNamesTheMissingOne) {
  const Bytes payload = {1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 7};
  SectionReader rd(Section{payload.data(), payload.size(), 100}, "f.bin", "3 (demo)");
  EXPECT_EQ(rd.U32("a"), 1u);
  EXPECT_EQ(rd.U64("b"), 2u);
  ExpectError([&] { rd.ExpectEnd(); }, ErrorCode::kBadFormat, {"f.bin", "3 (demo)", "expected 12", "found 13"});
  ExpectError([&] { rd.U32("c"); }, ErrorCode::kBadFormat, {"f.bin", "field c at offset 12 needs 4 bytes"});
}

TEST(BinFileWriterTest, WritesWhatTheParserReads) {
  ScratchDir dir;
  const std::string path = dir.File("w.bin");
  {
    BinFileWriter w(path, "test", 1, 2);
    w.BeginSection(7, 3);
    w.Write(Bytes{1, 2, 3});
    w.EndSection();
    w.BeginSection(9, 5);
    w.Write(Bytes{4, 5});
    w.Write(Bytes{6, 7, 8});
    w.EndSection();
    EXPECT_FALSE(std::filesystem::exists(path));  // only after Finish()
    w.Finish();
  }
  EXPECT_EQ(testing::ReadBytes(path), SmallContainer());
}

TEST(BinFileWriterTest, SizeMismatchAndUnfinishedFilesAreCaught) {
  ScratchDir dir;
  const std::string path = dir.File("w.bin");
  {
    BinFileWriter w(path, "test", 1, 2);
    w.BeginSection(7, 3);
    ExpectError([&] { w.Write(Bytes{1, 2, 3, 4}); }, ErrorCode::kInvalidArgument, {"declared 3 bytes"});
    w.Write(Bytes{1, 2});
    ExpectError([&] { w.EndSection(); }, ErrorCode::kInvalidArgument, {"declared 3 bytes, 2 written"});
  }
  // Destroyed before Finish(): neither the file nor its temporary remains.
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

}  // namespace
}  // namespace zkfleet::io
