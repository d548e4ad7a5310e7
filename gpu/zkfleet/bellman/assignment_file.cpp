#include "zkfleet/bellman/assignment_file.hpp"

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <sys/stat.h>
#include <unistd.h>

#include "zkfleet/common/error.hpp"

namespace zkfleet::bellman {
namespace {

// The file is the in-memory layout: a big-endian host would need a decoding
// pass, which this format exists to avoid.
static_assert(std::endian::native == std::endian::little, "assignment files are viewed in place: little-endian hosts only");
static_assert(sizeof(engine::FrMont) == 32 && alignof(engine::FrMont) == 8);

constexpr size_t kScalarBytes = sizeof(engine::FrMont);

uint64_t Words(uint64_t bits) { return bits / 64 + (bits % 64 != 0); }

[[noreturn]] void BadFormat(const std::string& origin, const std::string& what) {
  throw Error(ErrorCode::kBadFormat, origin + ": assignment file: " + what);
}

// count · unit, or a kBadFormat naming the field when it does not fit in 64 bits.
uint64_t Bytes(uint64_t count, uint64_t unit, const char* field, const std::string& origin) {
  uint64_t out = 0;
  if (__builtin_mul_overflow(count, unit, &out)) {
    BadFormat(origin, std::string(field) + ": " + std::to_string(count) + " entries of " + std::to_string(unit) +
                          " bytes overflow 64 bits");
  }
  return out;
}

// Consumes the fields in order, each checked against what is left of the file.
class AssignmentCursor {
 public:
  AssignmentCursor(std::span<const uint8_t> bytes, const std::string& origin) : bytes_(bytes), origin_(origin) {}

  const uint8_t* Take(uint64_t n, const char* field) {
    const uint64_t left = bytes_.size() - pos_;
    if (n > left) {
      BadFormat(origin_, std::string("truncated in ") + field + ": it needs " + std::to_string(n) +
                             " bytes at offset " + std::to_string(pos_) + ", the file has " +
                             std::to_string(bytes_.size()) + " bytes");
    }
    const uint8_t* p = bytes_.data() + pos_;
    pos_ += n;
    return p;
  }
  uint32_t U32(const char* field) {
    uint32_t v;
    std::memcpy(&v, Take(4, field), 4);
    return v;
  }
  uint64_t U64(const char* field) {
    uint64_t v;
    std::memcpy(&v, Take(8, field), 8);
    return v;
  }
  // `count` scalars of 32 bytes, viewed in place.
  std::span<const engine::FrMont> Scalars(uint64_t count, const char* field) {
    const uint8_t* p = Take(Bytes(count, kScalarBytes, field, origin_), field);
    return {reinterpret_cast<const engine::FrMont*>(p), static_cast<size_t>(count)};
  }
  // A density bitmap of `bits` bits; the bits past `bits` in its last word must be 0.
  std::span<const uint64_t> Density(uint64_t bits, const char* field) {
    const uint64_t words = Words(bits);
    const uint8_t* p = Take(Bytes(words, 8, field, origin_), field);
    std::span<const uint64_t> out{reinterpret_cast<const uint64_t*>(p), static_cast<size_t>(words)};
    if (bits % 64 != 0 && (out.back() >> (bits % 64)) != 0) {
      BadFormat(origin_, std::string(field) + ": bits set past its " + std::to_string(bits) + " entries");
    }
    return out;
  }
  void ExpectEnd() const {
    if (pos_ != bytes_.size()) {
      BadFormat(origin_, std::to_string(bytes_.size() - pos_) + " trailing bytes after the aux assignment (the file has " +
                             std::to_string(bytes_.size()) + " bytes, its counts describe " + std::to_string(pos_) + ")");
    }
  }

 private:
  std::span<const uint8_t> bytes_;
  const std::string& origin_;
  uint64_t pos_ = 0;
};

class Writer {
 public:
  // A temporary name of its own (two writers of one path do not mix their
  // bytes), made durable before the rename.
  explicit Writer(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp-XXXXXX") {
    const int fd = mkstemp(tmp_.data());
    if (fd < 0) throw Error(ErrorCode::kIo, "cannot create " + tmp_ + ": " + std::strerror(errno));
    fchmod(fd, 0644);  // mkstemp makes it 0600; an assignment is read by the worker's user too
    file_ = fdopen(fd, "wb");
    if (!file_) {
      const int err = errno;
      close(fd);
      std::remove(tmp_.c_str());
      throw Error(ErrorCode::kIo, "cannot open " + tmp_ + ": " + std::strerror(err));
    }
  }
  ~Writer() {
    if (file_) {  // not finished: an exception is on its way
      std::fclose(file_);
      std::remove(tmp_.c_str());
    }
  }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  void Put(const void* p, size_t n) {
    if (n != 0 && std::fwrite(p, 1, n, file_) != n) {
      throw Error(ErrorCode::kIo, tmp_ + ": write failed: " + std::strerror(errno));
    }
  }
  template <class T>
  void Put(std::span<const T> values) {
    Put(values.data(), values.size_bytes());
  }
  void Finish() {
    const bool flushed = std::fflush(file_) == 0 && fsync(fileno(file_)) == 0;
    const int flush_errno = errno;
    const bool closed = std::fclose(file_) == 0;
    file_ = nullptr;
    if (!flushed || !closed) {
      std::remove(tmp_.c_str());
      throw Error(ErrorCode::kIo, tmp_ + ": write failed: " + std::strerror(flushed ? errno : flush_errno));
    }
    if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
      const int err = errno;
      std::remove(tmp_.c_str());
      throw Error(ErrorCode::kIo, path_ + ": cannot rename from " + tmp_ + ": " + std::strerror(err));
    }
  }

