// The generic snarkjs binary container shared by .zkey, .wtns, .r1cs, .ptau
// (spec §2):
//
//   "magic" (4 ASCII bytes) | u32 version | u32 nSections |
//   nSections x { u32 id | u64 size | size bytes of payload }
//
// Sections follow each other with no padding, in any order, and payloads are
// only 4-byte aligned: never cast a payload pointer to uint64_t* (use LoadU64
// or memcpy).
//
// Ownership: BinFile and SectionReader only point into bytes owned by the
// caller, who must keep them alive and unchanged. BinFileWriter owns its file.
// Thread-safety: BinFile is immutable after Parse(); SectionReader and
// BinFileWriter are single-threaded.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace zkfleet::io {

// Throws zkfleet::Error(kBadFormat, message): how the format readers refuse a file.
[[noreturn]] void BadFormat(const std::string& message);

// Little-endian loads from unaligned memory (every host we target is LE).
inline uint32_t LoadU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline uint64_t LoadU64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// One section's payload.
struct Section {
  const uint8_t* data = nullptr;
  uint64_t size = 0;
  uint64_t offset = 0;  // of the payload, from the start of the file
};

// One row of the section table.
struct SectionEntry {
  uint32_t id = 0;
  uint64_t offset = 0;  // of the payload, from the start of the file
  uint64_t size = 0;
};

class BinFile {
 public:
  static constexpr size_t kHeaderSize = 12;         // magic, version, nSections
  static constexpr size_t kSectionHeaderSize = 12;  // id, size

  // Parses the container header and the whole section table, checking that
  // every section lies inside `bytes` and that nothing follows the last one.
  // `name` (usually the path) prefixes every error message. Throws
  // zkfleet::Error: kBadFormat (empty, truncated, wrong magic, trailing
  // bytes), kUnsupported (version > max_version).
  static BinFile Parse(std::span<const uint8_t> bytes, std::string_view magic,
                       uint32_t max_version, std::string name);

  const std::string& name() const { return name_; }
  uint32_t version() const { return version_; }
  const std::vector<SectionEntry>& entries() const { return entries_; }

  // The section with this id, which must appear exactly once. `what` names
  // the section in messages, e.g. "groth16 header". Throws kBadFormat when
  // the section is missing or duplicated.
  Section Get(uint32_t id, std::string_view what) const;
  // Same, but std::nullopt when the section is absent.
  std::optional<Section> Find(uint32_t id, std::string_view what) const;

 private:
  std::string name_;
  const uint8_t* base_ = nullptr;
  uint32_t version_ = 0;
  std::vector<SectionEntry> entries_;
};

// Reads fields one after another from a section payload with bounds checks.
// Errors name the file, the section, the field and the offset.
class SectionReader {
 public:
  SectionReader(const Section& section, std::string file_name, std::string section_name)
      : section_(section), file_(std::move(file_name)), what_(std::move(section_name)) {}

  uint32_t U32(std::string_view field);
  uint64_t U64(std::string_view field);
  // Returns a pointer to the next `n` bytes and skips them.
  const uint8_t* Bytes(uint64_t n, std::string_view field);

  uint64_t position() const { return pos_; }
  uint64_t remaining() const { return section_.size - pos_; }
  // Throws kBadFormat unless the whole payload has been consumed.
  void ExpectEnd() const;

 private:
  void Need(uint64_t n, std::string_view field) const;

  Section section_;
  std::string file_;
  std::string what_;
  uint64_t pos_ = 0;
};

// Writes a container file section by section, streaming the payloads. The
// data goes to "<path>.tmp", renamed to `path` by Finish(); a writer
// destroyed before Finish() removes the temporary file. Each section declares
// its size up front and EndSection() checks that exactly that many bytes were
// written. Throws zkfleet::Error kIo on write failures and kInvalidArgument
// on misuse (wrong sizes, too many sections).
class BinFileWriter {
 public:
  BinFileWriter(std::string path, std::string_view magic, uint32_t version, uint32_t n_sections);
  ~BinFileWriter();
  BinFileWriter(const BinFileWriter&) = delete;
  BinFileWriter& operator=(const BinFileWriter&) = delete;

  void BeginSection(uint32_t id, uint64_t size);
  void Write(std::span<const uint8_t> bytes);
  void WriteU32(uint32_t v);
  void WriteU64(uint64_t v);
  void EndSection();
  // Checks that all declared sections were written, flushes and renames.
  void Finish();

  const std::string& path() const { return path_; }

 private:
  void RawWrite(const void* p, size_t n);

  std::string path_;
  std::string tmp_path_;
  std::FILE* file_ = nullptr;
  uint32_t n_sections_ = 0;
  uint32_t sections_done_ = 0;
  bool in_section_ = false;
  uint32_t section_id_ = 0;
  uint64_t section_size_ = 0;
  uint64_t section_written_ = 0;
};

// Appends little-endian integers to a byte string (for small in-memory files).
void AppendU32(std::string& out, uint32_t v);
void AppendU64(std::string& out, uint64_t v);

// True when the little-endian integers a and b (n bytes each) satisfy a < b.
bool LessThanLe(const uint8_t* a, const uint8_t* b, size_t n);

}  // namespace zkfleet::io
