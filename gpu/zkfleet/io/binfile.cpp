#include "zkfleet/io/binfile.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "zkfleet/common/error.hpp"

namespace zkfleet::io {
namespace {

// Quotes printable magic bytes, shows anything else in hex.
std::string DescribeMagic(const uint8_t* p) {
  std::string text = "\"";
  for (int i = 0; i < 4; ++i) {
    if (p[i] < 0x20 || p[i] > 0x7e) {
      char hex[16];
      std::snprintf(hex, sizeof hex, "0x%02x%02x%02x%02x", p[0], p[1], p[2], p[3]);
      return hex;
    }
    text += static_cast<char>(p[i]);
  }
  return text + "\"";
}

}  // namespace

[[noreturn]] void BadFormat(const std::string& message) { throw Error(ErrorCode::kBadFormat, message); }

BinFile BinFile::Parse(std::span<const uint8_t> bytes, std::string_view magic,
                       uint32_t max_version, std::string name) {
  const std::string expected_magic(magic);
  const uint64_t file_size = bytes.size();
  if (file_size == 0) BadFormat(name + ": file is empty (expected a \"" + expected_magic + "\" file)");
  if (file_size < kHeaderSize) {
    BadFormat(name + ": truncated: the container header needs " + std::to_string(kHeaderSize) +
              " bytes, the file has " + std::to_string(file_size));
  }
  const uint8_t* p = bytes.data();
  if (magic.size() != 4 || std::memcmp(p, magic.data(), 4) != 0) {
    BadFormat(name + ": magic: expected \"" + expected_magic + "\", found " + DescribeMagic(p));
  }

  BinFile file;
  file.name_ = std::move(name);
  file.base_ = p;
  file.version_ = LoadU32(p + 4);
  if (file.version_ > max_version) {
    throw Error(ErrorCode::kUnsupported, file.name_ + ": version: expected <= " +
                                             std::to_string(max_version) + ", found " +
                                             std::to_string(file.version_));
  }
  const uint32_t n_sections = LoadU32(p + 8);

  uint64_t pos = kHeaderSize;
  // A corrupt count must not make us reserve gigabytes: cap by what fits.
  file.entries_.reserve(std::min<uint64_t>(n_sections, (file_size - pos) / kSectionHeaderSize));
  for (uint32_t i = 0; i < n_sections; ++i) {
    if (file_size - pos < kSectionHeaderSize) {
      BadFormat(file.name_ + ": truncated: section table entry " + std::to_string(i) + " of " +
                std::to_string(n_sections) + " at offset " + std::to_string(pos) +
                " needs 12 bytes, the file ends at " + std::to_string(file_size));
    }
    SectionEntry entry;
    entry.id = LoadU32(p + pos);
    entry.size = LoadU64(p + pos + 4);
    entry.offset = pos + kSectionHeaderSize;
    if (entry.size > file_size - entry.offset) {
      BadFormat(file.name_ + ": truncated: section " + std::to_string(entry.id) + " (entry " +
                std::to_string(i) + ") has payload at offset " + std::to_string(entry.offset) +
                " of size " + std::to_string(entry.size) + ", but the file ends at " +
                std::to_string(file_size));
    }
    file.entries_.push_back(entry);
    pos = entry.offset + entry.size;
  }
  if (pos != file_size) {
    BadFormat(file.name_ + ": " + std::to_string(file_size - pos) +
              " unexpected bytes after the last section (which ends at offset " +
              std::to_string(pos) + ", nSections " + std::to_string(n_sections) + ")");
  }
  return file;
}

std::optional<Section> BinFile::Find(uint32_t id, std::string_view what) const {
  std::optional<Section> found;
  for (const SectionEntry& e : entries_) {
    if (e.id != id) continue;
    if (found) {
      BadFormat(name_ + ": section " + std::to_string(id) + " (" + std::string(what) +
                ") appears more than once (offsets " + std::to_string(found->offset) + " and " +
                std::to_string(e.offset) + ")");
    }
    found = Section{base_ + e.offset, e.size, e.offset};
  }
  return found;
}

Section BinFile::Get(uint32_t id, std::string_view what) const {
  std::optional<Section> s = Find(id, what);
  if (!s) BadFormat(name_ + ": missing section " + std::to_string(id) + " (" + std::string(what) + ")");
  return *s;
}

// ----------------------------------------------------------------------------

void SectionReader::Need(uint64_t n, std::string_view field) const {
  if (n > section_.size - pos_) {
    BadFormat(file_ + ": section " + what_ + ": field " + std::string(field) + " at offset " +
              std::to_string(pos_) + " needs " + std::to_string(n) + " bytes, but the section has " +
              std::to_string(section_.size) + " bytes");
  }
}

uint32_t SectionReader::U32(std::string_view field) {
  Need(4, field);
  const uint32_t v = LoadU32(section_.data + pos_);
  pos_ += 4;
  return v;
}

uint64_t SectionReader::U64(std::string_view field) {
  Need(8, field);
  const uint64_t v = LoadU64(section_.data + pos_);
  pos_ += 8;
  return v;
}

const uint8_t* SectionReader::Bytes(uint64_t n, std::string_view field) {
  Need(n, field);
  const uint8_t* p = section_.data + pos_;
  pos_ += n;
  return p;
}

void SectionReader::ExpectEnd() const {
  if (pos_ != section_.size) {
    BadFormat(file_ + ": section " + what_ + ": size: expected " + std::to_string(pos_) +
              " bytes, found " + std::to_string(section_.size));
  }
}

// ----------------------------------------------------------------------------

BinFileWriter::BinFileWriter(std::string path, std::string_view magic, uint32_t version,
                             uint32_t n_sections)
    : path_(std::move(path)), tmp_path_(path_ + ".tmp"), n_sections_(n_sections) {
  if (magic.size() != 4) throw Error(ErrorCode::kInvalidArgument, "binfile magic must be 4 bytes");
  file_ = std::fopen(tmp_path_.c_str(), "wb");
  if (file_ == nullptr) {
    throw Error(ErrorCode::kIo, tmp_path_ + ": cannot create: " + std::strerror(errno));
  }
  std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
  RawWrite(magic.data(), 4);
  WriteU32(version);
  WriteU32(n_sections);
}

BinFileWriter::~BinFileWriter() {
  if (file_ != nullptr) {
    std::fclose(file_);
    std::remove(tmp_path_.c_str());
  }
}

void BinFileWriter::RawWrite(const void* p, size_t n) {
  if (file_ == nullptr) throw Error(ErrorCode::kInvalidArgument, path_ + ": write after Finish()");
  if (n != 0 && std::fwrite(p, 1, n, file_) != n) {
    throw Error(ErrorCode::kIo, tmp_path_ + ": write failed: " + std::strerror(errno));
  }
}

void BinFileWriter::BeginSection(uint32_t id, uint64_t size) {
  if (in_section_) {
    throw Error(ErrorCode::kInvalidArgument, path_ + ": section " + std::to_string(section_id_) +
                                                 " not ended before section " + std::to_string(id));
  }
  if (sections_done_ == n_sections_) {
    throw Error(ErrorCode::kInvalidArgument, path_ + ": more than the declared " +
                                                 std::to_string(n_sections_) + " sections");
  }
  in_section_ = true;
  section_id_ = id;
  section_size_ = size;
  section_written_ = 0;
  uint8_t header[12];
  std::memcpy(header, &id, 4);
  std::memcpy(header + 4, &size, 8);
  RawWrite(header, sizeof header);
}

void BinFileWriter::Write(std::span<const uint8_t> bytes) {
  if (!in_section_) throw Error(ErrorCode::kInvalidArgument, path_ + ": Write() outside a section");
  if (bytes.size() > section_size_ - section_written_) {
    throw Error(ErrorCode::kInvalidArgument,
                path_ + ": section " + std::to_string(section_id_) + " declared " +
                    std::to_string(section_size_) + " bytes, writing " +
                    std::to_string(section_written_ + bytes.size()));
  }
  RawWrite(bytes.data(), bytes.size());
  section_written_ += bytes.size();
}

void BinFileWriter::WriteU32(uint32_t v) {
  uint8_t b[4];
  std::memcpy(b, &v, 4);
  if (in_section_) Write(b); else RawWrite(b, 4);
}

void BinFileWriter::WriteU64(uint64_t v) {
  uint8_t b[8];
  std::memcpy(b, &v, 8);
  if (in_section_) Write(b); else RawWrite(b, 8);
}

void BinFileWriter::EndSection() {
  if (!in_section_) throw Error(ErrorCode::kInvalidArgument, path_ + ": EndSection() outside a section");
  if (section_written_ != section_size_) {
    throw Error(ErrorCode::kInvalidArgument,
                path_ + ": section " + std::to_string(section_id_) + " declared " +
                    std::to_string(section_size_) + " bytes, " + std::to_string(section_written_) +
                    " written");
  }
  in_section_ = false;
  ++sections_done_;
}

void BinFileWriter::Finish() {
  if (in_section_ || sections_done_ != n_sections_) {
    throw Error(ErrorCode::kInvalidArgument,
                path_ + ": Finish() after " + std::to_string(sections_done_) + " of " +
                    std::to_string(n_sections_) + " sections" + (in_section_ ? " (one still open)" : ""));
  }
  const bool flushed = std::fflush(file_) == 0;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!flushed || !closed) {
    const int err = errno;
    std::remove(tmp_path_.c_str());
    throw Error(ErrorCode::kIo, tmp_path_ + ": write failed: " + std::strerror(err));
  }
  if (std::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp_path_.c_str());
    throw Error(ErrorCode::kIo, path_ + ": cannot rename from " + tmp_path_ + ": " + std::strerror(err));
  }
}

// ----------------------------------------------------------------------------

void AppendU32(std::string& out, uint32_t v) {
  char b[4];
  std::memcpy(b, &v, 4);
  out.append(b, 4);
}

void AppendU64(std::string& out, uint64_t v) {
  char b[8];
  std::memcpy(b, &v, 8);
  out.append(b, 8);
}

bool LessThanLe(const uint8_t* a, const uint8_t* b, size_t n) {
  for (size_t i = n; i-- > 0;) {
    if (a[i] != b[i]) return a[i] < b[i];
  }
  return false;
}

}  // namespace zkfleet::io