 private:
  std::string path_, tmp_;
  std::FILE* file_ = nullptr;
};

}  // namespace

void WriteAssignmentFile(const std::string& path, const engine::AssignmentView& v) {
  if (v.b.size() != v.a.size() || v.c.size() != v.a.size()) {
    throw Error(ErrorCode::kInvalidArgument, path + ": assignment: a, b and c have different lengths (" +
                                                 std::to_string(v.a.size()) + ", " + std::to_string(v.b.size()) + ", " +
                                                 std::to_string(v.c.size()) + ")");
  }
  const std::pair<const char*, std::pair<size_t, size_t>> densities[] = {
      {"a_aux_density", {v.a_aux_density.size(), Words(v.aux.size())}},
      {"b_input_density", {v.b_input_density.size(), Words(v.input.size())}},
      {"b_aux_density", {v.b_aux_density.size(), Words(v.aux.size())}}};
  for (const auto& [name, sizes] : densities) {
    if (sizes.first != sizes.second) {
      throw Error(ErrorCode::kInvalidArgument, path + ": assignment: " + name + " has " + std::to_string(sizes.first) +
                                                   " words, its count needs " + std::to_string(sizes.second));
    }
  }
  Writer out(path);
  out.Put(kAssignmentMagic.data(), kAssignmentMagic.size());
  const uint32_t version = kAssignmentVersion, flags = 0;
  const uint64_t counts[3] = {v.a.size(), v.input.size(), v.aux.size()};
  out.Put(&version, 4);
  out.Put(&flags, 4);
  out.Put(counts, sizeof(counts));
  out.Put(v.a_aux_density);
  out.Put(v.b_input_density);
  out.Put(v.b_aux_density);
  out.Put(v.a);
  out.Put(v.b);
  out.Put(v.c);
  out.Put(v.input);
  out.Put(v.aux);
  out.Finish();
}

engine::AssignmentView ParseAssignment(std::span<const uint8_t> bytes, const std::string& origin) {
  if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(engine::FrMont) != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                origin + ": assignment file: the bytes are not 8-byte aligned, so they cannot be viewed in place");
  }
  AssignmentCursor in(bytes, origin);
  const uint8_t* magic = in.Take(kAssignmentMagic.size(), "the magic");
  if (std::memcmp(magic, kAssignmentMagic.data(), kAssignmentMagic.size()) != 0) {
    BadFormat(origin, "bad magic (expected \"ZKFASGN1\")");
  }
  const uint32_t version = in.U32("the version");
  if (version != kAssignmentVersion) {
    BadFormat(origin, "version " + std::to_string(version) + ", this reader knows version " +
                          std::to_string(kAssignmentVersion));
  }
  const uint32_t flags = in.U32("the flags");
  if (flags != 0) BadFormat(origin, "flags " + std::to_string(flags) + ", expected 0");
  const uint64_t abc_size = in.U64("abc_size");
  const uint64_t n_inputs = in.U64("n_inputs");
  const uint64_t n_aux = in.U64("n_aux");
  // Each field is checked against what is left of the file before it is
  // taken, so a count too large for the file fails there (naming the field)
  // before any sum could overflow.
  engine::AssignmentView v;
  v.a_aux_density = in.Density(n_aux, "a_aux_density");
  v.b_input_density = in.Density(n_inputs, "b_input_density");
  v.b_aux_density = in.Density(n_aux, "b_aux_density");
  v.a = in.Scalars(abc_size, "a");
  v.b = in.Scalars(abc_size, "b");
  v.c = in.Scalars(abc_size, "c");
  v.input = in.Scalars(n_inputs, "input");
  v.aux = in.Scalars(n_aux, "aux");
  in.ExpectEnd();
  return v;
}

MappedAssignment MappedAssignment::Open(const std::string& path) {
  MappedAssignment out;
  out.file_ = io::MappedFile::Open(path);
  // An empty file maps to nullptr (aligned): the header check reports it.
  out.view_ = ParseAssignment(out.file_.bytes(), path);
  return out;
}

}  // namespace zkfleet::bellman
